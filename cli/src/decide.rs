//! The commands of people and outside systems, deciding through the store: `approve`,
//! `deny`, `callback`, `intervene`, `cancel`, and `approver` (an approver that watches).
//! Each puts a request in the run's inbox; a worker feeds it to the kernel and stores the
//! answer with it. With `--wait-ms`, the command waits for that answer and prints it.

use crate::output::{self, status};
use crate::runs::{
    ms, no_party_key, open_store, open_store_waiting, party_exit, DAY_MS, DEFAULT_STORE, MINUTE_MS,
};

/// A year in ms: the longest a decision stays valid.
const YEAR_MS: u64 = 366 * DAY_MS;
use resumable_kernel::{Digest, Resolution};
use resumable_runtime::auth::SharedKey;
use resumable_runtime::bounded;
use resumable_runtime::parties::{self, watch, PartyError};
use resumable_runtime::rng::now_ms;
use resumable_runtime::store::{Answer, Answered, Request, Row, RunKey, Store};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Where a request goes, and whether to wait for its answer.
#[derive(clap::Args, Debug)]
pub struct Target {
    /// The store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub store: String,
    /// The run (its name or full key).
    #[arg(long)]
    pub run: String,
    /// Wait up to this many ms for a worker's answer and print it (exit 1 if refused, 3 if
    /// no answer came in time).
    #[arg(long, default_value_t = 0, value_parser = ms(0, DAY_MS))]
    pub wait_ms: u64,
    /// The party's own key file (`DIR/NAME.key`, made by `start --party-keys DIR`): the
    /// request is sealed with it, and a worker feeds only requests sealed by their sender.
    /// Required, unless --unauthenticated-parties.
    #[arg(long)]
    pub party_key: Option<PathBuf>,
    /// Send the request unsealed: only a worker started with --unauthenticated-parties
    /// feeds it; one that checks parties answers it `unauthenticated`.
    #[arg(long, conflicts_with = "party_key")]
    pub unauthenticated_parties: bool,
}

/// Arguments of `approve` and `deny`.
#[derive(clap::Args, Debug)]
pub struct ApproveArgs {
    #[command(flatten)]
    pub target: Target,
    /// Who decides.
    #[arg(long = "as", default_value = "approver")]
    pub party: String,
    /// How long the decision stays valid, in ms (at most a year).
    #[arg(long, default_value_t = 600_000, value_parser = ms(1, YEAR_MS))]
    pub valid_ms: u64,
    /// Decide on this checkpoint (JSON, e.g. from `status --checkpoint`, perhaps an old or an
    /// edited one) instead of the one stored with the run.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
}

/// Arguments of `callback`.
#[derive(clap::Args, Debug)]
pub struct CallbackArgs {
    #[command(flatten)]
    pub target: Target,
    /// The callback's payload (its digest is recorded).
    #[arg(long, default_value = "settled")]
    pub payload: String,
    /// Who sends it.
    #[arg(long = "as", default_value = "payments")]
    pub party: String,
}

/// Arguments of `intervene`.
#[derive(clap::Args, Debug)]
pub struct InterveneArgs {
    #[command(flatten)]
    pub target: Target,
    /// `committed` (the effect happened: give its result with --result), `continue`
    /// (it did not and will not happen) or `abandon`.
    #[arg(long)]
    pub resolution: String,
    /// For `committed`: the result, as text (its digest is recorded).
    #[arg(long)]
    pub result: Option<String>,
    /// Who resolves it (the run's operator).
    #[arg(long = "as", default_value = "ops")]
    pub party: String,
}

/// Arguments of `cancel`.
#[derive(clap::Args, Debug)]
pub struct CancelArgs {
    #[command(flatten)]
    pub target: Target,
    /// Who cancels.
    #[arg(long = "as", default_value = "ops")]
    pub party: String,
}

