//! The kernel's rules version moves with its verdicts: the files that show a verdict of the
//! kernel (the trace and lockstep snapshots, the scenarios with their expected verdicts, the
//! audit-log examples) are recorded in `conformance/tests/verdicts.sha256` beside the rules
//! version they were recorded under, and this test fails when one of them changes while
//! `RULES_VERSION` stays the same, or when the version moves without a new record.
//!
//! Re-record, after bumping `RULES_VERSION` (with a line in the history of
//! `kernel/src/rules.rs`) or after a change that shows no new verdict (a trace's wording, a
//! new scenario):
//!
//! ```sh
//! RESUMABLE_RECORD_VERDICTS=1 cargo test -p resumable-conformance --test rules_version
//! ```

use resumable_kernel::{Digest, RULES_VERSION};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const MANIFEST: &str = "conformance/tests/verdicts.sha256";
const RECORD: &str = "RESUMABLE_RECORD_VERDICTS";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files that show a verdict of the kernel, by path from the workspace root, with the
/// SHA-256 of each.
fn verdict_files() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (dir, ext) in [
        ("conformance/tests/snapshots", ".snap"),
        ("spec/scenarios", ".jsonl"),
        ("spec/audit-examples", ""),
    ] {
        let entries = std::fs::read_dir(root().join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}"));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if path.is_file() && name.ends_with(ext) {
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
                out.insert(format!("{dir}/{name}"), Digest::of(&bytes).to_string());
            }
        }
    }
    out
}

/// The manifest's text for these files under these rules.
fn manifest(rules: u16, files: &BTreeMap<String, String>) -> String {
    let mut text = format!(
        "# rules {rules}: the files that show a kernel verdict, as recorded under these rules.\n\
         # Re-record: {RECORD}=1 cargo test -p resumable-conformance --test rules_version\n"
    );
    for (path, hex) in files {
        text.push_str(&format!("{hex}  {path}\n"));
    }
    text
}

/// The rules and the files a manifest records.
fn read_manifest(text: &str) -> (Option<u16>, BTreeMap<String, String>) {
    let rules = text
        .lines()
        .find_map(|l| l.strip_prefix("# rules ")?.split(':').next()?.parse().ok());
    let files = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (hex, path) = l.split_once("  ")?;
            Some((path.to_string(), hex.to_string()))
        })
        .collect();
    (rules, files)
}

#[test]
fn verdict_files_change_only_with_the_rules_version() {
    let now = verdict_files();
    assert!(
        now.len() > 40,
        "the verdict files were found ({})",
        now.len()
    );
    if std::env::var_os(RECORD).is_some() {
        std::fs::write(root().join(MANIFEST), manifest(RULES_VERSION, &now))
            .unwrap_or_else(|e| panic!("{MANIFEST}: {e}"));
        eprintln!(
            "{MANIFEST}: recorded {} files under rules {RULES_VERSION}",
            now.len()
        );
        return;
    }
    let text = std::fs::read_to_string(root().join(MANIFEST)).unwrap_or_default();
    let (rules, recorded) = read_manifest(&text);
    let rerecord = format!("{RECORD}=1 cargo test -p resumable-conformance --test rules_version");
    assert_eq!(
        rules,
        Some(RULES_VERSION),
        "RULES_VERSION is {RULES_VERSION}, but {MANIFEST} was recorded under rules {rules:?}: \
         once the history in kernel/src/rules.rs says what the new rules change, re-record \
         with `{rerecord}`"
    );
    let changed: Vec<&String> = now
        .iter()
        .filter(|(path, hex)| recorded.get(*path).is_some_and(|h| h != *hex))
        .map(|(path, _)| path)
        .collect();
    assert!(
        changed.is_empty(),
        "these files show kernel verdicts and changed while RULES_VERSION stayed \
         {RULES_VERSION}: {changed:?}. If a verdict or a serialised form of the kernel changed, \
         bump RULES_VERSION in kernel/src/rules.rs, say what changed in its history, and \
         re-record with `{rerecord}`; if only their presentation changed (a trace's words, a \
         note), re-record without bumping and say so in the commit"
    );
    let added: Vec<&String> = now.keys().filter(|p| !recorded.contains_key(*p)).collect();
    let removed: Vec<&String> = recorded.keys().filter(|p| !now.contains_key(*p)).collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "verdict files added {added:?} or removed {removed:?} since {MANIFEST} was recorded: \
         re-record with `{rerecord}`"
    );
}

#[test]
fn a_manifest_reads_back_what_it_records() {
    let files: BTreeMap<String, String> = [("a/b.snap".to_string(), "ab".repeat(32))].into();
    assert_eq!(read_manifest(&manifest(7, &files)), (Some(7), files));
    assert_eq!(read_manifest(""), (None, BTreeMap::new()));
}
