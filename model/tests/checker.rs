//! The checker driver, tested on the two-phase-commit yardstick: exact counts, shortest
//! counterexamples, and verdicts that never say "holds" for a search that was cut short.

use resumable_model::checker::{
    check, check_with_progress, CheckError, Cut, Ended, Options, Outcome, Summarize, Verdict,
};
use resumable_model::twopc::{RmPhase, TmPhase, TpcAction, TpcState, TwoPhaseCommit};
use stateright::{Checker, Model, Property};
use std::time::Duration;

fn options() -> Options<TpcState> {
    Options::default()
}

fn verdict(report: &resumable_model::checker::Report, name: &str) -> Verdict {
    match report.property(name) {
        Some(p) => p.verdict,
        None => panic!("no property named {name}"),
    }
}

// --- Exact counts on complete explorations --------------------------------------------------

#[test]
fn correct_protocol_holds_with_pinned_state_counts() {
    // (rms, unique, generated, maximum depth): the same counts as stateright's own 2pc example.
    for (rms, unique, generated, depth) in [
        (2, 56, 106, 7),
        (3, 288, 762, 10),
        (4, 1568, 5378, 13),
        (5, 8832, 37346, 16),
    ] {
        let report = check(TwoPhaseCommit::new(rms), &options()).unwrap();
        assert_eq!(report.outcome, Outcome::Pass, "rms={rms}");
        assert_eq!(report.exit_code, 0);
        assert_eq!(report.exploration.ended, Ended::Exhausted);
        assert!(report.exploration.complete);
        assert_eq!(report.stats.unique, unique, "rms={rms}");
        assert_eq!(report.stats.checked, unique, "rms={rms}");
        assert_eq!(report.stats.generated, generated, "rms={rms}");
        assert_eq!(report.stats.max_depth, depth, "rms={rms}");
        for p in &report.properties {
            assert_eq!(p.verdict, Verdict::Holds, "{}", p.name);
        }
    }
}

#[test]
fn counts_are_the_same_on_two_threads_and_depth_first() {
    for options in [
        Options {
            threads: 2,
            ..options()
        },
        Options {
            search: resumable_model::checker::Search::Dfs,
            ..options()
        },
    ] {
        let report = check(TwoPhaseCommit::new(4), &options).unwrap();
        assert_eq!(report.outcome, Outcome::Pass);
        assert_eq!(report.stats.unique, 1568);
        assert_eq!(report.stats.generated, 5378);
    }
}

#[test]
fn symmetry_counts_representatives_identically_on_one_and_two_threads() {
    // The representative sorts whole RM records, so it is canonical and the count of
    // representatives does not depend on the order the threads happen to visit states in.
    for (rms, unique) in [(3, 80), (4, 166), (5, 314)] {
        for threads in [1, 2] {
            let options = Options {
                threads,
                ..options()
            }
            .with_symmetry();
            let report = check(TwoPhaseCommit::new(rms), &options).unwrap();
            assert_eq!(report.outcome, Outcome::Pass);
            assert!(report.options.symmetry);
            assert_eq!(report.stats.unique, unique, "rms={rms} threads={threads}");
        }
    }
}

// --- Shortest, readable counterexamples -----------------------------------------------------

#[test]
fn broken_commit_rule_is_violated_with_the_shortest_counterexample() {
    let report = check(TwoPhaseCommit::broken(3), &options()).unwrap();
    assert_eq!(verdict(&report, "consistent"), Verdict::Violated);
    assert_eq!(report.outcome, Outcome::Fail);
    assert_eq!(report.exit_code, 1);
    let trace = report.property("consistent").unwrap();
    let trace = trace.counterexample.as_ref().unwrap();
    // An RM can only commit after the TM commits, which (broken) needs one prepared message
    // received: prepare, receive, commit, deliver is 4 steps, and another RM must abort: 5.
    assert_eq!(trace.steps, 5);
    assert!(trace.shortest);
    let actions: Vec<&str> = (trace.trace.iter())
        .filter_map(|s| s.action.as_deref())
        .collect();
    assert_eq!(
        actions,
        [
            "rm 0 prepares",
            "tm receives prepared from rm 0",
            "tm commits",
            "rm 0 receives commit",
            "rm 1 chooses to abort",
        ]
    );
    let last = &trace.trace[5].state;
    assert_eq!(
        last,
        "tm committed (prepared seen: 0); rm 0 committed, rm 1 aborted, rm 2 working"
    );
    assert_eq!(trace.trace[0].action, None);
}

