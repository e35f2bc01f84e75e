"""LangChain's ``HumanInTheLoopMiddleware`` (langchain 1.x, batched mode), driven by the driver
core (:mod:`resumable_kernel.driver`): glue only.

A model turn whose tool calls need review is planned as one batch (the core's ``plan_turn``,
one batch even of one call), each call's ``contract.allowed`` its tool's
``allowed_decisions``. The interrupt's value is the middleware's own ``HITLRequest``
(``action_requests``, ``review_configs``) beside the core's ``request`` (the arguments
themselves beside their digest, the checkpoint, ``expires_at``). The answer,
:func:`answer`, is the middleware's decision list with the approver and an expiry; the core
reads it (what is a decision is decided there alone: spec/frameworks.md, "Resuming"), maps each
word (approve, edit, reject, respond, deny) and judges the list at the middleware's clock
against the request the middleware asked. A value that is no decision is fed and counted
nowhere; a refused list changes nothing but the audit log; either way the middleware asks
again with ``refused``. The agent is handed the decisions as the core recorded them, once every
call is decided. ``deny`` fails the run, as the core says: no call of the turn runs and the
agent ends there (``jump_to: end``).

A node run again (every resume) consumes the values LangGraph hands back to its earlier
interrupts until as many decisions as the core counted are behind it, skipping (and not
counting) the values the core reads as no decision, so no answer is fed twice.

Each approved or edited call then runs through :meth:`KernelHITL.wrap_tool_call` with the
arguments the core handed out (an edit's, never the model's), and its answer is recorded; a
call the core did not hand out never reaches its tool. A turn whose calls were in flight when
the process died is reconciled through the core's query path with ``tool`` (its ``query``).
"""

from __future__ import annotations

import json
import threading
from typing import Any, Mapping, Optional, Sequence, cast

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.middleware.types import hook_config
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import interrupt

from . import _native
from . import driver as core
from .driver import Driver, Json, Tool


