"""Plain Temporal's approval pattern, as its samples write it: a signal sets the decision, the
workflow waits on it with ``wait_condition``, then runs the activity. Nothing binds the
decision to a call, its arguments, its requester or a time: the tests show what that lets in.

``BlindRun`` is the kernel's workflow broken on purpose: it retries the tool's activity blindly
whatever the tool's contract (what the torture must catch); ``ChangedRun`` a nondeterministic
change to it (what the replay gate must catch)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Optional

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from resumable_kernel.temporal import KernelRun, RunInput


class PlainActivities:
    def __init__(self, service: Any) -> None:
        self.service = service

    @activity.defn(name="plain.commit")
    def commit(self, call: dict[str, Any]) -> str:
        return str(self.service.commit(call["key"], call["tool"], call["args"]))


@workflow.defn(name="plain.Approval")
class PlainApproval:
    def __init__(self) -> None:
        self.decision: Optional[dict[str, Any]] = None

    @workflow.signal
    def decide(self, decision: dict[str, Any]) -> None:
        self.decision = decision  # the sample's `self.approved = True`, with who said it

    @workflow.query
    def waiting(self) -> bool:
        return self.decision is None

    @workflow.run
    async def run(self, inp: dict[str, Any]) -> list[dict[str, Any]]:
        taken = []
        for call in inp["calls"]:
            await workflow.wait_condition(lambda: self.decision is not None)
            decision, self.decision = dict(self.decision or {}), None
            taken.append(decision)
            if decision.get("approve"):
                await workflow.execute_activity(
                    "plain.commit", call, start_to_close_timeout=timedelta(seconds=2),
                    retry_policy=RetryPolicy(maximum_attempts=3))
        return taken


@workflow.defn(name="broken.BlindRun")
class BlindRun(KernelRun):
    """Every tool's activity retried by Temporal under the same key, as if every tool deduped."""

    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        super().__init__(inp)

    @workflow.run
    async def run(self, inp: RunInput) -> dict[str, Any]:
        return await super().run(inp)

    def _contract(self, call_id: str, proposals: Any) -> Any:
        return {"dedupes": True, "max_attempts": 5}


@workflow.defn(name="resumable.KernelRun", sandboxed=True)
class ChangedRun(KernelRun):
    """The kernel's workflow with one change a running workflow cannot take (it waits on a
    timer before anything else): what the replay gate must refuse. Never registered with a
    worker."""

    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        super().__init__(inp)

    @workflow.run
    async def run(self, inp: RunInput) -> dict[str, Any]:
        await workflow.sleep(timedelta(milliseconds=1))
        return await super().run(inp)
