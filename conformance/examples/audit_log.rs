//! Generates, parses and validates long audit logs, and reports time and peak memory: the
//! figures in BENCHMARKS.md ("Audit-log validation") come from here and from
//! `benches/validate.rs`.
//!
//! ```text
//! cargo run --release -p resumable-conformance --example audit_log -- generate 1000000 FILE
//! cargo run --release -p resumable-conformance --example audit_log -- validate FILE
//! cargo run --release -p resumable-conformance --example audit_log -- parse FILE
//! ```
//!
//! Each command prints one line: what it did, the bytes, the seconds, the throughput, and the
//! process's peak resident memory (VmHWM from /proc/self/status, where there is one). Run
//! each in its own process, so the peak belongs to that command alone.

use resumable_conformance::audit::{self, sample, Record};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter};
use std::process::ExitCode;
use std::time::Instant;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn report(what: &str, bytes: u64, started: Instant) {
    let seconds = started.elapsed().as_secs_f64();
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
        ["validate", path] => validate(path),
        ["parse", path] => parse(path),
        _ => Err("usage: audit_log generate N FILE | validate FILE | parse FILE".into()),
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
    sample::generate(BufWriter::new(file), n, 1).map_err(|e| e.to_string())?;
    let bytes = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    report(&format!("generated {n} records"), bytes, started);
    Ok(())
}

fn validate(path: &str) -> Result<(), String> {
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let bytes = file.metadata().map_err(|e| e.to_string())?.len();
    let started = Instant::now();
    let summary = audit::validate(BufReader::new(file), &audit::Options::default())
        .map_err(|f| f.to_string())?;
    report(
        &format!(
            "validated {} records ({} commits, window exceeded: {})",
            summary.records, summary.commits, summary.commit_window_exceeded
        ),
        bytes,
        started,
    );
    Ok(())
}

/// The baseline: the same line reading, and serde_json into the same record type, nothing else.
fn parse(path: &str) -> Result<(), String> {
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let bytes = file.metadata().map_err(|e| e.to_string())?.len();
    let started = Instant::now();
    let mut reader = BufReader::new(file);
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
        let _: Record = serde_json::from_slice(&line).map_err(|e| e.to_string())?;
        records += 1;
    }
    report(&format!("parsed {records} records"), bytes, started);
    Ok(())
}
