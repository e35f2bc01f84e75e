'use strict';
// Inside LangChain's `createAgent` (langchain 1.x, offline: a scripted chat model built on
// @langchain/core's BaseChatModel emits two tool calls in one AIMessage): the plain
// `humanInTheLoopMiddleware` beside the kernel's `HitlGate` (hitl.js). The gate turns the
// turn's action requests into one kernel batch, each tool's allowed decisions into its call's
// `contract.allowed`, and the resume's decision list into one `decision: batch`. The plain
// tests show what the middleware alone lets through (each fails, and says so, the day the
// middleware stops it).

const assert = require('node:assert/strict');
const path = require('node:path');
const { test } = require('node:test');

const Database = require('better-sqlite3');
const { createAgent, humanInTheLoopMiddleware, tool } = require('langchain');
const { BaseChatModel } = require('@langchain/core/language_models/chat_models');
const { AIMessage } = require('@langchain/core/messages');
const { Command, MemorySaver } = require('@langchain/langgraph');
const { z } = require('zod');

const rk = require('..');
const agents = require('../agents');
const hitl = require('../hitl');
const { assertValidates, scratch } = require('./helpers');
const { DedupingTool, Ledger } = require('./ledger');

const IDENTITY = { tenant: 'acme', session: 'thread-1', run: 'run-1', definition: 'agent@1' };
const KEY = 'c3'.repeat(32);
const CFG = { configurable: { thread_id: 'thread-1' } };
const STILL = 'the middleware no longer shows this: the gate test beside it guards nothing here';

const { tmp, closing } = scratch('resumable-hitl-');

/** A chat model that answers each request with the next scripted AIMessage. */
class ScriptedChatModel extends BaseChatModel {
  constructor(turns) {
    super({});
    this.turns = turns;
    this.requests = 0;
  }

  _llmType() {
    return 'scripted';
  }

  bindTools() {
    return this;
  }

  async _generate() {
    const make = this.turns[this.requests];
    this.requests += 1;
    if (make === undefined) throw new Error('the script has no response left');
    const message = make();
    return { generations: [{ text: '', message }] };
  }
}

let messageIds = 0;
/** An AIMessage asking for each `[tool, args, id]` at once. */
const calls = (...list) => () =>
  new AIMessage({
    content: '',
    id: `ai-${(messageIds += 1)}`,
    tool_calls: list.map(([name, args, id]) => ({ name, args, id, type: 'tool_call' })),
  });
const say = (text) => () => new AIMessage({ content: text, id: `ai-${(messageIds += 1)}` });

function requestOf(result) {
  const last = JSON.stringify(result.messages?.at(-1));
  assert.ok(result.__interrupt__, `the agent did not interrupt: ${last}`);
  return result.__interrupt__[0].value;
}

const lastText = (result) => result.messages.at(-1).content;

/**
 * The tools: `publish` commits to the ledger, `ask` is answered by a person. Gated (`gated`
 * true), their calls are carried out by the gate with the core's arguments, never by the
 * agent's tools node.
 */
function toolsFor(ledger, gated) {
  const publish = tool(
    async ({ post }) => {
      if (gated) throw new Error('a gated call is carried out by the gate, not the tools node');
      ledger.append({ tool: 'publish', args: { post } });
      return 'published';
    },
    { name: 'publish', description: 'Publish a post.', schema: z.object({ post: z.number() }) },
  );
  const ask = tool(async () => 'nobody answered', {
    name: 'ask',
    description: 'Ask the user.',
    schema: z.object({ question: z.string() }),
  });
  return [publish, ask];
}

/** A plain agent: the middleware alone. */
function plainAgent(dir, turns) {
  const ledger = new Ledger(path.join(dir, 'tool.ledger'));
  const agent = createAgent({
    model: new ScriptedChatModel(turns),
    tools: toolsFor(ledger),
    middleware: [humanInTheLoopMiddleware({ interruptOn: { publish: true } })],
    checkpointer: new MemorySaver(),
  });
  return { agent, ledger };
}

/** The same agent with the kernel's gate in the middleware's place. */
function gatedAgent(dir, turns, { allowed } = {}) {
  const ledger = new Ledger(path.join(dir, 'tool.ledger'));
  const db = new Database(path.join(dir, 'kernel.db'));
  closing(() => db.close());
  let ticks = 0;
  const publisher = new DedupingTool(ledger);
  const gate = new hitl.HitlGate({
    store: new agents.SqliteTurnStore(db),
    name: 'run-1',
    identity: IDENTITY,
    clock: () => (ticks += 1),
    interruptOn: {
      publish: true,
      ask: { allowedDecisions: ['respond', 'reject'] },
    },
    tools: { publish: publisher, ask: publisher },
    requester: 'agent',
    approver: 'alice',
    expiresIn: 1000,
    allowed,
    key: KEY,
  });
  const agent = createAgent({
    model: new ScriptedChatModel(turns),
    tools: toolsFor(ledger, true),
    middleware: [gate.middleware()],
    checkpointer: new MemorySaver(),
  });
  // The approver decides now; the approval lasts a while.
  const decide = (request, list) => {
    const options = { approver: 'alice', expiresAt: ticks + 500 };
    return new Command({ resume: hitl.hitlDecisions(request, list, options) });
  };
  return { agent, ledger, gate, decide };
}

