'use strict';
// Approvals of the OpenAI Agents JS SDK's `needsApproval` tools, decided by the kernel first.
//
// A turn that stops on a tool approval (`result.interruptions`) is suspended in the kernel for
// that call (its call id, the digest of its arguments, a key, the requester), and the kernel's
// run and the SDK's serialised `RunState` (`result.state.toString()`) are stored in one write,
// one row. The decision may arrive in another process, after a restart: it goes through the
// kernel first (an approval bound to the call id, the argument digest, the requester, the
// checkpoint's revision and an expiry); only an accepted one is applied to the SDK's state
// (`state.approve`, or `state.reject` for a denial), stored in the same write as the kernel's
// run, and the tool then runs under the kernel's tool key, once. A refused decision changes
// neither.
//
// Not built yet: several interruptions of one turn decided one by one (the kernel decides one
// call per suspension; batches come later), and rejecting a call while the run goes on (a
// kernel denial ends the run). A turn with more than one interruption is refused here, by
// name (`NotBuilt`).
//
// The tool itself runs through `runTool` inside the SDK tool's `execute`, under the kernel's
// tool key: a process that dies between the kernel's commit and the tool, or between the tool
// and the record of its result, leaves the dispatch in flight, and the next process that runs
// the stored state has the kernel reconcile it with the tool instead of calling it again.

const rk = require('./index.js');
// One error class for a shape not built yet, shared with the gate.
const { MAX_ROUNDS, NotBuilt, Refused, historyJson, historyOf } = require('./gate.js');

/**
 * Kernel runs and SDK run states in SQLite, one row per run, compare-and-set on the kernel's
 * revision. `db` has better-sqlite3's synchronous API; the caller brings it.
 */
class SqliteTurnStore {
  constructor(db) {
    this.db = db;
    db.exec(
      'CREATE TABLE IF NOT EXISTS turns (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, ' +
        'run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT, state TEXT)',
    );
  }

  /** The turn stored under `name` (`state` is the SDK's serialised RunState), or null. */
  load(name) {
    const row = this.db
      .prepare('SELECT run, history, checkpoint, state FROM turns WHERE name = ?')
      .get(name);
    if (row === undefined) return null;
    return {
      run: rk.parse(row.run),
      history: historyOf(JSON.parse(row.history)),
      checkpoint: row.checkpoint === null ? null : rk.parse(row.checkpoint),
      state: row.state,
    };
  }

