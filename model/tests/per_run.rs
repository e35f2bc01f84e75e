//! The per-run reduction judged against the whole two-run world (spec/check-output.md, "The
//! per-run reduction"): on every two-run world small enough to explore whole, the two
//! one-run worlds of `Config::per_run`, folded as the default check folds its worlds, give
//! every property the verdict the two-run world gives it; and every broken variant's two-run
//! world is caught by the same properties, with counterexamples no longer.
//!
//! The larger worlds take seconds to half a minute each in release: they are `#[ignore]`d and
//! run by CI (`cargo test --release -p resumable-model --test per_run -- --ignored`).

mod world_support;

use resumable_model::checker::{self, merge, Options, Report, Verdict};
use resumable_model::config::{Config, ConfigError, Program};
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::{
    witness, Action, DecisionMsg, RunSlot, ToolMsg, Worker, World, WorldState,
};
use resumable_model::{Kernel, Lifecycle};
use stateright::Model;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use world_support::assert_same_verdicts;

/// Two runs of the default world, without lost responses or duplicated decisions.
fn quiet_two() -> Config {
    Config {
        runs: 2,
        losses: 0,
        duplicates: 0,
        ..Config::default()
    }
}

/// [`quiet_two`] without a crash.
fn quiet_without_crash() -> Config {
    Config {
        crashes: 0,
        ..quiet_two()
    }
}

/// [`quiet_two`] on the direct program, with one worker (its one crash shared by the runs).
fn quiet_direct_one_worker() -> Config {
    Config {
        workers: 1,
        program: Program::Direct,
        ..quiet_two()
    }
}

/// Checks `world` (symmetry on); past the first violation with `keep_going`.
fn check<L: Lifecycle + Sync>(lifecycle: L, config: Config, keep_going: bool) -> Report
where
    L::Run: Send + Sync,
{
    let world = World::new(lifecycle, config).expect("a valid configuration");
    let options: Options<WorldState<L::Run>> = Options {
        keep_going,
        ..Options::default()
    }
    .with_symmetry();
    checker::check(world, &options).expect("the world's properties are partnered")
}

/// The whole two-run world's report, and the per-run reduction's two reports.
fn both<L: Lifecycle + Clone + Sync>(
    lifecycle: L,
    config: Config,
    keep_going: bool,
) -> (Report, Vec<(String, Report)>)
where
    L::Run: Send + Sync,
{
    let whole = check(lifecycle.clone(), config, keep_going);
    let worlds = config
        .per_run()
        .expect("a two-run world without cross-tenant approvals");
    let parts = (worlds.into_iter())
        .map(|(name, c)| (name.to_owned(), check(lifecycle.clone(), c, keep_going)))
        .collect();
    (whole, parts)
}

/// The shortest counterexample the parts give each property they violate.
fn shortest(parts: &[(String, Report)]) -> BTreeMap<String, usize> {
    let mut best = BTreeMap::new();
    for (_, report) in parts {
        for p in &report.properties {
            if let (Verdict::Violated, Some(trace)) = (p.verdict, &p.counterexample) {
                let steps = best.entry(p.name.clone()).or_insert(trace.steps);
                *steps = (*steps).min(trace.steps);
            }
        }
    }
    best
}

/// Asserts that the whole two-run world of `config` and its per-run reduction give every
/// property the same verdict, each explored to the end.
fn agree(name: &str, config: Config) {
    let (whole, parts) = both(Kernel, config, true);
    assert!(
        whole.exploration.complete,
        "{name}: the two-run world was cut"
    );
    for (part, report) in &parts {
        assert!(report.exploration.complete, "{name}: {part} was cut");
    }
    let merged = merge::merge(&parts).expect("the parts fold");
    assert_same_verdicts(
        name,
        ("in the two-run world", &whole),
        ("by the per-run reduction", &merged),
    );
}

/// Asserts that `variant`'s exposing world with two runs is caught by the per-run reduction
/// through the same properties as by the whole two-run world, with counterexamples no
/// longer (both searches stop at the depth of the first violation, as a user's check does).
fn variant_agrees(variant: Variant) {
    let config = Config {
        runs: 2,
        ..Config::exposing(variant)
    };
    let reference = Reference {
        variant: Some(variant),
    };
    let (whole, parts) = both(reference, config, false);
    let best = shortest(&parts);
    let mut caught = 0;
    for p in &whole.properties {
        let Some(trace) = (p.verdict == Verdict::Violated)
            .then_some(p.counterexample.as_ref())
            .flatten()
        else {
            continue;
        };
        let steps = best.get(&p.name).unwrap_or_else(|| {
            panic!(
                "{variant}: {} is violated in the two-run world only",
                p.name
            )
        });
        assert!(
            *steps <= trace.steps,
            "{variant}: {}: {steps} steps by the per-run reduction, {} in the two-run world",
            p.name,
            trace.steps
        );
        caught += 1;
    }
    assert!(caught > 0, "{variant}: the two-run world does not catch it");
    for name in best.keys() {
        let verdict = whole.property(name).map(|p| p.verdict);
        assert_eq!(
            verdict,
            Some(Verdict::Violated),
            "{variant}: {name} is violated by the per-run reduction only"
        );
    }
}