#[test]
fn stateright_alone_reports_a_longer_path_than_the_driver() {
    // stateright 0.31.0 overwrites a property's path with each later discovery, so its path
    // is the last found, not the first. The driver reports how long it was.
    let report = check(TwoPhaseCommit::broken(3), &options()).unwrap();
    let trace = report.property("consistent").unwrap();
    let trace = trace.counterexample.as_ref().unwrap();
    assert_eq!(trace.unminimised_steps, 8);
    assert!(trace.steps < trace.unminimised_steps);

    let alone = TwoPhaseCommit::broken(3).checker().spawn_bfs().join();
    let path = alone.discovery("consistent").unwrap();
    assert_eq!(path.into_actions().len(), trace.unminimised_steps);
}

#[test]
fn counterexamples_are_shortest_on_every_search() {
    for rms in [2, 3, 4, 5] {
        for threads in [1, 2] {
            let plain = Options {
                threads,
                ..options()
            };
            for options in [plain, plain.with_symmetry()] {
                let report = check(TwoPhaseCommit::broken(rms), &options).unwrap();
                let p = report.property("consistent").unwrap();
                let trace = p.counterexample.as_ref().unwrap();
                assert_eq!(trace.steps, 5, "rms={rms} threads={threads}");
                assert!(trace.shortest);
                assert!(trace.steps <= trace.unminimised_steps);
            }
        }
    }
}

#[test]
fn witnesses_are_shortest_and_only_given_when_asked_for() {
    let report = check(TwoPhaseCommit::new(3), &options()).unwrap();
    assert!(report.properties.iter().all(|p| p.witness.is_none()));

    let asked = Options {
        witnesses: true,
        ..options()
    };
    let report = check(TwoPhaseCommit::new(3), &asked).unwrap();
    let aborted = report
        .property("all aborted")
        .unwrap()
        .witness
        .as_ref()
        .unwrap();
    assert_eq!(aborted.steps, 3);
    let committed = report.property("all committed").unwrap();
    let committed = committed.witness.as_ref().unwrap();
    // Three prepares, three receipts, the commit, three deliveries.
    assert_eq!(committed.steps, 10);
    assert!(committed.shortest);
}

// --- Honest verdicts under bounds -----------------------------------------------------------

#[test]
fn a_depth_bound_that_cuts_states_makes_the_verdict_incomplete() {
    // The deepest state of the 3-RM protocol is 10 steps away.
    let report = check(
        TwoPhaseCommit::new(3),
        &Options {
            depth: Some(9),
            ..options()
        },
    )
    .unwrap();
    assert_eq!(verdict(&report, "consistent"), Verdict::Incomplete);
    assert_eq!(report.exploration.ended, Ended::Cut);
    assert_eq!(report.exploration.cut_by, [Cut::Depth]);
    assert_eq!(report.outcome, Outcome::Incomplete);
    assert_eq!(report.exit_code, 3);
    assert_eq!(report.stats.max_depth, 9);
}

#[test]
fn a_depth_bound_that_cuts_nothing_leaves_the_verdict_complete() {
    for threads in [1, 2] {
        let report = check(
            TwoPhaseCommit::new(3),
            &Options {
                depth: Some(10),
                threads,
                ..options()
            },
        )
        .unwrap();
        assert_eq!(report.outcome, Outcome::Pass, "threads={threads}");
        assert!(report.exploration.cut_by.is_empty());
        assert_eq!(report.stats.unique, 288);
    }
}

