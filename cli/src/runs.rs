//! The runtime's commands for runs and tools: `start`, `worker`, `status`, `log` and
//! `tool-service`. A store is an SQLite file path or a PostgreSQL address
//! (`postgres://...` or `host=...`, optionally `#schema`).

use crate::output::{self, status};
use resumable_runtime::auth::{Parties, PartyKeys, SharedKey};
use resumable_runtime::driver::{self, Config, CrashPlan, Driver, Flavor};
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::{self, Store};
use resumable_runtime::tool::{service, TcpTools};
use resumable_runtime::{lifecycle, parties};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// A day in ms: the longest lease, tool timeout or wait a command takes.
pub const DAY_MS: u64 = 86_400_000;
/// A minute in ms: the longest pause between looks at the store.
pub const MINUTE_MS: u64 = 60_000;

/// A duration in ms from `min` to `max`: zero and absurd durations are misuse (exit 2,
/// clap's own error), never a worker that waits for ever or times out at once.
pub fn ms(min: u64, max: u64) -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(min..=max)
}

/// The store used when none is named.
pub const DEFAULT_STORE: &str = "resumable.db";

/// Opens the store for reading only, or says why not (as [`open_store`]): a missing store
/// is refused, never created.
pub fn open_read_only(address: &str) -> Result<Box<dyn Store + Send>, ExitCode> {
    store::open_read_only(address).map_err(|e| {
        eprintln!("error: {}: {e}", store::redact(address));
        match e {
            store::StoreError::Misuse(_) => ExitCode::from(status::MISUSE),
            _ => ExitCode::from(status::FAIL),
        }
    })
}

/// Opens the store for a process that runs until stopped (a worker, an approver): a server
/// that is not there now (down, restarting) is waited for with a bounded backoff, saying
/// why; any other failure is reported as [`open_store`] does.
pub fn open_store_waiting(address: &str, who: &str) -> Result<Box<dyn Store + Send>, ExitCode> {
    let mut backoff = resumable_runtime::backoff::Backoff::new();
    loop {
        match store::open(address) {
            Ok(store) => {
                backoff.succeeded(who);
                return Ok(store);
            }
            Err(e @ store::StoreError::Unavailable(_)) => {
                backoff.failed(who, &e);
            }
            Err(_) => return open_store(address),
        }
    }
}

/// Opens the store or says why not: exit status 2 for an address it cannot serve, 1 when
/// the store fails. The message never shows a password.
pub fn open_store(address: &str) -> Result<Box<dyn Store + Send>, ExitCode> {
    store::open(address).map_err(|e| {
        eprintln!("error: {}: {e}", store::redact(address));
        match e {
            store::StoreError::Misuse(_) => ExitCode::from(status::MISUSE),
            _ => ExitCode::from(status::FAIL),
        }
    })
}

/// Arguments of `start`.
#[derive(clap::Args, Debug)]
pub struct StartArgs {
    /// The store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub store: String,
    /// The agent program: `seed` (the source chapter's approval example), `order` (three
    /// calls: deduping, gated, fencing; and a callback), `batch` (three gated calls put to
    /// the approver as one batch, each decided on its own) or `bench` (32 quick calls).
    #[arg(long, default_value = "seed")]
    pub program: String,
    /// The run's name (default: `run-approval` for seed, `order-1` for order, `batch-1` for
    /// batch, `bench-1` for bench).
    #[arg(long)]
    pub run: Option<String>,
    /// The audit key file that seals the run's log (64 hex digits; made with a fresh key if
    /// it does not exist). Without it, the log is chained by SHA-256 alone.
    #[arg(long)]
    pub audit_key: Option<PathBuf>,
    /// The version of the resource the run acts on. A run that has not yet suspended has
    /// recorded version 0, so a resource that starts elsewhere cannot be reconciled before
    /// the run's first suspension.
    #[arg(long, default_value_t = 0)]
    pub resource_version: u64,
    /// A directory of the parties' key files (`NAME.key`): a fresh key (0600) is made in it
    /// for each party the program names (`approver`, `payments`, `ops`) that has none. Give
    /// the directory to workers (`worker --party-keys DIR`) and each party its own file
    /// (`approve --party-key DIR/approver.key`).
    #[arg(long)]
    pub party_keys: Option<PathBuf>,
}

