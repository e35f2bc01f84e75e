"""One Python `step` against `json.loads` + `json.dumps` of the same run and input, in the
same process: the input the kernel spends most on (a resume approving a call, carrying its
checkpoint) on the run suspended for that approval. Prints the medians of 21 interleaved
rounds and the ratios. Run it on the release wheel: `python bench/step.py`."""

from __future__ import annotations

import json
import statistics
import sys
import time

import resumable_kernel as rk

ROUNDS, PER_ROUND = 21, 2000


def scene() -> tuple[str, str]:
    run = rk.new_run(
        {"tenant": "tenant-0b6f6d2e-4f7c-4c1e-9a57-3f1b2c9d8e71",
         "session": "session-5d1c0a3e-8f2b-4d6a-b7e9-0c4f1a2b3d4e",
         "run": "run-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b", "definition": "publisher@12"},
        {"operator": "ops-oncall", "reconcile_window": 3600}, created_at=1_700_000_000)
    call = {"call_id": "call_Xq7bT2mN9vR4kP8sL3wY6zA1", "tool": "crm.update_contact",
            "args": rk.digest({"contact": 4711, "fields": {"email": "a@example.com"}}),
            "key": "idem-" + "7f3a9c2e" * 8,
            "contract": {"dedupes": True, "query_fences": False, "max_attempts": 3}}
    wait = {"wait": "approval", "call": call, "requester": "agent-planner",
            "prior": rk.History().prior(call)}
    v = rk.step(run, {"at": 1_700_000_001, "kind": "suspend", "wait": wait,
                      "expires_at": 1_700_003_600, "responsible": "alice", "resource_version": 7})
    assert isinstance(v, rk.Accepted)
    cp = v.checkpoint
    decision = {"decision": "approve", "call_id": call["call_id"], "args": call["args"],
                "requester": "agent-planner", "approver": "alice", "revision": cp["revision"],
                "expires_at": 1_700_003_000}
    resume = {"at": 1_700_000_100, "kind": "resume", "checkpoint": cp, "decision": decision,
              "facts": {"resource_version": 7, "permitted": True, "within_budget": True}}
    assert isinstance(rk.step(v.run, resume), rk.Accepted)
    return json.dumps(v.run), json.dumps(resume)


def medians_us(forms: dict) -> dict:
    """Median microseconds per call of each form. The rounds interleave the forms (round r
    times every form in turn), so a change of load on the machine touches them alike."""
    samples: dict = {name: [] for name in forms}
    for _ in range(ROUNDS):
        for name, f in forms.items():
            t = time.perf_counter()
            for _ in range(PER_ROUND):
                f()
            samples[name].append((time.perf_counter() - t) / PER_ROUND * 1e6)
    return {name: statistics.median(v) for name, v in samples.items()}


def main() -> None:
    run_text, input_text = scene()
    run, input = json.loads(run_text), json.loads(input_text)

    def round_trip() -> None:
        json.dumps(json.loads(run_text))
        json.dumps(json.loads(input_text))

    figures = medians_us({
        "json.loads + json.dumps (run and input)": round_trip,
        "step_json (JSON text in, JSON text out)": lambda: rk.step_json(run_text, input_text),
        "step (dicts in, Accepted out)": lambda: rk.step(run, input),
    })
    base = figures["json.loads + json.dumps (run and input)"]
    print(f"python {sys.version.split()[0]}; run {len(run_text)} bytes, input {len(input_text)} bytes;"
          f" median of {ROUNDS} rounds of {PER_ROUND} calls")
    for name, us in figures.items():
        print(f"{name:42} {us:8.2f} us  {us / base:5.2f}x")


if __name__ == "__main__":
    main()
