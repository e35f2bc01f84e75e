'use strict';
// Inside the OpenAI Agents JS SDK (offline: a scripted Model answers, nothing leaves the
// machine): `needsApproval` tools gated by the kernel. The SDK's RunState is stored in the
// same write as the kernel's run; the decision goes through the kernel first and may arrive
// in a new process; a decision the kernel refuses changes nothing. The plain-SDK tests show
// what the SDK alone lets through (each fails, and says so, the day the SDK stops it).

const assert = require('node:assert/strict');
const path = require('node:path');
const { test } = require('node:test');

const { Agent, run } = require('@openai/agents');

const rk = require('..');
const agents = require('../agents');
const gate = require('../gate');
const { DeskScene, KEY, publishTool } = require('./desk');
const { assertValidates, said, scratch, spawnWorker, storedIn } = require('./helpers');

/** A stored turn as the tests read it: the kernel's run, its checkpoint, the SDK's state. */
const turnOf = (t) => ({ run: t.held.run, checkpoint: t.held.checkpoint, state: t.extra });
const { Ledger } = require('./ledger');
const { ScriptedModel, assistantMessage, functionCall } = require('./scripted-model');

const WORKER = path.join(__dirname, 'agents-worker.js');
const STILL = 'the Agents SDK no longer shows this: the kernel test beside it guards nothing here';

const { tmp, closing } = scratch('resumable-agents-');

function spawn(mode, step, dir, { approver = 'alice', crash = '' } = {}) {
  return spawnWorker(WORKER, [mode, step, dir, approver], crash);
}

function worker(step, dir, approver = 'alice', mode = 'kernel') {
  return said(spawn(mode, step, dir, { approver }));
}

/**
 * A new directory whose turn was suspended and then approved in a process killed with SIGKILL
 * at `crash`, the tool's ledger then holding `committed` commits: the directory and the ledger.
 */
function killedApproving(mode, crash, committed) {
  const dir = tmp();
  assert.deepEqual(worker('start', dir, 'alice', mode), { suspended: 'call_42' });
  const killed = spawn(mode, 'approve', dir, { crash });
  assert.equal(killed.signal, 'SIGKILL', killed.stderr);
  const ledger = new Ledger(path.join(dir, 'tool.ledger'));
  assert.equal(ledger.commits(), committed);
  return { dir, ledger };
}

const turnIn = (dir) => turnOf(storedIn(path.join(dir, 'turns.db'), agents.SqliteTurnStore));
const kernelRunIn = (dir) => turnIn(dir).run;

/** A publish tool that commits straight to the ledger: the SDK's approval is all it has. */
function plainPublish(ledger) {
  return publishTool(async ({ post }) => {
    ledger.append({ tool: 'publish', post });
    return 'published';
  });
}

/** The desk's scene, one call a turn. */
class Scene extends DeskScene {
  constructor(dir) {
    super(dir, closing);
  }

  async turn(post, callId) {
    const result = await run(this.agent([functionCall('publish', { post }, callId)]), 'publish');
    return this.desk.suspend(result, { requester: 'writer', approver: 'alice', expiresIn: 1000 });
  }

  async decide(request, { approver = 'alice', validFor = 100, deny = false } = {}) {
    const now = this.clock();
    const callId = request.calls[0].call_id;
    const decide = deny ? agents.denyCall : agents.approveCall;
    const decision = agents.decisions(request, [decide(request, callId, approver, now + validFor)]);
    const agent = this.agent([assistantMessage(deny ? 'not published' : 'done')]);
    const state = await this.desk.decide(agent, decision);
    return (await run(agent, state)).finalOutput;
  }
}

const refusedAs = (kind) => (e) => e instanceof gate.Refused && e.rejection.verdict === kind;

