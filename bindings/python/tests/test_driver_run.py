"""`_native.DriverRun`, the run held native between steps, against the driver functions over
JSON: the same steps give the same audit lines and the same held run and book; `dump` and
`load` carry it whole; `compact` keeps the history index, so a settled call proposed again is
refused as a reused call id, and a copy is stepped without changing the original."""

from __future__ import annotations

import json
from typing import Any

import pytest

from resumable_kernel import _native
from resumable_kernel import driver as core

KEY = "3c" * 32
FACTS = json.dumps({"resource_version": 0, "permitted": True, "within_budget": True})
HEADER = json.dumps({"run": {"identity": {"tenant": "acme", "session": "s-1", "run": "pay-1",
                                          "definition": "payments@1"},
                             "policy": {"operator": "ops", "reconcile_window": 600},
                             "created_at": 0},
                     "tools": None})


def call(i: int) -> str:
    return json.dumps([core.proposal(f"call-{i}", "send_payment", {"n": i}, key=f"k-{i}",
                                     requester="agent", approver=None, expires_in=60)])


def settle_native(run: _native.DriverRun, props: str, now: int) -> tuple[list[str], Any]:
    """Plans and feeds `props` on the native run until the plan is no feed."""
    lines = []
    for _ in range(5):
        todo = json.loads(run.plan(now, props, FACTS))
        if todo["todo"] != "feed":
            return lines, todo
        out = json.loads(run.feed(now, json.dumps(todo["event"]), json.dumps(todo["kept"]), KEY))
        lines.append(out["line"])
        if out["verdict"]["verdict"] != "accepted":
            return lines, out["verdict"]
        for tc in out["tool_calls"]:
            fed = json.loads(run.tool_result(now, json.dumps(tc), '"paid"', KEY))
            lines.append(fed["line"])
    raise AssertionError("did not settle")


def settle_json(held: str, book: str, props: str, now: int) -> tuple[list[str], str, str]:
    """The same with the driver functions, the held run and book read and written as JSON."""
    lines = []
    for _ in range(5):
        todo = json.loads(_native.driver_plan(held, book, now, props, FACTS))
        if todo["todo"] != "feed":
            return lines, held, book
        out = json.loads(_native.driver_feed(held, book, now, json.dumps(todo["event"]),
                                             json.dumps(todo["kept"]), KEY))
        lines.append(out["line"])
        held, book = json.dumps(out["held"]), json.dumps(out["book"])
        for tc in out["tool_calls"]:
            fed = json.loads(_native.driver_tool_result(held, book, now, json.dumps(tc),
                                                        '"paid"', KEY))
            lines.append(fed["line"])
            held, book = json.dumps(fed["held"]), json.dumps(fed["book"])
    raise AssertionError("did not settle")


def test_the_native_run_steps_as_the_driver_functions_do() -> None:
    run, first = _native.DriverRun.open(HEADER, KEY)
    opened = json.loads(_native.driver_open(HEADER, KEY))
    assert first == opened["line"]
    held, book = json.dumps(opened["held"]), json.dumps(opened["book"])
    for i in range(3):
        native_lines, todo = settle_native(run, call(i), 10 + i)
        json_lines, held, book = settle_json(held, book, call(i), 10 + i)
        assert todo["todo"] == "done"
        assert native_lines == json_lines and len(native_lines) == 2
    assert json.loads(run.held()) == json.loads(held)
    assert json.loads(run.book()) == json.loads(book)
    again = _native.DriverRun.load(run.dump())
    assert json.loads(again.dump()) == json.loads(run.dump())


def test_a_compacted_run_refuses_a_settled_call_again_by_its_reused_id() -> None:
    run, _ = _native.DriverRun.open(HEADER, KEY)
    for i in range(3):
        settle_native(run, call(i), 10 + i)
    whole = run.copy()
    assert (run.records(), run.bound()) == (3, 3)
    assert run.compact() == 2  # the last result is the run's own: kept
    assert (run.records(), run.bound()) == (1, 3)
    assert len(run.dump()) < len(whole.dump())
    # The whole book answers the settled call with its outcome; the compacted one's kernel
    # refuses it by name.
    assert json.loads(whole.plan(20, call(0), FACTS))["todo"] == "done"
    _, verdict = settle_native(run, call(0), 20)
    assert verdict["verdict"] == "call_id_reused", verdict
    # A new call still runs.
    _, todo = settle_native(run, call(7), 21)
    assert todo["todo"] == "done"


def test_a_copy_is_stepped_without_changing_the_original() -> None:
    run, _ = _native.DriverRun.open(HEADER, KEY)
    before = run.dump()
    copy = run.copy()
    settle_native(copy, call(0), 10)
    assert run.dump() == before != copy.dump()


def test_a_stored_run_that_is_not_the_form_is_refused() -> None:
    with pytest.raises(_native.ResumableError):
        _native.DriverRun.load('{"held": null}')
