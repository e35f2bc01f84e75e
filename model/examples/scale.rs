//! How the checker scales: states, depth, time and throughput for growing configurations,
//! breadth-first, depth-first, and depth-first with symmetry (the only search that applies
//! it), on one and two threads. Prints a Markdown table.
//!
//! Run it in release mode (the figures in BENCHMARKS.md come from here):
//!
//! ```text
//! cargo run --release -p resumable-model --example scale
//! cargo run --release -p resumable-model --example scale -- twopc    # only matching cases
//! ```
//!
//! To measure another model, add a line to `cases()`: any model the checker driver accepts
//! whose state has a symmetry representative. Every run is bounded by `BOUND_SECS` and
//! `BOUND_STATES` (a memory guard); a run either bound cuts short says `incomplete` in the
//! verdict column, and its figures then cover only the part explored.

use resumable_model::checker::{check, Options, Outcome, Report, Search, Summarize};
use resumable_model::config::Config;
use resumable_model::twopc::TwoPhaseCommit;
use resumable_model::world::World;
use resumable_model::Kernel;
use stateright::Representative;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// The time bound of every run: the issue asks for the largest configuration checked
/// exhaustively within a minute.
const BOUND_SECS: u64 = 60;

/// The state bound of every run, to keep a breadth-first queue of large world states within
/// the memory of a small machine.
const BOUND_STATES: usize = 5_000_000;

/// A configuration to measure: a name and a function that checks it under given options.
struct Case {
    name: String,
    run: Box<dyn Fn(Setting) -> Report>,
}

#[derive(Clone, Copy)]
struct Setting {
    threads: usize,
    search: Search,
    symmetry: bool,
}

fn case<M, F>(name: impl Into<String>, make: F) -> Case
where
    F: Fn() -> M + 'static,
    M: Summarize + Send + Sync + 'static,
    M::State: Clone + Debug + Hash + PartialEq + Representative + Send + Sync + 'static,
    M::Action: Clone + Debug + PartialEq + Send + Sync + 'static,
{
    Case {
        name: name.into(),
        run: Box::new(move |setting: Setting| {
            let mut options = Options {
                threads: setting.threads,
                search: setting.search,
                timeout: Some(Duration::from_secs(BOUND_SECS)),
                max_states: Some(BOUND_STATES),
                ..Options::default()
            };
            if setting.symmetry {
                options = options.with_symmetry();
            }
            match check(make(), &options) {
                Ok(report) => report,
                Err(e) => {
                    eprintln!("scale: {e}");
                    std::process::exit(2);
                }
            }
        }),
    }
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for rms in 3..=7 {
        cases.push(case(format!("twopc rms={rms}"), move || {
            TwoPhaseCommit::new(rms)
        }));
    }
    // The world around one run, from the smallest environment up: one worker and no faults,
    // then a second worker racing, a crash, a lost response, a duplicated decision.
    let small = Config {
        workers: 1,
        approvers: 1,
        self_approval: false,
        crashes: 0,
        losses: 0,
        duplicates: 0,
        ..Config::default()
    };
    let growing = [
        ("small", small),
        (
            "small+worker",
            Config {
                workers: 2,
                ..small
            },
        ),
        (
            "small+crash",
            Config {
                crashes: 1,
                ..small
            },
        ),
        ("small+loss", Config { losses: 1, ..small }),
        (
            "small+duplicate",
            Config {
                duplicates: 1,
                ..small
            },
        ),
        (
            "small+worker+crash",
            Config {
                workers: 2,
                crashes: 1,
                ..small
            },
        ),
    ];
    for (name, config) in growing {
        cases.push(case(
            format!("world kernel {name}"),
            move || match World::new(Kernel, config) {
                Ok(world) => world,
                Err(e) => {
                    eprintln!("scale: {name}: {e}");
                    std::process::exit(2);
                }
            },
        ));
    }
    cases
}

/// Runs `case` repeatedly (at least 3 times and for at least half a second) and keeps the
/// fastest run, so that thread start-up and a cold cache do not dominate small models.
fn best_of(case: &Case, setting: Setting) -> Report {
    let started = Instant::now();
    let mut best = (case.run)(setting);
    let mut runs = 1;
    while runs < 3 || started.elapsed() < Duration::from_millis(500) {
        let report = (case.run)(setting);
        if report.stats.elapsed_secs < best.stats.elapsed_secs {
            best = report;
        }
        runs += 1;
        if started.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    best
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).collect();
    if cfg!(debug_assertions) {
        eprintln!("scale: a debug build; run with --release for meaningful figures");
    }
    println!(
        "| configuration | search | threads | unique | generated | depth | time (s) | generated/s | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for case in cases() {
        if !filter.is_empty() && !filter.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        let searches = [
            (Search::Bfs, false, "bfs"),
            (Search::Dfs, false, "dfs"),
            (Search::Dfs, true, "dfs+symmetry"),
        ];
        for (search, symmetry, label) in searches {
            for threads in [1, 2] {
                let setting = Setting {
                    threads,
                    search,
                    symmetry,
                };
                let report = best_of(&case, setting);
                let stats = &report.stats;
                let verdict = match report.outcome {
                    Outcome::Pass => "pass",
                    Outcome::Fail => "fail",
                    Outcome::Incomplete => "incomplete",
                };
                println!(
                    "| {} | {} | {} | {} | {} | {} | {:.4} | {:.2}M | {} |",
                    case.name,
                    label,
                    threads,
                    stats.unique,
                    stats.generated,
                    stats.max_depth,
                    stats.elapsed_secs,
                    stats.states_per_second / 1e6,
                    verdict
                );
            }
        }
    }
}
