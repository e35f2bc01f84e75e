//! How the checker scales: states, depth, time and throughput for growing configurations,
//! without and with symmetry, on one and two threads. Prints Markdown tables.
//!
//! Run it in release mode (the figures in BENCHMARKS.md come from here):
//!
//! ```text
//! cargo run --release -p resumable-model --example scale
//! cargo run --release -p resumable-model --example scale -- twopc     # only matching cases
//! cargo run --release -p resumable-model --example scale -- largest   # 1 vs 2 threads
//! cargo run --release -p resumable-model --example scale -- largest a2  # only matching ones
//! ```
//!
//! To measure another model, add a line to `cases()`: any model the checker driver accepts
//! whose state has a symmetry representative. Every run is bounded by `BOUND_SECS`, a state
//! bound and `BOUND_MEMORY`; a run a bound cuts short says `incomplete` in the verdict
//! column, and its figures then cover only the part explored. In the main table each figure
//! is the run of median time of three (one, for a run over `ONCE_SECS`), and a last table
//! compares the best generated states per second of the world with that of two-phase
//! commit, per search and thread count, over the runs of at least 0.1 s.
//!
//! `largest` checks the largest configurations, with symmetry, three times on one thread and
//! three times on two, alternating so that both see the same spells of load, and prints the
//! median time of each and their ratio, with the load average before and after. Its runs
//! are bounded by `LARGEST_SECS` rather than a minute, so that both thread counts do the
//! same, whole work. Each round also runs two one-thread checks of the same configuration at
//! once, in two processes that share nothing but the machine: how much each slows down is
//! what the machine itself (its shared cache and memory, and whatever else runs on it)
//! allows two threads, whatever the checker does. `2 × alone / together` is then the most a
//! two-thread check could gain.

use resumable_model::checker::{check, Checkable, Options, Outcome, Report};
use resumable_model::config::Config;
use resumable_model::twopc::TwoPhaseCommit;
use resumable_model::world::World;
use resumable_model::Kernel;
use stateright::Representative;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Duration;

/// The time bound of every run of the main table: the largest configuration checked within
/// a minute is one of the figures asked for.
const BOUND_SECS: u64 = 60;

/// The time bound of the `largest` runs: long enough that a one-thread run on a loaded
/// machine is not cut, so that the two thread counts are compared on the same work.
const LARGEST_SECS: u64 = 300;

/// The state bound of every run of the main table.
const BOUND_STATES: usize = 5_000_000;

/// The state bound of the `largest` runs.
const LARGEST_STATES: usize = 40_000_000;

/// The memory bound of every run: well within a small shared machine.
const BOUND_MEMORY: u64 = 4 << 30;

/// A run longer than this is not repeated in the main table.
const ONCE_SECS: f64 = 2.0;

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
    max_secs: u64,
}

