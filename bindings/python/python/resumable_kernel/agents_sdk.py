"""Approvals of the OpenAI Agents SDK's ``needs_approval`` tools, decided by the kernel first.

A turn that stops on tool approvals (``result.interruptions``, one per call of the model's
turn) is suspended in the kernel as one batch (spec 5.5, BAT-1): one call per interruption, in
the order listed, each with its call id, the digest of its arguments, a key and the requester,
and one checkpoint for all of them. The kernel's run and the SDK's ``RunState.to_json()`` are
stored in one SQLite transaction. Decisions may arrive one at a time or together, in another
process, after a restart: each goes through the kernel first (bound to its call id, the
argument digest as proposed, the requester, the batch's checkpoint revision and an expiry,
BAT-2); only an accepted one is applied to the SDK's state (``state.approve``, or
``state.reject`` with the rejection message the model is given), in the same commit as the
kernel's run. The SDK's words map onto the kernel's as spec/frameworks.md says: approve is
``approve``, reject is ``reject`` (the run goes on and the model gets the rejection), and a
person's "stop the run" is ``deny`` (the run fails).

Only when every call of the batch is decided does :meth:`ApprovalDesk.decide` hand the state
back to run (BAT-3): the kernel has then dispatched the approved calls, and each tool runs
under its dispatch's tool key (:meth:`ApprovalDesk.dispatch_for`) and records its answer; a
tool the kernel did not dispatch refuses to run.

Refused by name (:class:`NotBuilt`): a turn with more than :data:`resumable_kernel.BATCH_CAPACITY`
interruptions (the SDK's state holds them all at once, and the desk does not split them into
consecutive batches).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import resumable_kernel as rk
from resumable_kernel.gate import Denied, Refused


class NotBuilt(Exception):
    """A shape the desk does not decide: more interruptions in one turn than one batch holds."""


@dataclass
class Turn:
    """What the store holds for one agent run: the kernel's run, its history and last
    checkpoint, and the SDK's run state, all written in one commit."""

    run: rk.Json
    history: rk.History
    checkpoint: Optional[rk.Json]
    state: Optional[Mapping[str, Any]]


