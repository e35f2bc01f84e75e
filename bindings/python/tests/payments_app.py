"""A payments app written from the package README alone: one LangGraph node sends a payment
behind an approval, then asks a second question ("notify the payee?") in the same node. The
tests drive it (test_payments_app.py) and the stateful property tests hunt it
(test_payments_machine.py)."""

from __future__ import annotations

import sqlite3
from typing import Any, Callable, Optional, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from resumable_kernel.driver import Driver, Store, Tool
from resumable_kernel.gate import ApprovalGate, Stopped

KEY = "5e" * 32
"""The audit key the app seals its logs with (a real app reads it from its secrets)."""


class Payment(TypedDict, total=False):
    call_id: str
    to: str
    amount: int
    status: str
    receipt: str
    notify: Any


class Clock:
    """The app's clock, in seconds; a test moves it."""

    def __init__(self, now: int = 1000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def run_name(thread_id: str) -> str:
    return f"payments:{thread_id}"


def build(store: Store, graph_db: str, tool: Tool, clock: Callable[[], int],
          gate_class: type[ApprovalGate] = ApprovalGate) -> Any:
    """The app's graph on a SQLite checkpointer at ``graph_db``."""

    def pay(state: Payment, config: RunnableConfig) -> Payment:
        thread = str(config["configurable"]["thread_id"])
        driver = Driver(store, run_name(thread),
                        {"tenant": "acme", "session": thread, "run": run_name(thread),
                         "definition": "payments@1"},
                        clock=clock, key=KEY)
        gate = gate_class(driver, tool)
        try:
            receipt = gate.call(state.get("call_id", "call-1"), "send_payment",
                                {"to": state["to"], "amount": state["amount"]},
                                requester="agent", approver="alice", expires_in=60)
        except Stopped as stopped:  # denied, expired, changed, busy: a clear result
            return {"status": stopped.reason}
        notify = interrupt({"question": "notify the payee?"})
        return {"status": "paid", "receipt": receipt, "notify": notify}

    g = StateGraph(Payment)
    g.add_node("pay", pay)
    g.add_edge(START, "pay")
    g.add_edge("pay", END)
    conn = sqlite3.connect(graph_db, check_same_thread=False)
    return g.compile(checkpointer=SqliteSaver(conn))


def interrupt_value(result: Any) -> Optional[Any]:
    """The value of the interrupt the graph paused on, if any."""
    pending = result.get("__interrupt__") if isinstance(result, dict) else None
    return pending[0].value if pending else None
