//! The audit-log examples kept in spec/audit-examples/ are exactly what the kernel and the
//! writer produce today, and the validator says of each what spec/audit-log.md says it does.

use resumable_conformance::audit::{self, sample, Options};
use std::path::Path;

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
             `cargo run -p resumable-conformance --example audit_examples -- spec/audit-examples`"
        );
    }
}

#[test]
fn every_example_gets_the_verdict_its_name_announces() {
    for (name, bytes) in sample::examples().unwrap() {
        let result = audit::validate(&bytes[..], &Options::default());
        let exit = result.as_ref().map_or_else(|f| f.exit_code(), |_| 0);
        let announced = if name.starts_with("tampered-") {
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
    for (name, bytes) in sample::examples().unwrap() {
        let result = audit::validate(&bytes[..], &Options::default());
        let file = format!("spec/audit-examples/{name}");
        let report = audit::report_text(&file, &result);
        let first = report.lines().next().unwrap();
        assert!(
            spec.contains(first),
            "spec/audit-log.md does not quote the report on {name}:\n{report}"
        );
    }
}
