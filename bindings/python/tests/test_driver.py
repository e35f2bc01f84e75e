"""The Python driver layer's own I/O: compare-and-set with a retry from the stored run, the
audit log it writes, and the previous release's tables refused by name."""

from __future__ import annotations

import itertools
import sqlite3
import subprocess
from typing import Any

import pytest

from resumable_kernel import driver as core
from resumable_kernel.driver import Conflict, Driver, LegacyRun, Store

IDENTITY = {"tenant": "acme", "session": "s-1", "run": "pay-1", "definition": "payments@1"}
KEY = "3c" * 32
PROPOSAL = core.proposal("call-1", "send_payment", {"to": "bob", "amount": 50},
                         key="pay-1:call-1", requester="agent", approver="alice",
                         expires_in=60)


def drivers(tmp_path) -> tuple[Driver, Driver]:
    ticks = itertools.count(1)
    store = Store(str(tmp_path / "runs.db"))
    a = Driver(store, "pay-1", IDENTITY, clock=lambda: next(ticks), key=KEY)
    b = Driver(Store(str(tmp_path / "runs.db")), "pay-1", IDENTITY, clock=lambda: next(ticks),
               key=KEY)
    return a, b


def validate(resumable_bin: str, d: Driver, tmp_path) -> None:
    log, key = tmp_path / "run.log", tmp_path / "audit.key"
    log.write_text(d.log())
    key.write_text(KEY + "\n")
    done = subprocess.run([resumable_bin, "validate", "--key-file", str(key), "--anchor",
                           d.anchor(), str(log)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_lost_compare_and_set_is_retried_from_the_stored_run(tmp_path, resumable_bin) -> None:
    a, b = drivers(tmp_path)
    todo = a.plan([PROPOSAL])
    assert todo["todo"] == "feed"
    real = a.store.commit
    raced: list[bool] = []

    def commit(name: str, before: Any, out: Any, *args: Any, **kw: Any) -> bool:
        if not raced:  # another worker suspends the run first
            raced.append(True)
            b.feed(b.plan([PROPOSAL]))
        return real(name, before, out, *args, **kw)

    a.store.commit = commit  # type: ignore[method-assign]
    out = a.feed(todo)
    # Lost, then staged again on the run as it now is: the kernel refuses a second suspend,
    # and that refusal is a line of the log too (REJ-1).
    assert out["verdict"]["verdict"] != "accepted"
    assert a.held()["anchor"]["records"] == 2
    assert a.plan([PROPOSAL])["todo"] == "ask"
    validate(resumable_bin, a, tmp_path)


def test_a_compare_and_set_lost_every_time_is_a_conflict(tmp_path) -> None:
    a, _ = drivers(tmp_path)
    a.store.commit = lambda *args, **kw: False  # type: ignore[method-assign]
    with pytest.raises(Conflict):
        a.feed(a.plan([PROPOSAL]))


@pytest.mark.parametrize("table", ["kernel_runs", "turns"])
def test_a_run_of_the_previous_release_is_refused_by_name(tmp_path, table) -> None:
    db = sqlite3.connect(str(tmp_path / "runs.db"))
    db.execute(f"CREATE TABLE {table} (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, "
               "run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT)")
    db.execute(f"INSERT INTO {table} VALUES ('pay-1', 1, '{{}}', '{{}}', NULL)")
    db.commit()
    db.close()
    with pytest.raises(LegacyRun, match=f"table {table} of the previous release"):
        Driver(Store(str(tmp_path / "runs.db")), "pay-1", IDENTITY, clock=lambda: 1)
    # Another run in the same file is driven as usual.
    Driver(Store(str(tmp_path / "runs.db")), "pay-2", IDENTITY, clock=lambda: 1)
