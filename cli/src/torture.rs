//! `resumable torture`: workers, the tool service and approvers on one store, workers killed
//! with SIGKILL at seeded points and restarted, then the checks. Exit 0 when nothing was
//! violated, 1 otherwise, 2 when it could not run, 3 when its deadline passed first
//! (incomplete), 4 when asked for no kills (unexercised: it would test nothing).

use crate::output::{self, status};
use crate::runs::{ms, DAY_MS};
use resumable_runtime::driver::Flavor;
use resumable_runtime::store::postgres::PgStore;
use resumable_runtime::torture::{self, Options};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `torture`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store: an SQLite file (default: `runs.db` in the work directory) or a PostgreSQL
    /// address (`host=... #schema`). It must hold no runs (see --fresh).
    #[arg(long)]
    pub store: Option<String>,
    /// Empty the store first: delete the SQLite file, or drop the PostgreSQL schema.
    #[arg(long)]
    pub fresh: bool,
    /// Where the tool's ledger and the processes' logs go (default: a new temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Worker processes.
    #[arg(long, default_value_t = 4)]
    pub workers: u32,
    /// Approver processes (they race each other on every approval).
    #[arg(long, default_value_t = 2)]
    pub approvers: u32,
    /// Runs kept going at once while killing.
    #[arg(long, default_value_t = 24)]
    pub active: u32,
    /// Kills to reach before letting every run settle (at least 1: a torture without kills
    /// tests nothing, and exits 4, unexercised, as `check` does).
    #[arg(long, default_value_t = 1000)]
    pub kills: u32,
    /// The seed of every choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// `correct`, or a deliberately broken driver to show the checks bite:
    /// `dispatch-before-commit`, `retry-unknown-blindly`.
    #[arg(long, default_value = "correct")]
    pub flavor: String,
    /// The workers' lease, in ms: how soon a killed worker's runs are recovered.
    #[arg(long, default_value_t = 300, value_parser = ms(1, DAY_MS))]
    pub lease_ms: u64,
    /// The tool's largest delay before a commit, in ms.
    #[arg(long, default_value_t = 40)]
    pub max_tool_delay_ms: u64,
    /// Share of status queries answered "unknown", in percent (those runs go to a person).
    #[arg(long, default_value_t = 3)]
    pub unknown_percent: u64,
    /// How many times to kill the tool service with SIGKILL and start it again (at seeded
    /// worker kills).
    #[arg(long, default_value_t = 3)]
    pub tool_kills: u32,
    /// How many times to restart the database (at seeded worker kills), with
    /// `--db-restart-cmd`.
    #[arg(long, default_value_t = 0, requires = "db_restart_cmd")]
    pub db_restarts: u32,
    /// How many times an outside writer moves the resource of a run waiting on an approval
    /// (at seeded worker kills): its approval must be refused with `resource_changed`.
    #[arg(long, default_value_t = 5)]
    pub resource_moves: u32,
    /// The shell command that restarts the database server, e.g.
    /// `runtime/scripts/postgres.sh restart DIR PORT`.
    #[arg(long)]
    pub db_restart_cmd: Option<String>,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u64).range(1..=DAY_MS / 1000))]
    pub deadline_s: u64,
}

/// The exit status of a torture that would test nothing, as `check`'s for a property no
/// state exercised.
const UNEXERCISED: u8 = 4;

fn is_postgres(store: &str) -> bool {
    store.starts_with("postgres") || store.contains("host=")
}

/// The torture's directory made, and with `fresh` its store and the tool's ledger emptied
/// first, or what stopped it.
fn prepare(fresh: bool, dir: &std::path::Path, store: &str) -> Result<(), String> {
    if fresh {
        if is_postgres(store) {
            PgStore::drop_schema(store).map_err(|e| e.to_string())?;
        } else {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{store}{suffix}"));
            }
        }
        let _ = std::fs::remove_file(dir.join("tools.ledger"));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Runs the torture.
pub fn run(args: &Args) -> ExitCode {
    let Some(flavor) = Flavor::parse(&args.flavor) else {
        eprintln!("error: no driver flavour {:?}", args.flavor);
        return ExitCode::from(status::MISUSE);
    };
    if args.kills == 0 {
        eprintln!(
            "error: --kills 0: a torture without kills tests nothing (unexercised); \
             give at least 1"
        );
        return ExitCode::from(UNEXERCISED);
    }
    let dir = args.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("resumable-torture-{}", std::process::id()))
    });
    let store = args
        .store
        .clone()
        .unwrap_or_else(|| dir.join("runs.db").display().to_string());
    if let Err(e) = prepare(args.fresh, &dir, &store) {
        eprintln!("error: {e}");
        return ExitCode::from(status::MISUSE);
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("error: cannot find this program's binary: {e}");
            return ExitCode::from(status::MISUSE);
        }
    };
    let options = Options {
        exe,
        store,
        dir: dir.clone(),
        workers: args.workers.max(1),
        approvers: args.approvers,
        active: args.active.max(1),
        kills: args.kills,
        seed: args.seed,
        flavor,
        lease_ms: args.lease_ms,
        max_tool_delay_ms: args.max_tool_delay_ms,
        unknown_percent: args.unknown_percent.min(100),
        deadline: Duration::from_secs(args.deadline_s),
        tool_kills: args.tool_kills,
        db_restarts: args.db_restarts,
        resource_moves: args.resource_moves,
        db_restart: args.db_restart_cmd.clone(),
    };
    eprintln!("torture: logs and the tool's ledger in {}", dir.display());
    let mut progress = |line: &str| eprintln!("torture: {line}");
    match torture::run(&options, &mut progress) {
        Ok(report) => {
            let _ = output::print(&report.render());
            if !report.violations.is_empty() {
                ExitCode::from(status::FAIL)
            } else if report.incomplete.is_some() {
                ExitCode::from(status::INCOMPLETE)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(status::MISUSE)
        }
    }
}
