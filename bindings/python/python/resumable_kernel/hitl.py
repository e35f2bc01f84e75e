"""LangChain's ``HumanInTheLoopMiddleware`` (langchain 1.x, batched mode), driven by the driver
core (:mod:`resumable_kernel.driver`): glue only.

A model turn whose tool calls need review is planned as one batch (the core's ``plan_turn``,
one batch even of one call), each call's ``contract.allowed`` its tool's
``allowed_decisions``. The interrupt's value is the middleware's own ``HITLRequest``
(``action_requests``, ``review_configs``) beside the core's ``request`` (the arguments
themselves beside their digest, the checkpoint, ``expires_at``). The answer,
:func:`answer`, is the middleware's decision list with the approver and an expiry; the core
maps each word (approve, edit, reject, respond, deny: spec/frameworks.md) and judges the list
at the middleware's clock against the request it names. A refused list changes nothing but the
audit log, and the middleware asks again with ``refused``; only an accepted list is handed to
the agent. ``deny`` fails the run, as the core says: no call of the turn runs and the agent
ends there (``jump_to: end``).

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

from . import driver as core
from .driver import Driver, Json, Tool


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
        """Plans the turn, interrupts, and feeds the answers until one is accepted; returns
        the accepted decision list (also when the node runs again after it was accepted)."""
        consumed, refused = 0, None
        last: Any = None
        for _ in range(core.MAX_ROUNDS):
            todo = self.driver.advance(proposals, self.tool, turn=True)
            kind = todo["todo"]
            if kind in ("done", "ended", "carry_out") or (kind == "query" and self.tool is None):
                # Decided already: the graph hands the node's answers back in order; the
                # accepted one is the last of them.
                answers = todo.get("answers", self._answers(proposals))
                while consumed < answers:
                    last = interrupt({"replayed": True})
                    consumed += 1
                if isinstance(last, Mapping) and "decisions" in last:
                    return list(last["decisions"])
                if kind == "ended":
                    return [{"type": "deny"} for _ in proposals]
                raise RuntimeError(f"run {self.driver.name}: the turn was decided, and its "
                                   "answer is not among the values the graph replays")
            if kind != "ask":
                raise RuntimeError(f"run {self.driver.name} cannot take this turn: {todo}")
            request = todo["request"]
            while consumed < request["answers"]:
                interrupt({"replayed": True})
                consumed += 1
            shown: Json = {"action_requests": actions, "review_configs": configs,
                           "request": request}
            if refused is not None:
                shown["refused"] = refused
            value = interrupt(shown)
            consumed += 1
            out = self._feed(value)
            refused = core.rejected(out)
            if refused is None:
                return list(value["decisions"])
        raise RuntimeError(f"run {self.driver.name}: the batch did not settle")

    def _answers(self, proposals: list[Json]) -> int:
        calls = self.driver.book()["calls"]
        return max((calls.get(p["call_id"], {}).get("answers", 0) for p in proposals), default=0)

    def _feed(self, value: Any) -> Json:
        if not isinstance(value, Mapping) or not {"request", "decisions", "approver",
                                                  "expires_at"} <= set(value):
            return {"verdict": "not_a_decision", "rejection": {},
                    "message": f"the resume value is not an answer: {value!r}"}
        with self._lock:
            return self.driver.decide(value["request"], value["decisions"],
                                      str(value["approver"]), int(value["expires_at"]),
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
