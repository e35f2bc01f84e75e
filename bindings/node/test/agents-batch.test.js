'use strict';
// Inside the OpenAI Agents JS SDK (offline: a scripted Model answers, nothing leaves the
// machine): a model turn that asks for two `needsApproval` calls at once (parallel tool calls)
// is one kernel batch (spec 5.5, frameworks.md). Decisions come one at a time, in new
// processes, or together; the SDK runs the approved tools only once every call is decided; a
// rejection goes back to the model and the run goes on; the refusals a batch adds are shown,
// each leaving the kernel's run, the SDK's stored state and the tool's ledger as they were.

const assert = require('node:assert/strict');
const path = require('node:path');
const { test } = require('node:test');

const { run } = require('@openai/agents');

const rk = require('..');
const agents = require('../agents');
const { DeskScene, KEY } = require('./desk');
const { assertValidates, said, scratch, spawnWorker, storedIn } = require('./helpers');

/** A stored turn as the tests read it: the kernel's run, its checkpoint, the SDK's state. */
const turnOf = (t) => ({ run: t.held.run, checkpoint: t.held.checkpoint, state: t.extra });
const { Ledger } = require('./ledger');
const { assistantMessage, functionCall } = require('./scripted-model');

const WORKER = path.join(__dirname, 'agents-batch-worker.js');

const { tmp, closing } = scratch('resumable-agents-batch-');

function spawn(dir, args, crash = '') {
  return spawnWorker(WORKER, [args[0], dir, ...args.slice(1)], crash);
}

function worker(dir, ...args) {
  return said(spawn(dir, args));
}

/** The run's audit log in DIR/turns.db. */
function logOf(dir) {
  const Database = require('better-sqlite3');
  const db = new Database(path.join(dir, 'turns.db'));
  try {
    return new agents.SqliteDriverStore(db).log('run-1');
  } finally {
    db.close();
  }
}

const stored = (dir) => turnOf(storedIn(path.join(dir, 'turns.db'), agents.SqliteTurnStore));

/** What a refusal leaves as it was: the kernel's run, its checkpoint, the SDK's state. */
const kept = (t) => ({ run: t.run, checkpoint: t.checkpoint, state: t.state });

const states = (run_) => run_.batch.slots.map((s) => [s.call.call.call_id, s.state]);
const refusedAs = (kind) => (e) => e instanceof agents.Refused && e.rejection.verdict === kind;

/** What each call answered the model, from the run's history as the model was sent it. */
function toolOutputs(result) {
  const out = {};
  for (const item of result.history) {
    if (item.type === 'function_call_result') {
      out[item.callId] = typeof item.output === 'string' ? item.output : item.output?.text;
    }
  }
  return out;
}

/** The desk's scene, the calls of a turn one batch. */
class Scene extends DeskScene {
  constructor(dir, options) {
    super(dir, closing, options);
  }

  /** One model turn asking for each post at once; suspended as one batch. */
  async turn(posts) {
    const calls = posts.map(([post, callId]) => functionCall('publish', { post }, callId));
    const result = await run(this.agent(calls), 'publish');
    return this.desk.suspend(result, { requester: 'writer', approver: 'alice', expiresIn: 1000 });
  }

  /** Feeds decisions made with `make(request, callId, approver, expiresAt)` pairs. */
  async decide(request, pairs, { answer = 'done' } = {}) {
    const now = this.clock();
    const list = pairs.map(([make, callId, ...rest]) =>
      make(request, callId, 'alice', now + 100, ...rest),
    );
    const agent = this.agent([assistantMessage(answer)]);
    const state = await this.desk.decide(agent, agents.decisions(request, list));
    if (state === null) return null;
    const result = await run(agent, state);
    return { final: result.finalOutput, result };
  }

  posts() {
    return this.ledger.entries().map((e) => e.args.post);
  }
}

