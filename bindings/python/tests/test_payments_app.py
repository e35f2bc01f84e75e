"""The payments app (payments_app.py) as a new user meets it: the approved amount is the one
paid or the resume is refused; a late delivery is refused; a new payment under an old call id
is paid after its own approval or refused, never answered with the old receipt; the second
question gets its own answer; every flow's audit log validates."""

from __future__ import annotations

import pathlib
import subprocess
from typing import Any

import pytest
from langgraph.types import Command

from ledger import DedupingTool, Ledger
from payments_app import KEY, Clock, build, interrupt_value, run_name
from resumable_kernel import gate
from resumable_kernel.driver import Driver, Store


class App:
    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.tmp = tmp_path
        self.clock = Clock()
        self.ledger = Ledger(tmp_path / "payments.ledger")
        self.store = Store(str(tmp_path / "runs.db"))
        self.graph = build(self.store, str(tmp_path / "graph.db"), DedupingTool(self.ledger),
                           self.clock)

    def config(self, thread: str = "t-1") -> Any:
        return {"configurable": {"thread_id": thread}}

    def start(self, to: str = "bob", amount: int = 50, thread: str = "t-1",
              call_id: str = "call-1") -> Any:
        return self.graph.invoke({"to": to, "amount": amount, "call_id": call_id},
                                 self.config(thread))

    def resume(self, value: Any, thread: str = "t-1") -> Any:
        self.clock.now += 1
        return self.graph.invoke(Command(resume=value), self.config(thread))

    def approval(self, shown: Any, approve: bool = True) -> Any:
        if approve:
            return gate.approve(shown, "alice", expires_at=self.clock.now + 600)
        return gate.deny(shown, "alice", expires_at=self.clock.now + 600)

    def paid(self) -> list[dict[str, Any]]:
        return [e["args"] for e in self.ledger.entries()]

    def validate(self, resumable_bin: str, thread: str = "t-1") -> None:
        driver = Driver(self.store, run_name(thread), {}, clock=self.clock, key=KEY)
        log, key, anchor = (self.tmp / f"{thread}.log", self.tmp / "audit.key",
                            driver.anchor())
        log.write_text(driver.log())
        key.write_text(KEY + "\n")
        done = subprocess.run([resumable_bin, "validate", "--key-file", str(key), "--anchor",
                               anchor, str(log)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_approver_is_shown_the_arguments_beside_their_digest(tmp_path, resumable_bin) -> None:
    app = App(tmp_path)
    shown = interrupt_value(app.start())
    call = shown["request"]["calls"][0]
    assert call["args"] == '{"amount":50,"to":"bob"}'
    assert len(call["args_digest"]) == 64
    app.validate(resumable_bin)


def test_approved_pays_once_and_the_second_question_gets_its_own_answer(tmp_path, resumable_bin) -> None:
    app = App(tmp_path)
    shown = interrupt_value(app.start())
    question = interrupt_value(app.resume(app.approval(shown)))
    assert question == {"question": "notify the payee?"}
    out = app.resume("yes, notify")
    assert out["status"] == "paid" and out["notify"] == "yes, notify"
    assert app.paid() == [{"to": "bob", "amount": 50}]
    app.validate(resumable_bin)


def test_the_same_payment_in_a_new_run_of_the_node_asks_its_second_question(
    tmp_path, resumable_bin
) -> None:
    app = App(tmp_path)
    shown = interrupt_value(app.start())
    # Two answers fed and counted: a self-approval (refused), then the approval.
    refused = interrupt_value(app.resume(gate.approve(shown, "agent", app.clock.now + 600)))
    assert refused["refused"]["rejection"]["rejection"] == "self_approval"
    question = interrupt_value(app.resume(app.approval(shown)))
    assert question == {"question": "notify the payee?"}
    assert app.resume("yes")["notify"] == "yes"
    # The same payment again on the thread: a new run of the node, which LangGraph hands none
    # of the two answers; its second question is asked, and gets its own answer.
    assert interrupt_value(app.start()) == {"question": "notify the payee?"}
    out = app.resume("no")
    assert out["notify"] == "no" and out["status"] == "paid"
    assert app.paid() == [{"to": "bob", "amount": 50}]
    app.validate(resumable_bin)


def test_state_changed_to_999_before_the_resume_is_refused_never_paid(tmp_path, resumable_bin) -> None:
    app = App(tmp_path)
    shown = interrupt_value(app.start())
    app.graph.update_state(app.config(), {"amount": 999})
    out = app.resume(app.approval(shown))
    assert out["status"] == "changed"
    assert app.paid() == []
    app.validate(resumable_bin)


def test_a_late_delivery_is_refused_and_the_graph_ends(tmp_path, resumable_bin) -> None:
    app = App(tmp_path)
    shown = interrupt_value(app.start())
    answer = app.approval(shown)  # made in time, delivered late
    app.clock.now += 3600
    out = app.resume(answer)
    assert out["status"] == "expired", out
    assert interrupt_value(out) is None
    assert app.paid() == []
    app.validate(resumable_bin)


def test_a_denial_ends_the_graph_with_a_clear_result(tmp_path, resumable_bin) -> None:
    app = App(tmp_path)
    shown = interrupt_value(app.start())
    out = app.resume(app.approval(shown, approve=False))
    assert out["status"] == "denied" and interrupt_value(out) is None
    assert app.paid() == []
    app.validate(resumable_bin)


def test_a_new_payment_under_an_old_call_id_is_refused_never_the_old_receipt(tmp_path, resumable_bin) -> None:
    app = App(tmp_path)
    shown = interrupt_value(app.start())
    app.resume(app.approval(shown))
    first = app.resume("no")
    assert first["status"] == "paid"
    second = app.start(to="carol", amount=70)  # same thread, same call id
    assert second["status"] == "changed" and second.get("receipt") == first["receipt"]
    assert interrupt_value(second) is None
    assert app.paid() == [{"to": "bob", "amount": 50}]
    app.validate(resumable_bin)


def test_a_new_payment_under_a_new_call_id_is_paid_after_its_own_approval(tmp_path, resumable_bin) -> None:
    app = App(tmp_path)
    app.resume(app.approval(interrupt_value(app.start())))
    first = app.resume("no")
    shown = interrupt_value(app.start(to="carol", amount=70, call_id="call-2"))
    assert shown["request"]["calls"][0]["args"] == '{"amount":70,"to":"carol"}'
    app.resume(app.approval(shown))
    second = app.resume("yes")
    assert second["receipt"] != first["receipt"] and second["notify"] == "yes"
    assert app.paid() == [{"to": "bob", "amount": 50}, {"to": "carol", "amount": 70}]
    app.validate(resumable_bin)


def test_an_answer_for_another_thread_is_refused_and_asked_again(tmp_path, resumable_bin) -> None:
    app = App(tmp_path)
    other = interrupt_value(app.start(thread="t-2"))
    app.start()
    out = app.resume(app.approval(other))
    again = interrupt_value(out)
    assert again["refused"]["verdict"] != "accepted"
    assert app.paid() == []
    out = app.resume(app.approval(again))
    assert interrupt_value(out) == {"question": "notify the payee?"}
    assert app.paid() == [{"to": "bob", "amount": 50}]
    app.validate(resumable_bin)
    app.validate(resumable_bin, "t-2")


def test_the_resume_helper_refuses_an_interrupt_id_that_is_no_longer_pending(tmp_path) -> None:
    app = App(tmp_path)
    first = app.start()
    old_id = first["__interrupt__"][0].id
    assert len(old_id) == 32 and int(old_id, 16) >= 0  # as LangGraph emits them
    gate.resume(app.graph, app.config(), old_id, app.approval(interrupt_value(first)))
    with pytest.raises(gate.NoSuchInterrupt):
        gate.resume(app.graph, app.config(), old_id, app.approval(interrupt_value(first),
                                                                  approve=False))
    assert app.paid() == [{"to": "bob", "amount": 50}]


def test_plain_langgraph_takes_a_resume_for_an_interrupt_id_no_longer_pending(tmp_path) -> None:
    app = App(tmp_path)
    first = app.start()
    old_id = first["__interrupt__"][0].id
    second = app.graph.invoke(Command(resume={old_id: app.approval(interrupt_value(first))}),
                              app.config())
    assert second["__interrupt__"][0].id != old_id
    # The old id again (a denial re-sent from an old config): LangGraph raises nothing and
    # hands the value to the interrupt that is pending, the second question.
    out = app.graph.invoke(Command(resume={old_id: "deny"}), app.config())
    assert out["notify"] == "deny"


def test_a_run_of_the_previous_release_is_refused_by_name(tmp_path) -> None:
    import sqlite3

    db = sqlite3.connect(str(tmp_path / "runs.db"))
    db.execute("CREATE TABLE kernel_runs (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, "
               "run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT)")
    db.execute("INSERT INTO kernel_runs VALUES ('payments:t-1', 1, '{}', '{}', NULL)")
    db.commit()
    db.close()
    app = App(tmp_path)
    with pytest.raises(Exception, match="previous release"):
        app.start()
