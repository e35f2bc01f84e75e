//! The teaching traces: every `spec/scenarios/*.jsonl`, replayed through the kernel and kept
//! as an insta snapshot named after the file. A new scenario file is picked up by reading
//! the directory; its snapshot appears on the first run with `INSTA_UPDATE=always`.

use resumable_conformance::scenario::{self, Scenario};
use resumable_conformance::trace::{self, Trace};
use resumable_conformance::SpecId;
use resumable_kernel::{Name, ReasonKind, RejectionKind, Revision};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/scenarios")
}

/// Every scenario file, sorted by name, with its parsed scenario and its replay.
fn scenarios() -> Vec<(String, Scenario, Trace)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(scenario_dir())
        .expect("spec/scenarios is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "spec/scenarios holds no scenario");
    paths
        .into_iter()
        .map(|path| {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a UTF-8 file name")
                .to_string();
            let bytes = std::fs::read(&path).expect("a readable scenario");
            let parsed = scenario::parse(&bytes).unwrap_or_else(|e| panic!("{stem}.jsonl:{e}"));
            let replayed = trace::replay(&parsed).unwrap_or_else(|e| panic!("{stem}.jsonl:{e}"));
            (stem, parsed, replayed)
        })
        .collect()
}

/// The one check function: each scenario's text trace is its snapshot, and each step shows
/// the verdict the scenario claims for it.
#[test]
fn every_scenario_replays_to_its_snapshot_with_the_verdicts_it_claims() {
    for (stem, parsed, replayed) in scenarios() {
        for step in &replayed.steps {
            let expect = step.expect.as_deref().unwrap_or_else(|| {
                panic!(
                    "{stem}.jsonl:{}: a shipped step states its expected verdict",
                    step.line
                )
            });
            assert_eq!(
                step.verdict_name(),
                expect,
                "{stem}.jsonl:{}: step {} ({})",
                step.line,
                step.number,
                step.summary
            );
        }
        assert_eq!(
            parsed.header.scenario, stem,
            "the header names the file's stem"
        );
        insta::assert_snapshot!(stem.as_str(), replayed.to_text());
    }
}

#[test]
fn every_scenario_header_shows_at_least_one_spec_id_each_once() {
    for (stem, parsed, _) in scenarios() {
        let shows = &parsed.header.shows;
        assert!(!shows.is_empty(), "{stem}: shows is empty");
        let distinct: BTreeSet<SpecId> = shows.iter().copied().collect();
        assert_eq!(distinct.len(), shows.len(), "{stem}: an ID is shown twice");
    }
}

#[test]
fn a_header_with_empty_shows_is_refused() {
    let text = br#"{"scenario": "x", "format": 1, "shows": [], "description": "d", "run": {"tenant": "t", "session": "s", "run": "r", "definition": "d", "operator": "ops", "reconcile_window": 10, "created_at": 0}}
{"at": 1, "kind": "expire"}
"#;
    let err = scenario::parse(text).expect_err("empty shows is refused");
    assert_eq!(err.line, 1);
    assert!(err.message.contains("\"shows\" is empty"), "{err}");
}

#[test]
fn a_header_naming_an_unknown_spec_id_is_refused() {
    let text = br#"{"scenario": "x", "format": 1, "shows": ["RES-99"], "description": "d", "run": {"tenant": "t", "session": "s", "run": "r", "definition": "d", "operator": "ops", "reconcile_window": 10, "created_at": 0}}
{"at": 1, "kind": "expire"}
"#;
    let err = scenario::parse(text).expect_err("an unknown ID is refused");
    assert!(err.message.contains("RES-99"), "{err}");
}

/// The seed's scenario (`spec/scenarios/seed.jsonl`), parsed and replayed.
fn seed() -> (Scenario, Trace) {
    let (_, parsed, replayed) = (scenarios().into_iter())
        .find(|(stem, _, _)| stem == "seed")
        .expect("spec/scenarios/seed.jsonl exists");
    (parsed, replayed)
}

#[test]
fn the_seed_scenario_keeps_the_seed_names_and_verdicts() {
    let (parsed, replayed) = seed();
    assert_eq!(parsed.header.run.run, Name::lit("run-approval"));
    let verdicts: Vec<String> = replayed.steps.iter().map(|s| s.verdict_name()).collect();
    assert_eq!(
        verdicts,
        [
            "accepted",
            "already_suspended",
            "identity_mismatch",
            "checkpoint_mismatch",
            "stale_revision",
            "accepted",
            "already_applied",
            "accepted",
            "accepted",
        ]
    );
    // Suspended at r1 under the seed's key; approved into r2, dispatched once under it.
    let first = &replayed.steps[0];
    assert_eq!(first.run.revision(), Revision(1));
    let approved = &replayed.steps[5];
    assert_eq!(approved.run.revision(), Revision(2));
    let dispatch = approved
        .verdict
        .as_ref()
        .ok()
        .and_then(|fx| fx.dispatch())
        .expect("the approval dispatches");
    assert_eq!(
        (dispatch.tool, dispatch.key),
        (
            Name::lit("publish:demo"),
            resumable_kernel::IdempotencyKey::lit("idem-run-approval")
        )
    );
    let dispatches = replayed
        .steps
        .iter()
        .filter_map(|s| s.verdict.as_ref().ok())
        .filter(|fx| fx.dispatch().is_some())
        .count();
    assert_eq!(
        dispatches, 1,
        "the approved action is dispatched exactly once"
    );
    // The unknown reconcile answer leaves the run suspended for manual intervention.
    let last = replayed.final_run();
    assert_eq!(
        last.suspension().map(|s| s.reason.kind()),
        Some(ReasonKind::ManualIntervention)
    );
}

