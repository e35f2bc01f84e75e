import * as rk from '@resumable/kernel';

let run = rk.newRun({ tenant: 'acme', session: 's-1', run: 'run-7', definition: 'publisher@1' },
  { operator: 'ops', reconcile_window: 100 }, 0);
const history = new rk.History(); // a runtime keeps this index in its store
const call = { call_id: 'call-1', tool: 'publish', args: rk.digest({ post: 42 }), key: 'idem-1',
  contract: { dedupes: true, query_fences: false, max_attempts: 3 } };

// Suspend for alice's approval; store the run, then hand alice the checkpoint.
const wait = { wait: 'approval', call, requester: 'agent', prior: history.prior(call) };
let v = rk.step(run, { at: 1, kind: 'suspend', wait, expires_at: 50, responsible: 'alice',
  resource_version: 7 });
run = v.run;
const checkpoint = rk.checkpointOf(v);
history.apply(v.effects);

// Alice approves exactly this call, these arguments, this requester, this revision.
const approval = { decision: 'approve', call_id: 'call-1', args: call.args, requester: 'agent',
  approver: 'alice', revision: checkpoint.revision, expires_at: 40 };
const facts = { resource_version: 7, permitted: true, within_budget: true };
v = rk.step(run, { at: 2, kind: 'resume', checkpoint, decision: approval, facts });
run = v.run; // commit it first (write-ahead), then dispatch under the kernel's tool key
const dispatch = rk.effect(v, 'dispatch');
console.log('dispatch', dispatch.tool, 'tool key', dispatch.tool_key);

// The same approval again is refused, and changes nothing.
const again = rk.step(run, { at: 3, kind: 'resume', checkpoint, decision: approval, facts });
console.log('again:', again.verdict);
