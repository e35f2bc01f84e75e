'use strict';
// The payments app (test/payments.js) treated the way a hostile framework treats an adapter:
// fast-check's model-based commands over a real LangGraph.js graph with its SQLite
// checkpointer and the package's gate, in random sequences of start (a new payment, or a new
// one under an old call id), approve, deny, a resume from an old config, the state changed
// between the suspension and the resume, a late delivery, the second question, the clock
// moving. After every command the invariants are checked against the payments ledger, a file
// outside the graph and the gate, and what the approvers approved:
//
// 1. every payment's (to, amount) is one an approver approved, as shown, in time;
// 2. one payment at most per tool key (per call);
// 3. a receipt the graph hands back belongs to a payment of the state's own (to, amount);
// 4. the second question gets the answer given to it;
// 5. a late delivery pays nothing.
// At the end of each sequence every thread's audit log passes `resumable validate`.
//
// Seeded (SEED, NUM_RUNS below) so CI replays the same sequences. The same property run on
// deliberately broken adapters (test-only, as the adapters before the driver core behaved:
// `BrokenGate` matches a recorded call by its id alone and hands the tool the node's current
// arguments; `FrozenClockGate` takes its time from the run, never its own clock) must fail,
// with fast-check's shrunk counterexample.

const assert = require('node:assert/strict');
const { test } = require('node:test');

const fc = require('fast-check');
const { Command } = require('@langchain/langgraph');

const rk = require('..');
const gate = require('../gate');
const { assertValidates, scratch } = require('./helpers');
const { KEY, PaymentsApp, cfg, pausedOn } = require('./payments');

const SEED = 20261202;
const NUM_RUNS = Number(process.env.RESUMABLE_FC_RUNS || 40);
const { tmp } = scratch('resumable-payments-model-');

const canon = (to, amount) => rk.canonical({ amount, to });

/**
 * The broken adapter: a recorded call is found by its call id alone (the proposal takes the
 * recorded arguments), and the tool is handed the node's current arguments.
 */
class BrokenGate extends gate.ApprovalGate {
  constructor(options) {
    const current = { args: null };
    const service = options.tool;
    super({
      ...options,
      tool: {
        query: (call) => service.query(call),
        commit: (call) => service.commit({ ...call, args: current.args ?? call.args }),
      },
    });
    this.current = current;
  }

  proposal(call, ask) {
    this.current.args = call.args;
    const p = super.proposal(call, ask);
    const record = this.stored().book.calls?.[call.callId];
    return record ? { ...p, args: JSON.parse(record.args) } : p;
  }
}

/**
 * Another broken adapter: its clock is the run's own last time, as an adapter that takes the
 * time from the checkpoint (or from the answer) does: nothing is ever late, `expire` never due.
 */
class FrozenClockGate extends gate.ApprovalGate {
  constructor(options) {
    const { store, name } = options;
    super({ ...options, clock: () => {
      const s = store.load(name);
      return s === null ? 0 : Number(s.held.run.updated_at);
    } });
  }
}

const BROKEN = {
  'matches by call id, pays the node\'s arguments': (o) => new BrokenGate(o),
  'takes its time from the run': (o) => new FrozenClockGate(o),
};

/** The world of one sequence: the app, its threads, and what approvers approved. */
class World {
  constructor(gateFor) {
    this.app = new PaymentsApp(tmp(), { gateFor });
    this.app.ticks = 1;
    this.threads = ['t-0'];
    this.paused = new Map(); // thread -> the interrupt value it is paused on
    this.state = new Map(); // thread -> the graph's last state
    this.configs = new Map(); // thread -> configs seen, for resumes from an old one
    this.approvals = new Map(); // thread -> approvals made, for deliveries later
    this.approved = new Set(); // canonical (to, amount) approved in time
  }

  get thread() {
    return this.threads[this.threads.length - 1];
  }

  async record(thread, result) {
    this.paused.set(thread, pausedOn(result));
    this.state.set(thread, result);
    const { config } = await this.app.graph.getState(cfg(thread));
    this.configs.set(thread, [...(this.configs.get(thread) ?? []), config]);
    return result;
  }

