//! The checker driver's verdicts and reports, on the two-phase-commit yardstick: no vacuous
//! pass (a `sometimes` never reached, an `always` whose partner was never reached), refused
//! properties, exit statuses, the text and JSON reports, progress.

use resumable_model::checker::{
    check, check_with_progress, CheckError, Checkable, Cut, ListError, Options, Outcome,
    PropertyList, Summarize, Verdict,
};
use resumable_model::twopc::{RmPhase, TmPhase, TpcAction, TpcState, TwoPhaseCommit};
use serde_json::json;
use stateright::{Model, Property};
use std::time::Duration;

mod tpc_support;

use tpc_support::{options, verdict};

// --- Vacuity, boundaries and refused properties ---------------------------------------------

/// The protocol with an extra `sometimes` that no state satisfies, and optionally a boundary,
/// an `eventually` property, or no properties at all. Its properties are keyed by the rule
/// they check, `TPC-1`, so that both `sometimes` properties partner the `always` one; with
/// `unpartnered`, the `always` is keyed apart from them and has no partner.
struct Extended {
    inner: TwoPhaseCommit,
    boundary: bool,
    eventually: bool,
    silent: bool,
    unpartnered: bool,
    vacuous: bool,
    panics: bool,
    /// A state where every rm committed may not witness a `sometimes` (as the world's states
    /// reached through a borrowed tick may not).
    distrusts_commits: bool,
}

impl Extended {
    fn new(rms: usize) -> Self {
        Extended {
            inner: TwoPhaseCommit::new(rms),
            boundary: false,
            eventually: false,
            silent: false,
            unpartnered: false,
            vacuous: true,
            panics: false,
            distrusts_commits: false,
        }
    }

    /// Each property with the key of the rule it checks.
    fn keyed(&self) -> Vec<(&'static str, Property<Self>)> {
        if self.silent {
            return Vec::new();
        }
        let own = if self.unpartnered { "TPC-2" } else { "TPC-1" };
        let mut properties = vec![
            (own, Property::<Self>::always(CONSISTENT, consistent)),
            (
                "TPC-1",
                Property::<Self>::sometimes(ALL_COMMIT, |_, s| {
                    s.rms.iter().all(|rm| rm.phase == RmPhase::Committed)
                }),
            ),
        ];
        if self.vacuous {
            let vacuous = Property::<Self>::sometimes(COMMIT_AFTER_ABORT, commit_after_abort);
            properties.push(("TPC-1", vacuous));
        }
        if self.eventually {
            let decided = Property::<Self>::eventually("decided", |_, s| s.tm != TmPhase::Init);
            properties.push(("TPC-1", decided));
        }
        properties
    }
}

const CONSISTENT: &str = "TPC-1 no rm commits while another aborts";
const ALL_COMMIT: &str = "TPC-1 every rm commits";
const COMMIT_AFTER_ABORT: &str = "TPC-1 an rm commits after the tm aborted";

fn consistent(m: &Extended, s: &TpcState) -> bool {
    (m.inner.property("consistent").condition)(&m.inner, s)
}

// A committed RM needs a commit, which the TM only sends if it did not abort.
fn commit_after_abort(_: &Extended, s: &TpcState) -> bool {
    s.tm == TmPhase::Aborted && s.rms.iter().any(|rm| rm.phase == RmPhase::Committed)
}

impl Model for Extended {
    type State = TpcState;
    type Action = TpcAction;

    fn init_states(&self) -> Vec<TpcState> {
        self.inner.init_states()
    }

    fn actions(&self, state: &TpcState, actions: &mut Vec<TpcAction>) {
        self.inner.actions(state, actions)
    }

    fn next_state(&self, last: &TpcState, action: TpcAction) -> Option<TpcState> {
        let next = self.inner.next_state(last, action)?;
        if self.panics && next.tm == TmPhase::Committed {
            panic!("a deliberate panic in the model");
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.keyed().into_iter().map(|(_, p)| p).collect()
    }

    fn within_boundary(&self, state: &TpcState) -> bool {
        !self.boundary || state.rms.iter().filter(|rm| rm.sent_prepared).count() <= 1
    }
}

impl Summarize for Extended {
    fn summary(&self, state: &TpcState) -> String {
        self.inner.summary(state)
    }
}

impl Checkable for Extended {
    type Key = &'static str;

    fn property_list(&self) -> Result<PropertyList<Self, &'static str>, ListError> {
        (self.keyed().into_iter())
            .fold(PropertyList::builder(), |list, (key, p)| {
                list.property(key, p)
            })
            .build()
    }

    fn may_witness(&self, state: &TpcState) -> bool {
        !self.distrusts_commits || state.rms.iter().any(|rm| rm.phase != RmPhase::Committed)
    }
}

