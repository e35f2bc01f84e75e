'use strict';
// A tool call gated behind a person's approval, where the kernel decides: for graph runtimes
// whose nodes pause with an `interrupt` and run again from their start on resume (LangGraph's
// `interrupt()` and `new Command({ resume })`).
//
// The kernel's run lives in a store (`SqliteRunStore`) beside the graph's own checkpointer,
// with its call history and its last checkpoint; every transition is committed there, with
// compare-and-set on the revision, before anything it commands is carried out. So:
//
// - the approval is bound to the call id, the argument digest, the requester, the checkpoint's
//   revision and an expiry, and the kernel refuses any other resume value: nothing is committed
//   or dispatched, and the gate interrupts again with the request, the rejection (`refused`:
//   kind and evidence) and its `message`, so the next `Command({ resume })` answers that; a
//   resume value that is not a decision at all is refused the same way (`not_a_decision`);
// - the side effect is dispatched only after the kernel's transition is durable, under the
//   kernel's tool key, and its result is recorded in the run: a node that runs again after a
//   resume finds the result and does not dispatch again; a node that runs again after a crash
//   finds the dispatch in flight, and the kernel reconciles it by asking the tool under the
//   same tool key instead of dispatching blindly (spec REC-1).
//
// This gate asks for one call per interrupt: a node gates its calls one after the other, each
// behind its own interrupt, and a denial ends the run (`Denied`). Several calls decided in one
// interrupt, edits and rejecting a call while the run goes on are the kernel's batches, which
// `hitl.js` builds for LangChain's human-in-the-loop middleware. Two calls of one run asked
// for at once here (parallel branches of one step, each interrupting) are refused by name:
// the second throws `NotBuilt`, and nothing of it is committed or dispatched.

const rk = require('./index.js');
const { SqliteStore, historyJson, historyOf } = require('./sqlite-store.js');

/** How many answers one call may go through before the gate gives up. */
const MAX_ROUNDS = 1000;

/**
 * The kernel refused the input: `rejection` is its verdict (`verdict`, `rejection` with its
 * evidence, `message`). Nothing was committed and nothing was dispatched.
 */
class Refused extends Error {
  constructor(rejection) {
    super(`${rejection.verdict}: ${rejection.message}`);
    this.name = 'Refused';
    this.rejection = rejection;
  }
}

/** A shape the adapters do not build: named, never guessed (see each module's header). */
class NotBuilt extends Error {
  constructor(message) {
    super(message);
    this.name = 'NotBuilt';
  }
}

/** The approver denied the call: the run has failed, and the call was never made. */
class Denied extends Error {
  constructor(message) {
    super(message);
    this.name = 'Denied';
  }
}

/**
 * The kernel's runs in SQLite: one row per run, with its call history and its last
 * checkpoint, written with compare-and-set on the revision (table `kernel_runs`). `db` is an
 * open database with the synchronous API of better-sqlite3 (`exec`, `prepare(sql).get/run`);
 * the package does not depend on it, the caller brings it.
 */
class SqliteRunStore extends SqliteStore {
  constructor(db) {
    super(db, 'kernel_runs', []);
  }
}

/** The kernel's form of a call the graph wants to make: its arguments as their digest. */
function kernelForm(call) {
  return {
    call_id: call.callId,
    tool: call.tool,
    args: rk.digest(call.args),
    key: call.key,
    contract: { dedupes: true, query_fences: false, max_attempts: 3 },
  };
}

function decisionOf(kind, request, approver, expiresAt, at) {
  const call = request.call;
  return {
    at,
    checkpoint: request.checkpoint,
    decision: {
      decision: kind,
      call_id: call.call_id,
      args: call.args,
      requester: request.requester,
      approver,
      revision: request.checkpoint.revision,
      expires_at: expiresAt,
    },
  };
}

/**
 * The resume value an approver sends for the `request` an interrupt surfaced: an approval
 * bound to its call id, argument digest, requester and checkpoint revision.
 */
function approve(request, approver, expiresAt, at) {
  return decisionOf('approve', request, approver, expiresAt, at);
}

/** The resume value that denies the `request`: the run fails. */
function deny(request, approver, expiresAt, at) {
  return decisionOf('deny', request, approver, expiresAt, at);
}

function notADecision(answer) {
  let shown;
  try {
    shown = JSON.stringify(answer);
  } catch {
    shown = String(answer);
  }
  return {
    verdict: 'not_a_decision',
    accepted: false,
    rejection: { rejection: 'not_a_decision' },
    message: `the resume value is not a decision (at, checkpoint, decision): ${shown}`,
  };
}

function isDecision(answer) {
  return (
    answer !== null &&
    typeof answer === 'object' &&
    !Array.isArray(answer) &&
    ['at', 'checkpoint', 'decision'].every((k) => k in answer) &&
    answer.checkpoint !== null &&
    typeof answer.checkpoint === 'object'
  );
}

/**
 * Gates the calls of one kernel run behind approvals. `interrupt` is the graph's (it returns
 * the resume value, or pauses the graph by throwing); `clock` gives the time of each input.
 */
class ApprovalGate {
  constructor({ store, name, identity, tool, interrupt, clock, operator, reconcileWindow }) {
    this.store = store;
    this.name = name;
    this.identity = { ...identity };
    this.tool = tool;
    this.interrupt = interrupt;
    this.clock = clock;
    if (store.load(name) === null) {
      const policy = { operator: operator ?? 'ops', reconcile_window: reconcileWindow ?? 3600 };
      const run = rk.newRun(this.identity, policy, clock());
      store.commit(name, null, { run, history: new rk.History(), checkpoint: null });
    }
  }

