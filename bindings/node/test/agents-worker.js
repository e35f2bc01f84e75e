'use strict';
// One process of an agent run whose `needsApproval` tool is gated by the kernel, started by
// agents.test.js as `node -e "require(WORKER).main(...)" STEP DIR [APPROVER]`. STEP `start`
// runs the turn until the approval, suspends the kernel's run and stores the SDK's state with
// it; `approve` reads the stored run and state, decides through the kernel as APPROVER, runs
// the tool and finishes the turn. The model is scripted; nothing leaves the machine. The last
// line printed is JSON.

const fs = require('node:fs');
const path = require('node:path');

const Database = require('better-sqlite3');
const { Agent, run, tool } = require('@openai/agents');
const { z } = require('zod');

const agents = require('../agents');
const gate = require('../gate');
const { DedupingTool, Ledger } = require('./ledger');
const { ScriptedModel, assistantMessage, functionCall } = require('./scripted-model');

const IDENTITY = { tenant: 'acme', session: 'chat-1', run: 'run-1', definition: 'writer@1' };
const clock = () => Date.now();

async function main([step, dir, approver = 'alice']) {
  const desk = new agents.ApprovalDesk({
    store: new agents.SqliteTurnStore(new Database(path.join(dir, 'turns.db'))),
    name: 'run-1',
    identity: IDENTITY,
    clock,
  });
  const publisher = new DedupingTool(new Ledger(path.join(dir, 'tool.ledger')));
  const publish = tool({
    name: 'publish',
    description: 'Publish a post.',
    parameters: z.object({ post: z.number() }),
    needsApproval: true,
    execute: async ({ post }, _ctx, details) => {
      const callId = details.toolCall.callId;
      const dispatch = desk.dispatchFor(callId);
      if (dispatch === null) return 'refused: the kernel has not dispatched this call';
      const result = await publisher.commit(dispatch.tool_key, 'publish', { post });
      desk.record(callId, dispatch.attempt, result);
      return result;
    },
  });
  const agent = (model) => new Agent({ name: 'writer', model, tools: [publish] });
  const requestFile = path.join(dir, 'request.json');
  if (step === 'start') {
    const model = new ScriptedModel([[functionCall('publish', { post: 42 }, 'call_42')]]);
    const result = await run(agent(model), 'publish post 42');
    const request = desk.suspend(result, {
      requester: 'writer',
      approver: 'alice',
      expiresIn: 600_000,
    });
    fs.writeFileSync(requestFile, JSON.stringify(request));
    console.log(JSON.stringify({ suspended: request.call.call_id }));
    return;
  }
  const request = JSON.parse(fs.readFileSync(requestFile, 'utf8'));
  const a = agent(new ScriptedModel([[assistantMessage('done')]]));
  const now = clock();
  let state;
  try {
    state = await desk.decide(a, gate.approve(request, approver, now + 60_000, now));
  } catch (e) {
    if (!(e instanceof gate.Refused)) throw e;
    console.log(JSON.stringify({ refused: e.rejection.verdict }));
    return;
  }
  const result = await run(a, state);
  console.log(JSON.stringify({ final: result.finalOutput }));
}

module.exports = { main };
