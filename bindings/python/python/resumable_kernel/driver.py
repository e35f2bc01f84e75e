"""The driver core's I/O for Python: a SQLite store, the driver's clock, the facts it observes,
and the loop "plan, feed and commit, carry out the tool calls, feed the answers".

Every rule lives in the Rust core (``resumable-driver``, reached through ``_native``): what to
do about a proposed call, what a party's answer means, which arguments a tool receives, when
an expiry is fed, what each audit line says. This module only loads, commits with
compare-and-set, retries a lost compare-and-set from what is stored, and calls the tool. The
LangGraph gate, LangChain's HITL middleware and the Agents SDK desk are glue over it.

The store (one schema for the Python and Node packages)::

    resumable_runs(name PRIMARY KEY, revision, records, held, book, extra)
    resumable_audit(name, seq, line, PRIMARY KEY (name, seq))

A commit is one transaction: the row, compare-and-set on the loaded ``revision`` and
``records``, and the audit line at ``seq = records``. The log of a run is its lines in order,
each followed by LF; ``resumable validate --key-file K --anchor A LOG`` checks it, ``A`` being
:meth:`Driver.anchor` (``RECORDS:MAC``).

Tables of the previous release (``kernel_runs`` of the gate, ``turns`` of the desk) kept no
audit log and no arguments: a run found only there is refused by name (:class:`LegacyRun`),
never driven as if it were new.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Protocol, Sequence, TypedDict, cast

from . import _native

RETRIES: int = _native.DRIVER_RETRIES
"""How many times a lost compare-and-set is retried from the stored run."""

MAX_ROUNDS = 1000
"""How many steps one call may go through before an adapter gives up."""

Json = dict[str, Any]

LEGACY_TABLES = ("kernel_runs", "turns")
"""The tables the previous release wrote (the gate's and the desk's)."""


class Facts(TypedDict):
    """What the driver observed now: the resource's version, permission, budget."""

    resource_version: int
    permitted: bool
    within_budget: bool


def observed(resource_version: int = 0) -> Facts:
    """Facts as most drivers observe them: the resource at ``resource_version``, the step
    permitted and within budget."""
    return {"resource_version": resource_version, "permitted": True, "within_budget": True}


class Tool(Protocol):
    """A tool as the driver calls it. ``commit`` carries the call out under ``tool_key`` with
    the approved arguments and returns its result; a tool that dedupes commits a key once and
    answers the first result again. ``query`` says what was committed under ``tool_key``
    (``None``: firmly not committed); it raises when it cannot tell."""

    def commit(self, tool_key: str, tool: str, args: Any) -> str: ...

    def query(self, tool_key: str) -> Optional[str]: ...


class LegacyRun(Exception):
    """A run written by the previous release's tables, which this release does not drive."""


class Conflict(Exception):
    """The compare-and-set was lost :data:`RETRIES` times in a row."""


@dataclass(frozen=True)
class Row:
    """What the store holds of a run: the held run (run, anchor, checkpoint), its book (the
    calls with their arguments and outcomes), and the adapter's own ``extra``."""

    held: str
    book: str
    extra: Optional[str]


