'use strict';
// LangChain's human-in-the-loop for `createAgent` (langchain 1.x), as glue over the driver core
// (driver.js): a middleware that takes the place of `humanInTheLoopMiddleware`, its interrupt
// and its resume in the same words, every decision judged by the core first.
//
// After each model turn, the turn's tool calls whose tool is in `interruptOn` are proposed to
// the core as one reviewed batch (each tool's `allowedDecisions` its call's `contract.allowed`).
// The graph pauses with one interrupt holding what the plain middleware's does
// (`actionRequests`, `reviewConfigs`) and what the core shows the approver (`calls`: each
// call's arguments beside their digest; `checkpoint`; `expires_at`). The resume value is
// `{ checkpoint, decisions }` (`hitlDecisions` makes it), one HITL decision per action request
// (`{ type: 'approve' }`, `{ type: 'edit', editedAction: { name, args } }`, `{ type: 'reject',
// message }`, `{ type: 'respond', message }`, `{ type: 'deny' }`; `null` leaves a call for a
// later resume). The core reads the value (`driverResume`: what is a decision is decided there
// alone, spec/frameworks.md "Resuming"), maps the words, binds each to its call and judges the
// list at the gate's clock on the facts the gate observes; a refusal is written to the audit
// log and the graph interrupts again, saying why. A value the core reads as no decision is
// written nowhere and counted by nobody; the graph interrupts again, saying why.
//
// Once every call is decided, the core dispatches the approved and edited calls (an edited one
// with the approver's arguments) and the gate carries them out with the app's `tools` (each
// `{ commit, query }`); every gated call is answered to the model by a ToolMessage (the
// tool's result, a rejection's message with status `error`, a person's response), so the
// agent's tools node runs only the calls nobody gates. A denial ends the run: `Denied`.
//
// A node run again (every resume) consumes the answers LangGraph hands back to its earlier
// interrupts until as many decisions as the core counted are behind it, skipping (and not
// counting) the values the core reads as no decision, so a later interrupt gets its own
// answer and no answer is fed twice; a process
// that died after the core took the decisions finds the dispatches in flight when the node
// runs again, and the core reconciles them with each tool's status query, never repeating.
//
// Not built: a turn with more gated calls than one batch holds (`BATCH_CAPACITY`): `NotBuilt`.

const rk = require('./index.js');
const d = require('./driver.js');
const { Denied } = require('./gate.js');

/** What HITL lets an approver do when a tool's config is `true`. */
const HITL_DEFAULT = ['approve', 'edit', 'reject'];

/** The allowed decisions of each gated tool: `true` is HITL's default, `false` not gated. */
function allowedOf(interruptOn) {
  const out = {};
  for (const [name, config] of Object.entries(interruptOn)) {
    if (config === true) out[name] = [...HITL_DEFAULT];
    else if (config && Array.isArray(config.allowedDecisions)) {
      out[name] = [...config.allowedDecisions];
    }
  }
  return out;
}

/**
 * The resume value for the interrupt `request`: HITL decisions, one per action request in
 * order (`null` skips a call), on the checkpoint the approver was shown.
 */
function hitlDecisions(request, list, { approver, expiresAt } = {}) {
  const value = { checkpoint: request.checkpoint, decisions: list };
  if (approver !== undefined) value.approver = approver;
  if (expiresAt !== undefined) value.expires_at = expiresAt;
  return value;
}

/** The content a ToolMessage carries for a tool's result (JSON). */
const content = (result) => (typeof result === 'string' ? result : JSON.stringify(result));

/**
 * The core's gate for one agent run's human-in-the-loop: `middleware()` goes in
 * `createAgent({ middleware })`. `interruptOn` as the plain middleware takes it; `tools` the
 * gated tools' `{ commit, query }` by name; `requester` asks for every call and `approver`
 * decides them within `expiresIn` of the turn; the rest as `Driver` takes them.
 */
class HitlGate {
  constructor(options) {
    const { interruptOn, requester, approver, expiresIn, allowed, operator, reconcileWindow } =
      options;
    this.allowed = allowedOf(interruptOn);
    this.requester = requester;
    this.approver = approver;
    this.expiresIn = expiresIn;
    this.contract = options.contract ?? { dedupes: true, query_fences: false, max_attempts: 3 };
    const tools = options.tools ?? {};
    this.tools = typeof tools === 'function' ? tools : (name) => tools[name];
    const policy = options.policy ?? {
      operator: operator ?? 'ops',
      reconcile_window: reconcileWindow ?? 3_600_000,
      ...(allowed === undefined ? {} : { allowed: [...allowed] }),
    };
    this.driver = options.driver ?? new d.Driver({ ...options, policy, tools: this.tools });
    this.name = this.driver.name;
  }

