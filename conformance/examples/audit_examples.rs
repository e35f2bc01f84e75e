//! Writes the audit-log examples of `spec/audit-examples/` from the kernel, and prints what the
//! validator says of each: the text `spec/audit-log.md` quotes.
//!
//! Run from the workspace root:
//! `cargo run -p resumable-conformance --example audit_examples -- spec/audit-examples`

use resumable_conformance::audit::{self, sample};
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
    for (name, bytes) in examples {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, &bytes) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        println!("== {name}");
        match audit::validate(&bytes[..], &audit::Options::default()) {
            Ok(summary) => println!("conforming: {summary:?}"),
            Err(finding) => println!("exit {}: {finding}", finding.exit_code()),
        }
    }
    ExitCode::SUCCESS
}