#[test]
fn a_shallow_depth_bound_decides_only_what_it_reaches() {
    for threads in [1, 2] {
        let report = check(
            TwoPhaseCommit::new(3),
            &Options {
                depth: Some(3),
                threads,
                ..options()
            },
        )
        .unwrap();
        assert_eq!(verdict(&report, "consistent"), Verdict::Incomplete);
        // Three RMs choosing to abort take 3 steps: reached within the bound.
        assert_eq!(verdict(&report, "all aborted"), Verdict::Holds);
        // Committing everywhere takes 10: neither reached nor known unreachable.
        assert_eq!(verdict(&report, "all committed"), Verdict::Incomplete);
        assert_eq!(report.exit_code, 3);
    }
}

#[test]
fn stateright_alone_passes_a_depth_bounded_run_that_hides_a_violation() {
    // Why the driver tracks cuts itself: with a target depth of 5 stateright checks paths of
    // at most 3 steps, misses the 5-step violation, and its assertion passes.
    let alone = (TwoPhaseCommit::broken(3).checker())
        .target_max_depth(5)
        .spawn_bfs()
        .join();
    alone.assert_no_discovery("consistent");
    assert!(alone.is_done());

    let report = check(
        TwoPhaseCommit::broken(3),
        &Options {
            depth: Some(3),
            ..options()
        },
    )
    .unwrap();
    assert_eq!(verdict(&report, "consistent"), Verdict::Incomplete);
}

#[test]
fn a_depth_bound_still_reports_a_violation_within_it() {
    let report = check(
        TwoPhaseCommit::broken(3),
        &Options {
            depth: Some(5),
            ..options()
        },
    )
    .unwrap();
    assert_eq!(verdict(&report, "consistent"), Verdict::Violated);
    assert_eq!(report.exit_code, 1);
}

#[test]
fn a_time_bound_of_zero_stops_at_once_and_is_incomplete() {
    for threads in [1, 2] {
        let report = check(
            TwoPhaseCommit::new(3),
            &Options {
                timeout: Some(Duration::ZERO),
                threads,
                ..options()
            },
        )
        .unwrap();
        assert_eq!(verdict(&report, "consistent"), Verdict::Incomplete);
        assert_eq!(report.exploration.cut_by, [Cut::Time]);
        assert_eq!(report.exit_code, 3);
    }
}

#[test]
fn a_time_bound_stops_a_large_search_even_on_one_thread() {
    // Ten RMs have tens of millions of states: far more than a debug build explores in the
    // bound. stateright's own timeout is never seen by a single worker; the driver's is.
    for threads in [1, 2] {
        let report = check(
            TwoPhaseCommit::new(10),
            &Options {
                timeout: Some(Duration::from_millis(150)),
                threads,
                ..options()
            },
        )
        .unwrap();
        assert_eq!(verdict(&report, "consistent"), Verdict::Incomplete);
        assert_eq!(report.exploration.cut_by, [Cut::Time]);
        assert!(
            report.stats.elapsed_secs < 5.0,
            "{}",
            report.stats.elapsed_secs
        );
    }
}

#[test]
fn a_time_bound_that_is_not_reached_leaves_the_verdict_complete() {
    let report = check(
        TwoPhaseCommit::new(3),
        &Options {
            timeout: Some(Duration::from_secs(600)),
            ..options()
        },
    )
    .unwrap();
    assert_eq!(report.outcome, Outcome::Pass);
}

#[test]
fn a_state_bound_makes_the_verdict_incomplete_only_when_reached() {
    let cut = check(
        TwoPhaseCommit::new(4),
        &Options {
            max_states: Some(100),
            ..options()
        },
    )
    .unwrap();
    assert_eq!(verdict(&cut, "consistent"), Verdict::Incomplete);
    assert_eq!(cut.exploration.cut_by, [Cut::States]);
    assert!(cut.stats.unique < 1568);

    let roomy = check(
        TwoPhaseCommit::new(3),
        &Options {
            max_states: Some(288),
            ..options()
        },
    )
    .unwrap();
    assert_eq!(roomy.outcome, Outcome::Pass);
}

// --- Vacuity, boundaries and refused properties ---------------------------------------------

/// The protocol with an extra `sometimes` that no state satisfies, and optionally a boundary,
/// an `eventually` property, or no properties at all.
struct Extended {
    inner: TwoPhaseCommit,
    boundary: bool,
    eventually: bool,
    silent: bool,
}

