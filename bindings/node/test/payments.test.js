'use strict';
// A new user's payments app in LangGraph.js (test/payments.js): `send_payment(to, amount)`
// behind an approval, then "notify the payee?" in the same node. Each claim is a pair: the app
// written with LangGraph alone shows the framework's bug (the test asserts the bad outcome, so
// it fails the day LangGraph stops it), and the app through the gate stops it. Every gated
// flow's audit log passes `resumable validate --key-file K --anchor A`.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const { afterEach, describe, test } = require('node:test');

const { Command } = require('@langchain/langgraph');

const gate = require('../gate');
const { assertValidates, scratch } = require('./helpers');
const { KEY, PaymentsApp, cfg, pausedOn, plainApp } = require('./payments');

const STILL = 'LangGraph.js no longer shows this: the gated test beside it guards nothing here';
const { tmp } = scratch('resumable-payments-');
const apps = [];
afterEach(() => {
  while (apps.length > 0) apps.pop().close();
});

function app(options) {
  const a = new PaymentsApp(tmp(), options);
  apps.push(a);
  return a;
}

const PAY_BOB = { to: 'bob', amount: 50, callId: 'call_1' };

/** Starts a payment and returns the approval request it paused on. */
async function start(a, thread = 't-1', payment = PAY_BOB) {
  const request = pausedOn(await a.graph.invoke(payment, cfg(thread)));
  assert.ok(request && request.calls, 'the graph asks for an approval');
  return request;
}

/** A gated app on `saver` whose payment to bob, started at t1, waits on its approval. */
async function awaitingApproval(saver) {
  const a = app({ saver });
  a.ticks = 1;
  return { a, request: await start(a) };
}

/** Asserts that `a` paid `n` times and that its audit log validates. */
function assertPaid(a, n) {
  assert.equal(a.ledger.commits(), n);
  assertValidates(a.gate('t-1').log(), KEY);
}

/**
 * Feeds alice's approval of `request` to `a`, which pays and asks its second question, and
 * answers it with `answer`: what the graph ends with.
 */
async function approvedAndAnswered(a, request, answer) {
  const asked = await resume(a, gate.approve(request, 'alice', 90));
  assert.deepEqual(pausedOn(asked), { question: 'notify the payee?' });
  const r = await resume(a, answer);
  assert.equal(r.receipt, 'receipt-1');
  return r;
}

const resume = (a, value, thread = 't-1') => a.graph.invoke(new Command({ resume: value }), cfg(thread));

