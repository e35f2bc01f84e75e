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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

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
    "RULES_VERSION",
    "Accepted",
    "AuditLog",
    "History",
    "Json",
    "Rejected",
    "ResumableError",
    "Verdict",
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
        """The dispatch to carry out after the commit, if any."""
        return self.effect("dispatch")


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
    return json.loads(_native.new_run(json.dumps(spec)))


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
    return json.loads(_native.seal_checkpoint(_text(checkpoint)))


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
