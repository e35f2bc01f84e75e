//! The glossary is current: every spec ID the kernel lists (`SpecId::ALL`) has an entry in
//! plain words in spec/glossary.md, with a link to the section of lifecycle.md that states it,
//! and every term a learner meets in the traces and the batch rules has an entry too.

use resumable_conformance::SpecId;
use std::collections::BTreeSet;
use std::path::Path;

fn spec(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../spec")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The anchor mdBook and GitHub give a heading: lowercase letters, digits, `-` and `_` kept,
/// spaces turned into `-`, everything else dropped.
fn anchor(heading: &str) -> String {
    (heading.chars())
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

fn anchors(doc: &str) -> BTreeSet<String> {
    (doc.lines())
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| anchor(l.trim_start_matches('#').trim()))
        .collect()
}

/// The entry of a spec ID: `- <a id="res-3"></a>**RES-3** ([...](lifecycle.md#anchor)): ...`.
fn entry(glossary: &str, id: SpecId) -> Option<&str> {
    let start = format!("- <a id=\"{}\"></a>**{}** (", id.name().to_lowercase(), id);
    glossary.lines().find(|l| l.starts_with(&start))
}

#[test]
fn every_spec_id_has_an_entry_in_plain_words_linking_the_section_that_states_it() {
    let glossary = spec("glossary.md");
    let sections = anchors(&spec("lifecycle.md"));
    let mut problems = Vec::new();
    for id in SpecId::ALL {
        let Some(line) = entry(&glossary, id) else {
            problems.push(format!("{id}: no entry"));
            continue;
        };
        let link = (line.split_once("](lifecycle.md#"))
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(anchor, _)| anchor);
        match link {
            Some(a) if sections.contains(a) => {}
            Some(a) => problems.push(format!("{id}: lifecycle.md has no section #{a}")),
            None => problems.push(format!("{id}: no link to lifecycle.md")),
        }
        let words = line.rsplit_once("): ").map_or("", |(_, w)| w);
        if words.split_whitespace().count() < 5 {
            problems.push(format!("{id}: no sentence in plain words"));
        }
    }
    assert!(problems.is_empty(), "spec/glossary.md: {problems:#?}");
}

/// The terms a learner meets first in the traces, the batch rules and the audit log.
const TERMS: [&str; 14] = [
    "Batch",
    "Edit",
    "Reject",
    "Respond",
    "Deny",
    "Tool key",
    "Fence",
    "Prior",
    "Rules version",
    "Idempotency key",
    "Checkpoint",
    "Revision",
    "Property",
    "Rule",
];

#[test]
fn every_term_a_learner_meets_has_an_entry() {
    let glossary = spec("glossary.md");
    let defined: Vec<&str> = (glossary.lines())
        .filter_map(|l| l.strip_prefix("- **"))
        .filter_map(|l| l.split_once("**").map(|(term, _)| term))
        .collect();
    let missing: Vec<&str> = (TERMS.into_iter())
        .filter(|t| !defined.iter().any(|d| d.split(", ").any(|d| d == *t)))
        .collect();
    assert!(
        missing.is_empty(),
        "spec/glossary.md defines no {missing:?}"
    );
}

#[test]
fn a_heading_gives_the_anchor_a_link_names() {
    assert_eq!(
        anchor("5.3 Re-checks of the present [RES-3] [RES-7]"),
        "53-re-checks-of-the-present-res-3-res-7"
    );
    assert_eq!(
        anchor("4.5 `tool_result` while dispatching [WAL-2]"),
        "45-tool_result-while-dispatching-wal-2"
    );
}
