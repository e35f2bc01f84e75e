#!/usr/bin/env bash
# Runs each fuzz target for SECONDS (default 60) from a seed corpus made of the specification's
# own files: the teaching scenarios, the audit-log examples and the checkpoints they carry, and
# the logs of earlier releases in compat/. The targets run side by side.
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`); on a stable toolchain the nightly-only
# flags it passes are allowed with RUSTC_BOOTSTRAP=1. Exits non-zero if a target finds a crash
# (its input is left under fuzz/artifacts/) or a fuzzer fails. Prints libFuzzer's last status
# lines per target.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus"/{scenario,audit_log,checkpoint_json}
cp spec/scenarios/*.jsonl "$corpus/scenario/"
cp spec/audit-examples/*.jsonl "$corpus/audit_log/"
# The logs earlier releases wrote (compat/), in their older formats and shapes.
for log in compat/*/*/*.jsonl; do
  cp "$log" "$corpus/audit_log/$(echo "$log" | tr / _)"
done
cp spec/audit-examples/*.anchor "$corpus/checkpoint_json/"
# Built as `cargo test --workspace` builds it (the workspace's features; `cargo run -p` would
# compile the audit crate again with its own), then run.
cargo build -q --workspace --example audit_examples
"${CARGO_TARGET_DIR:-target}/debug/examples/audit_examples" --checkpoints "$corpus/checkpoint_json"
cd fuzz
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O --sanitizer none
# The targets run side by side, each for SECONDS of wall time (libFuzzer is single-threaded,
# so on two cores three of them take SECONDS, not three times it); each one's status lines are
# printed, under its name, once all have ended.
logs="$(mktemp -d)"
trap 'rm -rf "$corpus" "$logs"' EXIT
targets=(scenario audit_log checkpoint_json)
pids=()
for target in "${targets[@]}"; do
  echo "== $target: $(ls "$corpus/$target" | wc -l) seeds, ${seconds} s"
  cargo fuzz run -O --sanitizer none "$target" "$corpus/$target" -- \
    -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 >"$logs/$target" 2>&1 &
  pids+=($!)
done
found=0
for i in "${!targets[@]}"; do
  target=${targets[$i]}
  if ! wait "${pids[$i]}"; then
    echo "$target: the fuzzer exited with an error"
    tail -n 20 "$logs/$target"
    found=1
  fi
  grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|==[0-9]+== ERROR|SUMMARY)' \
    "$logs/$target" | sed "s/^/$target: /" || true
  if compgen -G "artifacts/$target/crash-*" > /dev/null; then
    echo "$target: a crash was found: $(ls artifacts/$target/crash-*)"
    found=1
  fi
done
exit "$found"
