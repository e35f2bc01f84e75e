'use strict';
// Approvals of the OpenAI Agents JS SDK's `needsApproval` tools, decided by the kernel first.
//
// A turn that stops on tool approvals (`result.interruptions`, one item per call, all from one
// model turn) is suspended in the kernel as one batch (spec 5.5, `wait: batch`): one call per
// interruption, in the order listed, each with its id, the digest of its arguments, a key and
// the requester, under one checkpoint. The kernel's run and the SDK's serialised `RunState`
// (`result.state.toString()`) are stored in one write, one row. Decisions may arrive one at a
// time or together, in another process, after a restart: each goes through the kernel first
// (bound to its call id, the argument digest as proposed, the requester, the batch's
// checkpoint revision and an expiry); only an accepted one is applied to the SDK's state
// (`state.approve`, `state.reject` with the message the model is given), stored in the same
// write as the kernel's run. A refused decision changes neither.
//
// How the SDK's words map onto the kernel's is spec/frameworks.md: `approve` is `approve`,
// `reject` is `reject` (its reason the digest of the message; the run goes on and the model is
// told), and a person's "stop the run" is `deny` (the run fails; every call of the batch is
// rejected in the SDK's state, so none runs). The SDK has no edit and no respond: such a
// verdict is refused by name before it reaches the kernel. Only once every call of the batch
// is decided does the kernel dispatch the approved ones, together, and `decide` hand back the
// SDK's state to run; before that it returns null, and `storedState` refuses.
//
// Not built: a turn with more interruptions than one batch holds (`BATCH_CAPACITY`, 8). The
// SDK runs none of a turn's tools until every interruption is decided, and the kernel opens
// the next batch only once the dispatches of the last are settled, so consecutive batches
// cannot carry one SDK turn: such a turn is refused by name (`NotBuilt`), and nothing is
// stored.
//
// The tools themselves run through `runTool` inside the SDK tools' `execute`, under the
// kernel's tool key: a process that dies between the kernel's commit and a tool, or between a
// tool and the record of its result, leaves the dispatches in flight, and the next process
// that runs the stored state has the kernel reconcile each with its tool, one after another
// (spec BAT-4), instead of calling it again.

const rk = require('./index.js');
// One error class for a shape not built yet, shared with the gate.
const { MAX_ROUNDS, NotBuilt, Refused } = require('./gate.js');
const { SqliteStore } = require('./sqlite-store.js');

/**
 * Kernel runs and SDK run states in SQLite, one row per run (table `turns`: the gate's store
 * with the SDK's serialised RunState in a `state` column), compare-and-set on the kernel's
 * revision, both written in one statement. `db` has better-sqlite3's synchronous API; the
 * caller brings it.
 */
class SqliteTurnStore extends SqliteStore {
  constructor(db) {
    super(db, 'turns', ['state']);
  }
}

/**
 * The kernel's call for an SDK approval item: its call id, the tool's name, the digest of its
 * arguments (RFC 8785) and a key bound to the run and the call id.
 */
function callOf(item, runName) {
  const raw = item.rawItem;
  const args = JSON.parse(raw.arguments || '{}');
  return {
    call_id: raw.callId,
    tool: item.name ?? raw.name,
    args: rk.digest(args),
    key: `${runName}:${raw.callId}`,
    contract: { dedupes: true, query_fences: false, max_attempts: 3 },
  };
}

/** Refused before the kernel: a verdict the SDK has no word for, or a decision not of this desk. */
function notSdk(message) {
  return {
    verdict: 'not_a_decision',
    accepted: false,
    rejection: { rejection: 'not_a_decision' },
    message,
  };
}

/** The SDK's verdicts and how each reaches the kernel (spec/frameworks.md). */
const SDK_VERDICTS = new Set(['approve', 'reject', 'deny']);

/**
 * One decision on the call `callId` of a batch `request` (as `suspend` returned it), bound to
 * the call's id, its arguments as proposed, its requester and the batch's checkpoint revision.
 * `verdict` is `approve`, `reject` (with `message`, the text the model is given) or `deny`.
 */
