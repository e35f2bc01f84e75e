'use strict';
// LangChain's human-in-the-loop for `createAgent` (langchain 1.x), decided by the kernel: a
// middleware that takes the place of `humanInTheLoopMiddleware`, with its interrupt and its
// resume in the same words, and every decision bound and checked by the kernel first.
//
// After each model turn, the tool calls of the turn's AIMessage whose tool is in `interruptOn`
// become one kernel batch (spec 5.5, frameworks.md): one call per action request, in order,
// each tool's `allowedDecisions` its call's `contract.allowed` (POL-1). The graph pauses with
// one interrupt whose value holds what the plain middleware's does (`actionRequests`,
// `reviewConfigs`) and what the kernel binds decisions to (`calls`, `checkpoint`). The resume
// value (`Command({ resume })`) is `{ at, checkpoint, decisions }`, one decision per call as
// the plain middleware takes them (`{ type: 'approve' }`, `{ type: 'edit', editedAction: {
// name, args } }`, `{ type: 'reject', message }`, `{ type: 'respond', message }`, and
// `{ type: 'deny' }` for "stop the run"), each carrying the `approval` that binds it to its
// call (`hitlDecisions` makes them). They are fed to the kernel as one `decision: batch`:
// a refused list changes nothing, and the graph interrupts again with the request, the
// rejection (`refused`) and its `message`. A list may decide some calls only: the graph
// interrupts again for the rest.
//
// Once every call is decided, the middleware hands the agent the turn as the kernel decided
// it: an approved call as proposed, an edited one with the approver's arguments (their
// digest, RFC 8785, checked against the kernel's), a rejected one answered by a ToolMessage
// with the message (status `error`), a responded one by a ToolMessage with the person's
// answer; then the agent's tools node runs the approved and edited calls, each tool inside
// through `runTool`, under the kernel's tool key, and records its result (as `agents.js`
// does). A denial ends the run: the middleware throws `Denied` and no call runs. Unlike the
// plain middleware, a rejection does not stop the approved calls of the same turn from
// running: the kernel dispatched them.
//
// Not built: a turn with more gated calls than one batch holds (`BATCH_CAPACITY`): refused by
// name (`NotBuilt`), as in agents.js; an edit that changes the tool's name (another call):
// refused as not a decision.
//
// A process that dies after the kernel took the last decisions and before the graph stored
// the middleware's answer leaves the batch closed and its calls dispatched: when the same
// resume value is sent again, the node runs again, the kernel answers the list as already
// taken (`already_applied`), its texts (edited arguments, messages) are taken from it, checked
// against the kernel's digests, and the tools' `runTool` reconciles the dispatches the dead
// process made, never repeating them blindly (`hitl-crash.test.js`).

const rk = require('./index.js');
const { ApprovalDesk } = require('./agents.js');
const { MAX_ROUNDS, Denied, NotBuilt, Refused } = require('./gate.js');

/** What HITL lets an approver do when a tool's config is `true`. */
const HITL_DEFAULT = ['approve', 'edit', 'reject'];
const HITL_TYPES = new Set(['approve', 'edit', 'reject', 'respond', 'deny']);

function notADecision(message) {
  return {
    verdict: 'not_a_decision',
    accepted: false,
    rejection: { rejection: 'not_a_decision' },
    message,
  };
}

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

/** Whether every text the decided batch needs (edited arguments, messages) is at hand. */
function textsAtHand(batch, texts) {
  return batch.slots.every((s) => {
    const verdict = s.decided?.[0].verdict;
    return !['edit', 'reject', 'respond'].includes(verdict) || texts.has(s.call.call.call_id);
  });
}

/** The default message a rejected call is answered with, as the plain middleware words it. */
function rejectedText(toolCall) {
  return `User rejected the tool call for \`${toolCall.name}\` with id ${toolCall.id}`;
}

/**
 * The resume value for the interrupt `request`: one HITL decision per call, in the request's
 * order (as `Command({ resume: { decisions } })` takes them; a shorter list decides the first
 * calls only, `null` in the list skips a call), each bound to its call by an approval.
 */
function hitlDecisions(request, list, { approver, expiresAt, at }) {
  const decisions = [];
  list.forEach((d, i) => {
    if (d === null || d === undefined) return;
    const proposal = request.calls[i];
    if (proposal === undefined) throw new Error(`the request has no call at position ${i}`);
    decisions.push({
      ...d,
      approval: {
        call_id: proposal.call.call_id,
        args: proposal.call.args,
        requester: proposal.requester,
        approver,
        revision: request.checkpoint.revision,
        expires_at: expiresAt,
      },
    });
  });
  return { at, checkpoint: request.checkpoint, decisions };
}