#[test]
fn a_sometimes_is_not_credited_in_a_state_the_model_says_cannot_witness_it() {
    // Every rm committing is reached, but only in states the model distrusts: unreached, and
    // the `always` it partners unexercised, where the same model trusting them is exercised.
    let trusting = Extended {
        vacuous: false,
        ..Extended::new(3)
    };
    let trusted = check(trusting, &Options::default()).unwrap();
    assert_eq!(verdict(&trusted, ALL_COMMIT), Verdict::Holds);
    assert_eq!(verdict(&trusted, CONSISTENT), Verdict::Holds);
    let distrusting = Extended {
        vacuous: false,
        distrusts_commits: true,
        ..Extended::new(3)
    };
    let report = check(distrusting, &Options::default()).unwrap();
    assert_eq!(verdict(&report, ALL_COMMIT), Verdict::Unreached);
    assert_eq!(verdict(&report, CONSISTENT), Verdict::Unexercised);
    assert_eq!(report.stats.unique, trusted.stats.unique);
}

#[test]
fn an_unreachable_sometimes_is_reported_unreached_and_is_not_a_pass() {
    let report = check(Extended::new(3), &Options::default()).unwrap();
    let unreached = verdict(&report, COMMIT_AFTER_ABORT);
    assert_eq!(unreached, Verdict::Unreached);
    assert_eq!(report.outcome, Outcome::Unexercised);
    assert_eq!(report.exit_code, 4);
    let text = report.to_text();
    assert!(
        text.contains(&format!("{COMMIT_AFTER_ABORT}  sometimes  UNREACHED\n")),
        "{text}"
    );
}

#[test]
fn an_always_without_a_partner_is_refused_before_the_search() {
    let model = Extended {
        unpartnered: true,
        ..Extended::new(2)
    };
    let refused = check(model, &Options::default());
    let expected = CheckError::Properties(ListError::Unpartnered {
        name: CONSISTENT.to_owned(),
        key: "\"TPC-2\"".to_owned(),
    });
    assert_eq!(refused.err(), Some(expected));
}

#[test]
fn an_always_whose_partner_is_never_reached_is_unexercised_not_holding() {
    let report = check(Extended::new(3), &Options::default()).unwrap();
    let p = report.property(CONSISTENT).unwrap();
    assert_eq!(p.partners, [ALL_COMMIT, COMMIT_AFTER_ABORT]);
    assert_eq!(p.verdict, Verdict::Unexercised);
    assert_eq!(verdict(&report, ALL_COMMIT), Verdict::Holds);
    assert_eq!(verdict(&report, COMMIT_AFTER_ABORT), Verdict::Unreached);
    assert_eq!(report.outcome, Outcome::Unexercised);
    assert_eq!(report.exit_code, 4);
    let text = report.to_text();
    assert!(
        text.contains(&format!("{CONSISTENT}  always     UNEXERCISED\n")),
        "{text}"
    );
    assert!(text.contains("result: UNEXERCISED"), "{text}");
    assert!(
        text.contains(&format!(
            "never exercised: \"{COMMIT_AFTER_ABORT}\" was not reached"
        )),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["properties"][0]["verdict"], "unexercised");
    assert_eq!(json["outcome"], "unexercised");
    assert_eq!(json["exit_code"], 4);

    // With every partner reached, the same property holds.
    let model = Extended {
        vacuous: false,
        ..Extended::new(3)
    };
    let report = check(model, &Options::default()).unwrap();
    assert_eq!(verdict(&report, CONSISTENT), Verdict::Holds);
    assert_eq!(report.exit_code, 0);
}

#[test]
fn an_unreached_sometimes_on_a_cut_search_is_incomplete_not_unreached() {
    let options = Options {
        depth: Some(4),
        ..Options::default()
    };
    let report = check(Extended::new(3), &options).unwrap();
    assert_eq!(verdict(&report, COMMIT_AFTER_ABORT), Verdict::Incomplete);
    assert_eq!(report.exit_code, 3);
}

#[test]
fn a_boundary_that_refuses_states_makes_the_verdict_incomplete() {
    let model = Extended {
        boundary: true,
        ..Extended::new(3)
    };
    let report = check(model, &Options::default()).unwrap();
    assert_eq!(verdict(&report, CONSISTENT), Verdict::Incomplete);
    assert_eq!(report.exploration.cut_by, [Cut::Boundary]);
    assert_eq!(report.exit_code, 3);
}

#[test]
fn eventually_properties_are_refused() {
    let model = Extended {
        eventually: true,
        ..Extended::new(2)
    };
    let refused = check(model, &Options::default());
    let expected = CheckError::Properties(ListError::Eventually {
        name: "decided".to_owned(),
    });
    assert_eq!(refused.err(), Some(expected));
}

#[test]
fn a_model_without_properties_is_refused() {
    let model = Extended {
        silent: true,
        ..Extended::new(2)
    };
    let refused = check(model, &Options::default());
    assert_eq!(
        refused.err(),
        Some(CheckError::Properties(ListError::Empty))
    );
}

#[test]
fn a_model_that_panics_is_an_error_on_any_thread_count() {
    for threads in [1, 2, 3] {
        let model = Extended {
            panics: true,
            ..Extended::new(4)
        };
        let options = Options {
            threads,
            ..Options::default()
        };
        let refused = check(model, &options);
        assert_eq!(
            refused.err(),
            Some(CheckError::ModelPanicked),
            "threads={threads}"
        );
    }
}