function verdictOn(request, callId, verdict, { approver, expiresAt, message }) {
  const proposal = request.calls.find((c) => c.call.call_id === callId);
  if (proposal === undefined) throw new Error(`call ${callId} is not in the request`);
  const decision = {
    approval: {
      call_id: callId,
      args: proposal.call.args,
      requester: proposal.requester,
      approver,
      revision: request.checkpoint.revision,
      expires_at: expiresAt,
    },
    verdict,
  };
  if (message !== undefined) decision.message = message;
  return decision;
}

/** The approval of one call of `request`. */
function approveCall(request, callId, approver, expiresAt) {
  return verdictOn(request, callId, 'approve', { approver, expiresAt });
}

/** The rejection of one call of `request`: the model is told `message`, the run goes on. */
function rejectCall(request, callId, approver, expiresAt, message) {
  return verdictOn(request, callId, 'reject', { approver, expiresAt, message });
}

/** The denial of one call of `request`: the run fails and no call of the batch runs. */
function denyCall(request, callId, approver, expiresAt) {
  return verdictOn(request, callId, 'deny', { approver, expiresAt });
}

/** What `decide` takes: decisions on calls of `request`, made at `at`, fed as one input. */
function decisions(request, list, at) {
  return { at, checkpoint: request.checkpoint, decisions: list };
}

/**
 * The kernel's form of one of the desk's decisions: a rejection's message becomes its digest.
 * Throws `Refused` for a verdict the SDK has no word for.
 */
function kernelDecision(d) {
  if (!SDK_VERDICTS.has(d.verdict)) {
    throw new Refused(
      notSdk(`the Agents SDK has no decision "${d.verdict}": approve, reject or deny`),
    );
  }
  if (d.verdict !== 'reject') return { approval: d.approval, verdict: d.verdict };
  if (typeof d.message !== 'string') {
    throw new Refused(notSdk('a rejection carries the message the model is given'));
  }
  return { approval: d.approval, verdict: 'reject', reason: rk.digest(d.message) };
}

/** The call the run's phase holds in flight, if any (one dispatch, or one being reconciled). */
function phaseCall(phase) {
  if (phase.phase === 'running') return phase.in_flight;
  if (phase.phase === 'suspended' && phase.reason.reason === 'outcome_unknown') {
    return phase.reason.in_flight;
  }
  return null;
}

/** The recorded result of the call `callId`, with its key, if the run holds one. */
function recorded(run, callId) {
  const last = run.last_call;
  if (last !== null && last.call_id === callId) return { key: last.key, result: last.result };
  const slot = run.batch?.slots.find((s) => s.call.call.call_id === callId);
  if (slot !== undefined && slot.state === 'committed') {
    return { key: slot.call.call.key, result: slot.result };
  }
  return null;
}

const waitTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * One agent run's approvals, decided by the kernel. `clock` gives each input's time;
 * `RunState` is the SDK's class (by default `require('@openai/agents').RunState`); `allowed`
 * narrows the verdicts the run's policy allows (spec POL-1; by default every one).
 */
class ApprovalDesk {
  constructor({ store, name, identity, clock, operator, reconcileWindow, allowed, RunState }) {
    this.store = store;
    this.name = name;
    this.identity = { ...identity };
    this.clock = clock;
    this.RunState = RunState;
    // The dispatches this desk committed and has not carried out yet: only those are made
    // without asking the tool first.
    this.dispatched = new Set();
    if (store.load(name) === null) {
      const policy = { operator: operator ?? 'ops', reconcile_window: reconcileWindow ?? 3600 };
      if (allowed !== undefined) policy.allowed = [...allowed];
      const run = rk.newRun(this.identity, policy, clock());
      store.commit(name, null, { run, history: new rk.History(), checkpoint: null, state: null });
    }
  }

  /** The turn as the store holds it. */
  turn() {
    const t = this.store.load(this.name);
    if (t === null) throw new Error(`run ${this.name} is not in the store`);
    return t;
  }

