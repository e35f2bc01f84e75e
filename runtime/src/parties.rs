//! People and outside systems: approvers, operators, a callback's sender. They never touch
//! a run: they read what the store shows (the checkpoint they were handed), put a request in
//! the run's inbox, and a worker feeds it to the kernel, which accepts it or says why not.
//! The answer is stored with the request, in the transaction that records it in the log.

use crate::rng::now_ms;
use crate::store::{Answered, Request, Row, RunKey, Status, Store, StoreError};
use resumable_kernel::{
    Approval, Checkpoint, Decision, Digest, Name, Phase, Reason, Resolution, Time,
};
use std::time::{Duration, Instant};

pub mod watch;

/// Why a party's request could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PartyError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request makes no sense as asked (no such run, nothing to approve, a bad name).
    #[error("{0}")]
    Misuse(String),
}

/// The run named `run`: a full key `tenant/session/run`, or a run name that only one run has.
pub fn resolve(store: &mut dyn Store, run: &str) -> Result<Row, PartyError> {
    let key = if run.contains('/') {
        RunKey(run.to_string())
    } else {
        let matches: Vec<RunKey> = store
            .scan(true)?
            .into_iter()
            .map(|s| s.key)
            .filter(|k| k.0.rsplit('/').next() == Some(run))
            .collect();
        match matches.len() {
            1 => matches
                .into_iter()
                .next()
                .unwrap_or_else(|| RunKey(String::new())),
            0 => return Err(PartyError::Misuse(format!("no run named {run}"))),
            _ => {
                return Err(PartyError::Misuse(format!(
                    "several runs are named {run}; give the full key tenant/session/run"
                )))
            }
        }
    };
    store
        .load(&key)?
        .ok_or_else(|| PartyError::Misuse(format!("no run {key}")))
}

fn party(name: &str) -> Result<Name, PartyError> {
    Name::new(name).map_err(|e| PartyError::Misuse(format!("party {name:?}: {e}")))
}

/// The checkpoint the run's responsible party was handed, if it waits for `status`.
fn handed(row: &Row, status: Status) -> Result<Checkpoint, PartyError> {
    let now = crate::store::status_of(&row.run);
    match row.checkpoint {
        Some(cp) if now == status => Ok(cp),
        _ => Err(PartyError::Misuse(format!(
            "{} is {}, not waiting for {}",
            row.key,
            now.as_str(),
            status.as_str()
        ))),
    }
}

/// An approval (or a denial) of the call the run waits on, bound to everything the
/// checkpoint shows: the call, its arguments, its requester and the checkpoint's revision.
pub fn approval(
    row: &Row,
    checkpoint: Option<Checkpoint>,
    approver: &str,
    approve: bool,
    valid_ms: u64,
) -> Result<Request, PartyError> {
    let checkpoint = match checkpoint {
        Some(cp) => cp,
        None => handed(row, Status::Approval)?,
    };
    let (Some(call), Some(requester)) = (checkpoint.pending, checkpoint.requester) else {
        return Err(PartyError::Misuse(format!(
            "the checkpoint of {} holds no call awaiting approval",
            row.key
        )));
    };
    let approval = Approval {
        call_id: call.call_id,
        args: call.args,
        requester,
        approver: party(approver)?,
        revision: checkpoint.revision,
        expires_at: Time(now_ms() + valid_ms),
    };
    let decision = if approve {
        Decision::Approve(approval)
    } else {
        Decision::Deny(approval)
    };
    Ok(Request::Resume {
        checkpoint,
        decision,
    })
}

/// The callback the run waits for, with a payload.
pub fn callback(row: &Row, payload: &str) -> Result<Request, PartyError> {
    let checkpoint = handed(row, Status::Callback)?;
    let Some(callback) = checkpoint.waiting_on else {
        return Err(PartyError::Misuse(format!("{} names no callback", row.key)));
    };
    Ok(Request::Resume {
        checkpoint,
        decision: Decision::Callback {
            callback,
            payload: Digest::of(payload.as_bytes()),
        },
    })
}

/// A person's resolution of a manual intervention.
pub fn intervene(row: &Row, by: &str, resolution: Resolution) -> Result<Request, PartyError> {
    let checkpoint = handed(row, Status::Person)?;
    Ok(Request::Resume {
        checkpoint,
        decision: Decision::Intervene {
            by: party(by)?,
            resolution,
        },
    })
}

/// A cancel.
pub fn cancel(by: &str) -> Result<Request, PartyError> {
    Ok(Request::Cancel { by: party(by)? })
}

/// Waits up to `timeout` for a worker to answer request `id` of run `key`.
pub fn wait_answer(
    store: &mut dyn Store,
    key: &RunKey,
    id: u64,
    timeout: Duration,
) -> Result<Option<Answered>, PartyError> {
    let started = Instant::now();
    loop {
        let found = store.inbox(key, false)?.into_iter().find(|r| r.id == id);
        if let Some(answer) = found.and_then(|r| r.answer) {
            return Ok(Some(answer));
        }
        if started.elapsed() >= timeout {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One line about a run for people: where it is and who it waits on.
pub fn describe(row: &Row) -> String {
    let run = &row.run;
    let head = format!(
        "{} [{}] revision {}",
        row.key,
        row.program,
        run.revision().0
    );
    match run.phase() {
        Phase::Running { in_flight: None } => format!("{head}: running"),
        Phase::Running { in_flight: Some(f) } => format!(
            "{head}: running, call {} ({}) in flight, attempt {}",
            f.call.call.call_id, f.call.call.tool, f.attempt
        ),
        Phase::Suspended(s) => {
            let what = match s.reason {
                Reason::PendingApproval { call, requester } => format!(
                    "waits for {} to approve {} ({}) asked by {requester}",
                    s.responsible, call.call.call_id, call.call.tool
                ),
                Reason::ExternalCallback { callback } => {
                    format!("waits for callback {callback} from {}", s.responsible)
                }
                Reason::ResourceWait { resource } => format!("waits for resource {resource}"),
                Reason::ManualIntervention { unresolved, .. } => format!(
                    "waits on a person ({}){}",
                    s.responsible,
                    unresolved.map_or(String::new(), |f| format!(
                        ": the outcome of {} ({}) attempt {} is unknown",
                        f.call.call.call_id, f.call.call.tool, f.attempt
                    ))
                ),
                Reason::OutcomeUnknown { in_flight, .. } => format!(
                    "outcome of {} unknown, reconciling by query",
                    in_flight.call.call.call_id
                ),
            };
            format!("{head}: suspended, {what}, until {}", s.expires_at)
        }
        Phase::Completed { .. } => format!("{head}: completed"),
        Phase::Failed(cause) => format!("{head}: failed ({cause:?})"),
    }
}
