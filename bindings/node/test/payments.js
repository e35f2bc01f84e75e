'use strict';
// A new user's payments app in LangGraph.js, ours: one node sends a payment behind an approval
// (`send_payment(to, amount)`), then asks a second question in the same node ("notify the
// payee?"). Built twice: plainly (the node interrupts and pays the state's amount) and through
// the package's gate. The payments ledger is a file outside the process (one JSON line per
// payment, flushed before the tool answers), the resource the payment acts on a version in a
// file the gate observes, and time a clock the test moves.

const fs = require('node:fs');
const path = require('node:path');

const Database = require('better-sqlite3');
const { Annotation, MemorySaver, interrupt } = require('@langchain/langgraph');
const { SqliteSaver } = require('@langchain/langgraph-checkpoint-sqlite');

const gate = require('../gate');
const { oneNode } = require('./graph');
const { DedupingTool, Ledger } = require('./ledger');

const KEY = 'a1'.repeat(32);
const ASK = { requester: 'agent', approver: 'alice', expiresIn: 100 };

const State = Annotation.Root({
  to: Annotation(),
  amount: Annotation(),
  callId: Annotation(),
  receipt: Annotation({ reducer: (_old, next) => next, default: () => null }),
  notify: Annotation({ reducer: (_old, next) => next, default: () => null }),
  outcome: Annotation({ reducer: (_old, next) => next, default: () => null }),
});

/** The payment service: pays once per tool key, answers the same receipt again. */
class PaymentService extends DedupingTool {
  answer(_call, n) {
    return `receipt-${n}`;
  }

  entry(call, receipt) {
    return { tool_key: call.tool_key, tool: call.tool, ...call.args, receipt };
  }

  answered(entry) {
    return entry.receipt;
  }
}

function compile(node, saver) {
  return oneNode(State, 'pay', node, saver);
}

/** The app through the gate, its stores in `dir`. `saver`: 'memory' or 'sqlite'. */
class PaymentsApp {
  constructor(dir, { saver = 'sqlite', clock, gateFor } = {}) {
    this.dir = dir;
    this.ledger = new Ledger(path.join(dir, 'payments.ledger'));
    this.versionFile = path.join(dir, 'payee.version');
    if (!fs.existsSync(this.versionFile)) fs.writeFileSync(this.versionFile, '1');
    this.db = new Database(path.join(dir, 'runs.db'));
    this.store = new gate.SqliteDriverStore(this.db);
    this.saver = saver === 'memory' ? new MemorySaver()
      : SqliteSaver.fromConnString(path.join(dir, 'graph.db'));
    this.ticks = 0;
    this.clock = clock ?? (() => this.ticks);
    this.service = new PaymentService(this.ledger);
    this.gateFor = gateFor ?? ((options) => new gate.ApprovalGate(options));
    this.graph = compile((state, config) => this.pay(state, config), this.saver);
  }

  /** The gate of the thread's run (one run per thread, named by its thread id). */
  gate(thread) {
    return this.gateFor({
      store: this.store,
      name: thread,
      identity: { tenant: 'acme', session: thread, run: thread, definition: 'payments@1' },
      policy: { operator: 'ops', reconcile_window: 1000 },
      tool: this.service,
      interrupt,
      clock: this.clock,
      // Observed by the gate: the payee account's version, read now from its own file.
      facts: () => ({
        resource_version: Number(fs.readFileSync(this.versionFile, 'utf8')),
        permitted: true,
        within_budget: true,
      }),
      key: KEY,
    });
  }

  async pay(state, config) {
    const g = this.gate(config.configurable.thread_id);
    try {
      const receipt = await g.call(
        { callId: state.callId, tool: 'send_payment', args: { to: state.to, amount: state.amount },
          key: `pay:${state.callId}` },
        ASK,
      );
      const notify = interrupt({ question: 'notify the payee?' });
      return { receipt, notify };
    } catch (e) {
      // The run cannot go on with this call: the graph ends with a clear result.
      if (e instanceof gate.Ended) return { outcome: `ended: ${e.cause ?? e.phase}` };
      if (e instanceof gate.Changed) return { outcome: 'changed' };
      if (e instanceof gate.Waiting) return { outcome: `waiting: ${e.message}` };
      throw e;
    }
  }

  close() {
    this.db.close();
    if (this.saver.db) this.saver.db.close();
  }
}

/** The same app written with LangGraph alone: the node interrupts, then pays the state's amount. */
function plainApp(dir, saver = new MemorySaver()) {
  const ledger = new Ledger(path.join(dir, 'payments.ledger'));
  const graph = compile((state) => {
    const approval = interrupt({ pay: { to: state.to, amount: state.amount } });
    if (approval?.approve) ledger.append({ to: state.to, amount: state.amount, approval });
    const notify = interrupt({ question: 'notify the payee?' });
    return { receipt: 'paid', notify };
  }, saver);
  return { graph, ledger };
}

const cfg = (thread) => ({ configurable: { thread_id: thread } });

/** The interrupt value a result paused on. */
function pausedOn(result) {
  if (!result.__interrupt__ || result.__interrupt__.length === 0) return null;
  return result.__interrupt__[0].value;
}

module.exports = { ASK, KEY, PaymentService, PaymentsApp, State, cfg, compile, pausedOn, plainApp };
