// The Agents SDK desk as README.md documents it, compiled by test/types.test.js with
// `tsc --noEmit --strict` against the SDK's own types (its RunState and RunResult).
import { Agent, RunResult, RunState, run, tool } from '@openai/agents';
import { z } from 'zod';
import { ApprovalDesk, SqliteTurnStore, approveCall, decisions } from '@resumable/kernel/agents';
import type { SqliteDatabase, Tool } from '@resumable/kernel/driver';

/** An open better-sqlite3 database: `new Database('runs.db')`. */
declare const db: SqliteDatabase;

const payments: Tool = {
  // At most once per tool key; answers the first receipt again for it.
  commit: async (call) => `receipt for ${JSON.stringify(call.args)} under ${call.tool_key}`,
  // What was committed under the tool key, null when nothing was.
  query: async () => null,
};

const desk = new ApprovalDesk({
  store: new SqliteTurnStore(db),
  name: 'chat-1',
  identity: { tenant: 'acme', session: 'chat-1', run: 'chat-1', definition: 'payer@1' },
  RunState,
  clock: Date.now,
});

const sendPayment = tool({
  name: 'send_payment',
  description: 'Send a payment.',
  parameters: z.object({ to: z.string(), amount: z.number() }),
  needsApproval: true,
  execute: async (_args, _ctx, details) =>
    JSON.stringify(await desk.runTool(details?.toolCall, payments)),
});

type Payer = Agent<unknown, any>;

export async function pay(agent: Payer): Promise<string | undefined> {
  const first: RunResult<unknown, Payer> = await run(agent, 'pay bob 50');
  if (first.interruptions.length === 0) return first.finalOutput;
  const request = await desk.suspend(first, { requester: 'agent', approver: 'alice', expiresIn: 60_000 });
  // Shown to alice: request.calls[0].args ('{"amount":50,"to":"bob"}') beside its digest.
  const approval = approveCall(request, request.calls[0].call_id, 'alice', Date.now() + 60_000);
  const state: RunState<unknown, Payer> | null =
    await desk.decide(agent, decisions(request, [approval]));
  if (state === null) return undefined; // another call of the turn still awaits its decision
  const done = await run(agent, state);
  return done.finalOutput;
}

export const agent = new Agent({ name: 'payer', tools: [sendPayment] });