test('kernel: the decision arrives in a new process and is honoured once', () => {
  const dir = tmp();
  assert.deepEqual(worker('start', dir), { suspended: 'call_42' });
  // The kernel's run and the SDK's state were stored in one write, in one row.
  const turn = turnIn(dir);
  // A turn of one call is a batch of one (spec 5.5).
  assert.equal(turn.run.phase.reason.reason, 'pending_batch');
  assert.equal(JSON.parse(turn.state).currentStep.type, 'next_step_interruption');
  assert.match(turn.state, /call_42/);
  // Each decision in a new process, after the first one ended.
  assert.deepEqual(worker('approve', dir, 'writer'), { refused: 'self_approval' });
  assert.equal(new Ledger(path.join(dir, 'tool.ledger')).commits(), 0);
  assert.deepEqual(worker('approve', dir), { final: 'done' });
  assert.deepEqual(worker('approve', dir), { refused: 'already_resumed' });
  assert.equal(new Ledger(path.join(dir, 'tool.ledger')).commits(), 1);
});

// A crash between the tool's commit and anything written after it.
test('plain: a crash after the tool committed repeats the commit on restart', () => {
  const { dir, ledger } = killedApproving('plain', 'after', 1);
  // The stored state holds the approval and nothing of the commit: run again, it publishes
  // again.
  assert.deepEqual(worker('restart', dir, 'alice', 'plain'), { final: 'done' });
  assert.equal(ledger.commits(), 2, STILL);
});

test('kernel: a crash after the tool committed is reconciled, not repeated', () => {
  const { dir, ledger } = killedApproving('kernel', 'after', 1);
  // The new process runs the stored state; the tool's execute finds the dispatch in flight,
  // and the kernel asks the tool under the same key and records the commit it finds.
  assert.deepEqual(worker('restart', dir), { final: 'done' });
  assert.equal(ledger.commits(), 1);
  const kernelRun = kernelRunIn(dir);
  assert.equal(kernelRun.last_call.call_id, 'call_42');
  assert.equal(kernelRun.last_call.result, rk.digest(ledger.entries()[0].result));
  // Reconciled, not dispatched again (a deduping tool would hide a blind retry).
  assert.deepEqual(kernelRun.last_resume.decision, {
    decision: 'reconcile',
    answer: 'committed',
    result: rk.digest(ledger.entries()[0].result),
  });
});

test('kernel: a crash between its commit and the tool retries under the same key', () => {
  const { dir, ledger } = killedApproving('kernel', 'before', 0);
  // The tool answers that nothing was committed under the key; the kernel's contract for a
  // deduping tool allows a retry under the same key: committed once.
  assert.deepEqual(worker('restart', dir), { final: 'done' });
  assert.equal(ledger.commits(), 1);
  assert.deepEqual(kernelRunIn(dir).last_resume.decision, {
    decision: 'reconcile',
    answer: 'not_committed',
  });
});

test('plain: anyone approves at any time, even the requester', async () => {
  const ledger = new Ledger(path.join(tmp(), 'tool.ledger'));
  const model = new ScriptedModel([
    [functionCall('publish', { post: 42 }, 'c1')],
    [assistantMessage('done')],
  ]);
  const agent = new Agent({ name: 'writer', model, tools: [plainPublish(ledger)] });
  const result = await run(agent, 'publish');
  // The approval names no approver, no requester, no expiry, no revision: the requester's own
  // approval, given whenever, runs the tool.
  result.state.approve(result.interruptions[0]);
  assert.equal((await run(agent, result.state)).finalOutput, 'done');
  assert.equal(ledger.commits(), 1, STILL);
});

test('kernel: the requester, an expired approval and other arguments are refused', async () => {
  const s = new Scene(tmp());
  const request = await s.turn(42, 'call_42');
  const stored = s.desk.turn().state;
  const [proposal] = request.calls;
  const other = { ...proposal, args_digest: rk.digest({ post: 666 }) };
  const otherArgs = { ...request, calls: [other] };
  await assert.rejects(s.decide(request, { approver: 'writer' }), refusedAs('self_approval'));
  await assert.rejects(s.decide(request, { validFor: -1 }), refusedAs('approval_expired'));
  await assert.rejects(s.decide(otherArgs), refusedAs('approval_mismatch'));
  // Nothing changed: no commit, the run still suspended, the SDK's state as stored.
  assert.equal(s.ledger.commits(), 0);
  assert.equal(s.desk.turn().run.phase.phase, 'suspended');
  assert.equal(s.desk.turn().state, stored);
  assert.equal(await s.decide(request), 'done');
  assert.equal(s.ledger.commits(), 1);
});

