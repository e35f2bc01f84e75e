//! The world around runs: exact state counts for small configurations (one thread,
//! breadth-first, so the counts are deterministic), the symmetry reduction, the configuration's
//! ranges, and how actions read.

mod world_support;

use resumable_model::config::{Config, ConfigError, Program};
use resumable_model::reference::Reference;
use resumable_model::world::{
    Action, Choice, DecisionMsg, Party, ToolMsg, ToolOutcome, Verdict, World,
};
use resumable_model::Kernel;
use stateright::{Checker, Model, Representative};
use world_support::*;

#[test]
fn tiny_world_has_exactly_15187_states_for_the_kernel_and_the_reference() {
    // Pinned: a change here is a change of the world's semantics, to be explained. (From
    // 14,072: the tool's commit now moves the run's resource, so states that differ only in
    // whether a commit has happened before its answer arrived are told apart.)
    assert_eq!(explore(World::new(Kernel, tiny()).unwrap()).unique, 15_187);
    assert_eq!(
        explore(World::new(Reference::default(), tiny()).unwrap()).unique,
        15_187
    );
}

#[test]
fn direct_worlds_have_exact_state_counts_for_each_tool_contract() {
    let counts: Vec<usize> = [(true, false), (false, true), (false, false)]
        .into_iter()
        .map(|(dedupes, fences)| {
            explore(World::new(Kernel, direct(dedupes, fences)).unwrap()).unique
        })
        .collect();
    assert_eq!(counts, [8_958, 6_709, 8_065]);
}

#[test]
fn the_reference_and_the_kernel_reach_the_same_number_of_states() {
    // Both implement one spec, so the world around them unfolds alike; a difference would be
    // a disagreement for conformance to pin down.
    for config in [
        direct(true, false),
        direct(false, true),
        direct(false, false),
    ] {
        let kernel = explore(World::new(Kernel, config).unwrap()).unique;
        let reference = explore(World::new(Reference::default(), config).unwrap()).unique;
        assert_eq!(kernel, reference, "{config:?}");
    }
}

/// The tiny world's states under the workers' symmetry.
const REDUCED: usize = 8_480;

#[test]
fn symmetry_merges_states_that_differ_only_in_which_worker_is_which() {
    let world = World::new(Kernel, tiny()).unwrap();
    let reduced = world.clone().checker().symmetry().spawn_dfs().join();
    let full = world.clone().checker().spawn_dfs().join();
    assert_eq!(full.unique_state_count(), 15_187);
    let reduced_count = reduced.unique_state_count();
    assert_eq!(reduced_count, REDUCED);
    // Canonical representatives make the reduced count independent of the thread count.
    let two_threads = world
        .clone()
        .checker()
        .symmetry()
        .threads(2)
        .spawn_dfs()
        .join();
    assert_eq!(two_threads.unique_state_count(), REDUCED);
    // The representative is canonical: swapping the workers of any state changes nothing.
    for state in reachable(&world) {
        let mut swapped = state.clone();
        swapped.workers.reverse();
        assert_eq!(state.representative(), swapped.representative());
    }
}

#[test]
fn the_revision_cap_never_binds_on_the_kernel() {
    // The cap only keeps a looping broken variant finite; a correct lifecycle ends well below.
    for config in [tiny(), direct(true, false)] {
        let world = World::new(Kernel, config).unwrap();
        let highest = reachable(&world)
            .iter()
            .flat_map(|s| (0..s.runs.len()).filter_map(|r| world.snapshot(s, r)))
            .map(|snap| snap.revision.0)
            .max()
            .unwrap_or(0);
        assert!(
            highest + 2 < u64::from(config.max_revision),
            "reached r{highest}"
        );
    }
}

#[test]
fn default_config_covers_two_racing_workers_a_crash_a_lost_response_and_an_expiry() {
    let c = Config::default();
    assert_eq!(c.validate(), Ok(()));
    assert!(c.workers >= 2 && c.crashes >= 1 && c.losses >= 1);
    // An approval suspension begun at tick 0 can expire before the clock stops.
    assert!(c.max_time > c.suspend_for);
    assert_eq!(c.program, Program::Approval);
}

