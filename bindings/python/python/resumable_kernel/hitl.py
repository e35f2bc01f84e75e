"""LangChain's ``HumanInTheLoopMiddleware`` (langchain 1.x, batched mode), decided by the kernel.

:class:`KernelHITL` is the middleware with the kernel in front of every decision. A model turn
whose tool calls need review becomes one kernel batch (spec 5.5, BAT-1): one call per action
request, in order, each call's ``contract.allowed`` the tool's ``allowed_decisions`` (POL-1),
one checkpoint for all of them, committed to a :class:`~resumable_kernel.gate.RunStore` before
the graph is interrupted. The interrupt's value is the middleware's own ``HITLRequest``
(``action_requests``, ``review_configs``) with what binds an answer: the batch's ``checkpoint``
and each call's id, argument digest and requester (``calls``). An answer is made with
:func:`answer` from that value: the middleware's decision list (``approve``, ``edit``,
``reject``, ``respond``) with the approver, the time and an expiry. The whole list is fed to the
kernel as one ``decision: batch`` (spec/frameworks.md maps each word); only an accepted list is
handed to the agent. A refused one changes nothing, and the middleware interrupts again with
the same request, the refusal (``refused``) and its ``message``, so the next
``Command(resume=...)`` answers that; a resume value that is not such an answer is refused the
same way (``not_a_decision``), and so is an edit that renames the tool (another call).

Once the kernel has accepted every decision it has dispatched the approved and edited calls
(BAT-3); each tool then runs under its dispatch (:meth:`KernelHITL.dispatch_for` gives the tool
key), with the arguments the kernel bound (an edit's, whose digest is RFC 8785 of the edited
args, BAT-5), and its answer is recorded in the run as it comes (BAT-4). A call the kernel did
not dispatch is answered with an error message and never reaches the tool.

Refused by name (:class:`NotBuilt`): the middleware's ``per_call`` mode, and a turn with more
reviewed calls than one batch holds (:data:`resumable_kernel.BATCH_CAPACITY`); the middleware
answers one turn with one decision list, so it is not split into consecutive batches.
Not built: reconciling a tool call whose process died while it was in flight (the kernel's
``recover``); :class:`~resumable_kernel.gate.ApprovalGate` shows that for single calls.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping, Optional

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import interrupt

import resumable_kernel as rk
from resumable_kernel.gate import MAX_ROUNDS, Refused, RunStore, Stored, open_run, stored_run


class NotBuilt(Exception):
    """A shape this middleware does not decide through the kernel."""


def _kernel_allowed(allowed: Any) -> rk.Allowed:
    return [k for k in rk.VERDICT_KINDS if k in allowed]


def answer(request: Mapping[str, Any], decisions: list[Mapping[str, Any]], approver: str,
           at: int, expires_at: int) -> rk.Json:
    """The ``Command(resume=...)`` value that answers the interrupt value ``request`` with the
    middleware's ``decisions`` (one per action request, in order), bound to each call as the
    approver saw it: its id, its argument digest, its requester and the batch's checkpoint."""
    cp = request["checkpoint"]
    bindings = [{"call_id": c["call_id"], "args": c["args"], "requester": c["requester"],
                 "approver": approver, "revision": cp["revision"], "expires_at": expires_at}
                for c in request["calls"]]
    return {"decisions": list(decisions), "approvals": bindings, "checkpoint": cp, "at": at}


def _call_decision(approval: Mapping[str, Any], decision: Mapping[str, Any],
                   tool: str) -> rk.Json:
    """One middleware decision as the kernel's, per spec/frameworks.md."""
    kind = decision.get("type")
    if kind == "approve":
        return {"approval": dict(approval), "verdict": "approve"}
    if kind == "edit":
        edited = decision.get("edited_action") or {}
        if edited.get("name") != tool:
            raise _not_a_decision(f"an edit that renames {tool} is another call: {decision!r}")
        return {"approval": dict(approval), "verdict": "edit",
                "args": rk.digest(edited.get("args"))}
    if kind == "reject":
        return {"approval": dict(approval), "verdict": "reject",
                "reason": rk.digest(decision.get("message", ""))}
    if kind == "respond":
        return {"approval": dict(approval), "verdict": "respond",
                "result": rk.digest(decision.get("message"))}
    raise _not_a_decision(f"not a decision of the middleware: {decision!r}")


def _not_a_decision(message: str) -> Refused:
    return Refused(rk.Rejected("not_a_decision", {}, message))


