'use strict';
// Approvals of the OpenAI Agents JS SDK's `needsApproval` tools, as glue over the driver core
// (driver.js). A turn that stops on tool approvals (`result.interruptions`, all from one model
// turn) is one reviewed batch: `suspend` proposes its calls to the core, which suspends the run
// (the SDK's serialised RunState stored in the same write, the `extra` column) and returns the
// request the approver is shown: each call's arguments beside their digest. Decisions may
// arrive one at a time or together, in another process; each goes through the core first, at
// the desk's clock, on the facts the desk observes (`decide`), and only an accepted one is
// applied to the SDK's state (`state.approve`, `state.reject`), stored in the same write. The
// SDK's words are the core's (spec/frameworks.md): `approve`, `reject` (the model is told, the
// run goes on) and `deny` (the run fails; every call of the batch is rejected in the SDK's
// state, so none runs). A refusal is written to the audit log and changes neither.
//
// The tools run inside the SDK tools' `execute` through `runTool(details.toolCall, tool)`: a
// dispatch this desk committed is carried out with the arguments the core hands out; in a
// process that did not commit it (the one that did died), the core recovers and reconciles it
// with the tool's status query, never calling it blindly.
//
// `RunState` is the caller's own (`require('@openai/agents').RunState`), given to the desk:
// the package never loads the SDK itself, so the state is read by the SDK that wrote it.
//
// Not built: a turn with more interruptions than one batch holds (`BATCH_CAPACITY`): refused
// by name (`NotBuilt`), since the SDK runs none of a turn's tools before all are decided.

const rk = require('./index.js');
const d = require('./driver.js');

const CONTRACT = Object.freeze({ dedupes: true, query_fences: false, max_attempts: 3 });
const SDK_WORDS = new Set(['approve', 'reject', 'deny']);

/** One decision on the call `callId` of `request`, by `approver`, valid until `expiresAt`. */
function verdictOn(request, callId, type, approver, expiresAt, message) {
  if (!request.calls.some((c) => c.call_id === callId)) {
    throw new Error(`call ${callId} is not in the request`);
  }
  const decision = { call_id: callId, type, approver, expires_at: expiresAt };
  if (message !== undefined) decision.message = message;
  return decision;
}

/** The approval of one call of `request`. */
const approveCall = (request, callId, approver, expiresAt) =>
  verdictOn(request, callId, 'approve', approver, expiresAt);
/** The rejection of one call: the model is told `message`, the run goes on. */
const rejectCall = (request, callId, approver, expiresAt, message) =>
  verdictOn(request, callId, 'reject', approver, expiresAt, message);
/** The denial of one call: the run fails and no call of the batch runs. */
const denyCall = (request, callId, approver, expiresAt) =>
  verdictOn(request, callId, 'deny', approver, expiresAt);

/** What `decide` takes: decisions on calls of `request`, fed as one input at the desk's time. */
function decisions(request, list) {
  return { request, checkpoint: request.checkpoint, decisions: list };
}

/**
 * One agent run's approvals, decided by the core. `RunState` the caller's SDK class; `clock`
 * the desk's time; `facts` what it observes; `allowed` narrows the verdicts the run's policy
 * allows; the rest as `Driver` takes them.
 */
class ApprovalDesk {
  constructor(options) {
    const { RunState, allowed, operator, reconcileWindow } = options;
    if (RunState === undefined || typeof RunState.fromString !== 'function') {
      throw new TypeError(
        'ApprovalDesk: pass RunState from your own @openai/agents ' +
          "({ RunState: require('@openai/agents').RunState })",
      );
    }
    this.RunState = RunState;
    const policy = options.policy ?? {
      operator: operator ?? 'ops',
      reconcile_window: reconcileWindow ?? 3_600_000,
      ...(allowed === undefined ? {} : { allowed: [...allowed] }),
    };
    this.contract = options.contract ?? CONTRACT;
    this.driver = options.driver ?? new d.Driver({ ...options, policy });
    this.name = this.driver.name;
    // The tool calls this desk committed and has not carried out yet, by call id.
    this.handed = new Map();
  }

