"""A LangGraph app that publishes a post once a person approves it: the node asks with
`interrupt()`, the approver answers with `Command(resume=...)`, LangGraph's SQLite checkpointer
keeps each thread's state, and the post goes out through a service outside the graph
(`posts.py`). `langgraph_plain.py` is the app as it is written with LangGraph alone;
`langgraph_adopted.py` is the same app with the approval decided by the kernel's gate
(`resumable_kernel.gate`). The package's tests run both (`tests/test_langgraph_adoption.py`), and
`diff -u langgraph_plain.py langgraph_adopted.py` is what adopting the gate costs."""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from posts import Posts
from resumable_kernel import gate
from resumable_kernel.driver import Driver, Store


class State(TypedDict, total=False):
    post: int
    result: str


def clock() -> int:
    return time.time_ns() // 1_000_000


class PostsTool:
    def __init__(self, posts: Posts) -> None:
        self.posts = posts

    def commit(self, tool_key: str, tool: str, args: Any) -> str:
        return self.posts.publish(args["post"], idempotency_key=tool_key)

    def query(self, tool_key: str) -> str | None:
        return self.posts.lookup(tool_key)


def build(dir: str) -> CompiledStateGraph:
    """The app's graph, with its checkpoints and its posting service kept in ``dir``."""
    posts = Posts(os.path.join(dir, "posts.jsonl"))
    runs = Store(os.path.join(dir, "kernel.db"))

    def publish(state: State, config: RunnableConfig) -> State:
        thread = str(config["configurable"]["thread_id"])
        identity = {"tenant": "acme", "session": thread, "run": thread, "definition": "publish@1"}
        g = gate.ApprovalGate(Driver(runs, thread, identity, clock=clock), PostsTool(posts))
        try:
            result = g.call(f"{thread}:publish", "publish", {"post": state["post"]}, key=thread,
                            requester="agent", approver="alice", expires_in=86_400_000)
        except gate.Ended as ended:
            return {"result": ended.reason}
        return {"result": result}

    graph = StateGraph(State)
    graph.add_node("publish", publish)
    graph.add_edge(START, "publish")
    graph.add_edge("publish", END)
    db = sqlite3.connect(os.path.join(dir, "graph.db"), check_same_thread=False)
    return graph.compile(checkpointer=SqliteSaver(db))


def start(app: CompiledStateGraph, thread: str, post: int) -> dict[str, Any]:
    """Runs a new thread until it asks for approval; returns what the approver is shown."""
    out = app.invoke({"post": post}, {"configurable": {"thread_id": thread}})
    return out["__interrupt__"][0].value


def decide(app: CompiledStateGraph, thread: str, approver: str,
           approved: bool) -> dict[str, Any]:
    """The approver's answer to the thread's pending approval; returns the graph's output."""
    config = {"configurable": {"thread_id": thread}}
    request = app.get_state(config).interrupts[0].value
    answer = (gate.approve if approved else gate.deny)(request, approver, clock() + 3_600_000)
    return app.invoke(Command(resume=answer), config)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as dir:
        app = build(dir)
        print("asks:", start(app, "thread-1", 42)["request"]["calls"][0]["tool"])
        print("result:", decide(app, "thread-1", "alice", approved=True)["result"])
