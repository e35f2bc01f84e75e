'use strict';
// One process of an agent run whose model asks for two `needsApproval` calls in one turn
// (parallel tool calls), gated by the kernel's desk as one batch; started by
// agents-batch.test.js as `node -e "require(WORKER).main(...)" STEP DIR [ARGS...]`.
//
// STEP `start` runs the turn until the approvals and stores the kernel's suspended batch with
// the SDK's state, in one write; `decide CALL_ID VERDICT [APPROVER]` decides one call
// (`approve`, `reject` or `deny`) through the kernel first and, once every call is decided,
// runs the tools and finishes the turn; `restart` runs the stored state again, as a new
// process after a crash would. With CRASH=after the process kills itself with SIGKILL right
// after the first tool committed. The model is scripted; nothing leaves the machine. The last
// line printed is JSON.

const path = require('node:path');

const { Agent, run } = require('@openai/agents');

const agents = require('../agents');
const { gatedPublish, keptRequest, suspendAndKeep, workerDesk } = require('./desk');
const { CrashingTool, Ledger } = require('./ledger');
const { ScriptedModel, assistantMessage, functionCall } = require('./scripted-model');

const TURN = [
  functionCall('publish', { post: 1 }, 'call_1'),
  functionCall('publish', { post: 2 }, 'call_2'),
];

async function main([step, dir, ...rest]) {
  const desk = workerDesk(dir);
  const publisher = new CrashingTool(new Ledger(path.join(dir, 'tool.ledger')));
  const publish = gatedPublish(desk, publisher);
  const agent = (turns) =>
    new Agent({ name: 'writer', model: new ScriptedModel(turns), tools: [publish] });
  let out;
  if (step === 'start') {
    const result = await run(agent([TURN]), 'publish posts 1 and 2');
    const request = await suspendAndKeep(desk, result, dir);
    out = { suspended: request.calls.map((c) => c.call_id) };
  } else {
    const a = agent([[assistantMessage('done')]]);
    let state;
    if (step === 'decide') {
      const [callId, verdict, approver = 'alice'] = rest;
      const request = keptRequest(dir);
      // The approval lasts as long as the batch: the same decision made again is identical.
      const until = request.expires_at;
      const decision =
        verdict === 'approve'
          ? agents.approveCall(request, callId, approver, until)
          : verdict === 'reject'
            ? agents.rejectCall(request, callId, approver, until, `${approver} said no`)
            : agents.denyCall(request, callId, approver, until);
      try {
        state = await desk.decide(a, agents.decisions(request, [decision]));
      } catch (e) {
        if (!(e instanceof agents.Refused)) throw e;
        out = { refused: e.rejection.verdict };
      }
      if (out === undefined && state === null) {
        const slots = desk.turn().run.batch.slots;
        const awaiting = slots.filter((s) => s.state === 'awaiting');
        out = { awaiting: awaiting.map((s) => s.call.call.call_id) };
      }
    } else {
      try {
        state = await desk.storedState(a);
      } catch (e) {
        out = { error: e.message };
      }
    }
    if (out === undefined) out = { final: (await run(a, state)).finalOutput };
  }
  console.log(JSON.stringify(out));
}

module.exports = { main };
