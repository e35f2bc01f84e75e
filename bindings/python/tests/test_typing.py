"""The package is typed: `py.typed` ships, and the stub of the native module names exactly
what the module defines."""

from __future__ import annotations

import ast
import json
import pathlib
from typing import get_args, get_type_hints

import resumable_kernel
from resumable_kernel import _native

PACKAGE = pathlib.Path(resumable_kernel.__file__).parent


def test_the_package_ships_py_typed_and_the_stub() -> None:
    assert (PACKAGE / "py.typed").exists()
    assert (PACKAGE / "_native.pyi").exists()


def test_the_stub_names_exactly_what_the_native_module_defines() -> None:
    tree = ast.parse((PACKAGE / "_native.pyi").read_text())
    stubbed = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    stubbed |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    defined = {name for name in vars(_native) if not name.startswith("_")}
    assert stubbed == defined


def test_everything_exported_exists() -> None:
    for name in resumable_kernel.__all__:
        assert hasattr(resumable_kernel, name), name


# The batch shapes (spec 5.5) are TypedDicts over the kernel's JSON: each is checked against
# what the kernel itself emits and reads, so a renamed or missing field fails here.


IDENTITY = {"tenant": "t", "session": "s", "run": "r", "definition": "d@1"}


def _batch_run() -> tuple[dict, dict, dict]:
    """A run suspended for a batch of two calls, one decided; the suspend and the resume."""
    run = rk_new_run(IDENTITY)
    contract = {"dedupes": True, "query_fences": False, "max_attempts": 3}
    calls: list[resumable_kernel.Proposal] = [
        {"call": {"call_id": f"c{i}", "tool": "publish", "args": resumable_kernel.digest(i),
                  "key": f"k{i}", "contract": contract},
         "requester": "agent", "prior": {"call_id_used": False, "key": None}}
        for i in (1, 2)]
    wait: resumable_kernel.BatchWait = {"wait": "batch", "calls": calls}
    suspend = {"at": 1, "kind": "suspend", "wait": wait, "expires_at": 100,
               "responsible": "alice", "resource_version": 0}
    v = resumable_kernel.step(run, suspend)
    assert isinstance(v, resumable_kernel.Accepted) and v.checkpoint is not None
    approval: resumable_kernel.Approval = {
        "call_id": "c1", "args": resumable_kernel.digest(1), "requester": "agent",
        "approver": "alice", "revision": v.checkpoint["revision"], "expires_at": 50}
    decision: resumable_kernel.BatchDecision = {
        "decision": "batch",
        "decisions": [{"approval": approval, "verdict": "reject",
                       "reason": resumable_kernel.digest("no")}]}
    resume = {"at": 2, "kind": "resume", "checkpoint": v.checkpoint, "decision": decision,
              "facts": {"resource_version": 0, "permitted": True, "within_budget": True}}
    w = resumable_kernel.step(v.run, resume)
    assert isinstance(w, resumable_kernel.Accepted), w
    return w.run, suspend, resume


def rk_new_run(identity: dict) -> dict:
    return resumable_kernel.new_run(identity, {"operator": "ops", "reconcile_window": 10}, 0)


def _keys(typed: type) -> set[str]:
    return set(typed.__annotations__)


def test_the_batch_types_name_the_fields_of_the_kernels_run() -> None:
    run, _, _ = _batch_run()
    batch = run["batch"]
    assert set(batch) == _keys(resumable_kernel.Batch)
    for slot in batch["slots"]:
        # Every field a slot has is typed, and the always-present ones are there.
        assert set(slot) <= _keys(resumable_kernel.Slot)
        assert {"call", "requester", "proposed", "fresh", "decided", "state"} <= set(slot)
        assert slot["state"] in get_args(resumable_kernel.SlotState)
        assert set(slot["call"]) == _keys(resumable_kernel.BoundCall)
        assert set(slot["call"]["call"]) == _keys(resumable_kernel.Call)
    decided = batch["slots"][0]["decided"][0]
    assert set(decided) <= _keys(resumable_kernel.CallDecision)
    assert set(decided["approval"]) == _keys(resumable_kernel.Approval)
    assert [s["state"] for s in batch["slots"]] == ["rejected", "awaiting"]


def test_the_verdict_kinds_are_the_kernels_and_a_policy_allows_them_all_by_default() -> None:
    # A narrowed policy is written in the kernel's order; the default one is left out.
    assert "allowed" not in rk_new_run(IDENTITY)["policy"]
    narrowed = list(reversed(resumable_kernel.VERDICT_KINDS))[1:]
    run = resumable_kernel.new_run(IDENTITY, {"operator": "ops", "reconcile_window": 10,
                                              "allowed": narrowed}, 0)
    assert run["policy"]["allowed"] == ["approve", "edit", "reject", "respond"]
    assert resumable_kernel.VERDICT_KINDS == get_args(resumable_kernel.VerdictKind)
    assert resumable_kernel.SLOT_STATES == get_args(resumable_kernel.SlotState)
    verdicts = {get_args(get_type_hints(t)["verdict"])[0]
                for t in get_args(resumable_kernel.CallVerdict)}
    assert verdicts == set(resumable_kernel.VERDICT_KINDS)


def test_each_call_verdict_type_is_a_form_the_kernel_reads() -> None:
    _, suspend, resume = _batch_run()
    suspended = resumable_kernel.step(rk_new_run(IDENTITY), suspend)
    assert isinstance(suspended, resumable_kernel.Accepted)
    fields = {"args": resumable_kernel.digest(3), "reason": resumable_kernel.digest("no"),
              "result": resumable_kernel.digest("yes")}
    approval = resume["decision"]["decisions"][0]["approval"]
    answers = {}
    for typed in get_args(resumable_kernel.CallVerdict):
        (kind,) = get_args(get_type_hints(typed)["verdict"])
        decision = {"approval": approval, "verdict": kind,
                    **{k: fields[k] for k in typed.__annotations__ if k != "verdict"}}
        input = dict(resume, decision={"decision": "batch", "decisions": [decision]})
        answers[kind] = json.loads(resumable_kernel.step_json(json.dumps(suspended.run),
                                                              json.dumps(input)))
    # Every form parses; the default contract leaves respond out (POL-1).
    assert {k: a["verdict"] for k, a in answers.items()} == {
        "approve": "accepted", "edit": "accepted", "reject": "accepted",
        "respond": "decision_not_allowed", "deny": "accepted"}


def test_an_accepted_batch_resume_lists_every_dispatch() -> None:
    run, suspend, _ = _batch_run()
    cp = resumable_kernel.step(rk_new_run(IDENTITY), suspend)
    assert isinstance(cp, resumable_kernel.Accepted) and cp.checkpoint is not None
    approval = {"call_id": "c2", "args": resumable_kernel.digest(2), "requester": "agent",
                "approver": "alice", "revision": cp.checkpoint["revision"], "expires_at": 50}
    v = resumable_kernel.step(run, {
        "at": 3, "kind": "resume", "checkpoint": cp.checkpoint,
        "decision": {"decision": "batch", "decisions": [{"approval": approval,
                                                           "verdict": "approve"}]},
        "facts": {"resource_version": 0, "permitted": True, "within_budget": True}})
    assert isinstance(v, resumable_kernel.Accepted), v
    assert [d["call_id"] for d in v.dispatches] == ["c2"] and v.dispatch == v.dispatches[0]
