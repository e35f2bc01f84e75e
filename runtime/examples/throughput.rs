//! Throughput of the runtime against its own store's raw durable compare-and-set.
//!
//! ```sh
//! cargo run --release -p resumable-runtime --example throughput -- \
//!     [--store ADDRESS | --dir DIR] [--workers 1,2,4] [--seconds 3] [--rounds 3] \
//!     [--only raw|store|runtime]
//! ```
//!
//! `--dir` puts the SQLite file (`resumable-throughput.db`) in `DIR` (default: the system's
//! temporary directory), e.g. `/dev/shm` to measure where a durable commit is cheap.
//! `--only` measures one side alone (for a profiler). Each round prints its figures with the
//! 1-minute load average as it ends (`/proc/loadavg`), since the machine may be shared.
//!
//! For each number of workers (threads, each with its own connection), three sides:
//! - **raw**: the raw compare-and-set (one durable transaction writing a value the size of
//!   one runtime commit into a slot if its version matches);
//! - **store**: the store's own share of the runtime's work: every call a bench run makes on
//!   its store (create, loads, call-history lookups, commits of the very runs, records and
//!   history entries the driver wrote), recorded once from a real run and replayed under
//!   fresh run keys, with no kernel, driver or audit-log work between them: what a runtime
//!   that cost nothing itself would reach on this store;
//! - **runtime**: bench runs driven by the driver (step, commit run + audit record with
//!   compare-and-set, dispatch to in-memory tools, feed the answer).
//!
//! Rounds alternate the sides; medians are printed, and their ratios to raw. Beside each
//! rate, the CPU time its threads spent per operation (their own: for PostgreSQL, the
//! client's, not the server's), which moves far less than a rate with the load of a shared
//! machine. The store is emptied first (the SQLite file deleted, the PostgreSQL schema
//! dropped).
//!
//! The raw compare-and-set is this benchmark's own (`Raw`, a table of its own in the same
//! file or schema), over a connection opened as the store opens its own (`sqlite::connect`,
//! `postgres::connect`): the same durability settings, none of the store's logic.

use resumable_kernel::{Call, Checkpoint, Digest, HistoryEntry, Prior, Run};
use resumable_runtime::auth::{Parties, PartyKeys};
use resumable_runtime::driver::{create_run, Config, CrashPlan, Driver, Flavor};
use resumable_runtime::lifecycle::Tail;
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::{
    self, is_postgres, Cas, Commit, Consumed, Expect, Inbox, Lease, NewRun, Request, Row, RunKey,
    Store, StoreError, Summary,
};
use resumable_runtime::tool::MemoryTools;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
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
    Store,
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
                    "store" => Side::Store,
                    "runtime" => Side::Runtime,
                    other => return Err(format!("--only {other}: raw, store or runtime")),
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

/// What one side's threads did in a round: operations per second (summed over the
/// threads), and the CPU time their threads spent per operation.
#[derive(Clone, Copy)]
struct Measured {
    rate: f64,
    cpu_per_op_s: Option<f64>,
}

/// What one thread did: its operations, its wall time, and the CPU time it spent.
struct Thread {
    ops: u64,
    wall_s: f64,
    cpu_s: Option<f64>,
}

impl Measured {
    fn of(threads: Vec<std::thread::JoinHandle<Thread>>) -> Measured {
        let done: Vec<Thread> = threads
            .into_iter()
            .map(|t| t.join().expect("thread"))
            .collect();
        let ops: u64 = done.iter().map(|t| t.ops).sum();
        let cpu: Option<f64> = done.iter().map(|t| t.cpu_s).sum();
        Measured {
            rate: done.iter().map(|t| t.ops as f64 / t.wall_s).sum(),
            cpu_per_op_s: cpu.filter(|_| ops > 0).map(|cpu| cpu / ops as f64),
        }
    }
}