#[test]
fn out_of_range_configurations_are_refused_with_the_field_named() {
    let too_many_runs = Config {
        runs: 3,
        ..Config::default()
    };
    assert_eq!(
        too_many_runs.validate(),
        Err(ConfigError::OutOfRange {
            field: "runs",
            got: 3,
            min: 1,
            max: 2
        })
    );
    let lonely_cross = Config {
        cross_tenant: true,
        ..Config::default()
    };
    assert_eq!(
        lonely_cross.validate(),
        Err(ConfigError::CrossTenantNeedsTwoRuns)
    );
    assert!(World::new(Kernel, too_many_runs).is_err());
    let no_attempt = Config {
        max_attempts: 0,
        ..Config::default()
    };
    assert!(no_attempt.validate().is_err());
}

#[test]
fn actions_read_as_actor_verb_object() {
    let decision = DecisionMsg {
        target: 0,
        source: 0,
        checkpoint: 0,
        revision: 1,
        party: Party::Approver,
        verdict: Verdict::Approve,
        expires_at: 2,
        delivered: 0,
    };
    let msg = ToolMsg {
        run: 0,
        call: 1,
        attempt: 0,
    };
    let lines: Vec<String> = [
        Action::Step {
            worker: 1,
            run: 0,
            choice: Choice::Decision(decision),
        },
        Action::Commit {
            worker: 1,
            run: 0,
            from: 1,
            to: 2,
        },
        Action::Conflict {
            worker: 0,
            run: 0,
            staged: 1,
            store: 2,
        },
        Action::Crash { worker: 1 },
        Action::Tool {
            msg,
            outcome: ToolOutcome::Commits,
        },
        Action::Lose { msg },
        Action::Decide { msg: decision },
        Action::Tick { to: 2 },
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    assert_eq!(
        lines,
        [
            "Worker(1) steps run 0 with resume approve c1@r1 from alice",
            "Worker(1) commits run 0 r1->r2",
            "Worker(0) fails to commit run 0: read r1, store at r2",
            "Worker(1) crashes",
            "Tool commits c1 key k1#0 for run 0",
            "Tool response lost: c1 key k1#0 for run 0",
            "Approver alice approves c1 at r1 of run 0",
            "Clock ticks to 2",
        ]
    );
}

#[test]
fn a_refused_step_says_why_and_an_accepted_one_where_the_run_went() {
    let world = World::new(Kernel, tiny()).unwrap();
    let init = world.init_states().remove(0);
    let suspend = Action::Step {
        worker: 0,
        run: 0,
        choice: Choice::Agent(resumable_model::world::Intent::Suspend(
            resumable_model::world::GATED,
        )),
    };
    assert_eq!(
        world.explain(&init, &suspend),
        "accepted: suspended (pending approval, expires t2) at r1"
    );
    let expire = Action::Step {
        worker: 0,
        run: 0,
        choice: Choice::Expire,
    };
    assert_eq!(
        world.explain(&init, &expire),
        "refused: run is running, not suspended"
    );
    // A refused input that used nothing up is not a transition.
    assert_eq!(world.next_state(&init, expire), None);
}

#[test]
fn two_worlds_of_one_configuration_build_equal_states() {
    // Runs and checkpoints are interned process-wide, so states compare by value across worlds.
    let a = World::new(Kernel, tiny()).unwrap();
    let b = World::new(Kernel, tiny()).unwrap();
    let (sa, sb) = (a.init_states().remove(0), b.init_states().remove(0));
    assert_eq!(sa, sb);
    let suspend = Action::Step {
        worker: 0,
        run: 0,
        choice: Choice::Agent(resumable_model::world::Intent::Suspend(
            resumable_model::world::GATED,
        )),
    };
    let (na, nb) = (a.next_state(&sa, suspend), b.next_state(&sb, suspend));
    assert!(na.is_some());
    assert_eq!(na, nb);
}

/// The default check's `two-runs-crash`: its one worker may crash while both runs have a call
/// in flight, so that a restart must reconcile both (REC-1, REC-2).
#[test]
fn two_runs_crash_offers_a_crash_with_both_runs_in_flight() {
    let config = (Config::suite().into_iter())
        .find(|(n, _)| *n == "two-runs-crash")
        .expect("a world of the default check")
        .1;
    let world = World::new(Kernel, config).unwrap();
    let mut actions = Vec::new();
    let offered = reachable(&world).iter().any(|s| {
        actions.clear();
        world.actions(s, &mut actions);
        s.runs.iter().all(|slot| slot.run.view.in_flight)
            && actions.iter().any(|a| matches!(a, Action::Crash { .. }))
    });
    assert!(offered, "no crash is offered with both runs in flight");
}
