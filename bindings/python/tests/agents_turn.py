"""What the two agent workers share: the kernel's desk and the tool on a run's directory, and
the `start` step, which runs the turn until its approvals and suspends the kernel's run for
them."""

from __future__ import annotations

import json
import pathlib
import time
from typing import Any

from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message

from ledger import DedupingTool, Ledger
from resumable_kernel import agents_sdk
from resumable_kernel.driver import Driver, Store


def clock() -> int:
    return time.time_ns() // 1_000_000


def open_desk(dir: pathlib.Path, run: str, identity: dict) -> tuple[agents_sdk.ApprovalDesk, DedupingTool]:
    """The desk of run `run` on the store in `dir`, and the tool on the ledger beside it."""
    desk = agents_sdk.ApprovalDesk(Driver(Store(str(dir / "turns.db")), run, identity, clock=clock))
    return desk, DedupingTool(Ledger(dir / "tool.ledger"))


async def suspend_turn(desk: agents_sdk.ApprovalDesk, agent: Agent, prompt: str, dir: pathlib.Path,
                       context: Any = None) -> None:
    """Runs the turn until its approvals, suspends the kernel's run for them (alice decides
    within ten minutes), stores her request in `dir` and prints the calls suspended."""
    result = await Runner.run(agent, prompt, context=context)
    request = desk.suspend(result, requester="writer", approver="alice", expires_in=600_000)
    (dir / "request.json").write_text(json.dumps(request))
    print(json.dumps({"suspended": [c["call_id"] for c in request["request"]["calls"]]}))


def resumed(dir: pathlib.Path) -> tuple[dict, ScriptedModel, int]:
    """For a step after `start`: the stored request, a model that ends the turn, and now."""
    request = json.loads((dir / "request.json").read_text())
    return request, ScriptedModel([[assistant_message("done")]]), clock()
