// Compiled by test/types.test.js (tsc --noEmit --strict): the gate's, the desk's, HITL's and the
// driver's declarations accept their documented use and refuse a misuse.
import { ApprovalGate, SqliteDriverStore, Refused, Denied, Changed, Ended, approve, deny } from '../gate';
import { ApprovalDesk, NotBuilt, approveCall, decisions, denyCall, rejectCall } from '../agents';
import { HitlGate, hitlDecisions } from '../hitl';
import { Driver, RETRIES } from '../driver';
import type { ApprovalRequest } from '../gate';
import type { SqliteDatabase, Tool } from '../driver';
import type { HitlRequest } from '../hitl';
import type { Rejected, Revision, Request, Todo, Answer } from '../index';
import { driverPlan, driverApproval } from '../index';

declare const db: SqliteDatabase;
const identity = { tenant: 'a', session: 'b', run: 'c', definition: 'd' };
const store = new SqliteDriverStore(db);
const tool: Tool = { commit: async (call) => `paid ${call.tool_key}`, query: () => null };

const gated = new ApprovalGate({
  store,
  name: 'run-1',
  identity,
  tool,
  interrupt: (request) => request,
  clock: () => 1,
  facts: () => ({ resource_version: 3, permitted: true, within_budget: true }),
  key: 'ab'.repeat(32),
});
export async function callOnce() {
  const call = { callId: 'c', tool: 't', args: { post: 1 }, key: 'k' };
  return gated.call(call, { requester: 'agent', approver: 'alice', expiresIn: 3 });
}
export function answers(shown: ApprovalRequest): [Answer, Answer, string | undefined] {
  return [approve(shown, 'alice', 9), deny(shown, 'alice', 9), shown.calls[0].args];
}

declare const RunStateClass: {
  fromString(agent: unknown, text: string): Promise<{
    getInterruptions(): Array<{ rawItem: unknown }>;
    approve(item: unknown): void;
    reject(item: unknown, options?: { message?: string }): void;
    toString(): string;
  }>;
};
const desk = new ApprovalDesk({ store, name: 'run-2', identity, clock: () => 2, RunState: RunStateClass });
export async function decideOnce(result: { interruptions: []; state: { toString(): string } }) {
  const request = await desk.suspend(result, { requester: 'w', approver: 'a', expiresIn: 5 });
  const id = request.calls[0].call_id;
  await desk.decide({}, decisions(request, [denyCall(request, id, 'alice', 10)]));
  const reject = rejectCall(request, id, 'alice', 10, 'not now');
  await desk.decide({}, decisions(request, [approveCall(request, id, 'alice', 10), reject]));
  // @ts-expect-error: a rejection without the message the model is given does not type-check.
  rejectCall(request, id, 'alice', 10);
  return desk.decide({}, decisions(request, []));
}
export async function executeOnce(callId: string): Promise<string> {
  const result = await desk.runTool({ callId, name: 'publish', arguments: '{"post":1}' }, tool);
  return result === null ? 'not dispatched' : JSON.stringify(result);
}

const hitlGate = new HitlGate({
  store,
  name: 'run-3',
  identity,
  clock: () => 3,
  interruptOn: { publish: true, ask: { allowedDecisions: ['respond'] } },
  tools: { publish: tool },
  requester: 'agent',
  approver: 'alice',
  expiresIn: 10,
});
export function resumeOnce(request: HitlRequest) {
  void hitlGate.middleware();
  const edit = { type: 'edit' as const, editedAction: { name: 'publish', args: { post: 2 } } };
  return hitlDecisions(request, [{ type: 'approve' }, edit, null], { approver: 'alice', expiresAt: 9 });
}

export function stopped(e: unknown): string | undefined {
  if (e instanceof Refused) return e.rejection.verdict;
  if (e instanceof Changed) return e.recorded.call_id;
  if (e instanceof Ended) return e.cause ?? e.phase;
  if (e instanceof Denied || e instanceof NotBuilt) return e.name;
  return undefined;
}

// The core's functions, typed.
export function planned(d: Driver): [Todo, number] {
  const { held, book } = d.load();
  const todo = driverPlan(held, book, 5, [], { resource_version: 0, permitted: true, within_budget: true });
  return [todo, RETRIES];
}
export function shown(todo: Todo): Request | undefined {
  if (todo.todo !== 'ask') return undefined;
  void driverApproval(todo.request, true, 'alice', 9);
  return todo.request;
}

// A rejection's evidence, read after narrowing on its name.
export function wonAt(refused: Rejected): Revision | undefined {
  const r = refused.rejection;
  if (r.rejection === 'already_applied') return r.to;
  // @ts-expect-error: `to` is evidence of already_applied and already_resumed only.
  if (r.rejection === 'stale_revision') return r.to;
  return undefined;
}

// @ts-expect-error: a call without its idempotency key does not type-check.
gated.call({ callId: 'c', tool: 't', args: {} }, { requester: 'a', approver: 'b', expiresIn: 1 });
