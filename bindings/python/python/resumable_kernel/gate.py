"""A tool call gated behind a person's approval, where the kernel decides: for graph runtimes
whose nodes pause with an ``interrupt`` and run again from their start on resume (LangGraph's
``interrupt()`` and ``Command(resume=...)``).

The kernel's run lives in a :class:`RunStore` (SQLite) beside the graph's own checkpointer,
with its call history and its last checkpoint; every transition is committed there, with
compare-and-set on the revision, before anything it commands is carried out. So:

- the approval is bound to the call id, the argument digest, the requester, the checkpoint's
  revision and an expiry, and the kernel refuses any other resume value: nothing is committed
  or dispatched, and the gate interrupts again with the request, the rejection (``refused``:
  kind and evidence) and its ``message``, so the next ``Command(resume=...)`` answers that;
  a resume value that is not a decision at all is refused the same way (``not_a_decision``);
- the side effect is dispatched only after the kernel's transition is durable, under the
  kernel's tool key, and its result is recorded in the run: a node that runs again after a
  resume finds the result and does not dispatch again; a node that runs again after a crash
  finds the dispatch in flight, and the kernel reconciles it by asking the tool under the same
  tool key instead of dispatching blindly (spec REC-1).

The gate asks for one call per interrupt, and a denial ends the run (:class:`Denied`). A
model turn of several calls decided in one interrupt, with edits and rejections handed back to
the agent, is LangChain's ``HumanInTheLoopMiddleware`` with the kernel first:
:mod:`resumable_kernel.hitl`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Protocol

import resumable_kernel as rk


MAX_ROUNDS = 1000
"""How many answers one call may go through before the gate gives up."""


class Refused(Exception):
    """The kernel refused the input: ``rejection`` is its verdict (kind, evidence, message).
    Nothing was committed and nothing was dispatched."""

    def __init__(self, rejection: rk.Rejected) -> None:
        super().__init__(f"{rejection.kind}: {rejection.message}")
        self.rejection = rejection


class Denied(Exception):
    """The approver denied the call: the run has failed, and the call was never made."""


class Tool(Protocol):
    """A tool as the kernel drives it: ``commit`` carries a call out under the kernel's tool
    key and returns its result (a deduping tool commits a key once and answers the first result
    again), ``query`` says whether a key was committed and with what result."""

    def commit(self, tool_key: str, tool: str, args: Mapping[str, Any]) -> str: ...

    def query(self, tool_key: str) -> Optional[str]: ...


class RunStore:
    """The kernel's runs in SQLite: one row per run, with its call history and its last
    checkpoint, written with compare-and-set on the revision."""

    def __init__(self, path: str) -> None:
        self.path = path
        with self._db() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS kernel_runs (name TEXT PRIMARY KEY, "
                "revision INTEGER NOT NULL, run TEXT NOT NULL, history TEXT NOT NULL, "
                "checkpoint TEXT)"
            )

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None, timeout=30)

    def load(self, name: str) -> Optional["Stored"]:
        with self._db() as db:
            row = db.execute(
                "SELECT run, history, checkpoint FROM kernel_runs WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            return None
        h = json.loads(row[1])
        cp = None if row[2] is None else json.loads(row[2])
        return Stored(json.loads(row[0]), rk.History(set(h["call_ids"]), h["keys"]), cp)

    def commit(self, name: str, before: Optional[int], stored: "Stored") -> None:
        """Stores the run if the stored revision is still ``before`` (``None``: a new run)."""
        h = json.dumps({"call_ids": sorted(stored.history.call_ids), "keys": stored.history.keys})
        cp = None if stored.checkpoint is None else json.dumps(stored.checkpoint)
        values = (stored.run["revision"], json.dumps(stored.run), h, cp)
        with self._db() as db:
            if before is None:
                db.execute("INSERT INTO kernel_runs VALUES (?, ?, ?, ?, ?)", (name, *values))
                return
            cur = db.execute(
                "UPDATE kernel_runs SET revision = ?, run = ?, history = ?, checkpoint = ? "
                "WHERE name = ? AND revision = ?",
                (*values, name, before),
            )
            if cur.rowcount != 1:
                raise RuntimeError(f"run {name}: revision {before} is no longer current")


@dataclass
class Stored:
    """A run as the store holds it."""

    run: rk.Json
    history: rk.History = field(default_factory=rk.History)
    checkpoint: Optional[rk.Json] = None


@dataclass(frozen=True)
class Call:
    """A tool call the graph wants to make."""

    call_id: str
    tool: str
    args: Mapping[str, Any]
    key: str

    def kernel_form(self) -> rk.Json:
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "args": rk.digest(dict(self.args)),
            "key": self.key,
            "contract": {"dedupes": True, "query_fences": False, "max_attempts": 3},
        }


def approve(request: Mapping[str, Any], approver: str, expires_at: int, at: int) -> rk.Json:
    """The resume value an approver sends for the ``request`` an interrupt surfaced: an
    approval bound to its call id, argument digest, requester and checkpoint revision."""
    return _decision("approve", request, approver, expires_at, at)


def deny(request: Mapping[str, Any], approver: str, expires_at: int, at: int) -> rk.Json:
    """The resume value that denies the ``request``: the run fails."""
    return _decision("deny", request, approver, expires_at, at)


def _decision(kind: str, request: Mapping[str, Any], approver: str, expires_at: int,
              at: int) -> rk.Json:
    call = request["call"]
    return {
        "at": at,
        "checkpoint": request["checkpoint"],
        "decision": {"decision": kind, "call_id": call["call_id"], "args": call["args"],
                     "requester": request["requester"], "approver": approver,
                     "revision": request["checkpoint"]["revision"], "expires_at": expires_at},
    }


def open_run(store: RunStore, name: str, identity: Mapping[str, str], operator: str,
             reconcile_window: int, clock: Callable[[], int]) -> None:
    """Stores a new kernel run under ``name`` unless one is stored there already."""
    if store.load(name) is None:
        policy = {"operator": operator, "reconcile_window": reconcile_window}
        store.commit(name, None, Stored(rk.new_run(identity, policy, clock())))


def stored_run(store: RunStore, name: str) -> Stored:
    """The run stored under ``name``; a store that lost it is an error, never an empty run."""
    s = store.load(name)
    if s is None:
        raise RuntimeError(f"run {name} is not in the store")
    return s


class ApprovalGate:
    """Gates the calls of one kernel run behind approvals. ``interrupt`` is the graph's (it
    returns the resume value, or pauses the graph); ``clock`` gives the time of each input."""

    def __init__(self, store: RunStore, name: str, identity: Mapping[str, str], tool: Tool,
                 interrupt: Callable[[Any], Any], clock: Callable[[], int],
                 operator: str = "ops", reconcile_window: int = 3600) -> None:
        self.store, self.name, self.tool = store, name, tool
        self.interrupt, self.clock = interrupt, clock
        self.identity = dict(identity)
        open_run(store, name, identity, operator, reconcile_window, clock)

    def stored(self) -> Stored:
        return stored_run(self.store, self.name)

    def _step(self, input: rk.Json) -> rk.Accepted:
        """One kernel step, committed before anything it commands is carried out."""
        s = self.stored()
        v = rk.step(s.run, input)
        if isinstance(v, rk.Rejected):
            raise Refused(v)
        s.history.apply(v.effects)
        before = s.run["revision"]
        s.run, s.checkpoint = v.run, v.checkpoint or s.checkpoint
        self.store.commit(self.name, before, s)
        return v

    def call(self, call: Call, requester: str, approver: str, expires_in: int) -> str:
        """Makes ``call`` once ``approver`` approved it, and returns the tool's result. Safe to
        call again from a node that runs again: a recorded result is returned as it is, a
        pending approval is asked for again, a dispatch in flight is reconciled, never
        repeated."""
        form = call.kernel_form()
        tool_key = rk.tool_key(self.identity, call.key)
        refused: Optional[rk.Rejected] = None
        for _ in range(MAX_ROUNDS):
            run = self.stored().run
            last = run.get("last_call")
            if last is not None and last["call_id"] == call.call_id:
                result = self.tool.query(tool_key)
                assert result is not None and rk.digest(result) == last["result"]
                return result
            phase = run["phase"]
            if phase["phase"] == "failed":
                raise Denied(f"run {self.name} failed: {phase}")
            if phase["phase"] == "running" and phase["in_flight"] is None:
                self._suspend(form, requester, approver, expires_in)
            elif phase["phase"] == "running":
                # Committed as dispatching, and this process does not know whether the tool
                # was reached (a crash, or a node run again): the kernel asks the tool.
                self._step({"at": self.clock(), "kind": "recover"})
            elif phase["reason"]["reason"] == "pending_approval":
                request = {"call": form, "requester": requester,
                           "checkpoint": self.stored().checkpoint}
                if refused is not None:
                    request["refused"] = refused.rejection
                    request["message"] = refused.message
                try:
                    self._resume(self.interrupt(request), call)
                    refused = None
                except Refused as r:
                    # The run is unchanged; ask again, saying why. When the node runs again,
                    # the graph hands the same answers back in order, and each is refused the
                    # same way before the new one is reached.
                    refused = r.rejection
            elif phase["reason"]["reason"] == "outcome_unknown":
                self._reconcile(call, tool_key)
            else:
                raise RuntimeError(f"run {self.name} waits on {phase['reason']['reason']}")
        raise RuntimeError(f"call {call.call_id} did not settle")

    def _suspend(self, form: rk.Json, requester: str, approver: str, expires_in: int) -> None:
        wait = {"wait": "approval", "call": form, "requester": requester,
                "prior": self.stored().history.prior(form)}
        now = self.clock()
        self._step({"at": now, "kind": "suspend", "wait": wait, "expires_at": now + expires_in,
                    "responsible": approver, "resource_version": 0})

    def _resume(self, answer: Any, call: Call) -> None:
        if not isinstance(answer, Mapping) or not {"at", "checkpoint", "decision"} <= set(answer):
            # Not the kernel's: refused before it reaches the kernel, by the same route.
            message = f"the resume value is not a decision (at, checkpoint, decision): {answer!r}"
            raise Refused(rk.Rejected("not_a_decision", {}, message))
        facts = {"resource_version": answer["checkpoint"]["resource_version"],
                 "permitted": True, "within_budget": True}
        v = self._step({"at": answer["at"], "kind": "resume", "checkpoint": answer["checkpoint"],
                        "decision": answer["decision"], "facts": facts})
        if v.dispatch is not None:
            self._dispatch(v.dispatch, call)

    def _reconcile(self, call: Call, tool_key: str) -> None:
        found = self.tool.query(tool_key)
        answer = ({"answer": "committed", "result": rk.digest(found)} if found is not None
                  else {"answer": "not_committed"})
        cp = self.stored().checkpoint
        assert cp is not None
        facts = {"resource_version": cp["resource_version"], "permitted": True,
                 "within_budget": True}
        v = self._step({"at": self.clock(), "kind": "resume", "checkpoint": cp,
                        "decision": {"decision": "reconcile", **answer}, "facts": facts})
        if v.dispatch is not None:
            self._dispatch(v.dispatch, call)

    def _dispatch(self, dispatch: rk.Json, call: Call) -> None:
        """Carries out a committed dispatch and records the tool's answer in the run."""
        result = self.tool.commit(dispatch["tool_key"], dispatch["tool"], call.args)
        self._step({"at": self.clock(), "kind": "tool_result", "call_id": dispatch["call_id"],
                    "attempt": dispatch["attempt"], "result": rk.digest(result)})
