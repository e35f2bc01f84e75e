"""Stateful property tests of the gate the way a hostile framework treats it: Hypothesis's
``RuleBasedStateMachine`` over the payments app (a real LangGraph graph on a real SQLite
checkpointer), with random sequences of start, approve, deny, resume from an old config,
state changed between suspension and resume, late delivery, and the second question's
answer, checked against a ledger the tool writes outside the graph:

- each tool key is committed at most once, always with the arguments of its first commit;
- every amount paid is one an approval bound;
- nothing is paid after the expiry of the approval request that bound it;
- the second question receives only its own answers (never an approval object, nor a
  value sent to the gate);
- nobody is asked in the place of an answer already given (a replayed value's prompt), and
  the second question's answer ends the node (it is never taken by the gate);
- every run's audit log validates (``resumable validate --key-file --anchor``).

Seeded (``derandomize=True``) and sized for CI. The same machine is run against four
deliberately broken gates (test-only subclasses: two reproduce the previous release's
behaviours, one skips replayed values past those LangGraph holds, one skips any value it holds), and Hypothesis must find a
failure in each."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition,
                                 rule, run_state_machine_as_test)
from langgraph.types import Command

from ledger import Ledger
from payments_app import KEY, Clock, build, interrupt_value, run_name
from resumable_kernel import gate
from resumable_kernel.driver import Driver, Store

THREADS = ("t-1", "t-2")
CALL_IDS = ("call-1", "call-2")
AMOUNTS = (50, 70, 999)

SETTINGS = settings(derandomize=True, max_examples=40, stateful_step_count=10, deadline=None,
                    suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.generate])
"""The CI run: derandomized (the same examples every run), 40 sequences of up to 10 steps."""


class LedgerTool:
    """The payments service outside the graph: every commit is written to the ledger before it
    answers, with the service's time; a tool key committed again answers its first result."""

    def __init__(self, ledger: Ledger, clock: Clock) -> None:
        self.ledger, self.clock = ledger, clock

    def query(self, tool_key: str) -> Optional[str]:
        return next((e["result"] for e in self.ledger.entries()
                     if e["tool_key"] == tool_key and e["fresh"]), None)

    def commit(self, tool_key: str, tool: str, args: Any) -> str:
        found = self.query(tool_key)
        result = found or f"receipt #{len(self.ledger.entries()) + 1}"
        self.ledger.append({"tool_key": tool_key, "args": args, "at": self.clock.now,
                            "fresh": found is None, "result": result})
        return result


WORKER = pathlib.Path(__file__).with_name("payments_worker.py")