class Store:
    """The runs and their audit logs in SQLite (``path``; one file may hold many runs)."""

    def __init__(self, path: str) -> None:
        self.path = path
        with self._db() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS resumable_runs (name TEXT PRIMARY KEY, revision "
                "INTEGER NOT NULL, records INTEGER NOT NULL, held TEXT NOT NULL, book TEXT NOT "
                "NULL, extra TEXT)"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS resumable_audit (name TEXT NOT NULL, seq INTEGER "
                "NOT NULL, line TEXT NOT NULL, PRIMARY KEY (name, seq))"
            )

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, isolation_level=None, timeout=30)

    def _legacy(self, db: sqlite3.Connection, name: str) -> Optional[str]:
        for table in LEGACY_TABLES:
            exists = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            if exists and db.execute(f"SELECT 1 FROM {table} WHERE name = ?", (name,)).fetchone():
                return table
        return None

    def load(self, name: str) -> Optional[Row]:
        """The run stored under ``name``. A run only the previous release's tables hold raises
        :class:`LegacyRun`."""
        with self._db() as db:
            row = db.execute(
                "SELECT held, book, extra FROM resumable_runs WHERE name = ?", (name,)
            ).fetchone()
            if row is None:
                table = self._legacy(db, name)
                if table is not None:
                    raise LegacyRun(
                        f"run {name} is stored in the table {table} of the previous release, "
                        "which kept neither an audit log nor the calls' arguments: it cannot "
                        "be driven safely by this release. Finish it with the release that "
                        "started it, or start it again under a new name."
                    )
                return None
        return Row(row[0], row[1], row[2])

    def create(self, name: str, opened: Mapping[str, Any], extra: Optional[str] = None) -> bool:
        """Stores a new run (``opened`` as the core's ``driver_open`` gave it) with its log's
        header line; ``False`` if a run is stored under ``name`` already."""
        held = opened["held"]
        with self._db() as db:
            if self._legacy(db, name) is not None:
                self.load(name)
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "INSERT INTO resumable_runs VALUES (?, ?, ?, ?, ?, ?)",
                    (name, held["run"]["revision"], held["anchor"]["records"], json.dumps(held),
                     json.dumps(opened["book"]), extra),
                )
            except sqlite3.IntegrityError:
                db.execute("ROLLBACK")
                return False
            db.execute("INSERT INTO resumable_audit VALUES (?, 0, ?)", (name, opened["line"]))
            db.execute("COMMIT")
        return True

    def commit(self, name: str, before: Row, out: Mapping[str, Any],
               extra: Optional[str] = None, keep_extra: bool = True) -> bool:
        """Commits what a core function returned (``held``, ``book``, ``line``) if the stored
        run is still ``before`` (its revision and its anchor's records); ``False`` when the
        compare-and-set is lost. ``extra`` replaces the adapter's own column unless
        ``keep_extra``."""
        b = json.loads(before.held)
        held = out["held"]
        new_extra = before.extra if keep_extra else extra
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            cur = db.execute(
                "UPDATE resumable_runs SET revision = ?, records = ?, held = ?, book = ?, "
                "extra = ? WHERE name = ? AND revision = ? AND records = ?",
                (held["run"]["revision"], held["anchor"]["records"], json.dumps(held),
                 json.dumps(out["book"]), new_extra, name, b["run"]["revision"],
                 b["anchor"]["records"]),
            )
            if cur.rowcount != 1:
                db.execute("ROLLBACK")
                return False
            db.execute(
                "INSERT INTO resumable_audit VALUES (?, ?, ?)",
                (name, held["anchor"]["records"], out["line"]),
            )
            db.execute("COMMIT")
        return True

    def log(self, name: str) -> str:
        """The run's audit log: its lines in order, each followed by LF."""
        with self._db() as db:
            rows = db.execute(
                "SELECT line FROM resumable_audit WHERE name = ? ORDER BY seq", (name,)
            ).fetchall()
        return "".join(line + "\n" for (line,) in rows)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class Driver:
    """One run, driven through the core: ``name`` in ``store``, opened for ``identity`` on
    first use. ``clock`` is the driver's own time (every input is stamped with it, never with
    a time a party claims); ``facts`` observes the resource, permission and budget now (never
    copied from a party's message); ``key`` (64 hex digits) seals the audit log with
    HMAC-SHA-256, else it is chained with SHA-256."""

    def __init__(self, store: Store, name: str, identity: Mapping[str, str], *,
                 clock: Callable[[], int], facts: Optional[Callable[[], Facts]] = None,
                 key: Optional[str] = None, operator: str = "ops",
                 reconcile_window: int = 3600) -> None:
        self.store, self.name, self.clock, self.key = store, name, clock, key
        self.facts: Callable[[], Facts] = facts or observed
        self.identity = dict(identity)
        if store.load(name) is None:
            header = {"run": {"identity": self.identity,
                              "policy": {"operator": operator,
                                         "reconcile_window": reconcile_window},
                              "created_at": clock()},
                      "tools": None}
            store.create(name, json.loads(_native.driver_open(json.dumps(header), key)))

    def row(self) -> Row:
        """What the store holds of the run now."""
        row = self.store.load(self.name)
        if row is None:
            raise RuntimeError(f"run {self.name} is not in the store")
        return row

    def held(self) -> Json:
        """The held run: ``{"run", "anchor", "checkpoint"}``."""
        return cast(Json, json.loads(self.row().held))

    def book(self) -> Json:
        """The run's book: its calls, with their arguments and outcomes."""
        return cast(Json, json.loads(self.row().book))

    def plan(self, proposals: Sequence[Mapping[str, Any]], turn: bool = False) -> Json:
        """What to do now about ``proposals`` (one model turn), at the driver's time, with
        the facts observed now. ``turn``: put them to the approver as one batch even of one."""
        row = self.row()
        how = _native.driver_plan_turn if turn else _native.driver_plan
        todo = how(row.held, row.book, self.clock(), json.dumps(list(proposals)),
                   json.dumps(self.facts()))
        return cast(Json, json.loads(todo))

    def _commit(self, step: Callable[[Row, int], str], extra: Optional[Callable[[Json], str]]
                = None) -> Json:
        """Stages with ``step`` on the stored run at the driver's time and commits, loading
        again and staging again on a lost compare-and-set. A party's message that is not an
        answer (``not_a_decision``) commits nothing."""
        for _ in range(RETRIES + 1):
            row = self.row()
            out = cast(Json, json.loads(step(row, self.clock())))
            if "held" not in out:
                return out
            if extra is None:
                won = self.store.commit(self.name, row, out)
            else:
                won = self.store.commit(self.name, row, out, extra(out), keep_extra=False)
            if won:
                return out
        raise Conflict(f"run {self.name}: the compare-and-set was lost {RETRIES + 1} times")

    def feed(self, todo: Mapping[str, Any],
             extra: Optional[Callable[[Json], str]] = None) -> Json:
        """Feeds a ``feed`` todo's event; ``extra`` writes the adapter's column with it."""
        event, kept = json.dumps(todo["event"]), json.dumps(todo["kept"])
        return self._commit(lambda r, now: _native.driver_feed(r.held, r.book, now, event, kept,
                                                               self.key), extra)

    def answer(self, request: Mapping[str, Any], message: Any,
               extra: Optional[Callable[[Json], str]] = None) -> Json:
        """Feeds a party's answer to ``request``: only its checkpoint and decision are read."""
        req, msg = json.dumps(request), _text(message)
        return self._commit(lambda r, now: _native.driver_answer(
            r.held, r.book, now, req, msg, json.dumps(self.facts()), self.key), extra)

    def decide(self, request: Mapping[str, Any], words: Sequence[Mapping[str, Any]],
               approver: str, expires_at: int,
               extra: Optional[Callable[[Json], str]] = None) -> Json:
        """Feeds a framework's decision list (one per call of ``request``) by ``approver``."""
        req, ws = json.dumps(request), json.dumps(list(words))
        return self._commit(lambda r, now: _native.driver_decide(
            r.held, r.book, now, req, ws, approver, expires_at, json.dumps(self.facts()),
            self.key), extra)

    def decide_calls(self, request: Mapping[str, Any], words: Sequence[Mapping[str, Any]],
                     approver: str, expires_at: int,
                     extra: Optional[Callable[[Json], str]] = None) -> Json:
        """Feeds decisions on some calls of ``request``, each naming its call
        (``{"call_id", "decision": WORD}``), by ``approver``, as one batch answer."""
        req, ws = json.dumps(request), json.dumps(list(words))
        return self._commit(lambda r, now: _native.driver_decide_calls(
            r.held, r.book, now, req, ws, approver, expires_at, json.dumps(self.facts()),
            self.key), extra)

    def resume(self, request: Mapping[str, Any], value: str, approver: str,
               extra: Optional[Callable[[Json], str]] = None) -> Json:
        """Feeds a human-in-the-loop resume value (``value``, JSON text) answering ``request``,
        read by the core (spec/frameworks.md, "Resuming"); ``approver`` is the adapter's, for a
        value that names none."""
        req = json.dumps(request)
        return self._commit(lambda r, now: _native.driver_resume(
            r.held, r.book, now, req, value, approver, json.dumps(self.facts()), self.key),
            extra)

    def tool_result(self, tool_call: Mapping[str, Any], result: str) -> Json:
        """Feeds the tool's answer (a string) to a tool call the core handed out."""
        tc, res = json.dumps(tool_call), json.dumps(result)
        return self._commit(lambda r, now: _native.driver_tool_result(
            r.held, r.book, now, tc, res, self.key))

    def reconcile(self, dispatch: Mapping[str, Any], tool: Tool) -> Json:
        """Asks ``tool`` what it committed under the dispatch's tool key and feeds the answer:
        a result, a firm "not committed", or (the query raised) unknown."""
        try:
            found = tool.query(dispatch["tool_key"])
            text: Optional[str] = "null" if found is None else json.dumps(found)
        except Exception:  # noqa: BLE001 - a query that cannot tell leaves the outcome unknown
            text = None
        d = json.dumps(dispatch)
        return self._commit(lambda r, now: _native.driver_reconcile(
            r.held, r.book, now, d, text, json.dumps(self.facts()), self.key))

    def carry_out(self, out: Mapping[str, Any], tool: Tool) -> None:
        """After a commit: calls ``tool`` for each tool call the core handed out, with the
        arguments it kept (the approved or edited ones), and feeds each answer; asks the
        status query the transition commands, if any."""
        for tc in out.get("tool_calls") or []:
            result = tool.commit(tc["tool_key"], tc["tool"], json.loads(tc["args"]))
            self.carry_out(self.tool_result(tc, result), tool)
        if out.get("query"):
            self.carry_out(self.reconcile(out["query"], tool), tool)

    def advance(self, proposals: Sequence[Mapping[str, Any]], tool: Optional[Tool],
                turn: bool = False) -> Json:
        """Plans and carries out whatever needs no party (feeds, dispatches, status queries)
        until the core says something else: ``ask``, ``done``, ``changed``, ``waits``,
        ``busy`` or ``ended``, which is returned. Without a ``tool``, a todo that needs it
        is returned too (the framework runs its tools itself)."""
        for _ in range(MAX_ROUNDS):
            todo = self.plan(proposals, turn)
            if todo["todo"] == "feed":
                out = self.feed(todo)
                if tool is None:
                    if out.get("tool_calls") or out.get("query"):
                        return {"todo": "carry_out", "out": out}
                else:
                    self.carry_out(out, tool)
            elif todo["todo"] == "query" and tool is not None:
                self.carry_out(self.reconcile(todo["dispatch"], tool), tool)
            else:
                return todo
        raise RuntimeError(f"run {self.name}: the call did not settle")

    def wake_at(self) -> Optional[int]:
        """When the driver must next call in if nothing else happens (the run's deadline)."""
        return cast(Optional[int], json.loads(_native.driver_wake_at(self.row().held)))

    def log(self) -> str:
        """The run's audit log, for ``resumable validate``."""
        return self.store.log(self.name)

    def anchor(self) -> str:
        """The log's anchor, ``RECORDS:MAC``, for ``resumable validate --anchor``."""
        a = self.held()["anchor"]
        return f"{a['records']}:{a['mac']}"


