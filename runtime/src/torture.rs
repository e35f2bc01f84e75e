//! The torture: workers, the tool service and approvers on one store, running the seed, order
//! and batch programs; workers killed with SIGKILL at seeded points (between the commit and
//! the dispatch, between the tool's commit and the recorded answer, between two dispatches of
//! a batch, and at random instants) and restarted, until every run has ended or waits on a
//! person; then the checks of [`checks`]. The seed fixes every choice: which runs, which
//! program, where each worker dies, the tool's delays. When a kill sent at a
//! random instant lands depends on the machine's scheduling.

use crate::driver::{create_run, CrashPoint, Flavor};
use crate::program::{Program, Timing};
use crate::rng::{now_ms, Rng};
use crate::store::{self, RunKey, Status, Store};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub mod checks;
pub mod procs;

use procs::{Ended, Slot, WorkerSpec};

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The binary whose `worker`, `approver` and `tool-service` commands are started.
    pub exe: PathBuf,
    /// The store (fresh: the torture refuses one that holds runs).
    pub store: String,
    /// Where the tool's ledger and the processes' logs go.
    pub dir: PathBuf,
    /// Worker processes.
    pub workers: u32,
    /// Approver processes.
    pub approvers: u32,
    /// Runs kept going at once while killing.
    pub active: u32,
    /// Kills to reach; runs are started until then.
    pub kills: u32,
    /// The seed.
    pub seed: u64,
    /// Correct or broken workers.
    pub flavor: Flavor,
    /// The workers' lease.
    pub lease_ms: u64,
    /// The tool's largest delay before a commit.
    pub max_tool_delay_ms: u64,
    /// Share of status queries answered "unknown", in percent.
    pub unknown_percent: u64,
    /// The whole torture's limit.
    pub deadline: Duration,
    /// How many times the tool service is killed with SIGKILL (at seeded worker kills) and
    /// started again on its address and ledger.
    pub tool_kills: u32,
    /// How many times the database is restarted (at seeded worker kills), by `db_restart`.
    pub db_restarts: u32,
    /// How many times an outside writer moves the resource of a run that waits on an
    /// approval (at seeded worker kills): a decision made on the checkpoint it was shown must
    /// then be refused with `resource_changed` (RES-3), never carried out.
    pub resource_moves: u32,
    /// The shell command that restarts the database server (stop, then start), e.g.
    /// `runtime/scripts/postgres.sh restart DIR PORT`.
    pub db_restart: Option<String>,
}

/// One kill, and what the killed worker held.
#[derive(Clone, Debug)]
pub struct Kill {
    /// When it was seen.
    pub at_ms: u64,
    /// The planned point, or `None` for a kill at a random instant.
    pub point: Option<CrashPoint>,
    /// The runs the worker held, with their log position then.
    pub held: Vec<(RunKey, u64)>,
}

/// What a torture run did and found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// The driver flavour.
    pub flavor: String,
    /// Worker processes.
    pub workers: u32,
    /// Kills by point (`random` for kills at a random instant).
    pub kills: BTreeMap<String, u32>,
    /// The other faults: the tool service killed and restarted, the database restarted, a
    /// corrupted ledger refused.
    pub faults: BTreeMap<String, u32>,
    /// The counts from the logs and the ledger.
    pub tally: checks::Tally,
    /// Time from each kill to the next commit on a run the killed worker held, in ms.
    pub recovery_ms: Vec<u64>,
    /// How long it all took.
    pub elapsed: Duration,
    /// What went wrong.
    pub violations: Vec<String>,
    /// Why the torture did not finish, if it did not (its deadline passed): what it checked
    /// is reported, and its verdict is "incomplete", not "passed".
    pub incomplete: Option<String>,
}

impl Report {
    /// Kills in all.
    pub fn total_kills(&self) -> u32 {
        self.kills.values().sum()
    }

