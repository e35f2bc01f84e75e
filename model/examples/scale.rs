//! How the checker scales: states, depth, time and throughput for growing configurations,
//! without and with symmetry, on one and two threads. Prints Markdown tables.
//!
//! Run it in release mode (the figures in BENCHMARKS.md come from here):
//!
//! ```text
//! cargo run --release -p resumable-model --example scale
//! cargo run --release -p resumable-model --example scale -- twopc    # only matching cases
//! cargo run --release -p resumable-model --example scale -- largest  # 1 vs 2 threads
//! cargo run --release -p resumable-model --example scale -- largest a2 # only matching ones
//! ```
//!
//! To measure another model, add a line to `cases()`: any model the checker driver accepts
//! whose state has a symmetry representative. Every run is bounded by `BOUND_SECS`,
//! `BOUND_STATES` and `BOUND_MEMORY`; a run a bound cuts short says `incomplete` in the
//! verdict column, and its figures then cover only the part explored. Each figure is the run
//! of median time of three (one, for a run over `ONCE_SECS`). A last table compares the best
//! generated states per second of the world with that of two-phase commit, per search and
//! thread count, over the runs of at least 0.1 s.
//!
//! `largest` checks the largest configurations, with symmetry, three times on one thread and
//! three times on two, alternating so that both see the same load, and prints the median
//! time of each and their ratio, with the load average before and after.

use resumable_model::checker::{check, Options, Outcome, Report, Summarize};
use resumable_model::config::Config;
use resumable_model::twopc::TwoPhaseCommit;
use resumable_model::world::World;
use resumable_model::Kernel;
use stateright::Representative;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

/// The time bound of every run: the issue asks for the largest configuration checked
/// exhaustively within a minute.
const BOUND_SECS: u64 = 60;

/// The state bound of every run of the main table.
const BOUND_STATES: usize = 5_000_000;

/// The memory bound of every run: well within a small shared machine.
const BOUND_MEMORY: u64 = 4 << 30;

/// A configuration to measure: a name and a function that checks it under given options.
struct Case {
    name: String,
    run: Box<dyn Fn(Setting) -> Report>,
}