  /** One kernel step, committed with the SDK's state before anything else happens. */
  step(input, state) {
    const t = this.turn();
    const v = rk.step(t.run, input);
    if (!v.accepted) throw new Refused(v);
    t.history.apply(v.effects);
    const before = t.run.revision;
    t.run = v.run;
    t.checkpoint = rk.checkpointOf(v) ?? t.checkpoint;
    if (state !== undefined) t.state = state;
    this.store.commit(this.name, before, t);
    return v;
  }

  /**
   * Suspends the kernel's run for the turn's interruptions, one batch (one call per item, in
   * order), and stores the SDK's state with it. Returns the request an approver decides on:
   * the calls, each with its requester, and the batch's checkpoint.
   */
  suspend(result, { requester, approver, expiresIn }) {
    const items = result.interruptions;
    if (items.length === 0) throw new Error(`run ${this.name}: the turn waits on no approval`);
    if (items.length > rk.BATCH_CAPACITY) {
      throw new NotBuilt(
        `${items.length} approvals in one turn: one batch holds ${rk.BATCH_CAPACITY}, and ` +
          'the SDK runs none of a turn\'s tools before all are decided',
      );
    }
    const history = this.turn().history;
    const calls = items.map((item) => {
      const call = callOf(item, this.name);
      return { call, requester, prior: history.prior(call) };
    });
    const now = this.clock();
    const v = this.step(
      {
        at: now,
        kind: 'suspend',
        wait: { wait: 'batch', calls },
        expires_at: now + expiresIn,
        responsible: approver,
        resource_version: 0,
      },
      result.state.toString(),
    );
    return {
      calls: calls.map(({ call, requester: r }) => ({ call, requester: r })),
      checkpoint: rk.checkpointOf(v),
    };
  }

  /**
   * Feeds decisions on calls of the open batch to the kernel first, as one input (`Refused`
   * when it refuses: nothing changes); the accepted ones are applied to the SDK's state,
   * stored in the same write as the kernel's run. Returns the SDK's state, ready to run, once
   * every call of the batch is decided (or the run failed on a denial); null while some call
   * still awaits its decision.
   */
  async decide(agent, value) {
    const RunState = this.RunState ?? require('@openai/agents').RunState;
    const t = this.turn();
    if (t.state === null || t.checkpoint === null) {
      throw new Error(`run ${this.name} holds no suspended turn`);
    }
    const list = Array.isArray(value.decisions) ? value.decisions : [];
    const input = {
      at: value.at,
      kind: 'resume',
      checkpoint: value.checkpoint,
      decision: { decision: 'batch', decisions: list.map(kernelDecision) },
      facts: {
        resource_version: value.checkpoint.resource_version,
        permitted: true,
        within_budget: true,
      },
    };
    // Checked before the SDK's state is touched: a refusal leaves both as they were.
    const verdict = rk.step(t.run, input);
    if (!verdict.accepted) throw new Refused(verdict);
    const state = await RunState.fromString(agent, t.state);
    const items = new Map(state.getInterruptions().map((i) => [i.rawItem.callId, i]));
    const slots = t.run.batch.slots;
    for (const slot of slots) {
      if (!items.has(slot.call.call.call_id)) {
        throw new Error(
          `run ${this.name}: the SDK's state does not wait on call ${slot.call.call.call_id}`,
        );
      }
    }
    const next = verdict.run;
    if (next.phase.phase === 'failed') {
      // Denied: the run failed and no call of the batch runs; the model is told so for each.
      const approver = list.find((d) => d.verdict === 'deny').approval.approver;
      for (const slot of slots) {
        state.reject(items.get(slot.call.call.call_id), { message: `denied by ${approver}` });
      }
    } else {
      for (const d of list) {
        const item = items.get(d.approval.call_id);
        if (d.verdict === 'approve') state.approve(item);
        else state.reject(item, { message: d.message });
      }
    }
    this.noteDispatch(this.step(input, state.toString()));
    return next.batch.closed === null ? null : state;
  }

