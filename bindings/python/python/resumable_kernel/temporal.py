"""The kernel inside a Temporal workflow, driven through the driver core's forms.

:class:`KernelRun` holds one run (the core's ``held`` run and its ``book``) in workflow
state and drives it only through the core (``_native``): every rule (what a proposed call
matches, what a party's decision binds, when a decision is late, which arguments a tool
receives, what each audit line says) is the core's. This module is Temporal glue:

- **time** is the workflow's own clock, :func:`temporalio.workflow.now`, in milliseconds since
  the epoch: every input is stamped with it, never with a time a party claims;
- **facts** (the resource's version) come from an activity that asks the tool service
  (``resumable.observe``, and the version each tool call and status query reports), never from
  a party's message;
- **party inputs** (approve, deny, edit, reject, respond, cancel) are Temporal *updates*. The
  validator runs the core's step on a copy of the run and raises the kernel's rejection
  (:class:`temporalio.exceptions.ApplicationError` whose type is the rejection's kind, whose
  details are the verdict: kind, evidence, message), so a refused input leaves nothing in the
  history. The handler observes the facts afresh, steps for real and commits; a refusal only
  the fresh facts show (the resource moved) is its audit line and the update's failure;
- **tool calls** are activities (``resumable.commit``) that send the tool the kernel's tool key
  and the arguments the core's book handed out. A deduping tool's activity is retried by
  Temporal under the same key; any other tool's is attempted once: an unknown outcome (the
  worker died, the answer was lost) goes back to the core, which has it reconciled by the
  status query activity (``resumable.query``);
- **expiry** is a durable timer at the core's ``wake_at``: when it fires the core feeds
  ``expire``;
- the run's ``next`` (and what the approver is shown) is read with the ``next`` query; every
  transition's audit line is kept in workflow state (the ``audit`` query) and, with
  ``RunInput.audit_log``, appended by an activity (``resumable.append_audit``) to a file that
  ``resumable validate --key-file K --anchor A`` checks.

The run is held in workflow memory as the core's native form (:class:`_native.DriverRun`):
each step changes it in place, and nothing is read or written as JSON but the step's own
input and answer. A run of many calls continues as new every ``RunInput.continue_every``
turns, carrying the held run and its book, compacted: the settled calls' arguments and
outcomes are dropped, every call id and key the run bound is kept, so the kernel refuses a
reused call id or key after it as before it (a settled call proposed again is refused as a
reused call id), and the run's rules do not change across it. The outcomes it returns are the
turns' since the last continue-as-new, ``outcomes_before`` counting the turns before them.

A turn whose input the kernel refuses (a reused call id, a key bound to other arguments)
stops the run: it returns ``{"todo": "refused", "verdict": ...}`` with the kernel's verdict,
rather than planning the same refused input again.

The workflow's input carries the audit key (``RunInput.key``) when the log is sealed: Temporal
keeps it in the history, so encrypt payloads with a codec (``temporalio.converter``) where the
history is not trusted with it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Mapping, Optional, Protocol, Sequence, cast

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from . import _native

try:
    with workflow.unsafe.imports_passed_through():
        import orjson as _orjson
except ImportError:  # pragma: no cover - json does the same, slower
    _orjson = None  # type: ignore[assignment]

__all__ = ["Cancel", "Carried", "Decision", "Generated", "KernelActivities", "KernelRun",
           "RunInput", "ToolService", "refusal_of"]

Json = dict[str, Any]

MAX_ROUNDS = 1000
"""How many steps one turn may go through before the workflow gives up on it."""

DECISIONS = ("approve", "deny", "edit", "reject", "respond")
"""The party decisions the workflow takes as updates, in the frameworks' words."""


class ToolService(Protocol):
    """The tool service the activities talk to. ``commit`` carries a call out under
    ``tool_key`` with the arguments the core handed out (a deduping tool commits a key once and
    answers the first result again); ``query`` says what was committed under ``tool_key``
    (``None``: firmly not committed; it raises when it cannot tell); ``resource_version`` is
    the version of the resource the run depends on, now."""

    def commit(self, tool_key: str, tool: str, args: Any) -> str: ...

    def query(self, tool_key: str) -> Optional[str]: ...

    def resource_version(self) -> int: ...


def _facts(version: int) -> Json:
    return {"resource_version": version, "permitted": True, "within_budget": True}