/** What a refusal leaves as it was: the kernel's run and its checkpoint. */
const kept = (gate) => ({ run: gate.turn().run, checkpoint: gate.turn().checkpoint });
/** The calls of the open batch still awaiting a decision. */
const awaiting = (gate) =>
  gate.turn().run.batch.slots.filter((s) => s.state === 'awaiting').map((s) => s.call.call.call_id);

const posts = (ledger) => ledger.entries().map((e) => e.args.post);
const user = (content) => ({ messages: [{ role: 'user', content }] });

test('gate: two tool calls are one batch; an approval and an edit in one resume', async () => {
  const { agent, ledger, gate, decide } = gatedAgent(tmp(), [
    calls(['publish', { post: 1 }, 'c1'], ['publish', { post: 2 }, 'c2']),
    say('done'),
  ]);
  const request = requestOf(await agent.invoke(user('publish 1 and 2'), CFG));
  // The plain middleware's words, and the kernel's: one batch, one checkpoint.
  assert.deepEqual(request.actionRequests.map((a) => a.args.post), [1, 2]);
  assert.deepEqual(request.reviewConfigs[0].allowedDecisions, ['approve', 'edit', 'reject']);
  const { run: open } = gate.turn();
  assert.equal(open.phase.reason.reason, 'pending_batch');
  assert.deepEqual(open.batch.slots.map((s) => s.call.call.contract.allowed), [
    ['approve', 'edit', 'reject'],
    ['approve', 'edit', 'reject'],
  ]);
  assert.equal(request.checkpoint.revision, open.batch.opened);
  const result = await agent.invoke(
    decide(request, [
      { type: 'approve' },
      { type: 'edit', editedAction: { name: 'publish', args: { post: 20 } } },
    ]),
    CFG,
  );
  assert.equal(lastText(result), 'done');
  // The edit ran with the edited arguments, bound by their digest (BAT-5).
  assert.deepEqual(posts(ledger).sort((a, b) => a - b), [1, 20]);
  const { run: done } = gate.turn();
  assert.deepEqual(done.batch.slots.map((s) => s.state), ['committed', 'committed']);
  assert.equal(done.batch.slots[1].call.call.args, rk.digest({ post: 20 }));
  assert.equal(done.batch.slots[1].proposed, rk.digest({ post: 2 }));
});

test('plain: a rejection in the turn drops the approved calls with it', async () => {
  const { agent, ledger } = plainAgent(tmp(), [
    calls(['publish', { post: 1 }, 'c1'], ['publish', { post: 2 }, 'c2']),
    say('done'),
  ]);
  await agent.invoke(user('publish 1 and 2'), CFG);
  const resume = { decisions: [{ type: 'approve' }, { type: 'reject', message: 'not 2' }] };
  assert.equal(lastText(await agent.invoke(new Command({ resume }), CFG)), 'done');
  // Post 1 was approved and never published: the middleware sends the turn back to the model.
  assert.deepEqual(posts(ledger), [], STILL);
});

test('gate: a rejection is answered to the model and the approved call still runs', async () => {
  const { agent, ledger, gate, decide } = gatedAgent(tmp(), [
    calls(['publish', { post: 1 }, 'c1'], ['publish', { post: 2 }, 'c2']),
    say('done'),
  ]);
  const request = requestOf(await agent.invoke(user('publish 1 and 2'), CFG));
  const result = await agent.invoke(
    decide(request, [{ type: 'approve' }, { type: 'reject', message: 'not 2' }]),
    CFG,
  );
  assert.equal(lastText(result), 'done');
  assert.deepEqual(posts(ledger), [1]);
  const answered = result.messages.filter((m) => m.getType() === 'tool');
  assert.deepEqual(
    answered.map((m) => [m.tool_call_id, m.content]).sort(),
    [['c1', 'publish done #1'], ['c2', 'not 2']],
  );
  const slots = gate.turn().run.batch.slots;
  assert.deepEqual(slots.map((s) => s.state), ['committed', 'rejected']);
  assert.equal(slots[1].reason, rk.digest('not 2'));
});

