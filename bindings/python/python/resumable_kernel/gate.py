"""A tool call gated behind a person's approval inside a LangGraph node (``interrupt()`` and
``Command(resume=...)``), driven by the driver core (:mod:`resumable_kernel.driver`).

The node runs again from its start on every resume, so :meth:`ApprovalGate.call` is asked
again each time; the core matches the proposed call against what is recorded (call id, tool,
argument digest, key) and says what to do. This module is the LangGraph glue only:

- the interrupt value is the core's request: the arguments themselves beside their digest,
  the checkpoint, ``expires_at``; a refused answer is shown again with ``refused``;
- the answer is judged at the gate's clock (any ``at`` in it is ignored), with the facts the
  gate observes; the tool receives the arguments the approval bound, never the node's current
  ones (a node whose arguments changed is refused: :class:`Changed`);
- a recorded call still consumes the resume values LangGraph replays to the node (the core
  counts the answers fed while the call waited; a value that is no answer was not counted and
  is skipped uncounted), so the node's next ``interrupt()`` gets its own answer;
- a run that cannot go on (denied, expired) raises :class:`Ended`: the node returns a clear
  result instead of asking again.

:func:`resume` resumes a graph through the package: it refuses an interrupt id that matches
no pending interrupt (LangGraph ignores it silently, langgraph #8836).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Optional

from . import _native
from . import driver as core
from .driver import Driver, Json, Tool

__all__ = ["ApprovalGate", "Changed", "Ended", "NoSuchInterrupt", "Refused", "Stopped",
           "Waiting", "approve", "deny", "resume"]


class Stopped(Exception):
    """The call was not made and will not be made by asking again: ``reason`` says why
    (``denied``, ``expired``, ``changed``, ``rejected``, ``waits``, ``busy``...). A node catches
    it and returns a clear result."""

    reason: str = "stopped"


class Ended(Stopped):
    """The run cannot go on (``phase`` failed or completed, ``cause`` why): the call was not
    made and is not asked for again."""

    def __init__(self, todo: Mapping[str, Any]) -> None:
        self.phase: str = todo["phase"]
        self.cause: Any = todo.get("cause")
        cause = self.cause
        kind = cause if isinstance(cause, str) else (cause or {}).get("cause", self.phase)
        self.reason: str = str(kind)
        super().__init__(f"the run has {self.phase}: {json.dumps(self.cause)}")


class Changed(Stopped):
    """Another call is recorded under this call id (other arguments, tool or key): refused,
    never answered with the recorded call's receipt. Propose the new call under a new id."""

    def __init__(self, todo: Mapping[str, Any]) -> None:
        self.recorded: Json = dict(todo["recorded"])
        self.proposed: Json = dict(todo["proposed"])
        self.reason = "changed"
        super().__init__(f"call {self.proposed['call_id']}: another call is recorded under "
                         "this id")


class Refused(Stopped):
    """The call's outcome is a refusal by the approver (``reject``/``respond``): ``message``."""

    def __init__(self, outcome: Mapping[str, Any]) -> None:
        self.outcome: Json = dict(outcome)
        self.reason = str(outcome["outcome"])
        super().__init__(str(outcome.get("message")))


class Waiting(Stopped):
    """The run waits on something else (another call, a person): ``todo`` says what."""

    def __init__(self, todo: Mapping[str, Any]) -> None:
        self.todo: Json = dict(todo)
        self.reason = str(todo["todo"])
        super().__init__(json.dumps(todo))


class NoSuchInterrupt(Exception):
    """A resume aimed at an interrupt id that matches no pending interrupt."""


def approve(request: Mapping[str, Any], approver: str, expires_at: int) -> Json:
    """The resume value approving the interrupt value ``request`` (what the gate surfaced):
    bound to the call id, argument digest, requester and checkpoint revision shown."""
    return core.approval(request["request"], True, approver, expires_at)


def deny(request: Mapping[str, Any], approver: str, expires_at: int) -> Json:
    """The resume value denying ``request``: the run fails."""
    return core.approval(request["request"], False, approver, expires_at)