/// The CPU time (user and system) the calling thread has spent, in seconds, from
/// `/proc/thread-self/stat` (`None` where there is none). The kernel counts it in ticks of
/// 1/100 s (`USER_HZ`, 100 on every Linux architecture), so a round of seconds reads it to
/// within a percent.
fn thread_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // The command name, in parentheses, may hold spaces: the fields counted from after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Times `work` on the calling thread: it returns how many operations it made.
fn timed(work: impl FnOnce() -> u64) -> Thread {
    let (started, cpu) = (Instant::now(), thread_cpu_s());
    let ops = work();
    Thread {
        ops,
        wall_s: started.elapsed().as_secs_f64(),
        cpu_s: thread_cpu_s().zip(cpu).map(|(end, start)| end - start),
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

fn config(w: u32) -> Config {
    Config {
        owner: format!("bench-{w}"),
        lease_ms: 60_000,
        timing: Timing::default(),
        flavor: Flavor::Correct,
        crash: CrashPlan::none(),
        key: None,
        // The bench program waits on no party: a keyring of none refuses any request.
        parties: Parties::Authenticated(PartyKeys::default()),
    }
}

fn driver(address: &str, w: u32) -> Driver<Box<dyn store::Store + Send>, MemoryTools> {
    Driver::new(
        store::open(address).expect("store"),
        MemoryTools::default(),
        config(w),
    )
}

/// Runtime transitions committed by `workers` threads in `seconds`.
fn runtime(address: &str, workers: u32, seconds: f64, names: &Arc<AtomicU32>) -> Measured {
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (address, names) = (address.to_string(), Arc::clone(names));
            std::thread::spawn(move || {
                let mut d = driver(&address, w);
                timed(|| {
                    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
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
                    d.commits()
                })
            })
        })
        .collect();
    Measured::of(threads)
}

/// Raw compare-and-sets of `size`-byte values by `workers` threads in `seconds`.
fn raw(address: &str, workers: u32, seconds: f64, size: usize, base: u32) -> Measured {
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let address = address.to_string();
            std::thread::spawn(move || {
                let mut raw = Raw::open(&address).expect("store");
                let slot = i64::from(base + w + 1); // fresh slots: every version starts at 0
                let value = vec![b'x'; size];
                timed(|| {
                    let (mut version, mut n) = (0i64, 0u64);
                    let started = Instant::now();
                    while started.elapsed().as_secs_f64() < seconds {
                        assert!(raw.cas(slot, version, &value).expect("cas"), "lost a CAS");
                        version += 1;
                        n += 1;
                    }
                    n
                })
            })
        })
        .collect();
    Measured::of(threads)
}

/// One call a bench run made on its store, kept to be made again under another run's key.
enum Op {
    Create {
        run: Box<Run>,
        header: Vec<u8>,
        tail: Tail,
        resource_version: u64,
    },
    Load,
    Header,
    Inbox(bool),
    Prior(Box<Call>),
    Commit(Box<Written>),
}

/// A commit as the driver made it, owned.
struct Written {
    expect: Expect,
    run: Run,
    tail: Tail,
    line: Vec<u8>,
    checkpoint: Option<Checkpoint>,
    pc: u32,
    lease: Lease,
    consumed: Option<Consumed>,
    history: Vec<HistoryEntry>,
}

/// A store that keeps every call a bench run makes on it ([`Op`]) and passes it on.
struct Recorder {
    store: Box<dyn Store + Send>,
    ops: Arc<Mutex<Vec<Op>>>,
}

impl Recorder {
    fn keep(&self, op: Op) {
        self.ops.lock().expect("ops").push(op);
    }
}

