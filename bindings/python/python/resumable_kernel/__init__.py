"""The resumable lifecycle kernel for Python: safe checkpoint, suspend and resume of agent runs.

Pure functions over the kernel's JSON forms (spec/ in the repository names every field): a
run, an input, the verdict of a step (accepted with the next run and its effects, or a
rejection with its kind and evidence), checkpoints, audit records. Nothing here holds state
between calls or reads a clock; time and identifiers arrive in the inputs.

A rejection is a value (:class:`Rejected`). Input that is not the kernel's form raises
:class:`ResumableError`, the one exception class, carrying the kernel's message.

The driving contract is the kernel's: for each input call :func:`step`; on :class:`Rejected`
change nothing; on :class:`Accepted` store ``run`` (compare-and-set on the revision), with the
audit record and the history entry the effects carry, in one commit, and only then carry out
the checkpoint, dispatch or query effects, in order. Before a call is bound (a dispatch, or a
suspension for its approval) state what the run's history holds of it as its ``prior``
(:class:`History` keeps that index in memory).

The batch shapes of spec section 5.5 are typed here as they are on the wire (``TypedDict``s over
the same JSON): a suspension's :class:`BatchWait` of :class:`Proposal` calls, a resume's
:class:`BatchDecision` holding :class:`CallDecision` items (each an :class:`Approval` and a
:data:`CallVerdict`), the run's :class:`Batch` of :class:`Slot` items, and :data:`Allowed`, the
verdicts a run's policy and a tool's contract allow. The step :data:`Verdict` (accepted or
rejected) is another thing than a call's :data:`CallVerdict`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional, Sequence, TypedDict, Union, cast

from . import _native
from ._native import (
    AUDIT_FORMAT_VERSION,
    RULES_VERSION,
    ResumableError,
    canonical,
    canonical_json,
    digest,
    digest_json,
)

__all__ = [
    "AUDIT_FORMAT_VERSION",
    "BATCH_CAPACITY",
    "RULES_VERSION",
    "Accepted",
    "Allowed",
    "Approval",
    "AuditLog",
    "Batch",
    "BatchDecision",
    "BatchWait",
    "BoundCall",
    "Call",
    "CallDecision",
    "CallVerdict",
    "History",
    "Json",
    "KeyUse",
    "Prior",
    "Proposal",
    "Rejected",
    "ResumableError",
    "Slot",
    "SlotState",
    "SLOT_STATES",
    "ToolContract",
    "VERDICT_KINDS",
    "Verdict",
    "VerdictKind",
    "canonical",
    "canonical_json",
    "digest",
    "digest_json",
    "new_run",
    "seal_checkpoint",
    "step",
    "step_json",
    "tool_key",
]

Json = dict[str, Any]
"""A JSON object in the kernel's serde form."""


BATCH_CAPACITY = 8
"""How many calls one batch holds (the kernel's ``BATCH_CAPACITY``, spec 5.5): a turn with more
is put to the approver as consecutive batches, or refused."""

VerdictKind = Literal["approve", "edit", "reject", "respond", "deny"]
"""What an approver may decide about one call (spec 5.5, POL-1)."""

VERDICT_KINDS: tuple[VerdictKind, ...] = ("approve", "edit", "reject", "respond", "deny")
"""Every verdict kind, in the kernel's order: what a policy allows unless it narrows it (the
run then leaves ``allowed`` out of its policy)."""

Allowed = list[VerdictKind]
"""A set of verdict kinds on the wire (a run's ``policy.allowed``, a tool's
``contract.allowed``), in the kernel's order. A contract leaves it out when it is the tool's
default: every kind but ``respond``."""


class ToolContract(TypedDict, total=False):
    """What a tool promises about keys and queries, and the verdicts it allows (POL-1)."""

    dedupes: bool
    query_fences: bool
    max_attempts: int
    allowed: Allowed


class Call(TypedDict):
    """A tool call: ``args`` is the digest of its arguments (RFC 8785, :func:`digest`)."""

    call_id: str
    tool: str
    args: str
    key: str
    contract: ToolContract


class BoundCall(TypedDict):
    """A call the kernel bound, its key tied to its argument digest."""

    call: Call
    key_digest: str


class KeyUse(TypedDict):
    """A key's earlier binding in the run's history."""

    args: str
    committed: bool


class Prior(TypedDict):
    """What the run's history holds of a call's id and key (spec 4.9); :meth:`History.prior`."""

    call_id_used: bool
    key: Optional[KeyUse]


class Proposal(TypedDict):
    """One call of a batch as the agent proposes it, with its requester and its prior."""

    call: Call
    requester: str
    prior: Prior


class BatchWait(TypedDict):
    """A suspension's ``wait`` for a batch: ``{"wait": "batch", "calls": [...]}`` (BAT-1)."""

    wait: Literal["batch"]
    calls: list[Proposal]


