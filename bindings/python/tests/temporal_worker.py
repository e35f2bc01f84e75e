"""A Temporal worker in its own process (so a test can SIGKILL it): the kernel's workflow, the
plain twin and the broken variant, with the activities over the SQLite ledger service.

    python temporal_worker.py ADDRESS TASK_QUEUE LEDGER [--trap FILE] [--role all|workflows|activities]
        [--delay-ms N] [--seed S]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import timedelta
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from resumable_kernel.temporal import KernelActivities, KernelRun  # noqa: E402
from temporal_service import LedgerService  # noqa: E402
from temporal_twin import BlindRun, PlainActivities, PlainApproval  # noqa: E402


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("address")
    ap.add_argument("task_queue")
    ap.add_argument("ledger")
    ap.add_argument("--trap")
    ap.add_argument("--role", default="all")
    ap.add_argument("--delay-ms", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    client = await Client.connect(a.address, identity="resumable-test-worker")
    service = LedgerService(a.ledger, trap=a.trap, delay_ms=a.delay_ms, seed=a.seed)
    workflows = [] if a.role == "activities" else [KernelRun, PlainApproval, BlindRun]
    activities = [] if a.role == "workflows" else (
        KernelActivities(service).all() + [PlainActivities(service).commit])
    with ThreadPoolExecutor(16) as pool:
        worker = Worker(client, task_queue=a.task_queue, workflows=workflows,
                        activities=activities, activity_executor=pool,
                        max_concurrent_activities=16,
                        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1))
        print("ready", flush=True)
        await worker.run()


if __name__ == "__main__":
    asyncio.run(main())
