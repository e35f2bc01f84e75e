"""A long run on Temporal: `KernelRun` continuing as new carries the run and its compacted
book, so the run's rules hold across it. A settled call proposed again after a continue-as-new
is refused as a reused call id (the book kept its id, not its outcome) and stops the run with
the kernel's verdict; a gated call after it still waits for its approver and refuses the
requester's own approval. Each call's commits are counted in the ledger, and the audit log the
workflows append to validates across them."""

from __future__ import annotations

import asyncio
import json
import pathlib
import subprocess
import time
import uuid
from typing import Any, Callable, Optional

import pytest

from temporal_harness import IDENTITY, Server, count, events, skip_without_temporalio

skip_without_temporalio()

from temporalio.client import Client, WorkflowUpdateFailedError  # noqa: E402
from temporalio.exceptions import ApplicationError  # noqa: E402

from resumable_kernel import _native  # noqa: E402
from resumable_kernel import driver as core  # noqa: E402
from resumable_kernel.temporal import Decision, KernelRun, RunInput  # noqa: E402
from temporal_service import LedgerService  # noqa: E402

KEY = "3c" * 32
CONTRACT = {"dedupes": True, "query_fences": False, "max_attempts": 3}


def call(call_id: str, approver: Optional[str] = None) -> dict[str, Any]:
    return core.proposal(call_id, "send_payment", {"to": "bob", "call": call_id}, key=call_id,
                         requester="agent", approver=approver, expires_in=60_000,
                         contract=CONTRACT)


def run_input(name: str, turns: list[list[dict[str, Any]]], log: pathlib.Path,
              every: int) -> tuple[RunInput, dict[str, str]]:
    identity = {"tenant": "acme", "session": name, "run": name, "definition": "payments@1"}
    return RunInput(name=name, identity=identity, turns=turns, key=KEY, audit_log=str(log),
                    continue_every=every), identity


async def start_long(server: Server, queue: str, tmp_path: pathlib.Path, prefix: str,
                     turns: Callable[[str], list[list[dict[str, Any]]]],
                     every: int) -> tuple[Client, str, Any, dict[str, str], pathlib.Path]:
    """A kernel run named after `prefix`, of the turns made from its name, continuing as new
    every `every` turns, its audit log written in `tmp_path`: the client, its name, its handle,
    its identity and its log."""
    client = await Client.connect(server.address, identity=IDENTITY)
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "run.log"
    inp, identity = run_input(name, turns(name), log, every=every)
    h = await client.start_workflow(KernelRun.run, inp, id=name, task_queue=queue)
    return client, name, h, identity, log


def commits(ledger: pathlib.Path, identity: dict[str, str], call_id: str) -> int:
    tool_key = _native.tool_key(json.dumps(identity), call_id)
    return len(LedgerService(str(ledger)).commits(tool_key))


def validate(resumable_bin: str, log: pathlib.Path, anchor: str, tmp_path: pathlib.Path) -> None:
    key = tmp_path / "audit.key"
    key.write_text(KEY + "\n")
    done = subprocess.run([resumable_bin, "validate", "--key-file", str(key), "--anchor",
                           anchor, str(log)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conforming" in done.stdout


def test_kernel_a_settled_call_proposed_after_continue_as_new_is_refused_as_reused(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        client, name, h, identity, log = await start_long(
            server, queue, tmp_path, "long", lambda n: [[call(f"{n}-{x}")] for x in "abca"], 2)
        a, b, c = (f"{name}-{x}" for x in "abc")
        result = await asyncio.wait_for(h.result(), 120)
        # The first workflow made a and b and continued as new; the next made c, and refused
        # a again by the kernel's rule, though its outcome was no longer carried.
        first = client.get_workflow_handle(name, run_id=h.result_run_id)
        assert count(await events(first), "WORKFLOW_EXECUTION_CONTINUED_AS_NEW") == 1
        assert result["outcomes_before"] == 2
        assert [o["outcome"] for o in result["outcomes"]] == ["result"]
        todo = result["todo"]
        assert todo["todo"] == "refused", todo
        assert todo["verdict"]["verdict"] == "call_id_reused", todo
        assert result["carried_bytes"] > 0
        assert [commits(ledger, identity, x) for x in (a, b, c)] == [1, 1, 1]
        validate(resumable_bin, log, result["anchor"], tmp_path)

    asyncio.run(go())


def test_kernel_a_gated_call_after_continue_as_new_waits_for_its_approver(
        server: Server, queue: str, ledger: pathlib.Path, resumable_bin: str,
        tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        client, name, h, identity, log = await start_long(
            server, queue, tmp_path, "gated",
            lambda n: [[call(f"{n}-{i}", approver="alice" if i == 3 else None)] for i in range(4)],
            every=1)
        calls = [f"{name}-{i}" for i in range(4)]
        latest = client.get_workflow_handle(name)
        deadline = time.monotonic() + 60
        while True:
            n = await latest.query(KernelRun.next)
            if n["todo"]["todo"] == "ask":
                break
            assert time.monotonic() < deadline, n
            await asyncio.sleep(0.1)
        request = n["request"]
        assert request["calls"][0]["call_id"] == calls[3]
        # The requester approving its own call is refused, after three continue-as-news as
        # before any.
        with pytest.raises(WorkflowUpdateFailedError) as e:
            await latest.execute_update(KernelRun.approve, Decision(
                request=request, approver="agent", expires_at=int(time.time() * 1000) + 60_000))
        assert isinstance(e.value.cause, ApplicationError)
        assert e.value.cause.type != "accepted"
        verdict = await latest.execute_update(KernelRun.approve, Decision(
            request=request, approver="alice", expires_at=int(time.time() * 1000) + 60_000))
        assert verdict["verdict"] == "accepted"
        result = await asyncio.wait_for(h.result(), 60)
        assert result["outcomes_before"] == 3
        assert [o["outcome"] for o in result["outcomes"]] == ["result"]
        assert result["todo"]["todo"] == "done"
        assert [commits(ledger, identity, x) for x in calls] == [1, 1, 1, 1]
        validate(resumable_bin, log, result["anchor"], tmp_path)

    asyncio.run(go())
