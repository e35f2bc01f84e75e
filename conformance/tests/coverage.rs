//! spec/coverage.md stays complete and true: its rows are exactly the spec's IDs, every spec ID
//! cited in code is one of them, and every scenario and counterexample it names exists.

use resumable_conformance::SpecId;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The spec-ID-shaped words of a text: a known area prefix, a dash, a number.
fn cited_ids(text: &str) -> BTreeSet<String> {
    const AREAS: &[&str] = &[
        "ID", "CLK", "INV", "REV", "AUD", "REJ", "SUS", "CKP", "RES", "APR", "KEY", "WAL", "REC",
        "EXP", "CAN", "EFF", "LIVE", "CONF",
    ];
    let mut found = BTreeSet::new();
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices('-') {
        let start = text[..i]
            .rfind(|c: char| !c.is_ascii_uppercase())
            .map_or(0, |p| p + 1);
        let digits = text[i + 1..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len() - i - 1);
        let prefix = &text[start..i];
        let before_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        if digits > 0 && before_ok && AREAS.contains(&prefix) {
            found.insert(text[start..i + 1 + digits].to_string());
        }
    }
    found
}

/// The first cell of every table row of coverage.md, and the rows themselves.
fn coverage_rows() -> Vec<(String, String)> {
    read("spec/coverage.md")
        .lines()
        .filter_map(|l| {
            let id = l.strip_prefix("| ")?.split(" |").next()?.trim().to_string();
            cited_ids(&id).contains(&id).then(|| (id, l.to_string()))
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn coverage_table_has_one_row_per_spec_id() {
    let rows: Vec<String> = coverage_rows().into_iter().map(|(id, _)| id).collect();
    let unique: BTreeSet<String> = rows.iter().cloned().collect();
    assert_eq!(rows.len(), unique.len(), "an ID has two rows: {rows:?}");
    let spec: BTreeSet<String> = SpecId::ALL.iter().map(|id| id.name().to_string()).collect();
    assert_eq!(unique, spec, "coverage rows differ from the spec's IDs");
}

#[test]
fn every_spec_id_is_defined_in_the_lifecycle_spec() {
    let defined = cited_ids(&read("spec/lifecycle.md"));
    for id in SpecId::ALL.map(SpecId::name) {
        assert!(
            defined.contains(id),
            "{id} never appears in spec/lifecycle.md"
        );
    }
}

#[test]
fn every_spec_id_cited_in_code_is_in_the_spec() {
    let mut files = Vec::new();
    for dir in [
        "kernel/src",
        "audit/src",
        "model/src",
        "conformance/src",
        "cli/src",
    ] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 10, "the source tree was found");
    let known: BTreeSet<&str> = SpecId::ALL.iter().map(|id| id.name()).collect();
    let mut unknown = BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("a source file");
        for id in cited_ids(&text) {
            if !known.contains(id.as_str()) {
                unknown.insert(format!("{id} in {}", f.display()));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "IDs cited in code but not in the spec: {unknown:?}"
    );
}

#[test]
fn every_scenario_the_table_names_exists() {
    let mut named = 0;
    for (id, row) in coverage_rows() {
        let Some(rest) = row.split("scenarios ").nth(1) else {
            continue;
        };
        let list = rest.split(';').next().unwrap_or("");
        for name in list.split('`').skip(1).step_by(2) {
            named += 1;
            let path = root().join("spec/scenarios").join(format!("{name}.jsonl"));
            assert!(
                path.exists(),
                "{id} names scenario {name}, which does not exist"
            );
        }
    }
    assert!(named > 30, "the table names scenarios ({named})");
}

#[test]
fn every_counterexample_the_table_names_is_a_broken_variant() {
    let variants: BTreeSet<&str> = resumable_model::variant::Variant::ALL
        .iter()
        .map(|v| v.name())
        .collect();
    let mut named = BTreeSet::new();
    for (id, row) in coverage_rows() {
        // The variants' counterexamples, as opposed to the lockstep snapshots of CONF-1.
        let Some(rest) = row.split("counterexamples ").nth(1) else {
            continue;
        };
        let Some((list, _)) = rest.split_once(" ([counterexamples.md]") else {
            continue;
        };
        for name in list.split('`').skip(1).step_by(2) {
            assert!(variants.contains(name), "{id} names {name}, not a variant");
            named.insert(name.to_string());
        }
    }
    let variants: BTreeSet<String> = variants.iter().map(|v| v.to_string()).collect();
    assert_eq!(
        named, variants,
        "every variant's counterexample is linked from the table"
    );
}

#[test]
fn cited_ids_finds_ids_and_ignores_lookalikes() {
    let found = cited_ids("see RES-2 and [APR-1]; UTF-8, XRES-3, ID-12x");
    let expected: BTreeSet<String> = ["RES-2", "APR-1", "ID-12"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn every_spec_id_is_parsed_back_from_its_name_and_nothing_else_is() {
    for id in SpecId::ALL {
        assert_eq!(resumable_conformance::spec_id(id.name()), Some(id));
    }
    for word in ["RES-99", "res-3", "RES-3 ", "", "RES"] {
        assert_eq!(resumable_conformance::spec_id(word), None, "{word:?}");
    }
}
