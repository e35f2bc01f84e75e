"""Approvals of the OpenAI Agents SDK's ``needs_approval`` tools, decided by the kernel first.

A turn that stops on a tool approval (``result.interruptions``) is suspended in the kernel
for that call (its call id, the digest of its arguments, a key, the requester), and the
kernel's run and the SDK's ``RunState.to_json()`` are stored in one SQLite transaction. The
decision may arrive in another process, after a restart: it goes through the kernel first (an
approval bound to the call id, the argument digest, the requester, the checkpoint's revision
and an expiry); only an accepted one is applied to the SDK's state (``state.approve``), in the
same commit as the kernel's run, and the tool then runs under the kernel's tool key, once.

Not built yet: several interruptions of one turn decided one by one (the kernel decides one
call per suspension; batches come later), and rejecting a call while the run goes on (a
kernel denial ends the run). A turn with more than one interruption is refused here, by name.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import resumable_kernel as rk
from resumable_kernel.gate import Refused


class NotBuilt(Exception):
    """A shape the kernel does not decide yet (several approvals of one turn)."""


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


class ApprovalDesk:
    """One agent run's approvals, decided by the kernel. ``clock`` gives each input's time."""

    def __init__(self, store: TurnStore, name: str, identity: Mapping[str, str],
                 clock: Callable[[], int], operator: str = "ops",
                 reconcile_window: int = 3600) -> None:
        self.store, self.name, self.clock = store, name, clock
        self.identity = dict(identity)
        if store.load(name) is None:
            policy = {"operator": operator, "reconcile_window": reconcile_window}
            run = rk.new_run(identity, policy, clock())
            store.commit(name, None, Turn(run, rk.History(), None, None))

    def turn(self) -> Turn:
        t = self.store.load(self.name)
        assert t is not None
        return t

    def _step(self, input: rk.Json, state: Optional[Mapping[str, Any]] = None) -> rk.Accepted:
        """One kernel step, committed with the SDK's state before anything else happens."""
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
        """Suspends the kernel's run for the turn's one interruption and stores the SDK's
        state with it. Returns the request an approver decides on."""
        items = result.interruptions
        if len(items) != 1:
            raise NotBuilt(f"{len(items)} approvals in one turn: the kernel's batches decide those")
        call = call_of(items[0], self.name)
        wait = {"wait": "approval", "call": call, "requester": requester,
                "prior": self.turn().history.prior(call)}
        now = self.clock()
        v = self._step({"at": now, "kind": "suspend", "wait": wait,
                        "expires_at": now + expires_in, "responsible": approver,
                        "resource_version": 0}, state=result.to_state().to_json())
        return {"call": call, "requester": requester, "checkpoint": v.checkpoint}

    async def decide(self, agent: Any, decision: Mapping[str, Any]) -> Any:
        """Feeds an approver's decision to the kernel first (``Refused`` when it refuses:
        nothing changes); an accepted approval is applied to the SDK's state, stored in the
        same commit as the kernel's run, and returned ready to run."""
        from agents import RunState

        t = self.turn()
        assert t.state is not None and t.checkpoint is not None
        state = await RunState.from_json(agent, dict(t.state))
        cp = decision["checkpoint"]
        facts = {"resource_version": cp["resource_version"], "permitted": True,
                 "within_budget": True}
        input = {"at": decision["at"], "kind": "resume", "checkpoint": cp,
                 "decision": decision["decision"], "facts": facts}
        # Checked before the SDK's state is touched: a refusal leaves both as they were.
        verdict = rk.step(t.run, input)
        if isinstance(verdict, rk.Rejected):
            raise Refused(verdict)
        (item,) = state.get_interruptions()
        if decision["decision"]["decision"] == "approve":
            state.approve(item)
        else:
            state.reject(item, rejection_message="denied by " + decision["decision"]["approver"])
        self._step(input, state=state.to_json())
        return state

    def dispatch_for(self, call_id: str) -> Optional[rk.Json]:
        """The dispatch the kernel committed for ``call_id`` (its tool key), if it is in flight."""
        phase = self.turn().run["phase"]
        flight = phase.get("in_flight") if phase["phase"] == "running" else None
        if flight is None or flight["call"]["call"]["call_id"] != call_id:
            return None
        call = flight["call"]["call"]
        return {"call_id": call_id, "tool_key": rk.tool_key(self.identity, call["key"]),
                "attempt": flight["attempt"]}

    def record(self, call_id: str, attempt: int, result: str) -> None:
        """Records the tool's result in the kernel's run."""
        self._step({"at": self.clock(), "kind": "tool_result", "call_id": call_id,
                    "attempt": attempt, "result": rk.digest(result)})