  /**
   * The run as the store holds it: `{ held, book, extra }` (`extra`: the SDK's state), with
   * `run`, `checkpoint` and `state` for short.
   */
  turn() {
    const t = this.driver.load();
    return { ...t, run: t.held.run, checkpoint: t.held.checkpoint, state: t.extra };
  }

  /** The core's proposal for an SDK tool call (`{ callId, name, arguments }`). */
  proposal(raw, ask) {
    return {
      call_id: raw.callId,
      tool: raw.name,
      args: JSON.parse(raw.arguments || '{}'),
      key: `${this.name}:${raw.callId}`,
      contract: this.contract,
      requester: ask?.requester ?? 'agent',
      approver: ask?.approver ?? null,
      expires_in: ask?.expiresIn ?? 0,
    };
  }

  /**
   * Suspends the run for the turn's interruptions (one batch, one call per item, in order) and
   * stores the SDK's state with it. Returns the request an approver decides on.
   */
  async suspend(result, ask) {
    const items = result.interruptions;
    if (items.length === 0) throw new Error(`run ${this.name}: the turn waits on no approval`);
    if (items.length > rk.BATCH_CAPACITY) {
      throw new d.NotBuilt(
        `${items.length} approvals in one turn: one batch holds ${rk.BATCH_CAPACITY}, and ` +
          'the SDK runs none of a turn\'s tools before all are decided',
      );
    }
    const proposals = items.map((item) => this.proposal({ ...item.rawItem,
      name: item.name ?? item.rawItem.name }, ask));
    const state = result.state.toString();
    const todo = await this.driver.drive(proposals, { turn: true, extra: () => state });
    if (todo.todo === 'ask') return todo.request;
    return d.stop(todo);
  }

  /**
   * Feeds decisions on calls of the open batch to the core first, as one input; a refusal
   * throws `Refused` (written to the audit log, nothing else changes). The accepted ones are
   * applied to the SDK's state, stored in the same write. Returns the SDK's state, ready to
   * run, once every call of the batch is decided (or the run failed on a denial); null while
   * some call still awaits its decision.
   */
  async decide(agent, value) {
    const t = this.turn();
    if (t.extra === null) throw new Error(`run ${this.name} holds no suspended turn`);
    const list = Array.isArray(value.decisions) ? value.decisions : [];
    for (const x of list) {
      if (!SDK_WORDS.has(x.type)) {
        throw new d.Refused({ verdict: 'not_a_decision', rejection: {},
          message: `the Agents SDK has no decision "${x.type}": approve, reject or deny` });
      }
    }
    const byId = new Map(value.request.calls.map((c) => [c.call_id, c]));
    // The request as the approver was shown it, on the checkpoint it says it decided on.
    const shown = { ...value.request, checkpoint: value.checkpoint,
      calls: list.map((x) => byId.get(x.call_id) ?? { ...value.request.calls[0], call_id: x.call_id }) };
    const words = list.map((x) => (x.type === 'reject' ? { type: 'reject', message: x.message ?? '' }
      : { type: x.type }));
    const approver = list[0]?.approver ?? 'nobody';
    const expiresAt = Math.min(...list.map((x) => Number(x.expires_at)));
    const state = await this.RunState.fromString(agent, t.extra);
    const items = new Map(state.getInterruptions().map((i) => [i.rawItem.callId, i]));
    const fed = await this.driver.decide(shown, words, approver, list.length ? expiresAt : 0, {
      carry: false,
      extra: (stored, f) => {
        if (stored.extra !== t.extra) throw new d.Conflict(`run ${this.name}: the SDK state moved`);
        if (typeof f.verdict === 'string' || f.verdict.verdict !== 'accepted') return undefined;
        if (f.verdict.run.phase.phase === 'failed') {
          for (const item of items.values()) state.reject(item, { message: `denied by ${approver}` });
        } else {
          for (const x of list) {
            const item = items.get(x.call_id);
            if (item === undefined) throw new Error(`the SDK's state does not wait on ${x.call_id}`);
            if (x.type === 'approve') state.approve(item);
            else state.reject(item, { message: x.message });
          }
        }
        return state.toString();
      },
    });
    const verdict = typeof fed.verdict === 'string' ? fed : fed.verdict;
    if (verdict.verdict !== 'accepted') throw new d.Refused(verdict);
    for (const call of fed.tool_calls) this.handed.set(call.call_id, call);
    const run = fed.verdict.run;
    const open = run.phase.phase === 'suspended' && run.phase.reason.reason === 'pending_batch';
    return open ? null : state;
  }

