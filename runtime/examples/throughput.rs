//! Throughput of the runtime against its own store's raw durable compare-and-set.
//!
//! ```sh
//! cargo run --release -p resumable-runtime --example throughput -- \
//!     [--store ADDRESS | --dir DIR] [--workers 1,2,4] [--seconds 3] [--rounds 3] \
//!     [--only raw|runtime]
//! ```
//!
//! `--dir` puts the SQLite file (`resumable-throughput.db`) in `DIR` (default: the system's
//! temporary directory), e.g. `/dev/shm` to measure where a durable commit is cheap.
//! `--only` measures one side alone (for a profiler). Each round prints its figures with the
//! 1-minute load average as it ends (`/proc/loadavg`), since the machine may be shared.
//!
//! For each number of workers (threads, each with its own connection): the raw
//! compare-and-set (one durable transaction writing a value the size of one runtime commit
//! into a slot if its version matches) against the runtime (bench runs driven by the driver:
//! load, step, commit run + audit record with compare-and-set, dispatch to in-memory tools,
//! feed the answer). Rounds alternate raw and runtime; medians are printed, and their ratio.
//! The store is emptied first (the SQLite file deleted, the PostgreSQL schema dropped).
//!
//! The raw compare-and-set is this benchmark's own (`Raw`, a table of its own in the same
//! file or schema), over a connection opened as the store opens its own (`sqlite::connect`,
//! `postgres::connect`): the same durability settings, none of the store's logic.

use resumable_runtime::auth::{Parties, PartyKeys};
use resumable_runtime::driver::{create_run, Config, CrashPlan, Driver, Flavor};
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::{self, is_postgres, StoreError};
use resumable_runtime::tool::MemoryTools;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    store: String,
    workers: Vec<u32>,
    seconds: f64,
    rounds: usize,
    only: Option<Side>,
}

/// One side of the comparison.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Raw,
    Runtime,
}

impl Args {
    fn measures(&self, side: Side) -> bool {
        self.only.is_none_or(|only| only == side)
    }
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        store: String::new(),
        workers: vec![1],
        seconds: 3.0,
        rounds: 3,
        only: None,
    };
    let mut dir = std::env::temp_dir();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let value = pair.get(1).ok_or(format!("{} needs a value", pair[0]))?;
        let bad = |e: &dyn std::fmt::Display| format!("{}: {e}", pair[0]);
        match pair[0].as_str() {
            "--store" => a.store = value.clone(),
            "--workers" => {
                a.workers = value
                    .split(',')
                    .map(|w| w.parse().map_err(|e| bad(&e)))
                    .collect::<Result<_, _>>()?
            }
            "--seconds" => a.seconds = value.parse().map_err(|e| bad(&e))?,
            "--rounds" => a.rounds = value.parse().map_err(|e| bad(&e))?,
            "--dir" => dir = value.into(),
            "--only" => {
                a.only = Some(match value.as_str() {
                    "raw" => Side::Raw,
                    "runtime" => Side::Runtime,
                    other => return Err(format!("--only {other}: raw or runtime")),
                })
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.store.is_empty() {
        a.store = dir.join("resumable-throughput.db").display().to_string();
    }
    Ok(a)
}

/// The yardstick: a raw durable compare-and-set on a connection of the store's own kind.
enum Raw {
    Sqlite(rusqlite::Connection),
    Postgres(postgres::Client),
}

impl Raw {
    fn open(address: &str) -> Result<Raw, StoreError> {
        if is_postgres(address) {
            let table = "CREATE TABLE IF NOT EXISTS raw_cas (
                slot BIGINT PRIMARY KEY, version BIGINT NOT NULL, value BYTEA NOT NULL)";
            let db = store::postgres::connect(address, |tx| tx.batch_execute(table))?;
            Ok(Raw::Postgres(db))
        } else {
            let table = "CREATE TABLE IF NOT EXISTS raw_cas (
                slot INTEGER PRIMARY KEY, version INTEGER NOT NULL, value BLOB NOT NULL)";
            let db = store::sqlite::connect(address)?;
            db.execute_batch(table)
                .map_err(|e| StoreError::Backend(e.to_string()))?;
            Ok(Raw::Sqlite(db))
        }
    }

    /// Writes `value` into `slot` if the slot is at version `expect` (0: not yet written),
    /// in one durable transaction; whether it did.
    fn cas(&mut self, slot: i64, expect: i64, value: &[u8]) -> Result<bool, String> {
        let insert = "INSERT INTO raw_cas (slot, version, value) VALUES (?1, 1, ?2)
            ON CONFLICT (slot) DO NOTHING";
        let update = "UPDATE raw_cas SET version = version + 1, value = ?1
            WHERE slot = ?2 AND version = ?3";
        match self {
            Raw::Sqlite(db) => {
                let tx = db
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                    .map_err(|e| e.to_string())?;
                let moved = if expect == 0 {
                    tx.execute(insert, rusqlite::params![slot, value])
                } else {
                    tx.execute(update, rusqlite::params![value, slot, expect])
                }
                .map_err(|e| e.to_string())?;
                tx.commit().map_err(|e| e.to_string())?;
                Ok(moved == 1)
            }
            Raw::Postgres(db) => {
                let moved = if expect == 0 {
                    db.execute(&insert.replace('?', "$"), &[&slot, &value])
                } else {
                    db.execute(&update.replace('?', "$"), &[&value, &slot, &expect])
                }
                .map_err(|e| e.to_string())?;
                Ok(moved == 1)
            }
        }
    }
}