    /// The report for people.
    pub fn render(&self) -> String {
        let t = &self.tally;
        let mut out = String::new();
        let kills: Vec<String> = self.kills.iter().map(|(p, n)| format!("{p} {n}")).collect();
        let mut rec = self.recovery_ms.clone();
        rec.sort_unstable();
        let median = rec.get(rec.len() / 2).copied().unwrap_or(0);
        let worst = rec.last().copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "torture: {} store, {} driver, {} workers, seed {}, {:.1} s",
            self.backend,
            self.flavor,
            self.workers,
            self.seed,
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(out, "kills: {} ({})", self.total_kills(), kills.join(", "));
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(f, n)| format!("{f} {n}"))
            .collect();
        if !faults.is_empty() {
            let _ = writeln!(out, "faults: {}", faults.join(", "));
        }
        let _ = writeln!(
            out,
            "runs: {} ({} completed, {} failed, {} waiting on a person)",
            t.runs,
            t.completed,
            t.failed,
            t.waiting.len()
        );
        let _ = writeln!(
            out,
            "commits: {} transitions, {} refusals recorded, {} recoveries, {} reconciles, {} requests from parties",
            t.commits, t.rejections, t.recoveries, t.reconciles, t.requests
        );
        let _ = writeln!(
            out,
            "tool ledger: {} commits, {} fences, {} resources moved from outside; {} decisions refused for a moved resource",
            t.tool_commits, t.fences, t.outside_moves, t.resource_changed
        );
        let _ = writeln!(
            out,
            "recovery from a kill to progress: median {median} ms, worst {worst} ms over {} kills that held runs",
            rec.len()
        );
        for w in t.waiting.iter().take(5) {
            let _ = writeln!(out, "waiting: {w}");
        }
        if let Some(why) = &self.incomplete {
            let _ = writeln!(out, "INCOMPLETE: {why}");
        }
        if self.violations.is_empty() {
            let _ = writeln!(
                out,
                "checks: each key committed at most once, and only as a recorded dispatch (a gated call's only as an approval bound it); no accepted decision lost; no run stuck; every audit log validates and matches its anchor"
            );
            let _ = writeln!(
                out,
                "result: 0 violations{}",
                if self.incomplete.is_some() {
                    " in what ran (incomplete)"
                } else {
                    ""
                }
            );
        } else {
            for v in self.violations.iter().take(20) {
                let _ = writeln!(out, "VIOLATION: {v}");
            }
            let _ = writeln!(out, "result: {} violations", self.violations.len());
        }
        out
    }
}

/// Runs the torture. `Err` is a failure to run it at all (a store that cannot be opened, a
/// process that cannot start); what goes wrong while it runs is in the report's violations.
pub fn run(o: &Options, progress: &mut dyn FnMut(&str)) -> Result<Report, String> {
    let started = Instant::now();
    let mut store = store::open(&o.store).map_err(|e| e.to_string())?;
    if !store.scan(true).map_err(|e| e.to_string())?.is_empty() {
        return Err(format!(
            "{}: the store holds runs; the torture needs a fresh one",
            o.store
        ));
    }
    let key_file = write_keys(o)?;
    let key = crate::lifecycle::read_key(&key_file, false)?;
    let (proc, address) = procs::tool_service(
        &o.exe,
        &o.dir,
        "127.0.0.1:0",
        o.seed,
        o.max_tool_delay_ms,
        o.unknown_percent,
    )
    .map_err(|e| e.to_string())?;
    let mut tools = Some(proc);
    let mut approvers = Vec::new();
    for i in 0..o.approvers {
        approvers
            .push(procs::approver(&o.exe, &o.dir, &o.store, i, o.seed).map_err(|e| e.to_string())?);
    }
    let spec = WorkerSpec {
        exe: &o.exe,
        dir: &o.dir,
        store: &o.store,
        tools: &address,
        lease_ms: o.lease_ms,
        flavor: o.flavor,
        key_file: &key_file,
        key: &key,
    };
    let mut report = Report::new(o);
    let mut kills = Vec::new();
    let mut faults = Faults {
        tools: &mut tools,
        address: &address,
        schedule: schedule(o),
    };
    let outcome = supervise(
        o,
        &spec,
        &mut *store,
        &mut report,
        &mut kills,
        &mut faults,
        started,
        progress,
    );
    drop(approvers);
    drop(tools);
    outcome?;
    corrupted_ledger_refused(o, &mut report);
    progress("checking");
    // After a database restart the supervisor's own session may be gone: the first
    // statement finds it so, and the store connects again.
    for _ in 0..100 {
        if store.scan(true).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (tally, logs, violations) = checks::check(
        &mut *store,
        &o.dir.join("tools.ledger"),
        Some(&key),
        report.incomplete.is_none(),
    )
    .map_err(|e| e.to_string())?;
    report.tally = tally;
    report.violations.extend(violations);
    report.recovery_ms = recovery_times(&kills, &logs);
    report.elapsed = started.elapsed();
    Ok(report)
}

/// Writes the torture's keys into its directory, all drawn from the seed (reproducible, never
/// real ones): the runs' audit key, the tool service's, and each party's, which the workers
/// check every request against. Returns the audit key's file.
fn write_keys(o: &Options) -> Result<PathBuf, String> {
    std::fs::create_dir_all(o.dir.join("parties"))
        .map_err(|e| format!("{}: {e}", o.dir.display()))?;
    let mut rng = Rng::fork(o.seed, 2);
    let mut seeded = || {
        let mut bytes = [0u8; 32];
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        bytes
    };
    let key_file = o.dir.join("audit.key");
    crate::lifecycle::write_key(&key_file, seeded())?;
    crate::lifecycle::write_key(&o.dir.join("tools.key"), seeded())?;
    for party in [crate::program::APPROVER, crate::program::PAYMENTS] {
        crate::lifecycle::write_key(&procs::party_key(&o.dir, party), seeded())?;
    }
    Ok(key_file)
}

impl Report {
    /// An empty report of the torture `o` describes.
    fn new(o: &Options) -> Report {
        Report {
            seed: o.seed,
            backend: if o.store.contains("postgres") || o.store.contains("host=") {
                "postgres"
            } else {
                "sqlite"
            }
            .into(),
            flavor: o.flavor.as_str().into(),
            workers: o.workers,
            ..Report::default()
        }
    }
}

/// A fault other than a worker's kill, due once this many workers were killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// SIGKILL the tool service, then start it again on its address and ledger.
    KillTools,
    /// Restart the database server.
    RestartDb,
    /// Move the resource of a run that waits on an approval, from outside.
    MoveResource,
}

