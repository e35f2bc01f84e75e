// A payment behind an approval in LangGraph.js, through @resumable/kernel/gate (README.md).
// Run by the package's tests (test/example.test.js).
import Database from 'better-sqlite3';
import { Annotation, Command, END, MemorySaver, START, StateGraph, interrupt } from '@langchain/langgraph';
import { ApprovalGate, Ended, SqliteDriverStore, approve } from '@resumable/kernel/gate';

const store = new SqliteDriverStore(new Database(':memory:'));
const paid = new Map(); // the payment service's own records, by tool key

// The tool protocol: commit at most once per tool key; query what a tool key committed.
const payments = {
  async commit(call) {
    if (!paid.has(call.tool_key)) paid.set(call.tool_key, `receipt-${paid.size + 1}`);
    console.log('paid', JSON.stringify(call.args));
    return paid.get(call.tool_key);
  },
  async query(call) {
    return paid.get(call.tool_key) ?? null;
  },
};

const State = Annotation.Root({
  to: Annotation(), amount: Annotation(), receipt: Annotation(), outcome: Annotation(),
});

async function pay(state, config) {
  const thread = config.configurable.thread_id;
  const gate = new ApprovalGate({
    store,
    name: thread, // one run per thread
    identity: { tenant: 'acme', session: thread, run: thread, definition: 'payments@1' },
    tool: payments,
    interrupt,
    clock: Date.now, // milliseconds: every expiry below is too
    facts: () => ({ resource_version: 1, permitted: true, within_budget: true }),
    key: 'a1'.repeat(32), // the audit key (keep it secret; 64 hex digits)
  });
  try {
    const receipt = await gate.call(
      { callId: 'pay-1', tool: 'send_payment', args: { to: state.to, amount: state.amount },
        key: `${thread}:pay-1` },
      { requester: 'agent', approver: 'alice', expiresIn: 60_000 },
    );
    return { receipt };
  } catch (e) {
    if (e instanceof Ended) return { outcome: e.cause ?? e.phase }; // denied, expired: the end
    throw e;
  }
}

const graph = new StateGraph(State).addNode('pay', pay).addEdge(START, 'pay').addEdge('pay', END)
  .compile({ checkpointer: new MemorySaver() });
const config = { configurable: { thread_id: 'thread-1' } };

const paused = await graph.invoke({ to: 'bob', amount: 50 }, config);
const request = paused.__interrupt__[0].value;
// What alice is shown: the arguments themselves, beside the digest her approval binds.
console.log('approve?', request.calls[0].tool, request.calls[0].args, request.calls[0].args_digest);
const answer = approve(request, 'alice', Date.now() + 60_000);
const done = await graph.invoke(new Command({ resume: answer }), config);
console.log('receipt', done.receipt);
