"""#8039 inside LangGraph: a crash between the side effect and the checkpoint write. A real
Python process running the graph (SQLite checkpointer) is killed with SIGKILL right after the
tool committed; a new process goes on from the graph's last checkpoint. The tool's ledger is a
file outside both, where the commits are counted."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys

from ledger import Ledger

WORKER = pathlib.Path(__file__).with_name("crash_worker.py")


def worker(mode: str, step: str, dir: pathlib.Path, crash: bool | str = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, CRASH=crash if isinstance(crash, str) else "1" if crash else "0")
    return subprocess.run([sys.executable, str(WORKER), mode, step, str(dir)], env=env,
                          capture_output=True, text=True, cwd=WORKER.parent, timeout=120)


def said(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def commits(dir: pathlib.Path) -> int:
    return Ledger(dir / "tool.ledger").commits()


def killed_approving(mode: str, dir: pathlib.Path, crash: bool | str, committed: int) -> None:
    """Runs the graph to its interrupt, then approves in a process killed with SIGKILL at
    `crash`; asserts that the tool's ledger then holds `committed` commits."""
    assert said(worker(mode, "start", dir))["interrupted"]
    killed = worker(mode, "approve", dir, crash=crash)
    assert killed.returncode == -signal.SIGKILL
    assert commits(dir) == committed


def test_plain_a_crash_after_the_commit_repeats_it(tmp_path) -> None:
    killed_approving("plain", tmp_path, True, 1)
    # The graph's checkpoint predates the commit. Depending on whether the resume value
    # reached the checkpointer before the kill, the new process runs the node again with it,
    # or is back at the interrupt, where the approval, sent again because nothing came of it,
    # runs the node again. Either way the post is published a second time.
    out = said(worker("plain", "restart", tmp_path))
    if out["interrupted"]:
        out = said(worker("plain", "resend", tmp_path))
    assert out["out"] == ["published with approve"]
    assert commits(tmp_path) == 2


def test_kernel_a_crash_after_the_commit_is_reconciled_not_repeated(tmp_path) -> None:
    killed_approving("kernel", tmp_path, True, 1)
    # The new process finds the dispatch in flight in the kernel's run; the kernel asks the
    # tool under the same tool key, records the commit it finds, and the node returns it.
    out = said(worker("kernel", "restart", tmp_path))
    assert out == {"out": ["publish done #1"], "interrupted": False}
    assert commits(tmp_path) == 1
    # Once more, for good measure: nothing left to do, nothing committed again.
    assert said(worker("kernel", "restart", tmp_path))["out"] == ["publish done #1"]
    assert commits(tmp_path) == 1


def test_kernel_a_crash_between_its_commit_and_the_tool_retries_under_the_same_key(tmp_path) -> None:
    killed_approving("kernel", tmp_path, "before", 0)
    # The tool answers that nothing was committed under the key; the kernel's contract for a
    # deduping tool allows a retry under the same key: committed once.
    out = said(worker("kernel", "restart", tmp_path))
    assert out == {"out": ["publish done #1"], "interrupted": False}
    assert commits(tmp_path) == 1
