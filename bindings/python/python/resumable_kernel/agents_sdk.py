"""Approvals of the OpenAI Agents SDK's ``needs_approval`` tools, driven by the driver core
(:mod:`resumable_kernel.driver`): glue only.

A turn that stops on tool approvals (``result.interruptions``) is planned as one batch (the
core's ``plan_turn``): one call per interruption, its arguments kept by the core. The SDK's
``RunState.to_json()`` is stored in the run's row (``extra``) in the same commit. Decisions
arrive one item at a time or together, possibly in another process: each list is fed to the
core (the SDK's words ``approve``, ``reject`` with the message the model is told, and the
seed's ``deny``), judged at the desk's clock against the request it names; only an accepted
one is applied to the SDK's state (``state.approve`` / ``state.reject``), in the same commit.
A denial fails the run (:class:`~resumable_kernel.gate.Ended`).

Once every call is decided the core hands out the approved calls; the tool body runs each
through :meth:`ApprovalDesk.run`, which calls the tool with the arguments the core kept (a
call whose arguments differ, or that was not handed out, never reaches the tool) and records
its answer. :meth:`ApprovalDesk.recover` reconciles calls left in flight by a crash through the
core's query path.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Mapping, Optional

from . import _native
from . import driver as core
from .driver import Driver, Json, Tool
from .gate import Changed, Ended, Waiting


class Refused(Exception):
    """The core refused the decision: ``kind`` and ``verdict`` say why; nothing changed but
    the audit log."""

    def __init__(self, verdict: Mapping[str, Any]) -> None:
        self.verdict: Json = dict(verdict)
        self.kind: str = str(verdict.get("verdict"))
        super().__init__(f"{self.kind}: {verdict.get('message')}")


def _decision(shown: Mapping[str, Any], call_id: str, approver: str, expires_at: int,
              word: Mapping[str, Any]) -> Json:
    return {"request": shown["request"], "approver": approver, "expires_at": expires_at,
            "decisions": [{"call_id": call_id, "decision": dict(word)}]}


def approve(shown: Mapping[str, Any], call_id: str, approver: str, expires_at: int) -> Json:
    """An approval of one call of the batch ``shown`` (what :meth:`ApprovalDesk.suspend`
    returned). The SDK's ``state.approve``."""
    return _decision(shown, call_id, approver, expires_at, {"type": "approve"})


def reject(shown: Mapping[str, Any], call_id: str, approver: str, expires_at: int,
           message: str) -> Json:
    """A rejection of one call: it never runs, the model is told ``message`` and the run goes
    on. The SDK's ``state.reject(item, rejection_message=message)``."""
    return _decision(shown, call_id, approver, expires_at,
                     {"type": "reject", "message": message})


def deny(shown: Mapping[str, Any], call_id: str, approver: str, expires_at: int) -> Json:
    """A person's "stop the run" on one call: the run fails and no call of the batch runs."""
    return _decision(shown, call_id, approver, expires_at, {"type": "deny"})


def together(*decisions: Mapping[str, Any]) -> Json:
    """Several decisions on calls of one batch, by one approver, given at once."""
    if not decisions:
        raise ValueError("no decision")
    first = decisions[0]
    return dict(first, decisions=[d for ds in decisions for d in ds["decisions"]],
                expires_at=min(d["expires_at"] for d in decisions))


