"""Inside LangChain 1.x (`create_agent` with `HumanInTheLoopMiddleware`, batched mode, and a
fake chat model from langchain_core whose one AIMessage carries several tool calls): the
turn's action requests are ONE kernel batch, each call's `contract.allowed` its tool's
`allowed_decisions`, and `Command(resume=...)` with approve / edit / reject / respond is fed
as one `decision: batch`. Plain-middleware tests show what the middleware alone lets through.
The tool's ledger is a file, outside the graph's state."""

from __future__ import annotations

import itertools
import json
import subprocess
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import resumable_kernel as rk
from ledger import DedupingTool, Ledger
from resumable_kernel import hitl
from resumable_kernel.driver import Driver, Store

IDENTITY = {"tenant": "acme", "session": "thread-1", "run": "run-1", "definition": "agent@1"}
REVIEW = {"publish": {"allowed_decisions": ["approve", "edit", "reject"]},
          "ask": {"allowed_decisions": ["approve", "reject", "respond"]}}


class ToolCallingModel(FakeMessagesListChatModel):
    """The fake chat model, taking the agent's tools as given (it answers from its list)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ToolCallingModel":
        return self


def turn(*calls: tuple[str, dict, str]) -> AIMessage:
    """One model turn proposing the given (tool, args, id) calls in parallel."""
    return AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"}
                                             for n, a, i in calls])


CFG = {"configurable": {"thread_id": "thread-1"}}
KEY = "4d" * 32


class Scene:
    """An agent with a publish tool (a ledger outside the graph) and an ask-the-user tool,
    gated by the kernel's middleware (``kernel=True``) or the plain one."""

    def __init__(self, tmp_path, responses: list[AIMessage], kernel: bool = True) -> None:
        self.ledger = Ledger(tmp_path / "tool.ledger")
        self.asked: list[str] = []
        self.ticks = itertools.count(1)
        deduping = DedupingTool(self.ledger)
        scene = self

        @tool
        def publish(post: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> str:
            """Publish a post."""
            if scene.middleware is None or not isinstance(scene.middleware, hitl.KernelHITL):
                scene.ledger.append({"tool": "publish", "args": {"post": post}})
                return "published"
            handed = scene.middleware._handed_out(tool_call_id)
            assert handed is not None, "the middleware let an undispatched call through"
            assert json.loads(handed["args"]) == {"post": post}
            return deduping.commit(handed["tool_key"], "publish", {"post": post})

        @tool
        def ask(question: str) -> str:
            """Ask the user."""
            scene.asked.append(question)
            return "no answer"

        if kernel:
            self.store = Store(str(tmp_path / "kernel.db"))
            self.driver = Driver(self.store, "run-1", IDENTITY, clock=self.clock, key=KEY)
            self.middleware: Any = hitl.KernelHITL(
                REVIEW, driver=self.driver, requester="agent", approver="alice",
                expires_in=1000, tool=deduping)
        else:
            self.middleware = HumanInTheLoopMiddleware(REVIEW)
        self.agent = create_agent(ToolCallingModel(responses=responses), [publish, ask],
                                  middleware=[self.middleware], checkpointer=InMemorySaver())

    def clock(self) -> int:
        return next(self.ticks)

    def run(self) -> rk.Json:
        return self.driver.held()["run"]

    def start(self, text: str = "go") -> dict:
        out = self.agent.invoke({"messages": [{"role": "user", "content": text}]}, CFG)
        (pause,) = out["__interrupt__"]
        return pause.value

    def resume(self, value: Any) -> dict:
        return self.agent.invoke(Command(resume=value), CFG)

    def answer(self, request: dict, *decisions: dict, valid_for: int = 100) -> dict:
        return hitl.answer(request, list(decisions), "alice", self.clock() + valid_for)

    def validate(self, resumable_bin: str, tmp_path) -> None:
        log, key = tmp_path / "run.log", tmp_path / "audit.key"
        log.write_text(self.driver.log())
        key.write_text(KEY + "\n")
        done = subprocess.run([resumable_bin, "validate", "--key-file", str(key), "--anchor",
                               self.driver.anchor(), str(log)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def tool_messages(out: dict) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}


def test_kernel_one_turn_is_one_batch_and_approve_edit_respond_are_one_resume(tmp_path, resumable_bin) -> None:
    s = Scene(tmp_path, [turn(("publish", {"post": 1}, "t1"), ("publish", {"post": 2}, "t2"),
                              ("ask", {"question": "which day?"}, "t3")),
                         AIMessage(content="done")])
    request = s.start()
    # The middleware's own request, with what binds an answer to this batch.
    assert [a["name"] for a in request["action_requests"]] == ["publish", "publish", "ask"]
    run = s.run()
    assert run["revision"] == 1 and run["phase"]["reason"]["reason"] == "pending_batch"
    assert request["request"]["checkpoint"]["revision"] == 1
    # The approver is shown the arguments themselves beside their digest.
    assert request["request"]["calls"][1]["args"] == '{"post":2}'
    assert request["request"]["calls"][1]["args_digest"] == rk.digest({"post": 2})
    slots = run["batch"]["slots"]
    assert [sl["state"] for sl in slots] == ["awaiting"] * 3
    # Each tool's allowed_decisions are its calls' contract.allowed (POL-1), with the
    # seed's deny, which the run's policy decides.
    # (A contract leaves out the tool's default: every verdict but respond.)
    assert [sl["call"]["call"]["contract"].get("allowed") for sl in slots] == [
        None, None, ["approve", "reject", "respond", "deny"]]
    assert s.ledger.commits() == 0
    out = s.resume(s.answer(request, {"type": "approve"},
                            {"type": "edit", "edited_action": {"name": "publish",
                                                               "args": {"post": 20}}},
                            {"type": "respond", "message": "Tuesday"}))
    assert out["messages"][-1].content == "done"
    # The approved call ran as proposed, the edited one with the approver's arguments, the
    # answered one never reached its tool.
    # (The agent runs a turn's tools in parallel: their order is not fixed.)
    assert sorted(e["args"]["post"] for e in s.ledger.entries()) == [1, 20]
    assert s.asked == []
    assert tool_messages(out)["t3"].content == "Tuesday"
    run = s.run()
    slots = run["batch"]["slots"]
    assert [sl["state"] for sl in slots] == ["committed", "committed", "responded"]
    # The edited call's key is bound to the digest (RFC 8785) of the edited arguments.
    assert slots[1]["call"]["call"]["args"] == rk.digest({"post": 20})
    assert slots[1]["proposed"] == rk.digest({"post": 2})
    # One resume for the three decisions: each recorded at the same revision.
    assert len({sl["decided"][1] for sl in slots}) == 1
    s.validate(resumable_bin, tmp_path)


def test_kernel_a_rejection_goes_back_to_the_model_and_the_run_goes_on(tmp_path) -> None:
    s = Scene(tmp_path, [turn(("publish", {"post": 1}, "t1"), ("publish", {"post": 2}, "t2")),
                         AIMessage(content="done")])
    request = s.start()
    out = s.resume(s.answer(request, {"type": "reject", "message": "not that one"},
                            {"type": "approve"}))
    assert out["messages"][-1].content == "done"
    assert "not that one" in tool_messages(out)["t1"].content
    assert [e["args"]["post"] for e in s.ledger.entries()] == [2]
    slots = s.run()["batch"]["slots"]
    assert [sl["state"] for sl in slots] == ["rejected", "committed"]
    assert slots[0]["reason"] == rk.digest("not that one")
    assert s.run()["phase"]["phase"] == "running"


def two_turns() -> list[AIMessage]:
    return [turn(("publish", {"post": 1}, "t1"), ("publish", {"post": 2}, "t2")),
            AIMessage(content="first done"),
            turn(("publish", {"post": 3}, "t3"), ("publish", {"post": 666}, "t4")),
            AIMessage(content="second done")]


def test_plain_a_decision_list_made_for_another_interrupt_is_accepted(tmp_path) -> None:
    s = Scene(tmp_path, two_turns(), kernel=False)
    s.start("first")
    first_answer = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    assert s.resume(first_answer)["messages"][-1].content == "first done"
    s.start("second")
    # The list approved for posts 1 and 2, delivered to the interrupt about posts 3 and 666:
    # the middleware matches decisions by position only, and post 666 goes out.
    assert s.resume(first_answer)["messages"][-1].content == "second done"
    assert sorted(e["args"]["post"] for e in s.ledger.entries()) == [1, 2, 3, 666]


def test_kernel_a_decision_list_made_for_another_interrupt_is_refused(tmp_path) -> None:
    s = Scene(tmp_path, two_turns())
    first = s.start("first")
    first_answer = s.answer(first, {"type": "approve"}, {"type": "approve"}, valid_for=10_000)
    assert s.resume(first_answer)["messages"][-1].content == "first done"
    second = s.start("second")
    before = s.run()
    out = s.resume(first_answer)
    # Refused: nothing committed, nothing dispatched, and the middleware asks again, saying why.
    (pause,) = out["__interrupt__"]
    assert pause.value["refused"]["verdict"] == "stale_revision"
    assert pause.value["request"]["checkpoint"] == second["request"]["checkpoint"]
    assert s.run() == before
    assert sorted(e["args"]["post"] for e in s.ledger.entries()) == [1, 2]
    # A list for this interrupt, bound to the calls as they were shown, is taken.
    out = s.resume(s.answer(second, {"type": "approve"}, {"type": "reject", "message": "no"}))
    assert out["messages"][-1].content == "second done"
    assert sorted(e["args"]["post"] for e in s.ledger.entries()) == [1, 2, 3]


@pytest.mark.parametrize("decisions, kind", [
    ([{"type": "respond", "message": "x"}, {"type": "approve"}], "decision_not_allowed"),
    ([{"type": "edit", "edited_action": {"name": "ask", "args": {"question": "?"}}},
      {"type": "approve"}], "not_a_decision"),
    ([{"type": "approve"}], "not_a_decision"),
])
def test_kernel_refuses_what_the_tool_does_not_allow_a_renamed_edit_and_a_short_list(
    tmp_path, decisions, kind
) -> None:
    s = Scene(tmp_path, [turn(("publish", {"post": 1}, "t1"), ("publish", {"post": 2}, "t2")),
                         AIMessage(content="done")])
    request = s.start()
    before = s.run()
    value = s.answer(request, *decisions)
    (pause,) = s.resume(value)["__interrupt__"]
    assert pause.value["refused"]["verdict"] == kind
    assert s.run() == before and s.ledger.commits() == 0


def test_kernel_the_per_call_mode_and_a_turn_larger_than_a_batch_are_refused_by_name(
    tmp_path,
) -> None:
    driver = Driver(Store(str(tmp_path / "k.db")), "r", IDENTITY, clock=lambda: 1)
    with pytest.raises(hitl.NotBuilt):
        hitl.KernelHITL(REVIEW, driver=driver, requester="agent", approver="alice",
                        expires_in=10, interrupt_mode="per_call")
    n = rk.BATCH_CAPACITY + 1
    s = Scene(tmp_path, [turn(*[("publish", {"post": i}, f"t{i}") for i in range(n)]),
                         AIMessage(content="done")])
    with pytest.raises(rk.ResumableError, match="one batch holds at most 8"):
        s.start()
    assert s.run()["phase"]["phase"] == "running" and s.ledger.commits() == 0


def test_kernel_a_deny_fails_the_run_and_runs_no_call_of_the_turn(tmp_path, resumable_bin) -> None:
    s = Scene(tmp_path, [turn(("publish", {"post": 1}, "t1"), ("publish", {"post": 2}, "t2")),
                         AIMessage(content="never")])
    request = s.start()
    out = s.resume(s.answer(request, {"type": "approve"}, {"type": "deny"}))
    assert "__interrupt__" not in out and out["messages"][-1].content != "never"
    assert s.run()["phase"]["phase"] == "failed" and s.ledger.commits() == 0
    s.validate(resumable_bin, tmp_path)


def test_kernel_a_late_list_is_refused_at_the_middlewares_clock(tmp_path, resumable_bin) -> None:
    s = Scene(tmp_path, [turn(("publish", {"post": 1}, "t1")), AIMessage(content="done")])
    request = s.start()
    value = s.answer(request, {"type": "approve"}, valid_for=100_000)
    s.ticks = itertools.count(5000)  # the batch expired at 1001
    out = s.resume(value)
    assert "__interrupt__" not in out
    assert s.run()["phase"]["phase"] == "failed" and s.ledger.commits() == 0
    s.validate(resumable_bin, tmp_path)


def resumes(log: str) -> list[str]:
    """The decision of each resume record of the audit log, in order."""
    records = [json.loads(line) for line in log.splitlines()]
    return [json.dumps(r["input"]["decision"], sort_keys=True) for r in records
            if r.get("input", {}).get("kind") == "resume"]


def test_kernel_a_value_that_is_no_decision_is_never_counted_and_no_list_is_fed_twice(
    tmp_path, resumable_bin
) -> None:
    s = Scene(tmp_path, [turn(("publish", {"post": 1}, "t1"), ("publish", {"post": 2}, "t2")),
                         AIMessage(content="done")])
    request = s.start()
    # The plain middleware's list, bound to nothing: no decision, fed and counted by nobody.
    (pause,) = s.resume({"decisions": [{"type": "approve"}, {"type": "approve"}]})["__interrupt__"]
    assert pause.value["refused"]["verdict"] == "not_a_decision"
    # A list the tool does not allow: refused by the kernel, and counted.
    refused = s.answer(request, {"type": "respond", "message": "x"}, {"type": "approve"})
    (pause,) = s.resume(refused)["__interrupt__"]
    assert pause.value["refused"]["verdict"] == "decision_not_allowed"
    # The node runs again with every value handed back: each list fed once, then its own.
    out = s.resume(s.answer(request, {"type": "approve"}, {"type": "reject", "message": "no"}))
    assert out["messages"][-1].content == "done"
    assert [e["args"]["post"] for e in s.ledger.entries()] == [1]
    fed = resumes(s.driver.log())
    assert len(fed) == 2 and len(set(fed)) == 2, fed
    assert [sl["state"] for sl in s.run()["batch"]["slots"]] == ["committed", "rejected"]
    s.validate(resumable_bin, tmp_path)


def test_kernel_a_list_on_the_checkpoint_decides_one_call_at_a_time(tmp_path, resumable_bin) -> None:
    s = Scene(tmp_path, [turn(("publish", {"post": 1}, "t1"), ("publish", {"post": 2}, "t2")),
                         AIMessage(content="done")])
    request = s.start()
    checkpoint = request["request"]["checkpoint"]
    # The other form the core reads (spec/frameworks.md): a null leaves a call for later.
    (pause,) = s.resume({"checkpoint": checkpoint, "decisions": [
        None, {"type": "edit", "edited_action": {"name": "publish", "args": {"post": 20}}}]}
    )["__interrupt__"]
    assert "refused" not in pause.value
    assert [sl["state"] for sl in s.run()["batch"]["slots"]] == ["awaiting", "approved"]
    assert s.ledger.commits() == 0
    out = s.resume({"checkpoint": checkpoint, "decisions": [{"type": "approve"}]})
    assert out["messages"][-1].content == "done"
    assert sorted(e["args"]["post"] for e in s.ledger.entries()) == [1, 20]
    assert len(resumes(s.driver.log())) == 2
    s.validate(resumable_bin, tmp_path)
