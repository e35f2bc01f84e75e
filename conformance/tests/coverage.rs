//! spec/coverage.md stays complete and true: its rows are exactly the spec's IDs, every spec ID
//! cited in code is one of them, every scenario and counterexample it names exists, every
//! kernel function it names is defined where it says, and its model-property column names
//! exactly the properties the checker keys by each ID.

use resumable_conformance::lockstep::kernel_and_reference;
use resumable_conformance::lockstep::pair_world::{default_config, LockstepWorld, Probes};
use resumable_conformance::SpecId;
use resumable_model::checker::Checkable;
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
        "EXP", "CAN", "EFF", "LIVE", "CONF", "BAT", "POL",
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

/// The cells of a table row, trimmed: ID, rule, kernel check, kernel tests, model property,
/// traces.
fn cells(row: &str) -> Vec<&str> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split(" | ").map(str::trim).collect()
}

/// The text between backticks, in order.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Every property of the model world and of the lockstep world around it, with its spec ID.
fn model_properties() -> Vec<(SpecId, &'static str)> {
    let world = LockstepWorld::new(kernel_and_reference(), default_config())
        .expect("the lockstep world's configuration is valid")
        .with_probes(Probes::On);
    let list = world.property_list().expect("every always has a partner");
    list.iter().map(|(id, p)| (id, p.name)).collect()
}

#[test]
fn the_model_property_column_names_exactly_the_properties_of_its_id() {
    let properties = model_properties();
    let every: BTreeSet<&str> = properties.iter().map(|(_, name)| *name).collect();
    let mut named = 0;
    for (id, row) in coverage_rows() {
        let cell = cells(&row)[4];
        let listed: BTreeSet<&str> = (quoted(cell).into_iter())
            .filter(|q| every.contains(q))
            .collect();
        let expected: BTreeSet<&str> = (properties.iter())
            .filter(|(key, _)| key.name() == id)
            .map(|(_, name)| *name)
            .collect();
        named += listed.len();
        assert_eq!(listed, expected, "{id}: the model-property column");
        if expected.is_empty() {
            // Checked through CONF-1, or through another ID's property named with "via".
            let via = cell
                .strip_prefix("via `")
                .map(|rest| rest.split(' ').next());
            match via {
                Some(Some(other)) => assert!(
                    properties.iter().any(|(key, _)| key.name() == other),
                    "{id}: via {other}, which has no property"
                ),
                _ => assert!(cell.starts_with("CONF-1 ("), "{id}: {cell}"),
            }
        }
        for path in quoted(cell).into_iter().filter(|q| q.ends_with(".rs")) {
            assert!(root().join(path).exists(), "{id} names {path}");
        }
    }
    assert_eq!(named, every.len(), "every property is in the table once");
}

/// Whether `file` defines `name` as a function or a field.
fn defines(file: &Path, name: &str) -> bool {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.lines().any(|line| {
        let line = line.trim_start();
        let line = line.strip_prefix("pub(crate) ").unwrap_or(line);
        let line = line.strip_prefix("pub(super) ").unwrap_or(line);
        let line = line.strip_prefix("pub ").unwrap_or(line);
        let line = line.strip_prefix("const ").unwrap_or(line);
        line.strip_prefix("fn ").is_some_and(|rest| {
            rest.starts_with(name)
                && !rest[name.len()..].starts_with(|c: char| c == '_' || c.is_ascii_alphanumeric())
        }) || line
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with(": "))
    })
}

fn is_snake(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[test]
fn the_kernel_check_column_names_functions_where_they_are_defined() {
    let kernel = root().join("kernel/src");
    let mut files = Vec::new();
    rust_files(&kernel, &mut files);
    let mut checked = 0;
    for (id, row) in coverage_rows() {
        let cell = cells(&row)[2];
        // The rejections follow the dash; the places that enforce the rule come before it.
        let places = cell.split(" — ").next().unwrap_or("");
        for segment in places.split(';') {
            // A function is in `kernel/src/step.rs` unless a file is named before it in the
            // same part of the cell.
            let mut file = kernel.join("step.rs");
            for q in quoted(segment) {
                let q = q.split('(').next().unwrap_or(q);
                if q.ends_with(".rs") {
                    file = root().join(q);
                    assert!(file.exists(), "{id} names {q}, which does not exist");
                } else if let Some(f) = q.strip_prefix("invariants::") {
                    assert!(defines(&kernel.join("invariants.rs"), f), "{id}: {q}");
                    checked += 1;
                } else if let Some((ty, method)) = q.split_once("::") {
                    // A method: defined in a file that implements the type.
                    let implemented = files.iter().any(|f| {
                        let text = std::fs::read_to_string(f).unwrap_or_default();
                        let for_type = text.contains(&format!("impl {ty} "))
                            || text.contains(&format!("impl<'a> {ty}<"));
                        for_type && defines(f, method)
                    });
                    assert!(implemented, "{id}: {q} is defined nowhere in the kernel");
                    checked += 1;
                } else if is_snake(q) {
                    let shown = file
                        .strip_prefix(root())
                        .unwrap_or(&file)
                        .display()
                        .to_string();
                    assert!(defines(&file, q), "{id}: {q} is not defined in {shown}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 60, "the table names functions ({checked})");
}

#[test]
fn a_function_named_without_its_file_is_looked_for_in_step_rs() {
    let step = root().join("kernel/src/step.rs");
    assert!(defines(&step, "guard_every_input"));
    // Its rooms hold the shared checks and the resume: not step.rs.
    assert!(!defines(&step, "check_identity"));
    assert!(defines(
        &root().join("kernel/src/step/checks.rs"),
        "check_identity"
    ));
    assert!(!defines(&step, "guard_every"));
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
        "driver/src",
        "model/src",
        "conformance/src",
        "runtime/src",
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
    // The reference machine's broken variants and the world's broken drivings.
    let variants: BTreeSet<&str> = (resumable_model::variant::Variant::ALL.iter())
        .map(|v| v.name())
        .chain(
            resumable_model::driving::Driving::BROKEN
                .iter()
                .map(|d| d.name()),
        )
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