/// The tool service and the faults still due, in order of the worker kill they follow.
struct Faults<'a> {
    tools: &'a mut Option<procs::Proc>,
    address: &'a str,
    schedule: Vec<(u32, Fault)>,
}

/// When each fault falls due, drawn from the seed: at worker kills spread over the run.
fn schedule(o: &Options) -> Vec<(u32, Fault)> {
    let mut rng = Rng::fork(o.seed, 3);
    let mut due = Vec::new();
    let span = u64::from(o.kills.max(1));
    for _ in 0..o.tool_kills {
        due.push((1 + rng.below(span) as u32, Fault::KillTools));
    }
    if o.db_restart.is_some() {
        for _ in 0..o.db_restarts {
            due.push((1 + rng.below(span) as u32, Fault::RestartDb));
        }
    }
    for _ in 0..o.resource_moves {
        due.push((1 + rng.below(span) as u32, Fault::MoveResource));
    }
    due.sort_by_key(|(at, _)| *at);
    due
}

/// Injects the faults due at this many worker kills.
fn inject(
    o: &Options,
    store: &mut dyn Store,
    faults: &mut Faults<'_>,
    report: &mut Report,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let killed = report.total_kills();
    while faults.schedule.first().is_some_and(|(at, _)| *at <= killed) {
        let (_, fault) = faults.schedule.remove(0);
        match fault {
            Fault::KillTools => {
                // Dropping the process kills it with SIGKILL and reaps it.
                drop(faults.tools.take());
                let started = procs::tool_service_again(
                    &o.exe,
                    &o.dir,
                    faults.address,
                    o.seed.wrapping_add(u64::from(killed)),
                    o.max_tool_delay_ms,
                    o.unknown_percent,
                )
                .map_err(|e| format!("the tool service did not start again: {e}"))?;
                *faults.tools = Some(started);
                *report
                    .faults
                    .entry("tool service killed and restarted".into())
                    .or_insert(0) += 1;
            }
            Fault::RestartDb => {
                let command = o.db_restart.as_deref().unwrap_or("false");
                progress(&format!("restarting the database: {command}"));
                let status = std::process::Command::new("sh")
                    .args(["-c", command])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .status()
                    .map_err(|e| format!("{command}: {e}"))?;
                if !status.success() {
                    return Err(format!("{command}: {status}"));
                }
                *report
                    .faults
                    .entry("database restarted".into())
                    .or_insert(0) += 1;
            }
            Fault::MoveResource => {
                if move_a_resource(o, store, faults.address) {
                    *report
                        .faults
                        .entry("resource moved from outside".into())
                        .or_insert(0) += 1;
                }
            }
        }
    }
    Ok(())
}

