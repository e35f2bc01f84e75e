'use strict';
// A tool call gated behind a person's approval in LangGraph.js (`interrupt()` and
// `new Command({ resume })`), as glue over the driver core (driver.js): the core decides what
// to suspend, what the approver is shown (the arguments beside their digest), how an answer is
// judged (at the gate's clock, on the facts the gate observes), which arguments the tool gets
// (the approved ones), and that a node run again finds its own call's result, never another
// call's. This module only maps that onto LangGraph:
//
// - a node runs again from its start on every resume, and LangGraph hands its `interrupt()`
//   calls the answers given so far, in order. The gate consumes as many of them as the core
//   counted for the call (`answers`), and no more than LangGraph holds, so the node's next
//   `interrupt()` gets its own answer;
// - the core's `ask` becomes an `interrupt()` whose value is the request (and, after a
//   refusal, `refused` and `message`); the resume value is fed to the core as it is;
// - a run that cannot go on throws: `Ended` (`Denied` for a denial, `cause: 'expired'` for a
//   late answer), `Changed` (a different call under a recorded call id: never the old
//   receipt), `Waiting`; a node catches them to end the graph with a clear result.
//
// One call per interrupt: a node gates its calls one after the other. A call proposed while
// the run waits on another (parallel branches of one step, a new input on a waiting thread)
// is refused by name (`Waiting`, with the core's todo).

const rk = require('./index.js');
const d = require('./driver.js');

/** The approver denied the call: the run has failed, and the call was never made. */
class Denied extends d.Ended {
  constructor(todo) {
    super(todo, 'Denied');
  }
}

/** The approver's answer approving the one call of `request` (as an interrupt showed it). */
function approve(request, approver, expiresAt) {
  return rk.driverApproval(request, true, approver, expiresAt);
}

/** The approver's answer denying it: the run fails. */
function deny(request, approver, expiresAt) {
  return rk.driverApproval(request, false, approver, expiresAt);
}

const CONTRACT = Object.freeze({ dedupes: true, query_fences: false, max_attempts: 3 });

/**
 * Gates the calls of one run behind approvals. `interrupt` is LangGraph's; `tool` the tool
 * `{ commit, query }` (or `tools`, a function of the tool's name); `clock` the gate's time;
 * `facts` what it observes; the rest as `Driver` takes them (or a `driver` of one's own).
 */
class ApprovalGate {
  constructor(options) {
    this.interrupt = options.interrupt;
    this.contract = options.contract ?? CONTRACT;
    this.driver = options.driver ?? new d.Driver({ ...options, tools: options.tools ?? options.tool });
  }

  /** The run as the store holds it (`{ held, book, extra }`). */
  stored() {
    return this.driver.load();
  }

  /** The call as the core takes it. */
  proposal(call, { requester, approver, expiresIn }) {
    return {
      call_id: call.callId,
      tool: call.tool,
      args: call.args,
      key: call.key,
      contract: call.contract ?? this.contract,
      requester,
      approver,
      expires_in: expiresIn,
    };
  }

  /**
   * Makes `call` once its approver approved it and returns the tool's result. Safe to call
   * again from a node that runs again: the recorded result is returned, the pending approval
   * asked for again, a dispatch in flight reconciled, never repeated.
   */
  async call(call, ask) {
    const proposal = this.proposal(call, ask);
    let seen = 0; // interrupt answers this run of the node has consumed, as the core counts
    let refused = null;
    for (let round = 0; round < d.MAX_ROUNDS; round += 1) {
      const todo = await this.driver.drive([proposal]);
      if (todo.todo === 'done') {
        this.skip(todo.answers - seen, { call_id: proposal.call_id, decided: true });
        const outcome = d.outcomeValue(todo.outcomes[0]);
        if ('result' in outcome) return outcome.result;
        throw new Error(`call ${proposal.call_id}: ${JSON.stringify(outcome)}`);
      }
      if (todo.todo === 'ended' && todo.cause?.cause === 'denied') throw new Denied(todo);
      if (todo.todo !== 'ask') d.stop(todo);
      const { request } = todo;
      this.skip(request.answers - seen, request);
      seen = request.answers;
      const shown = refused === null ? request
        : { ...request, refused: refused.rejection, verdict: refused.verdict, message: refused.message };
      // LangGraph's interrupt throws to pause the graph; its answer is fed to the core as is.
      const answer = this.interrupt(shown);
      const fed = await this.driver.answer(request, answer);
      if (typeof fed.verdict === 'string') {
        refused = fed; // not a decision: nothing was fed, nothing counted
      } else {
        seen += 1;
        refused = fed.verdict.verdict === 'accepted' ? null : fed.verdict;
      }
    }
    throw new Error(`call ${proposal.call_id} did not settle`);
  }

  /**
   * Consumes `n` answers LangGraph hands back to this node's earlier `interrupt()` calls
   * (already fed), so that the next `interrupt()` gets a new one. A handed-back message that
   * is not a decision was never counted and is skipped too. It stops where no answer is among
   * the values LangGraph still holds (a node resumed from an old config, or run again anew,
   * holds fewer than the core counted): it never interrupts in the place of an answer already
   * fed, nor takes a later question's answer.
   */
  skip(n, shown) {
    for (let i = 0; i < n; i += 1) {
      const held = heldValues(this.interrupt);
      if (held !== null && held.every((v) => this.notADecision(v))) return;
      const replayed = this.interrupt(shown);
      if (this.notADecision(replayed)) i -= 1;
    }
  }

  /** Whether the core takes `message` for no decision at all (judged, nothing written). */
  notADecision(message) {
    return !rk.driverIsAnswer(message);
  }

  /** The run's audit log and its anchor, for `resumable validate --key-file K --anchor A`. */
  log() {
    return this.driver.log();
  }
}

/**
 * The values LangGraph holds for the node's next `interrupt()` calls, in order: the resume
 * values past its interrupt counter, then the resume pending for it (LangGraph.js 1.x's
 * scratchpad, read as its `interrupt()` reads it). `null` where they cannot be read: an
 * `interrupt` other than LangGraph's, outside a graph, or a LangGraph laid out otherwise.
 */
function heldValues(interrupt) {
  try {
    const lg = require('@langchain/langgraph');
    if (interrupt !== lg.interrupt) return null;
    const pad = lg.getConfig()?.configurable?.__pregel_scratchpad;
    if (!pad || !Array.isArray(pad.resume) || typeof pad.interruptCounter !== 'number') return null;
    const next = pad.interruptCounter + 1;
    const held = pad.resume.slice(next);
    if (pad.nullResume !== undefined && next <= pad.resume.length) held.push(pad.nullResume);
    return held;
  } catch {
    return null;
  }
}

const { Changed, Ended, NotBuilt, Refused, SqliteDriverStore, Waiting } = d;

module.exports = {
  ApprovalGate,
  Changed,
  Denied,
  Ended,
  NotBuilt,
  Refused,
  SqliteRunStore: SqliteDriverStore,
  SqliteDriverStore,
  Waiting,
  approve,
  deny,
};
