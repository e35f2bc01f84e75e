// Compiled by test/types.test.js (tsc --noEmit --strict): the gate's and the desk's declarations
// accept their documented use and refuse a misuse.
import { ApprovalGate, SqliteRunStore, Refused, Denied } from '../gate';
import {
  ApprovalDesk,
  SqliteTurnStore,
  NotBuilt,
  approveCall,
  callOf,
  decisions,
  denyCall,
  rejectCall,
} from '../agents';
import { HitlGate, hitlDecisions } from '../hitl';
import type { ApprovalRequest, SqliteDatabase } from '../gate';
import type { HitlRequest } from '../hitl';
import type {
  Batch,
  CallDecision,
  Decision,
  Proposal,
  Rejected,
  Revision,
  Run,
  Slot,
  Wait,
} from '../index';

declare const db: SqliteDatabase;
const identity = { tenant: 'a', session: 'b', run: 'c', definition: 'd' };

const gated = new ApprovalGate({
  store: new SqliteRunStore(db),
  name: 'run-1',
  identity,
  tool: { commit: async () => 'done', query: () => null },
  interrupt: (request: ApprovalRequest) => request,
  clock: () => 1,
});
export async function callOnce(): Promise<string> {
  const call = { callId: 'c', tool: 't', args: { post: 1 }, key: 'k' };
  return gated.call(call, { requester: 'agent', approver: 'alice', expiresIn: 3 });
}

const turns = new SqliteTurnStore(db);
const desk = new ApprovalDesk({ store: turns, name: 'run-1', identity, clock: () => 2 });
export async function decideOnce(result: { interruptions: []; state: { toString(): string } }) {
  const request = desk.suspend(result, { requester: 'w', approver: 'a', expiresIn: 5 });
  const id = request.calls[0].call.call_id;
  await desk.decide({}, decisions(request, [denyCall(request, id, 'alice', 10)], 2));
  const reject = rejectCall(request, id, 'alice', 10, 'not now');
  await desk.decide({}, decisions(request, [approveCall(request, id, 'alice', 10), reject], 2));
  // @ts-expect-error: a rejection without the message the model is given does not type-check.
  rejectCall(request, id, 'alice', 10);
  return desk.decide({}, decisions(request, [], 2));
}

// The kernel's batch forms (spec 5.5).
export function batchForms(run: Run, proposal: Proposal): [Wait, Decision, string[]] {
  const wait: Wait = { wait: 'batch', calls: [proposal] };
  const approval = {
    call_id: 'c',
    args: 'd',
    requester: 'r',
    approver: 'a',
    revision: 1,
    expires_at: 9,
  };
  const one: CallDecision = { approval, verdict: 'edit', args: 'e' };
  const decision: Decision = { decision: 'batch', decisions: [one, { approval, verdict: 'deny' }] };
  const batch: Batch | undefined = run.batch;
  const states = (batch?.slots ?? []).map((s: Slot) =>
    s.state === 'committed' ? s.result : s.state === 'in_flight' ? String(s.attempt) : s.state,
  );
  // @ts-expect-error: a rejection carries the digest of its reason.
  const bad: CallDecision = { approval, verdict: 'reject' };
  void bad;
  return [wait, decision, states];
}

// LangChain's human-in-the-loop, gated by the kernel.
const hitlGate = new HitlGate({
  store: turns,
  name: 'run-2',
  identity,
  clock: () => 3,
  interruptOn: { publish: true, ask: { allowedDecisions: ['respond'] } },
  requester: 'agent',
  approver: 'alice',
  expiresIn: 10,
});
export function resumeOnce(request: HitlRequest) {
  void hitlGate.middleware();
  const edit = { type: 'edit' as const, editedAction: { name: 'publish', args: { post: 2 } } };
  return hitlDecisions(request, [{ type: 'approve' }, edit, null], {
    approver: 'alice',
    expiresAt: 9,
    at: 4,
  });
}
export async function executeOnce(callId: string): Promise<string> {
  await desk.storedState({});
  const tool = { commit: async () => 'done', query: async () => null };
  return (await desk.runTool(callId, tool, { post: 1 })) ?? 'not dispatched';
}

export function refusedKind(e: unknown): string | undefined {
  if (e instanceof Refused) return e.rejection.verdict;
  if (e instanceof Denied || e instanceof NotBuilt) return e.name;
  return undefined;
}
export { callOf };

// A rejection's evidence, read after narrowing on its name: a caller whose reply was lost learns
// from `already_applied` that its decision won, and at which revision.
export function wonAt(refused: Rejected): Revision | undefined {
  const r = refused.rejection;
  if (r.rejection === 'already_applied') return r.to;
  // @ts-expect-error: `to` is evidence of already_applied and already_resumed only.
  if (r.rejection === 'stale_revision') return r.to;
  return undefined;
}

// @ts-expect-error: a call without its idempotency key does not type-check.
gated.call({ callId: 'c', tool: 't', args: {} }, { requester: 'a', approver: 'b', expiresIn: 1 });
