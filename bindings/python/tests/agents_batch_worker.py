"""One process of an agent run whose model asks for two `needs_approval` calls in one turn,
gated by the kernel as one batch: `python agents_batch_worker.py STEP DIR [CALL_ID]`, STEP
`start` (run the turn until its approvals, suspend the kernel's run for the batch, store the
SDK's state with it), `approve` or `reject` (read the stored run and state and decide CALL_ID
through the kernel as alice; once every call is decided, run the approved tools and finish the
turn), `again` (send a decision made before, ARG naming it: `approve-call_1`). Prints one JSON
line. The model is the SDK's own ScriptedModel; nothing leaves the
machine."""

from __future__ import annotations

import asyncio
import json
import pathlib
import sys
from typing import Optional

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, function_call
from agents.tool_context import ToolContext

from agents_turn import open_desk, resumed, suspend_turn
from ledger import DedupingTool
from resumable_kernel import agents_sdk

set_tracing_disabled(True)
IDENTITY = {"tenant": "acme", "session": "chat-2", "run": "run-2", "definition": "writer@1"}
DESK: Optional[agents_sdk.ApprovalDesk] = None
TOOL: Optional[DedupingTool] = None


@function_tool(needs_approval=True)
def publish(ctx: ToolContext, post: int) -> str:
    """Publish a post."""
    assert DESK is not None and TOOL is not None
    return DESK.run(ctx.tool_call_id, {"post": post}, TOOL)


def agent(model: ScriptedModel) -> Agent:
    return Agent(name="writer", model=model, tools=[publish])


def outputs(items) -> dict:
    """What the model was handed for each call: the tool's result or the rejection."""
    return {i["call_id"]: i["output"] for i in items
            if isinstance(i, dict) and i.get("type") == "function_call_output"}


async def main(step: str, dir: pathlib.Path, call_id: str) -> None:
    global DESK, TOOL
    DESK, TOOL = open_desk(dir, "run-2", IDENTITY)
    if step == "start":
        model = ScriptedModel([[function_call("publish", {"post": 1}, call_id="call_1"),
                                function_call("publish", {"post": 2}, call_id="call_2")]])
        await suspend_turn(DESK, agent(model), "publish posts 1 and 2", dir)
        return
    request, model, now = resumed(dir)
    if step == "approve":
        decision = agents_sdk.approve(request, call_id, "alice", now + 60_000)
    elif step == "reject":
        decision = agents_sdk.reject(request, call_id, "alice", now + 60_000,
                                     f"not {call_id}, thanks")
    else:
        decision = json.loads((dir / f"{call_id}.json").read_text())
    (dir / f"{step}-{call_id}.json").write_text(json.dumps(decision))
    try:
        state = await DESK.decide(agent(model), decision)
    except agents_sdk.Refused as refused:
        print(json.dumps({"refused": refused.kind}))
        return
    if state is None:
        print(json.dumps({"awaiting": [s["call"]["call"]["call_id"]
                                       for s in DESK.driver.held()["run"]["batch"]["slots"]
                                       if s["state"] == "awaiting"]}))
        return
    result = await Runner.run(agent(model), state)
    print(json.dumps({"final": result.final_output, "outputs": outputs(result.to_input_list())}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], pathlib.Path(sys.argv[2]),
                     sys.argv[3] if len(sys.argv) > 3 else ""))