class KernelActivities:
    """The activities :class:`KernelRun` schedules, over ``service``. Register
    :meth:`all` with a worker (they are synchronous: give the worker an
    ``activity_executor``)."""

    def __init__(self, service: ToolService) -> None:
        self.service = service

    @activity.defn(name="resumable.observe")
    def observe(self) -> Json:
        """The facts now: the resource's version, as the tool service reports it."""
        return _facts(self.service.resource_version())

    @activity.defn(name="resumable.commit")
    def commit(self, tool_call: Json) -> Json:
        """Carries out a tool call the core handed out, under its tool key, with its kept
        arguments; answers the tool's result and the resource's version after it."""
        result = self.service.commit(tool_call["tool_key"], tool_call["tool"],
                                     json.loads(tool_call["args"]))
        return {"result": result, "resource_version": self.service.resource_version()}

    @activity.defn(name="resumable.query")
    def query(self, tool_key: str) -> Json:
        """What the tool committed under ``tool_key``: ``known`` false when it cannot tell."""
        try:
            found = self.service.query(tool_key)
        except Exception:  # noqa: BLE001 - a query that cannot tell leaves the outcome unknown
            return {"known": False, "found": None,
                    "resource_version": self.service.resource_version()}
        return {"known": True, "found": found,
                "resource_version": self.service.resource_version()}

    @activity.defn(name="resumable.append_audit")
    def append_audit(self, path: str, first: int, lines: list[str]) -> int:
        """Appends audit lines to ``path``, line ``first`` (0-based) first; a line the file
        holds already is not written again, so a retried activity writes each line once.
        Answers how many lines the file holds."""
        try:
            with open(path, encoding="utf-8") as f:
                have = sum(1 for _ in f)
        except FileNotFoundError:
            have = 0
        if have < first:
            raise ApplicationError(f"{path} holds {have} lines, the next to append is {first}",
                                   non_retryable=True)
        with open(path, "a", encoding="utf-8") as f:
            for line in lines[have - first:]:
                f.write(line + "\n")
            f.flush()
        return max(have, first + len(lines))

    def all(self) -> list[Callable[..., Any]]:
        """Every activity, for ``Worker(activities=...)``."""
        return [self.observe, self.commit, self.query, self.append_audit]


@dataclass
class Generated:
    """``count`` calls of ``tool``, call ``i`` with id and key ``f"{prefix}-{i}"`` and
    arguments ``{"n": i}``, ungated unless ``approver`` is given: a long run's calls without
    carrying the list in every continued workflow's input."""

    count: int
    tool: str
    prefix: str = "call"
    requester: str = "agent"
    approver: Optional[str] = None
    expires_in: int = 60_000
    contract: Json = field(default_factory=lambda: {"dedupes": True, "query_fences": False,
                                                    "max_attempts": 3})


@dataclass
class Carried:
    """What a run carries into a continued workflow: the held run and its compacted book
    (``stored``, as :meth:`_native.DriverRun.dump` writes them), the next turn, the audit
    lines written so far, how many turns' outcomes the earlier workflows returned, and the
    largest carried input so far (bytes). ``held`` and ``book`` are the form an earlier
    version carried (the held run and the whole book), read when ``stored`` is absent."""

    turn: int
    lines_flushed: int
    outcomes: list[Json] = field(default_factory=list)
    stored: Optional[str] = None
    outcomes_before: int = 0
    carried_bytes: int = 0
    held: Optional[str] = None
    book: Optional[str] = None


@dataclass
class RunInput:
    """A run: its store name, identity (``tenant``, ``session``, ``run``, ``definition``), its
    turns (each a list of proposals in the core's form, :func:`resumable_kernel.driver.proposal`;
    times in milliseconds) or ``generated`` calls; ``key`` (64 hex digits) seals the audit log.
    ``audit_log``: a file the ``resumable.append_audit`` activity appends the log to (needed
    with ``continue_every``). ``linger_ms``: how long the workflow stays open after the run
    ended, so that a late party is refused by the kernel rather than by a closed workflow.
    ``activity_queue``: the task queue of the activities' workers (default: the workflow's)."""

    name: str
    identity: dict[str, str]
    turns: list[list[Json]] = field(default_factory=list)
    generated: Optional[Generated] = None
    key: Optional[str] = None
    operator: str = "ops"
    reconcile_window: int = 3_600_000
    audit_log: Optional[str] = None
    linger_ms: int = 0
    tool_timeout_ms: int = 10_000
    continue_every: int = 0
    activity_queue: Optional[str] = None
    carried: Optional[Carried] = None