impl Extended {
    fn new(rms: usize) -> Self {
        Extended {
            inner: TwoPhaseCommit::new(rms),
            boundary: false,
            eventually: false,
            silent: false,
        }
    }
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
        self.inner.next_state(last, action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        if self.silent {
            return Vec::new();
        }
        let mut properties = vec![
            Property::<Self>::always("consistent", |m, s| {
                (m.inner.property("consistent").condition)(&m.inner, s)
            }),
            // A committed RM needs a commit, which the TM only sends if it did not abort.
            Property::<Self>::sometimes("an rm commits after the tm aborted", |_, s| {
                s.tm == TmPhase::Aborted && s.rms.iter().any(|rm| rm.phase == RmPhase::Committed)
            }),
        ];
        if self.eventually {
            properties.push(Property::<Self>::eventually("decided", |_, s| {
                s.tm != TmPhase::Init
            }));
        }
        properties
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

#[test]
fn an_unreachable_sometimes_is_reported_unreached_and_fails() {
    let report = check(Extended::new(3), &Options::default()).unwrap();
    assert_eq!(verdict(&report, "consistent"), Verdict::Holds);
    let unreached = verdict(&report, "an rm commits after the tm aborted");
    assert_eq!(unreached, Verdict::Unreached);
    assert_eq!(report.outcome, Outcome::Fail);
    assert_eq!(report.exit_code, 1);
}

#[test]
fn an_unreached_sometimes_on_a_cut_search_is_incomplete_not_unreached() {
    let options = Options {
        depth: Some(4),
        ..Options::default()
    };
    let report = check(Extended::new(3), &options).unwrap();
    let name = "an rm commits after the tm aborted";
    assert_eq!(verdict(&report, name), Verdict::Incomplete);
    assert_eq!(report.exit_code, 3);
}

#[test]
fn a_boundary_that_refuses_states_makes_the_verdict_incomplete() {
    let model = Extended {
        boundary: true,
        ..Extended::new(3)
    };
    let report = check(model, &Options::default()).unwrap();
    assert_eq!(verdict(&report, "consistent"), Verdict::Incomplete);
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
    let expected = CheckError::Eventually {
        name: "decided".to_owned(),
    };
    assert_eq!(refused.err(), Some(expected));
}

#[test]
fn a_model_without_properties_is_refused() {
    let model = Extended {
        silent: true,
        ..Extended::new(2)
    };
    let refused = check(model, &Options::default());
    assert_eq!(refused.err(), Some(CheckError::NoProperties));
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
    let cases: [(&[Verdict], Outcome, u8); 6] = [
        (&[Holds, Holds], Outcome::Pass, 0),
        (&[], Outcome::Pass, 0),
        (&[Holds, Incomplete], Outcome::Incomplete, 3),
        (&[Incomplete, Violated], Outcome::Fail, 1),
        (&[Unreached, Incomplete], Outcome::Fail, 1),
        (&[Holds, Violated], Outcome::Fail, 1),
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
    let report = check(TwoPhaseCommit::broken(2), &options()).unwrap();
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
    assert!(text.ends_with("result: FAIL: consistent\n"), "{text}");
}

#[test]
fn json_report_follows_the_documented_schema() {
    let report = check(TwoPhaseCommit::broken(2), &options()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["schema"], "resumable-check/1");
    assert_eq!(json["exit_code"], 1);
    assert_eq!(json["outcome"], "fail");
    assert_eq!(json["options"]["search"], "bfs");
    assert_eq!(json["exploration"]["complete"], true);
    let consistent = &json["properties"][0];
    assert_eq!(consistent["name"], "consistent");
    assert_eq!(consistent["kind"], "always");
    assert_eq!(consistent["verdict"], "violated");
    assert_eq!(consistent["counterexample"]["steps"], 5);
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

use serde_json::json;

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

    let mut quiet = 0;
    check_with_progress(TwoPhaseCommit::new(3), &options(), |_| quiet += 1).unwrap();
    assert_eq!(quiet, 0);
}
