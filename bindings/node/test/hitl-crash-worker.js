'use strict';
// One process of a LangChain agent run whose human-in-the-loop is the kernel's gate, started
// by hitl-crash.test.js as `node -e "require(WORKER).main(...)" STEP DIR`. STEP `start` runs
// until the interrupt and keeps its request; `decide` resumes with the approver's answer
// (approve the first call, edit the second's post to 20), kept in DIR so that it can be sent
// again as it was; `resend` sends that same answer again, as an app retrying after a crash
// would. With CRASH=before the process kills itself with SIGKILL when the first dispatch
// reaches the tool: right after the core took the decisions and committed them, before the
// graph stored the middleware's answer or any tool ran. The graph's
// checkpointer, the kernel's store and the tool's ledger are files in DIR; the chat model is
// scripted. The last line printed is JSON.

const fs = require('node:fs');
const path = require('node:path');

const Database = require('better-sqlite3');
const { createAgent, tool } = require('langchain');
const { BaseChatModel } = require('@langchain/core/language_models/chat_models');
const { AIMessage } = require('@langchain/core/messages');
const { Command } = require('@langchain/langgraph');
const { SqliteSaver } = require('@langchain/langgraph-checkpoint-sqlite');
const { z } = require('zod');

const agents = require('../agents');
const hitl = require('../hitl');
const { CrashingTool, Ledger } = require('./ledger');

const IDENTITY = { tenant: 'acme', session: 'thread-1', run: 'run-1', definition: 'agent@1' };
const CFG = { configurable: { thread_id: 'thread-1' } };

/** Two tool calls in one AIMessage while no tool answered yet, then a closing word. */
class ScriptedChatModel extends BaseChatModel {
  _llmType() {
    return 'scripted';
  }

  bindTools() {
    return this;
  }

  async _generate(messages) {
    const answered = messages.some((m) => m.getType() === 'tool');
    const message = answered
      ? new AIMessage({ content: 'done', id: 'ai-2' })
      : new AIMessage({
          content: '',
          id: 'ai-1',
          tool_calls: [
            { name: 'publish', args: { post: 1 }, id: 'c1', type: 'tool_call' },
            { name: 'publish', args: { post: 2 }, id: 'c2', type: 'tool_call' },
          ],
        });
    return { generations: [{ text: '', message }] };
  }
}

async function main([step, dir]) {
  const publisher = new CrashingTool(new Ledger(path.join(dir, 'tool.ledger')));
  const gate = new hitl.HitlGate({
    store: new agents.SqliteTurnStore(new Database(path.join(dir, 'kernel.db'))),
    name: 'run-1',
    identity: IDENTITY,
    clock: () => Date.now(),
    interruptOn: { publish: true },
    tools: { publish: publisher },
    requester: 'agent',
    approver: 'alice',
    expiresIn: 600_000,
    reconcileWindow: 3_600_000,
  });
  const publish = tool(
    async () => {
      throw new Error('a gated call is carried out by the gate, not the tools node');
    },
    { name: 'publish', description: 'Publish a post.', schema: z.object({ post: z.number() }) },
  );
  const saver = SqliteSaver.fromConnString(path.join(dir, 'graph.db'));
  const agent = createAgent({
    model: new ScriptedChatModel({}),
    tools: [publish],
    middleware: [gate.middleware()],
    checkpointer: saver,
  });
  const requestFile = path.join(dir, 'request.json');
  const answerFile = path.join(dir, 'answer.json');
  let result;
  if (step === 'start') {
    result = await agent.invoke({ messages: [{ role: 'user', content: 'publish 1 and 2' }] }, CFG);
    const request = result.__interrupt__[0].value;
    fs.writeFileSync(requestFile, JSON.stringify(request));
    console.log(JSON.stringify({ awaiting: request.calls.map((c) => c.call_id) }));
    return;
  }
  if (step === 'decide') {
    const request = JSON.parse(fs.readFileSync(requestFile, 'utf8'));
    const edit = { type: 'edit', editedAction: { name: 'publish', args: { post: 20 } } };
    const answer = hitl.hitlDecisions(request, [{ type: 'approve' }, edit], {
      approver: 'alice',
      expiresAt: Date.now() + 60_000,
    });
    fs.writeFileSync(answerFile, JSON.stringify(answer));
  }
  const answer = JSON.parse(fs.readFileSync(answerFile, 'utf8'));
  result = await agent.invoke(new Command({ resume: answer }), CFG);
  const interrupted = result.__interrupt__?.[0]?.value;
  console.log(
    JSON.stringify(
      interrupted ? { refused: interrupted.refused } : { final: result.messages.at(-1).content },
    ),
  );
}

module.exports = { main };