def proposal(call_id: str, tool: str, args: Any, *, key: str, requester: str,
             approver: Optional[str], expires_in: int,
             contract: Optional[Mapping[str, Any]] = None) -> Json:
    """A proposed call in the core's form: ``args`` the arguments themselves (any JSON),
    ``key`` its idempotency key, ``contract`` the tool's (default: dedupes by key, no fencing
    query, three attempts)."""
    return {"call_id": call_id, "tool": tool, "args": args, "key": key,
            "contract": dict(contract or {"dedupes": True, "query_fences": False,
                                          "max_attempts": 3}),
            "requester": requester, "approver": approver, "expires_in": expires_in}


def approval(request: Mapping[str, Any], approve: bool, approver: str, expires_at: int) -> Json:
    """The approver's side: the answer approving (or denying) the one call of ``request``,
    bound to what was shown (call id, argument digest, requester, checkpoint revision), with
    the decision's own expiry. It carries no time: the driver judges it at its own."""
    return cast(Json, json.loads(_native.driver_approval(json.dumps(request), approve,
                                                         approver, expires_at)))


def rejected(out: Mapping[str, Any]) -> Optional[Json]:
    """The refusal in a core function's answer (the kernel's rejection, or ``not_a_decision``),
    or ``None`` when it was accepted."""
    v = out["verdict"] if "verdict" in out and isinstance(out["verdict"], dict) else out
    return None if v.get("verdict") == "accepted" else cast(Json, dict(v))


def counted(out: Mapping[str, Any]) -> bool:
    """Whether a core function staged the input it was given (accepted or refused by the
    kernel, an answer the core counts), and not refused it before the kernel as no decision."""
    return isinstance(out.get("verdict"), dict)