#[test]
fn the_reduction_applies_only_to_two_runs_that_share_no_approval() {
    let two = Config {
        runs: 2,
        ..Config::default()
    };
    let [(a, run0), (b, run1)] = two.per_run().expect("two runs");
    assert_eq!((a, b), ("run-0", "run-1"));
    for (identity, part) in [(0, run0), (1, run1)] {
        assert_eq!(
            part,
            Config {
                runs: 1,
                identity,
                free_clock: true,
                foreign_commits: 1,
                ..two
            }
        );
    }
    assert_eq!(Config::default().per_run(), Err(ConfigError::NotPerRun));
    let cross = Config {
        cross_tenant: true,
        ..two
    };
    assert_eq!(cross.per_run(), Err(ConfigError::NotPerRun));
    // One resource for both runs: the other run's commits would have to move it at any step.
    let shared = Config {
        shared_resource: true,
        ..two
    };
    assert_eq!(shared.per_run(), Err(ConfigError::NotPerRun));
    assert_eq!(
        Config {
            shared_resource: true,
            ..Config::default()
        }
        .validate(),
        Err(ConfigError::SharedResourceNeedsTwoRuns)
    );
    let beyond = Config { identity: 1, ..two };
    assert_eq!(beyond.validate(), Err(ConfigError::IdentityOutOfCast));
}

#[test]
fn a_tick_while_no_run_waits_is_borrowed_and_witnesses_nothing() {
    let config = Config {
        free_clock: true,
        ..Config::default()
    };
    let world = World::new(Kernel, config).expect("valid");
    let start = world.init_states().remove(0);
    let mut actions = Vec::new();
    world.actions(&start, &mut actions);
    let tick = actions.iter().find(|a| matches!(a, Action::Tick { .. }));
    let next = world
        .next_state(
            &start,
            *tick.expect("a free clock ticks while no run waits"),
        )
        .expect("the tick is taken");
    assert_ne!(next.seen & witness::BORROWED_TIME, 0);
    assert!(world.may_witness(&start) && !world.may_witness(&next));
    // The clock of the whole world does not tick while no run waits.
    let plain = World::new(Kernel, Config::default()).expect("valid");
    let mut actions = Vec::new();
    plain.actions(&start, &mut actions);
    assert!(!actions.iter().any(|a| matches!(a, Action::Tick { .. })));
}

#[test]
fn the_second_run_alone_is_checked_under_its_own_name() {
    let config = Config {
        runs: 2,
        program: Program::Direct,
        crashes: 0,
        ..Config::default()
    };
    let [_, (_, second)] = config.per_run().expect("two runs");
    let world = World::new(Kernel, second).expect("valid");
    let start = world.init_states().remove(0);
    assert_eq!(start.runs.len(), 1);
    let run = &start.runs[0].run.run;
    assert_eq!(run.identity(), &world.cast().identities[1]);
}

#[test]
fn two_small_runs_agree() {
    // The direct program without crash: a few hundred states, quick in debug.
    for losses in [0, 1] {
        agree(
            "direct",
            Config {
                runs: 2,
                program: Program::Direct,
                crashes: 0,
                losses,
                ..Config::default()
            },
        );
    }
}

#[test]
#[ignore = "about a minute and a half in release; run with --release -- --ignored"]
fn every_two_run_world_small_enough_for_the_whole_search_agrees() {
    let two = Config {
        runs: 2,
        ..Config::default()
    };
    let quiet = quiet_two();
    let worlds = [
        ("approval, no crash", Config { crashes: 0, ..two }),
        ("approval, no crash, quiet", quiet_without_crash()),
        (
            "approval, one worker, one crash",
            Config {
                workers: 1,
                ..quiet
            },
        ),
        ("direct, one worker, one crash", quiet_direct_one_worker()),
        (
            "side effect first, no crash",
            Config {
                crashes: 0,
                program: Program::SideEffectFirst,
                ..quiet
            },
        ),
        (
            "three calls, no crash",
            Config {
                crashes: 0,
                program: Program::ThreeCalls,
                ..quiet
            },
        ),
    ];
    for (name, config) in worlds {
        agree(name, config);
    }
}

