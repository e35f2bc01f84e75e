//! Writes the audit-log examples of `spec/audit-examples/` from the kernel, and prints what the
//! validator says of each, without a key and with the examples' key (and, for the approval
//! log and its cut copy, with the approval log's anchor): the text `spec/audit-log.md` quotes.
//!
//! Run from the workspace root:
//! `cargo run -p resumable-conformance --example audit_examples -- spec/audit-examples`

use resumable_conformance::audit::{self, sample, Anchor};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
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