for (const saver of ['memory', 'sqlite']) {
  describe(`payments app, ${saver} checkpointer`, () => {
    test('plain: the state changed before the resume pays the new amount', async () => {
      const { graph, ledger } = plainApp(tmp());
      await graph.invoke(PAY_BOB, cfg('t-1'));
      await graph.updateState(cfg('t-1'), { amount: 999 });
      await graph.invoke(new Command({ resume: { approve: true } }), cfg('t-1'));
      // The approver saw 50; 999 was paid.
      assert.deepEqual(ledger.entries().map((e) => e.amount), [999], STILL);
    });

    test('gate: the approver sees the arguments beside their digest; that amount is paid', async () => {
      const { a, request } = await awaitingApproval(saver);
      assert.equal(request.calls[0].args, '{"amount":50,"to":"bob"}');
      assert.match(request.calls[0].args_digest, /^[0-9a-f]{64}$/);
      a.ticks = 2;
      const asked = await resume(a, gate.approve(request, 'alice', 90));
      assert.deepEqual(pausedOn(asked), { question: 'notify the payee?' });
      assert.deepEqual(a.ledger.entries().map((e) => [e.to, e.amount]), [['bob', 50]]);
      assertValidates(a.gate('t-1').log(), KEY);
    });

    test('gate: the state changed to 999 before the resume is refused, nothing paid', async () => {
      const { a, request } = await awaitingApproval(saver);
      await a.graph.updateState(cfg('t-1'), { amount: 999 });
      a.ticks = 2;
      const r = await resume(a, gate.approve(request, 'alice', 90));
      assert.equal(r.outcome, 'changed');
      assert.equal(a.ledger.commits(), 0);
      // The run still waits on the approval of 50: the approved arguments are the ones kept.
      const again = a.gate('t-1').driver.plan([a.gate('t-1').proposal(
        { callId: 'call_1', tool: 'send_payment', args: { to: 'bob', amount: 50 },
          key: 'pay:call_1' }, { requester: 'agent', approver: 'alice', expiresIn: 100 })]);
      assert.equal(again.todo, 'ask');
      assertValidates(a.gate('t-1').log(), KEY);
    });

    test('plain: an approval delivered long after it was given is taken', async () => {
      const { graph, ledger } = plainApp(tmp());
      await graph.invoke(PAY_BOB, cfg('t-1'));
      // Written at t=2 for a request valid until t=101, delivered at t=5000: LangGraph has no
      // clock of its own, the value is the answer.
      await graph.invoke(new Command({ resume: { approve: true, at: 2 } }), cfg('t-1'));
      assert.equal(ledger.commits(), 1, STILL);
    });

    test('gate: a late delivery is refused at the gate\'s clock and the run expires', async () => {
      const { a, request } = await awaitingApproval(saver);
      // The approval is made in time (t=2, valid until t=90), delivered at t=5000.
      const approval = gate.approve(request, 'alice', 90);
      a.ticks = 5000;
      const r = await resume(a, { ...approval, at: 2 });
      // Expire is fed: the graph ends with a clear result instead of asking again.
      assert.equal(r.outcome, 'ended: expired');
      assert.equal(pausedOn(r), null);
      assert.equal(a.ledger.commits(), 0);
      const { held } = a.gate('t-1').stored();
      assert.equal(held.run.phase.phase, 'failed');
      assertValidates(a.gate('t-1').log(), KEY);
    });

    test('gate: an approval delivered late in the same wait is refused as expired', async () => {
      const { a, request } = await awaitingApproval(saver);
      // The approver's own expiry passed (t=10), the request's not (t=101): refused, asked again.
      const approval = gate.approve(request, 'alice', 10);
      a.ticks = 20;
      const r = await resume(a, approval);
      assert.equal(pausedOn(r).refused.rejection, 'approval_expired');
      assertPaid(a, 0);
    });

    test('gate: a new payment under an old call id never gets the old receipt', async () => {
      const { a, request } = await awaitingApproval(saver);
      a.ticks = 2;
      await resume(a, gate.approve(request, 'alice', 90));
      const done = await resume(a, 'no');
      assert.equal(done.receipt, 'receipt-1');
      // A new payment on the same thread, to carol, under the same call id.
      a.ticks = 3;
      const r = await a.graph.invoke({ to: 'carol', amount: 70, callId: 'call_1', receipt: null },
        cfg('t-1'));
      assert.equal(r.outcome, 'changed');
      assert.equal(r.receipt, null);
      assert.deepEqual(a.ledger.entries().map((e) => e.to), ['bob']);
      // Under its own call id it is asked for and paid after its own approval.
      const next = await start(a, 't-1', { to: 'carol', amount: 70, callId: 'call_2' });
      assert.equal(next.calls[0].args, '{"amount":70,"to":"carol"}');
      a.ticks = 4;
      await resume(a, gate.approve(next, 'alice', 90));
      assert.deepEqual(a.ledger.entries().map((e) => e.to), ['bob', 'carol']);
      assertValidates(a.gate('t-1').log(), KEY);
    });

    test('plain: the approval answers the second question too', async () => {
      const { graph } = plainApp(tmp());
      await graph.invoke(PAY_BOB, cfg('t-1'));
      const approval = { approve: true };
      await graph.invoke(new Command({ resume: approval }), cfg('t-1'));
      const r = await graph.invoke(new Command({ resume: approval }), cfg('t-1'));
      // Delivered again, the approval object became the answer to "notify the payee?".
      assert.deepEqual(r.notify, approval, STILL);
    });

    test('gate: the second question gets its own answer, after refusals too', async () => {
      const { a, request } = await awaitingApproval(saver);
      a.ticks = 2;
      // A self-approval (refused, counted), not a decision (refused, not counted), then the
      // approval: the node's later interrupt() still gets its own answer.
      let r = await resume(a, gate.approve(request, 'agent', 90));
      assert.equal(pausedOn(r).refused.rejection, 'self_approval');
      r = await resume(a, { not: 'a decision' });
      assert.equal(pausedOn(r).verdict, 'not_a_decision');
      assert.match(pausedOn(r).message, /not a decision/);
      r = await approvedAndAnswered(a, request, 'yes, notify bob');
      assert.equal(r.notify, 'yes, notify bob');
      assertPaid(a, 1);
    });

    test('gate: the facts are observed: a payee account that moved refuses the approval', async () => {
      const { a, request } = await awaitingApproval(saver);
      fs.writeFileSync(a.versionFile, '2'); // the payee's account changed meanwhile
      a.ticks = 2;
      const r = await resume(a, gate.approve(request, 'alice', 90));
      assert.equal(pausedOn(r).refused.rejection, 'resource_changed');
      assertPaid(a, 0);
    });

    test('gate: a denial ends the graph with a clear result, nothing paid', async () => {
      const { a, request } = await awaitingApproval(saver);
      a.ticks = 2;
      const r = await resume(a, gate.deny(request, 'alice', 90));
      assert.equal(r.outcome, 'ended: denied');
      // Asked again (a node run again), the run stays ended: nothing is asked.
      const again = await a.graph.invoke(PAY_BOB, cfg('t-1'));
      assert.equal(again.outcome, 'ended: denied');
      assertPaid(a, 0);
    });

    test('gate: a resume from an old config pays nothing again', async () => {
      const { a, request } = await awaitingApproval(saver);
      const old = (await a.graph.getState(cfg('t-1'))).config;
      a.ticks = 2;
      await resume(a, gate.approve(request, 'alice', 90));
      assert.equal((await resume(a, 'no')).receipt, 'receipt-1');
      // The graph went on; the approval is sent again, by another approver, from the old config.
      const r = await a.graph.invoke(new Command({ resume: gate.approve(request, 'mallory', 90) }),
        old);
      assert.equal(r.receipt, 'receipt-1');
      assertPaid(a, 1);
    });

    test('gate: the same payment asked again in a new run of the node asks its second question', async () => {
      const { a, request } = await awaitingApproval(saver);
      a.ticks = 2;
      // Two answers fed and counted: a self-approval (refused), then the approval.
      await resume(a, gate.approve(request, 'agent', 90));
      let r = await approvedAndAnswered(a, request, 'yes');
      // The same payment again on the thread: a new run of the node, which LangGraph hands
      // none of the two answers. The gate skips only what LangGraph holds, so the node's next
      // interrupt() is its second question, not a prompt in the place of an answer fed.
      r = await a.graph.invoke(PAY_BOB, cfg('t-1'));
      assert.deepEqual(pausedOn(r), { question: 'notify the payee?' });
      r = await resume(a, 'no');
      assert.equal(r.notify, 'no');
      assert.equal(r.receipt, 'receipt-1');
      assertPaid(a, 1);
    });
  });
}

