"""One process of an agent run whose `needs_approval` tool is gated by the kernel:
`python agents_worker.py STEP DIR [APPROVER [CONTEXT]]`, STEP `start` (run the turn until the
approval, suspend the kernel's run and store the SDK's state with it) or `approve` (read the
stored run and state, decide through the kernel as APPROVER, run the tool and finish the turn).
CONTEXT is the application context both steps give `Runner.run`: `none` (the default), `dict`
or `dataclass`; the tool reports the context it was given. The model is the SDK's own
ScriptedModel; nothing leaves the machine."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sys
from dataclasses import dataclass
from typing import Any, Optional

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, function_call
from agents.tool_context import ToolContext

from agents_turn import open_desk, resumed, suspend_turn
from ledger import DedupingTool
from resumable_kernel import agents_sdk

set_tracing_disabled(True)
IDENTITY = {"tenant": "acme", "session": "chat-1", "run": "run-1", "definition": "writer@1"}
DESK: Optional[agents_sdk.ApprovalDesk] = None
TOOL: Optional[DedupingTool] = None
SEEN: list[Any] = []


@dataclass
class Session:
    """An application context of the kind the SDK's docs show: who the run acts for."""

    user: str


CONTEXTS = {"none": lambda: None, "dict": lambda: {"user": "bob"},
            "dataclass": lambda: Session("bob")}


@function_tool(needs_approval=True)
def publish(ctx: ToolContext, post: int) -> str:
    """Publish a post."""
    assert DESK is not None and TOOL is not None
    SEEN.append(ctx.context)
    return DESK.run(ctx.tool_call_id, {"post": post}, TOOL)


def agent(model: ScriptedModel) -> Agent:
    return Agent(name="writer", model=model, tools=[publish])


def seen() -> list[Any]:
    """The application contexts the tool body was given, as JSON."""
    return [{"type": type(c).__name__, "user": c["user"] if isinstance(c, dict) else c.user}
            for c in SEEN if c is not None]


async def main(step: str, dir: pathlib.Path, approver: str, context: Any) -> None:
    global DESK, TOOL
    DESK, TOOL = open_desk(dir, "run-1", IDENTITY)
    if step == "start":
        model = ScriptedModel([[function_call("publish", {"post": 42}, call_id="call_42")]])
        await suspend_turn(DESK, agent(model), "publish post 42", dir, context=context)
        return
    request, model, now = resumed(dir)
    try:
        decision = agents_sdk.approve(request, "call_42", approver, now + 60_000)
        state = await DESK.decide(agent(model), decision)
    except agents_sdk.Refused as refused:
        print(json.dumps({"refused": refused.kind}))
        return
    result = await Runner.run(agent(model), state, context=context)
    out: dict[str, Any] = {"final": result.final_output}
    if result.interruptions:
        out["interrupted"] = [i.raw_item.call_id for i in result.interruptions]
    if context is not None:
        out["tool_saw"] = seen()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], pathlib.Path(sys.argv[2]),
                     sys.argv[3] if len(sys.argv) > 3 else "alice",
                     CONTEXTS[sys.argv[4] if len(sys.argv) > 4 else "none"]()))