test('kernel: two calls of one turn are one batch, decided in new processes, run once', () => {
  const dir = tmp();
  assert.deepEqual(worker(dir, 'start'), { suspended: ['call_1', 'call_2'] });
  // One suspension, one checkpoint for both calls (BAT-1), stored with the SDK's state.
  const first = stored(dir);
  assert.equal(first.run.revision, 1);
  assert.equal(first.run.phase.reason.reason, 'pending_batch');
  assert.equal(first.checkpoint.revision, 1);
  assert.equal(first.run.batch.checkpoint, first.checkpoint.digest);
  assert.match(first.checkpoint.batch, /^[0-9a-f]{64}$/);
  assert.deepEqual(states(first.run), [['call_1', 'awaiting'], ['call_2', 'awaiting']]);
  assert.match(first.state, /call_1/);
  assert.match(first.state, /call_2/);
  // The requester cannot approve its own call; nothing changes.
  assert.deepEqual(worker(dir, 'decide', 'call_1', 'approve', 'writer'), {
    refused: 'self_approval',
  });
  assert.deepEqual(stored(dir), first);
  // One decision: the batch waits for the other, and no tool ran.
  assert.deepEqual(worker(dir, 'decide', 'call_1', 'approve'), { awaiting: ['call_2'] });
  const ledger = new Ledger(path.join(dir, 'tool.ledger'));
  assert.equal(ledger.commits(), 0);
  // The SDK's stored state cannot be run before every call is decided.
  assert.match(worker(dir, 'restart').error, /the batch still awaits decisions on call_2$/);
  assert.equal(ledger.commits(), 0);
  // The second decision, in a third process: a rejection, so the run goes on with call_1
  // alone; the model is told call_2 was rejected.
  assert.deepEqual(worker(dir, 'decide', 'call_2', 'reject'), { final: 'done' });
  assert.deepEqual(ledger.entries().map((e) => e.args.post), [1]);
  const last = stored(dir);
  assert.deepEqual(
    states(last.run),
    [['call_1', 'committed'], ['call_2', 'rejected']],
  );
  const slot2 = last.run.batch.slots[1];
  assert.equal(slot2.reason, rk.digest('alice said no'));
  assert.equal(last.run.batch.checkpoint, first.run.batch.checkpoint);
  assert.match(last.state, /alice said no/);
  // A second decision for a decided call: the same one is a duplicate, another a conflict.
  assert.deepEqual(worker(dir, 'decide', 'call_1', 'approve'), { refused: 'already_applied' });
  assert.deepEqual(worker(dir, 'decide', 'call_2', 'approve'), { refused: 'already_resumed' });
  assert.equal(ledger.commits(), 1);
});

test('kernel: decisions given together resume the batch at once, each tool once', async () => {
  const s = new Scene(tmp());
  const request = await s.turn([[1, 'c1'], [2, 'c2']]);
  const out = await s.decide(request, [
    [agents.approveCall, 'c2'],
    [agents.approveCall, 'c1'],
  ]);
  assert.equal(out.final, 'done');
  assert.deepEqual(s.posts().sort(), [1, 2]);
  const { run: kernelRun } = s.desk.turn();
  assert.deepEqual(states(kernelRun), [['c1', 'committed'], ['c2', 'committed']]);
  // One resume decided both: the batch left its suspension at the revision after it opened.
  assert.equal(kernelRun.batch.closed, kernelRun.batch.opened + 1);
  assert.equal(kernelRun.phase.phase, 'running');
});

test('kernel: a rejection is handed to the model with its message and the run goes on', async () => {
  const s = new Scene(tmp());
  const request = await s.turn([[1, 'c1'], [2, 'c2']]);
  assert.equal(await s.decide(request, [[agents.rejectCall, 'c1', 'not this one']]), null);
  const out = await s.decide(request, [[agents.approveCall, 'c2']]);
  assert.equal(out.final, 'done');
  assert.deepEqual(s.posts(), [2]);
  const outputs = toolOutputs(out.result);
  assert.equal(outputs.c1, 'not this one');
  assert.equal(outputs.c2, 'publish done #1');
  assert.equal(s.desk.turn().run.phase.phase, 'running');
});

test('kernel: a denial fails the run and no call of the batch runs, approved or not', async () => {
  const s = new Scene(tmp());
  const request = await s.turn([[1, 'c1'], [2, 'c2']]);
  assert.equal(await s.decide(request, [[agents.approveCall, 'c1']]), null);
  const out = await s.decide(request, [[agents.denyCall, 'c2']], { answer: 'stopped' });
  assert.equal(out.final, 'stopped');
  assert.equal(s.ledger.commits(), 0);
  const { run: kernelRun } = s.desk.turn();
  assert.deepEqual([kernelRun.phase.phase, kernelRun.phase.cause], ['failed', 'denied']);
  assert.equal(kernelRun.phase.call_id, 'c2');
  const outputs = toolOutputs(out.result);
  assert.deepEqual([outputs.c1, outputs.c2], ['denied by alice', 'denied by alice']);
});

test('kernel: a run whose policy leaves out deny refuses a denial by name', async () => {
  const s = new Scene(tmp(), { allowed: ['approve', 'edit', 'reject'] });
  const request = await s.turn([[1, 'c1'], [2, 'c2']]);
  const stored_ = kept(s.desk.turn());
  await assert.rejects(
    s.decide(request, [[agents.denyCall, 'c1']]),
    refusedAs('decision_not_allowed'),
  );
  assert.deepEqual(kept(s.desk.turn()), stored_);
  // The refusal itself is in the audit log, which validates.
  assertValidates(s.desk.log(), KEY);
});