def _value_text(value: Any) -> str:
    """A resume value as the text the core reads: its JSON (a string is a JSON string, never a
    decision), or the JSON string of its ``repr`` when it has no JSON form."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return json.dumps(repr(value))


class NotBuilt(Exception):
    """A shape this middleware does not decide through the core (``per_call`` mode)."""


def answer(shown: Mapping[str, Any], decisions: Sequence[Mapping[str, Any]], approver: str,
           expires_at: int) -> Json:
    """The ``Command(resume=...)`` value answering the interrupt value ``shown`` with the
    middleware's ``decisions`` (one per action request, in order) by ``approver``, valid until
    ``expires_at``. It names the request it answers; it carries no time."""
    return {"request": shown["request"], "decisions": [dict(d) for d in decisions],
            "approver": approver, "expires_at": expires_at}


class KernelHITL(HumanInTheLoopMiddleware):
    """``HumanInTheLoopMiddleware`` whose decisions the driver core takes first. ``driver``
    holds the run; ``requester`` asks for the calls (the agent), ``approver`` decides them, each
    batch expires ``expires_in`` after it opens (in the driver clock's unit); ``tool`` answers
    status queries when a turn's calls were in flight across a crash."""

    def __init__(self, interrupt_on: Mapping[str, Any], *, driver: Driver, requester: str,
                 approver: str, expires_in: int, tool: Optional[Tool] = None,
                 **kwargs: Any) -> None:
        if kwargs.get("interrupt_mode", "batched") != "batched":
            raise NotBuilt("per_call mode: this middleware decides the batched mode only")
        super().__init__(dict(interrupt_on), **kwargs)
        self.driver, self.tool = driver, tool
        self.requester, self.approver, self.expires_in = requester, approver, expires_in
        self._lock = threading.Lock()

    def _proposal(self, tool_call: Mapping[str, Any], allowed: Any) -> Json:
        contract = {"dedupes": True, "query_fences": False, "max_attempts": 3,
                    "allowed": [k for k in ("approve", "edit", "reject", "respond", "deny")
                                if k in allowed or k == "deny"]}
        return core.proposal(tool_call["id"], tool_call["name"], tool_call["args"],
                             key=f"{self.driver.name}:{tool_call['id']}",
                             requester=self.requester, approver=self.approver,
                             expires_in=self.expires_in, contract=contract)

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> Optional[dict[str, Any]]:
        messages = state["messages"]
        last = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if last is None or not last.tool_calls:
            return super().after_model(state, runtime)
        reviewed = []
        for i, tool_call in enumerate(last.tool_calls):
            config = self.interrupt_on.get(tool_call["name"])
            if config is not None and self._should_interrupt(tool_call, config, state, runtime):
                reviewed.append((i, tool_call, config))
        if not reviewed:
            return super().after_model(state, runtime)
        proposals = [self._proposal(tc, cfg["allowed_decisions"]) for _, tc, cfg in reviewed]
        actions, configs = zip(*(self._create_action_and_config(tc, cfg, state, runtime)
                                 for _, tc, cfg in reviewed))
        decisions = self._decide(proposals, list(actions), list(configs))
        if any(d.get("type") == "deny" for d in decisions):
            # The run has failed (APR-4): no call of the turn runs, and the agent stops here.
            last.tool_calls = []
            return {"messages": [last], "jump_to": "end"}
        by_index = {i: d for (i, _, _), d in zip(reviewed, decisions)}
        kept, answers, edits = [], [], {}
        for i, tool_call in enumerate(last.tool_calls):
            if i not in by_index:
                kept.append(tool_call)
                continue
            decision = by_index[i]
            config = self.interrupt_on[tool_call["name"]]
            revised, message = self._process_decision(cast(Any, decision), tool_call, config)
            if revised is not None:
                kept.append(revised)
                if decision["type"] == "edit":
                    edits[tool_call["id"]] = decision["edited_action"]
            if message is not None:
                answers.append(message)
        last.tool_calls = kept
        return {"messages": [last, *answers], "hitl_edited_tool_calls": edits}

    def _decide(self, proposals: list[Json], actions: list[Any],
                configs: list[Any]) -> list[Mapping[str, Any]]:
        """Plans the turn, interrupts, and feeds the answers until every call is decided;
        returns the decisions as the core recorded them (also when the node runs again after
        they were taken)."""
        seen, refused = 0, None  # seen: values handed back this run that the core counted
        for _ in range(core.MAX_ROUNDS):
            todo = self.driver.advance(proposals, self.tool, turn=True)
            kind = todo["todo"]
            if kind == "ended":
                # Denied or expired (the core says which): no call of the turn runs.
                return [{"type": "deny"} for _ in proposals]
            if kind in ("done", "carry_out") or (kind == "query" and self.tool is None):
                # Decided already: nothing more is asked in this run of the node.
                return self._decided(proposals)
            if kind != "ask":
                raise RuntimeError(f"run {self.driver.name} cannot take this turn: {todo}")
            request = todo["request"]
            seen = self._skip(request, seen)
            shown: Json = {"action_requests": actions, "review_configs": configs,
                           "request": request}
            if refused is not None:
                shown["refused"] = refused
            value = interrupt(shown)
            out = self._feed(request, value)
            if core.counted(out):
                seen += 1
            refused = core.rejected(out)
            if refused is None:
                # Taken. Calls left undecided are asked about again; else the turn is decided
                # (the plan, which stages nothing, says which), and a denial ends the run.
                after = self.driver.plan(proposals, turn=True)["todo"]
                if after == "ended":
                    return [{"type": "deny"} for _ in proposals]
                if after != "ask":
                    return self._decided(proposals)
        raise RuntimeError(f"run {self.driver.name}: the batch did not settle")

    def _skip(self, request: Json, seen: int) -> int:
        """Consumes the values LangGraph hands back to this node's earlier interrupts until as
        many decisions as the core counted (``request["answers"]``) are behind, so the next
        interrupt gets a new one; ``seen`` were consumed already. A value the core reads as no
        decision was never counted: it is skipped and not counted either."""
        req = json.dumps(request)
        while seen < request["answers"]:
            replayed = _value_text(interrupt({"replayed": True}))
            if json.loads(_native.driver_is_resume_decision(req, replayed, self.approver)):
                seen += 1
        return seen

    def _decided(self, proposals: list[Json]) -> list[Mapping[str, Any]]:
        """Each call's decision in the middleware's words, as the core recorded it: the
        outcome a rejection or a response left, an edit where the arguments bound are no
        longer the proposed ones, else an approval."""
        calls = self.driver.book()["calls"]
        decided: list[Mapping[str, Any]] = []
        for p in proposals:
            record = calls[p["call_id"]]
            outcome = record.get("outcome") or {}
            if outcome.get("outcome") == "rejected":
                decided.append({"type": "reject", "message": outcome["message"]})
            elif outcome.get("outcome") == "responded":
                decided.append({"type": "respond", "message": outcome["message"]})
            elif record["args_digest"] != record["call"]["args"]:
                decided.append({"type": "edit", "edited_action": {
                    "name": p["tool"], "args": json.loads(record["args"])}})
            else:
                decided.append({"type": "approve"})
        return decided

    def _feed(self, request: Json, value: Any) -> Json:
        with self._lock:
            return self.driver.resume(request, _value_text(value), self.approver,
                                      extra=lambda out: json.dumps(out["tool_calls"]))

    def _handed_out(self, call_id: str) -> Optional[Json]:
        extra = self.driver.row().extra
        calls = json.loads(extra) if extra else []
        return next((tc for tc in calls if tc["call_id"] == call_id), None)

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        tool_call = request.tool_call
        if tool_call["name"] not in self.interrupt_on:
            return super().wrap_tool_call(request, handler)
        record = self.driver.book()["calls"].get(tool_call["id"], {})
        outcome = record.get("outcome")
        if outcome is not None and outcome["outcome"] == "result":
            # Recorded already: the answer, never a second run of the tool.
            return ToolMessage(content=json.loads(outcome["result"]), name=tool_call["name"],
                               tool_call_id=tool_call["id"])
        handed = self._handed_out(tool_call["id"])
        if handed is None:
            return ToolMessage(content="refused: the kernel has not dispatched this call",
                               name=tool_call["name"], tool_call_id=tool_call["id"],
                               status="error")
        executed = self._reviewer_edit(request)
        # The arguments the core handed out (the approved or edited ones), never the model's.
        to_run = request.override(tool_call={**tool_call, "args": json.loads(handed["args"])})
        result = handler(to_run)
        content = result.content if isinstance(result, ToolMessage) else repr(result)
        with self._lock:
            self.driver.tool_result(handed, content if isinstance(content, str)
                                    else json.dumps(content))
        return self._annotate_edited_result(result, to_run, executed)
