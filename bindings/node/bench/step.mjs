// One Node `step` against `JSON.parse` + `JSON.stringify` of the same run and input, in the
// same process: the input the kernel spends most on (a resume approving a call, carrying its
// checkpoint) on the run suspended for that approval. Prints the medians of 21 interleaved
// rounds and the ratios. Run it on the release addon: `node bench/step.mjs`.

import * as rk from '@resumable/kernel';

const ROUNDS = 21;
const PER_ROUND = 2000;

function scene() {
  const run = rk.newRun(
    { tenant: 'tenant-0b6f6d2e-4f7c-4c1e-9a57-3f1b2c9d8e71',
      session: 'session-5d1c0a3e-8f2b-4d6a-b7e9-0c4f1a2b3d4e',
      run: 'run-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b', definition: 'publisher@12' },
    { operator: 'ops-oncall', reconcile_window: 3600 }, 1_700_000_000);
  const call = { call_id: 'call_Xq7bT2mN9vR4kP8sL3wY6zA1', tool: 'crm.update_contact',
    args: rk.digest({ contact: 4711, fields: { email: 'a@example.com' } }),
    key: `idem-${'7f3a9c2e'.repeat(8)}`,
    contract: { dedupes: true, query_fences: false, max_attempts: 3 } };
  const wait = { wait: 'approval', call, requester: 'agent-planner',
    prior: new rk.History().prior(call) };
  const v = rk.step(run, { at: 1_700_000_001, kind: 'suspend', wait, expires_at: 1_700_003_600,
    responsible: 'alice', resource_version: 7 });
  if (!v.accepted) throw new Error(v.message);
  const cp = rk.checkpointOf(v);
  const decision = { decision: 'approve', call_id: call.call_id, args: call.args,
    requester: 'agent-planner', approver: 'alice', revision: cp.revision,
    expires_at: 1_700_003_000 };
  const resume = { at: 1_700_000_100, kind: 'resume', checkpoint: cp, decision,
    facts: { resource_version: 7, permitted: true, within_budget: true } };
  if (!rk.step(v.run, resume).accepted) throw new Error('the resume was refused');
  return [JSON.stringify(v.run), JSON.stringify(resume)];
}

// Median microseconds per call of each form. The rounds interleave the forms (round r times
// every form in turn), so a change of load on the machine touches them alike.
function mediansUs(forms) {
  const samples = Object.fromEntries(Object.keys(forms).map((name) => [name, []]));
  let sink = 0;
  for (let r = 0; r < ROUNDS; r += 1) {
    for (const [name, f] of Object.entries(forms)) {
      const t = process.hrtime.bigint();
      for (let i = 0; i < PER_ROUND; i += 1) sink += f() ? 1 : 0;
      samples[name].push(Number(process.hrtime.bigint() - t) / PER_ROUND / 1000);
    }
  }
  if (sink < 0) console.log(sink);
  const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) / 2];
  return Object.fromEntries(Object.entries(samples).map(([name, xs]) => [name, median(xs)]));
}

const [runText, inputText] = scene();
const run = JSON.parse(runText);
const input = JSON.parse(inputText);
const BASE = 'JSON.parse + JSON.stringify (run and input)';
const figures = mediansUs({
  [BASE]: () => JSON.stringify(JSON.parse(runText)).length + JSON.stringify(JSON.parse(inputText)).length,
  'stepJson (JSON text in, JSON text out)': () => rk.stepJson(runText, inputText),
  'step (objects in, verdict out)': () => rk.step(run, input),
});
console.log(`node ${process.version}; run ${runText.length} bytes, input ${inputText.length} bytes;`
  + ` median of ${ROUNDS} rounds of ${PER_ROUND} calls`);
for (const [name, us] of Object.entries(figures)) {
  console.log(`${name.padEnd(44)} ${us.toFixed(2).padStart(8)} us  ${(us / figures[BASE]).toFixed(2).padStart(5)}x`);
}