class Approval(TypedDict):
    """What a decision binds to: the call id, the proposed argument digest, the requester,
    the approver, the batch's checkpoint revision and an expiry (APR-1, BAT-2)."""

    call_id: str
    args: str
    requester: str
    approver: str
    revision: int
    expires_at: int


class _Approve(TypedDict):
    verdict: Literal["approve"]


class _Edit(TypedDict):
    verdict: Literal["edit"]
    args: str


class _Reject(TypedDict):
    verdict: Literal["reject"]
    reason: str


class _Respond(TypedDict):
    verdict: Literal["respond"]
    result: str


class _Deny(TypedDict):
    verdict: Literal["deny"]


CallVerdict = Union[_Approve, _Edit, _Reject, _Respond, _Deny]
"""What was decided about one call: ``approve``; ``edit`` with ``args`` (the digest of the
approver's arguments, BAT-5); ``reject`` with ``reason`` (the digest of the message handed back
to the agent); ``respond`` with ``result`` (the digest of the person's answer); ``deny`` (the run
fails, APR-4)."""


class CallDecision(TypedDict, total=False):
    """One decision on one call of a batch: ``approval`` and the :data:`CallVerdict`'s fields
    beside it (``verdict``, and ``args``, ``reason`` or ``result``)."""

    approval: Approval
    verdict: VerdictKind
    args: str
    reason: str
    result: str


class BatchDecision(TypedDict):
    """A resume's ``decision`` for a batch: ``{"decision": "batch", "decisions": [...]}``."""

    decision: Literal["batch"]
    decisions: list[CallDecision]


SlotState = Literal[
    "awaiting", "approved", "in_flight", "unknown", "held", "committed", "rejected",
    "responded", "dropped", "denied",
]
"""Where one call of a batch stands (spec 5.5's table): a slot's ``state``."""

SLOT_STATES: tuple[SlotState, ...] = (
    "awaiting", "approved", "in_flight", "unknown", "held", "committed", "rejected",
    "responded", "dropped", "denied",
)
"""Every slot state."""


class Slot(TypedDict, total=False):
    """One call of a batch and where it stands: the bound call (after an edit, with the
    approver's arguments), its requester, the argument digest the agent ``proposed``, whether
    its key was ``fresh``, the decision it received with the revision that recorded it
    (``[CallDecision, revision]`` or ``None``), its ``state``, and that state's fields
    (``attempt`` and ``dispatches``; ``result``; ``reason``)."""

    call: BoundCall
    requester: str
    proposed: str
    fresh: bool
    decided: Optional[list[Any]]
    state: SlotState
    attempt: int
    dispatches: int
    result: str
    reason: str


class Batch(TypedDict):
    """The run's last batch (``run["batch"]``): the revision and digest of its checkpoint, the
    resource version it carries, when it closed, and its slots in the order proposed."""

    opened: int
    checkpoint: str
    resource_version: int
    closed: Optional[int]
    slots: list[Slot]


def _text(value: Union[Mapping[str, Any], str]) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@dataclass(frozen=True)
class Accepted:
    """The kernel accepted the input: ``run`` is the next run, ``effects`` what to carry out."""

    run: Json
    effects: list[Json]

    @property
    def accepted(self) -> bool:
        return True

    def effect(self, kind: str) -> Optional[Json]:
        """The effect of this kind (``audit``, ``history``, ``persist_checkpoint``,
        ``dispatch``, ``query``), if the transition has one."""
        return next((e for e in self.effects if e["effect"] == kind), None)

    @property
    def checkpoint(self) -> Optional[Json]:
        """The checkpoint to persist, without its ``effect`` tag, if any."""
        e = self.effect("persist_checkpoint")
        return None if e is None else {k: v for k, v in e.items() if k != "effect"}

    @property
    def dispatch(self) -> Optional[Json]:
        """The dispatch to carry out after the commit, if any (the first, for a batch)."""
        return self.effect("dispatch")

    @property
    def dispatches(self) -> list[Json]:
        """Every dispatch to carry out after the commit, in slot order: a batch that resumes
        dispatches each approved call (BAT-3); any other transition at most one."""
        return [e for e in self.effects if e["effect"] == "dispatch"]


@dataclass(frozen=True)
class Rejected:
    """The kernel refused the input; the run is unchanged. ``kind`` is the rejection's name
    (``stale_revision``, ``self_approval``, ...), ``evidence`` its fields, ``message`` the
    kernel's sentence."""

    kind: str
    evidence: Json
    message: str

    @property
    def accepted(self) -> bool:
        return False

    @property
    def rejection(self) -> Json:
        """The rejection in the kernel's serde form: ``{"rejection": kind, **evidence}``."""
        return {"rejection": self.kind, **self.evidence}


Verdict = Union[Accepted, Rejected]