test('kernel: the refusals of a batch change nothing', async () => {
  const s = new Scene(tmp());
  const first = await s.turn([[1, 'c1'], [2, 'c2']]);
  const before = kept(s.desk.turn());
  // An approval replayed for other arguments (the call's id, another post).
  const [p1, p2] = first.calls;
  const other = { ...p1, args_digest: rk.digest({ post: 666 }) };
  const forged = { ...first, calls: [other, p2] };
  await assert.rejects(
    s.decide(forged, [[agents.approveCall, 'c1']]),
    refusedAs('approval_mismatch'),
  );
  // Two decisions for one call in one input.
  await assert.rejects(
    s.decide(first, [[agents.approveCall, 'c1'], [agents.rejectCall, 'c1', 'no']]),
    refusedAs('duplicate_decision'),
  );
  // The SDK has no edit: refused by name before it reaches the kernel.
  const now = s.clock();
  const approval = agents.approveCall(first, 'c1', 'alice', now + 100);
  const edit = { ...approval, type: 'edit' };
  await assert.rejects(
    s.desk.decide(s.agent(), agents.decisions(first, [edit])),
    refusedAs('not_a_decision'),
  );
  assert.deepEqual(kept(s.desk.turn()), before);
  assert.equal(s.ledger.commits(), 0);

  // The first batch decided and run; a second turn opens a second batch.
  const both = [[agents.approveCall, 'c1'], [agents.approveCall, 'c2']];
  assert.equal((await s.decide(first, both)).final, 'done');
  const second = await s.turn([[3, 'c3'], [4, 'c4']]);
  const open = kept(s.desk.turn());
  // A decision on the first batch's call, bound to the second batch's checkpoint: not a call
  // of this batch.
  const stray = { ...first, checkpoint: second.checkpoint };
  await assert.rejects(
    s.decide(stray, [[agents.approveCall, 'c1']]),
    refusedAs('approval_mismatch'),
  );
  // The first batch's decisions, replayed against its own checkpoint: that batch is over.
  await assert.rejects(s.decide(first, [[agents.approveCall, 'c1']]), refusedAs('stale_revision'));
  assert.deepEqual(kept(s.desk.turn()), open);
  assert.deepEqual(s.posts().sort(), [1, 2]);
  const next = [[agents.approveCall, 'c3'], [agents.approveCall, 'c4']];
  assert.equal((await s.decide(second, next)).final, 'done');
  assert.deepEqual(s.posts().sort(), [1, 2, 3, 4]);
});

test(`a turn of more calls than one batch holds (${rk.BATCH_CAPACITY}) is refused by name`, async () => {
  const s = new Scene(tmp());
  const posts = Array.from({ length: rk.BATCH_CAPACITY + 1 }, (_, i) => [i, `c${i}`]);
  await assert.rejects(s.turn(posts), agents.NotBuilt);
  assert.equal(s.desk.turn().run.revision, 0);
  // A turn of exactly BATCH_CAPACITY calls is one batch.
  const request = await s.turn(posts.slice(0, rk.BATCH_CAPACITY));
  assert.equal(request.calls.length, rk.BATCH_CAPACITY);
});

test('kernel: a crash after the tools committed is reconciled, not repeated', () => {
  const dir = tmp();
  worker(dir, 'start');
  assert.deepEqual(worker(dir, 'decide', 'call_1', 'approve'), { awaiting: ['call_2'] });
  // Killed right after a tool committed, before any result was recorded: the SDK runs the
  // turn's tools together, so the other may have committed too.
  const killed = spawn(dir, ['decide', 'call_2', 'approve'], 'after');
  assert.equal(killed.signal, 'SIGKILL', killed.stderr);
  const ledger = new Ledger(path.join(dir, 'tool.ledger'));
  const committed = ledger.entries().map((e) => e.args.post);
  assert.ok(committed.length >= 1);
  const inFlight = stored(dir).run;
  assert.deepEqual(states(inFlight).map(([, state]) => state), ['in_flight', 'in_flight']);
  // The new process runs the stored state: each tool's execute finds its call in flight; the
  // kernel makes both unknown and reconciles them one after another (BAT-4), asking each tool
  // under its key: a commit found is recorded, not made again.
  assert.deepEqual(worker(dir, 'restart'), { final: 'done' });
  assert.deepEqual(ledger.entries().map((e) => e.args.post).sort(), [1, 2]);
  const settledTurn = storedIn(path.join(dir, 'turns.db'), agents.SqliteTurnStore);
  assertValidates({ log: logOf(dir), anchor: `${settledTurn.held.anchor.records}:${settledTurn.held.anchor.mac}` }, KEY);
  const settled = stored(dir).run;
  assert.deepEqual(states(settled), [['call_1', 'committed'], ['call_2', 'committed']]);
  assert.equal(settled.last_resume.decision.decision, 'reconcile');
  // Each recorded result is the one its tool committed (call_N published post N).
  for (const slot of settled.batch.slots) {
    const post = Number(slot.call.call.call_id.slice('call_'.length));
    const entry = ledger.entries().find((e) => e.args.post === post);
    assert.equal(slot.result, rk.digest(entry.result),
      JSON.stringify({ slot, ledger: ledger.entries() }));
  }
});
