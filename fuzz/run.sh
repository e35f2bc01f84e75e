#!/usr/bin/env bash
# Runs each fuzz target for SECONDS (default 60) from a seed corpus made of the specification's
# own files: the teaching scenarios, the audit-log examples and the checkpoints they carry, and
# the logs of earlier releases in compat/.
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`); on a stable toolchain the nightly-only
# flags it passes are allowed with RUSTC_BOOTSTRAP=1. Exits non-zero if a target finds a crash
# (its input is left under fuzz/artifacts/). Prints libFuzzer's last status line per target.
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
cargo run -q -p resumable-audit --example audit_examples -- --checkpoints "$corpus/checkpoint_json"
cd fuzz
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O --sanitizer none
for target in scenario audit_log checkpoint_json; do
  echo "== $target: $(ls "$corpus/$target" | wc -l) seeds, ${seconds} s"
  cargo fuzz run -O --sanitizer none "$target" "$corpus/$target" -- \
    -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 2>&1 \
    | grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|==[0-9]+== ERROR|SUMMARY)' || true
  if compgen -G "artifacts/$target/crash-*" > /dev/null; then
    echo "$target: a crash was found: $(ls artifacts/$target/crash-*)"
    exit 1
  fi
done
