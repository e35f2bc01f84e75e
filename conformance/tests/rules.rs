//! Every rejection names its rule: `resumable_conformance::rule` gives each rejection kind one
//! spec ID, and that ID is one the rejection table of spec/lifecycle.md (section 8) gives its
//! row under "raised by". The text and JSON traces print it with every rejection.

use resumable_conformance::rule::rule;
use resumable_conformance::{scenario, trace};
use resumable_kernel::RejectionKind;
use std::collections::BTreeMap;
use std::path::Path;

fn spec(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../spec")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rejection table of lifecycle.md section 8: the variant's name to its "raised by" cell.
fn raised_by() -> BTreeMap<String, String> {
    let doc = spec("lifecycle.md");
    let start = doc
        .find("## 8. Rejections")
        .expect("lifecycle.md has section 8");
    let end = doc[start..].find("## 9.").expect("section 9 follows") + start;
    let mut rows = BTreeMap::new();
    for line in doc[start..end].lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 6, "malformed rejection row: {line}");
        rows.insert(cells[1].trim_matches('`').to_string(), cells[4].to_string());
    }
    rows
}

#[test]
fn every_rejection_kind_names_a_rule_its_row_in_the_spec_gives() {
    let rows = raised_by();
    let mut wrong = Vec::new();
    for kind in RejectionKind::ALL {
        let name = format!("{kind:?}");
        let cell = rows
            .get(&name)
            .unwrap_or_else(|| panic!("lifecycle.md section 8 has no row for {name}"));
        let ids: Vec<&str> = cell.split([',', ';', ' ']).map(str::trim).collect();
        if !ids.contains(&rule(kind).name()) {
            wrong.push(format!(
                "{name}: rule {} but the spec says `{cell}`",
                rule(kind)
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A scenario whose rejections span the guards: identity, the checkpoint, the revision.
const SEED: &str = include_str!("../../spec/scenarios/seed.jsonl");

#[test]
fn every_rejection_in_a_text_trace_names_its_rule() {
    let parsed = scenario::parse(SEED.as_bytes()).expect("the seed parses");
    let replayed = trace::replay(&parsed).expect("the seed replays");
    let text = replayed.to_text();
    let rejected: Vec<&str> = (text.lines())
        .filter(|l| l.trim_start().starts_with("rejected "))
        .collect();
    assert_eq!(rejected.len(), 5, "the seed refuses five inputs:\n{text}");
    for step in replayed.steps.iter().filter(|s| s.verdict.is_err()) {
        let kind = step.verdict.as_ref().expect_err("a rejection").kind();
        let line = format!("rejected {} [{}]: ", kind.name(), rule(kind));
        assert!(text.contains(&line), "no `{line}` in:\n{text}");
    }
    assert!(text.contains("rejected stale_revision [RES-3]: "), "{text}");
}

#[test]
fn every_rejection_in_a_json_trace_names_its_rule_and_an_acceptance_none() {
    let parsed = scenario::parse(SEED.as_bytes()).expect("the seed parses");
    let replayed = trace::replay(&parsed).expect("the seed replays");
    let json = replayed.to_json_lines().expect("the trace serialises");
    for (line, step) in json.lines().zip(&replayed.steps) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let expected = match &step.verdict {
            Ok(_) => serde_json::Value::Null,
            Err(r) => serde_json::Value::from(rule(r.kind()).name()),
        };
        assert_eq!(v["rule"], expected, "step {}", step.number);
    }
}

/// The spec IDs a note cites: every word of the form `AREA-n` that names a spec ID.
fn cited(note: &str) -> Vec<resumable_kernel::SpecId> {
    (note.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')))
        .filter_map(resumable_conformance::spec_id)
        .collect()
}

/// A note that explains a rejection names the rule the rejection enforces: a note citing IDs
/// on a refused step must cite the step's rule among them, so a reader who follows the note's
/// IDs reaches the rule the bracket names.
#[test]
fn a_note_on_a_rejected_step_that_cites_rules_cites_the_one_it_enforces() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("spec/scenarios is readable")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for path in paths {
        let bytes = std::fs::read(&path).expect("a readable scenario");
        let parsed = scenario::parse(&bytes).expect("a valid scenario");
        for step in trace::replay(&parsed).expect("it replays").steps {
            let (Err(rejection), Some(note)) = (&step.verdict, &step.note) else {
                continue;
            };
            let ids = cited(note);
            if ids.is_empty() {
                continue;
            }
            checked += 1;
            let id = rule(rejection.kind());
            if !ids.contains(&id) {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                let names: Vec<&str> = ids.iter().map(|i| i.name()).collect();
                wrong.push(format!(
                    "{name}:{}: [{id}] but the note cites {names:?}",
                    step.line
                ));
            }
        }
    }
    assert!(checked > 0, "no note cites a rule");
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_note_cites_the_ids_it_names_and_no_other_word() {
    use resumable_kernel::SpecId;
    assert_eq!(
        cited("told it won (REJ-1, RES-2); not RES-99 or KEY"),
        [SpecId::Rej1, SpecId::Res2]
    );
}
