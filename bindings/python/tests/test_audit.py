"""Audit logs written from Python: keyed (HMAC-SHA-256) and anchored, accepted by
`resumable validate --key-file K --anchor A`; a forged, re-keyed or cut one is not."""

from __future__ import annotations

import json
import pathlib
import subprocess

import resumable_kernel as rk

KEY = "5e" * 32
IDENTITY = {"tenant": "acme", "session": "s-1", "run": "run-py", "definition": "publisher@1"}
POLICY = {"operator": "ops", "reconcile_window": 100}


def approval_log() -> rk.AuditLog:
    """A lifecycle through the log: suspend for approval, a refused self-approval, the
    approval, the tool's result, completion, and a refused input after the end."""
    log = rk.AuditLog.open(IDENTITY, POLICY, created_at=0, key=KEY)
    history = rk.History()
    call = {
        "call_id": "call-1",
        "tool": "publish",
        "args": rk.digest({"post": 42}),
        "key": "idem-1",
        "contract": {"dedupes": True, "query_fences": False, "max_attempts": 3},
    }
    wait = {"wait": "approval", "call": call, "requester": "agent", "prior": history.prior(call)}
    v = log.record(
        {"at": 1, "kind": "suspend", "wait": wait, "expires_at": 50, "responsible": "alice",
         "resource_version": 7}
    )
    assert isinstance(v, rk.Accepted)
    history.apply(v.effects)
    checkpoint = v.checkpoint
    facts = {"resource_version": 7, "permitted": True, "within_budget": True}

    def resume(at: int, approver: str) -> rk.Verdict:
        decision = {"decision": "approve", "call_id": "call-1", "args": call["args"],
                    "requester": "agent", "approver": approver,
                    "revision": checkpoint["revision"], "expires_at": 40}
        return log.record({"at": at, "kind": "resume", "checkpoint": checkpoint,
                           "decision": decision, "facts": facts})

    refused = resume(2, "agent")
    assert isinstance(refused, rk.Rejected) and refused.kind == "self_approval"
    assert isinstance(resume(3, "alice"), rk.Accepted)
    assert isinstance(log.record({"at": 4, "kind": "tool_result", "call_id": "call-1",
                                  "attempt": 0, "result": rk.digest("ok")}), rk.Accepted)
    assert isinstance(log.record({"at": 5, "kind": "complete", "result": rk.digest("done")}),
                      rk.Accepted)
    late = log.record({"at": 6, "kind": "cancel", "by": "ops"})
    assert isinstance(late, rk.Rejected)
    return log


def validate(bin: str, tmp: pathlib.Path, text: str, anchor: str, key: str = KEY):
    (tmp / "log.jsonl").write_text(text)
    (tmp / "log.anchor").write_text(anchor)
    (tmp / "log.key").write_text(key + "\n")
    return subprocess.run(
        [bin, "validate", str(tmp / "log.jsonl"), "--key-file", str(tmp / "log.key"),
         "--anchor", str(tmp / "log.anchor"), "--format", "json"],
        capture_output=True, text=True,
    )


def test_a_log_written_from_python_validates_keyed_and_anchored(resumable_bin, tmp_path) -> None:
    log = approval_log()
    assert len(log.lines) == 7 and log.anchor["records"] == 6
    header = json.loads(log.lines[0])
    assert header["version"] == rk.AUDIT_FORMAT_VERSION and header["chain"] == "hmac-sha256"
    out = validate(resumable_bin, tmp_path, log.text(), log.anchor_json())
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert report["status"] == "conforming"
    summary = report["summary"]
    assert (summary["records"], summary["accepted"], summary["rejected"]) == (6, 4, 2)
    assert summary["authenticated"] and summary["anchored"]


def test_a_forged_record_is_refused(resumable_bin, tmp_path) -> None:
    log = approval_log()
    lines = log.lines[:]
    # The refused self-approval rewritten as accepted, its MAC left as it was.
    lines[2] = lines[2].replace('"approver":"agent"', '"approver":"alice"', 1)
    assert lines[2] != log.lines[2]
    out = validate(resumable_bin, tmp_path, "".join(lines), log.anchor_json())
    assert out.returncode == 1, out.stdout + out.stderr


def test_a_log_under_another_key_is_refused(resumable_bin, tmp_path) -> None:
    log = approval_log()
    out = validate(resumable_bin, tmp_path, log.text(), log.anchor_json(), key="a1" * 32)
    assert out.returncode == 1, out.stdout + out.stderr


def test_a_cut_tail_is_refused_by_the_anchor(resumable_bin, tmp_path) -> None:
    log = approval_log()
    out = validate(resumable_bin, tmp_path, "".join(log.lines[:-1]), log.anchor_json())
    assert out.returncode == 1, out.stdout + out.stderr


def test_the_log_goes_on_after_a_restart_from_the_stored_run_and_anchor(resumable_bin, tmp_path) -> None:
    first = rk.AuditLog.open(IDENTITY, POLICY, created_at=0, key=KEY)
    first.record({"at": 1, "kind": "recover"})
    stored = json.loads(json.dumps({"run": first.run, "anchor": first.anchor}))
    # A new process: only the stored run and anchor, and the key.
    later = rk.AuditLog(run=stored["run"], anchor=stored["anchor"], lines=[], key=KEY)
    later.record({"at": 2, "kind": "complete", "result": rk.digest("done")})
    out = validate(resumable_bin, tmp_path, first.text() + later.text(), later.anchor_json())
    assert out.returncode == 0, out.stdout + out.stderr