/// The parties a program's runs wait on or name: its approver, its callback's sender and
/// its operator.
pub const PROGRAM_PARTIES: [&str; 3] = [
    resumable_runtime::program::APPROVER,
    resumable_runtime::program::PAYMENTS,
    resumable_runtime::program::OPERATOR,
];

/// Makes `dir` and a fresh key file in it for each of [`PROGRAM_PARTIES`] that has none;
/// an existing key is kept (read, so that a damaged one is reported now).
fn make_party_keys(dir: &std::path::Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for party in PROGRAM_PARTIES {
        SharedKey::read(&dir.join(format!("{party}.key")), true)?;
    }
    Ok(())
}

/// What to tell someone who gave neither a party key nor the opt-out: `what` is the flag
/// they lack and what it takes.
pub fn no_party_key(command: &str, what: &str) -> String {
    format!(
        "{command} needs {what}: a worker feeds the kernel only decisions sealed by the party \
         that sends them. `start --party-keys DIR` makes a key for each party (DIR/NAME.key); \
         --unauthenticated-parties goes without, and lets anyone who can write the store \
         decide as any party"
    )
}

/// Creates a run.
pub fn start(args: &StartArgs) -> ExitCode {
    let Some(program) = Program::parse(&args.program) else {
        let known: Vec<&str> = Program::ALL.iter().map(|p| p.as_str()).collect();
        eprintln!(
            "error: no program {:?}; programs: {}",
            args.program,
            known.join(", ")
        );
        return ExitCode::from(status::MISUSE);
    };
    let name = args.run.clone().unwrap_or_else(|| match program {
        Program::Seed => "run-approval".to_string(),
        Program::Order => "order-1".to_string(),
        Program::Bench => "bench-1".to_string(),
        Program::Batch => "batch-1".to_string(),
    });
    let mut store = match open_store(&args.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let key = match args
        .audit_key
        .as_deref()
        .map(|p| lifecycle::read_key(p, true))
    {
        None => None,
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => {
            eprintln!("error: audit key: {e}");
            return ExitCode::from(status::MISUSE);
        }
    };
    if let Some(dir) = &args.party_keys {
        if let Err(e) = make_party_keys(dir) {
            eprintln!("error: party keys: {e}");
            return ExitCode::from(status::MISUSE);
        }
    }
    let timing = Timing::default();
    let made = driver::create_run(
        &mut *store,
        program,
        &name,
        args.resource_version,
        &timing,
        key.as_ref(),
    );
    match made {
        Ok(Some(key)) => {
            match output::say(&format!("created {key} ({} program)", program.as_str())) {
                Ok(()) => ExitCode::SUCCESS,
                Err(lost) => lost,
            }
        }
        Ok(None) => {
            eprintln!("error: a run named {name} of that tenant and session exists already");
            ExitCode::from(status::FAIL)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(status::MISUSE)
        }
    }
}

/// Arguments of `worker`.
#[derive(clap::Args, Debug)]
pub struct WorkerArgs {
    /// The store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub store: String,
    /// The tool service's address (`host:port`).
    #[arg(long)]
    pub tools: String,
    /// The worker's name; the process id is appended, so a restarted worker is a new holder.
    #[arg(long, default_value = "worker")]
    pub id: String,
    /// How long a hold on a run lasts past its last commit, in ms. A worker whose lease
    /// lapsed is taken for dead: its runs are recovered by others.
    #[arg(long, default_value_t = 2000, value_parser = ms(1, DAY_MS))]
    pub lease_ms: u64,
    /// How long to wait for a tool's answer, in ms: shorter than the lease (default: half
    /// the lease).
    #[arg(long, value_parser = ms(1, DAY_MS))]
    pub tool_timeout_ms: Option<u64>,
    /// Stop once nothing can move without someone outside (an approver, a callback, a person).
    #[arg(long)]
    pub until_quiescent: bool,
    /// Be killed with SIGKILL at the Nth visit of a point: `before-commit`, `after-commit`,
    /// `after-send`, `after-answer`, `between-dispatches` (a batch's) or `after-query`, e.g.
    /// `after-commit:3`. For the torture.
    #[arg(long)]
    pub crash_at: Option<String>,
    /// `correct`, or a deliberately broken driver: `dispatch-before-commit`,
    /// `retry-unknown-blindly`. For showing that the torture catches them.
    #[arg(long, default_value = "correct")]
    pub flavor: String,
    /// A directory of the parties' key files (`NAME.key`, made by `start --party-keys DIR`):
    /// the worker feeds the kernel only requests sealed by the party that sent them and
    /// naming no one else, and answers any other `unauthenticated`, without a record.
    /// Required, unless --unauthenticated-parties.
    #[arg(long)]
    pub party_keys: Option<PathBuf>,
    /// Feed the kernel every request, whatever party it names and whether sealed or not:
    /// anyone who can write the store can then approve, deny, call back, intervene or cancel
    /// as any party. For a deployment that authenticates parties in front of the store.
    #[arg(long, conflicts_with = "party_keys")]
    pub unauthenticated_parties: bool,
    /// The tool service's key file (its `--key`), to prove this worker may use it.
    #[arg(long)]
    pub tools_key: Option<PathBuf>,
    /// The audit key file that seals every record this worker writes (the runs' key).
    #[arg(long)]
    pub audit_key: Option<PathBuf>,
    /// Pause between passes that found nothing to do, in ms.
    #[arg(long, default_value_t = 10, value_parser = ms(1, MINUTE_MS))]
    pub poll_ms: u64,
    /// Where in the run list this worker starts each pass (spreads workers out).
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
}

/// Drives runs.
pub fn worker(args: &WorkerArgs) -> ExitCode {
    let (config, tools_key, timeout) = match worker_config(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(status::MISUSE);
        }
    };
    let store = match open_store_waiting(&args.store, &format!("worker {}", args.id)) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut driver = Driver::new(
        store,
        TcpTools::new(&args.tools, timeout, tools_key),
        config,
    );
    if let Parties::Unauthenticated = driver.config().parties {
        eprintln!(
            "worker {}: WARNING: feeding unauthenticated decisions (--unauthenticated-parties): \
             anyone who can write the store can approve, deny, call back, intervene or cancel \
             as any party",
            driver.config().owner
        );
    }
    let poll = Duration::from_millis(args.poll_ms);
    let worked = driver.work(args.offset, poll, args.until_quiescent);
    match worked {
        Ok(()) => match output::say(&format!(
            "{} steps committed; every run has ended or waits on someone outside",
            driver.commits()
        )) {
            Ok(()) => ExitCode::SUCCESS,
            Err(lost) => lost,
        },
        Err(e @ driver::DriveError::Key { .. }) => {
            eprintln!("error: worker {} refuses run {e}", driver.config().owner);
            ExitCode::from(status::MISUSE)
        }
        Err(e) => {
            eprintln!("error: worker {}: {e}", driver.config().owner);
            ExitCode::from(status::FAIL)
        }
    }
}

