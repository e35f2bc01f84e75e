"""The README's example (examples/approval.py) runs and says what the README says it does."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import resumable_kernel as rk

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "approval.py"
README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def test_the_example_suspends_approves_resumes_and_dispatches_once() -> None:
    out = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True)
    dispatch, again = out.stdout.splitlines()
    assert dispatch.startswith("dispatch publish tool key ") and len(dispatch.split()[-1]) == 64
    assert again == "again: already_applied"


def test_the_readme_shows_the_example_as_it_is() -> None:
    assert EXAMPLE.read_text() in README.read_text()


def test_the_argument_digest_in_the_example_is_the_canonical_one() -> None:
    assert rk.digest({"post": 42}) == rk.digest_json('{ "post" : 42.0 }')