class TurnStore:
    """Kernel runs and SDK run states in SQLite, one row per run, compare-and-set on the
    kernel's revision."""

    def __init__(self, path: str) -> None:
        self.path = path
        with self._db() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS turns (name TEXT PRIMARY KEY, revision INTEGER NOT "
                "NULL, run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT, state TEXT)"
            )

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None, timeout=30)

    def load(self, name: str) -> Optional[Turn]:
        with self._db() as db:
            row = db.execute(
                "SELECT run, history, checkpoint, state FROM turns WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            return None
        h = json.loads(row[1])
        opt = lambda text: None if text is None else json.loads(text)  # noqa: E731
        return Turn(json.loads(row[0]), rk.History(set(h["call_ids"]), h["keys"]), opt(row[2]),
                    opt(row[3]))

    def commit(self, name: str, before: Optional[int], turn: Turn) -> None:
        h = json.dumps({"call_ids": sorted(turn.history.call_ids), "keys": turn.history.keys})
        opt = lambda value: None if value is None else json.dumps(value)  # noqa: E731
        values = (turn.run["revision"], json.dumps(turn.run), h, opt(turn.checkpoint),
                  opt(turn.state))
        with self._db() as db:
            if before is None:
                db.execute("INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)", (name, *values))
                return
            cur = db.execute(
                "UPDATE turns SET revision = ?, run = ?, history = ?, checkpoint = ?, state = ? "
                "WHERE name = ? AND revision = ?",
                (*values, name, before),
            )
            if cur.rowcount != 1:
                raise RuntimeError(f"run {name}: revision {before} is no longer current")


def call_of(item: Any, run_name: str) -> rk.Json:
    """The kernel's call for an SDK approval item: its call id, the tool's name, the digest of
    its arguments (RFC 8785) and a key bound to the run and the call id."""
    raw = item.raw_item
    args = json.loads(raw.arguments or "{}")
    return {"call_id": raw.call_id, "tool": item.name, "args": rk.digest(args),
            "key": f"{run_name}:{raw.call_id}",
            "contract": {"dedupes": True, "query_fences": False, "max_attempts": 3}}


def _decision(request: Mapping[str, Any], call_id: str, approver: str, at: int,
              expires_at: int, verdict: rk.Json,
              message: Optional[str] = None) -> rk.Json:
    proposal = next((c for c in request["calls"] if c["call"]["call_id"] == call_id), None)
    if proposal is None:
        raise KeyError(f"the request holds no call {call_id}")
    approval = {"call_id": call_id, "args": proposal["call"]["args"],
                "requester": proposal["requester"], "approver": approver,
                "revision": request["checkpoint"]["revision"], "expires_at": expires_at}
    return {"at": at, "checkpoint": request["checkpoint"],
            "decisions": [{"approval": approval, **verdict}],
            "messages": {} if message is None else {call_id: message}}


def approve(request: Mapping[str, Any], call_id: str, approver: str, at: int,
            expires_at: int) -> rk.Json:
    """An approver's approval of one call of the batch ``request`` (what
    :meth:`ApprovalDesk.suspend` returned): bound to the call's id, its argument digest as
    proposed, its requester and the batch's checkpoint revision. The SDK's ``state.approve``."""
    return _decision(request, call_id, approver, at, expires_at, {"verdict": "approve"})


def reject(request: Mapping[str, Any], call_id: str, approver: str, at: int, expires_at: int,
           message: str) -> rk.Json:
    """A rejection of one call: the call never runs, ``message`` is what the model is told
    and the run goes on (kernel ``reject``, its reason the digest of ``message``). The SDK's
    ``state.reject(item, rejection_message=message)``."""
    return _decision(request, call_id, approver, at, expires_at,
                     {"verdict": "reject", "reason": rk.digest(message)}, message)


def deny(request: Mapping[str, Any], call_id: str, approver: str, at: int,
         expires_at: int) -> rk.Json:
    """A person's "stop the run" on one call (kernel ``deny``): the run fails and no call of
    the batch runs (APR-4)."""
    return _decision(request, call_id, approver, at, expires_at, {"verdict": "deny"})


def together(*decisions: Mapping[str, Any]) -> rk.Json:
    """Several decisions on calls of one batch given at once: one kernel resume."""
    if not decisions:
        raise ValueError("no decision")
    messages: dict[str, str] = {}
    for d in decisions:
        messages.update(d["messages"])
    return {"at": max(d["at"] for d in decisions), "checkpoint": decisions[0]["checkpoint"],
            "decisions": [c for d in decisions for c in d["decisions"]], "messages": messages}


class ApprovalDesk:
    """One agent run's approvals, decided by the kernel. ``clock`` gives each input's time."""

    def __init__(self, store: TurnStore, name: str, identity: Mapping[str, str],
                 clock: Callable[[], int], operator: str = "ops",
                 reconcile_window: int = 3600) -> None:
        self.store, self.name, self.clock = store, name, clock
        self._lock = threading.Lock()
        self.identity = dict(identity)
        if store.load(name) is None:
            policy = {"operator": operator, "reconcile_window": reconcile_window}
            run = rk.new_run(identity, policy, clock())
            store.commit(name, None, Turn(run, rk.History(), None, None))

    def turn(self) -> Turn:
        t = self.store.load(self.name)
        if t is None:
            raise RuntimeError(f"run {self.name} is not in the store")
        return t

    def _step(self, input: rk.Json, state: Optional[Mapping[str, Any]] = None) -> rk.Accepted:
        """One kernel step, committed with the SDK's state before anything else happens. The
        SDK may run a turn's tools in parallel: their results are stepped one at a time."""
        with self._lock:
            t = self.turn()
            v = rk.step(t.run, input)
            if isinstance(v, rk.Rejected):
                raise Refused(v)
            t.history.apply(v.effects)
            before = t.run["revision"]
            t.run, t.checkpoint = v.run, v.checkpoint or t.checkpoint
            if state is not None:
                t.state = state
            self.store.commit(self.name, before, t)
            return v

    def suspend(self, result: Any, requester: str, approver: str, expires_in: int) -> rk.Json:
        """Suspends the kernel's run for the turn's interruptions, all in one batch, and stores
        the SDK's state with it. Returns the request an approver decides on: the calls, in
        the SDK's order, and the batch's checkpoint."""
        items = result.interruptions
        if len(items) > rk.BATCH_CAPACITY:
            raise NotBuilt(f"{len(items)} approvals in one turn: one batch holds at most "
                           f"{rk.BATCH_CAPACITY}, and the desk does not split a turn")
        history = self.turn().history
        calls = []
        for item in items:
            call = call_of(item, self.name)
            calls.append({"call": call, "requester": requester, "prior": history.prior(call)})
        now = self.clock()
        v = self._step({"at": now, "kind": "suspend", "wait": {"wait": "batch", "calls": calls},
                        "expires_at": now + expires_in, "responsible": approver,
                        "resource_version": 0}, state=result.to_state().to_json())
        return {"calls": calls, "checkpoint": v.checkpoint}

    async def decide(self, agent: Any, decision: Mapping[str, Any]) -> Any:
        """Feeds an approver's decisions (:func:`approve`, :func:`reject`, :func:`deny`,
        :func:`together`) to the kernel first (``Refused`` when it refuses: nothing changes);
        accepted ones are applied to the SDK's state, stored in the same commit as the
        kernel's run. Returns the state, ready to run, once every call of the batch is
        decided; ``None`` while some still await a decision. A denial raises ``Denied`` after
        it is committed: the run has failed."""
        from agents import RunState

        t = self.turn()
        assert t.state is not None and t.checkpoint is not None
        messages = decision.get("messages", {})
        for d in decision["decisions"]:
            if d["verdict"] == "reject":
                message = messages.get(d["approval"]["call_id"])
                if message is None or rk.digest(message) != d["reason"]:
                    raise ValueError(f"the rejection of {d['approval']['call_id']} does not "
                                     "carry the message its reason is the digest of")
        cp = decision["checkpoint"]
        facts = {"resource_version": cp["resource_version"], "permitted": True,
                 "within_budget": True}
        input = {"at": decision["at"], "kind": "resume", "checkpoint": cp,
                 "decision": {"decision": "batch", "decisions": list(decision["decisions"])},
                 "facts": facts}
        # Checked before the SDK's state is touched: a refusal leaves both as they were.
        verdict = rk.step(t.run, input)
        if isinstance(verdict, rk.Rejected):
            raise Refused(verdict)
        state = await RunState.from_json(agent, dict(t.state))
        items = {i.raw_item.call_id: i for i in state.get_interruptions()}
        for d in decision["decisions"]:
            call_id = d["approval"]["call_id"]
            if d["verdict"] == "approve":
                state.approve(items[call_id])
            elif d["verdict"] == "reject":
                state.reject(items[call_id], rejection_message=messages[call_id])
        run = self._step(input, state=state.to_json()).run
        if run["phase"]["phase"] == "failed":
            raise Denied(f"run {self.name} failed: {run['phase']}")
        return None if run["phase"]["phase"] == "suspended" else state

    def dispatch_for(self, call_id: str) -> Optional[rk.Json]:
        """The dispatch the kernel committed for ``call_id`` (its tool key and attempt), if
        that call is in flight."""
        run = self.turn().run
        phase = run["phase"]
        flight = phase.get("in_flight") if phase["phase"] == "running" else None
        if flight is not None and flight["call"]["call"]["call_id"] == call_id:
            call, attempt = flight["call"]["call"], flight["attempt"]
        else:
            slots = (run.get("batch") or {}).get("slots", [])
            slot = next((s for s in slots if s["call"]["call"]["call_id"] == call_id
                         and s["state"] == "in_flight"), None)
            if slot is None:
                return None
            call, attempt = slot["call"]["call"], slot["attempt"]
        return {"call_id": call_id, "tool_key": rk.tool_key(self.identity, call["key"]),
                "attempt": attempt}

    def record(self, call_id: str, attempt: int, result: str) -> None:
        """Records the tool's result in the kernel's run."""
        self._step({"at": self.clock(), "kind": "tool_result", "call_id": call_id,
                    "attempt": attempt, "result": rk.digest(result)})
