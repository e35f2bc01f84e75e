//! Writes the audit-log examples of `spec/audit-examples/` from the kernel, and prints what the
//! validator says of each, without a key and with the examples' key (and, for the approval
//! log and its cut copy, with the approval log's anchor): the text `spec/audit-log.md` quotes.
//!
//! Run from the workspace root:
//! `cargo run -p resumable-audit --example audit_examples -- spec/audit-examples`
//!
//! With `--checkpoints DIR`, it writes instead every checkpoint the examples' resumes carry,
//! one JSON file each: the seed corpus of the checkpoint fuzz target (`fuzz/run.sh`).

use resumable_audit::{self as audit, sample, Anchor};
use std::path::PathBuf;
use std::process::ExitCode;

/// Writes each checkpoint the examples' resumes carry to `dir`, as `checkpoint-N.json`.
fn checkpoints(dir: &std::path::Path) -> ExitCode {
    let mut n = 0;
    for (name, bytes) in sample::examples().unwrap_or_default() {
        for record in sample::records(&bytes).unwrap_or_default() {
            if let resumable_kernel::Event::Resume(r) = record.input.event {
                n += 1;
                let json = serde_json::to_vec(&r.checkpoint).unwrap_or_default();
                let path = dir.join(format!("checkpoint-{n}.json"));
                if let Err(e) = std::fs::write(&path, json) {
                    eprintln!("cannot write {} (from {name}): {e}", path.display());
                    return ExitCode::from(1);
                }
            }
        }
    }
    println!("{n} checkpoints written to {}", dir.display());
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let [flag, dir] = args.as_slice() {
        if flag == "--checkpoints" {
            return checkpoints(std::path::Path::new(dir));
        }
    }
    let Some(dir) = args.first().map(PathBuf::from) else {
        eprintln!("usage: audit_examples DIR");
        return ExitCode::from(2);
    };
    let examples = match sample::examples() {
        Ok(examples) => examples,
        Err(e) => {
            eprintln!("cannot make the examples: {e}");
            return ExitCode::from(1);
        }
    };
    let anchor = examples
        .iter()
        .find(|(name, _)| *name == "approval.anchor")
        .and_then(|(_, bytes)| Anchor::from_json(bytes).ok());
    for (name, bytes) in &examples {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        if !name.ends_with(".jsonl") {
            continue;
        }
        let shown = format!("spec/audit-examples/{name}");
        let mut keyed = audit::Options {
            key: Some(sample::key()),
            ..Default::default()
        };
        if name.starts_with("approval.") || name.starts_with("forged-truncated") {
            keyed.anchor = anchor;
        }
        for options in [audit::Options::default(), keyed] {
            println!(
                "== {name} (key: {}, anchor: {})",
                options.key.is_some(),
                options.anchor.is_some()
            );
            let result = audit::validate(&bytes[..], &options);
            print!("{}", audit::report_text(&shown, &result));
        }
    }
    ExitCode::SUCCESS
}