  /** The run as the store holds it, with `run` and `checkpoint` for short. */
  turn() {
    const t = this.driver.load();
    return { ...t, run: t.held.run, checkpoint: t.held.checkpoint };
  }

  /** The middleware, for `createAgent({ middleware: [gate.middleware()] })`. */
  middleware() {
    const { createMiddleware } = require('langchain');
    return createMiddleware({
      name: 'ResumableHumanInTheLoop',
      afterModel: { canJumpTo: ['model'], hook: async (state) => this.afterModel(state) },
    });
  }

  /** The core's proposal for a LangChain tool call (key: `${run}:${id}`). */
  proposal(tc) {
    return {
      call_id: tc.id,
      tool: tc.name,
      args: tc.args ?? {},
      key: `${this.name}:${tc.id}`,
      contract: { ...this.contract, allowed: this.allowed[tc.name] },
      requester: this.requester,
      approver: this.approver,
      expires_in: this.expiresIn,
    };
  }

  async afterModel(state) {
    const { interrupt } = require('@langchain/langgraph');
    const { AIMessage, ToolMessage } = require('@langchain/core/messages');
    const last = [...state.messages].reverse().find((m) => AIMessage.isInstance(m));
    if (!last || !last.tool_calls?.length) return undefined;
    const gated = last.tool_calls.filter((tc) => this.allowed[tc.name] !== undefined);
    if (gated.length === 0) return undefined;
    if (gated.length > rk.BATCH_CAPACITY) {
      throw new d.NotBuilt(
        `${gated.length} gated calls in one turn: one batch holds ${rk.BATCH_CAPACITY}`,
      );
    }
    const proposals = gated.map((tc) => this.proposal(tc));
    let seen = 0; // values LangGraph handed back this run of the node that the core counted
    let refused = null;
    for (let round = 0; round < d.MAX_ROUNDS; round += 1) {
      const todo = await this.driver.drive(proposals, { turn: true });
      // Decided: nothing more is asked in this run of the node, so what LangGraph still holds
      // for its interrupts is not read.
      if (todo.todo === 'done') return this.outcome(last, gated, todo.outcomes, ToolMessage);
      if (todo.todo === 'ended' && todo.cause?.cause === 'denied') throw new Denied(todo);
      if (todo.todo !== 'ask') d.stop(todo);
      const { request } = todo;
      seen = this.skip(interrupt, request, seen);
      const shown = {
        actionRequests: gated.map((tc) => ({ name: tc.name, args: tc.args })),
        reviewConfigs: gated.map((tc) => ({
          actionName: tc.name,
          allowedDecisions: this.allowed[tc.name],
        })),
        ...request,
      };
      if (refused !== null) Object.assign(shown, { refused: refused.rejection,
        verdict: refused.verdict, message: refused.message });
      // The graph's interrupt throws to pause the graph; its answer goes to the core as is.
      const answer = interrupt(shown);
      const fed = await this.driver.resume(request, answer, this.approver);
      if (typeof fed.verdict === 'string') {
        refused = fed; // no decision: nothing was fed, nothing counted
      } else {
        seen += 1;
        refused = fed.verdict.verdict === 'accepted' ? null : fed.verdict;
      }
    }
    throw new Error(`run ${this.name}: the batch was not decided`);
  }

  /**
   * Consumes the values LangGraph hands back to this node's earlier interrupts until as many
   * decisions as the core counted (`request.answers`) are behind, so that the next interrupt
   * gets a new one; `seen` were consumed already. A value the core reads as no decision was
   * never counted: it is skipped and not counted either. Returns the decisions consumed.
   */
  skip(interrupt, request, seen) {
    let counted = seen;
    while (counted < request.answers) {
      const replayed = interrupt({ replay: true });
      if (rk.driverIsResumeDecision(request, replayed, this.approver)) counted += 1;
    }
    return counted;
  }

  /** The turn as the core decided it: every gated call answered to the model by a ToolMessage. */
  outcome(last, gated, outcomes, ToolMessage) {
    const messages = gated.map((tc, i) => {
      const o = outcomes[i];
      const text = o.outcome === 'result' ? content(JSON.parse(o.result)) : o.message;
      return new ToolMessage({
        content: text,
        name: tc.name,
        tool_call_id: tc.id,
        status: o.outcome === 'rejected' ? 'error' : 'success',
      });
    });
    // Every call of the turn answered: back to the model; else the tools node runs the rest.
    const rest = last.tool_calls.length > gated.length;
    return rest ? { messages: [last, ...messages] } : { messages: [last, ...messages], jumpTo: 'model' };
  }

  /** The run's audit log and its anchor, for `resumable validate --key-file K --anchor A`. */
  log() {
    return this.driver.log();
  }
}

const { Changed, NotBuilt, Refused } = d;

module.exports = {
  HitlGate,
  Changed,
  Denied,
  NotBuilt,
  Refused,
  hitlDecisions,
};