  /** Resumes the current thread with `answer`: the graph's result, recorded. */
  async resumed(answer) {
    const thread = this.thread;
    return this.record(thread, await this.app.graph.invoke(new Command({ resume: answer }),
      cfg(thread)));
  }

  check(thread, result) {
    const payments = this.app.ledger.entries();
    for (const p of payments) {
      assert.ok(this.approved.has(canon(p.to, p.amount)),
        `paid ${p.amount} to ${p.to}, which no approver approved (${[...this.approved]})`);
    }
    const keys = payments.map((p) => p.tool_key);
    assert.equal(new Set(keys).size, keys.length, 'two payments under one tool key');
    if (result && typeof result.receipt === 'string') {
      const paid = payments.find((p) => p.receipt === result.receipt);
      assert.ok(paid, `receipt ${result.receipt} matches no payment`);
      assert.deepEqual([paid.to, paid.amount], [result.to, result.amount],
        `the receipt handed back is another payment's (${paid.to} ${paid.amount})`);
    }
  }

  close() {
    for (const thread of this.threads) assertValidates(this.app.gate(thread).log(), KEY);
    this.app.close();
  }
}

/** A command fast-check may run in any model. */
class Step {
  check() {
    return true;
  }
}

/** A command that answers what the graph asks: run only where it may have asked. */
class Answer extends Step {
  check(m) {
    return m.asked;
  }
}

const approvalRequest = (w) => {
  const p = w.paused.get(w.thread);
  return p && Array.isArray(p.calls) ? p : null;
};

class Start extends Step {
  constructor(fresh, to, amount, reuse) {
    super();
    Object.assign(this, { fresh, to, amount, reuse });
  }

  async run(_m, w) {
    if (this.fresh) w.threads.push(`t-${w.threads.length}`);
    const thread = w.thread;
    const callId = this.reuse ? 'call_1' : `call_${w.app.ticks}_${this.to}_${this.amount}`;
    const input = { to: this.to, amount: this.amount, callId, receipt: null, notify: null,
      outcome: null };
    const r = await w.record(thread, await w.app.graph.invoke(input, cfg(thread)));
    w.check(thread, r);
  }

  toString() {
    return `start(${this.fresh ? 'new thread, ' : ''}${this.to} ${this.amount}` +
      `${this.reuse ? ', call_1' : ''})`;
  }
}

class Decide extends Answer {
  constructor(approve, validFor) {
    super();
    Object.assign(this, { approve, validFor });
  }

  async run(_m, w) {
    const request = approvalRequest(w);
    if (request === null) return;
    const now = w.app.ticks;
    const answer = this.approve ? gate.approve(request, 'alice', now + this.validFor)
      : gate.deny(request, 'alice', now + this.validFor);
    w.approvals.set(w.thread, [...(w.approvals.get(w.thread) ?? []), { request, answer }]);
    if (this.approve && now <= request.expires_at && this.validFor >= 0) {
      w.approved.add(request.calls[0].args);
    }
    w.check(w.thread, await w.resumed(answer));
  }

  toString() {
    return `${this.approve ? 'approve' : 'deny'}(valid for ${this.validFor})`;
  }
}

class ChangeState extends Answer {
  constructor(amount) {
    super();
    this.amount = amount;
  }

  async run(_m, w) {
    await w.app.graph.updateState(cfg(w.thread), { amount: this.amount });
    const s = await w.app.graph.getState(cfg(w.thread));
    w.state.set(w.thread, s.values);
  }

  toString() {
    return `updateState(amount ${this.amount})`;
  }
}

class DeliverLate extends Answer {
  async run(_m, w) {
    const request = approvalRequest(w);
    if (request === null) return;
    // Made in time, stamped in time, delivered after the request expired.
    const answer = { ...gate.approve(request, 'alice', w.app.ticks + 10_000), at: w.app.ticks };
    const before = w.app.ledger.commits();
    w.app.ticks = Number(request.expires_at) + 5;
    const r = await w.resumed(answer);
    assert.equal(w.app.ledger.commits(), before, 'a late delivery paid');
    w.check(w.thread, r);
  }

