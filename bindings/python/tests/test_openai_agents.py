"""Inside the OpenAI Agents SDK (offline, with the SDK's own ScriptedModel): `needs_approval`
tools gated by the kernel. The interruptions of one turn are one kernel batch; the SDK's state
is stored in the same commit as the kernel's run; each decision goes through the kernel first
and may arrive in a new process; a decision the kernel refuses changes nothing. Plain-SDK
tests show what the SDK alone lets through, except for #4244 (an approval lost when the resumed
`Runner.run` is given a context), fixed in the SDK since 0.20.0: its SDK test asserts the fix on
the pinned release, its kernel twin the same flow through the desk. Batches of several calls:
test_openai_batch.py."""

from __future__ import annotations

import asyncio
import itertools
import json
import pathlib
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from agents import Agent, Runner, RunState, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

import resumable_kernel as rk
from ledger import DedupingTool, Ledger
from resumable_kernel import agents_sdk, gate
from resumable_kernel.driver import Driver, Store

set_tracing_disabled(True)
WORKER = pathlib.Path(__file__).with_name("agents_worker.py")
IDENTITY = {"tenant": "acme", "session": "chat-1", "run": "run-1", "definition": "writer@1"}
KEY = "a7" * 32


def worker(step: str, dir: pathlib.Path, approver: str = "alice", context: str = "none") -> dict:
    p = subprocess.run([sys.executable, str(WORKER), step, str(dir), approver, context],
                       capture_output=True, text=True, cwd=WORKER.parent, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_kernel_the_decision_arrives_in_a_new_process_and_is_honoured_once(tmp_path) -> None:
    assert worker("start", tmp_path) == {"suspended": ["call_42"]}
    # The kernel's run and the SDK's state were stored in one commit, in one row.
    row = Store(str(tmp_path / "turns.db")).load("run-1")
    assert row is not None and json.loads(row.extra)["state"] is not None
    assert json.loads(row.held)["run"]["phase"]["reason"]["reason"] == "pending_batch"
    assert "call_42" in json.dumps(json.loads(row.extra)["state"])
    # Each decision in a new process, after the first one ended.
    assert worker("approve", tmp_path, approver="writer") == {"refused": "self_approval"}
    assert Ledger(tmp_path / "tool.ledger").commits() == 0
    assert worker("approve", tmp_path) == {"final": "done"}
    assert worker("approve", tmp_path) == {"refused": "already_resumed"}
    assert Ledger(tmp_path / "tool.ledger").commits() == 1


# --- openai-agents-python #4244: an approval resumed with `Runner.run(..., context=...)` ------
# Up to openai-agents 0.19.4, a context given to the resumed `Runner.run` replaced the restored
# run context with a fresh one, and the approvals recorded on the restored one were lost: the
# run interrupted again and the tool never ran. Fixed in 0.20.0 (the restored context stays and
# only its application value is replaced). Checked against the pinned 0.24.0, where the plain
# SDK honours the approval: this pair's SDK half asserts the fix, so that a regression fails it,
# and cannot show the bug. With 0.19.4's code put back, both halves fail: the desk does not
# shield the tool from it (the kernel dispatches, the SDK then never runs the tool).


@dataclass
class Session:
    user: str


CONTEXTS = {"dict": lambda: {"user": "bob"}, "dataclass": lambda: Session("bob")}


@pytest.mark.parametrize("kind", sorted(CONTEXTS))
def test_sdk_4244_is_fixed_an_approval_resumed_with_a_context_is_honoured(kind) -> None:
    ran: list[Any] = []

    @function_tool(needs_approval=True)
    def publish(ctx: ToolContext, post: int) -> str:
        """Publish a post."""
        ran.append((post, ctx.context))
        return "published"

    def agent(*steps) -> Agent:
        return Agent(name="writer", model=ScriptedModel(list(steps)), tools=[publish])

    context = CONTEXTS[kind]()
    result = asyncio.run(Runner.run(agent([function_call("publish", {"post": 42}, call_id="c1")]),
                                    "publish", context=context))
    assert [i.raw_item.call_id for i in result.interruptions] == ["c1"] and ran == []
    # Stored as JSON text, restored in what could be another process, as the issue does it.
    text = json.dumps(result.to_state().to_json())
    restore = {} if kind == "dict" else {"context_deserializer": lambda d: Session(**d)}
    resumed_agent = agent([assistant_message("done")])
    state = asyncio.run(RunState.from_json(resumed_agent, json.loads(text), **restore))
    state.approve(state.get_interruptions()[0])
    resumed = asyncio.run(Runner.run(resumed_agent, state, context=context))
    assert resumed.interruptions == [] and resumed.final_output == "done"
    assert ran == [(42, context)]


@pytest.mark.parametrize("kind", sorted(CONTEXTS))
def test_kernel_4244_a_decision_resumed_with_a_context_is_honoured_once(tmp_path, kind) -> None:
    assert worker("start", tmp_path, context=kind) == {"suspended": ["call_42"]}
    refused = worker("approve", tmp_path, approver="writer", context=kind)
    assert refused == {"refused": "self_approval"}
    assert Ledger(tmp_path / "tool.ledger").commits() == 0
    # Both steps give `Runner.run` the application context; the tool runs once and sees it.
    done = worker("approve", tmp_path, context=kind)
    assert done == {"final": "done", "tool_saw": [{"type": type(CONTEXTS[kind]()).__name__,
                                                   "user": "bob"}]}
    assert worker("approve", tmp_path, context=kind) == {"refused": "already_resumed"}
    assert Ledger(tmp_path / "tool.ledger").commits() == 1


def plain_turn(tmp_path: pathlib.Path, prompt: str, *turns: list) -> tuple[Ledger, Agent, Any]:
    """The SDK alone: an agent whose `needs_approval` tool publishes to a ledger in `tmp_path`,
    whose model answers with `turns` in order, run on `prompt` to its first interruptions: the
    ledger, the agent and the result."""
    ledger = Ledger(tmp_path / "tool.ledger")

    @function_tool(needs_approval=True)
    def publish(post: int) -> str:
        """Publish a post."""
        ledger.append({"tool": "publish", "post": post})
        return "published"

    agent = Agent(name="writer", model=ScriptedModel(list(turns)), tools=[publish])
    return ledger, agent, asyncio.run(Runner.run(agent, prompt))


class Scene:
    """An agent whose publish tool needs approval, the kernel's desk, and a ledger."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.ledger = Ledger(tmp_path / "tool.ledger")
        self.ticks = itertools.count(1)
        self.desk = agents_sdk.ApprovalDesk(Driver(Store(str(tmp_path / "turns.db")), "run-1",
                                                   IDENTITY, clock=self.clock, key=KEY))
        self.tmp = tmp_path
        tool, desk = DedupingTool(self.ledger), self.desk

        @function_tool(needs_approval=True)
        def publish(ctx: ToolContext, post: int) -> str:
            """Publish a post."""
            return desk.run(ctx.tool_call_id, {"post": post}, tool)

        self.publish = publish

    def clock(self) -> int:
        return next(self.ticks)

    def validate(self, resumable_bin: str) -> None:
        """The run's audit log passes `resumable validate --key-file K --anchor A`."""
        log, key = self.tmp / "run.log", self.tmp / "audit.key"
        log.write_text(self.desk.driver.log())
        key.write_text(KEY + "\n")
        done = subprocess.run([resumable_bin, "validate", "--key-file", str(key), "--anchor",
                               self.desk.driver.anchor(), str(log)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr

    def agent(self, *steps) -> Agent:
        return Agent(name="writer", model=ScriptedModel(list(steps)), tools=[self.publish])

    def turn(self, post: int, call_id: str) -> dict:
        agent = self.agent([function_call("publish", {"post": post}, call_id=call_id)])
        result = asyncio.run(Runner.run(agent, f"publish post {post}"))
        return self.desk.suspend(result, requester="writer", approver="alice", expires_in=1000)

    def decide(self, request: dict, approver: str = "alice", valid_for: int = 100):
        now = self.clock()
        (call_id,) = [c["call_id"] for c in request["request"]["calls"]]
        decision = agents_sdk.approve(request, call_id, approver, now + valid_for)
        agent = self.agent([assistant_message("done")])
        state = asyncio.run(self.desk.decide(agent, decision))
        return asyncio.run(Runner.run(agent, state)).final_output


def test_plain_anyone_approves_at_any_time_even_the_requester(tmp_path) -> None:
    ledger, agent, result = plain_turn(tmp_path, "publish",
                                       [function_call("publish", {"post": 42}, call_id="c1")],
                                       [assistant_message("done")])
    state = result.to_state()
    # The approval names no approver, no requester, no expiry, no revision: the requester's
    # own approval, given whenever, runs the tool.
    state.approve(result.interruptions[0])
    assert asyncio.run(Runner.run(agent, state)).final_output == "done"
    assert ledger.commits() == 1


def test_kernel_refuses_the_requester_an_expired_approval_and_other_arguments(tmp_path, resumable_bin) -> None:
    s = Scene(tmp_path)
    request = s.turn(42, "call_42")
    (asked,) = request["request"]["calls"]
    other_args = {"request": dict(request["request"], calls=[
        dict(asked, args_digest=rk.digest({"post": 666}))])}
    for kwargs, kind in [
        ({"approver": "writer"}, "self_approval"),
        ({"valid_for": -1}, "approval_expired"),
    ]:
        with pytest.raises(agents_sdk.Refused) as refused:
            s.decide(request, **kwargs)
        assert refused.value.kind == kind
    with pytest.raises(agents_sdk.Refused) as refused:
        s.decide(other_args)
    assert refused.value.kind == "approval_mismatch"
    assert s.ledger.commits() == 0
    assert s.desk.driver.held()["run"]["phase"]["phase"] == "suspended"
    assert s.decide(request) == "done" and s.ledger.commits() == 1
    s.validate(resumable_bin)


def test_plain_an_approval_given_once_covers_later_calls_with_other_arguments(tmp_path) -> None:
    ledger, agent, result = plain_turn(tmp_path, "publish",
                                       [function_call("publish", {"post": 42}, call_id="c1")],
                                       [function_call("publish", {"post": 666}, call_id="c2")],
                                       [assistant_message("done")])
    state = result.to_state()
    state.approve(result.interruptions[0], always_approve=True)
    assert asyncio.run(Runner.run(agent, state)).final_output == "done"
    # Post 666 was published on the approval given for post 42.
    assert [e["post"] for e in ledger.entries()] == [42, 666]


def test_kernel_an_approval_replayed_for_another_call_is_refused(tmp_path) -> None:
    s = Scene(tmp_path)
    first = s.turn(42, "call_42")
    assert s.decide(first) == "done"
    second = s.turn(666, "call_666")
    with pytest.raises(agents_sdk.Refused) as refused:
        s.decide(first)  # the approval given for post 42, replayed
    assert refused.value.kind == "stale_revision"
    assert [e["args"]["post"] for e in s.ledger.entries()] == [42]
    assert s.decide(second) == "done"
    assert [e["args"]["post"] for e in s.ledger.entries()] == [42, 666]


def test_kernel_a_call_id_reused_with_other_arguments_is_refused(tmp_path, resumable_bin) -> None:
    s = Scene(tmp_path)
    assert s.decide(s.turn(42, "call_42")) == "done"
    # A later turn whose model reuses the call id with other arguments: the SDK's new run
    # does not know the id, the kernel's history does.
    with pytest.raises(gate.Changed):
        s.turn(666, "call_42")
    assert s.ledger.commits() == 1
    s.validate(resumable_bin)