  /**
   * The SDK's state as stored with the kernel's run, for `agent` (after a restart). Refused
   * while the batch awaits decisions: the SDK would take an undecided call as pending again.
   */
  async storedState(agent) {
    const RunState = this.RunState ?? require('@openai/agents').RunState;
    const t = this.turn();
    if (t.state === null) throw new Error(`run ${this.name} holds no SDK state`);
    const batch = t.run.batch;
    if (batch !== undefined && batch.closed === null) {
      const waiting = batch.slots.filter((s) => s.state === 'awaiting');
      const ids = waiting.map((s) => s.call.call.call_id).join(', ');
      throw new Error(`run ${this.name}: the batch still awaits decisions on ${ids}`);
    }
    return RunState.fromString(agent, t.state);
  }

  /**
   * Carries out the call `callId` from inside the SDK tool's `execute`, as the kernel allows:
   * a recorded result is returned as it is (the tool answers it again by the kernel's tool
   * key); a dispatch this desk committed is made under the tool key and its result recorded; a
   * dispatch found in flight that this desk did not commit (the process that did died before
   * recording its result) is reconciled: the kernel asks the tool under the same key and
   * records the commit it finds, or dispatches again under that key only if its contract
   * allows; never blindly (spec REC-1). A batch call whose outcome is unknown waits its turn
   * while the call ahead of it is reconciled by its own `execute` (the SDK runs a turn's tools
   * together; spec BAT-4). Returns null when the kernel has not dispatched the call: the tool
   * must not run.
   */
  async runTool(callId, tool, args) {
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const { run } = this.turn();
      const done = recorded(run, callId);
      if (done !== null) {
        const result = await tool.query(rk.toolKey(this.identity, done.key));
        if (result === null || rk.digest(result) !== done.result) {
          throw new Error(`call ${callId}: the tool does not hold the recorded result`);
        }
        return result;
      }
      const held = phaseCall(run.phase);
      if (held !== null && held.call.call.call_id === callId) {
        await this.carryOut(run.phase, held, tool, args);
        continue;
      }
      const slot = run.batch?.slots.find((s) => s.call.call.call_id === callId);
      if (slot === undefined) return null;
      if (slot.state === 'in_flight') {
        await this.carryOut(run.phase, { call: slot.call, attempt: slot.attempt }, tool, args);
      } else if (slot.state === 'unknown') {
        await waitTurn();
      } else {
        return null;
      }
    }
    throw new Error(`call ${callId} did not settle`);
  }

  /**
   * One move on a call in flight: reconcile it, make the dispatch this desk committed, or
   * recover.
   */
  async carryOut(phase, flight, tool, args) {
    const call = flight.call.call;
    const key = rk.toolKey(this.identity, call.key);
    if (phase.phase === 'suspended') {
      const found = await tool.query(key);
      const answer =
        found !== null
          ? { answer: 'committed', result: rk.digest(found) }
          : { answer: 'not_committed' };
      const cp = this.turn().checkpoint;
      const v = this.step({
        at: this.clock(),
        kind: 'resume',
        checkpoint: cp,
        decision: { decision: 'reconcile', ...answer },
        facts: { resource_version: cp.resource_version, permitted: true, within_budget: true },
      });
      this.noteDispatch(v);
    } else if (this.dispatched.has(`${call.call_id}#${flight.attempt}`)) {
      this.dispatched.delete(`${call.call_id}#${flight.attempt}`);
      const result = await tool.commit(key, call.tool, args);
      this.record(call.call_id, flight.attempt, result);
    } else {
      // Committed as dispatching by a process that is gone: the kernel asks the tool.
      this.step({ at: this.clock(), kind: 'recover' });
    }
  }

  /** Remembers the dispatches this desk committed, which `runTool` then carries out once each. */
  noteDispatch(verdict) {
    for (const d of verdict.effects) {
      if (d.effect === 'dispatch') this.dispatched.add(`${d.call_id}#${d.attempt}`);
    }
  }

  /** Records the tool's result in the kernel's run. */
  record(callId, attempt, result) {
    this.step({
      at: this.clock(),
      kind: 'tool_result',
      call_id: callId,
      attempt,
      result: rk.digest(result),
    });
  }
}

module.exports = {
  ApprovalDesk,
  NotBuilt,
  Refused,
  SqliteTurnStore,
  approveCall,
  callOf,
  decisions,
  denyCall,
  rejectCall,
};