  /**
   * The SDK's state as stored with the run, for `agent` (after a restart). Refused while the
   * batch awaits decisions: the SDK would take an undecided call as pending again.
   */
  async storedState(agent) {
    const t = this.turn();
    if (t.extra === null) throw new Error(`run ${this.name} holds no SDK state`);
    const phase = t.held.run.phase;
    if (phase.phase === 'suspended' && phase.reason.reason === 'pending_batch') {
      const ids = t.held.run.batch.slots.filter((s) => s.state === 'awaiting')
        .map((s) => s.call.call.call_id);
      throw new Error(`run ${this.name}: the batch still awaits decisions on ${ids.join(', ')}`);
    }
    return this.RunState.fromString(agent, t.extra);
  }

  /**
   * Carries out the SDK tool call `toolCall` (`details.toolCall` in `execute`) with `tool`
   * (`{ commit, query }`), as the core allows: a dispatch this desk committed is made with the
   * arguments the core handed out and its result recorded; otherwise the core plans the call
   * (a recorded result is returned; a dispatch left in flight by a process that died is
   * reconciled by the tool's status query). Returns the result, or null when the core has
   * not dispatched the call: the tool must not run.
   */
  async runTool(toolCall, tool) {
    if (!toolCall || typeof toolCall.callId !== 'string') {
      throw new TypeError('runTool(details.toolCall, tool): the SDK tool call is missing');
    }
    const handed = this.handed.get(toolCall.callId);
    if (handed !== undefined) {
      this.handed.delete(toolCall.callId);
      const result = await tool.commit({ ...handed, args: JSON.parse(handed.args) });
      this.driver.commit((s, now) => rk.driverToolResult(s.held, s.book, now, handed, result,
        this.driver.key));
      return result;
    }
    const proposal = this.proposal(toolCall);
    for (let round = 0; round < d.MAX_ROUNDS; round += 1) {
      const todo = await this.driver.drive([proposal], { turn: true, tools: () => tool });
      if (todo.todo === 'done') {
        const outcome = todo.outcomes[0];
        return outcome.outcome === 'result' ? JSON.parse(outcome.result) : null;
      }
      if (todo.todo === 'busy' || (todo.todo === 'waits' && todo.reason === 'outcome_unknown')) {
        await new Promise((resolve) => setImmediate(resolve)); // another execute reconciles
        continue;
      }
      if (todo.todo === 'changed') throw new d.Changed(todo);
      return null;
    }
    throw new Error(`call ${toolCall.callId} did not settle`);
  }

  /** The run's audit log and its anchor, for `resumable validate --key-file K --anchor A`. */
  log() {
    return this.driver.log();
  }
}

const { Changed, Ended, NotBuilt, Refused, SqliteDriverStore } = d;

module.exports = {
  ApprovalDesk,
  Changed,
  Ended,
  NotBuilt,
  Refused,
  SqliteTurnStore: SqliteDriverStore,
  SqliteDriverStore,
  approveCall,
  decisions,
  denyCall,
  rejectCall,
};
