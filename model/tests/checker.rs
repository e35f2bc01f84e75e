//! The checker driver, tested on the two-phase-commit yardstick: exact counts (the same as
//! stateright's own checker finds, on every thread count), shortest counterexamples, the stop
//! at the first violation, and verdicts that never say "holds" for a search that was cut
//! short or a property that was never exercised.

use resumable_model::checker::{check, Cut, Ended, Options, Outcome, Verdict};
use resumable_model::twopc::TwoPhaseCommit;
use stateright::{Checker, Model};
use std::collections::HashSet;
use std::time::Duration;

mod tpc_support;

use tpc_support::{options, verdict};

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
fn counts_are_those_of_stateright_and_the_same_on_every_thread_count() {
    for rms in [2, 3, 4, 5] {
        let alone = TwoPhaseCommit::new(rms).checker().spawn_bfs().join();
        for threads in [1, 2, 3, 4] {
            let options = Options {
                threads,
                ..options()
            };
            let report = check(TwoPhaseCommit::new(rms), &options).unwrap();
            assert_eq!(report.outcome, Outcome::Pass);
            assert_eq!(report.stats.unique, alone.unique_state_count());
            assert_eq!(report.stats.generated, alone.state_count());
            assert_eq!(report.stats.max_depth + 1, alone.max_depth());
        }
    }
}

#[test]
fn a_depth_bound_gives_the_same_counts_on_every_thread_count_and_run() {
    // Each depth is checked whole before the next, so a bound cuts at the same states
    // whichever thread reaches a state first: every depth of the 5-RM protocol, three runs
    // on each thread count, give one set of figures.
    for depth in 0..=16 {
        let mut seen = HashSet::new();
        for threads in [1, 2, 3] {
            for _ in 0..3 {
                let options = Options {
                    threads,
                    depth: Some(depth),
                    ..options()
                };
                let r = check(TwoPhaseCommit::new(5), &options).unwrap();
                let verdicts: Vec<Verdict> = r.properties.iter().map(|p| p.verdict).collect();
                let s = &r.stats;
                seen.insert((s.unique, s.generated, s.checked, s.max_depth, verdicts));
            }
        }
        assert_eq!(seen.len(), 1, "depth {depth}: {seen:?}");
        let (unique, _, checked, max_depth, _) = seen.into_iter().next().unwrap();
        assert_eq!(max_depth, depth, "a bound within the space is reached");
        assert_eq!(
            unique, checked,
            "every state within the bound is checked, none past it"
        );
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
    assert_eq!(report.property("consistent").unwrap().depth, Some(5));
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
fn the_search_stops_at_the_end_of_the_depth_of_the_first_violation() {
    let report = check(TwoPhaseCommit::broken(3), &options()).unwrap();
    assert_eq!(report.exploration.ended, Ended::Stopped);
    assert!(!report.exploration.complete);
    assert_eq!(report.stats.max_depth, 5);
    // Three RMs aborting take 3 steps: reached before the stop. Committing everywhere takes
    // 10: not reached when the search stopped, so neither reached nor known unreachable.
    assert_eq!(verdict(&report, "all aborted"), Verdict::Holds);
    assert_eq!(verdict(&report, "all committed"), Verdict::Unjudged);
    assert_eq!(report.exit_code, 1);

    let keep_going = Options {
        keep_going: true,
        ..options()
    };
    let full = check(TwoPhaseCommit::broken(3), &keep_going).unwrap();
    assert_eq!(verdict(&full, "all committed"), Verdict::Holds);
    assert_eq!(verdict(&full, "consistent"), Verdict::Violated);
    assert!(full.exploration.complete);
    assert!(full.stats.checked > report.stats.checked);
    // The same counterexample either way: a shortest one, rebuilt deterministically.
    assert_eq!(
        full.property("consistent").unwrap().counterexample,
        report.property("consistent").unwrap().counterexample
    );
}

#[test]
fn a_stopped_search_counts_the_same_on_every_thread_count() {
    // Every state at the depth of the violation is checked; none past it is counted, so the
    // figures do not depend on how far each thread had got when the violation was found.
    let figures = |threads| {
        let options = Options {
            threads,
            ..options()
        };
        let r = check(TwoPhaseCommit::broken(6), &options).unwrap();
        assert_eq!(r.exploration.ended, Ended::Stopped);
        let s = r.stats;
        (s.unique, s.generated, s.checked, s.max_depth)
    };
    let one = figures(1);
    for threads in [2, 3, 4] {
        for _ in 0..3 {
            assert_eq!(figures(threads), one, "threads={threads}");
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
fn a_memory_bound_crossed_makes_the_verdict_incomplete_with_a_complete_report() {
    // One byte of resident memory: crossed before the first state is checked.
    for threads in [1, 2] {
        let options = Options {
            max_memory_bytes: Some(1),
            threads,
            ..options()
        };
        let report = check(TwoPhaseCommit::new(5), &options).unwrap();
        assert_eq!(report.exploration.cut_by, [Cut::Memory]);
        assert_eq!(verdict(&report, "consistent"), Verdict::Incomplete);
        assert_eq!(report.outcome, Outcome::Incomplete);
        assert_eq!(report.exit_code, 3);
        assert_eq!(
            report.options.max_memory_mib,
            Some(1.0 / f64::from(1u32 << 20))
        );
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["exploration"]["cut_by"][0], "memory");
    }
    // The default bound is half the machine's memory, far above what this check needs.
    let roomy = check(TwoPhaseCommit::new(5), &options()).unwrap();
    assert!(options().max_memory_bytes.is_some());
    assert_eq!(roomy.outcome, Outcome::Pass);
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
