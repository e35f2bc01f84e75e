"""The replay gate: every workflow history the Temporal tests recorded (kept in
tests/temporal_histories/, written again with RESUMABLE_RECORD_HISTORIES=1) is replayed by
Temporal's Replayer against the current workflow code, kernel and driver core. A change that
would make a running workflow take another path (a nondeterministic change) fails here: the
last test shows the gate failing on such a change."""

from __future__ import annotations

import asyncio
import pathlib

import pytest

from temporal_harness import HISTORIES, skip_without_temporalio

skip_without_temporalio()

from temporalio.client import WorkflowHistory  # noqa: E402
from temporalio.worker import Replayer  # noqa: E402

from resumable_kernel.temporal import KernelRun  # noqa: E402
from temporal_twin import BlindRun, ChangedRun, PlainApproval  # noqa: E402

KEPT = sorted(HISTORIES.glob("*.json"))


def history(path: pathlib.Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem, path.read_text())


def test_the_kept_histories_cover_the_kernel_and_the_plain_twin() -> None:
    names = {p.stem for p in KEPT}
    assert {"approve_once", "expired", "killed_mid_activity_reconciled",
            "server_restarted", "plain_overwrite"} <= names, names


@pytest.mark.parametrize("path", KEPT, ids=[p.stem for p in KEPT])
def test_a_kept_history_replays_on_the_current_code(path: pathlib.Path) -> None:
    replayer = Replayer(workflows=[KernelRun, PlainApproval, BlindRun])
    result = asyncio.run(replayer.replay_workflow(history(path), raise_on_replay_failure=False))
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


def test_the_gate_fails_on_a_nondeterministic_change() -> None:
    replayer = Replayer(workflows=[ChangedRun])
    result = asyncio.run(replayer.replay_workflow(history(HISTORIES / "approve_once.json"),
                                                  raise_on_replay_failure=False))
    assert result.replay_failure is not None
    assert "nondetermin" in str(result.replay_failure).lower()
