// Compiled by test/types.test.js (tsc --noEmit --strict): the gate's and the desk's declarations
// accept their documented use and refuse a misuse.
import { ApprovalGate, SqliteRunStore, approve, deny, Refused, Denied } from '../gate';
import { ApprovalDesk, SqliteTurnStore, NotBuilt, callOf } from '../agents';
import type { ApprovalRequest, SqliteDatabase } from '../gate';

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
  await desk.decide({}, deny(request, 'alice', 10, 2));
  return desk.decide({}, approve(request, 'alice', 10, 2));
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

// @ts-expect-error: a call without its idempotency key does not type-check.
gated.call({ callId: 'c', tool: 't', args: {} }, { requester: 'a', approver: 'b', expiresIn: 1 });
