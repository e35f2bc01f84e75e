//! Helpers shared by the world and property tests: exhaustive exploration with one thread
//! (so counts are deterministic), verdicts per property, and a breadth-first search of our
//! own for shortest witness paths (stateright reports the last path it found, not the first).

#![allow(
    dead_code,
    reason = "shared by test binaries, each of which uses a part"
)]

use resumable_model::checker::merge::Merged;
use resumable_model::checker::{Outcome, Report, Verdict};
use resumable_model::config::{Config, Program};
use resumable_model::world::World;
use resumable_model::Lifecycle;
use stateright::{Checker, Expectation, HasDiscoveries, Model};
use std::collections::{HashMap, HashSet, VecDeque};

/// The smallest world with a race: one run on the approval program, two workers, one crash,
/// one approver, nothing lost or duplicated.
pub fn tiny() -> Config {
    Config {
        approvers: 1,
        self_approval: false,
        losses: 0,
        duplicates: 0,
        query_unknown: false,
        max_time: 3,
        ..Config::default()
    }
}

/// The direct program (no approval), for the tool and reconciliation paths.
pub fn direct(dedupes: bool, query_fences: bool) -> Config {
    Config {
        program: Program::Direct,
        approvers: 0,
        self_approval: false,
        dedupes,
        query_fences,
        duplicates: 0,
        ..Config::default()
    }
}

/// What an exhaustive check found.
pub struct Explored {
    /// Unique states.
    pub unique: usize,
    /// Properties whose expectation failed: an `always` with a counterexample, a `sometimes`
    /// never reached.
    pub failed: Vec<&'static str>,
    /// Every property with a discovery (counterexample or example).
    pub discovered: HashSet<&'static str>,
    /// The `always` properties.
    pub always: HashSet<&'static str>,
}

impl Explored {
    /// The `always` properties violated (the failures that are not a partner left unreached:
    /// every partner is listed in every world, reachable there or not).
    pub fn violations(&self) -> Vec<&'static str> {
        (self.failed.iter())
            .filter(|name| self.always.contains(*name))
            .copied()
            .collect()
    }
}

/// Explores the whole world breadth-first on one thread.
pub fn explore<L: Lifecycle>(world: World<L>) -> Explored {
    let properties: Vec<(&'static str, Expectation)> = world
        .properties()
        .into_iter()
        .map(|p| (p.name, p.expectation))
        .collect();
    let checker = world.checker().spawn_bfs().join();
    let discoveries = checker.discoveries();
    let discovered: HashSet<&'static str> = discoveries.keys().copied().collect();
    let failed = properties
        .iter()
        .filter(|(name, e)| match e {
            Expectation::Sometimes => !discovered.contains(name),
            _ => discovered.contains(name),
        })
        .map(|(name, _)| *name)
        .collect();
    Explored {
        unique: checker.unique_state_count(),
        failed,
        discovered,
        always: (properties.iter())
            .filter(|(_, e)| *e == Expectation::Always)
            .map(|(name, _)| *name)
            .collect(),
    }
}

/// Explores each world of `configs` whole, as [`explore`] does, several worlds at a time (one
/// per core: each exploration is single-threaded, and a grid of small worlds would otherwise
/// leave every core but one idle); the results in the order of `configs`.
pub fn explore_each<L: Lifecycle>(
    lifecycle: &L,
    configs: &[(&'static str, Config)],
) -> Vec<Explored> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Explored>>> = configs
        .iter()
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.min(configs.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((name, config)) = configs.get(i) else {
                    return;
                };
                let world = World::new(lifecycle.clone(), *config)
                    .unwrap_or_else(|e| panic!("the {name} world: {e}"));
                *results[i].lock().unwrap() = Some(explore(world));
            });
        }
    });
    (results.into_iter())
        .map(|r| r.into_inner().unwrap().expect("every world explored"))
        .collect()
}