/// How long a worker waits for a tool's answer: shorter than its lease, or a live worker
/// would be taken for dead; the message says so when it is not.
fn tool_timeout_ms(args: &WorkerArgs) -> Result<u64, String> {
    let timeout_ms = args.tool_timeout_ms.unwrap_or(args.lease_ms / 2).max(1);
    if timeout_ms >= args.lease_ms {
        return Err(format!(
            "--tool-timeout-ms {timeout_ms} is not shorter than --lease-ms {}: a worker \
             waiting that long for a tool would be taken for dead",
            args.lease_ms
        ));
    }
    Ok(timeout_ms)
}

/// The worker's configuration, the tool service's key and how long to wait for a tool, from
/// its flags, or what is wrong with them.
fn worker_config(args: &WorkerArgs) -> Result<(Config, Option<SharedKey>, Duration), String> {
    let flavor =
        Flavor::parse(&args.flavor).ok_or(format!("no driver flavour {:?}", args.flavor))?;
    let crash = match args.crash_at.as_deref().map(CrashPlan::parse) {
        None => CrashPlan::none(),
        Some(Some(plan)) => plan,
        Some(None) => return Err("--crash-at takes POINT:N, e.g. after-commit:3".into()),
    };
    let key = (args.audit_key.as_deref())
        .map(|p| lifecycle::read_key(p, false))
        .transpose()
        .map_err(|e| format!("audit key: {e}"))?;
    let tools_key = (args.tools_key.as_deref())
        .map(|p| SharedKey::read(p, false))
        .transpose()
        .map_err(|e| format!("tools key: {e}"))?;
    let parties = match (args.party_keys.as_deref(), args.unauthenticated_parties) {
        (Some(dir), _) => {
            Parties::Authenticated(PartyKeys::load(dir).map_err(|e| format!("party keys: {e}"))?)
        }
        (None, true) => Parties::Unauthenticated,
        (None, false) => {
            return Err(no_party_key(
                "a worker",
                "--party-keys DIR (the parties' keys, one NAME.key each)",
            ))
        }
    };
    let timeout = Duration::from_millis(tool_timeout_ms(args)?);
    let config = Config {
        owner: format!("{}.{}", args.id, std::process::id()),
        lease_ms: args.lease_ms,
        timing: Timing::default(),
        flavor,
        crash,
        key,
        parties,
    };
    Ok((config, tools_key, timeout))
}

