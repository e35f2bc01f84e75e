//! The partial-order reduction judged against the unreduced search (spec/check-output.md,
//! "Partial-order reduction"): on every world small enough for both, the same verdict for
//! every property, every broken variant still caught, and no counterexample longer than
//! before. Both searches explore on past the first violation, so that every property is
//! judged on the whole of both state spaces.
//!
//! The worlds of the default check and the exposing world of every variant take minutes in
//! debug: they are `#[ignore]`d and run in release by CI
//! (`cargo test --release -p resumable-model --test reduction -- --ignored`). One small world
//! runs in debug too.

mod world_support;

use resumable_model::checker::{self, Checkable, Options, Reduction, Report, Verdict};
use resumable_model::config::Config;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::{World, WorldState};
use resumable_model::{Kernel, Lifecycle};
use stateright::Expectation;
use world_support::assert_same_verdicts;

fn check<L: Lifecycle + Sync>(world: World<L>, reduction: Reduction, symmetry: bool) -> Report
where
    L::Run: Send + Sync,
{
    let mut options: Options<WorldState<L::Run>> = Options {
        keep_going: true,
        reduction,
        ..Options::default()
    };
    if symmetry {
        options = options.with_symmetry();
    }
    checker::check(world, &options).expect("the world's properties are partnered")
}

/// Checks `world` with and without the reduction and asserts that they agree; returns both
/// reports (unreduced first).
fn agree<L: Lifecycle + Clone + Sync>(name: &str, world: World<L>, symmetry: bool) -> [Report; 2]
where
    L::Run: Send + Sync,
{
    let none = check(world.clone(), Reduction::None, symmetry);
    let por = check(world, Reduction::PartialOrder, symmetry);
    assert!(
        none.exploration.complete,
        "{name}: the unreduced search was cut"
    );
    assert!(
        por.exploration.complete,
        "{name}: the reduced search was cut"
    );
    assert!(
        por.stats.unique <= none.stats.unique,
        "{name}: the reduction reached {} states, more than the {} of the whole search",
        por.stats.unique,
        none.stats.unique
    );
    assert_same_verdicts(name, ("unreduced", &none), ("reduced", &por));
    for (a, b) in none.properties.iter().zip(&por.properties) {
        if let Some(before) = &a.counterexample {
            let after = (b.counterexample.as_ref())
                .unwrap_or_else(|| panic!("{name}: {}: no counterexample reduced", a.name));
            assert!(
                after.steps <= before.steps,
                "{name}: {}: counterexample of {} steps reduced, {} unreduced",
                a.name,
                after.steps,
                before.steps
            );
        }
    }
    [none, por]
}

fn suite_world(index: usize, symmetry: bool) {
    let (name, config) = Config::suite()[index];
    let world = World::new(Kernel, config).expect("the suite's worlds are valid");
    agree(name, world, symmetry);
}

/// The world that exposes `variant`, and the names of the properties it must break.
fn exposing(variant: Variant) -> (World<Reference>, Vec<&'static str>) {
    let world = World::new(
        Reference {
            variant: Some(variant),
        },
        Config::exposing(variant),
    )
    .expect("the exposing configuration is valid");
    let list = world.property_list().expect("partnered");
    let targets = (variant.targets().iter())
        .flat_map(|id| list.names_of(*id, Expectation::Always))
        .collect();
    (world, targets)
}

fn variant_caught(variant: Variant, symmetry: bool) {
    let (world, targets) = exposing(variant);
    let [none, por] = agree(variant.name(), world, symmetry);
    for report in [&none, &por] {
        caught_in(variant, &targets, report);
    }
}

/// Asserts that `report` finds a property of `targets` violated, with a counterexample.
fn caught_in(variant: Variant, targets: &[&str], report: &Report) {
    let caught = (report.properties.iter()).any(|p| {
        targets.contains(&p.name.as_str())
            && p.verdict == Verdict::Violated
            && p.counterexample.is_some()
    });
    assert!(
        caught,
        "{variant}: not caught by any of {targets:?} ({:?})",
        report.options.reduction
    );
}

/// For a variant whose world is too large to explore whole twice in a test, the check as a
/// user runs it (stopping at the end of the depth of the first violation): caught with and
/// without the reduction, each property violated in both with a counterexample no longer.
fn variant_caught_at_first(variant: Variant) {
    let (world, targets) = exposing(variant);
    let first = |reduction| {
        let options = Options {
            reduction,
            ..Options::default()
        }
        .with_symmetry();
        checker::check(world.clone(), &options).expect("partnered")
    };
    let (none, por) = (first(Reduction::None), first(Reduction::PartialOrder));
    caught_in(variant, &targets, &none);
    caught_in(variant, &targets, &por);
    for (a, b) in none.properties.iter().zip(&por.properties) {
        if let (Some(before), Some(after)) = (&a.counterexample, &b.counterexample) {
            assert!(after.steps <= before.steps, "{variant}: {}", a.name);
        }
    }
}

/// Variants whose exposing world, explored past the first violation, is millions of states.
const LARGE: [Variant; 1] = [Variant::DoubleSuspend];

#[test]
fn a_small_world_without_crashes_agrees_and_is_reduced() {
    // The default world without its crash: the tool's handling of a quiet run's request is
    // taken alone, and the dispatch after a landed write where the worker sending it is the
    // last (always, under symmetry, which sorts dispatching workers last), so the reduced
    // search meets fewer states and judges the same.
    let config = Config {
        crashes: 0,
        ..Config::default()
    };
    for symmetry in [false, true] {
        let world = World::new(Kernel, config).expect("valid");
        let [none, por] = agree("default without crashes", world, symmetry);
        assert!(
            por.stats.unique < none.stats.unique && por.stats.generated < none.stats.generated,
            "symmetry {symmetry}: {} states reduced, {} unreduced",
            por.stats.unique,
            none.stats.unique
        );
    }
}

#[test]
fn a_small_broken_world_is_still_caught_with_as_short_a_counterexample() {
    // A cancel while the call is in flight, no crash: the dispatch is reducible, and the
    // variant that ends the run with its effect unsettled is caught either way.
    variant_caught(Variant::CancelEndsUnsettled, true);
}

#[test]
#[ignore = "a minute in release; run with --release -- --ignored"]
fn every_world_of_the_default_check_agrees() {
    for index in 0..Config::suite().len() {
        suite_world(index, true);
    }
}

#[test]
#[ignore = "a minute in release; run with --release -- --ignored"]
fn every_world_of_the_default_check_agrees_without_symmetry() {
    for index in 0..Config::suite().len() {
        suite_world(index, false);
    }
}

#[test]
#[ignore = "a minute in release; run with --release -- --ignored"]
fn every_variant_is_still_caught_with_as_short_a_counterexample() {
    for variant in Variant::ALL {
        if LARGE.contains(&variant) {
            variant_caught_at_first(variant);
        } else {
            variant_caught(variant, true);
        }
    }
}