/// Arguments of `approver`.
#[derive(clap::Args, Debug)]
pub struct ApproverArgs {
    /// The store.
    #[arg(long, default_value = DEFAULT_STORE)]
    pub store: String,
    /// Who decides.
    #[arg(long = "as", default_value = "approver")]
    pub party: String,
    /// Seed of its choices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Share of decisions, in percent, that deny (for a batch, of its calls' decisions; of
    /// the others it rejects 30 percent and approves the rest).
    #[arg(long, default_value_t = 0)]
    pub deny_percent: u64,
    /// Share of decisions, in percent, sent twice.
    #[arg(long, default_value_t = 0)]
    pub duplicate_percent: u64,
    /// Also send the callbacks runs wait for (as their payment system).
    #[arg(long)]
    pub callbacks: bool,
    /// Look this many times, then stop (default: until stopped).
    #[arg(long)]
    pub rounds: Option<u64>,
    /// Pause between looks, in ms.
    #[arg(long, default_value_t = 20, value_parser = ms(1, MINUTE_MS))]
    pub poll_ms: u64,
    /// Its own key file, to seal each request with. Required, unless
    /// --unauthenticated-parties.
    #[arg(long)]
    pub party_key: Option<PathBuf>,
    /// Send the callbacks as this party (the payment system) instead of as itself.
    #[arg(long, requires = "callbacks")]
    pub callback_as: Option<String>,
    /// That party's key file, to seal the callbacks with. Required with --callback-as,
    /// unless --unauthenticated-parties.
    #[arg(long, requires = "callback_as")]
    pub callback_key: Option<PathBuf>,
    /// Send every request unsealed: only a worker started with --unauthenticated-parties
    /// feeds them.
    #[arg(long, conflicts_with_all = ["party_key", "callback_key"])]
    pub unauthenticated_parties: bool,
}

/// The key `path` names, or `None` when the opt-out was given; without either, or with a
/// key that cannot be read, what to say (exit 2).
fn party_key(
    path: Option<&std::path::Path>,
    unauthenticated: bool,
    party: &str,
    flag: &str,
) -> Result<Option<SharedKey>, ExitCode> {
    match path {
        Some(path) => match SharedKey::read(path, false) {
            Ok(key) => Ok(Some(key)),
            Err(e) => {
                eprintln!("error: party key: {e}");
                Err(ExitCode::from(status::MISUSE))
            }
        },
        None if unauthenticated => Ok(None),
        None => {
            eprintln!(
                "error: {}",
                no_party_key(
                    &format!("a request sent as {party}"),
                    &format!("{flag} FILE (the key of {party}, e.g. DIR/{party}.key)")
                )
            );
            Err(ExitCode::from(status::MISUSE))
        }
    }
}

fn submit(
    target: &Target,
    party: &str,
    make: impl FnOnce(&Row) -> Result<Request, PartyError>,
) -> ExitCode {
    let key = match party_key(
        target.party_key.as_deref(),
        target.unauthenticated_parties,
        party,
        "--party-key",
    ) {
        Ok(key) => key,
        Err(code) => return code,
    };
    let mut store = match open_store(&target.store) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let submitted = (|| -> Result<(u64, RunKey), PartyError> {
        let row = parties::resolve(&mut *store, &target.run)?;
        let request = make(&row)?;
        let seal = key.as_ref().map(|k| k.seal(&row.key, party, &request));
        let id = store.submit_sealed(&row.key, party, now_ms(), &request, seal)?;
        Ok((id, row.key))
    })();
    let (id, key) = match submitted {
        Ok(sent) => sent,
        Err(e) => return party_exit(Err(e)),
    };
    let head = format!("request #{id} for {key} sent by {party}");
    let mut waited = None;
    if target.wait_ms > 0 {
        // The request's number first: it is in the store whatever the wait brings.
        let line = format!(
            "{head}; waiting up to {} ms for a worker's answer",
            target.wait_ms
        );
        if let Err(lost) = output::say(&line) {
            return lost;
        }
        let wait = Duration::from_millis(target.wait_ms);
        match parties::wait_answer(&mut *store as &mut dyn Store, &key, id, wait) {
            Ok(answer) => waited = Some(answer),
            Err(e) => return party_exit(Err(e)),
        }
    }
    let (line, code) = outcome(target, &head, &key, waited);
    match output::say(&line) {
        Ok(()) => ExitCode::from(code),
        Err(lost) => lost,
    }
}