#[test]
fn zero_threads_are_refused() {
    let options = Options {
        threads: 0,
        ..options()
    };
    let refused = check(TwoPhaseCommit::new(2), &options);
    assert_eq!(refused.err(), Some(CheckError::NoThreads));
}

// --- Exit codes, output and progress --------------------------------------------------------

#[test]
fn outcome_maps_verdicts_to_exit_codes() {
    use Verdict::*;
    let cases: [(&[Verdict], Outcome, u8); 10] = [
        (&[Holds, Holds], Outcome::Pass, 0),
        (&[], Outcome::Pass, 0),
        (&[Holds, Incomplete], Outcome::Incomplete, 3),
        (&[Unjudged, Holds], Outcome::Incomplete, 3),
        (&[Incomplete, Violated], Outcome::Fail, 1),
        (&[Unexercised, Violated, Unjudged], Outcome::Fail, 1),
        (&[Holds, Violated], Outcome::Fail, 1),
        (&[Unreached, Incomplete], Outcome::Unexercised, 4),
        (&[Incomplete, Unexercised], Outcome::Unexercised, 4),
        (&[Holds, Unexercised, Holds], Outcome::Unexercised, 4),
    ];
    for (verdicts, outcome, code) in cases {
        assert_eq!(
            Outcome::of(verdicts.iter().copied()),
            outcome,
            "{verdicts:?}"
        );
        assert_eq!(outcome.exit_code(), code);
    }
}

#[test]
fn text_report_shows_the_table_figures_and_numbered_trace() {
    let report = check(TwoPhaseCommit::broken(3), &options()).unwrap();
    let text = report.to_text();
    assert!(
        text.starts_with("property       kind       verdict\n"),
        "{text}"
    );
    assert!(
        text.contains("\nconsistent     always     VIOLATED\n"),
        "{text}"
    );
    assert!(
        text.contains("\nall aborted    sometimes  holds\n"),
        "{text}"
    );
    assert!(text.contains("counterexample to \"consistent\": 5 steps (shortest)\n"));
    assert!(text.contains("\n  3. tm commits\n"), "{text}");
    assert!(text.contains("states: "), "{text}");
    assert!(
        text.contains("exploration: stopped at the first violation"),
        "{text}"
    );
    assert!(
        text.ends_with("result: FAIL: violated: consistent\n"),
        "{text}"
    );
}

#[test]
fn json_report_follows_the_documented_schema() {
    let report = check(TwoPhaseCommit::broken(3), &options()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["schema"], "resumable-check/2");
    assert_eq!(json["exit_code"], 1);
    assert_eq!(json["outcome"], "fail");
    assert_eq!(json["options"]["keep_going"], false);
    assert_eq!(json["exploration"]["complete"], false);
    assert_eq!(json["exploration"]["ended"], "stopped");
    let consistent = &json["properties"][0];
    assert_eq!(consistent["name"], "consistent");
    assert_eq!(consistent["kind"], "always");
    assert_eq!(consistent["verdict"], "violated");
    assert_eq!(consistent["counterexample"]["steps"], 5);
    assert_eq!(consistent["depth"], 5);
    assert_eq!(
        consistent["partners"],
        json!(["all committed", "all aborted"])
    );
    assert_eq!(consistent["counterexample"]["itf"], json!(null));
    assert_eq!(
        consistent["counterexample"]["trace"][0]["action"],
        json!(null)
    );
    assert_eq!(
        consistent["counterexample"]["trace"][1]["action"],
        "rm 0 prepares"
    );
    for field in [
        "generated",
        "unique",
        "checked",
        "max_depth",
        "elapsed_secs",
        "states_per_second",
    ] {
        assert!(json["stats"][field].is_number(), "{field}");
    }
}

#[test]
fn a_report_reads_back_from_its_json() {
    let report = check(TwoPhaseCommit::broken(3), &options()).unwrap();
    let back: resumable_model::checker::Report = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(back, report);
}

#[test]
fn progress_is_reported_while_a_search_runs_and_not_for_a_quick_one() {
    let mut calls = Vec::new();
    let frequent = Options {
        progress_every: Duration::from_millis(1),
        ..options()
    };
    check_with_progress(TwoPhaseCommit::new(5), &frequent, |p| calls.push(*p)).unwrap();
    assert!(!calls.is_empty());
    assert!(calls.iter().all(|p| p.unique <= 8832));
    if cfg!(target_os = "linux") {
        // The memory held, against the bound, is part of every line.
        let line = calls[0].to_string();
        assert!(line.starts_with("checking: depth "), "{line}");
        assert!(line.contains(" GiB of "), "{line}");
    }

    let mut quiet = 0;
    check_with_progress(TwoPhaseCommit::new(3), &options(), |_| quiet += 1).unwrap();
    assert_eq!(quiet, 0);
}
