'use strict';
// Inside LangGraph.js (a real StateGraph, the in-memory and the SQLite checkpointers): for each
// failure a single-call approval meets there, one test that shows it happen with plain
// LangGraph (it asserts the bad outcome, so it fails, and says so, the day LangGraph stops
// doing it) and the same flow through the kernel's gate, where the kernel refuses it or it
// cannot happen. The tool's ledger is a file, outside the graph's state, so commits are
// counted as the world would see them.

const assert = require('node:assert/strict');
const path = require('node:path');
const { describe, test } = require('node:test');

const Database = require('better-sqlite3');
const { Annotation, Command, END, MemorySaver, START, StateGraph, interrupt } = require(
  '@langchain/langgraph',
);
const { SqliteSaver } = require('@langchain/langgraph-checkpoint-sqlite');

const rk = require('..');
const gate = require('../gate');
const { assertValidates, scratch } = require('./helpers');
const { oneNode } = require('./graph');
const { DedupingTool, Ledger } = require('./ledger');

const IDENTITY = { tenant: 'acme', session: 'thread-1', run: 'run-1', definition: 'graph@1' };
const POST = { callId: 'call-1', tool: 'publish', args: { post: 42 }, key: 'idem-post-42' };
const DELETE = { callId: 'call-2', tool: 'delete', args: { account: 7 }, key: 'idem-delete-7' };
const CFG = { configurable: { thread_id: 'thread-1' } };
const KEY = 'd4'.repeat(32);
const STILL = 'LangGraph.js no longer shows this: the gate test beside it guards nothing here';

const State = Annotation.Root({
  out: Annotation({ reducer: (_old, next) => next, default: () => [] }),
});

function compile(node, saver) {
  return oneNode(State, 'work', node, saver);
}

function plainCommit(ledger, call, approval) {
  ledger.append({ tool: call.tool, args: call.args, approval: JSON.stringify(approval) });
  return `${call.tool} done`;
}

function requestOf(result) {
  assert.ok(result.__interrupt__, `the graph did not interrupt: ${JSON.stringify(result)}`);
  return result.__interrupt__[0].value;
}

const { tmp, closing } = scratch('resumable-langgraph-');

const SAVERS = {
  memory: () => new MemorySaver(),
  sqlite: (dir) => {
    const saver = SqliteSaver.fromConnString(path.join(dir, 'graph.db'));
    closing(() => saver.db.close());
    return saver;
  },
};

/** The gate and its clock for one test. */
class Kernel {
  constructor(dir) {
    this.ledger = new Ledger(path.join(dir, 'tool.ledger'));
    const db = new Database(path.join(dir, 'kernel.db'));
    closing(() => db.close());
    this.store = new gate.SqliteDriverStore(db);
    this.ticks = 0;
  }

  clock() {
    this.ticks += 1;
    return this.ticks;
  }

  gate() {
    return new gate.ApprovalGate({
      store: this.store,
      name: 'run-1',
      identity: IDENTITY,
      tool: new DedupingTool(this.ledger),
      interrupt,
      clock: () => this.clock(),
      key: KEY,
    });
  }

  /**
   * The graph whose one node makes `calls` through one gate, run to its first interrupt: the
   * graph and the request the interrupt shows.
   */
  async start(saver, ...calls) {
    const app = compile(async (_state) => {
      const g = this.gate();
      const out = [];
      for (const call of calls) out.push(await g.call(call, ASK));
      return { out };
    }, saver);
    return { app, request: requestOf(await app.invoke({ out: [] }, CFG)) };
  }

  approve(request, { approver = 'alice', validFor = 100 } = {}) {
    return gate.approve(request, approver, this.clock() + validFor);
  }

  deny(request, approver = 'alice') {
    return gate.deny(request, approver, this.clock() + 100);
  }
}

const ASK = { requester: 'agent', approver: 'alice', expiresIn: 1000 };

/**
 * Plain LangGraph.js: the graph whose one node is `work(ledger)`, its checkpoints in `saver`
 * and its tool's ledger in a directory of its own, run to its first interrupt.
 */
async function plainStart(work, makeSaver) {
  const dir = tmp();
  const ledger = new Ledger(path.join(dir, 'tool.ledger'));
  const app = compile((_state) => work(ledger), makeSaver(dir));
  await app.invoke({ out: [] }, CFG);
  return { app, ledger };
}

