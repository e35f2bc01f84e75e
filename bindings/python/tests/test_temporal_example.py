"""The README's Temporal example (examples/temporal_payments.py) runs as written against a
real dev server: a worker, a run started, alice's approval sent from the `temporal` CLI (an
update), a second approval refused, the payment made once."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import uuid

from temporal_harness import IDENTITY, Server, skip_without_temporalio, temporal_cli

skip_without_temporalio()

from temporalio.client import Client  # noqa: E402

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "temporal_payments.py"


def test_the_example_pays_once_after_an_approval_sent_from_the_cli(
        server: Server, tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "TEMPORAL_ADDRESS": server.address}
    env.pop("TEMPORAL_API_KEY", None)

    def example(*args: str) -> str:
        done = subprocess.run([sys.executable, str(EXAMPLE), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    run = f"pay-{uuid.uuid4().hex[:8]}"
    worker = subprocess.Popen([sys.executable, str(EXAMPLE), "worker"], cwd=tmp_path, env=env)
    try:
        assert example("start", run).strip() == '{"amount":50,"to":"bob"}'

        async def shown() -> dict[str, object]:
            client = await Client.connect(server.address, identity=IDENTITY)
            return dict(await client.get_workflow_handle(run).query("next"))

        request = asyncio.run(shown())["request"]
        answer = {"request": request, "approver": "alice",
                  "expires_at": int(time.time() * 1000) + 600_000}
        cli = temporal_cli()
        assert cli is not None
        done = subprocess.run([cli, "workflow", "update", "execute", "--address",
                               server.address, "--workflow-id", run, "--name", "approve",
                               "--input", json.dumps(answer)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.dumps(json.loads(example("result", run))) == json.dumps(
            [{"outcome": "result", "result": '"paid 50 to bob"'}])
        # alice's approval sent again is refused (the run is over): the example fails.
        again = subprocess.run([sys.executable, str(EXAMPLE), "approve", run, "alice"],
                               cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=60)
        assert again.returncode != 0
        paid = subprocess.run([sys.executable, "-c", "import sqlite3; print(sqlite3.connect("
                               "'payments.db').execute('SELECT COUNT(*) FROM paid')"
                               ".fetchone()[0])"], cwd=tmp_path, capture_output=True, text=True)
        assert paid.stdout.strip() == "1"
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