class KernelHITL(HumanInTheLoopMiddleware):
    """``HumanInTheLoopMiddleware`` whose decisions the kernel takes first. ``store`` and
    ``run_name`` hold the kernel's run; ``requester`` asks for the calls (the agent), ``approver``
    decides them, each batch expires ``expires_in`` after it opens; ``clock`` gives the time."""

    def __init__(self, interrupt_on: Mapping[str, Any], *, store: RunStore, run_name: str,
                 identity: Mapping[str, str], clock: Callable[[], int], requester: str,
                 approver: str, expires_in: int, operator: str = "ops",
                 reconcile_window: int = 3600, **kwargs: Any) -> None:
        if kwargs.get("interrupt_mode", "batched") != "batched":
            raise NotBuilt("per_call mode: one interrupt per call is a batch of one each, and "
                           "this middleware decides the batched mode only")
        super().__init__(dict(interrupt_on), **kwargs)
        self.run_store, self.run_name, self.clock = store, run_name, clock
        self._lock = threading.Lock()
        self.identity = dict(identity)
        self.requester, self.approver, self.expires_in = requester, approver, expires_in
        open_run(store, run_name, identity, operator, reconcile_window, clock)

    def stored(self) -> Stored:
        return stored_run(self.run_store, self.run_name)

    def _step(self, input: rk.Json) -> rk.Accepted:
        """One kernel step, committed before anything it commands is carried out. The agent
        runs a turn's tools in parallel: their results are stepped one at a time."""
        with self._lock:
            s = self.stored()
            v = rk.step(s.run, input)
            if isinstance(v, rk.Rejected):
                raise Refused(v)
            s.history.apply(v.effects)
            before = s.run["revision"]
            s.run, s.checkpoint = v.run, v.checkpoint or s.checkpoint
            self.run_store.commit(self.run_name, before, s)
            return v

    def _call(self, tool_call: Mapping[str, Any], allowed: Any) -> rk.Json:
        return {"call_id": tool_call["id"], "tool": tool_call["name"],
                "args": rk.digest(tool_call["args"]),
                "key": f"{self.run_name}:{tool_call['id']}",
                "contract": {"dedupes": True, "query_fences": False, "max_attempts": 3,
                             "allowed": _kernel_allowed(allowed)}}

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
        if len(reviewed) > rk.BATCH_CAPACITY:
            raise NotBuilt(f"{len(reviewed)} reviewed calls in one turn: one batch holds at "
                           f"most {rk.BATCH_CAPACITY}")
        calls = [self._call(tc, cfg["allowed_decisions"]) for _, tc, cfg in reviewed]
        actions, configs = zip(*(self._create_action_and_config(tc, cfg, state, runtime)
                                 for _, tc, cfg in reviewed))
        decisions = self._decide(calls, list(actions), list(configs))
        # The kernel accepted these decisions: the agent gets them, as the middleware hands
        # them on (kept calls, messages for rejections and answers, edits by call id).
        by_index = {i: d for (i, _, _), d in zip(reviewed, decisions)}
        kept, answers, edits = [], [], {}
        for i, tool_call in enumerate(last.tool_calls):
            if i not in by_index:
                kept.append(tool_call)
                continue
            config = self.interrupt_on[tool_call["name"]]
            revised, message = self._process_decision(by_index[i], tool_call, config)
            if revised is not None:
                kept.append(revised)
                if by_index[i]["type"] == "edit":
                    edits[tool_call["id"]] = by_index[i]["edited_action"]
            if message is not None:
                answers.append(message)
        last.tool_calls = kept
        return {"messages": [last, *answers], "hitl_edited_tool_calls": edits}

    def _batch_of(self, run: rk.Json, calls: list[rk.Json]) -> Optional[rk.Json]:
        """The run's batch, if it is the one for these calls."""
        batch = run.get("batch")
        if batch is None:
            return None
        ids = [s["call"]["call"]["call_id"] for s in batch["slots"]]
        return batch if ids == [c["call_id"] for c in calls] else None

    def _decide(self, calls: list[rk.Json], actions: list[Any],
                configs: list[Any]) -> list[Mapping[str, Any]]:
        """Suspends the run for the batch (once), interrupts, and feeds the answers to the
        kernel until one is accepted; returns the accepted decision list."""
        refused: Optional[rk.Rejected] = None
        for _ in range(MAX_ROUNDS):
            s = self.stored()
            phase, batch = s.run["phase"], self._batch_of(s.run, calls)
            if batch is None and phase["phase"] == "running" and phase["in_flight"] is None:
                history = s.history
                proposals = [{"call": c, "requester": self.requester,
                              "prior": history.prior(c)} for c in calls]
                now = self.clock()
                self._step({"at": now, "kind": "suspend",
                            "wait": {"wait": "batch", "calls": proposals},
                            "expires_at": now + self.expires_in,
                            "responsible": self.approver, "resource_version": 0})
                continue
            if batch is None or (phase["phase"] != "suspended" and batch["closed"] is None):
                raise RuntimeError(f"run {self.run_name} cannot take this turn's batch: {phase}")
            # Open: ask. Closed: the node runs again after the kernel took an answer (a crash
            # before the graph saved its step); the graph hands the answers back in order, and
            # only the one the kernel recorded is taken again (see _resume).
            request: dict[str, Any] = {
                "action_requests": actions, "review_configs": configs,
                "checkpoint": s.checkpoint,
                "calls": [{"call_id": c["call_id"], "args": c["args"],
                           "requester": self.requester} for c in calls],
            }
            if refused is not None:
                request["refused"], request["message"] = refused.rejection, refused.message
            value = interrupt(request)
            try:
                return self._resume(value, calls)
            except Refused as r:
                # The run is unchanged; ask again, saying why. When the node runs again, the
                # graph hands the same answers back in order, each refused the same way.
                refused = r.rejection
        raise RuntimeError(f"run {self.run_name}: the batch did not settle")

    def _resume(self, value: Any, calls: list[rk.Json]) -> list[Mapping[str, Any]]:
        if not isinstance(value, Mapping) or not {"decisions", "approvals", "checkpoint",
                                                  "at"} <= set(value):
            raise _not_a_decision("the resume value is not an answer (decisions, approvals, "
                                  f"checkpoint, at): {value!r}")
        decisions, approvals = list(value["decisions"]), list(value["approvals"])
        if len(decisions) != len(calls) or len(approvals) != len(calls):
            raise _not_a_decision(f"{len(decisions)} decisions for {len(calls)} calls")
        tools = {c["call_id"]: c["tool"] for c in calls}
        batch = [_call_decision(a, d, tools.get(a["call_id"], "")) for a, d in
                 zip(approvals, decisions)]
        cp = value["checkpoint"]
        facts = {"resource_version": cp["resource_version"], "permitted": True,
                 "within_budget": True}
        try:
            self._step({"at": value["at"], "kind": "resume", "checkpoint": cp,
                        "decision": {"decision": "batch", "decisions": batch}, "facts": facts})
        except Refused as r:
            # The node ran again after the kernel had committed this very answer (a crash
            # before the graph saved its step): every call holds exactly these decisions.
            if r.rejection.kind != "already_applied" or not self._recorded(batch):
                raise
        return decisions

    def _recorded(self, batch: list[rk.Json]) -> bool:
        recorded = self.stored().run.get("batch") or {"slots": []}
        held = {s["call"]["call"]["call_id"]: (s.get("decided") or [None])[0]
                for s in recorded["slots"]}
        return all(held.get(d["approval"]["call_id"]) == d for d in batch)

    def dispatch_for(self, call_id: str) -> Optional[rk.Json]:
        """The dispatch the kernel committed for ``call_id`` (tool key, attempt, the digest
        of the arguments it bound), if that call is in flight."""
        slots = (self.stored().run.get("batch") or {}).get("slots", [])
        slot = next((s for s in slots if s["call"]["call"]["call_id"] == call_id
                     and s["state"] == "in_flight"), None)
        if slot is None:
            return None
        call = slot["call"]["call"]
        return {"call_id": call_id, "tool_key": rk.tool_key(self.identity, call["key"]),
                "attempt": slot["attempt"], "args": call["args"]}

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        tool_call = request.tool_call
        if tool_call["name"] not in self.interrupt_on:
            return super().wrap_tool_call(request, handler)
        executed = self._reviewer_edit(request)
        to_run = request if executed is None else self._apply_edit(request, executed)
        dispatch = self.dispatch_for(tool_call["id"])
        if dispatch is None or dispatch["args"] != rk.digest(to_run.tool_call["args"]):
            # Never dispatched, or not with these arguments: the tool is not reached.
            return ToolMessage(content="refused: the kernel has not dispatched this call",
                               name=tool_call["name"], tool_call_id=tool_call["id"],
                               status="error")
        result = handler(to_run)
        content = result.content if isinstance(result, ToolMessage) else repr(result)
        self._step({"at": self.clock(), "kind": "tool_result", "call_id": tool_call["id"],
                    "attempt": dispatch["attempt"], "result": rk.digest(content)})
        return self._annotate_edited_result(result, to_run, executed)
