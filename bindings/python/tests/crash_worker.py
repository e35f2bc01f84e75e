"""One process of a graph run that may be killed with SIGKILL: `python crash_worker.py MODE
STEP DIR`. MODE is `plain` (the node commits to the tool itself) or `kernel` (through the
gate). STEP is `start` (run until the approval interrupt), `approve` (resume with the
approval), `restart` (go on from the graph's last checkpoint) or `resend` (plain: the approval
sent again). With CRASH=1 the process kills itself right after the tool committed, before
anything else is written; with CRASH=before (kernel mode), after the kernel's commit and
before the tool is reached. The graph's checkpointer is SQLite in DIR, the tool's ledger a
file in DIR."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sqlite3
import sys
import time
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from ledger import DedupingTool, Ledger
from resumable_kernel import gate
from resumable_kernel.driver import Driver, Store

IDENTITY = {"tenant": "acme", "session": "thread-1", "run": "run-1", "definition": "graph@1"}
POST = {"call_id": "call-1", "tool": "publish", "args": {"post": 42}, "key": "idem-post-42"}
CFG = {"configurable": {"thread_id": "thread-1"}}


class State(TypedDict, total=False):
    out: list[str]


def crash_now() -> None:
    if os.environ.get("CRASH") == "1":
        os.kill(os.getpid(), signal.SIGKILL)


class CrashingTool(DedupingTool):
    def commit(self, tool_key: str, tool: str, args: Any) -> str:
        if os.environ.get("CRASH") == "before":
            # After the kernel's commit, before the tool is reached.
            os.kill(os.getpid(), signal.SIGKILL)
        result = super().commit(tool_key, tool, args)
        crash_now()
        return result


def clock() -> int:
    return time.time_ns() // 1_000_000  # milliseconds


def main(mode: str, step: str, dir: pathlib.Path) -> None:
    ledger = Ledger(dir / "tool.ledger")
    store = Store(str(dir / "kernel.db"))

    def plain(state: State) -> State:
        answer = interrupt({"call": POST["tool"]})
        ledger.append({"tool": POST["tool"], "args": POST["args"], "approval": answer})
        crash_now()
        return {"out": [f"published with {answer}"]}

    def kernel(state: State) -> State:
        driver = Driver(store, "run-1", IDENTITY, clock=clock, reconcile_window=3_600_000)
        g = gate.ApprovalGate(driver, CrashingTool(ledger), interrupt)
        return {"out": [g.call(POST["call_id"], POST["tool"], POST["args"], key=POST["key"],
                               requester="agent", approver="alice", expires_in=10**9)]}

    conn = sqlite3.connect(str(dir / "graph.db"), check_same_thread=False)
    g = StateGraph(State)
    g.add_node("work", plain if mode == "plain" else kernel)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    app = g.compile(checkpointer=SqliteSaver(conn))
    if step == "start":
        r = app.invoke({"out": []}, CFG)
        (dir / "request.json").write_text(json.dumps(r["__interrupt__"][0].value))
    elif step == "approve":
        request = json.loads((dir / "request.json").read_text())
        decision = "approve" if mode == "plain" else gate.approve(request, "alice", clock() + 10**9)
        r = app.invoke(Command(resume=decision), CFG)
    elif step == "restart":
        r = app.invoke(None, CFG)
    else:  # "resend": the approver, seeing no result, sends the approval again
        r = app.invoke(Command(resume="approve"), CFG)
    print(json.dumps({"out": r.get("out"), "interrupted": "__interrupt__" in r}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]))