#[derive(Clone, Copy)]
struct Setting {
    threads: usize,
    symmetry: bool,
    max_states: usize,
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
                timeout: Some(Duration::from_secs(BOUND_SECS)),
                max_states: Some(setting.max_states),
                max_memory_bytes: Some(BOUND_MEMORY),
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

fn world_case(name: &str, config: Config) -> Case {
    let label = name.to_owned();
    case(format!("world {name}"), move || {
        match World::new(Kernel, config) {
            Ok(world) => world,
            Err(e) => {
                eprintln!("scale: {label}: {e}");
                std::process::exit(2);
            }
        }
    })
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for rms in 3..=7 {
        cases.push(case(format!("twopc rms={rms}"), move || {
            TwoPhaseCommit::new(rms)
        }));
    }
    // The world around the kernel, from the smallest environment (one run, one worker, one
    // approver, no faults) up, one dimension at a time (w workers, c crash budget, r runs,
    // a approvers), then the `check` default (w2 c1 r1 a1 with a lost response and a
    // duplicated decision). Two runs with two workers and a crash (w2 c1 r2 a1) take more
    // than five million states and are left out.
    let small = Config {
        workers: 1,
        approvers: 1,
        self_approval: false,
        crashes: 0,
        losses: 0,
        duplicates: 0,
        ..Config::default()
    };
    let default = Config::default();
    let growing = [
        ("w1 c0 r1 a1", small),
        (
            "w2 c0 r1 a1",
            Config {
                workers: 2,
                ..small
            },
        ),
        (
            "w3 c0 r1 a1",
            Config {
                workers: 3,
                ..small
            },
        ),
        (
            "w1 c1 r1 a1",
            Config {
                crashes: 1,
                ..small
            },
        ),
        (
            "w1 c2 r1 a1",
            Config {
                crashes: 2,
                ..small
            },
        ),
        (
            "w2 c1 r1 a1",
            Config {
                workers: 2,
                crashes: 1,
                ..small
            },
        ),
        (
            "w2 c2 r1 a1",
            Config {
                workers: 2,
                crashes: 2,
                ..small
            },
        ),
        ("w1 c0 r2 a1", Config { runs: 2, ..small }),
        (
            "w1 c0 r1 a2",
            Config {
                approvers: 2,
                ..small
            },
        ),
        (
            "w2 c1 r1 a2",
            Config {
                approvers: 2,
                workers: 2,
                crashes: 1,
                ..small
            },
        ),
        ("default", default),
    ];
    for (name, config) in growing {
        cases.push(world_case(name, config));
    }
    cases
}

/// A run longer than this is not repeated.
const ONCE_SECS: f64 = 2.0;

/// Runs `case` three times and keeps the run of median time (once only when a run takes
/// more than `ONCE_SECS`, to keep the whole benchmark within minutes); also says how many
/// runs there were.
fn median_of_3(case: &Case, setting: Setting) -> (Report, usize) {
    let first = (case.run)(setting);
    if first.stats.elapsed_secs > ONCE_SECS {
        return (first, 1);
    }
    let mut reports = vec![first, (case.run)(setting), (case.run)(setting)];
    reports.sort_by(|a, b| a.stats.elapsed_secs.total_cmp(&b.stats.elapsed_secs));
    (reports.swap_remove(1), 3)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// The best rate of each kind of model under one search and thread count.
struct Best {
    setting: String,
    twopc: f64,
    world: f64,
}

fn largest(filter: &[String]) {
    let default = Config::default();
    let candidates = [
        (
            "default a2",
            Config {
                approvers: 2,
                ..default
            },
        ),
        (
            "default c2",
            Config {
                crashes: 2,
                ..default
            },
        ),
        (
            "default w3",
            Config {
                workers: 3,
                ..default
            },
        ),
        (
            "default c2 a2",
            Config {
                crashes: 2,
                approvers: 2,
                ..default
            },
        ),
        (
            "default w3 a2",
            Config {
                workers: 3,
                approvers: 2,
                ..default
            },
        ),
        (
            "w2 c1 r2 a1",
            Config {
                runs: 2,
                workers: 2,
                crashes: 1,
                approvers: 1,
                self_approval: false,
                losses: 0,
                duplicates: 0,
                ..default
            },
        ),
    ];
    println!("load average at start: {}\n", load_average());
    println!("| configuration | threads | run | unique | generated | depth | time (s) | generated/s | verdict |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut summary = Vec::new();
    for (name, config) in candidates {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let case = world_case(name, config);
        let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        // One thread, then two, three times over: both see the same spells of load.
        for run in 1..=3 {
            for threads in [1, 2] {
                let setting = Setting {
                    threads,
                    symmetry: true,
                    max_states: LARGEST_STATES,
                };
                let report = (case.run)(setting);
                let stats = &report.stats;
                println!(
                    "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2}M | {} |",
                    case.name,
                    threads,
                    run,
                    stats.unique,
                    stats.generated,
                    stats.max_depth,
                    stats.elapsed_secs,
                    stats.states_per_second / 1e6,
                    verdict(&report)
                );
                times[threads - 1].push(stats.elapsed_secs);
            }
        }
        let [one, two] = times.map(median);
        summary.push((case.name, one, two));
    }
    println!("\nload average at end: {}\n", load_average());
    println!(
        "| configuration | median time, 1 thread (s) | median time, 2 threads (s) | speed-up |"
    );
    println!("|---|---|---|---|");
    for (name, one, two) in summary {
        println!("| {name} | {one:.2} | {two:.2} | {:.2}x |", one / two);
    }
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}

fn verdict(report: &Report) -> &'static str {
    match report.outcome {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::Incomplete => "incomplete",
        Outcome::Unexercised => "unexercised",
    }
}

/// The state bound of the `largest` runs (the memory bound applies too).
const LARGEST_STATES: usize = 40_000_000;

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).collect();
    if cfg!(debug_assertions) {
        eprintln!("scale: a debug build; run with --release for meaningful figures");
    }
    if filter.first().is_some_and(|f| f == "largest") {
        largest(filter.get(1..).unwrap_or_default());
        return;
    }
    println!("load average at start: {}\n", load_average());
    println!(
        "| configuration | search | threads | unique | generated | depth | time (s) | generated/s | runs | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let searches = [(false, "bfs"), (true, "bfs+symmetry")];
    let mut best: Vec<Best> = Vec::new();
    for case in cases() {
        if !filter.is_empty() && !filter.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        for (symmetry, label) in searches {
            for threads in [1, 2] {
                let setting = Setting {
                    threads,
                    symmetry,
                    max_states: BOUND_STATES,
                };
                let (report, runs) = median_of_3(&case, setting);
                let stats = &report.stats;
                println!(
                    "| {} | {} | {} | {} | {} | {} | {:.4} | {:.2}M | {} | {} |",
                    case.name,
                    label,
                    threads,
                    stats.unique,
                    stats.generated,
                    stats.max_depth,
                    stats.elapsed_secs,
                    stats.states_per_second / 1e6,
                    runs,
                    verdict(&report)
                );
                // Runs under 0.1 s measure thread start-up more than the model.
                if stats.elapsed_secs < 0.1 {
                    continue;
                }
                let key = format!("{label}, {threads}");
                let index = match best.iter().position(|b| b.setting == key) {
                    Some(index) => index,
                    None => {
                        best.push(Best {
                            setting: key,
                            twopc: 0.0,
                            world: 0.0,
                        });
                        best.len() - 1
                    }
                };
                if let Some(entry) = best.get_mut(index) {
                    let rate = stats.states_per_second;
                    if case.name.starts_with("twopc") {
                        entry.twopc = entry.twopc.max(rate);
                    } else {
                        entry.world = entry.world.max(rate);
                    }
                }
            }
        }
    }
    println!("\nload average at end: {}\n", load_average());
    println!("| search, threads | best 2pc generated/s | best world generated/s | world / 2pc |");
    println!("|---|---|---|---|");
    for b in best {
        if b.twopc > 0.0 && b.world > 0.0 {
            println!(
                "| {} | {:.2}M | {:.2}M | {:.2} |",
                b.setting,
                b.twopc / 1e6,
                b.world / 1e6,
                b.world / b.twopc
            );
        }
    }
}