/// Every action `world` offers in any state of its whole graph, breadth-first.
fn every_action<L: Lifecycle>(world: &World<L>) -> Vec<Action> {
    let fingerprint = |s: &WorldState<L::Run>| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        s.hash(&mut h);
        h.finish()
    };
    let mut seen: HashSet<u64> = HashSet::new();
    let mut queue: VecDeque<WorldState<L::Run>> = world.init_states().into();
    let (mut offered, mut actions) = (Vec::new(), Vec::new());
    while let Some(state) = queue.pop_front() {
        world.actions(&state, &mut actions);
        for action in actions.drain(..) {
            offered.push(action);
            if let Some(next) = world.next_state(&state, action) {
                if seen.insert(fingerprint(&next)) {
                    queue.push_back(next);
                }
            }
        }
    }
    offered
}

/// Asserts that the variant sending the bare key breaks KEY-3 in `config`'s whole two-run
/// world and in each world of its per-run reduction.
fn bare_key_breaks_key_3_whole_and_in_every_part(config: Config) {
    let (whole, parts) = both(
        Reference::broken(Variant::DispatchUnderBareKey),
        config,
        false,
    );
    let key_3 = resumable_model::properties::names::KEY_3;
    let broken = |report: &Report| report.property(key_3).map(|p| p.verdict);
    assert_eq!(broken(&whole), Some(Verdict::Violated));
    for (name, report) in &parts {
        assert_eq!(broken(report), Some(Verdict::Violated), "{name}");
    }
}

/// KEY-3 across the reduction: the variant that sends the bare key is caught by the whole
/// two-run world and by the reduction, whose world lets the run left out commit (or fence)
/// under the shared tool key; a kernel's world of the reduction never offers that, its tool
/// keys being bound to the run's identity, so the reduction's worlds are what they were.
#[test]
fn a_dispatch_under_the_bare_key_is_caught_whole_and_by_the_reduction() {
    variant_agrees(Variant::DispatchUnderBareKey);
    let config = Config::exposing(Variant::DispatchUnderBareKey);
    let foreign = |a: &Action| matches!(a, Action::Foreign { .. });
    for (name, part) in config.per_run().expect("two runs") {
        let broken = World::new(Reference::broken(Variant::DispatchUnderBareKey), part).unwrap();
        assert!(
            every_action(&broken).iter().any(foreign),
            "{name}: no commit of the run left out"
        );
        let kernel = World::new(Kernel, part).unwrap();
        assert!(
            !every_action(&kernel).iter().any(foreign),
            "{name}: the kernel's tool key shared"
        );
    }
    // A tool that fences by query and does not dedupe: a crash, a query, and the other run's
    // request refused by this run's fence (or this run's query finding the other's commit).
    let fencing = Config {
        query_fences: true,
        dedupes: false,
        crashes: 1,
        ..config
    };
    bare_key_breaks_key_3_whole_and_in_every_part(fencing);
    let key_3 = resumable_model::properties::names::KEY_3;
    // Without the run left out's records, each run alone never meets the other at the tool:
    // the reduction would pass the variant.
    for (name, part) in config.per_run().expect("two runs") {
        let alone = Config {
            foreign_commits: 0,
            ..part
        };
        let report = check(
            Reference::broken(Variant::DispatchUnderBareKey),
            alone,
            true,
        );
        let verdict = report.property(key_3).map(|p| p.verdict);
        assert_ne!(verdict, Some(Verdict::Violated), "{name}");
    }
}

/// KEY-3 at the write: on a tool that neither dedupes nor fences, no request is answered from
/// another run's record, so only a query can meet the other run: after a crash, run 1's
/// query under the shared bare key finds run 0's commit, and the "committed" it records is
/// no commit of its own. The whole world and the reduction both catch it there.
#[test]
fn a_query_answered_from_another_run_s_commit_breaks_key_3_when_it_lands() {
    let config = Config {
        dedupes: false,
        query_fences: false,
        crashes: 1,
        ..Config::exposing(Variant::DispatchUnderBareKey)
    };
    bare_key_breaks_key_3_whole_and_in_every_part(config);
    let key_3 = resumable_model::properties::names::KEY_3;
    let honest = check(Kernel, config, true);
    assert_ne!(
        honest.property(key_3).map(|p| p.verdict),
        Some(Verdict::Violated)
    );
}