/// An outside writer moves the resource of the first run (by key) that waits on an approval,
/// through the tool service, which keeps each resource's version; returns whether one moved.
fn move_a_resource(o: &Options, store: &mut dyn Store, address: &str) -> bool {
    let Ok(list) = store.scan(false) else {
        return false;
    };
    let Some(waiting) = list
        .iter()
        .find(|s| s.status == crate::store::Status::Approval)
    else {
        return false;
    };
    let key = crate::auth::SharedKey::read(&o.dir.join("tools.key"), false).ok();
    let mut tools = crate::tool::TcpTools::new(address, Duration::from_secs(5), key);
    let request = crate::tool::ToolRequest::Move {
        resource: waiting.key.0.clone(),
    };
    matches!(
        crate::tool::Tools::call(&mut tools, &request),
        Ok(crate::tool::ToolReply::Version { .. })
    )
}

/// The last check: a copy of the ledger with a line in its middle damaged must be refused by
/// the tool service, naming the line, and left as it was.
fn corrupted_ledger_refused(o: &Options, report: &mut Report) {
    let ledger = o.dir.join("tools.ledger");
    let copy = o.dir.join("tools.ledger.corrupted");
    let Ok(text) = std::fs::read_to_string(&ledger) else {
        report
            .violations
            .push("the tool ledger cannot be read".into());
        return;
    };
    let mut lines: Vec<&str> = text.lines().collect();
    if lines.len() < 3 {
        return;
    }
    let middle = lines.len() / 2;
    lines[middle] = "{\"entry\":\"commit\",\"tool\"";
    let damaged = lines.join("\n") + "\n";
    if std::fs::write(&copy, &damaged).is_err() {
        report
            .violations
            .push("cannot write the corrupted ledger".into());
        return;
    }
    let out = std::process::Command::new(&o.exe)
        .args([
            "tool-service",
            "--no-auth",
            "--listen",
            "127.0.0.1:0",
            "--ledger",
        ])
        .arg(&copy)
        .stdin(std::process::Stdio::null())
        .output();
    let refused = out.as_ref().is_ok_and(|out| {
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr)
                .contains(&format!("line {} is not a ledger entry", middle + 1))
    });
    let kept = std::fs::read_to_string(&copy).is_ok_and(|t| t == damaged);
    if refused && kept {
        *report
            .faults
            .entry("corrupted ledger refused".into())
            .or_insert(0) += 1;
    } else {
        report.violations.push(format!(
            "the tool service did not refuse a ledger damaged at line {} (or changed it)",
            middle + 1
        ));
    }
    let _ = std::fs::remove_file(&copy);
}

