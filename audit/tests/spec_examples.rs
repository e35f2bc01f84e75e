//! The audit-log examples kept in spec/audit-examples/ are exactly what the kernel and the
//! writer produce today, and the validator says of each what spec/audit-log.md says it does.

use resumable_audit::{self as audit, sample, Anchor, Options};
use std::path::Path;

/// How the spec validates each example: with the examples' key (but the version 1 log, which
/// has none), and the approval log and its cut copy with the approval log's anchor.
fn options_for(name: &str) -> Options {
    let anchor = std::fs::read(dir().join("approval.anchor")).unwrap();
    Options {
        key: (!name.ends_with("-v1.jsonl")).then(sample::key),
        anchor: (name == "approval.jsonl" || name == "forged-truncated.jsonl")
            .then(|| Anchor::from_json(&anchor).unwrap()),
        ..Options::default()
    }
}

/// The logs among the examples (the others are the key and the anchor).
fn logs() -> Vec<(&'static str, Vec<u8>)> {
    let mut all = sample::examples().unwrap();
    all.retain(|(name, _)| name.ends_with(".jsonl"));
    all
}

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/audit-examples")
}

#[test]
fn every_example_on_disk_is_what_the_code_generates() {
    for (name, bytes) in sample::examples().unwrap() {
        let on_disk = std::fs::read(dir().join(name)).unwrap_or_default();
        assert!(
            on_disk == bytes,
            "spec/audit-examples/{name} is out of date; regenerate with \
             `cargo run -p resumable-audit --example audit_examples -- spec/audit-examples`"
        );
    }
}

#[test]
fn every_example_gets_the_verdict_its_name_announces() {
    for (name, bytes) in logs() {
        let result = audit::validate(&bytes[..], &options_for(name));
        let exit = result.as_ref().map_or_else(|f| f.exit_code(), |_| 0);
        let announced = if name.starts_with("tampered-") || name.starts_with("forged-") {
            1
        } else if name.starts_with("malformed-") {
            2
        } else {
            0
        };
        assert_eq!(
            exit,
            announced,
            "{name}: {}",
            audit::report_text(name, &result)
        );
    }
}

#[test]
fn the_spec_quotes_the_validators_report_on_every_example() {
    let spec = std::fs::read_to_string(dir().join("../audit-log.md")).unwrap();
    for (name, bytes) in logs() {
        let result = audit::validate(&bytes[..], &options_for(name));
        let file = format!("spec/audit-examples/{name}");
        let report = audit::report_text(&file, &result);
        let first = report.lines().next().unwrap();
        assert!(
            spec.contains(first),
            "spec/audit-log.md does not quote the report on {name}:\n{report}"
        );
    }
}

#[test]
fn every_log_line_the_spec_quotes_is_a_line_of_an_example() {
    let spec = std::fs::read_to_string(dir().join("../audit-log.md")).unwrap();
    let lines: Vec<Vec<u8>> = logs()
        .into_iter()
        .flat_map(|(_, bytes)| {
            bytes
                .split(|&b| b == b'\n')
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect();
    let quoted: Vec<&str> = spec
        .lines()
        .filter(|l| {
            l.starts_with("{\"format\":\"resumable-audit\",\"version\":3")
                || l.starts_with("{\"seq\":")
        })
        .collect();
    assert!(!quoted.is_empty());
    for line in quoted {
        assert!(
            lines.iter().any(|l| l == line.as_bytes()),
            "spec/audit-log.md quotes a line no example holds: {line}"
        );
    }
}
