"""The same verdicts as the command line: every scenario of spec/scenarios, replayed through
the package's own `step`, step by step against `resumable replay --format json`.

The scenario conveniences (digests written as text, checkpoint references with changes and
resealing, the approval's revision and the facts left out, each call's prior from the run's
history) are resolved here, in Python, with the package's functions, as a Python driver
would: the resolved input must be the one the command line fed its kernel, and the verdict,
the rejection with its evidence and message, the effects and the run after the step must be
the same."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from typing import Any

import pytest

import resumable_kernel as rk
from conftest import SCENARIOS

SCENARIO_FILES = sorted(SCENARIOS.glob("*.jsonl"))


def text_digests(value: Any) -> Any:
    """Replaces every `{"text": ...}` with the SHA-256 of the text's UTF-8 bytes, in hex."""
    if isinstance(value, dict):
        if set(value) == {"text"} and isinstance(value["text"], str):
            return hashlib.sha256(value["text"].encode()).hexdigest()
        return {k: text_digests(v) for k, v in value.items()}
    if isinstance(value, list):
        return [text_digests(v) for v in value]
    return value


def merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Nested objects merge field by field; anything else replaces."""
    out = copy.deepcopy(base)
    for k, v in changes.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


class Driver:
    """A scenario replayed through the package, as a Python driver drives a run."""

    def __init__(self, header: dict[str, Any]) -> None:
        spec = header["run"]
        identity = {k: spec[k] for k in ("tenant", "session", "run", "definition")}
        policy = {k: spec[k] for k in ("operator", "reconcile_window", "allowed") if k in spec}
        self.run = rk.new_run(identity, policy, spec["created_at"])
        self.history = rk.History()
        self.emitted: list[dict[str, Any]] = []

    def checkpoint(self, written: Any) -> dict[str, Any]:
        if written == "latest":
            return self.emitted[-1]
        if not isinstance(written, dict) or not ({"latest", "emitted"} & set(written)):
            return written  # a checkpoint written in full
        if "latest" in written:
            base, changes = self.emitted[-1], written["latest"]
        else:
            base = next(c for c in self.emitted if c["revision"] == written["emitted"])
            changes = written.get("changes", {})
        changed = merge(base, changes)
        return rk.seal_checkpoint(changed) if written.get("reseal", True) else changed

    def resolve(self, line: dict[str, Any]) -> dict[str, Any]:
        written = {k: v for k, v in line.items() if k not in ("note", "expect")}
        written = text_digests(written)
        if written["kind"] == "resume":
            cp = self.checkpoint(written["checkpoint"])
            written["checkpoint"] = cp
            decision = written["decision"]
            if decision["decision"] in ("approve", "deny"):
                decision.setdefault("revision", cp["revision"])
            elif decision["decision"] == "batch":
                for d in decision["decisions"]:
                    d["approval"].setdefault("revision", cp["revision"])
            facts = written.get("facts", {})
            written["facts"] = {
                "resource_version": facts.get("resource_version", cp["resource_version"]),
                "permitted": facts.get("permitted", True),
                "within_budget": facts.get("within_budget", True),
            }
        call_holder = None
        if written["kind"] == "dispatch":
            call_holder = written
        elif written["kind"] == "suspend" and written["wait"]["wait"] == "approval":
            call_holder = written["wait"]
        if call_holder is not None and "prior" not in call_holder:
            call_holder["prior"] = self.history.prior(call_holder["call"])
        if written["kind"] == "suspend" and written["wait"]["wait"] == "batch":
            for proposal in written["wait"]["calls"]:
                proposal.setdefault("prior", self.history.prior(proposal["call"]))
        return written

    def step(self, line: dict[str, Any]) -> tuple[dict[str, Any], rk.Verdict]:
        input = self.resolve(line)
        verdict = rk.step(self.run, input)
        if isinstance(verdict, rk.Accepted):
            self.run = verdict.run
            self.history.apply(verdict.effects)
            if verdict.checkpoint is not None:
                self.emitted.append(verdict.checkpoint)
        return input, verdict


def test_every_scenario_is_covered() -> None:
    # The parity below runs over every file; an empty glob would make it vacuous.
    assert len(SCENARIO_FILES) >= 27


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.stem)
def test_each_step_matches_resumable_replay(path, resumable_bin) -> None:
    cli = subprocess.run(
        [resumable_bin, "replay", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = [json.loads(line) for line in cli.stdout.splitlines()]
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    header, inputs = lines[0], lines[1:]
    assert len(expected) == len(inputs) > 0
    driver = Driver(header)
    for want, line in zip(expected, inputs):
        where = f"{path.name} step {want['step']}"
        input, verdict = driver.step(line)
        assert input == want["input"], where
        if isinstance(verdict, rk.Accepted):
            assert want["verdict"] == "accepted", where
            assert verdict.effects == want["effects"], where
        else:
            assert want["verdict"] == verdict.kind, where
            assert want["rejection"] == verdict.rejection, where
            assert want["message"] == verdict.message, where
            assert want["effects"] == [], where
        assert driver.run == want["run"], where
        # The scenario's own claim holds too (replay exits 0 only then).
        assert want["met"] is not False, where


def test_a_rejection_leaves_the_run_unchanged_and_is_a_value() -> None:
    run = rk.new_run(
        {"tenant": "t", "session": "s", "run": "r", "definition": "d@1"},
        {"operator": "ops", "reconcile_window": 10},
        0,
    )
    done = rk.step(run, {"at": 1, "kind": "complete", "result": "00" * 32})
    assert isinstance(done, rk.Accepted) and done.run["phase"]["phase"] == "completed"
    again = rk.step(done.run, {"at": 2, "kind": "complete", "result": "00" * 32})
    assert isinstance(again, rk.Rejected) and not again.accepted
    assert again.kind == "terminal"
    assert again.rejection["rejection"] == "terminal"
    assert again.message


@pytest.mark.parametrize(
    "run_text, input_text, message",
    [
        ("{", '{"at": 1, "kind": "recover"}', "run: EOF while parsing"),
        (None, '{"at": 1, "kind": "explode"}', "input: unknown variant `explode`"),
        (None, '{"at": 1, "at": 2, "kind": "recover"}', 'the key "at" appears twice'),
        (None, '{"at": 1, "kind": "cancel", "by": "' + "x" * 65 + '"}', "input: "),
    ],
)
def test_malformed_input_raises_the_one_exception_with_the_kernel_message(
    run_text, input_text, message
) -> None:
    if run_text is None:
        run_text = json.dumps(
            rk.new_run(
                {"tenant": "t", "session": "s", "run": "r", "definition": "d@1"},
                {"operator": "ops", "reconcile_window": 10},
                0,
            )
        )
    with pytest.raises(rk.ResumableError, match=None) as info:
        rk.step_json(run_text, input_text)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)