test('gate: a tool that neither dedupes nor fences is never retried blindly: a person decides', async () => {
  const a = app({ saver: 'memory' });
  let lost = true;
  const service = a.service;
  a.service = {
    query: (call) => service.query(call),
    async commit(call) {
      if (lost) {
        lost = false;
        throw new Error('the response was lost');
      }
      return service.commit(call);
    },
  };
  const contract = { dedupes: false, query_fences: false, max_attempts: 3 };
  const pay = { callId: 'call_1', tool: 'send_payment', args: { to: 'bob', amount: 50 },
    key: 'pay:call_1', contract };
  a.ticks = 1;
  const g = () => a.gate('t-1');
  const ask = { requester: 'agent', approver: 'alice', expiresIn: 100 };
  const interrupted = async () => {
    try {
      await g().call(pay, ask);
    } catch (e) {
      return e;
    }
    return null;
  };
  // Outside a graph: the gate's interrupt is LangGraph's, which throws outside a graph; take
  // the request from the core instead, and answer it.
  const todo = await g().driver.drive([g().proposal(pay, ask)]);
  assert.equal(todo.todo, 'ask');
  a.ticks = 2;
  await assert.rejects(g().driver.answer(todo.request, gate.approve(todo.request, 'alice', 90)),
    /the response was lost/);
  // Run again: the outcome is unknown, the query says "not committed", and with neither dedupe
  // nor fencing the core hands the run to a person instead of calling the tool again.
  a.ticks = 3;
  const e = await interrupted();
  assert.ok(e instanceof gate.Waiting, String(e));
  assert.equal(e.todo.reason, 'manual_intervention');
  assert.equal(a.ledger.commits(), 0);
  assertValidates(g().log(), KEY);
});