/// The supervisor's loop: start runs, kill and restart workers, until the kills are reached
/// and every run has ended or waits on a person. Workers are stopped when it returns.
#[expect(
    clippy::too_many_arguments,
    reason = "the supervisor's whole state, passed once"
)]
fn supervise(
    o: &Options,
    spec: &WorkerSpec<'_>,
    store: &mut dyn Store,
    report: &mut Report,
    kills: &mut Vec<Kill>,
    faults: &mut Faults<'_>,
    started: Instant,
    progress: &mut dyn FnMut(&str),
) -> Result<(), String> {
    let mut rng = Rng::fork(o.seed, 1);
    let mut slots: Vec<Slot> = Vec::new();
    for i in 0..o.workers {
        let fate = procs::fate(&mut rng, o.kills > 0);
        slots.push(procs::worker(spec, i, fate).map_err(|e| e.to_string())?);
    }
    let mut made = 0u32;
    let mut last_look = Instant::now() - Duration::from_secs(1);
    let mut last_progress = Instant::now();
    loop {
        for slot in slots.iter_mut() {
            tend(slot, o, spec, store, report, kills, &mut rng)?;
        }
        inject(o, store, faults, report, progress)?;
        if last_look.elapsed() >= Duration::from_millis(20) {
            last_look = Instant::now();
            let killing = report.total_kills() < o.kills;
            let live = match top_up(store, o, killing, &mut made, &mut rng, spec.key) {
                Ok(live) => live,
                // The database is restarting: look again soon.
                Err(TopUp::Store(e)) if crate::backoff::transient(&e) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                Err(e) => return Err(e.to_string()),
            };
            if !killing && live == 0 {
                return Ok(());
            }
            if last_progress.elapsed() >= Duration::from_secs(5) {
                last_progress = Instant::now();
                let kills = report.total_kills();
                progress(&format!(
                    "{kills} kills, {made} runs started, {live} runs moving"
                ));
            }
        }
        if started.elapsed() > o.deadline {
            let list = store.scan(false).unwrap_or_default();
            report.incomplete = Some(format!(
                "the deadline of {} s passed with {} kills of {} and {} runs not settled",
                o.deadline.as_secs(),
                report.total_kills(),
                o.kills,
                list.iter().filter(|s| s.status != Status::Person).count()
            ));
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Looks after one worker slot: a dead worker is counted and replaced; a live one is killed
/// when its timer is up, or when killing is over and it still carries a plan.
fn tend(
    slot: &mut Slot,
    o: &Options,
    spec: &WorkerSpec<'_>,
    store: &mut dyn Store,
    report: &mut Report,
    kills: &mut Vec<Kill>,
    rng: &mut Rng,
) -> Result<(), String> {
    let killing = report.total_kills() < o.kills;
    match procs::reap(slot, &o.dir).map_err(|e| e.to_string())? {
        Some(Ended::Killed) => {
            let point = if slot.timer_sent {
                None
            } else {
                slot.fate.plan.map(|p| p.0)
            };
            let name = point.map_or("random", |p| p.as_str());
            *report.kills.entry(name.to_string()).or_insert(0) += 1;
            let held = held(store, &slot.owner);
            kills.push(Kill {
                at_ms: now_ms(),
                point,
                held,
            });
        }
        Some(Ended::Exited(why)) => report.violations.push(why),
        None => {
            let due = slot.fate.timer_at_ms.is_some_and(|t| now_ms() >= t);
            // Killing is over: a worker still carrying a plan is replaced by one without.
            let over = !killing && slot.fate.timer_at_ms.is_some();
            if !slot.timer_sent && (due || over) {
                let _ = slot.proc.0.kill();
                slot.timer_sent = true;
            }
            return Ok(());
        }
    }
    let fate = procs::fate(rng, report.total_kills() < o.kills);
    *slot = procs::worker(spec, slot.index, fate).map_err(|e| e.to_string())?;
    Ok(())
}

/// Starts runs until `active` are moving (while killing); returns how many are moving: not
/// ended, not waiting on a person, or with a request waiting.
fn top_up(
    store: &mut dyn Store,
    o: &Options,
    killing: bool,
    made: &mut u32,
    rng: &mut Rng,
    key: &crate::lifecycle::Key,
) -> Result<usize, TopUp> {
    let list = store.scan(false)?;
    let live = list
        .iter()
        .filter(|s| s.status != Status::Person || s.pending > 0)
        .count();
    if killing {
        for _ in live..o.active as usize {
            *made += 1;
            let program = match rng.below(3) {
                0 => Program::Seed,
                1 => Program::Order,
                _ => Program::Batch,
            };
            let name = format!("{}-{:06}", &program.as_str()[..1], *made);
            create_run(store, program, &name, 0, &Timing::default(), Some(key))?;
        }
    }
    Ok(live)
}

/// Why runs could not be started.
#[derive(Debug, thiserror::Error)]
enum TopUp {
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Drive(crate::driver::DriveError),
}

impl From<crate::driver::DriveError> for TopUp {
    fn from(e: crate::driver::DriveError) -> TopUp {
        match e {
            crate::driver::DriveError::Store(e) => TopUp::Store(e),
            e => TopUp::Drive(e),
        }
    }
}

/// The runs `owner` held when it died, with their log position.
fn held(store: &mut dyn Store, owner: &str) -> Vec<(RunKey, u64)> {
    let Ok(list) = store.scan(false) else {
        return Vec::new();
    };
    list.into_iter()
        .filter(|s| s.lease.owner.as_deref() == Some(owner))
        .filter_map(|s| store.load(&s.key).ok().flatten())
        .map(|row| (row.key, row.tail.seq))
        .collect()
}

/// For each kill, the time until the next record on each run the killed worker held.
fn recovery_times(kills: &[Kill], logs: &checks::Logs) -> Vec<u64> {
    let mut out = Vec::new();
    for k in kills {
        for (key, seq) in &k.held {
            let next = logs
                .get(&key.0)
                .and_then(|records| records.iter().find(|r| r.seq > *seq));
            if let Some(r) = next {
                out.push(r.input.at.0.saturating_sub(k.at_ms));
            }
        }
    }
    out
}
