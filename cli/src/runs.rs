//! The runtime's commands for runs and tools: `start`, `worker`, `status`, `log` and
//! `tool-service`. A store is an SQLite file path or a PostgreSQL address
//! (`postgres://...` or `host=...`, optionally `#schema`).

use crate::output::{self, status};
use resumable_runtime::driver::{self, Config, CrashPlan, Driver, Flavor};
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::{self, Store};
use resumable_runtime::tool::{service, TcpTools};
use resumable_runtime::{lifecycle, parties};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The store used when none is named.
pub const DEFAULT_STORE: &str = "resumable.db";

/// Opens the store or says why not (exit status 1).
pub fn open_store(address: &str) -> Result<Box<dyn Store + Send>, ExitCode> {
    store::open(address).map_err(|e| {
        eprintln!("error: {address}: {e}");
        ExitCode::from(status::FAIL)
    })
}

/// Arguments of `start`.
#[derive(clap::Args, Debug)]
pub struct StartArgs {
    /// The store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub store: String,
    /// The agent program: `seed` (the source chapter's approval example), `order` (three
    /// calls: deduping, gated, fencing; and a callback) or `bench` (32 quick calls).
    #[arg(long, default_value = "seed")]
    pub program: String,
    /// The run's name (default: `run-approval` for seed, `order-1` for order).
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
}

/// Creates a run.
pub fn start(args: &StartArgs) -> ExitCode {
    let Some(program) = Program::parse(&args.program) else {
        eprintln!(
            "error: no program {:?}; programs: seed, order",
            args.program
        );
        return ExitCode::from(status::MISUSE);
    };
    let name = args.run.clone().unwrap_or_else(|| match program {
        Program::Seed => "run-approval".to_string(),
        Program::Order => "order-1".to_string(),
        Program::Bench => "bench-1".to_string(),
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
            output::say(&format!("created {key} ({} program)", program.as_str()));
            ExitCode::SUCCESS
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
    #[arg(long, default_value_t = 2000)]
    pub lease_ms: u64,
    /// How long to wait for a tool's answer, in ms (default: half the lease).
    #[arg(long)]
    pub tool_timeout_ms: Option<u64>,
    /// Stop once nothing can move without someone outside (an approver, a callback, a person).
    #[arg(long)]
    pub until_quiescent: bool,
    /// Be killed with SIGKILL at the Nth visit of a point: `before-commit`, `after-commit`,
    /// `after-send`, `after-answer` or `after-query`, e.g. `after-commit:3`. For the torture.
    #[arg(long)]
    pub crash_at: Option<String>,
    /// `correct`, or a deliberately broken driver: `dispatch-before-commit`,
    /// `retry-unknown-blindly`. For showing that the torture catches them.
    #[arg(long, default_value = "correct")]
    pub flavor: String,
    /// The audit key file that seals every record this worker writes (the runs' key).
    #[arg(long)]
    pub audit_key: Option<PathBuf>,
    /// Pause between passes that found nothing to do, in ms.
    #[arg(long, default_value_t = 10)]
    pub poll_ms: u64,
    /// Where in the run list this worker starts each pass (spreads workers out).
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
}

/// Drives runs.
pub fn worker(args: &WorkerArgs) -> ExitCode {
    let Some(flavor) = Flavor::parse(&args.flavor) else {
        eprintln!("error: no driver flavour {:?}", args.flavor);
        return ExitCode::from(status::MISUSE);
    };
    let crash = match args.crash_at.as_deref().map(CrashPlan::parse) {
        None => CrashPlan::none(),
        Some(Some(plan)) => plan,
        Some(None) => {
            eprintln!("error: --crash-at takes POINT:N, e.g. after-commit:3");
            return ExitCode::from(status::MISUSE);
        }
    };
    let key = match args
        .audit_key
        .as_deref()
        .map(|p| lifecycle::read_key(p, false))
    {
        None => None,
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => {
            eprintln!("error: audit key: {e}");
            return ExitCode::from(status::MISUSE);
        }
    };
    let store = match open_store(&args.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let timeout = Duration::from_millis(args.tool_timeout_ms.unwrap_or(args.lease_ms / 2));
    let config = Config {
        owner: format!("{}.{}", args.id, std::process::id()),
        lease_ms: args.lease_ms,
        timing: Timing::default(),
        flavor,
        crash,
        key,
    };
    let mut driver = Driver::new(store, TcpTools::new(&args.tools, timeout), config);
    let poll = Duration::from_millis(args.poll_ms);
    match driver.work(args.offset, poll, args.until_quiescent) {
        Ok(()) => {
            output::say(&format!(
                "{} steps committed; every run has ended or waits on someone outside",
                driver.commits()
            ));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: worker {}: {e}", driver.config().owner);
            ExitCode::from(status::FAIL)
        }
    }
}

/// Arguments of `status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub store: String,
    /// One run (its name or full key); all runs if absent.
    #[arg(long)]
    pub run: Option<String>,
    /// Print the run's stored checkpoint as JSON (what its responsible party was handed).
    #[arg(long, requires = "run")]
    pub checkpoint: bool,
}

/// Shows where runs are and who they wait on.
pub fn status(args: &StatusArgs) -> ExitCode {
    let mut store = match open_store(&args.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let result = (|| -> Result<(), parties::PartyError> {
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
        let mut out = std::io::stdout().lock();
        for row in &rows {
            // A closed pipe (`| head`) ends the listing quietly.
            let line = if args.checkpoint {
                let cp = row.checkpoint.map(|c| serde_json::to_string(&c));
                cp.and_then(Result::ok).unwrap_or_else(|| "null".into())
            } else {
                parties::describe(row)
            };
            if writeln!(out, "{line}").is_err() {
                return Ok(());
            }
            if args.checkpoint {
                continue;
            }
            for r in store.inbox(&row.key, false)? {
                let answer = match r.answer {
                    None => "waiting for a worker".to_string(),
                    Some(a) => format!(
                        "{} (audit record {})",
                        serde_json::to_string(&a.answer).unwrap_or_default(),
                        a.seq
                    ),
                };
                let _ = writeln!(out, "  request #{} from {}: {answer}", r.id, r.party);
            }
        }
        Ok(())
    })();
    party_exit(result)
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
    let mut store = match open_store(&args.store) {
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
}

/// Serves tool calls until stopped.
pub fn tool_service(args: &ToolServiceArgs) -> ExitCode {
    let config = service::Config {
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