@dataclass
class Decision:
    """A party's decision on the request it was shown (the ``next`` query's ``request``):
    ``approver`` (who decides), ``expires_at`` (the decision's own expiry, ms), the call it
    decides (default: the request's first), ``args`` for an edit, ``message`` for a reject or a
    respond. It carries no time and no facts: the workflow's clock and observation judge it."""

    request: Json
    approver: str
    expires_at: int
    call_id: Optional[str] = None
    args: Any = None
    message: str = ""


@dataclass
class Cancel:
    """Cancel the run, by ``by``."""

    by: str


def refusal_of(out: Mapping[str, Any]) -> Optional[Json]:
    """The refusal in a core function's answer (the kernel's rejection, ``not_a_decision`` or
    ``not_waiting``), or ``None`` when it was accepted."""
    v = out["verdict"] if isinstance(out.get("verdict"), dict) else out
    return None if v.get("verdict") == "accepted" else cast(Json, dict(v))


def _refused(refusal: Mapping[str, Any]) -> ApplicationError:
    return ApplicationError(str(refusal.get("message")), dict(refusal),
                            type=str(refusal.get("verdict")), non_retryable=True)


def _load(text: str) -> Any:
    """Reads a core function's answer: orjson, where it is installed, does it faster than
    json (the text differs, never what it says)."""
    return json.loads(text) if _orjson is None else _orjson.loads(text)


def _now() -> int:
    return int(workflow.now().timestamp() * 1000)


def _word(kind: str, d: Decision, call: Mapping[str, Any]) -> Json:
    if kind == "edit":
        return {"type": "edit", "edited_action": {"name": call["tool"], "args": d.args}}
    if kind in ("reject", "respond"):
        return {"type": kind, "message": d.message}
    return {"type": kind}