class PaymentsMachine(RuleBasedStateMachine):
    gate_class: type[gate.ApprovalGate] = gate.ApprovalGate
    resumable_bin: str = ""
    kills: bool = False

    def __init__(self) -> None:
        super().__init__()
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="payments-machine-"))
        self.clock = Clock()
        self.ledger = Ledger(self.dir / "payments.ledger")
        self.store = Store(str(self.dir / "runs.db"))
        self.graph = build(self.store, str(self.dir / "graph.db"),
                           LedgerTool(self.ledger, self.clock), self.clock, self.gate_class)
        self.pending: dict[str, Any] = {}
        self.asked: dict[str, list[tuple[Any, Any]]] = {t: [] for t in THREADS}
        self.approved: list[tuple[Any, int]] = []  # (args, the request's expires_at)
        self.notified: list[Any] = []
        self.answers = 0

    def config(self, thread: str) -> Any:
        return {"configurable": {"thread_id": thread}}

    def invoke(self, thread: str, value: Any, config: Any = None) -> None:
        out = self.graph.invoke(value, config or self.config(thread))
        shown = interrupt_value(out)
        assert not (isinstance(shown, dict) and shown.get("replayed")), \
            f"asked in the place of a replayed answer: {shown}"
        self.pending[thread] = shown
        if isinstance(shown, dict) and "request" in shown:
            self.asked[thread].append((self.graph.get_state(self.config(thread)).config, shown))
        if "notify" in out:
            self.notified.append(out["notify"])

    def approval(self, shown: Any, approve: bool = True) -> Any:
        request = shown["request"]
        if approve:
            self.approved.append((json.loads(request["calls"][0]["args"]),
                                  request["expires_at"]))
        made = (gate.approve if approve else gate.deny)(shown, "alice", self.clock.now + 600)
        return dict(made, at=self.clock.now)  # the approver's own stamp: never to be trusted

    def asking(self, thread: str) -> bool:
        shown = self.pending.get(thread)
        return isinstance(shown, dict) and "request" in shown

    @initialize()
    def a_first_payment(self) -> None:
        self.invoke("t-1", {"call_id": "call-1", "to": "bob", "amount": 50})

    @rule(thread=st.sampled_from(THREADS), call_id=st.sampled_from(CALL_IDS),
          to=st.sampled_from(("bob", "carol")), amount=st.sampled_from(AMOUNTS))
    def start(self, thread: str, call_id: str, to: str, amount: int) -> None:
        self.clock.now += 1
        self.invoke(thread, {"call_id": call_id, "to": to, "amount": amount})

    @rule(thread=st.sampled_from(THREADS))
    def approve(self, thread: str) -> None:
        if self.asking(thread):
            answer = self.approval(self.pending[thread])
            self.clock.now += 1
            self.invoke(thread, Command(resume=answer))

    @rule(thread=st.sampled_from(THREADS))
    def deny(self, thread: str) -> None:
        if self.asking(thread):
            answer = self.approval(self.pending[thread], approve=False)
            self.clock.now += 1
            self.invoke(thread, Command(resume=answer))

    @rule(thread=st.sampled_from(THREADS), which=st.integers(0, 3),
          approve=st.booleans())
    def resume_from_an_old_config(self, thread: str, which: int, approve: bool) -> None:
        if self.asked[thread]:
            config, shown = self.asked[thread][which % len(self.asked[thread])]
            answer = self.approval(shown, approve)
            self.clock.now += 1
            self.invoke(thread, Command(resume=answer), config)

    @rule(thread=st.sampled_from(THREADS), amount=st.sampled_from(AMOUNTS))
    def change_the_state(self, thread: str, amount: int) -> None:
        if self.pending.get(thread) is not None:
            self.graph.update_state(self.config(thread), {"amount": amount})

    @rule(thread=st.sampled_from(THREADS))
    def deliver_late(self, thread: str) -> None:
        if self.asking(thread):
            answer = self.approval(self.pending[thread])  # made in time
            self.clock.now += 3600
            self.invoke(thread, Command(resume=answer))

    @rule(thread=st.sampled_from(THREADS))
    def send_what_is_no_decision(self, thread: str) -> None:
        if self.asking(thread):
            self.clock.now += 1
            self.invoke(thread, Command(resume="yes please"))

    @precondition(lambda self: self.kills)
    @rule(thread=st.sampled_from(THREADS))
    def approve_in_a_worker_killed_after_the_payment(self, thread: str) -> None:
        if not self.asking(thread):
            return
        answer = self.dir / "answer.json"
        answer.write_text(json.dumps(self.approval(self.pending[thread])))
        self.clock.now += 1
        done = subprocess.run([sys.executable, str(WORKER), str(self.dir), thread,
                               str(self.clock.now), str(answer)], cwd=WORKER.parent,
                              capture_output=True, text=True, timeout=120)
        # Killed after the payment, or it had nothing to pay (the core refused the answer).
        assert done.returncode in (0, -signal.SIGKILL), done.stderr
        state = self.graph.get_state(self.config(thread))
        self.pending[thread] = state.interrupts[0].value if state.interrupts else None

    @precondition(lambda self: any(isinstance(v, dict) and "question" in v
                                   for v in self.pending.values()))
    @rule(data=st.data())
    def answer_the_second_question(self, data: st.DataObject) -> None:
        threads = [t for t, v in self.pending.items() if isinstance(v, dict) and "question" in v]
        thread = data.draw(st.sampled_from(threads))
        self.answers += 1
        self.clock.now += 1
        self.invoke(thread, Command(resume=f"answer #{self.answers}"))
        # The node's last interrupt is answered: it ends, its answer never taken by the gate.
        assert self.pending[thread] is None, f"the question's answer went elsewhere: {self.pending}"

    @invariant()
    def each_tool_key_commits_once_with_its_first_arguments(self) -> None:
        first: dict[str, Any] = {}
        for e in self.ledger.entries():
            assert first.setdefault(e["tool_key"], e["args"]) == e["args"], e
        assert sum(e["fresh"] for e in self.ledger.entries()) == len(first)

    @invariant()
    def every_amount_paid_was_approved_in_time(self) -> None:
        for e in self.ledger.entries():
            bound = [expires for args, expires in self.approved if args == e["args"]]
            assert bound, f"paid {e['args']}, which no approval bound"
            assert e["at"] <= max(bound), f"paid {e['args']} at {e['at']}, after expiry"

    @invariant()
    def the_second_question_never_receives_an_approval(self) -> None:
        for notify in self.notified:
            assert isinstance(notify, str) and notify.startswith("answer #"), \
                f"the second question received {notify!r}"

    def teardown(self) -> None:
        try:
            for thread in THREADS:
                if self.store.load(run_name(thread)) is None:
                    continue
                d = Driver(self.store, run_name(thread), {}, clock=self.clock, key=KEY)
                log, key = self.dir / f"{thread}.log", self.dir / "audit.key"
                log.write_text(d.log())
                key.write_text(KEY + "\n")
                done = subprocess.run([self.resumable_bin, "validate", "--key-file", str(key),
                                       "--anchor", d.anchor(), str(log)],
                                      capture_output=True, text=True)
                assert done.returncode == 0, done.stdout + done.stderr
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class CurrentArgumentsGate(gate.ApprovalGate):
    """The previous release's gate: a recorded call found by its call id alone, and the tool
    handed the node's current arguments."""

    def call(self, call_id: str, tool: str, args: Any, **kw: Any) -> str:  # type: ignore[override]
        record = self.driver.book()["calls"].get(call_id)
        proposed = json.loads(record["args"]) if record else args
        real = self.tool

        class Current:
            def commit(self, tool_key: str, name: str, approved: Any) -> str:
                return real.commit(tool_key, name, args)

            def query(self, tool_key: str) -> Optional[str]:
                return real.query(tool_key)

        self.tool = Current()
        try:
            return super().call(call_id, tool, proposed, **kw)
        finally:
            self.tool = real