fn fresh(address: &str) {
    if is_postgres(address) {
        store::postgres::PgStore::drop_schema(address).expect("drop schema");
    } else {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{address}{suffix}"));
        }
    }
}

fn driver(address: &str, w: u32) -> Driver<Box<dyn store::Store + Send>, MemoryTools> {
    let config = Config {
        owner: format!("bench-{w}"),
        lease_ms: 60_000,
        timing: Timing::default(),
        flavor: Flavor::Correct,
        crash: CrashPlan::none(),
        key: None,
        // The bench program waits on no party: a keyring of none refuses any request.
        parties: Parties::Authenticated(PartyKeys::default()),
    };
    Driver::new(
        store::open(address).expect("store"),
        MemoryTools::default(),
        config,
    )
}

/// Runtime transitions committed per second by `workers` threads in `seconds`.
fn runtime(address: &str, workers: u32, seconds: f64, names: &Arc<AtomicU32>) -> f64 {
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (address, names) = (address.to_string(), Arc::clone(names));
            std::thread::spawn(move || {
                let mut d = driver(&address, w);
                let started = Instant::now();
                let deadline = started + Duration::from_secs_f64(seconds);
                while Instant::now() < deadline {
                    let name = format!("b-{}", names.fetch_add(1, Ordering::Relaxed));
                    let key = create_run(
                        d.store(),
                        Program::Bench,
                        &name,
                        0,
                        &Timing::default(),
                        None,
                    )
                    .expect("create")
                    .expect("a new run");
                    while Instant::now() < deadline && d.turn(&key, false).expect("turn") {}
                }
                d.commits() as f64 / started.elapsed().as_secs_f64()
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().expect("thread")).sum()
}

/// Raw compare-and-sets of `size`-byte values per second by `workers` threads.
fn raw(address: &str, workers: u32, seconds: f64, size: usize, base: u32) -> f64 {
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let address = address.to_string();
            std::thread::spawn(move || {
                let mut raw = Raw::open(&address).expect("store");
                let slot = i64::from(base + w + 1); // fresh slots: every version starts at 0
                let value = vec![b'x'; size];
                let (mut version, mut n) = (0i64, 0u64);
                let started = Instant::now();
                while started.elapsed().as_secs_f64() < seconds {
                    assert!(raw.cas(slot, version, &value).expect("cas"), "lost a CAS");
                    version += 1;
                    n += 1;
                }
                n as f64 / started.elapsed().as_secs_f64()
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().expect("thread")).sum()
}

/// The bytes one runtime commit writes: the run and its audit record (a bench run has no
/// checkpoint), averaged over a whole bench run.
fn commit_size(address: &str) -> usize {
    let mut d = driver(address, 0);
    let key = create_run(
        d.store(),
        Program::Bench,
        "size",
        0,
        &Timing::default(),
        None,
    )
    .expect("create")
    .expect("new");
    while d.turn(&key, false).expect("turn") {}
    let row = d.store().load(&key).expect("load").expect("row");
    let lines = d.store().log(&key).expect("log");
    let records: usize = lines.iter().skip(1).map(Vec::len).sum();
    let run = serde_json::to_vec(&row.run).expect("json").len();
    records / (lines.len() - 1) + run
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The 1-minute load average, as the kernel reports it (`None` where there is no
/// `/proc/loadavg`).
fn load() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// A figure, or `-` for a side not measured.
fn shown(x: Option<f64>, decimals: usize) -> String {
    x.map_or("-".to_string(), |x| format!("{x:.decimals$}"))
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    fresh(&a.store);
    let size = commit_size(&a.store);
    let backend = if is_postgres(&a.store) {
        "postgres"
    } else {
        "sqlite"
    };
    println!(
        "{backend} store; one commit writes about {size} bytes; {} rounds of {} s each, alternating",
        a.rounds, a.seconds
    );
    let names = Arc::new(AtomicU32::new(0));
    let mut base = 0;
    let mut table = Vec::new();
    for &w in &a.workers {
        let (mut raws, mut runs) = (Vec::new(), Vec::new());
        for round in 1..=a.rounds.max(1) {
            if a.measures(Side::Raw) {
                raws.push(raw(&a.store, w, a.seconds, size, base));
                base += 64;
            }
            if a.measures(Side::Runtime) {
                runs.push(runtime(&a.store, w, a.seconds, &names));
            }
            println!(
                "workers {w} round {round}: raw CAS/s {}, runtime transitions/s {}, load {}",
                shown(raws.last().copied(), 0),
                shown(runs.last().copied(), 0),
                shown(load(), 2)
            );
        }
        table.push((w, median(raws), median(runs)));
    }
    println!("workers  raw CAS/s  runtime transitions/s  ratio");
    for (w, r, t) in table {
        let ratio = r.zip(t).map(|(r, t)| t / r);
        println!(
            "{w:>7}  {:>9}  {:>21}  {:>5}",
            shown(r, 0),
            shown(t, 0),
            shown(ratio, 2)
        );
    }
}