/** The kernel's decision for one HITL decision on `toolCall`; throws `Refused` if there is none. */
function kernelDecision(d, toolCall) {
  if (d === null || typeof d !== 'object' || !HITL_TYPES.has(d.type) || !d.approval) {
    throw new Refused(notADecision(`not a bound HITL decision: ${JSON.stringify(d)}`));
  }
  const approval = d.approval;
  switch (d.type) {
    case 'approve':
    case 'deny':
      return { approval, verdict: d.type };
    case 'edit': {
      const edited = d.editedAction;
      if (!edited || typeof edited.args !== 'object' || edited.args === null) {
        throw new Refused(notADecision('an edit carries editedAction: { name, args }'));
      }
      if (toolCall !== undefined && edited.name !== toolCall.name) {
        throw new Refused(
          notADecision(`an edit that changes ${toolCall.name} into ${edited.name} is another call`),
        );
      }
      return { approval, verdict: 'edit', args: rk.digest(edited.args) };
    }
    case 'reject': {
      // A call not of this turn has no default message; the kernel refuses it by its id.
      const message = d.message ?? rejectedText(toolCall ?? { name: '', id: approval.call_id });
      return { approval, verdict: 'reject', reason: rk.digest(message) };
    }
    default:
      if (typeof d.message !== 'string') {
        throw new Refused(notADecision('a response carries the person\'s answer as message'));
      }
      return { approval, verdict: 'respond', result: rk.digest(d.message) };
  }
}

/**
 * The kernel's gate for one agent run's human-in-the-loop: `middleware()` goes in
 * `createAgent({ middleware })`, `runTool` inside each gated tool. `interruptOn` as the plain
 * middleware takes it (`{ tool: true | { allowedDecisions } }`); `requester` asks for every
 * call and `approver` decides them, within `expiresIn` of the turn.
 */
class HitlGate {
  constructor({ store, name, identity, clock, interruptOn, requester, approver, expiresIn,
    operator, reconcileWindow, allowed }) {
    this.desk = new ApprovalDesk({ store, name, identity, clock, operator, reconcileWindow,
      allowed });
    this.name = name;
    this.clock = clock;
    this.allowed = allowedOf(interruptOn);
    this.requester = requester;
    this.approver = approver;
    this.expiresIn = expiresIn;
  }

  /** The run as the store holds it. */
  turn() {
    return this.desk.turn();
  }

  /** The kernel's call for a LangChain tool call (key: `${run}:${id}`). */
  callOf(toolCall) {
    return {
      call_id: toolCall.id,
      tool: toolCall.name,
      args: rk.digest(toolCall.args ?? {}),
      key: `${this.name}:${toolCall.id}`,
      contract: {
        dedupes: true,
        query_fences: false,
        max_attempts: 3,
        allowed: this.allowed[toolCall.name],
      },
    };
  }

  /** The middleware, for `createAgent({ middleware: [gate.middleware()] })`. */
  middleware() {
    const { createMiddleware } = require('langchain');
    return createMiddleware({
      name: 'ResumableHumanInTheLoop',
      afterModel: async (state, _runtime) => this.afterModel(state),
    });
  }

  /** Opens the turn's batch, or finds it open (the node runs again on each resume). */
  open(gated) {
    const { run, history } = this.turn();
    const ids = gated.map((tc) => tc.id);
    const batch = run.batch;
    const open = batch === undefined ? [] : batch.slots.map((s) => s.call.call.call_id);
    if (open.length === ids.length && open.every((id, i) => id === ids[i])) return;
    if (gated.length > rk.BATCH_CAPACITY) {
      throw new NotBuilt(
        `${gated.length} gated calls in one turn: one batch holds ${rk.BATCH_CAPACITY}`,
      );
    }
    const calls = gated.map((tc) => {
      const call = this.callOf(tc);
      return { call, requester: this.requester, prior: history.prior(call) };
    });
    const now = this.clock();
    this.desk.step({
      at: now,
      kind: 'suspend',
      wait: { wait: 'batch', calls },
      expires_at: now + this.expiresIn,
      responsible: this.approver,
      resource_version: 0,
    });
  }