/// Arguments of `status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The store (opened for reading only: it must exist).
    #[arg(long, default_value = DEFAULT_STORE)]
    pub store: String,
    /// One run (its name or full key); all runs if absent.
    #[arg(long)]
    pub run: Option<String>,
    /// Print the run's stored checkpoint as JSON (what its responsible party was handed).
    #[arg(long, requires = "run")]
    pub checkpoint: bool,
    /// Only runs that wait on a party outside the runtime: an approver, a callback's sender,
    /// a person, a resource's owner.
    #[arg(long)]
    pub waiting: bool,
    /// Only runs that wait on this party (e.g. `approver`, `payments`, `ops`).
    #[arg(long = "party")]
    pub party: Option<String>,
    /// Only suspended runs whose suspension expires within this many ms (or has expired
    /// and is not yet failed by a worker).
    #[arg(long, value_parser = ms(0, 366 * DAY_MS))]
    pub expiring_ms: Option<u64>,
}

/// Whether `row` passes the filters of `args` at `now`.
fn shown(args: &StatusArgs, row: &store::Row, now: u64) -> bool {
    let party = parties::waits_on(row);
    if (args.waiting || args.party.is_some()) && party.is_none() {
        return false;
    }
    if let Some(wanted) = &args.party {
        if party.is_none_or(|p| p.as_str() != wanted) {
            return false;
        }
    }
    if let Some(within) = args.expiring_ms {
        match row.run.phase() {
            resumable_kernel::Phase::Suspended(s)
                if s.expires_at.0 <= now.saturating_add(within) => {}
            _ => return false,
        }
    }
    true
}

/// Shows where runs are and who they wait on.
pub fn status(args: &StatusArgs) -> ExitCode {
    let mut store = match open_read_only(&args.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut out = output::Out::stdout();
    let now = resumable_runtime::rng::now_ms();
    let result = (|| -> Result<Result<(), output::Ended>, parties::PartyError> {
        let rows = match &args.run {
            Some(run) => vec![parties::resolve(&mut *store, run)?],
            None => {
                let mut rows = Vec::new();
                for s in store.scan(true)? {
                    rows.extend(store.load(&s.key)?);
                }
                rows
            }
        };
        for row in rows.iter().filter(|r| shown(args, r, now)) {
            let line = if args.checkpoint {
                let cp = row.checkpoint.map(|c| serde_json::to_string(&c));
                cp.and_then(Result::ok).unwrap_or_else(|| "null".into())
            } else {
                parties::describe(row, now)
            };
            if let Err(ended) = out.write(format!("{line}\n").as_bytes()) {
                return Ok(Err(ended));
            }
            if args.checkpoint {
                continue;
            }
            for r in store.inbox(&row.key, false)? {
                let answer = match r.answer {
                    None => "queued, not yet decided".to_string(),
                    Some(a) => format!("{} (audit record {})", answer_words(&a.answer), a.seq),
                };
                let line = format!(
                    "  request #{} from {} at {}: {answer}\n",
                    r.id,
                    r.party,
                    parties::date(r.submitted_ms)
                );
                if let Err(ended) = out.write(line.as_bytes()) {
                    return Ok(Err(ended));
                }
            }
        }
        Ok(out.flush())
    })();
    match result {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(ended)) => {
            output::ended(output::Format::Text, ended, "the status", ExitCode::SUCCESS)
        }
        Err(e) => party_exit(Err(e)),
    }
}

