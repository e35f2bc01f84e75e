import sqlite3
import time
from typing import Any, Optional, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from resumable_kernel import gate
from resumable_kernel.driver import Driver, Store


class Payments:
    """The payment service: commits a tool key once (it dedupes), and answers what it
    committed under a key."""

    def __init__(self) -> None:
        self.done: dict[str, str] = {}

    def commit(self, tool_key: str, tool: str, args: Any) -> str:
        if tool_key not in self.done:
            self.done[tool_key] = f"paid {args['amount']} to {args['to']}"
        return self.done[tool_key]

    def query(self, tool_key: str) -> Optional[str]:
        return self.done.get(tool_key)


class State(TypedDict, total=False):
    to: str
    amount: int
    status: str
    notify: str


def clock() -> int:
    return int(time.time())  # seconds: expires_in below is in the same unit


runs, service = Store("runs.db"), Payments()


def pay(state: State, config: RunnableConfig) -> State:
    thread = str(config["configurable"]["thread_id"])
    identity = {"tenant": "acme", "session": thread, "run": f"pay-{thread}",
                "definition": "payments@1"}
    driver = Driver(runs, f"pay-{thread}", identity, clock=clock, key="5e" * 32)
    try:
        receipt = gate.ApprovalGate(driver, service).call(
            "call-1", "send_payment", {"to": state["to"], "amount": state["amount"]},
            requester="agent", approver="alice", expires_in=3600)
    except gate.Stopped as stopped:  # denied, expired, changed, busy: a clear result
        return {"status": stopped.reason}
    notify = interrupt({"question": "notify the payee?"})
    return {"status": receipt, "notify": str(notify)}


graph = StateGraph(State)
graph.add_node("pay", pay)
graph.add_edge(START, "pay")
graph.add_edge("pay", END)
app = graph.compile(checkpointer=SqliteSaver(sqlite3.connect("graph.db",
                                                             check_same_thread=False)))
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}

shown = app.invoke({"to": "bob", "amount": 50}, config)["__interrupt__"][0].value
print(shown["request"]["calls"][0]["args"])  # what alice reads: {"amount":50,"to":"bob"}
answer = gate.approve(shown, "alice", expires_at=clock() + 600)
print(app.invoke(Command(resume=answer), config)["__interrupt__"][0].value)
print(app.invoke(Command(resume="yes"), config))
