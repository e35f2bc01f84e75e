//! The book's exercises and their answer key (`book/exercises/key.txt`), checked: a learner
//! who follows the key gets what the code gives.
//!
//! - *Predict the verdict*: a scenario whose every `expect` is `"?"`; its key line lists the
//!   verdict of each input, in order, as `replay` gives them.
//! - *Break it yourself*: a broken variant to run with `check --variant NAME`; its key line is
//!   the property it violates and the length of the shortest counterexample, as the snapshot of
//!   `model/tests/counterexamples.rs` has them.
//! - *Fix the driver*: a scenario a naive driver fed, refused; its key line names a solution
//!   whose every input is accepted, ending with the run completed.

use resumable_conformance::{scenario, trace};
use resumable_kernel::PhaseKind;
use resumable_model::variant::Variant;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/exercises")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn key() -> BTreeMap<String, String> {
    (read(&dir().join("key.txt")).lines())
        .map(|l| l.split_once(": ").expect("NAME: answer"))
        .map(|(name, answer)| (name.to_string(), answer.to_string()))
        .collect()
}

fn replay(path: &Path) -> trace::Trace {
    let parsed = scenario::parse(read(path).as_bytes())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    trace::replay(&parsed).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `counterexample to "NAME": N steps (shortest)`, the first line of a variant's snapshot
/// body, as `NAME; N steps`.
fn counterexample_answer(variant: Variant) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/snapshots")
        .join(format!("{}.snap", variant.name()));
    let text = read(&path);
    let line = (text.lines())
        .find(|l| l.starts_with("counterexample to \""))
        .expect("a counterexample's first line");
    let rest = line.trim_start_matches("counterexample to \"");
    let (name, steps) = rest
        .split_once("\": ")
        .expect("the property's name, then steps");
    format!("{name}; {}", steps.trim_end_matches(" (shortest)"))
}

#[test]
fn the_answer_key_answers_every_exercise_as_the_code_does() {
    let key = key();
    assert!(key.len() >= 8, "at least eight exercises");
    let mut files: Vec<String> = std::fs::read_dir(dir())
        .expect("book/exercises is readable")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    files.sort();
    for (name, answer) in &key {
        // The exercise's name after its number: a variant's name, or a scenario file's stem.
        let (_, subject) = name.split_once('-').expect("NN-name");
        if let Some(variant) = Variant::from_name(subject) {
            assert_eq!(answer, &counterexample_answer(variant), "{name}");
            continue;
        }
        assert!(
            files.contains(name),
            "{name}: no book/exercises/{name}.jsonl"
        );
        let exercise = replay(&dir().join(format!("{name}.jsonl")));
        if let Some(solution) = answer.strip_suffix(".jsonl") {
            // Fix the driver: the exercise is refused somewhere; the solution is accepted
            // throughout and completes the run.
            assert!(exercise.unmet().count() > 0, "{name}: nothing to fix");
            let fixed = replay(&dir().join(format!("{solution}.jsonl")));
            assert_eq!(fixed.header.scenario, *name, "{solution}");
            let refused: Vec<usize> = (fixed.steps.iter())
                .filter(|s| s.verdict.is_err() || s.met() != Some(true))
                .map(|s| s.number)
                .collect();
            assert!(
                refused.is_empty(),
                "{solution}: steps {refused:?} not accepted"
            );
            assert_eq!(
                fixed.final_run().phase().kind(),
                PhaseKind::Completed,
                "{solution}"
            );
            continue;
        }
        // Predict the verdict: every expect left for the learner, and the key is the replay.
        for step in &exercise.steps {
            assert_eq!(
                step.expect.as_deref(),
                Some("?"),
                "{name} step {}",
                step.number
            );
        }
        let verdicts: Vec<String> = exercise.steps.iter().map(|s| s.verdict_name()).collect();
        assert_eq!(answer, &verdicts.join(" "), "{name}");
    }
    for file in &files {
        assert!(
            key.contains_key(file),
            "{file}.jsonl has no line in key.txt"
        );
    }
}