impl Store for Recorder {
    fn create(&mut self, new: &NewRun<'_>) -> Result<Cas, StoreError> {
        self.keep(Op::Create {
            run: Box::new(*new.run),
            header: new.header.to_vec(),
            tail: new.tail,
            resource_version: new.resource_version,
        });
        self.store.create(new)
    }
    fn load(&mut self, key: &RunKey) -> Result<Option<Row>, StoreError> {
        self.keep(Op::Load);
        self.store.load(key)
    }
    fn commit(&mut self, c: &Commit<'_>) -> Result<Cas, StoreError> {
        self.keep(Op::Commit(Box::new(Written {
            expect: c.expect,
            run: *c.run,
            tail: c.tail,
            line: c.line.to_vec(),
            checkpoint: c.checkpoint.copied(),
            pc: c.pc,
            lease: c.lease.clone(),
            consumed: c.consumed,
            history: c.history.to_vec(),
        })));
        self.store.commit(c)
    }
    fn scan(&mut self, all: bool) -> Result<Vec<Summary>, StoreError> {
        self.store.scan(all)
    }
    fn submit_sealed(
        &mut self,
        key: &RunKey,
        party: &str,
        at_ms: u64,
        request: &Request,
        seal: Option<Digest>,
    ) -> Result<u64, StoreError> {
        self.store.submit_sealed(key, party, at_ms, request, seal)
    }
    fn refuse_unauthenticated(&mut self, key: &RunKey, id: u64) -> Result<Cas, StoreError> {
        self.store.refuse_unauthenticated(key, id)
    }
    fn inbox(&mut self, key: &RunKey, pending: bool) -> Result<Vec<Inbox>, StoreError> {
        self.keep(Op::Inbox(pending));
        self.store.inbox(key, pending)
    }
    fn log(&mut self, key: &RunKey) -> Result<Vec<Vec<u8>>, StoreError> {
        self.store.log(key)
    }
    fn header(&mut self, key: &RunKey) -> Result<Option<Vec<u8>>, StoreError> {
        self.keep(Op::Header);
        self.store.header(key)
    }
    fn prior(&mut self, key: &RunKey, call: &Call) -> Result<Prior, StoreError> {
        self.keep(Op::Prior(Box::new(*call)));
        self.store.prior(key, call)
    }
}

/// Makes the store calls `ops` under run `key`, stopping at `deadline`; how many commits.
fn replay(store: &mut dyn Store, ops: &[Op], key: &RunKey, deadline: Instant) -> u64 {
    let mut commits = 0;
    for op in ops {
        if Instant::now() >= deadline {
            break;
        }
        match op {
            Op::Create {
                run,
                header,
                tail,
                resource_version,
            } => {
                let new = NewRun {
                    key,
                    run,
                    header,
                    tail: *tail,
                    program: Program::Bench.as_str(),
                    resource_version: *resource_version,
                };
                assert_eq!(store.create(&new).expect("create"), Cas::Done);
            }
            Op::Load => drop(store.load(key).expect("load")),
            Op::Header => drop(store.header(key).expect("header")),
            Op::Inbox(pending) => drop(store.inbox(key, *pending).expect("inbox")),
            Op::Prior(call) => drop(store.prior(key, call).expect("prior")),
            Op::Commit(w) => {
                let commit = Commit {
                    key,
                    expect: w.expect,
                    run: &w.run,
                    tail: w.tail,
                    line: &w.line,
                    checkpoint: w.checkpoint.as_ref(),
                    pc: w.pc,
                    lease: &w.lease,
                    consumed: w.consumed,
                    history: &w.history,
                };
                assert_eq!(store.commit(&commit).expect("commit"), Cas::Done);
                commits += 1;
            }
        }
    }
    commits
}

/// The store's share: commits by `workers` threads in `seconds`, replaying `ops` under
/// fresh run keys (named like the runtime's, so that rows and keys are of the same size).
fn store_only(
    address: &str,
    workers: u32,
    seconds: f64,
    ops: &Arc<Vec<Op>>,
    names: &Arc<AtomicU32>,
) -> Measured {
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            let (address, ops, names) = (address.to_string(), Arc::clone(ops), Arc::clone(names));
            std::thread::spawn(move || {
                let mut store = store::open(&address).expect("store");
                timed(|| {
                    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
                    let mut commits = 0;
                    while Instant::now() < deadline {
                        let n = names.fetch_add(1, Ordering::Relaxed);
                        let key = RunKey(format!("tenant-c/bench/s-{n}"));
                        commits += replay(&mut *store, &ops, &key, deadline);
                    }
                    commits
                })
            })
        })
        .collect();
    Measured::of(threads)
}