  /** Stores the turn, in one statement, if the stored revision is still `before`. */
  commit(name, before, turn) {
    const values = [
      turn.run.revision,
      rk.stringify(turn.run),
      JSON.stringify(historyJson(turn.history)),
      turn.checkpoint === null ? null : rk.stringify(turn.checkpoint),
      turn.state,
    ];
    if (before === null) {
      this.db.prepare('INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)').run(name, ...values);
      return;
    }
    const changed = this.db
      .prepare(
        'UPDATE turns SET revision = ?, run = ?, history = ?, checkpoint = ?, state = ? ' +
          'WHERE name = ? AND revision = ?',
      )
      .run(...values, name, before).changes;
    if (changed !== 1) throw new Error(`run ${name}: revision ${before} is no longer current`);
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

/**
 * One agent run's approvals, decided by the kernel. `clock` gives each input's time;
 * `RunState` is the SDK's class (by default `require('@openai/agents').RunState`).
 */
class ApprovalDesk {
  constructor({ store, name, identity, clock, operator, reconcileWindow, RunState }) {
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
   * Suspends the kernel's run for the turn's one interruption and stores the SDK's state with
   * it. Returns the request an approver decides on.
   */
  suspend(result, { requester, approver, expiresIn }) {
    const items = result.interruptions;
    if (items.length !== 1) {
      const n = items.length;
      throw new NotBuilt(`${n} approvals in one turn: the kernel's batches decide those`);
    }
    const call = callOf(items[0], this.name);
    const wait = { wait: 'approval', call, requester, prior: this.turn().history.prior(call) };
    const now = this.clock();
    const v = this.step(
      {
        at: now,
        kind: 'suspend',
        wait,
        expires_at: now + expiresIn,
        responsible: approver,
        resource_version: 0,
      },
      result.state.toString(),
    );
    return { call, requester, checkpoint: rk.checkpointOf(v) };
  }

  /**
   * Feeds an approver's decision to the kernel first (`Refused` when it refuses: nothing
   * changes); an accepted approval or denial is applied to the SDK's state, stored in the
   * same write as the kernel's run, and the state is returned ready to run.
   */
  async decide(agent, decision) {
    const RunState = this.RunState ?? require('@openai/agents').RunState;
    const t = this.turn();
    if (t.state === null || t.checkpoint === null) {
      throw new Error(`run ${this.name} holds no suspended turn`);
    }
    const cp = decision.checkpoint;
    const input = {
      at: decision.at,
      kind: 'resume',
      checkpoint: cp,
      decision: decision.decision,
      facts: { resource_version: cp.resource_version, permitted: true, within_budget: true },
    };
    // Checked before the SDK's state is touched: a refusal leaves both as they were.
    const verdict = rk.step(t.run, input);
    if (!verdict.accepted) throw new Refused(verdict);
    const state = await RunState.fromString(agent, t.state);
    const items = state.getInterruptions();
    const pending = t.run.phase.reason.call.call.call_id;
    if (items.length !== 1 || items[0].rawItem.callId !== pending) {
      throw new Error(`run ${this.name}: the SDK's state does not wait on call ${pending} alone`);
    }
    if (decision.decision.decision === 'approve') {
      state.approve(items[0]);
    } else {
      state.reject(items[0], { message: `denied by ${decision.decision.approver}` });
    }
    this.noteDispatch(this.step(input, state.toString()));
    return state;
  }

  /** The SDK's state as stored with the kernel's run, for `agent` (after a restart). */
  async storedState(agent) {
    const RunState = this.RunState ?? require('@openai/agents').RunState;
    const t = this.turn();
    if (t.state === null) throw new Error(`run ${this.name} holds no SDK state`);
    return RunState.fromString(agent, t.state);
  }

  /**
   * Carries out the call `callId` from inside the SDK tool's `execute`, as the kernel allows:
   * a recorded result is returned as it is (the tool answers it again by the kernel's tool
   * key); a dispatch this desk committed is made under the tool key and its result recorded; a
   * dispatch found in flight that this desk did not commit (the process that did died before
   * recording its result) is reconciled: the kernel asks the tool under the same key and
   * records the commit it finds, or dispatches again under that key only if its contract
   * allows; never blindly (spec REC-1). Returns null when the kernel has not dispatched the
   * call: the tool must not run.
   */
  async runTool(callId, tool, args) {
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const t = this.turn();
      const last = t.run.last_call;
      if (last !== null && last.call_id === callId) {
        const result = await tool.query(rk.toolKey(this.identity, last.key));
        if (result === null || rk.digest(result) !== last.result) {
          throw new Error(`call ${callId}: the tool does not hold the recorded result`);
        }
        return result;
      }
      const phase = t.run.phase;
      const flight =
        phase.phase === 'running'
          ? phase.in_flight
          : phase.phase === 'suspended' && phase.reason.reason === 'outcome_unknown'
            ? phase.reason.in_flight
            : null;
      if (flight === null || flight.call.call.call_id !== callId) return null;
      const call = flight.call.call;
      const key = rk.toolKey(this.identity, call.key);
      if (phase.phase === 'suspended') {
        const found = await tool.query(key);
        const answer =
          found !== null
            ? { answer: 'committed', result: rk.digest(found) }
            : { answer: 'not_committed' };
        const cp = t.checkpoint;
        const v = this.step({
          at: this.clock(),
          kind: 'resume',
          checkpoint: cp,
          decision: { decision: 'reconcile', ...answer },
          facts: { resource_version: cp.resource_version, permitted: true, within_budget: true },
        });
        this.noteDispatch(v);
      } else if (this.dispatched.has(`${callId}#${flight.attempt}`)) {
        this.dispatched.delete(`${callId}#${flight.attempt}`);
        const result = await tool.commit(key, call.tool, args);
        this.record(callId, flight.attempt, result);
      } else {
        // Committed as dispatching by a process that is gone: the kernel asks the tool.
        this.step({ at: this.clock(), kind: 'recover' });
      }
    }
    throw new Error(`call ${callId} did not settle`);
  }

  /** Remembers a dispatch this desk committed, which `runTool` then carries out once. */
  noteDispatch(verdict) {
    const d = rk.effect(verdict, 'dispatch');
    if (d !== undefined) this.dispatched.add(`${d.call_id}#${d.attempt}`);
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

module.exports = { ApprovalDesk, NotBuilt, Refused, SqliteTurnStore, callOf };