test('gate: respond answers an ask tool in its place; a tool that does not allow it refuses', async () => {
  const { agent, ledger, gate, decide } = gatedAgent(tmp(), [
    calls(['ask', { question: 'which day?' }, 'q1'], ['publish', { post: 1 }, 'c1']),
    say('done'),
  ]);
  const request = requestOf(await agent.invoke(user('ask, then publish'), CFG));
  assert.deepEqual(request.reviewConfigs[0].allowedDecisions, ['respond', 'reject']);
  // respond for publish: its allowed decisions leave it out (POL-1); nothing is committed.
  const before = kept(gate);
  const again = requestOf(
    await agent.invoke(
      decide(request, [{ type: 'respond', message: 'Tuesday' }, { type: 'respond', message: 'x' }]),
      CFG,
    ),
  );
  assert.equal(again.refused.rejection, 'decision_not_allowed');
  assert.deepEqual(kept(gate), before);
  const result = await agent.invoke(
    decide(again, [{ type: 'respond', message: 'Tuesday' }, { type: 'approve' }]),
    CFG,
  );
  assert.equal(lastText(result), 'done');
  assert.deepEqual(posts(ledger), [1]);
  const answer = result.messages.find((m) => m.getType() === 'tool' && m.tool_call_id === 'q1');
  assert.equal(answer.content, 'Tuesday');
  const slots = gate.turn().run.batch.slots;
  assert.deepEqual(slots.map((s) => s.state), ['responded', 'committed']);
  assert.equal(slots[0].result, rk.digest('Tuesday'));
});

test('plain: a decision list aimed at an earlier interrupt approves the new calls', async () => {
  const { agent, ledger } = plainAgent(tmp(), [
    calls(['publish', { post: 1 }, 'c1'], ['publish', { post: 2 }, 'c2']),
    say('done'),
    calls(['publish', { post: 666 }, 'c3'], ['publish', { post: 667 }, 'c4']),
    say('done again'),
  ]);
  await agent.invoke(user('publish 1 and 2'), CFG);
  const answer = { decisions: [{ type: 'approve' }, { type: 'approve' }] };
  await agent.invoke(new Command({ resume: answer }), CFG);
  await agent.invoke(user('publish more'), CFG);
  // The answer given to the first interrupt, delivered again (a retried request): the list
  // names no call, no arguments, no interrupt.
  assert.equal(lastText(await agent.invoke(new Command({ resume: answer }), CFG)), 'done again');
  assert.deepEqual(posts(ledger).sort((a, b) => a - b), [1, 2, 666, 667], STILL);
});

test('gate: a decision list aimed at an earlier interrupt is refused, and nothing runs', async () => {
  const { agent, ledger, gate, decide } = gatedAgent(tmp(), [
    calls(['publish', { post: 1 }, 'c1'], ['publish', { post: 2 }, 'c2']),
    say('done'),
    calls(['publish', { post: 666 }, 'c3'], ['publish', { post: 667 }, 'c4']),
    say('done again'),
  ]);
  const first = requestOf(await agent.invoke(user('publish 1 and 2'), CFG));
  const answer = decide(first, [{ type: 'approve' }, { type: 'approve' }]);
  assert.equal(lastText(await agent.invoke(answer, CFG)), 'done');
  const second = requestOf(await agent.invoke(user('publish more'), CFG));
  const open = kept(gate);
  // The first interrupt's answer, delivered again: bound to the first batch's checkpoint.
  const replayed = requestOf(await agent.invoke(answer, CFG));
  assert.equal(replayed.refused.rejection, 'stale_revision');
  // The plain middleware's list, with no binding at all.
  const bare = { decisions: [{ type: 'approve' }, { type: 'approve' }] };
  const unbound = requestOf(await agent.invoke(new Command({ resume: bare }), CFG));
  assert.equal(unbound.verdict, 'not_a_decision');
  assert.deepEqual(kept(gate), open);
  assert.deepEqual(posts(ledger).sort((a, b) => a - b), [1, 2]);
  // The second interrupt's own answer runs its calls.
  const own = await agent.invoke(decide(second, [{ type: 'approve' }, { type: 'approve' }]), CFG);
  assert.equal(lastText(own), 'done again');
  assert.deepEqual(posts(ledger).sort((a, b) => a - b), [1, 2, 666, 667]);
  assertValidates(gate.log(), KEY);
});

