'use strict';
// One process of a graph run that may be killed with SIGKILL, started by
// langgraph-crash.test.js as `node -e "require(WORKER).main(...)" MODE STEP DIR`. MODE is
// `plain` (the node commits to the tool itself) or `gate` (through the kernel's gate). STEP
// is `start` (run until the approval interrupt), `approve` (resume with the approval),
// `restart` (go on from the graph's last checkpoint) or `resend` (plain: the approval sent
// again). With CRASH=after the process kills itself right after the tool committed, before
// anything else is written; with CRASH=before (gate mode), after the kernel's commit and
// before the tool is reached. The graph's checkpointer is SQLite in DIR, the kernel's store
// another SQLite file in DIR, the tool's ledger a file in DIR. The last line printed is JSON.

const fs = require('node:fs');
const path = require('node:path');

const Database = require('better-sqlite3');
const { Annotation, Command, END, START, StateGraph, interrupt } = require('@langchain/langgraph');
const { SqliteSaver } = require('@langchain/langgraph-checkpoint-sqlite');

const gate = require('../gate');
const { CrashingTool, Ledger, crash } = require('./ledger');

const IDENTITY = { tenant: 'acme', session: 'thread-1', run: 'run-1', definition: 'graph@1' };
const POST = { callId: 'call-1', tool: 'publish', args: { post: 42 }, key: 'idem-post-42' };
const CFG = { configurable: { thread_id: 'thread-1' } };

const State = Annotation.Root({
  out: Annotation({ reducer: (_old, next) => next, default: () => [] }),
});

const clock = () => Date.now(); // milliseconds

async function main([mode, step, dir]) {
  const ledger = new Ledger(path.join(dir, 'tool.ledger'));
  const store = new gate.SqliteDriverStore(new Database(path.join(dir, 'kernel.db')));

  const plain = (_state) => {
    const answer = interrupt({ call: POST.tool });
    ledger.append({ tool: POST.tool, args: POST.args, approval: answer });
    crash('after');
    return { out: [`published with ${answer}`] };
  };

  const gated = async (_state) => {
    const g = new gate.ApprovalGate({
      store,
      name: 'run-1',
      identity: IDENTITY,
      tool: new CrashingTool(ledger),
      interrupt,
      clock,
      reconcileWindow: 3_600_000,
    });
    return {
      out: [await g.call(POST, { requester: 'agent', approver: 'alice', expiresIn: 1e9 })],
    };
  };

  const app = new StateGraph(State)
    .addNode('work', mode === 'plain' ? plain : gated)
    .addEdge(START, 'work')
    .addEdge('work', END)
    .compile({ checkpointer: SqliteSaver.fromConnString(path.join(dir, 'graph.db')) });
  const requestFile = path.join(dir, 'request.json');
  let r;
  if (step === 'start') {
    r = await app.invoke({ out: [] }, CFG);
    fs.writeFileSync(requestFile, JSON.stringify(r.__interrupt__[0].value));
  } else if (step === 'approve') {
    const request = JSON.parse(fs.readFileSync(requestFile, 'utf8'));
    const decision =
      mode === 'plain' ? 'approve' : gate.approve(request, 'alice', clock() + 1e9);
    r = await app.invoke(new Command({ resume: decision }), CFG);
  } else if (step === 'restart') {
    r = await app.invoke(null, CFG);
  } else {
    // resend: the approver, seeing no result, sends the approval again
    r = await app.invoke(new Command({ resume: 'approve' }), CFG);
  }
  console.log(JSON.stringify({ out: r.out ?? null, interrupted: '__interrupt__' in r }));
}

module.exports = { main };