  toString() {
    return 'deliverLate()';
  }
}

class ResumeOld extends Step {
  constructor(pick) {
    super();
    this.pick = pick;
  }

  async run(_m, w) {
    const thread = w.thread;
    const configs = w.configs.get(thread) ?? [];
    const made = w.approvals.get(thread) ?? [];
    if (configs.length === 0 || made.length === 0) return;
    const config = configs[this.pick % configs.length];
    const { answer } = made[this.pick % made.length];
    const r = await w.app.graph.invoke(new Command({ resume: answer }), config);
    w.check(thread, r);
    await w.record(thread, await w.app.graph.getState(cfg(thread)).then((s) => ({
      ...s.values, __interrupt__: s.tasks.flatMap((t) => t.interrupts ?? []),
    })));
  }

  toString() {
    return `resumeFromOldConfig(${this.pick})`;
  }
}

class AnswerSecond extends Answer {
  constructor(text) {
    super();
    this.text = text;
  }

  async run(_m, w) {
    const p = w.paused.get(w.thread);
    if (!p || p.question === undefined) return;
    const r = await w.resumed(this.text);
    if (r.receipt !== null && !r.__interrupt__) {
      assert.equal(r.notify, this.text, 'the second question got another answer');
    }
    w.check(w.thread, r);
  }

  toString() {
    return `answerSecond(${JSON.stringify(this.text)})`;
  }
}

class Tick extends Step {
  constructor(by) {
    super();
    this.by = by;
  }

  async run(_m, w) {
    w.app.ticks += this.by;
  }

  toString() {
    return `tick(${this.by})`;
  }
}

const payee = fc.constantFrom('bob', 'carol');
const amount = fc.constantFrom(50, 70, 999);
const COMMANDS = [
  fc.tuple(fc.boolean(), payee, amount, fc.boolean()).map(([f, t, a, r]) => new Start(f, t, a, r)),
  fc.tuple(fc.boolean(), fc.constantFrom(-1, 5, 50)).map(([a, v]) => new Decide(a, v)),
  fc.constantFrom(70, 999).map((a) => new ChangeState(a)),
  fc.constant(new DeliverLate()),
  fc.nat(5).map((p) => new ResumeOld(p)),
  fc.constantFrom('yes', 'no').map((t) => new AnswerSecond(t)),
  fc.constantFrom(1, 30).map((b) => new Tick(b)),
];

/** The property over the app with `gateFor`'s gate: every sequence keeps the invariants. */
function property(gateFor) {
  return fc.asyncProperty(fc.commands(COMMANDS, { maxCommands: 12 }), async (cmds) => {
    const w = new World(gateFor);
    try {
      // The model is what the commands' preconditions read: always "maybe asked"; each
      // command looks at the real interrupt it finds (the oracle is the ledger).
      await fc.asyncModelRun(() => ({ model: { asked: true }, real: w }), cmds);
    } finally {
      w.close();
    }
  });
}

test(`fast-check: the gated payments app keeps its invariants (seed ${SEED}, ${NUM_RUNS} runs)`,
  { timeout: 300_000 }, async () => {
    await fc.assert(property(undefined), { seed: SEED, numRuns: NUM_RUNS,
      includeErrorInReport: true });
  });

for (const [what, gateFor] of Object.entries(BROKEN)) {
  test(`fast-check bites: a broken adapter that ${what} is caught`, { timeout: 300_000 },
    async (t) => {
      const out = await fc.check(property(gateFor), { seed: SEED, numRuns: NUM_RUNS,
        includeErrorInReport: true });
      assert.equal(out.failed, true, 'the broken adapter kept every invariant: the suite guards nothing');
      const shown = fc.defaultReportMessage(out);
      assert.match(shown, /which no approver approved|another payment's|a late delivery paid/, shown);
      t.diagnostic(shown.split('\n').slice(0, 5).join(' | '));
    });
}