/// What a submitted request came to, as the line said and the exit status: queued (no wait),
/// unanswered within the wait, or the worker's answer.
fn outcome(
    target: &Target,
    head: &str,
    key: &RunKey,
    waited: Option<Option<Answered>>,
) -> (String, u8) {
    match waited {
        None => (
            format!(
                "{head}: queued, not yet decided (a worker decides it: `status --run {key}` \
                 shows the answer, --wait-ms waits for it)"
            ),
            status::PASS,
        ),
        Some(None) => (
            format!(
                "no answer within {} ms: is a worker running?",
                target.wait_ms
            ),
            status::INCOMPLETE,
        ),
        Some(Some(Answered {
            answer: Answer::Accepted(rev),
            seq,
        })) => (
            format!(
                "accepted: the run is at revision {} (audit record {seq})",
                rev.0
            ),
            status::PASS,
        ),
        Some(Some(Answered {
            answer: Answer::Unauthenticated,
            ..
        })) => (
            "refused: unauthenticated (not sealed with this party's key, or naming another \
             party; no audit record)"
                .to_string(),
            status::FAIL,
        ),
        Some(Some(Answered {
            answer: Answer::Rejected(r),
            seq,
        })) => {
            let evidence = serde_json::to_string(&r).unwrap_or_default();
            (
                format!("refused: {evidence} (audit record {seq})"),
                status::FAIL,
            )
        }
    }
}

/// Approves (or, with `approve` false, denies) the call a run waits on, or every call of its
/// batch that no decision has reached yet.
pub fn approve(args: &ApproveArgs, approve: bool) -> ExitCode {
    let checkpoint = match &args.checkpoint {
        None => None,
        Some(path) => match bounded::read_file(path, bounded::CHECKPOINT_FILE_BYTES)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(cp) => Some(cp),
            Err(e) => {
                eprintln!("error: {}: not a checkpoint: {e}", path.display());
                return ExitCode::from(status::MISUSE);
            }
        },
    };
    submit(&args.target, &args.party, |row| {
        parties::approval(row, checkpoint, &args.party, approve, args.valid_ms)
    })
}

/// Sends the callback a run waits for.
pub fn callback(args: &CallbackArgs) -> ExitCode {
    submit(&args.target, &args.party, |row| {
        parties::callback(row, &args.payload)
    })
}

/// Resolves a manual intervention.
pub fn intervene(args: &InterveneArgs) -> ExitCode {
    let resolution = match (args.resolution.as_str(), &args.result) {
        ("committed", Some(r)) => Resolution::Committed {
            result: Digest::of(r.as_bytes()),
        },
        ("continue", None) => Resolution::Continue,
        ("abandon", None) => Resolution::Abandon,
        _ => {
            eprintln!("error: --resolution is committed (with --result), continue or abandon");
            return ExitCode::from(status::MISUSE);
        }
    };
    submit(&args.target, &args.party, |row| {
        parties::intervene(row, &args.party, resolution)
    })
}

/// Cancels a run.
pub fn cancel(args: &CancelArgs) -> ExitCode {
    submit(&args.target, &args.party, |_| parties::cancel(&args.party))
}

/// Watches the store and decides on every approval (and callback) it sees.
pub fn approver(args: &ApproverArgs) -> ExitCode {
    let unauthenticated = args.unauthenticated_parties;
    let key = match party_key(
        args.party_key.as_deref(),
        unauthenticated,
        &args.party,
        "--party-key",
    ) {
        Ok(key) => key,
        Err(code) => return code,
    };
    let callback_key = match &args.callback_as {
        None => None,
        Some(payer) => match party_key(
            args.callback_key.as_deref(),
            unauthenticated,
            payer,
            "--callback-key",
        ) {
            Ok(key) => key,
            Err(code) => return code,
        },
    };
    let mut store = match open_store_waiting(&args.store, &args.party) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let w = watch::Watch {
        name: args.party.clone(),
        seed: args.seed,
        deny_percent: args.deny_percent.min(100),
        duplicate_percent: args.duplicate_percent.min(100),
        callbacks: args.callbacks,
        valid_ms: 600_000,
        poll: Duration::from_millis(args.poll_ms),
        key,
        callback_as: args.callback_as.clone().map(|name| (name, callback_key)),
    };
    match watch::watch(&mut *store, &w, args.rounds) {
        Ok(sent) => output::say(&format!("{sent} requests sent"))
            .map_or_else(|lost| lost, |()| ExitCode::SUCCESS),
        Err(e) => party_exit(Err(e)),
    }
}
