//! Audit-log validation against merely parsing the same file, on a generated log of one
//! million records, in the same run (BENCHMARKS.md, "Audit-log validation").
//!
//! `cargo bench -p resumable-audit --bench validate`
//!
//! The log is generated once into the system's temporary directory by the same generator the
//! tests use: a realistic mix of suspensions, approvals, resumes with checkpoints, dispatches,
//! results, reconciliations and refused attempts. Three measurements, each reading the file
//! from the start with the same 8 KiB `BufReader`:
//! - `parse_value`: serde_json of every line into `serde_json::Value`;
//! - `parse_records`: serde_json of every line into the record's fields and its MAC (the
//!   fair baseline: the validator must do at least this);
//! - `validate`: the whole validator with the samples' key (UTF-8 and length checks,
//!   repeated keys, parse, HMAC chain, kernel step, properties, verdict comparison).
//!
//! Set `RESUMABLE_BENCH_RECORDS` to change the log's length.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use resumable_audit::{self as audit, sample, Verdict};
use resumable_kernel::{Digest, Input, Revision};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter};
use std::path::PathBuf;
use std::time::Duration;

/// One sealed record line, as serde reads it: the record's fields and its MAC.
#[derive(serde::Deserialize)]
#[expect(dead_code, reason = "read to be parsed, not used")]
struct Line {
    seq: u64,
    revision: Revision,
    input: Input,
    verdict: Verdict,
    mac: Digest,
}

fn log_file() -> (PathBuf, u64) {
    let records: u64 = std::env::var("RESUMABLE_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let path = std::env::temp_dir().join(format!("resumable-audit-bench-{records}.jsonl"));
    let file = File::create(&path).expect("create the benchmark log");
    sample::generate(BufWriter::new(file), records, 1, Some(&sample::key()))
        .expect("write the benchmark log");
    (path, records)
}

fn for_each_line(path: &PathBuf, mut f: impl FnMut(&[u8])) {
    let mut reader = BufReader::new(File::open(path).expect("open the log"));
    let mut line = Vec::new();
    // The header is not a record.
    reader.read_until(b'\n', &mut line).expect("read");
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).expect("read") == 0 {
            break;
        }
        f(&line);
    }
}

fn bench(c: &mut Criterion) {
    let (path, records) = log_file();
    let bytes = std::fs::metadata(&path).expect("stat the log").len();
    let mut group = c.benchmark_group(format!("audit_log_{records}_records"));
    group.throughput(Throughput::Bytes(bytes));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    group.warm_up_time(Duration::from_secs(1));

    group.bench_function("parse_value", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for_each_line(&path, |line| {
                let v: serde_json::Value = serde_json::from_slice(line).expect("parse");
                n += u64::from(v.is_object());
            });
            assert_eq!(n, records);
        })
    });
    group.bench_function("parse_records", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for_each_line(&path, |line| {
                let r: Line = serde_json::from_slice(line).expect("parse");
                n += u64::from(r.seq > 0);
            });
            assert_eq!(n, records);
        })
    });
    group.bench_function("validate", |b| {
        b.iter(|| {
            let file = File::open(&path).expect("open the log");
            let options = audit::Options {
                key: Some(sample::key()),
                ..audit::Options::default()
            };
            let summary = audit::validate(BufReader::new(file), &options)
                .expect("the generated log conforms");
            assert_eq!(summary.records, records);
        })
    });
    group.finish();
    let _ = std::fs::remove_file(&path);
}

criterion_group!(benches, bench);
criterion_main!(benches);