/// Explores until one of `targets` is discovered (or the space is exhausted) and returns the
/// targets discovered.
pub fn hunt<L: Lifecycle>(world: World<L>, targets: &[&'static str]) -> HashSet<&'static str> {
    let wanted: HashSet<&'static str> = targets.iter().copied().collect();
    let checker = world
        .checker()
        .finish_when(HasDiscoveries::AnyOf(wanted.iter().copied().collect()))
        .spawn_bfs()
        .join();
    checker
        .discoveries()
        .into_keys()
        .filter(|k| wanted.contains(k))
        .collect()
}

/// The actions of a shortest path from the initial state to a state where the named
/// property's condition is `hit`, each with what the lifecycle made of it.
pub fn shortest<L: Lifecycle>(world: &World<L>, property: &str, hit: bool) -> Option<Vec<String>> {
    let condition = world
        .properties()
        .into_iter()
        .chain(resumable_model::properties::hazards())
        .find(|p| p.name == property)?
        .condition;
    let mut states = Vec::new();
    let mut parent: Vec<Option<(usize, <World<L> as Model>::Action)>> = Vec::new();
    let mut seen = HashMap::new();
    let mut queue = VecDeque::new();
    for s in world.init_states() {
        seen.insert(s.clone(), states.len());
        queue.push_back(states.len());
        states.push(s);
        parent.push(None);
    }
    let mut actions = Vec::new();
    while let Some(i) = queue.pop_front() {
        if condition(world, &states[i]) == hit {
            let mut path = Vec::new();
            let mut at = i;
            while let Some((p, a)) = parent[at] {
                path.push(format!("{a}: {}", world.explain(&states[p], &a)));
                at = p;
            }
            path.reverse();
            return Some(path);
        }
        actions.clear();
        world.actions(&states[i], &mut actions);
        for a in actions.drain(..) {
            if let Some(next) = world.next_state(&states[i], a) {
                if !seen.contains_key(&next) {
                    seen.insert(next.clone(), states.len());
                    queue.push_back(states.len());
                    states.push(next);
                    parent.push(Some((i, a)));
                }
            }
        }
    }
    None
}

/// Every reachable state, breadth-first.
pub fn reachable<L: Lifecycle>(world: &World<L>) -> Vec<<World<L> as Model>::State> {
    let mut states = world.init_states();
    let mut seen: HashSet<_> = states.iter().cloned().collect();
    let mut actions = Vec::new();
    let mut i = 0;
    while i < states.len() {
        actions.clear();
        world.actions(&states[i], &mut actions);
        for a in actions.drain(..) {
            if let Some(next) = world.next_state(&states[i], a) {
                if seen.insert(next.clone()) {
                    states.push(next);
                }
            }
        }
        i += 1;
    }
    states
}

/// A report's verdicts, property by property in its order, and its outcome: what a check, or
/// the merge of several, came to.
pub trait Verdicts {
    /// Each property's name and verdict, in order.
    fn verdicts(&self) -> Vec<(&str, Verdict)>;
    /// The outcome.
    fn outcome(&self) -> Outcome;
}

// A check's report and a merge's list their properties alike.
macro_rules! verdicts_of {
    ($($report:ty),*) => {$(
        impl Verdicts for $report {
            fn verdicts(&self) -> Vec<(&str, Verdict)> {
                (self.properties.iter()).map(|p| (p.name.as_str(), p.verdict)).collect()
            }
            fn outcome(&self) -> Outcome {
                self.outcome
            }
        }
    )*};
}

verdicts_of!(Report, Merged);

/// Asserts that two reports of `name` list the same properties, each with the same verdict,
/// and come to the same outcome; `a_is` and `b_is` say what each report is.
pub fn assert_same_verdicts(
    name: &str,
    (a_is, a): (&str, &dyn Verdicts),
    (b_is, b): (&str, &dyn Verdicts),
) {
    let (xs, ys) = (a.verdicts(), b.verdicts());
    assert_eq!(xs.len(), ys.len(), "{name}");
    for ((x, vx), (y, vy)) in xs.into_iter().zip(ys) {
        assert_eq!(x, y, "{name}");
        assert_eq!(vx, vy, "{name}: {x}: {vx:?} {a_is}, {vy:?} {b_is}");
    }
    assert_eq!(a.outcome(), b.outcome(), "{name}");
}
