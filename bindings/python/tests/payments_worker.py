"""A process of the payments app that is killed with SIGKILL: `python payments_worker.py DIR
THREAD NOW ANSWER_FILE`. It resumes THREAD's graph (SQLite checkpointer and run store in DIR)
with the answer in ANSWER_FILE at the app's time NOW; its tool writes the payment to the
ledger outside the process and the process kills itself at once, before the tool's answer
reaches the gate."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sys
from typing import Any

from langgraph.types import Command

from ledger import Ledger
from payments_app import Clock, build
from resumable_kernel.driver import Store
from test_payments_machine import LedgerTool


class KilledAfterCommit(LedgerTool):
    def commit(self, tool_key: str, tool: str, args: Any) -> str:
        result = super().commit(tool_key, tool, args)
        os.kill(os.getpid(), signal.SIGKILL)
        return result


def main(dir: pathlib.Path, thread: str, now: int, answer: pathlib.Path) -> None:
    clock = Clock(now)
    tool = KilledAfterCommit(Ledger(dir / "payments.ledger"), clock)
    graph = build(Store(str(dir / "runs.db")), str(dir / "graph.db"), tool, clock)
    graph.invoke(Command(resume=json.loads(answer.read_text())),
                 {"configurable": {"thread_id": thread}})


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), pathlib.Path(sys.argv[4]))
