//! Generates, parses and validates long audit logs, and long scenarios, and reports time and
//! peak memory: the figures in BENCHMARKS.md ("Audit-log validation", "Replay") come from here.
//!
//! ```text
//! cargo build --release -p resumable-audit --example audit_log
//! target/release/examples/audit_log bench 1000000           # parse vs validate, medians of 3
//! target/release/examples/audit_log generate 1000000 FILE   # a keyed log (the samples' key)
//! target/release/examples/audit_log validate FILE           # with the key if the log is keyed
//! target/release/examples/audit_log parse FILE
//! target/release/examples/audit_log scenario 1000000 FILE   # a scenario for `replay`
//! ```
//!
//! Each command prints one line per measurement: what it did, the bytes, the seconds, the
//! throughput, and the process's peak resident memory (VmHWM from /proc/self/status, where
//! there is one). Run `validate` and `parse` each in its own process, so the peak belongs to
//! that command alone.

use resumable_audit::{self as audit, sample, Verdict};
use resumable_kernel::{Digest, Input, Revision};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;
use std::time::Instant;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn report(what: &str, bytes: u64, seconds: f64) {
    let rss = peak_rss_kib().map_or("unknown".into(), |k| format!("{k} KiB"));
    println!(
        "{what}: {bytes} bytes in {seconds:.3} s, {:.1} MB/s, peak RSS {rss}",
        bytes as f64 / seconds / 1e6
    );
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match args.as_slice() {
        ["generate", n, path] => generate(n, path),
        ["validate", path] => validate(path).map(|_| ()),
        ["parse", path] => parse(path).map(|_| ()),
        ["bench", n] => bench(n),
        ["scenario", n, path] => scenario(n, path),
        _ => Err(
            "usage: audit_log generate N FILE | validate FILE | parse FILE | bench N | \
                  scenario N FILE"
                .into(),
        ),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

fn generate(n: &str, path: &str) -> Result<(), String> {
    let n: u64 = n.parse().map_err(|e| format!("N: {e}"))?;
    let started = Instant::now();
    let file = File::create(path).map_err(|e| format!("{path}: {e}"))?;
    sample::generate(BufWriter::new(file), n, 1, Some(&sample::key()))
        .map_err(|e| e.to_string())?;
    let bytes = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    report(
        &format!("generated {n} records"),
        bytes,
        started.elapsed().as_secs_f64(),
    );
    Ok(())
}

/// Validates with the samples' key when the log is keyed; returns the seconds taken.
fn validate(path: &str) -> Result<f64, String> {
    let mut head = String::new();
    BufReader::new(File::open(path).map_err(|e| format!("{path}: {e}"))?)
        .read_line(&mut head)
        .map_err(|e| e.to_string())?;
    let options = audit::Options {
        key: head.contains("\"hmac-sha256\"").then(sample::key),
        ..audit::Options::default()
    };
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let bytes = file.metadata().map_err(|e| e.to_string())?.len();
    let started = Instant::now();
    let summary = audit::validate(BufReader::with_capacity(64 * 1024, file), &options)
        .map_err(|f| f.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    report(
        &format!(
            "validated {} records (key: {}, {} commits, window exceeded: {})",
            summary.records, summary.authenticated, summary.commits, summary.commit_window_exceeded
        ),
        bytes,
        seconds,
    );
    Ok(seconds)
}

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

/// The baseline: the same line reading, and serde_json of every record line into the record
/// type with its MAC, nothing else. Returns the seconds taken.
fn parse(path: &str) -> Result<f64, String> {
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let bytes = file.metadata().map_err(|e| e.to_string())?.len();
    let started = Instant::now();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut line = Vec::new();
    let mut records = 0u64;
    reader
        .read_until(b'\n', &mut line)
        .map_err(|e| e.to_string())?;
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?
            == 0
        {
            break;
        }
        let _: Line = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
        records += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    report(&format!("parsed {records} records"), bytes, seconds);
    Ok(seconds)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Generates a keyed log of N records, then parses and validates it three times each, in
/// turn, and prints the medians and their ratio.
fn bench(n: &str) -> Result<(), String> {
    let path = std::env::temp_dir().join(format!("resumable-audit-bench-{n}.jsonl"));
    let path = path
        .to_str()
        .ok_or("a temporary path that is not UTF-8")?
        .to_string();
    generate(n, &path)?;
    let (mut parses, mut validations) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        parses.push(parse(&path)?);
        validations.push(validate(&path)?);
    }
    let (p, v) = (median(parses), median(validations));
    let bytes = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
    let mb = |s: f64| bytes as f64 / s / 1e6;
    println!(
        "medians of 3: parse {p:.3} s ({:.1} MB/s), validate with the key {v:.3} s ({:.1} MB/s); \
         validate/parse throughput {:.2}",
        mb(p),
        mb(v),
        p / v
    );
    let _ = std::fs::remove_file(&path);
    Ok(())
}

/// A scenario of N inputs for `replay`: dispatches and results of fresh calls, with a
/// suspension for approval, its approval by reference to the latest checkpoint, and a stale
/// resume every so often.
fn scenario(n: &str, path: &str) -> Result<(), String> {
    let n: u64 = n.parse().map_err(|e| format!("N: {e}"))?;
    let file = File::create(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = BufWriter::new(file);
    let header = r#"{"scenario": "long", "format": 1, "shows": ["WAL-1"], "description": "A long run of calls.", "run": {"tenant": "acme", "session": "s-1", "run": "run-long", "definition": "flow@1", "operator": "ops", "reconcile_window": 100, "created_at": 0}}"#;
    let contract = r#"{"dedupes": true, "query_fences": false, "max_attempts": 3}"#;
    writeln!(out, "{header}").map_err(|e| e.to_string())?;
    let (mut written, mut t, mut call) = (0u64, 0u64, 0u64);
    while written < n {
        call += 1;
        t += 1;
        let c = format!(
            r#"{{"call_id": "c{call}", "tool": "store", "args": {{"text": "{call}"}}, "key": "k{call}", "contract": {contract}}}"#
        );
        let lines = if call % 10 == 0 {
            vec![
                format!(
                    r#"{{"at": {t}, "kind": "suspend", "wait": {{"wait": "approval", "call": {c}, "requester": "agent"}}, "expires_at": {}, "responsible": "alice", "resource_version": 7}}"#,
                    t + 50
                ),
                format!(
                    r#"{{"at": {}, "kind": "resume", "checkpoint": "latest", "decision": {{"decision": "approve", "call_id": "c{call}", "args": {{"text": "{call}"}}, "requester": "agent", "approver": "alice", "expires_at": {}}}}}"#,
                    t + 1,
                    t + 40
                ),
                format!(
                    r#"{{"at": {}, "kind": "tool_result", "call_id": "c{call}", "attempt": 0, "result": {{"text": "ok"}}}}"#,
                    t + 2
                ),
            ]
        } else {
            vec![
                format!(r#"{{"at": {t}, "kind": "dispatch", "call": {c}}}"#),
                format!(
                    r#"{{"at": {}, "kind": "tool_result", "call_id": "c{call}", "attempt": 0, "result": {{"text": "ok"}}}}"#,
                    t + 1
                ),
            ]
        };
        t += 2;
        for line in lines.iter().take((n - written) as usize) {
            writeln!(out, "{line}").map_err(|e| e.to_string())?;
            written += 1;
        }
    }
    out.flush().map_err(|e| e.to_string())?;
    println!("wrote a scenario of {n} inputs to {path}");
    Ok(())
}