#[test]
#[ignore = "seconds in release; run with --release -- --ignored"]
fn every_variant_with_two_runs_is_caught_with_as_short_a_counterexample() {
    let mut checked = 0;
    for variant in Variant::ALL {
        // An approval offered across tenants couples the two runs: the reduction refuses
        // those worlds, which are checked whole.
        if Config::exposing(variant).cross_tenant {
            continue;
        }
        variant_agrees(variant);
        checked += 1;
    }
    // Six offer an approval across runs: the two that skip identity checks and the four that
    // compare every identity field but one.
    assert!(
        checked >= Variant::ALL.len() - 6,
        "{checked} variants checked"
    );
}

/// What a state shows of run `r`: its durable side, the clock, the workers holding its work
/// (the others idle, the whole as a multiset: workers are interchangeable), and the messages
/// addressed to it.
type Projection<R> = (
    RunSlot<R>,
    u8,
    Vec<u64>,
    Vec<ToolMsg>,
    Vec<ToolMsg>,
    Vec<DecisionMsg>,
);

fn projection<R: Clone + Hash>(state: &WorldState<R>, r: u8) -> Projection<R> {
    let of_r = |w: &Worker<R>| match w {
        Worker::Idle => false,
        Worker::Staged(st) => st.run == r,
        Worker::Dispatching { run, .. } => *run == r,
    };
    let mut workers: Vec<u64> = (state.workers.iter())
        .map(|w| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            if of_r(w) {
                w.hash(&mut h);
            } else {
                Worker::<R>::Idle.hash(&mut h);
            }
            h.finish()
        })
        .collect();
    workers.sort_unstable();
    let mine = |m: &&ToolMsg| m.run == r;
    (
        state.runs[usize::from(r)],
        state.now,
        workers,
        state.requests.iter().filter(mine).copied().collect(),
        state.responses.iter().filter(mine).copied().collect(),
        (state.decisions.iter())
            .filter(|m| m.target == r)
            .copied()
            .collect(),
    )
}

/// Every state of `world`'s whole graph, breadth-first, each projected on run `r`. States
/// are told apart by a 64-bit hash of the whole state (the checker's own identification).
fn projections<L: Lifecycle>(world: &World<L>, r: u8) -> HashSet<Projection<L::Run>> {
    let fingerprint = |s: &WorldState<L::Run>| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        s.hash(&mut h);
        h.finish()
    };
    let mut seen: HashSet<u64> = HashSet::new();
    let mut found = HashSet::new();
    let mut queue: VecDeque<WorldState<L::Run>> = VecDeque::new();
    for s in world.init_states() {
        if seen.insert(fingerprint(&s)) {
            found.insert(projection(&s, r));
            queue.push_back(s);
        }
    }
    let mut actions = Vec::new();
    while let Some(state) = queue.pop_front() {
        world.actions(&state, &mut actions);
        for action in actions.drain(..) {
            if let Some(next) = world.next_state(&state, action) {
                if seen.insert(fingerprint(&next)) {
                    found.insert(projection(&next, r));
                    queue.push_back(next);
                }
            }
        }
    }
    found
}

#[test]
#[ignore = "seconds in release; run with --release -- --ignored"]
fn what_two_runs_show_of_run_0_is_what_its_world_alone_reaches_with_a_free_clock() {
    // The lemma the reduction rests on, state by state: every state of the two-run world,
    // seen from run 0, is a state of `run-0`'s world. And the free clock is needed for it:
    // the world of run 0 alone whose clock ticks only while it waits misses some of them
    // (time passes while run 0 runs, as long as run 1 waits).
    let worlds = [
        ("approval, no crash", quiet_without_crash()),
        // One crash for the two runs: the budget is shared.
        ("direct, one worker, one crash", quiet_direct_one_worker()),
    ];
    for (name, two) in worlds {
        let [(_, run0), _] = two.per_run().expect("two runs");
        let whole = projections(&World::new(Kernel, two).expect("valid"), 0);
        let alone = projections(&World::new(Kernel, run0).expect("valid"), 0);
        let strict = Config {
            free_clock: false,
            ..run0
        };
        let plain = projections(&World::new(Kernel, strict).expect("valid"), 0);
        let missing = whole.iter().filter(|p| !alone.contains(p)).count();
        assert_eq!(
            missing,
            0,
            "{name}: {missing} of {} not in run-0's world",
            whole.len()
        );
        let beyond_plain = whole.iter().filter(|p| !plain.contains(p)).count();
        assert!(
            beyond_plain > 0,
            "{name}: the plain world of run 0 reaches all {} already",
            whole.len()
        );
        eprintln!(
            "{name}: {} projections of the two-run world; run-0's world {}, without the free \
             clock {} ({beyond_plain} of the two-run world's missing there)",
            whole.len(),
            alone.len(),
            plain.len()
        );
    }
}