class ApprovalDesk:
    """One agent run's approvals, decided by the core (``driver``: its store, clock, facts)."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self._lock = threading.Lock()

    def extra(self) -> Json:
        """What the desk keeps in the run's row: the SDK's state, the turn's proposals and the
        calls the core handed out."""
        text = self.driver.row().extra
        return dict(json.loads(text)) if text else {"state": None, "proposals": [],
                                                    "tool_calls": []}

    def suspend(self, result: Any, requester: str, approver: str, expires_in: int) -> Json:
        """Suspends the run for the turn's interruptions, all in one batch, with the SDK's
        state in the same commit. Returns what the approver is shown: ``{"request"}`` (each
        call's arguments beside their digest, the checkpoint, ``expires_at``)."""
        proposals = [core.proposal(i.raw_item.call_id, i.name,
                                   json.loads(i.raw_item.arguments or "{}"),
                                   key=f"{self.driver.name}:{i.raw_item.call_id}",
                                   requester=requester, approver=approver,
                                   expires_in=expires_in)
                     for i in result.interruptions]
        state = result.to_state().to_json()
        keep = {"state": state, "proposals": proposals, "tool_calls": []}
        for _ in range(core.MAX_ROUNDS):
            todo = self.driver.plan(proposals, turn=True)
            if todo["todo"] == "feed":
                refused = core.rejected(self.driver.feed(todo, extra=lambda out: json.dumps(
                    keep if core.rejected(out) is None else self.extra())))
                if refused is not None:
                    raise Refused(refused)
            elif todo["todo"] == "ask":
                return {"request": todo["request"]}
            elif todo["todo"] == "changed":
                raise Changed(todo)
            elif todo["todo"] == "ended":
                raise Ended(todo)
            else:
                raise Waiting(todo)
        raise RuntimeError(f"run {self.driver.name}: the turn did not suspend")

    async def decide(self, agent: Any, decision: Mapping[str, Any]) -> Any:
        """Feeds an approver's decisions (:func:`approve`, :func:`reject`, :func:`deny`,
        :func:`together`) to the core first (:class:`Refused`: nothing changes); accepted ones
        are applied to the SDK's state in the same commit. Returns the state, ready to run,
        once every call of the batch is decided; ``None`` while some still await a decision.
        A denial raises :class:`~resumable_kernel.gate.Ended`: the run has failed."""
        from agents import RunState

        kept = self.extra()
        state = await RunState.from_json(agent, dict(kept["state"]))
        items = {getattr(i.raw_item, "call_id", None): i for i in state.get_interruptions()}
        for d in decision["decisions"]:
            word = d["decision"]
            item = items.get(d["call_id"])
            if item is None:
                continue  # the core refuses a decision on a call it did not put to the person
            if word.get("type") == "approve":
                state.approve(item)
            elif word.get("type") == "reject":
                state.reject(item, rejection_message=word.get("message", ""))
        applied = state.to_json()

        def row(out: Json) -> str:
            if core.rejected(out) is not None:
                return json.dumps(kept)
            return json.dumps(dict(kept, state=applied, tool_calls=out["tool_calls"]))

        with self._lock:
            out = self.driver.decide_calls(decision["request"], decision["decisions"],
                                           str(decision["approver"]),
                                           int(decision["expires_at"]), extra=row)
        refused = core.rejected(out)
        if refused is not None:
            raise Refused(refused)
        phase = out["held"]["run"]["phase"]["phase"]
        if phase == "failed":
            raise Ended({"phase": phase, "cause": out["held"]["run"]["phase"].get("cause")})
        return None if phase == "suspended" else state

    def run(self, call_id: str, args: Any, tool: Tool) -> str:
        """Runs the call ``call_id`` through ``tool`` if the core handed it out with these
        arguments, with the arguments the core kept, and records the answer; a recorded call
        answers its result again. Otherwise the tool is not reached and a refusal is
        returned as the tool's output."""
        record = self.driver.book()["calls"].get(call_id) or {}
        outcome = record.get("outcome")
        if outcome is not None and outcome.get("outcome") == "result":
            return str(json.loads(outcome["result"]))
        handed = next((tc for tc in self.extra()["tool_calls"] if tc["call_id"] == call_id),
                      None)
        if handed is None:
            return "refused: the kernel has not dispatched this call"
        if _native.digest(args) != handed["args_digest"]:
            return "refused: these are not the arguments the approval bound"
        result = tool.commit(handed["tool_key"], handed["tool"], json.loads(handed["args"]))
        with self._lock:
            self.driver.tool_result(handed, result)
        return result

    def recover(self, tool: Tool) -> Json:
        """After a crash with calls in flight: reconciles them through the core's query path
        (``tool.query``; a retry only as the tool's contract allows) and returns what the core
        says next."""
        return self.driver.advance(self.extra()["proposals"], tool, turn=True)
