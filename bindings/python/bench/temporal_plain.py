"""The plain Temporal workflow the scale benchmark compares the kernel's with: the same calls
as activities on the same tool service, one after the other, continuing as new at the same
points, with nothing between them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import activity, workflow


class PlainCallActivities:
    def __init__(self, service: Any) -> None:
        self.service = service

    @activity.defn(name="plain.call")
    def call(self, call: dict[str, Any]) -> str:
        return str(self.service.commit(call["key"], call["tool"], call["args"]))


@workflow.defn(name="plain.Calls")
class PlainCalls:
    @workflow.run
    async def run(self, inp: dict[str, Any]) -> dict[str, Any]:
        i, results = int(inp["start"]), int(inp.get("results", 0))
        while i < inp["count"]:
            if inp["every"] and i - inp["start"] >= inp["every"]:
                workflow.continue_as_new({**inp, "start": i, "results": results})
            await workflow.execute_activity(
                "plain.call", {"key": f"{inp['prefix']}-{i}", "tool": inp["tool"],
                               "args": {"n": i}},
                start_to_close_timeout=timedelta(seconds=10))
            results += 1
            i += 1
        return {"calls": results}
