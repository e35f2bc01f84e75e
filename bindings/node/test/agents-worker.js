'use strict';
// One process of an agent run whose `needsApproval` tool commits to a ledger, started by
// agents.test.js as `node -e "require(WORKER).main(...)" MODE STEP DIR [APPROVER]`. MODE is
// `kernel` (the tool gated by the kernel's desk) or `plain` (the SDK alone, its state kept in
// a file as an app would). STEP `start` runs the turn until the approval and stores the SDK's
// state (kernel: with the kernel's suspended run, in one write); `approve` decides as
// APPROVER (kernel: through the kernel first), stores the approved state, runs the tool and
// finishes the turn; `restart` runs the stored state again, as a new process after a crash
// would. With CRASH=after the process kills itself with SIGKILL right after the tool
// committed; with CRASH=before, after the kernel's commit and before the tool is reached. The
// model is scripted; nothing leaves the machine. The last line printed is JSON.

const fs = require('node:fs');
const path = require('node:path');

const { Agent, RunState, run } = require('@openai/agents');

const agents = require('../agents');
const { gatedPublish, keptRequest, publishTool, suspendAndKeep, workerDesk } = require('./desk');
const { CrashingTool, Ledger, crash } = require('./ledger');
const { ScriptedModel, assistantMessage, functionCall } = require('./scripted-model');

const firstTurn = () => new ScriptedModel([[functionCall('publish', { post: 42 }, 'call_42')]]);
const lastTurn = () => new ScriptedModel([[assistantMessage('done')]]);

async function plain(step, dir) {
  const ledger = new Ledger(path.join(dir, 'tool.ledger'));
  const publish = publishTool(async ({ post }) => {
    ledger.append({ tool: 'publish', post });
    crash('after');
    return 'published';
  });
  const agent = (model) => new Agent({ name: 'writer', model, tools: [publish] });
  const stateFile = path.join(dir, 'state.json');
  if (step === 'start') {
    const result = await run(agent(firstTurn()), 'publish post 42');
    fs.writeFileSync(stateFile, result.state.toString());
    return { suspended: result.interruptions[0].rawItem.callId };
  }
  const a = agent(lastTurn());
  const state = await RunState.fromString(a, fs.readFileSync(stateFile, 'utf8'));
  if (step === 'approve') {
    state.approve(state.getInterruptions()[0]);
    fs.writeFileSync(stateFile, state.toString()); // kept, so a crash does not lose the approval
  }
  return { final: (await run(a, state)).finalOutput };
}

async function kernel(step, dir, approver) {
  const desk = workerDesk(dir);
  const publisher = new CrashingTool(new Ledger(path.join(dir, 'tool.ledger')));
  const publish = gatedPublish(desk, publisher);
  const agent = (model) => new Agent({ name: 'writer', model, tools: [publish] });
  if (step === 'start') {
    const result = await run(agent(firstTurn()), 'publish post 42');
    const request = await suspendAndKeep(desk, result, dir);
    return { suspended: request.calls[0].call_id };
  }
  const a = agent(lastTurn());
  let state;
  if (step === 'approve') {
    const request = keptRequest(dir);
    const now = Date.now();
    try {
      const approval = agents.approveCall(request, 'call_42', approver, now + 60_000);
      state = await desk.decide(a, agents.decisions(request, [approval]));
    } catch (e) {
      if (!(e instanceof agents.Refused)) throw e;
      return { refused: e.rejection.verdict };
    }
  } else {
    state = await desk.storedState(a);
  }
  return { final: (await run(a, state)).finalOutput };
}

async function main([mode, step, dir, approver = 'alice']) {
  const out = await (mode === 'plain' ? plain(step, dir) : kernel(step, dir, approver));
  console.log(JSON.stringify(out));
}

module.exports = { main };
