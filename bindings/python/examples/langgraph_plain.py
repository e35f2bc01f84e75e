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
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from posts import Posts


class State(TypedDict, total=False):
    post: int
    result: str


def build(dir: str) -> CompiledStateGraph:
    """The app's graph, with its checkpoints and its posting service kept in ``dir``."""
    posts = Posts(os.path.join(dir, "posts.jsonl"))

    def publish(state: State) -> State:
        answer = interrupt({"tool": "publish", "args": {"post": state["post"]}})
        if not answer["approved"]:
            return {"result": "denied"}
        return {"result": posts.publish(state["post"])}

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
    answer = {"approved": approved, "by": approver}
    return app.invoke(Command(resume=answer), config)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as dir:
        app = build(dir)
        print("asks:", start(app, "thread-1", 42)["tool"])
        print("result:", decide(app, "thread-1", "alice", approved=True)["result"])