  /** The run as the store holds it. */
  stored() {
    const s = this.store.load(this.name);
    if (s === null) throw new Error(`run ${this.name} is not in the store`);
    return s;
  }

  /** One kernel step, committed before anything it commands is carried out. */
  step(input) {
    const s = this.stored();
    const v = rk.step(s.run, input);
    if (!v.accepted) throw new Refused(v);
    s.history.apply(v.effects);
    const before = s.run.revision;
    s.run = v.run;
    s.checkpoint = rk.checkpointOf(v) ?? s.checkpoint;
    this.store.commit(this.name, before, s);
    return v;
  }

  /**
   * Makes `call` once `approver` approved it, and returns the tool's result. Safe to call
   * again from a node that runs again: a recorded result is returned as it is, a pending
   * approval is asked for again, a dispatch in flight is reconciled, never repeated.
   */
  async call(call, { requester, approver, expiresIn }) {
    const form = kernelForm(call);
    const key = rk.toolKey(this.identity, call.key);
    let refused = null;
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const { run } = this.stored();
      const last = run.last_call;
      if (last !== null && last.call_id === call.callId) {
        const result = await this.tool.query(key);
        if (result === null || rk.digest(result) !== last.result) {
          throw new Error(`call ${call.callId}: the tool does not hold the recorded result`);
        }
        return result;
      }
      const phase = run.phase;
      if (phase.phase === 'failed') {
        throw new Denied(`run ${this.name} failed: ${JSON.stringify(phase)}`);
      }
      if (phase.phase === 'running' && phase.in_flight === null) {
        this.suspend(form, requester, approver, expiresIn);
      } else if (phase.phase === 'running') {
        // Committed as dispatching, and this process does not know whether the tool was
        // reached (a crash, or a node run again): the kernel asks the tool.
        this.step({ at: this.clock(), kind: 'recover' });
      } else if (phase.phase !== 'suspended') {
        throw new Error(`run ${this.name} is ${phase.phase}`);
      } else if (phase.reason.reason === 'pending_approval') {
        const waiting = phase.reason.call.call.call_id;
        if (waiting !== call.callId) {
          throw new NotBuilt(
            `run ${this.name} waits on the approval of ${waiting}, not ${call.callId}: ` +
              'several calls waiting at once wait on the kernel\'s batches',
          );
        }
        const request = { call: form, requester, checkpoint: this.stored().checkpoint };
        if (refused !== null) {
          request.refused = refused.rejection;
          request.message = refused.message;
        }
        // The graph's interrupt throws to pause the graph; only the kernel's refusal is
        // caught here.
        const answer = this.interrupt(request);
        try {
          await this.resume(answer, call);
          refused = null;
        } catch (e) {
          if (!(e instanceof Refused)) throw e;
          // The run is unchanged; ask again, saying why. When the node runs again, the graph
          // hands the same answers back in order, and each is refused the same way before the
          // new one is reached.
          refused = e.rejection;
        }
      } else if (phase.reason.reason === 'outcome_unknown') {
        await this.reconcile(call, key);
      } else {
        throw new Error(`run ${this.name} waits on ${phase.reason.reason}`);
      }
    }
    throw new Error(`call ${call.callId} did not settle`);
  }

  suspend(form, requester, approver, expiresIn) {
    const wait = {
      wait: 'approval',
      call: form,
      requester,
      prior: this.stored().history.prior(form),
    };
    const now = this.clock();
    this.step({
      at: now,
      kind: 'suspend',
      wait,
      expires_at: now + expiresIn,
      responsible: approver,
      resource_version: 0,
    });
  }

  /** Feeds a resume value to the kernel; an accepted approval is dispatched. */
  async resume(answer, call) {
    // Not the kernel's: refused before it reaches the kernel, by the same route.
    if (!isDecision(answer)) throw new Refused(notADecision(answer));
    const facts = {
      resource_version: answer.checkpoint.resource_version,
      permitted: true,
      within_budget: true,
    };
    const v = this.step({
      at: answer.at,
      kind: 'resume',
      checkpoint: answer.checkpoint,
      decision: answer.decision,
      facts,
    });
    const dispatch = rk.effect(v, 'dispatch');
    if (dispatch !== undefined) await this.dispatch(dispatch, call);
  }

  async reconcile(call, key) {
    const found = await this.tool.query(key);
    const answer =
      found !== null
        ? { answer: 'committed', result: rk.digest(found) }
        : { answer: 'not_committed' };
    const cp = this.stored().checkpoint;
    const facts = { resource_version: cp.resource_version, permitted: true, within_budget: true };
    const v = this.step({
      at: this.clock(),
      kind: 'resume',
      checkpoint: cp,
      decision: { decision: 'reconcile', ...answer },
      facts,
    });
    const dispatch = rk.effect(v, 'dispatch');
    if (dispatch !== undefined) await this.dispatch(dispatch, call);
  }

  /** Carries out a committed dispatch and records the tool's answer in the run. */
  async dispatch(dispatch, call) {
    const result = await this.tool.commit(dispatch.tool_key, dispatch.tool, call.args);
    this.step({
      at: this.clock(),
      kind: 'tool_result',
      call_id: dispatch.call_id,
      attempt: dispatch.attempt,
      result: rk.digest(result),
    });
  }
}

module.exports = {
  MAX_ROUNDS,
  ApprovalGate,
  Denied,
  NotBuilt,
  Refused,
  SqliteRunStore,
  approve,
  deny,
  historyJson,
  historyOf,
  kernelForm,
};