/// Drives one whole bench run, keeping every call it makes on its store; with the bytes one
/// runtime commit writes: the run and its audit record (a bench run has no checkpoint),
/// averaged over the run.
fn record(address: &str) -> (Vec<Op>, usize) {
    let ops = Arc::new(Mutex::new(Vec::new()));
    let recorder = Recorder {
        store: store::open(address).expect("store"),
        ops: Arc::clone(&ops),
    };
    let mut d = Driver::new(
        Box::new(recorder) as Box<dyn Store + Send>,
        MemoryTools::default(),
        config(0),
    );
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
    drop(d);
    let ops = std::mem::take(&mut *ops.lock().expect("ops"));
    let mut store = store::open(address).expect("store");
    let row = store.load(&key).expect("load").expect("row");
    let lines = store.log(&key).expect("log");
    let records: usize = lines.iter().skip(1).map(Vec::len).sum();
    let run = serde_json::to_vec(&row.run).expect("json").len();
    (ops, records / (lines.len() - 1) + run)
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

/// The medians of a side's rounds: its rate, and its CPU time per operation in µs.
fn medians(rounds: &[Measured]) -> (Option<f64>, Option<f64>) {
    let rates = rounds.iter().map(|m| m.rate).collect();
    let cpu = rounds
        .iter()
        .filter_map(|m| m.cpu_per_op_s)
        .map(|s| s * 1e6);
    (median(rates), median(cpu.collect()))
}

/// A round's figure for one side: `rate (cpu µs/op)`, or `-` for a side not measured.
fn figure(m: Option<&Measured>) -> String {
    match m {
        Some(m) => format!(
            "{} ({} us)",
            shown(Some(m.rate), 0),
            shown(m.cpu_per_op_s.map(|s| s * 1e6), 1)
        ),
        None => "-".to_string(),
    }
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
    let (ops, size) = record(&a.store);
    let ops = Arc::new(ops);
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
        let (mut raws, mut stores, mut runs) = (Vec::new(), Vec::new(), Vec::new());
        for round in 1..=a.rounds.max(1) {
            if a.measures(Side::Raw) {
                raws.push(raw(&a.store, w, a.seconds, size, base));
                base += 64;
            }
            if a.measures(Side::Store) {
                stores.push(store_only(&a.store, w, a.seconds, &ops, &names));
            }
            if a.measures(Side::Runtime) {
                runs.push(runtime(&a.store, w, a.seconds, &names));
            }
            println!(
                "workers {w} round {round}: raw CAS/s {}, store commits/s {}, runtime transitions/s {}, load {}",
                figure(raws.last()),
                figure(stores.last()),
                figure(runs.last()),
                shown(load(), 2)
            );
        }
        table.push((w, medians(&raws), medians(&stores), medians(&runs)));
    }
    println!("medians; in brackets, CPU time per operation in microseconds (the client's own)");
    println!(
        "workers  {:<16}  {:<16}  {:<21}  store/raw  runtime/raw",
        "raw CAS/s", "store commits/s", "runtime transitions/s"
    );
    for (w, r, s, t) in table {
        let ratio = |x: Option<f64>| r.0.zip(x).map(|(r, x)| x / r);
        let both = |(rate, cpu): (Option<f64>, Option<f64>)| {
            format!("{} ({})", shown(rate, 0), shown(cpu, 1))
        };
        println!(
            "{w:>7}  {:<16}  {:<16}  {:<21}  {:>9}  {:>11}",
            both(r),
            both(s),
            both(t),
            shown(ratio(s.0), 2),
            shown(ratio(t.0), 2)
        );
    }
}