class ApprovalGate:
    """Gates the calls of one run (``driver``) behind approvals; ``tool`` carries them out.
    ``interrupt`` is LangGraph's (the default)."""

    def __init__(self, driver: Driver, tool: Tool,
                 interrupt: Optional[Callable[[Any], Any]] = None) -> None:
        if interrupt is None:
            interrupt = _graph_interrupt()
        self.driver, self.tool, self.interrupt = driver, tool, interrupt

    def call(self, call_id: str, tool: str, args: Any, *, requester: str, approver: str,
             expires_in: int, key: Optional[str] = None,
             contract: Optional[Mapping[str, Any]] = None) -> str:
        """Makes the call once ``approver`` approved it and returns the tool's result. Safe to
        ask again from a node that runs again: a recorded result is returned, a pending
        approval asked for again, a dispatch in flight reconciled, never repeated."""
        p = core.proposal(call_id, tool, args, key=key or f"{self.driver.name}:{call_id}",
                          requester=requester, approver=approver, expires_in=expires_in,
                          contract=contract)
        consumed = 0
        refused: Optional[Json] = None
        for _ in range(core.MAX_ROUNDS):
            todo = self.driver.advance([p], self.tool)
            kind = todo["todo"]
            if kind == "ask":
                request = todo["request"]
                consumed = self._skip(consumed, request["answers"], request)
                shown: Json = {"request": request}
                if refused is not None:
                    shown["refused"] = refused
                value = self.interrupt(shown)
                out = self.driver.answer(request, self._message(value))
                if core.counted(out):
                    consumed += 1
                refused = core.rejected(out)
                self.driver.carry_out(out, self.tool)
            elif kind == "done":
                self._skip(consumed, todo["answers"], None)
                self._take_leftover(call_id)
                outcome = todo["outcomes"][0]
                if outcome["outcome"] == "result":
                    return str(json.loads(outcome["result"]))
                raise Refused(outcome)
            else:
                self._take_leftover(call_id)
                if kind == "changed":
                    raise Changed(todo)
                if kind == "ended":
                    raise Ended(todo)
                raise Waiting(todo)
        raise RuntimeError(f"call {call_id} did not settle")

    def _skip(self, consumed: int, answers: int, request: Any) -> int:
        """Consumes the resume values LangGraph hands back for the answers already fed, until
        as many as the core counted (``answers``) are behind, so that the next ``interrupt()``
        gets its own answer (spec RES-8). A value that is no answer was never counted, and is
        skipped uncounted. It stops where no answer is among the values LangGraph still holds
        (a node resumed from an old config, or run again anew, holds fewer than the core
        counted): it never asks in their place, nor takes a later question's answer."""
        while consumed < answers:
            if self.interrupt is _graph_interrupt() and not self._answer_held():
                break
            replayed = self.interrupt({"request": request, "replayed": True})
            if self._is_answer(replayed):
                consumed += 1
        return consumed

    def _answer_held(self) -> bool:
        """Whether an answer is among the values LangGraph still holds for the node's next
        ``interrupt()`` calls (``True`` where they cannot be read)."""
        held = _held_resume_values()
        return held is None or any(self._is_answer(v) for v in held)

    def _is_answer(self, value: Any) -> bool:
        return bool(json.loads(_native.driver_is_answer(self._message(value))))

    def _take_leftover(self, call_id: str) -> None:
        """Answers to this call that LangGraph still holds for the node (resumed from an old
        config whose writes hold an earlier answer, or delivered after the run ended) are
        taken here, so that the node's next ``interrupt()`` never receives them. LangGraph
        offers no public way to see the value the next ``interrupt()`` returns: this reads its
        scratchpad, and does nothing where it cannot."""
        if self.interrupt is not _graph_interrupt():
            return
        for _ in range(core.MAX_ROUNDS):
            value = _next_resume_value()
            decision = value.get("decision") if isinstance(value, Mapping) else None
            if not (isinstance(decision, Mapping) and decision.get("call_id") == call_id):
                return
            self.interrupt({"leftover": True})

    @staticmethod
    def _message(value: Any) -> str:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return json.dumps(repr(value))


def _held_resume_values() -> Optional[list[Any]]:
    """The values the node's next ``interrupt()`` calls would return, in order, or ``None``
    where they cannot be read (LangGraph 1.x's scratchpad: the resume values from the interrupt
    counter on, then the pending resume)."""
    try:
        from langgraph.config import get_config

        pad: Any = get_config()["configurable"].get("__pregel_scratchpad")
        if pad is None:
            return None
        counter = getattr(pad.interrupt_counter, "_counter", None)
        index = 0 if counter is None else int(repr(counter.__self__)[len("count("):-1])
        held = list(pad.resume[index:])
        pending = pad.get_null_resume(False)
        # Once taken, the pending resume is the last of the resume values (the same object).
        if pending is not None and not (pad.resume and pending is pad.resume[-1]):
            held.append(pending)
        return held
    except Exception:  # noqa: BLE001 - outside a graph, or a LangGraph laid out otherwise
        return None


def _next_resume_value() -> Any:
    """The value the node's next ``interrupt()`` would return, or ``None``."""
    held = _held_resume_values()
    return held[0] if held else None


def _graph_interrupt() -> Callable[[Any], Any]:
    from langgraph.types import interrupt

    return interrupt


def pending_interrupts(graph: Any, config: Mapping[str, Any]) -> list[str]:
    """The ids of the interrupts pending on the graph's thread at ``config``."""
    return [i.id for i in graph.get_state(config).interrupts]


def resume(graph: Any, config: Mapping[str, Any], interrupt_id: str, value: Any) -> Any:
    """``graph.invoke(Command(resume={interrupt_id: value}), config)``, but refused
    (:class:`NoSuchInterrupt`) when ``interrupt_id`` matches no interrupt pending at
    ``config``: LangGraph would ignore such a resume without a word (langgraph #8836)."""
    from langgraph.types import Command

    pending = pending_interrupts(graph, config)
    if interrupt_id not in pending:
        raise NoSuchInterrupt(f"interrupt {interrupt_id} is not pending (pending: {pending})")
    return graph.invoke(Command(resume={interrupt_id: value}), config)