/// The kernel's answer to a request, in words: `accepted (revision N)` or
/// `refused: NAME (why)`, NAME the kernel's snake_case name of the rejection.
fn answer_words(answer: &store::Answer) -> String {
    match answer {
        store::Answer::Accepted(rev) => format!("accepted (revision {})", rev.0),
        store::Answer::Unauthenticated => {
            "refused: unauthenticated (not sealed with its sender's key, or naming another \
             party; no audit record)"
                .to_string()
        }
        store::Answer::Rejected(r) => {
            let json = serde_json::to_value(r).unwrap_or_default();
            let name = json
                .get("rejection")
                .and_then(|v| v.as_str())
                .unwrap_or("?");
            format!("refused: {name} ({r})")
        }
    }
}

/// The exit status of a party's command: 2 for misuse, 1 for a store failure.
pub fn party_exit(result: Result<(), parties::PartyError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(parties::PartyError::Misuse(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(status::MISUSE)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(status::FAIL)
        }
    }
}

/// Arguments of `log`.
#[derive(clap::Args, Debug)]
pub struct LogArgs {
    /// The store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub store: String,
    /// The run (its name or full key).
    #[arg(long)]
    pub run: String,
    /// Write the log to this file instead of stdout.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Also write the anchor stored with the run (`{"records":N,"mac":"..."}`), for
    /// `validate --anchor FILE`.
    #[arg(long)]
    pub anchor_out: Option<PathBuf>,
}

/// Writes a run's audit log (format: spec/audit-log.md), ready for `validate`.
pub fn log(args: &LogArgs) -> ExitCode {
    let mut store = match open_read_only(&args.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let result = (|| -> Result<(), parties::PartyError> {
        let row = parties::resolve(&mut *store, &args.run)?;
        let mut bytes = Vec::new();
        for line in store.log(&row.key)? {
            bytes.extend_from_slice(&line);
            bytes.push(b'\n');
        }
        let written = match &args.out {
            Some(path) => std::fs::write(path, &bytes),
            None => std::io::stdout().lock().write_all(&bytes),
        };
        let anchor = format!(
            "{{\"records\":{},\"mac\":\"{}\"}}\n",
            row.tail.seq, row.tail.digest
        );
        let written = written.and_then(|()| match &args.anchor_out {
            Some(path) => std::fs::write(path, anchor),
            None => Ok(()),
        });
        written.map_err(|e| parties::PartyError::Misuse(format!("cannot write the log: {e}")))
    })();
    party_exit(result)
}

/// Arguments of `tool-service`.
#[derive(clap::Args, Debug)]
pub struct ToolServiceArgs {
    /// The ledger file (JSON lines, fsync'd): every commit and every fence.
    #[arg(long, default_value = "tools.ledger")]
    pub ledger: PathBuf,
    /// Where to listen (loopback by default; port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:7411")]
    pub listen: String,
    /// Seed of the delays and of the unknown answers.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Each dispatch commits after a random delay of up to this many ms.
    #[arg(long, default_value_t = 0)]
    pub max_delay_ms: u64,
    /// Share of status queries, in percent, answered "unknown".
    #[arg(long, default_value_t = 0)]
    pub unknown_percent: u64,
    /// The key file clients must prove they hold (64 hex digits; made, 0600, if it does not
    /// exist): workers give it with `--tools-key`.
    #[arg(long, required_unless_present = "no_auth")]
    pub key: Option<PathBuf>,
    /// Serve anyone who can connect, without a key: any local user could then commit under
    /// any key. For a service only its workers can reach.
    #[arg(long, conflicts_with = "key")]
    pub no_auth: bool,
}

/// Serves tool calls until stopped.
pub fn tool_service(args: &ToolServiceArgs) -> ExitCode {
    let key = match &args.key {
        None => None,
        Some(path) => match SharedKey::read(path, true) {
            Ok(key) => Some(key),
            Err(e) => {
                eprintln!("error: tool service key: {e}");
                return ExitCode::from(status::MISUSE);
            }
        },
    };
    if key.is_none() {
        eprintln!(
            "tool service: serving without authentication (--no-auth): anyone who can \
             connect can commit under any key"
        );
    }
    let config = service::Config {
        key,
        ledger: args.ledger.clone(),
        listen: args.listen.clone(),
        seed: args.seed,
        max_delay_ms: args.max_delay_ms,
        unknown_percent: args.unknown_percent.min(100),
    };
    match service::serve(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: tool service: {e}");
            ExitCode::from(status::FAIL)
        }
    }
}