#[test]
fn the_json_trace_of_the_seed_is_stable() {
    let (_, replayed) = seed();
    let json = replayed.to_json_lines().expect("the trace serialises");
    for line in json.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        assert!(v.get("verdict").is_some() && v.get("effects").is_some());
    }
    insta::assert_snapshot!("seed_json", json);
}

/// Whether a scenario can reach the rejection. The match has no wildcard, so a new kernel
/// rejection fails to compile here until someone decides whether a scenario must show it.
fn reachable_by_a_scenario(kind: RejectionKind) -> bool {
    use RejectionKind::*;
    match kind {
        // A run starts at revision 0; exhausting a u64 counter takes 2^64 inputs.
        RevisionExhausted => false,
        Terminal | IdentityMismatch | ClockRegressed | ClockExhausted | SchemaTooNew
        | UnknownSchema | MigrationRequired | DigestMismatch | StaleRevision | FutureRevision
        | AlreadyApplied | AlreadyResumed | ResourceChanged | NotSuspended | CheckpointMismatch
        | Expired | DecisionMismatch | ApprovalMismatch | ApprovalExpired | SelfApproval
        | Unauthorised | WaitMismatch | PermissionRevoked | BudgetExhausted | NotRunning
        | AlreadySuspended | ExpiryNotInFuture | ExpiryUnreachable | NoAttemptsAllowed
        | KeyConflict | KeyCommitted | CallIdReused | DispatchInFlight | NoDispatchInFlight
        | ResultMismatch | NothingInFlight | NothingUnresolved | NotExpired | CancelPending
        | EmptyBatch | DuplicateInBatch | NoDecision | DuplicateDecision | DecisionNotAllowed
        | EditKeyBound | NoDecisionAllowed => true,
    }
}

#[test]
fn every_rejection_a_scenario_can_reach_appears_in_some_scenario() {
    let shown: BTreeSet<String> = scenarios()
        .iter()
        .flat_map(|(_, _, t)| t.steps.iter().map(|s| s.verdict_name()))
        .collect();
    let missing: Vec<&str> = (RejectionKind::ALL.into_iter())
        .filter(|k| reachable_by_a_scenario(*k))
        .map(RejectionKind::name)
        .filter(|name| !shown.contains(*name))
        .collect();
    assert!(missing.is_empty(), "no scenario shows: {missing:?}");
}

#[test]
fn a_note_with_control_characters_stays_on_its_line_escaped() {
    let text = br#"{"scenario": "x", "format": 1, "shows": ["EXP-1"], "description": "d", "run": {"tenant": "t", "session": "s", "run": "r", "definition": "d", "operator": "ops", "reconcile_window": 10, "created_at": 0}}
{"at": 1, "kind": "expire", "note": "one\nTWO \u001b[31m"}
"#;
    let parsed = scenario::parse(text).expect("a valid scenario");
    let rendered = trace::replay(&parsed).expect("it replays").to_text();
    assert!(
        rendered.contains("   note: one\\nTWO \\u{1b}[31m\n"),
        "{rendered}"
    );
    assert!(!rendered.lines().any(|l| l.starts_with("TWO")));
}

/// Every scenario is linked from the section of spec/lifecycle.md it teaches (a `Traces:` line),
/// and every link names a scenario that exists, so a learner reading the spec finds each trace.
#[test]
fn every_scenario_is_linked_from_a_section_of_the_lifecycle_and_every_link_exists() {
    let spec = std::fs::read_to_string(scenario_dir().join("../lifecycle.md"))
        .expect("spec/lifecycle.md is readable");
    let mut linked = BTreeSet::new();
    for line in spec.lines().filter(|l| l.starts_with("Traces: ")) {
        for (i, _) in line.match_indices("(scenarios/") {
            let rest = &line[i + "(scenarios/".len()..];
            let name = rest
                .split_once(".jsonl)")
                .map(|(name, _)| name)
                .unwrap_or_else(|| panic!("a malformed trace link in `{line}`"));
            linked.insert(name.to_string());
        }
    }
    let shipped: BTreeSet<String> = scenarios().into_iter().map(|(stem, _, _)| stem).collect();
    let unlinked: Vec<_> = shipped.difference(&linked).collect();
    let missing: Vec<_> = linked.difference(&shipped).collect();
    assert!(
        unlinked.is_empty(),
        "scenarios no section links: {unlinked:?}"
    );
    assert!(missing.is_empty(), "links to no scenario: {missing:?}");
}

/// CONF-1 on the teaching traces: every scenario's inputs, real-size identifiers included,
/// fed to the kernel and the reference machine in lockstep; the two agree on every input,
/// accepted or refused, and on the run after it.
#[test]
fn every_scenario_goes_through_kernel_and_reference_in_lockstep() {
    use resumable_conformance::lockstep::{kernel_and_reference, Session};
    for (stem, parsed, replayed) in scenarios() {
        let created = parsed.header.run.create().expect("a valid policy");
        let mut session = Session::new(
            kernel_and_reference(),
            *created.identity(),
            *created.policy(),
            created.updated_at(),
        )
        .expect("a valid policy");
        for step in &replayed.steps {
            let row = session.feed(&step.input);
            assert!(
                row.agreed,
                "{stem}.jsonl:{}: kernel and reference disagree on step {} ({}): {:?} vs {:?}",
                step.line, step.number, step.summary, row.a, row.b
            );
        }
        assert_eq!(session.rows().len(), replayed.steps.len(), "{stem}");
    }
}