test('gate: decisions one at a time, and a second decision for a decided call', async () => {
  const { agent, ledger, gate, decide } = gatedAgent(tmp(), [
    calls(['publish', { post: 1 }, 'c1'], ['publish', { post: 2 }, 'c2']),
    say('done'),
  ]);
  const request = requestOf(await agent.invoke(user('publish 1 and 2'), CFG));
  const next = requestOf(await agent.invoke(decide(request, [{ type: 'approve' }]), CFG));
  assert.deepEqual(awaiting(gate), ['c2']);
  assert.equal(ledger.commits(), 0);
  // A different decision for c1, decided already: another decision won (RES-2).
  const conflict = requestOf(
    await agent.invoke(decide(next, [{ type: 'reject', message: 'no' }]), CFG),
  );
  assert.equal(conflict.refused.rejection, 'already_resumed');
  const result = await agent.invoke(decide(next, [null, { type: 'approve' }]), CFG);
  assert.equal(lastText(result), 'done');
  assert.deepEqual(posts(ledger).sort((a, b) => a - b), [1, 2]);
  assert.deepEqual(gate.turn().run.batch.slots.map((s) => s.state), ['committed', 'committed']);
});

test('gate: an edit that renames the tool, and a denial, refused or ending the run', async () => {
  const { agent, ledger, decide } = gatedAgent(
    tmp(),
    [calls(['publish', { post: 1 }, 'c1'], ['publish', { post: 2 }, 'c2']), say('done')],
  );
  const request = requestOf(await agent.invoke(user('publish 1 and 2'), CFG));
  const renamed = requestOf(
    await agent.invoke(
      decide(request, [{ type: 'edit', editedAction: { name: 'delete', args: { post: 1 } } }]),
      CFG,
    ),
  );
  assert.equal(renamed.verdict, 'not_a_decision');
  // deny is not among HITL's words for publish (approve, edit, reject): refused (POL-1).
  const denied = requestOf(await agent.invoke(decide(request, [{ type: 'deny' }]), CFG));
  assert.equal(denied.refused.rejection, 'decision_not_allowed');
  assert.equal(ledger.commits(), 0);
});

test('gate: a denial where allowed ends the run and no call runs', async () => {
  const { agent, ledger, gate, decide } = gatedAgent(
    tmp(),
    [calls(['ask', { question: 'go?' }, 'q1'], ['publish', { post: 1 }, 'c1']), say('done')],
  );
  gate.allowed.publish = ['approve', 'deny'];
  const request = requestOf(await agent.invoke(user('publish'), CFG));
  await assert.rejects(
    agent.invoke(decide(request, [null, { type: 'deny' }]), CFG),
    (e) => e instanceof hitl.Denied && /"cause":"denied","call_id":"c1"/.test(e.message),
  );
  assert.equal(ledger.commits(), 0);
  const { phase } = gate.turn().run;
  assert.deepEqual([phase.phase, phase.cause], ['failed', 'denied']);
});

/** The decisions of the log's resume records, in order, each with its verdict. */
function resumesIn(log) {
  return log
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
    .filter((r) => r.input?.kind === 'resume')
    .map((r) => ({ decision: JSON.stringify(r.input.decision), verdict: Object.keys(r.verdict)[0] }));
}

test('gate: a value that is no decision, then one call decided at a time: each decision fed once', async () => {
  const { agent, ledger, gate, decide } = gatedAgent(tmp(), [
    calls(['publish', { post: 1 }, 'c1'], ['publish', { post: 2 }, 'c2']),
    say('done'),
  ]);
  const request = requestOf(await agent.invoke(user('publish 1 and 2'), CFG));
  // The plain middleware's list, bound to nothing: no decision, counted by nobody.
  const bare = { decisions: [{ type: 'approve' }, { type: 'approve' }] };
  const unbound = requestOf(await agent.invoke(new Command({ resume: bare }), CFG));
  assert.equal(unbound.verdict, 'not_a_decision');
  // c1 approved, then a decision on c2 alone the tool does not allow (refused, POL-1).
  requestOf(await agent.invoke(decide(request, [{ type: 'approve' }]), CFG));
  const refused = requestOf(
    await agent.invoke(decide(request, [null, { type: 'respond', message: 'x' }]), CFG),
  );
  assert.equal(refused.refused.rejection, 'decision_not_allowed');
  assert.deepEqual(awaiting(gate), ['c2']);
  // The node runs again with every value handed back: each fed once, then c2's own answer.
  const result = await agent.invoke(decide(request, [null, { type: 'approve' }]), CFG);
  assert.equal(lastText(result), 'done');
  assert.deepEqual(posts(ledger).sort((a, b) => a - b), [1, 2]);
  const resumes = resumesIn(gate.log().log);
  assert.equal(new Set(resumes.map((r) => r.decision)).size, resumes.length, JSON.stringify(resumes));
  assert.equal(resumes.length, 3);
  assertValidates(gate.log(), KEY);
});
