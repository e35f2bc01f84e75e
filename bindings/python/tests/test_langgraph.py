"""Inside LangGraph (a real StateGraph, the in-memory and the SQLite checkpointers): for each
pain of its tracker that a single-call approval meets, one test that shows it happen with
plain LangGraph (it asserts the bad outcome) and the same flow through the kernel's gate,
where the kernel refuses it or it cannot happen. The tool's ledger is a file, outside the
graph's state, so commits are counted as the world would see them."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from ledger import DedupingTool, Ledger
from resumable_kernel import digest, gate
from resumable_kernel.driver import Driver, Store, observed

IDENTITY = {"tenant": "acme", "session": "thread-1", "run": "run-1", "definition": "graph@1"}


@dataclass(frozen=True)
class Call:
    """A tool call the graph wants to make."""

    call_id: str
    tool: str
    args: dict[str, Any]
    key: str


POST = Call("call-1", "publish", {"post": 42}, "idem-post-42")
DELETE = Call("call-2", "delete", {"account": 7}, "idem-delete-7")


class State(TypedDict, total=False):
    out: list[str]


@pytest.fixture(params=["memory", "sqlite"])
def saver(request, tmp_path):
    if request.param == "memory":
        yield InMemorySaver()
    else:
        conn = sqlite3.connect(str(tmp_path / "graph.db"), check_same_thread=False)
        yield SqliteSaver(conn)
        conn.close()


def compile(node, saver):
    g = StateGraph(State)
    g.add_node("work", node)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return g.compile(checkpointer=saver)


CFG = {"configurable": {"thread_id": "thread-1"}}


def plain_commit(ledger: Ledger, call: Call, approval: Any) -> str:
    ledger.append({"tool": call.tool, "args": dict(call.args), "approval": repr(approval)})
    return f"{call.tool} done"


class Kernel:
    """The gate and its clock for one test."""

    def __init__(self, tmp_path) -> None:
        self.ledger = Ledger(tmp_path / "tool.ledger")
        self.store = Store(str(tmp_path / "kernel.db"))
        self.ticks = itertools.count(1)
        self.version = 7  # the resource's version, as the gate observes it now

    def clock(self) -> int:
        return next(self.ticks)

    def driver(self) -> Driver:
        return Driver(self.store, "run-1", IDENTITY, clock=self.clock,
                      facts=lambda: observed(self.version))

    def gate(self, driver: Driver | None = None) -> gate.ApprovalGate:
        driver = self.driver() if driver is None else driver
        return gate.ApprovalGate(driver, DedupingTool(self.ledger), interrupt)

    def start(self, saver, *calls: Call, driver: Driver | None = None) -> tuple[Any, dict]:
        """The graph whose one node makes `calls` through one gate (on `driver`, or on a new
        driver each time the node runs), run to its first interrupt: the graph and what the
        interrupt shows."""

        def work(state: State) -> State:
            g = self.gate(driver)
            return {"out": [self.call(g, c) for c in calls]}

        app = compile(work, saver)
        return app, request_of(app.invoke({"out": []}, CFG))

    def call(self, g: gate.ApprovalGate, call: Call) -> str:
        return g.call(call.call_id, call.tool, call.args, key=call.key, requester="agent",
                      approver="alice", expires_in=1000)

    def approve(self, shown: dict, approver: str = "alice", valid_for: int = 100) -> dict:
        return gate.approve(shown, approver, expires_at=self.clock() + valid_for)


def plain_start(work, saver) -> Any:
    """The graph of plain LangGraph whose one node is `work`, run to its first interrupt."""
    app = compile(work, saver)
    app.invoke({"out": []}, CFG)
    return app


def request_of(result: dict) -> dict:
    return result["__interrupt__"][0].value


def call_of(shown: dict) -> dict:
    return shown["request"]["calls"][0]


def refusal(shown: dict) -> str:
    return shown["refused"]["verdict"]


# --- #6792, #6208: tasks before an interrupt run again on resume --------------------------


def test_plain_a_commit_before_a_second_interrupt_runs_again_on_resume(saver, tmp_path) -> None:
    ledger = Ledger(tmp_path / "tool.ledger")

    def work(state: State) -> State:
        first = interrupt({"call": POST.tool})
        plain_commit(ledger, POST, first)
        second = interrupt({"call": DELETE.tool})
        plain_commit(ledger, DELETE, second)
        return {"out": ["both"]}

    app = plain_start(work, saver)
    app.invoke(Command(resume="approve"), CFG)
    app.invoke(Command(resume="approve"), CFG)
    # The node ran again from its start on the second resume: the post was published twice.
    assert ledger.commits("publish") == 2


def test_kernel_a_call_recorded_before_a_second_interrupt_is_not_made_again(saver, tmp_path) -> None:
    k = Kernel(tmp_path)
    app, shown = k.start(saver, POST, DELETE)
    r = app.invoke(Command(resume=k.approve(shown)), CFG)
    assert call_of(request_of(r))["call_id"] == "call-2"
    r = app.invoke(Command(resume=k.approve(request_of(r))), CFG)
    assert r["out"] == ["publish done #1", "delete done #2"]
    assert (k.ledger.commits("publish"), k.ledger.commits("delete")) == (1, 1)


# --- #8836: a resume whose ids match no pending interrupt ----------------------------------


def test_plain_a_resume_for_no_pending_interrupt_is_taken_as_the_answer(saver, tmp_path) -> None:
    ledger = Ledger(tmp_path / "tool.ledger")

    def work(state: State) -> State:
        answer = interrupt({"call": POST.tool})
        if answer:
            plain_commit(ledger, POST, answer)
        return {"out": ["done"]}

    app = plain_start(work, saver)
    app.invoke(Command(resume={"no-such-interrupt": "approve"}), CFG)
    # Nothing matched, nothing was refused: the map itself became the approval.
    assert ledger.commits("publish") == 1
    assert "no-such-interrupt" in ledger.entries()[0]["approval"]


def test_kernel_a_decision_for_another_call_is_refused(saver, tmp_path) -> None:
    k = Kernel(tmp_path)
    app, request = k.start(saver, POST)
    other = {"request": dict(request["request"],
                             calls=[dict(call_of(request), call_id="call-2")])}
    r = app.invoke(Command(resume=k.approve(other)), CFG)
    # Refused by the kernel, with its evidence; the graph asks again.
    assert request_of(r)["refused"]["rejection"] == {"rejection": "approval_mismatch",
                                                     "field": "call_id"}
    r = app.invoke(Command(resume={"no-such-interrupt": "approve"}), CFG)
    assert refusal(request_of(r)) == "not_a_decision"
    assert k.ledger.commits() == 0
    # The run still waits on its call; the right approval goes through, once.
    r = app.invoke(Command(resume=k.approve(request)), CFG)
    assert r["out"] == ["publish done #1"] and k.ledger.commits() == 1


# --- #8837: a consumed resume value delivered again to a later interrupt -------------------


def test_plain_an_approval_for_one_call_answers_the_next_interrupt(saver, tmp_path) -> None:
    ledger = Ledger(tmp_path / "tool.ledger")

    def work(state: State) -> State:
        for call in (POST, DELETE):
            if interrupt({"call": call.tool}) == "approve":
                plain_commit(ledger, call, "approve")
        return {"out": ["done"]}

    app = plain_start(work, saver)
    decision_about_the_post = Command(resume="approve")
    app.invoke(decision_about_the_post, CFG)
    app.invoke(decision_about_the_post, CFG)  # delivered again: no one approved the delete
    assert ledger.commits("delete") == 1


def test_kernel_an_approval_for_one_call_cannot_answer_the_next(saver, tmp_path) -> None:
    k = Kernel(tmp_path)
    app, shown = k.start(saver, POST, DELETE)
    decision_about_the_post = Command(resume=k.approve(shown))
    r = app.invoke(decision_about_the_post, CFG)
    assert call_of(request_of(r))["call_id"] == "call-2"
    r = app.invoke(decision_about_the_post, CFG)
    # The post's approval, delivered again, is taken by the post's gate (it is addressed to
    # the post): the delete's interrupt never receives it and still asks.
    assert call_of(request_of(r))["call_id"] == "call-2"
    assert "refused" not in request_of(r)
    assert (k.ledger.commits("publish"), k.ledger.commits("delete")) == (1, 0)


# --- #6663: the same interrupt resumed again from an old config, with other values ---------


def test_plain_resuming_again_from_an_old_config_commits_again(saver, tmp_path) -> None:
    ledger = Ledger(tmp_path / "tool.ledger")

    def work(state: State) -> State:
        answer = interrupt({"call": POST.tool})
        plain_commit(ledger, POST, answer)
        return {"out": [str(answer)]}

    app = plain_start(work, saver)
    old = app.get_state(CFG).config
    app.invoke(Command(resume="approve by alice"), CFG)
    app.invoke(Command(resume="approve by mallory"), old)
    assert ledger.commits("publish") == 2


def test_kernel_resuming_again_from_an_old_config_does_not_commit_again(saver, tmp_path) -> None:
    k = Kernel(tmp_path)
    app, request = k.start(saver, POST)
    old = app.get_state(CFG).config
    app.invoke(Command(resume=k.approve(request)), CFG)
    r = app.invoke(Command(resume=k.approve(request, approver="mallory")), old)
    # The call's result is recorded in the run: the node returns it, the tool is not called.
    assert r["out"] == ["publish done #1"] and k.ledger.commits() == 1
    # The other decision, fed to the driver directly, is refused with its evidence.
    out = k.driver().answer(request["request"], k.approve(request, approver="mallory"))
    assert out["verdict"]["verdict"] == "already_resumed"


# --- the approval's other bindings: requester, expiry, arguments ---------------------------


def test_kernel_refuses_self_approval_an_expired_approval_and_other_arguments(saver, tmp_path) -> None:
    k = Kernel(tmp_path)
    app, request = k.start(saver, POST)
    other_args = {"request": dict(request["request"], calls=[
        dict(call_of(request), args_digest=digest({"post": 43}))])}
    for decision, kind in [
        (k.approve(request, approver="agent"), "self_approval"),
        (k.approve(request, valid_for=-1), "approval_expired"),
        (k.approve(other_args), "approval_mismatch"),
    ]:
        r = app.invoke(Command(resume=decision), CFG)
        assert refusal(request_of(r)) == kind, request_of(r)["refused"]["message"]
    assert k.ledger.commits() == 0
    r = app.invoke(Command(resume=k.approve(request)), CFG)
    assert r["out"] == ["publish done #1"] and k.ledger.commits() == 1


def test_kernel_a_value_that_is_no_answer_is_never_counted_and_no_answer_is_fed_twice(
    saver, tmp_path, resumable_bin
) -> None:
    k = Kernel(tmp_path)
    driver = k.driver()
    app, request = k.start(saver, POST, driver=driver)
    # A resume that is no answer: fed and counted by nobody.
    r = app.invoke(Command(resume="approve"), CFG)
    assert refusal(request_of(r)) == "not_a_decision"
    # The requester approving its own call: refused by the kernel, and counted.
    r = app.invoke(Command(resume=k.approve(request, approver="agent")), CFG)
    assert refusal(request_of(r)) == "self_approval"
    # The node runs again with every value handed back: each answer fed once, then its own.
    r = app.invoke(Command(resume=k.approve(request)), CFG)
    assert r["out"] == ["publish done #1"] and k.ledger.commits() == 1
    records = [json.loads(line) for line in driver.log().splitlines()]
    fed = [json.dumps(r["input"]["decision"], sort_keys=True) for r in records
           if r.get("input", {}).get("kind") == "resume"]
    assert len(fed) == 2 and len(set(fed)) == 2, fed
    log = tmp_path / "run.log"
    log.write_text(driver.log())
    done = subprocess.run([resumable_bin, "validate", "--anchor", driver.anchor(), str(log)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# --- RES-3: the facts are the gate's, never the approver's checkpoint ------------------------


def test_kernel_a_resource_that_moved_since_the_suspension_is_noticed(saver, tmp_path) -> None:
    k = Kernel(tmp_path)
    app, request = k.start(saver, POST)
    assert request["request"]["checkpoint"]["resource_version"] == 7
    k.version = 8  # someone else changed the post while alice was reading
    # The approval carries the checkpoint alice saw (version 7); the gate observes 8.
    r = app.invoke(Command(resume=k.approve(request)), CFG)
    assert request_of(r)["refused"]["rejection"] == {"rejection": "resource_changed",
                                                     "checkpoint": 7, "current": 8}
    assert k.ledger.commits() == 0