def _verdict(answer: Mapping[str, Any]) -> Verdict:
    if answer["verdict"] == "accepted":
        return Accepted(run=answer["run"], effects=answer["effects"])
    rejection = dict(answer["rejection"])
    kind = rejection.pop("rejection")
    return Rejected(kind=kind, evidence=rejection, message=answer["message"])


def new_run(identity: Mapping[str, str], policy: Mapping[str, Any], created_at: int) -> Json:
    """A new run at revision 0, running."""
    spec = {"identity": identity, "policy": policy, "created_at": created_at}
    return cast(Json, json.loads(_native.new_run(json.dumps(spec))))


def step_json(run: str, input: str) -> str:
    """One kernel step over JSON text: the fastest form. Returns the verdict as JSON text,
    ``{"verdict": "accepted", "run": ..., "effects": [...]}`` or ``{"verdict": NAME,
    "rejection": {...}, "message": ...}``."""
    return _native.step(run, input)


def step(run: Union[Json, str], input: Union[Json, str]) -> Verdict:
    """One kernel step: ``run`` and ``input`` as dicts or JSON text. A rejection changes
    nothing and is returned, never raised."""
    return _verdict(json.loads(_native.step(_text(run), _text(input))))


def seal_checkpoint(checkpoint: Union[Json, str]) -> Json:
    """The checkpoint with its digest recomputed over its other fields."""
    return cast(Json, json.loads(_native.seal_checkpoint(_text(checkpoint))))


def tool_key(identity: Mapping[str, str], key: str) -> str:
    """The tool key the kernel dispatches a call under: its idempotency key bound to the run's
    identity. A driver queries the tool under it after a crash."""
    return _native.tool_key(json.dumps(identity), key)


@dataclass
class History:
    """A run's call history as a driver keeps it: which call ids were bound, and each key's
    argument digest and whether its result was recorded. Feed it every accepted transition's
    effects (:meth:`apply`) in the commit that stores the run; ask it for a call's ``prior``
    before binding the call. A runtime keeps the same index in its store."""

    call_ids: set[str] = field(default_factory=set)
    keys: dict[str, Json] = field(default_factory=dict)

    def prior(self, call: Mapping[str, Any]) -> Json:
        """What the history holds about ``call``'s id and key: the ``prior`` to state."""
        used = _native.call_id_fingerprint(call["call_id"]) in self.call_ids
        key = self.keys.get(_native.key_fingerprint(call["key"]))
        return {"call_id_used": used, "key": None if key is None else dict(key)}

    def apply(self, effects: Sequence[Mapping[str, Any]]) -> None:
        """Writes the history entry an accepted transition's effects carry, if any."""
        for e in effects:
            if e["effect"] != "history":
                continue
            if e["entry"] == "bound":
                self.call_ids.add(e["call_id"])
                self.keys.setdefault(e["key"], {"args": e["args"], "committed": False})
            elif e["entry"] == "settled":
                entry = self.keys.setdefault(e["key"], {"args": "0" * 64, "committed": True})
                entry["committed"] = True


@dataclass
class AuditLog:
    """An audit log being written (spec/audit-log.md): keyed with HMAC-SHA-256 when ``key``
    (64 hex digits) is given, anchored by :attr:`anchor`. Each record steps the log's own copy
    of the run through the kernel, so the log holds the kernel's verdicts; refused inputs are
    recorded too. The state is three values (``run``, ``anchor``, the lines written), so a
    runtime stores ``run`` and ``anchor`` with its run and goes on after a restart."""

    run: Json
    anchor: Json
    lines: list[str]
    key: Optional[str] = None

    @classmethod
    def open(
        cls,
        identity: Mapping[str, str],
        policy: Mapping[str, Any],
        created_at: int,
        key: Optional[str] = None,
        tools: Optional[Sequence[Mapping[str, Any]]] = None,
    ) -> "AuditLog":
        """Starts a log for a new run and writes its header line."""
        header = {
            "run": {"identity": identity, "policy": policy, "created_at": created_at},
            "tools": None if tools is None else list(tools),
        }
        out = json.loads(_native.audit_open(json.dumps(header), key))
        return cls(run=out["run"], anchor=out["anchor"], lines=[out["line"]], key=key)

    def record(self, input: Union[Json, str]) -> Verdict:
        """Steps the log's run with ``input``, appends the sealed record, and returns the
        kernel's verdict."""
        out = json.loads(
            _native.audit_append(
                json.dumps(self.run), json.dumps(self.anchor), _text(input), self.key
            )
        )
        self.lines.append(out["line"])
        self.run, self.anchor = out["run"], out["anchor"]
        return _verdict(out["verdict"])

    def text(self) -> str:
        """The log as written: JSON lines."""
        return "".join(self.lines)

    def anchor_json(self) -> str:
        """The anchor file's contents, for ``resumable validate --anchor FILE``."""
        return json.dumps(self.anchor, separators=(",", ":")) + "\n"