for (const [saverName, makeSaver] of Object.entries(SAVERS)) {
  describe(`LangGraph.js with the ${saverName} checkpointer`, () => {
    // A node runs again from its start on resume: a commit made before a second interrupt is
    // made again.
    test('plain: a commit before a second interrupt runs again on resume', async () => {
      const { app, ledger } = await plainStart((ledger) => {
        const first = interrupt({ call: POST.tool });
        plainCommit(ledger, POST, first);
        const second = interrupt({ call: DELETE.tool });
        plainCommit(ledger, DELETE, second);
        return { out: ['both'] };
      }, makeSaver);
      await app.invoke(new Command({ resume: 'approve' }), CFG);
      await app.invoke(new Command({ resume: 'approve' }), CFG);
      // The node ran again from its start on the second resume: the post was published twice.
      assert.equal(ledger.commits('publish'), 2, STILL);
    });

    test('gate: a call recorded before a second interrupt is not made again', async () => {
      const k = new Kernel(tmp());
      const { app, request } = await k.start(makeSaver(tmp()), POST, DELETE);
      assert.equal(request.calls[0].call_id, 'call-1');
      let r = await app.invoke(new Command({ resume: k.approve(request) }), CFG);
      assert.equal(requestOf(r).calls[0].call_id, 'call-2');
      r = await app.invoke(new Command({ resume: k.approve(requestOf(r)) }), CFG);
      assert.deepEqual(r.out, ['publish done #1', 'delete done #2']);
      assert.deepEqual([k.ledger.commits('publish'), k.ledger.commits('delete')], [1, 1]);
      assertValidates(k.gate().log(), KEY);
    });

    // A resume whose interrupt id matches no pending interrupt.
    test('plain: a resume for no pending interrupt is taken as the answer', async () => {
      const { app, ledger } = await plainStart((ledger) => {
        const answer = interrupt({ call: POST.tool });
        if (answer) plainCommit(ledger, POST, answer);
        return { out: ['done'] };
      }, makeSaver);
      await app.invoke(new Command({ resume: { 'no-such-interrupt': 'approve' } }), CFG);
      // Nothing matched, nothing was refused: the map itself became the approval.
      assert.equal(ledger.commits('publish'), 1, STILL);
      assert.match(ledger.entries()[0].approval, /no-such-interrupt/, STILL);
    });

    test('gate: a decision for another call, or no decision, is refused', async () => {
      const k = new Kernel(tmp());
      const { app, request } = await k.start(makeSaver(tmp()), POST);
      const other = { ...request, calls: [{ ...request.calls[0], call_id: 'call-2' }] };
      let r = await app.invoke(new Command({ resume: k.approve(other) }), CFG);
      // Refused by the kernel, with its evidence; the graph asks again.
      assert.deepEqual(requestOf(r).refused, { rejection: 'approval_mismatch', field: 'call_id' });
      assert.match(requestOf(r).message, /call_id/);
      r = await app.invoke(new Command({ resume: { 'no-such-interrupt': 'approve' } }), CFG);
      assert.equal(requestOf(r).verdict, 'not_a_decision');
      assert.equal(k.ledger.commits(), 0);
      // The run still waits on its call; the right approval goes through, once.
      r = await app.invoke(new Command({ resume: k.approve(request) }), CFG);
      assert.deepEqual(r.out, ['publish done #1']);
      assert.equal(k.ledger.commits(), 1);
      assertValidates(k.gate().log(), KEY);
    });

    // A consumed resume value delivered again to a later interrupt.
    test('plain: an approval for one call answers the next interrupt', async () => {
      const { app, ledger } = await plainStart((ledger) => {
        for (const call of [POST, DELETE]) {
          if (interrupt({ call: call.tool }) === 'approve') plainCommit(ledger, call, 'approve');
        }
        return { out: ['done'] };
      }, makeSaver);
      const decisionAboutThePost = new Command({ resume: 'approve' });
      await app.invoke(decisionAboutThePost, CFG);
      await app.invoke(decisionAboutThePost, CFG); // delivered again: no one approved the delete
      assert.equal(ledger.commits('delete'), 1, STILL);
    });

    test('gate: an approval for one call cannot answer the next', async () => {
      const k = new Kernel(tmp());
      const { app, request } = await k.start(makeSaver(tmp()), POST, DELETE);
      const decisionAboutThePost = new Command({ resume: k.approve(request) });
      let r = await app.invoke(decisionAboutThePost, CFG);
      assert.equal(requestOf(r).calls[0].call_id, 'call-2');
      r = await app.invoke(decisionAboutThePost, CFG);
      // The post's approval, delivered to the delete's interrupt, is refused: it was spent.
      assert.equal(requestOf(r).calls[0].call_id, 'call-2');
      assert.equal(requestOf(r).refused.rejection, 'already_applied');
      assert.deepEqual([k.ledger.commits('publish'), k.ledger.commits('delete')], [1, 0]);
    });

    // The same interrupt resumed again from an old config, with another value.
    test('plain: resuming again from an old config commits again', async () => {
      const { app, ledger } = await plainStart((ledger) => {
        const answer = interrupt({ call: POST.tool });
        plainCommit(ledger, POST, answer);
        return { out: [String(answer)] };
      }, makeSaver);
      const old = (await app.getState(CFG)).config;
      await app.invoke(new Command({ resume: 'approve by alice' }), CFG);
      await app.invoke(new Command({ resume: 'approve by mallory' }), old);
      assert.equal(ledger.commits('publish'), 2, STILL);
    });

    test('gate: resuming again from an old config does not commit again', async () => {
      const k = new Kernel(tmp());
      const { app, request } = await k.start(makeSaver(tmp()), POST);
      const old = (await app.getState(CFG)).config;
      await app.invoke(new Command({ resume: k.approve(request) }), CFG);
      const r = await app.invoke(new Command({ resume: k.approve(request, { approver: 'mallory' }) }),
        old);
      // The call's result is recorded in the run: the node returns it, the tool is not called.
      assert.deepEqual(r.out, ['publish done #1']);
      assert.equal(k.ledger.commits(), 1);
      // The other decision, fed to the core directly, is refused with its evidence.
      const fed = await k.gate().driver.answer(request, k.approve(request, { approver: 'mallory' }));
      assert.equal(fed.verdict.verdict, 'already_resumed');
      assertValidates(k.gate().log(), KEY);
    });

    // The approval's other bindings: requester, expiry, arguments.
    test('gate: self-approval, an expired approval and other arguments are refused', async () => {
      const k = new Kernel(tmp());
      const { app, request } = await k.start(makeSaver(tmp()), POST);
      let r;
      const otherArgs = { ...request,
        calls: [{ ...request.calls[0], args_digest: rk.digest({ post: 43 }) }] };
      for (const [decision, kind] of [
        [k.approve(request, { approver: 'agent' }), 'self_approval'],
        [k.approve(request, { validFor: -1 }), 'approval_expired'],
        [k.approve(otherArgs), 'approval_mismatch'],
      ]) {
        r = await app.invoke(new Command({ resume: decision }), CFG);
        assert.equal(requestOf(r).refused.rejection, kind, requestOf(r).message);
      }
      assert.equal(k.ledger.commits(), 0);
      r = await app.invoke(new Command({ resume: k.approve(request) }), CFG);
      assert.deepEqual(r.out, ['publish done #1']);
      assert.equal(k.ledger.commits(), 1);
    });

    test('gate: a second call of one run asked for while it waits is refused by name', async () => {
      const k = new Kernel(tmp());
      const app = new StateGraph(State)
        .addNode('post', async (_state) => ({ out: [await k.gate().call(POST, ASK)] }))
        .addNode('delete', async (_state) => ({ out: [await k.gate().call(DELETE, ASK)] }))
        .addEdge(START, 'post')
        .addEdge(START, 'delete')
        .addEdge('post', END)
        .addEdge('delete', END)
        .compile({ checkpointer: makeSaver(tmp()) });
      // One step, two interrupts: the core decides one call per suspension. Whichever
      // branch came first suspended the run; the other is refused by name.
      await assert.rejects(app.invoke({ out: [] }, CFG), (e) => e instanceof gate.Waiting &&
        /waits on pending_approval by alice/.test(e.message));
      assert.equal(k.gate().stored().held.run.phase.reason.reason, 'pending_approval');
      assert.equal(k.ledger.commits(), 0);
    });

    test('gate: a denial ends the run and the call is never made', async () => {
      const k = new Kernel(tmp());
      const { app, request } = await k.start(makeSaver(tmp()), POST);
      await assert.rejects(app.invoke(new Command({ resume: k.deny(request) }), CFG),
        (e) => e instanceof gate.Denied);
      assert.equal(k.gate().stored().held.run.phase.phase, 'failed');
      assert.equal(k.ledger.commits(), 0);
      assertValidates(k.gate().log(), KEY);
    });
  });
}