test('plain: an approval given once covers later calls with other arguments', async () => {
  const ledger = new Ledger(path.join(tmp(), 'tool.ledger'));
  const model = new ScriptedModel([
    [functionCall('publish', { post: 42 }, 'c1')],
    [functionCall('publish', { post: 666 }, 'c2')],
    [assistantMessage('done')],
  ]);
  const agent = new Agent({ name: 'writer', model, tools: [plainPublish(ledger)] });
  const result = await run(agent, 'publish');
  result.state.approve(result.interruptions[0], { alwaysApprove: true });
  assert.equal((await run(agent, result.state)).finalOutput, 'done');
  // Post 666 was published on the approval given for post 42.
  assert.deepEqual(ledger.entries().map((e) => e.post), [42, 666], STILL);
});

test('kernel: an approval replayed for another call is refused', async () => {
  const s = new Scene(tmp());
  const first = await s.turn(42, 'call_42');
  assert.equal(await s.decide(first), 'done');
  const second = await s.turn(666, 'call_666');
  // The approval given for post 42, replayed: bound to the first batch's checkpoint, older
  // than the batch now open.
  await assert.rejects(s.decide(first), refusedAs('stale_revision'));
  assert.deepEqual(s.ledger.entries().map((e) => e.args.post), [42]);
  assert.equal(await s.decide(second), 'done');
  assert.deepEqual(s.ledger.entries().map((e) => e.args.post), [42, 666]);
});

test('plain: a call id reused with other arguments runs again', async () => {
  const ledger = new Ledger(path.join(tmp(), 'tool.ledger'));
  for (const post of [42, 666]) {
    const model = new ScriptedModel([
      [functionCall('publish', { post }, 'call_42')],
      [assistantMessage('done')],
    ]);
    const agent = new Agent({ name: 'writer', model, tools: [plainPublish(ledger)] });
    const result = await run(agent, 'publish');
    result.state.approve(result.interruptions[0]);
    await run(agent, result.state);
  }
  // Each new run knows nothing of the call id's past: both were published.
  assert.deepEqual(ledger.entries().map((e) => e.post), [42, 666], STILL);
});

test('kernel: a call id reused with other arguments is refused', async () => {
  const s = new Scene(tmp());
  assert.equal(await s.decide(await s.turn(42, 'call_42')), 'done');
  // A later turn whose model reuses the call id with other arguments: the SDK's new run does
  // not know the id, the core's book does: another call under a recorded id is refused by
  // name, never answered with the first call's receipt.
  await assert.rejects(s.turn(666, 'call_42'), (e) => e instanceof agents.Changed &&
    e.recorded.args === rk.digest({ post: 42 }) && e.proposed.args === rk.digest({ post: 666 }));
  assert.equal(s.ledger.commits(), 1);
  assertValidates(s.desk.log(), KEY);
});

test('kernel: a denial goes through the kernel first, then the SDK rejects the call', async () => {
  const s = new Scene(tmp());
  const request = await s.turn(42, 'call_42');
  // The requester cannot deny on the approver's behalf either.
  await assert.rejects(s.decide(request, { approver: 'writer', deny: true }),
    refusedAs('self_approval'));
  assert.equal(await s.decide(request, { deny: true }), 'not published');
  assert.equal(s.ledger.commits(), 0);
  const { run: kernelRun, state } = s.desk.turn();
  assert.deepEqual([kernelRun.phase.phase, kernelRun.phase.cause], ['failed', 'denied']);
  assert.match(state, /denied by alice/);
  // A later approval of the same suspension is refused: another decision resumed it.
  await assert.rejects(s.decide(request), refusedAs('already_resumed'));
  assert.equal(s.ledger.commits(), 0);
});