fn case<M, F>(name: impl Into<String>, make: F) -> Case
where
    F: Fn() -> M + 'static,
    M: Checkable + Sync,
    M::State: Clone + Debug + Hash + Representative + Send + Sync,
    M::Action: Clone + Debug + Send,
{
    Case {
        name: name.into(),
        run: Box::new(move |setting: Setting| {
            let mut options = Options {
                threads: setting.threads,
                timeout: Some(Duration::from_secs(setting.max_secs)),
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

/// `base` with `change` made to it.
fn with(base: Config, change: impl FnOnce(&mut Config)) -> Config {
    let mut config = base;
    change(&mut config);
    config
}

/// The world around the kernel, from the smallest environment (one run, one worker, one
/// approver, no faults) up, one dimension at a time (w workers, c crash budget, r runs,
/// a approvers), then the `check` default (w2 c1 r1 a1 with a lost response and a
/// duplicated decision).
fn growing() -> Vec<(&'static str, Config)> {
    let small = with(Config::default(), |c| {
        c.workers = 1;
        c.crashes = 0;
        c.losses = 0;
        c.duplicates = 0;
    });
    vec![
        ("w1 c0 r1 a1", small),
        ("w2 c0 r1 a1", with(small, |c| c.workers = 2)),
        ("w3 c0 r1 a1", with(small, |c| c.workers = 3)),
        ("w1 c1 r1 a1", with(small, |c| c.crashes = 1)),
        ("w1 c2 r1 a1", with(small, |c| c.crashes = 2)),
        (
            "w2 c1 r1 a1",
            with(small, |c| (c.workers, c.crashes) = (2, 1)),
        ),
        (
            "w2 c2 r1 a1",
            with(small, |c| (c.workers, c.crashes) = (2, 2)),
        ),
        ("w1 c0 r2 a1", with(small, |c| c.runs = 2)),
        ("w1 c0 r1 a2", with(small, |c| c.approvers = 2)),
        (
            "w2 c1 r1 a2",
            with(small, |c| (c.workers, c.crashes, c.approvers) = (2, 1, 2)),
        ),
        ("default", Config::default()),
    ]
}

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = (3..=7)
        .map(|rms| case(format!("twopc rms={rms}"), move || TwoPhaseCommit::new(rms)))
        .collect();
    cases.extend((growing().into_iter()).map(|(name, config)| world_case(name, config)));
    cases
}

/// Configurations beyond the main table, each checked with symmetry on one and two threads.
fn largest_configurations() -> Vec<(&'static str, Config)> {
    let default = Config::default();
    vec![
        ("default a2", with(default, |c| c.approvers = 2)),
        ("default c2", with(default, |c| c.crashes = 2)),
        ("default w3", with(default, |c| c.workers = 3)),
        (
            "default c2 a2",
            with(default, |c| (c.crashes, c.approvers) = (2, 2)),
        ),
        (
            "default w3 a2",
            with(default, |c| (c.workers, c.approvers) = (3, 2)),
        ),
        (
            "w2 c1 r2 a1",
            with(default, |c| {
                (c.runs, c.losses, c.duplicates) = (2, 0, 0);
            }),
        ),
    ]
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

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn wanted(filter: &[String], name: &str) -> bool {
    filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()))
}

/// One row of a table of runs.
fn row(name: &str, label: &str, threads: usize, report: &Report, last: &str) {
    let stats = &report.stats;
    println!(
        "| {name} | {label} | {threads} | {} | {} | {} | {:.3} | {:.2}M | {} | {last} |",
        stats.unique,
        stats.generated,
        stats.max_depth,
        stats.elapsed_secs,
        stats.states_per_second / 1e6,
        verdict(report),
    );
}

/// The `largest` mode: each configuration three times on one thread and three times on
/// two, alternating, then the medians and their ratio.
fn largest(filter: &[String]) {
    println!("load average at start: {}\n", load_average());
    println!("| configuration | search | threads | unique | generated | depth | time (s) | generated/s | verdict | run |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut summary = Vec::new();
    for (name, config) in largest_configurations() {
        if !wanted(filter, name) {
            continue;
        }
        let case = world_case(name, config);
        let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        let mut pairs = Vec::new();
        for run in 1..=3 {
            pairs.push(pair(name));
            for threads in [1, 2] {
                let setting = Setting {
                    threads,
                    symmetry: true,
                    max_states: LARGEST_STATES,
                    max_secs: LARGEST_SECS,
                };
                let report = (case.run)(setting);
                row(
                    &case.name,
                    "bfs+symmetry",
                    threads,
                    &report,
                    &run.to_string(),
                );
                times[threads - 1].push(report.stats.elapsed_secs);
            }
        }
        let [one, two] = times.map(median);
        summary.push((case.name, one, two, median(pairs)));
    }
    println!("\nload average at end: {}\n", load_average());
    println!("| configuration | median time, 1 thread (s) | median time, 2 threads (s) | speed-up | two 1-thread checks at once, median (s) | the machine's ceiling, 2 × alone / together |");
    println!("|---|---|---|---|---|---|");
    for (name, one, two, together) in summary {
        println!(
            "| {name} | {one:.2} | {two:.2} | {:.2}x | {together:.2} | {:.2}x |",
            one / two,
            2.0 * one / together
        );
    }
}

/// Two one-thread checks of the configuration `name` at once, each in a process of its own
/// (`scale solo NAME`); returns the mean of their times.
fn pair(name: &str) -> f64 {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("scale: {e}");
            return f64::NAN;
        }
    };
    let spawn = || {
        std::process::Command::new(&exe)
            .args(["solo", name])
            .stdout(std::process::Stdio::piped())
            .spawn()
    };
    let (Ok(a), Ok(b)) = (spawn(), spawn()) else {
        eprintln!("scale: cannot start the pair");
        return f64::NAN;
    };
    let secs = |child: std::process::Child| -> f64 {
        let out = child
            .wait_with_output()
            .map(|o| o.stdout)
            .unwrap_or_default();
        String::from_utf8_lossy(&out)
            .trim()
            .parse()
            .unwrap_or(f64::NAN)
    };
    let (a, b) = (secs(a), secs(b));
    println!("| world {name} | two processes at once | 1 each | | | | {a:.2}, {b:.2} | | | |");
    (a + b) / 2.0
}

/// `scale solo NAME`: one one-thread check of a largest configuration; prints its time.
fn solo(name: &str) {
    let Some((_, config)) = largest_configurations()
        .into_iter()
        .find(|(n, _)| *n == name)
    else {
        eprintln!("scale: no configuration named {name}");
        std::process::exit(2);
    };
    let setting = Setting {
        threads: 1,
        symmetry: true,
        max_states: LARGEST_STATES,
        max_secs: LARGEST_SECS,
    };
    let report = (world_case(name, config).run)(setting);
    println!("{}", report.stats.elapsed_secs);
}

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

/// The main table, then the best rates of each kind of model per search and thread count.
fn table(filter: &[String]) {
    println!("load average at start: {}\n", load_average());
    println!("| configuration | search | threads | unique | generated | depth | time (s) | generated/s | verdict | runs |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    // Per search and thread count: the best rates of 2pc and of the world.
    let mut best: Vec<(String, f64, f64)> = Vec::new();
    for case in cases().into_iter().filter(|c| wanted(filter, &c.name)) {
        for (symmetry, label) in [(false, "bfs"), (true, "bfs+symmetry")] {
            for threads in [1, 2] {
                let setting = Setting {
                    threads,
                    symmetry,
                    max_states: BOUND_STATES,
                    max_secs: BOUND_SECS,
                };
                let (report, runs) = median_of_3(&case, setting);
                row(&case.name, label, threads, &report, &runs.to_string());
                // Runs under 0.1 s measure thread start-up more than the model.
                if report.stats.elapsed_secs < 0.1 {
                    continue;
                }
                let key = format!("{label}, {threads}");
                let rate = report.stats.states_per_second;
                let entry = match best.iter().position(|b| b.0 == key) {
                    Some(i) => &mut best[i],
                    None => {
                        best.push((key, 0.0, 0.0));
                        let last = best.len() - 1;
                        &mut best[last]
                    }
                };
                match case.name.starts_with("twopc") {
                    true => entry.1 = entry.1.max(rate),
                    false => entry.2 = entry.2.max(rate),
                }
            }
        }
    }
    println!("\nload average at end: {}\n", load_average());
    println!("| search, threads | best 2pc generated/s | best world generated/s | world / 2pc |");
    println!("|---|---|---|---|");
    for (setting, twopc, world) in best {
        if twopc > 0.0 && world > 0.0 {
            println!(
                "| {setting} | {:.2}M | {:.2}M | {:.2} |",
                twopc / 1e6,
                world / 1e6,
                world / twopc
            );
        }
    }
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).collect();
    if cfg!(debug_assertions) {
        eprintln!("scale: a debug build; run with --release for meaningful figures");
    }
    match filter.first().map(String::as_str) {
        Some("largest") => largest(filter.get(1..).unwrap_or_default()),
        Some("solo") => solo(filter.get(1).map_or("", String::as_str)),
        _ => table(&filter),
    }
}