  async afterModel(state) {
    const { interrupt } = require('@langchain/langgraph');
    const { AIMessage, ToolMessage } = require('@langchain/core/messages');
    const last = [...state.messages].reverse().find((m) => AIMessage.isInstance(m));
    if (!last || !last.tool_calls?.length) return undefined;
    const gated = last.tool_calls.filter((tc) => this.allowed[tc.name] !== undefined);
    if (gated.length === 0) return undefined;
    this.open(gated);
    // What the approver's texts were, by call id: edited arguments and messages, from every
    // answer the kernel took (or found already taken, identical, when the node runs again).
    const texts = new Map();
    let refused = null;
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const t = this.turn();
      const batch = t.run.batch;
      if (t.run.phase.phase === 'failed') {
        throw new Denied(`run ${this.name} failed: ${JSON.stringify(t.run.phase)}`);
      }
      // A batch closed in an earlier run of this node (a process that died after the kernel
      // took the decisions) is handed over once the approver's texts are at hand again: the
      // answer handed back to the interrupt gives them, checked against the kernel's digests.
      if (batch.closed !== null && textsAtHand(batch, texts)) {
        return this.outcome(last, gated, batch, texts, ToolMessage);
      }
      const request = {
        actionRequests: gated.map((tc) => ({ name: tc.name, args: tc.args })),
        reviewConfigs: gated.map((tc) => ({
          actionName: tc.name,
          allowedDecisions: this.allowed[tc.name],
        })),
        calls: batch.slots.map((s) => ({ call: s.call.call, requester: s.requester })),
        awaiting: batch.slots.filter((s) => s.state === 'awaiting').map((s) => s.call.call.call_id),
        checkpoint: t.checkpoint,
      };
      if (refused !== null) {
        request.refused = refused.rejection;
        request.message = refused.message;
      }
      // The graph's interrupt throws to pause the graph; only the kernel's refusal is caught.
      const answer = interrupt(request);
      try {
        this.resume(answer, gated, texts);
        refused = null;
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
        // An answer the kernel already took, handed back as the node runs again, is no
        // refusal to show; any other is.
        refused = e.rejection.verdict === 'already_applied' ? null : e.rejection;
      }
    }
    throw new Error(`run ${this.name}: the batch was not decided`);
  }

  /** Feeds one resume value to the kernel as one `decision: batch`. */
  resume(answer, gated, texts) {
    if (!answer || typeof answer !== 'object' || !Array.isArray(answer.decisions) ||
      !answer.checkpoint || typeof answer.checkpoint !== 'object') {
      throw new Refused(
        notADecision(`the resume value is not a bound decision list: ${JSON.stringify(answer)}`),
      );
    }
    const byId = new Map(gated.map((tc) => [tc.id, tc]));
    const decisions = answer.decisions.map((d) =>
      kernelDecision(d, byId.get(d?.approval?.call_id)),
    );
    const seen = (d) => {
      const tc = byId.get(d.approval.call_id);
      texts.set(d.approval.call_id, {
        args: d.type === 'edit' ? d.editedAction.args : undefined,
        message: d.type === 'reject' ? (d.message ?? rejectedText(tc)) : d.message,
      });
    };
    const input = {
      at: answer.at,
      kind: 'resume',
      checkpoint: answer.checkpoint,
      decision: { decision: 'batch', decisions },
      facts: {
        resource_version: answer.checkpoint.resource_version,
        permitted: true,
        within_budget: true,
      },
    };
    try {
      this.desk.noteDispatch(this.desk.step(input));
    } catch (e) {
      // The same list, already taken (the node runs again after the resume): its texts hold.
      if (e instanceof Refused && e.rejection.verdict === 'already_applied') {
        answer.decisions.forEach(seen);
      }
      throw e;
    }
    answer.decisions.forEach(seen);
  }

  /** The turn as the kernel decided it: tool calls to run, and the answers given in their place. */
  outcome(last, gated, batch, texts, ToolMessage) {
    const messages = [];
    const slots = new Map(batch.slots.map((s) => [s.call.call.call_id, s]));
    const toolCalls = last.tool_calls.map((tc) => {
      const slot = slots.get(tc.id);
      if (slot === undefined) return tc;
      const [decision] = slot.decided;
      const text = texts.get(tc.id);
      if (decision.verdict === 'edit') {
        if (text?.args === undefined || rk.digest(text.args) !== slot.call.call.args) {
          throw new Error(`call ${tc.id}: the edited arguments are not the ones the kernel bound`);
        }
        return { ...tc, args: text.args };
      }
      if (decision.verdict === 'reject' || decision.verdict === 'respond') {
        const digest = decision.verdict === 'reject' ? decision.reason : decision.result;
        if (text?.message === undefined || rk.digest(text.message) !== digest) {
          throw new Error(`call ${tc.id}: the message is not the one the kernel recorded`);
        }
        messages.push(
          new ToolMessage({
            content: text.message,
            name: tc.name,
            tool_call_id: tc.id,
            status: decision.verdict === 'reject' ? 'error' : 'success',
          }),
        );
      }
      return tc;
    });
    last.tool_calls = toolCalls;
    return { messages: [last, ...messages] };
  }

  /** Carries out the call from inside a gated tool, as `ApprovalDesk.runTool` does. */
  runTool(callId, tool, args) {
    return this.desk.runTool(callId, tool, args);
  }
}

module.exports = { HitlGate, Denied, NotBuilt, Refused, hitlDecisions };