class AnswerTimeGate(gate.ApprovalGate):
    """The previous release's clock: the run judged at the ``at`` its latest answer claims (read
    from the resume values LangGraph holds for the node, before the gate plans)."""

    def __init__(self, driver: Driver, tool: Any, interrupt: Any = None) -> None:
        super().__init__(driver, tool, interrupt)
        real_clock = driver.clock

        def claimed() -> int:
            from langgraph.config import get_config

            pad = get_config()["configurable"].get("__pregel_scratchpad")
            values = list(pad.resume) if pad is not None else []
            if pad is not None and pad.get_null_resume(False) is not None:
                values.append(pad.get_null_resume(False))
            stamps = [v["at"] for v in values if isinstance(v, dict) and "at" in v]
            return int(stamps[-1]) if stamps else real_clock()

        driver.clock = claimed


class SkipsPastTheEndGate(gate.ApprovalGate):
    """A gate that skips as many replayed values as the core counted, even where LangGraph
    holds fewer (a node resumed from an old config): it interrupts in the place of an answer."""

    def _skip(self, consumed: int, answers: int, request: Any) -> int:
        while consumed < answers:
            replayed = self.interrupt({"request": request, "replayed": True})
            if json.loads(gate._native.driver_is_answer(self._message(replayed))):
                consumed += 1
        return consumed


class SkipsAnyHeldValueGate(gate.ApprovalGate):
    """A gate that skips while LangGraph holds any value, answer or not: in a new run of the
    node, the second question's answer is taken for a replayed one."""

    def _answer_held(self) -> bool:
        held = gate._held_resume_values()
        return held is None or len(held) > 0


def machine(gate_class: type[gate.ApprovalGate], resumable_bin: str,
            kills: bool = False) -> Any:
    return type(f"{gate_class.__name__}Machine", (PaymentsMachine,),
                {"gate_class": gate_class, "resumable_bin": resumable_bin, "kills": kills})


def test_the_gate_holds_every_invariant(resumable_bin: str) -> None:
    run_state_machine_as_test(machine(gate.ApprovalGate, resumable_bin), settings=SETTINGS)


def test_the_gate_holds_every_invariant_across_sigkill(resumable_bin: str) -> None:
    # A worker process approves and is killed with SIGKILL right after the payment; the
    # graph goes on in this process. Each kill starts a Python process: fewer sequences.
    run_state_machine_as_test(machine(gate.ApprovalGate, resumable_bin, kills=True),
                              settings=settings(SETTINGS, max_examples=10))


@pytest.mark.parametrize("broken,found", [(CurrentArgumentsGate, "no approval bound|after expiry"),
                                          (AnswerTimeGate, "no approval bound|after expiry"),
                                          (SkipsPastTheEndGate, "replayed answer"),
                                          (SkipsAnyHeldValueGate, "went elsewhere")])
def test_hypothesis_finds_each_broken_gate(broken: Any, found: str, resumable_bin: str) -> None:
    with pytest.raises(AssertionError, match=found):
        run_state_machine_as_test(machine(broken, resumable_bin),
                                  settings=settings(SETTINGS, max_examples=200))


if os.environ.get("RESUMABLE_MACHINE_EXAMPLES"):
    # A longer run: RESUMABLE_MACHINE_EXAMPLES=500 pytest -k holds_every
    SETTINGS = settings(SETTINGS, max_examples=int(os.environ["RESUMABLE_MACHINE_EXAMPLES"]))
