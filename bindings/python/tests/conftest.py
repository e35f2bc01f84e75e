"""Shared fixtures: where the repository and the `resumable` binary are."""

from __future__ import annotations

import os
import pathlib

import pytest

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
