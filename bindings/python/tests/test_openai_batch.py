"""Inside the OpenAI Agents SDK (offline, the SDK's ScriptedModel answering one turn with two
parallel tool calls): the turn's interruptions are ONE kernel batch (spec 5.5), decided one at
a time or together, in new processes too; approve and reject map as spec/frameworks.md says
(a rejection goes back to the model and the run goes on); the SDK runs the approved tools only
once every call is decided; a decision the kernel refuses changes neither the kernel's run nor
the SDK's state."""

from __future__ import annotations

import asyncio
import itertools
import json
import pathlib
import subprocess
import sys

import pytest
from agents import Runner
from agents.testing import assistant_message, function_call

import resumable_kernel as rk
from ledger import Ledger
from resumable_kernel import agents_sdk, gate
from resumable_kernel.driver import Driver, Store
from test_openai_agents import Scene, plain_turn

WORKER = pathlib.Path(__file__).with_name("agents_batch_worker.py")


def worker(step: str, dir: pathlib.Path, call_id: str = "") -> dict:
    p = subprocess.run([sys.executable, str(WORKER), step, str(dir), call_id],
                       capture_output=True, text=True, cwd=WORKER.parent, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def outputs(result) -> dict:
    return {i["call_id"]: i["output"] for i in result.to_input_list()
            if isinstance(i, dict) and i.get("type") == "function_call_output"}


def two_calls(s: Scene, first: int = 1, second: int = 2, prefix: str = "c") -> dict:
    agent = s.agent([function_call("publish", {"post": first}, call_id=f"{prefix}{first}"),
                     function_call("publish", {"post": second}, call_id=f"{prefix}{second}")])
    result = asyncio.run(Runner.run(agent, "publish two"))
    assert len(result.interruptions) == 2
    return s.desk.suspend(result, requester="writer", approver="alice", expires_in=1000)


def decide(s: Scene, decision: dict):
    """Feeds the decision; once every call is decided, runs the turn to its end."""
    agent = s.agent([assistant_message("done")])
    state = asyncio.run(s.desk.decide(agent, decision))
    return None if state is None else asyncio.run(Runner.run(agent, state))


def test_kernel_two_calls_one_batch_decided_one_by_one_in_new_processes(tmp_path) -> None:
    assert worker("start", tmp_path) == {"suspended": ["call_1", "call_2"]}
    row = Store(str(tmp_path / "turns.db")).load("run-2")
    assert row is not None
    held = json.loads(row.held)
    # One suspension: one revision, one checkpoint, one batch of two calls awaiting.
    assert held["run"]["revision"] == 1 and held["checkpoint"]["revision"] == 1
    assert held["run"]["phase"]["reason"]["reason"] == "pending_batch"
    assert [s["state"] for s in held["run"]["batch"]["slots"]] == ["awaiting", "awaiting"]
    ledger = Ledger(tmp_path / "tool.ledger")
    # The first decision, in its own process: the other call still awaits, nothing runs.
    assert worker("approve", tmp_path, "call_1") == {"awaiting": ["call_2"]}
    assert ledger.commits() == 0
    # The second, in another: every call is decided, the approved one runs, once, and the
    # model is handed the rejection for the other and goes on.
    final = worker("reject", tmp_path, "call_2")
    assert final["final"] == "done"
    assert final["outputs"]["call_2"] == "not call_2, thanks"
    assert final["outputs"]["call_1"] == "publish done #1"
    assert [e["args"]["post"] for e in ledger.entries()] == [1]
    row = Store(str(tmp_path / "turns.db")).load("run-2")
    assert row is not None
    slots = json.loads(row.held)["run"]["batch"]["slots"]
    assert [s["state"] for s in slots] == ["committed", "rejected"]
    # A second decision for a decided call: the same one sent again (a second tab) is already
    # applied, another one lost; nothing runs again.
    assert worker("again", tmp_path, "approve-call_1") == {"refused": "already_applied"}
    assert worker("reject", tmp_path, "call_1") == {"refused": "already_resumed"}
    assert ledger.commits() == 1


def test_kernel_decisions_given_together_are_one_resume(tmp_path) -> None:
    s = Scene(tmp_path)
    request = two_calls(s)
    now = s.clock()
    both = agents_sdk.together(
        agents_sdk.reject(request, "c1", "alice", now + 100, "not this one"),
        agents_sdk.approve(request, "c2", "alice", now + 100))
    before = s.desk.driver.held()["run"]["revision"]
    result = decide(s, both)
    assert result is not None and result.final_output == "done"
    assert outputs(result) == {"c1": "not this one", "c2": "publish done #1"}
    assert [e["args"]["post"] for e in s.ledger.entries()] == [2]
    run = s.desk.driver.held()["run"]
    # One resume for both decisions, then the tool's result.
    assert run["revision"] == before + 2
    slots = run["batch"]["slots"]
    assert [sl["state"] for sl in slots] == ["rejected", "committed"]
    assert slots[0]["reason"] == rk.digest("not this one")
    assert all(sl["decided"][1] == before + 1 for sl in slots)


def test_kernel_the_sdk_runs_no_tool_before_every_call_is_decided(tmp_path) -> None:
    s = Scene(tmp_path)
    request = two_calls(s)
    now = s.clock()
    agent = s.agent([assistant_message("done")])
    assert asyncio.run(s.desk.decide(
        agent, agents_sdk.approve(request, "c1", "alice", now + 100))) is None
    # An application that runs the stored SDK state anyway: the approved tool asks the
    # kernel, which has dispatched nothing yet, so the tool refuses and commits nothing.
    from agents import RunState

    stored_state = s.desk.extra()["state"]
    assert stored_state is not None
    state = asyncio.run(RunState.from_json(agent, dict(stored_state)))
    result = asyncio.run(Runner.run(agent, state))
    assert s.ledger.commits() == 0
    assert outputs(result) == {"c1": "refused: the kernel has not dispatched this call"}
    assert [i.raw_item.call_id for i in result.interruptions] == ["c2"]
    assert s.desk.driver.held()["run"]["phase"]["reason"]["reason"] == "pending_batch"


def test_plain_the_sdk_runs_an_approved_call_while_its_sibling_awaits(tmp_path) -> None:
    ledger, agent, result = plain_turn(tmp_path, "publish two",
                                       [function_call("publish", {"post": 1}, call_id="c1"),
                                        function_call("publish", {"post": 2}, call_id="c2")],
                                       [assistant_message("done")])
    state = result.to_state()
    state.approve(result.interruptions[0])
    again = asyncio.run(Runner.run(agent, state))
    # Post 1 went out while the person had not yet looked at post 2.
    assert ledger.commits() == 1 and [i.raw_item.call_id for i in again.interruptions] == ["c2"]


def test_kernel_refuses_a_decision_for_another_batch_other_arguments_and_a_second_one(
    tmp_path, resumable_bin,
) -> None:
    s = Scene(tmp_path)
    first = two_calls(s)
    now = s.clock()
    done = decide(s, agents_sdk.together(
        agents_sdk.approve(first, "c1", "alice", now + 100),
        agents_sdk.approve(first, "c2", "alice", now + 100)))
    assert done is not None and s.ledger.commits() == 2
    second = two_calls(s, 3, 4)
    now = s.clock()
    stored = s.desk.driver.held()["run"], s.desk.extra()["state"]
    # A decision for an item of the first batch, put to the second batch's checkpoint.
    stray = agents_sdk.approve(first, "c1", "alice", now + 100)
    stray["request"] = dict(first["request"], checkpoint=second["request"]["checkpoint"])
    # The approval of the first batch replayed as it was.
    replayed = agents_sdk.approve(first, "c2", "alice", now + 100)
    # An approval of c3 replayed for other arguments than the agent proposed.
    other = agents_sdk.approve(second, "c3", "alice", now + 100)
    other["request"] = dict(second["request"], calls=[
        dict(c, args_digest=rk.digest({"post": 666})) for c in second["request"]["calls"]])
    for decision, kind, field in [(stray, "approval_mismatch", "call_id"),
                                  (replayed, "stale_revision", None),
                                  (other, "approval_mismatch", "args")]:
        with pytest.raises(agents_sdk.Refused) as refused:
            decide(s, decision)
        assert refused.value.kind == kind
        if field is not None:
            assert refused.value.verdict["rejection"]["field"] == field
    # Nothing changed: neither the kernel's run nor the SDK's stored state.
    assert (s.desk.driver.held()["run"], s.desk.extra()["state"]) == stored
    assert s.ledger.commits() == 2
    approve_c3 = agents_sdk.approve(second, "c3", "alice", now + 100)
    assert decide(s, approve_c3) is None
    with pytest.raises(agents_sdk.Refused) as refused:
        decide(s, approve_c3)
    assert refused.value.kind == "already_applied"
    with pytest.raises(agents_sdk.Refused) as refused:
        decide(s, agents_sdk.reject(second, "c3", "alice", now + 100, "no"))
    assert refused.value.kind == "already_resumed"
    result = decide(s, agents_sdk.approve(second, "c4", "alice", now + 100))
    assert result is not None and result.final_output == "done"
    # (The SDK runs a turn's tools concurrently: their order within a turn is not fixed.)
    assert sorted(e["args"]["post"] for e in s.ledger.entries()) == [1, 2, 3, 4]
    s.validate(resumable_bin)


def test_kernel_a_denial_fails_the_run_and_runs_no_call(tmp_path, resumable_bin) -> None:
    s = Scene(tmp_path)
    request = two_calls(s)
    now = s.clock()
    assert decide(s, agents_sdk.approve(request, "c1", "alice", now + 100)) is None
    with pytest.raises(gate.Ended):
        decide(s, agents_sdk.deny(request, "c2", "alice", now + 100))
    run = s.desk.driver.held()["run"]
    assert run["phase"]["phase"] == "failed" and s.ledger.commits() == 0
    s.validate(resumable_bin)


def test_more_calls_than_one_batch_holds_are_refused_by_name(tmp_path) -> None:
    s = Scene(tmp_path)
    n = rk.BATCH_CAPACITY + 1
    agent = s.agent([function_call("publish", {"post": i}, call_id=f"c{i}") for i in range(n)])
    result = asyncio.run(Runner.run(agent, "publish many"))
    assert len(result.interruptions) == n
    with pytest.raises(rk.ResumableError, match="one batch holds at most 8"):
        s.desk.suspend(result, requester="writer", approver="alice", expires_in=1000)
    assert s.desk.driver.held()["run"]["phase"]["phase"] == "running"


@pytest.mark.parametrize("committed", [False, True], ids=["not-committed", "answer-lost"])
def test_kernel_calls_left_in_flight_are_reconciled_through_the_query_path(
        tmp_path, committed, resumable_bin) -> None:
    from ledger import DedupingTool

    s = Scene(tmp_path)
    request = two_calls(s)
    now = s.clock()
    agent = s.agent([assistant_message("done")])
    state = asyncio.run(s.desk.decide(agent, agents_sdk.together(
        agents_sdk.approve(request, "c1", "alice", now + 100),
        agents_sdk.reject(request, "c2", "alice", now + 100, "no"))))
    assert state is not None
    tool = DedupingTool(s.ledger)
    if committed:  # the tool committed, and the process died before its answer was fed
        (handed,) = s.desk.extra()["tool_calls"]
        tool.commit(handed["tool_key"], handed["tool"], json.loads(handed["args"]))
    # A new process: nothing in flight is dispatched blindly; the core asks the tool's query.
    todo = s.desk.recover(tool)
    assert todo["todo"] == "done", todo
    assert s.ledger.commits() == 1
    calls = s.desk.driver.book()["calls"]
    assert calls["c1"]["outcome"]["outcome"] == "result"
    assert calls["c2"]["outcome"] == {"outcome": "rejected", "message": "no"}
    s.validate(resumable_bin)


def test_kernel_a_decision_delivered_after_the_batch_expired_ends_the_run(tmp_path,
                                                                          resumable_bin) -> None:
    s = Scene(tmp_path)
    request = two_calls(s)  # expires 1000 after it opened
    made = agents_sdk.together(agents_sdk.approve(request, "c1", "alice", 100_000),
                               agents_sdk.approve(request, "c2", "alice", 100_000))
    s.ticks = itertools.count(5000)  # delivered late; the decision's own stamp is not read
    with pytest.raises(gate.Ended) as ended:
        decide(s, made)
    assert ended.value.reason == "expired"
    assert s.desk.driver.held()["run"]["phase"]["phase"] == "failed"
    assert s.ledger.commits() == 0
    s.validate(resumable_bin)
