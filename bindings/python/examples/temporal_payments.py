"""A payment behind alice's approval, run by Temporal: the kernel's workflow
(resumable_kernel.temporal.KernelRun) on a worker, the payment service a SQLite file.

    python temporal_payments.py worker            # runs the worker until stopped
    python temporal_payments.py start pay-1       # starts run pay-1 and prints what alice is shown
    python temporal_payments.py approve pay-1 alice
    python temporal_payments.py result pay-1      # waits for the run and prints its outcome

TEMPORAL_ADDRESS (default 127.0.0.1:7233) and TEMPORAL_NAMESPACE (default "default") say which
Temporal to use; with TEMPORAL_API_KEY the connection is TLS with that key (Temporal Cloud).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from temporalio.client import Client
from temporalio.worker import Worker

from resumable_kernel import driver
from resumable_kernel.temporal import Decision, KernelActivities, KernelRun, RunInput

TASK_QUEUE = "payments"
AUDIT_KEY = "5e" * 32


class Payments:
    """The payment service: commits a tool key once (it dedupes), answers what it committed
    under a key, and the version of the account the payments draw on."""

    def __init__(self, path: str = "payments.db") -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS paid (tool_key TEXT PRIMARY KEY, "
                        "result TEXT NOT NULL)")

    def commit(self, tool_key: str, tool: str, args: Any) -> str:
        result = f"paid {args['amount']} to {args['to']}"
        self.db.execute("INSERT OR IGNORE INTO paid VALUES (?, ?)", (tool_key, result))
        return self.query(tool_key) or result

    def query(self, tool_key: str) -> Optional[str]:
        row = self.db.execute("SELECT result FROM paid WHERE tool_key = ?",
                              (tool_key,)).fetchone()
        return None if row is None else str(row[0])

    def resource_version(self) -> int:
        return 0


async def connect() -> Client:
    api_key = os.environ.get("TEMPORAL_API_KEY")
    return await Client.connect(os.environ.get("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
                                namespace=os.environ.get("TEMPORAL_NAMESPACE", "default"),
                                api_key=api_key, tls=api_key is not None)


async def main(command: str, *args: str) -> None:
    client = await connect()
    if command == "worker":
        with ThreadPoolExecutor(4) as pool:
            await Worker(client, task_queue=TASK_QUEUE, workflows=[KernelRun],
                         activities=KernelActivities(Payments()).all(),
                         activity_executor=pool).run()
    elif command == "start":
        (run,) = args
        call = driver.proposal("call-1", "send_payment", {"to": "bob", "amount": 50},
                               key=f"{run}:call-1", requester="agent", approver="alice",
                               expires_in=3_600_000)  # ms: the workflow's clock is in ms
        identity = {"tenant": "acme", "session": run, "run": run, "definition": "payments@1"}
        h = await client.start_workflow(
            KernelRun.run, RunInput(name=run, identity=identity, turns=[[call]],
                                    key=AUDIT_KEY), id=run, task_queue=TASK_QUEUE)
        while (shown := await h.query(KernelRun.next))["request"] is None:
            await asyncio.sleep(0.1)
        print(shown["request"]["calls"][0]["args"])
    elif command == "approve":
        run, approver = args
        h = client.get_workflow_handle(run)
        shown = await h.query(KernelRun.next)
        expires_at = int(time.time() * 1000) + 600_000
        verdict = await h.execute_update("approve",
                                         Decision(shown["request"], approver, expires_at),
                                         result_type=dict)
        print(verdict["verdict"])
    elif command == "result":
        (run,) = args
        result = await client.get_workflow_handle(run).result()
        print(json.dumps(result["outcomes"]))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
    # A short-lived client process can abort while the interpreter finalizes the SDK's
    # threads (temporalio/sdk-python#300): once the command is done, exit without finalizing.
    sys.stdout.flush()
    os._exit(0)