@workflow.defn(name="resumable.KernelRun")
class KernelRun:
    """One run of the kernel, its turns' calls gated and carried out through the driver core.
    See the module's documentation for what comes from where."""

    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        self.inp = inp
        self.facts: Json = _facts(0)
        self.lines: list[str] = []  # every audit line of this workflow, in order
        self.flushed = 0  # lines of the whole run written to the audit file
        self.first_line = 0  # the run's line number of self.lines[0]
        self.outcomes: list[Json] = []
        self.todo: Json = {"todo": "start"}
        self.applied = 0
        self.deciding = 0
        self.projected: Optional[_native.DriverRun] = None
        self.pending: list[Json] = []
        self.lock = asyncio.Lock()
        self.turn = 0
        self.outcomes_before = 0
        self.carried_bytes = 0
        if inp.carried is not None:
            c = inp.carried
            if c.stored is not None:
                self.store = _native.DriverRun.load(c.stored)
            else:
                self.store = _native.DriverRun.load(
                    json.dumps({"held": json.loads(c.held or "null"),
                                "book": json.loads(c.book or "null")}))
            self.turn = c.turn
            self.flushed = self.first_line = c.lines_flushed
            self.outcomes = list(c.outcomes)
            self.outcomes_before = c.outcomes_before
            self.carried_bytes = c.carried_bytes
        else:
            header = {"run": {"identity": inp.identity,
                              "policy": {"operator": inp.operator,
                                         "reconcile_window": inp.reconcile_window},
                              "created_at": _now()},
                      "tools": None}
            self.store, line = _native.DriverRun.open(json.dumps(header), inp.key)
            self.lines.append(line)

    # -- the run ------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: RunInput) -> Json:
        self.facts = await self._observe()
        total = len(inp.turns) if inp.generated is None else inp.generated.count
        started = self.turn
        while self.turn < total:
            if inp.continue_every and self.turn - started >= inp.continue_every:
                await self._quiesce([])
                await self._flush()
                workflow.continue_as_new(RunInput(**{**inp.__dict__,
                                                     "carried": self._carried()}))
            todo = await self._settle(self._proposals(self.turn))
            if todo["todo"] != "done":
                break
            self.outcomes.extend(todo["outcomes"])
            self.turn += 1
        await self._flush()
        if inp.linger_ms > 0:
            try:
                await workflow.wait_condition(lambda: False,
                                              timeout=timedelta(milliseconds=inp.linger_ms))
            except asyncio.TimeoutError:
                pass
        await self._quiesce(self._proposals(self.turn) if self.turn < total else [])
        await self._flush()
        return {"todo": self.todo, "outcomes": self.outcomes,
                "outcomes_before": self.outcomes_before, "anchor": self._anchor(),
                "phase": self._held()["run"]["phase"], "book_bytes": len(self.store.book()),
                "carried_bytes": self.carried_bytes}

    def _carried(self) -> Carried:
        """What the next workflow carries: the run with its book compacted (the settled calls'
        arguments and outcomes dropped, every call id and key kept), and the outcomes counted,
        not carried."""
        self.store.compact()
        stored = self.store.dump()
        carried = Carried(turn=self.turn, lines_flushed=self.flushed, stored=stored,
                          outcomes_before=self.outcomes_before + len(self.outcomes))
        size = len(json.dumps(dataclasses.asdict(carried)))
        carried.carried_bytes = max(self.carried_bytes, size)
        return carried

    async def _quiesce(self, proposals: Sequence[Mapping[str, Any]]) -> None:
        """Lets every update handler finish and carries out what their decisions commanded
        (a cancel's status query, say), before the workflow continues as new or returns."""
        for _ in range(MAX_ROUNDS):
            await workflow.wait_condition(
                lambda: workflow.all_handlers_finished() or bool(self.pending))
            if not self.pending:
                return
            await self._carry_out(self.pending.pop(0), proposals)

    def _proposals(self, turn: int) -> list[Json]:
        g = self.inp.generated
        if g is None:
            return self.inp.turns[turn]
        name = f"{g.prefix}-{turn}"
        return [{"call_id": name, "tool": g.tool, "args": {"n": turn}, "key": name,
                 "contract": g.contract, "requester": g.requester, "approver": g.approver,
                 "expires_in": g.expires_in}]

    async def _settle(self, proposals: Sequence[Mapping[str, Any]]) -> Json:
        """Plans and carries out the turn until the core says it is done or something else
        that no step of this workflow can change (changed, busy, ended)."""
        props = json.dumps(list(proposals))
        for _ in range(MAX_ROUNDS):
            await workflow.wait_condition(lambda: self.deciding == 0)
            if self.pending:
                await self._carry_out(self.pending.pop(0), proposals)
                continue
            todo = cast(Json, json.loads(self.store.plan_turn(
                _now(), props, json.dumps(self.facts))))
            self.todo = todo
            kind = todo["todo"]
            if kind == "feed":
                out = self._step(lambda run, now: run.feed(
                    now, json.dumps(todo["event"]), json.dumps(todo["kept"]), self.inp.key))
                refusal = refusal_of(out)
                if refusal is not None:
                    # The plan would feed the same input again, and the kernel refuse it
                    # again: the run stops here, with the kernel's verdict.
                    self.todo = {"todo": "refused", "verdict": refusal}
                    return self.todo
                await self._carry_out(out, proposals)
            elif kind == "query":
                await self._reconcile(todo["dispatch"], proposals)
            elif kind in ("ask", "waits"):
                await self._flush()
                await self._wait()
            else:
                return todo
        raise ApplicationError(f"run {self.inp.name}: turn {self.turn} did not settle",
                               non_retryable=True)

    async def _wait(self) -> None:
        """Waits for a party's input, or for the run's deadline (a durable timer at the core's
        ``wake_at``); once it is due the next plan feeds ``expire``."""
        seen = self.applied
        wake = cast(Optional[int], json.loads(self.store.wake_at()))
        timeout = None if wake is None else timedelta(milliseconds=max(1, wake - _now() + 1))
        try:
            await workflow.wait_condition(
                lambda: self.applied != seen or bool(self.pending) or self.deciding > 0,
                timeout=timeout)
        except asyncio.TimeoutError:
            pass

    def _step(self, fn: Callable[[_native.DriverRun, int], str]) -> Json:
        """Stages with ``fn`` on the held run at the workflow's time, which commits it to the
        run (the held run, the book), and keeps its audit line."""
        out = cast(Json, _load(fn(self.store, _now())))
        self._apply(out)
        return out

    def _apply(self, out: Mapping[str, Any]) -> None:
        """Keeps the audit line of a step the run committed (a refusal before the kernel,
        ``not_a_decision`` or ``not_waiting``, committed nothing and has none)."""
        if "line" in out:
            self.lines.append(out["line"])
            self.applied += 1

    def _contract(self, call_id: str, proposals: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        for p in proposals:
            if p["call_id"] == call_id:
                return cast(Mapping[str, Any], p["contract"])
        return {"dedupes": False}

    async def _carry_out(self, out: Mapping[str, Any],
                         proposals: Sequence[Mapping[str, Any]]) -> None:
        """After a step: calls the tool for each call the core handed out and feeds each
        answer; a call whose outcome is unknown is left to the core (the next plan recovers it
        and has it queried); asks the status query the transition commands, if any."""
        calls: list[Json] = list(out.get("tool_calls") or [])
        answers = await asyncio.gather(*(self._call(tc, proposals) for tc in calls))
        for tc, answer in zip(calls, answers):
            if answer is None:
                continue
            self.facts = _facts(int(answer["resource_version"]))
            tc_text, res = json.dumps(tc), json.dumps(answer["result"])
            fed = self._step(lambda run, now: run.tool_result(now, tc_text, res, self.inp.key))
            await self._carry_out(fed, proposals)
        if out.get("query"):
            await self._reconcile(out["query"], proposals)

    async def _call(self, tc: Mapping[str, Any],
                    proposals: Sequence[Mapping[str, Any]]) -> Optional[Json]:
        contract = self._contract(tc["call_id"], proposals)
        # A deduping tool is retried under the same key (it commits a key once); any other is
        # attempted once: a retry could commit twice, so its unknown outcome goes to the core.
        attempts = int(contract.get("max_attempts", 1)) if contract.get("dedupes") else 1
        try:
            return cast(Json, await workflow.execute_activity(
                "resumable.commit", dict(tc),
                task_queue=self.inp.activity_queue,
                start_to_close_timeout=timedelta(milliseconds=self.inp.tool_timeout_ms),
                retry_policy=RetryPolicy(maximum_attempts=max(1, attempts),
                                         initial_interval=timedelta(milliseconds=200)),
                result_type=dict))
        except ActivityError:
            return None

    async def _reconcile(self, dispatch: Mapping[str, Any],
                         proposals: Sequence[Mapping[str, Any]]) -> None:
        """Asks the tool service what it committed under the dispatch's tool key (an activity)
        and feeds the answer: a result, a firm "not committed", or unknown."""
        found: Optional[str] = None
        try:
            q = cast(Json, await workflow.execute_activity(
                "resumable.query", dispatch["tool_key"],
                task_queue=self.inp.activity_queue,
                start_to_close_timeout=timedelta(milliseconds=self.inp.tool_timeout_ms),
                retry_policy=RetryPolicy(maximum_attempts=3,
                                         initial_interval=timedelta(milliseconds=200)),
                result_type=dict))
            self.facts = _facts(int(q["resource_version"]))
            if q["known"]:
                found = "null" if q["found"] is None else json.dumps(q["found"])
        except ActivityError:
            found = None
        d, facts = json.dumps(dict(dispatch)), json.dumps(self.facts)
        out = self._step(lambda run, now: run.reconcile(now, d, found, facts, self.inp.key))
        if "line" in out:
            await self._carry_out(out, proposals)

    async def _observe(self) -> Json:
        return cast(Json, await workflow.execute_activity(
            "resumable.observe", task_queue=self.inp.activity_queue,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=200)),
            result_type=dict))

    async def _flush(self) -> None:
        """Appends the audit lines not yet written to ``audit_log`` (an activity)."""
        path = self.inp.audit_log
        done = self.first_line + len(self.lines)
        if path is None or self.flushed >= done:
            return
        todo = self.lines[self.flushed - self.first_line:]
        await workflow.execute_activity(
            "resumable.append_audit", args=[path, self.flushed, todo],
            task_queue=self.inp.activity_queue, start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=200)))
        self.flushed = done
        if self.inp.continue_every:
            # A long run keeps only what is not written yet: the file holds the rest.
            self.first_line, self.lines = done, []

    # -- party inputs: updates ------------------------------------------------------------

    def _stage(self, kind: str, d: Any, run: _native.DriverRun, facts: Json) -> Json:
        """The core's step for a party's input on ``run`` at the workflow's time with
        ``facts``, committed to ``run`` (pass a copy to keep nothing)."""
        now = _now()
        if kind == "cancel":
            event = json.dumps({"kind": "cancel", "by": d.by})
            return cast(Json, _load(run.feed(now, event, "{}", self.inp.key)))
        calls = d.request.get("calls") if isinstance(d.request, dict) else None
        if not calls:
            return {"verdict": "not_a_decision", "rejection": {},
                    "message": "the request holds no call to decide"}
        call = next((c for c in calls if c.get("call_id") == (d.call_id or calls[0]["call_id"])),
                    None)
        if call is None:
            return {"verdict": "not_a_decision", "rejection": {},
                    "message": f"the request holds no call {d.call_id}"}
        words = [{"call_id": call["call_id"], "decision": _word(kind, d, call)}]
        return cast(Json, _load(run.decide_calls(
            now, json.dumps(d.request), json.dumps(words), d.approver, d.expires_at,
            json.dumps(facts), self.inp.key)))

    def _validate(self, kind: str, d: Any) -> None:
        """Runs the core's step on a copy of the run (as the decision being applied leaves it,
        if one is) and raises the kernel's rejection: a refused update is not in the history."""
        run = (self.projected or self.store).copy()
        try:
            out = self._stage(kind, d, run, self.facts)
        except _native.ResumableError as e:
            raise ApplicationError(f"malformed {kind}: {e}", type="malformed",
                                   non_retryable=True) from e
        refusal = refusal_of(out)
        if refusal is not None:
            raise _refused(refusal)

    async def _decide(self, kind: str, d: Any) -> Json:
        # Before any await: a racing party's validator, run next, judges its input on the run
        # as this one leaves it (with the facts last observed), so the core refuses it.
        projected = (self.projected or self.store).copy()
        if "line" in self._stage(kind, d, projected, self.facts):
            self.projected = projected
        self.deciding += 1
        try:
            async with self.lock:
                self.facts = await self._observe()
                out = self._stage(kind, d, self.store, self.facts)
                self._apply(out)
                if "line" in out and (out.get("tool_calls") or out.get("query")):
                    self.pending.append(out)
        finally:
            self.deciding -= 1
            if self.deciding == 0:
                self.projected = None
        refusal = refusal_of(out)
        if refusal is not None:
            raise _refused(refusal)
        return cast(Json, out["verdict"])

    @workflow.update(name="approve")
    async def approve(self, d: Decision) -> Json:
        """Approve a call as shown: it runs with the arguments shown."""
        return await self._decide("approve", d)

    @approve.validator
    def _approve_valid(self, d: Decision) -> None:
        self._validate("approve", d)

    @workflow.update(name="deny")
    async def deny(self, d: Decision) -> Json:
        """Deny a call: the run fails."""
        return await self._decide("deny", d)

    @deny.validator
    def _deny_valid(self, d: Decision) -> None:
        self._validate("deny", d)

    @workflow.update(name="edit")
    async def edit(self, d: Decision) -> Json:
        """Approve a call with other arguments, ``d.args``: it runs with them."""
        return await self._decide("edit", d)

    @edit.validator
    def _edit_valid(self, d: Decision) -> None:
        self._validate("edit", d)

    @workflow.update(name="reject")
    async def reject(self, d: Decision) -> Json:
        """Reject a call: it does not run, the agent is told ``d.message`` and goes on."""
        return await self._decide("reject", d)

    @reject.validator
    def _reject_valid(self, d: Decision) -> None:
        self._validate("reject", d)

    @workflow.update(name="respond")
    async def respond(self, d: Decision) -> Json:
        """Answer in the tool's place with ``d.message``: nothing is dispatched."""
        return await self._decide("respond", d)

    @respond.validator
    def _respond_valid(self, d: Decision) -> None:
        self._validate("respond", d)

    @workflow.update(name="cancel")
    async def cancel(self, c: Cancel) -> Json:
        """Cancel the run (an effect in flight is reconciled first)."""
        return await self._decide("cancel", c)

    @cancel.validator
    def _cancel_valid(self, c: Cancel) -> None:
        self._validate("cancel", c)

    # -- queries -------------------------------------------------------------------------

    def _held(self) -> Json:
        return cast(Json, json.loads(self.store.held()))

    def _anchor(self) -> str:
        a = self._held()["anchor"]
        return f"{a['records']}:{a['mac']}"

    @workflow.query(name="next")
    def next(self) -> Json:
        """What the run waits for: the core's last todo (``ask`` with the ``request`` a party
        decides on, ``waits``, ``done``...), the run's phase, and the log's
        anchor."""
        run = self._held()["run"]
        return {"todo": self.todo, "request": self.todo.get("request"),
                "phase": run.get("phase"), "anchor": self._anchor(),
                "turn": self.turn}

    @workflow.query(name="audit")
    def audit(self) -> list[str]:
        """The audit lines this workflow holds (the whole log unless the run continues as
        new, whose log is in ``RunInput.audit_log``)."""
        return list(self.lines)
