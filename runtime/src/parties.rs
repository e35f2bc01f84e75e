//! People and outside systems: approvers, operators, a callback's sender. They never touch
//! a run: they read what the store shows (the checkpoint they were handed), put a request in
//! the run's inbox, and a worker feeds it to the kernel, which accepts it or says why not.
//! The answer is stored with the request, in the transaction that records it in the log.

use crate::lifecycle::{self, Asked, Asking, Word};
use crate::rng::now_ms;
use crate::store::{Answered, Request, Row, RunKey, Status, Store, StoreError};
use resumable_kernel::{
    Checkpoint, Decision, Digest, FailCause, Name, Phase, Reason, Resolution, Time,
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

/// What the run's approver is shown on `checkpoint`, and whether it is a batch: the call
/// awaiting approval, or every call of the batch the run holds (read from the run, as
/// `Run::batch` lists it: the batch's checkpoint carries only their digest). This runtime
/// keeps a call's arguments as their digest alone, so the party is shown the digest its
/// decision binds, as a JSON string.
fn asking(row: &Row, checkpoint: Checkpoint) -> Result<(Asking, bool), PartyError> {
    let shown = |call_id, tool, args: Digest, requester| Asked {
        call_id,
        tool,
        args: format!("\"{args}\""),
        args_digest: args,
        requester,
    };
    let (calls, batch) = match (checkpoint.pending, checkpoint.requester, checkpoint.batch) {
        (Some(call), Some(requester), None) => (
            vec![shown(call.call_id, call.tool, call.args, requester)],
            false,
        ),
        (None, _, Some(_)) => {
            let Some(batch) = row.run.batch() else {
                return Err(PartyError::Misuse(format!(
                    "{} holds no batch for its checkpoint's calls",
                    row.key
                )));
            };
            let calls = batch.slots.iter().map(|s| {
                let call = s.call.call;
                shown(call.call_id, call.tool, s.proposed, s.requester)
            });
            (calls.collect(), true)
        }
        _ => {
            return Err(PartyError::Misuse(format!(
                "the checkpoint of {} holds no call awaiting approval",
                row.key
            )))
        }
    };
    let asking = Asking {
        calls,
        responsible: checkpoint.responsible,
        expires_at: checkpoint.expires_at,
        checkpoint,
        answers: 0,
    };
    Ok((asking, batch))
}

/// The calls of the run's batch that no decision has reached yet, by call id, in order.
pub fn undecided(row: &Row) -> Vec<String> {
    row.run.batch().map_or_else(Vec::new, |b| {
        b.slots
            .iter()
            .filter(|s| s.decided.is_none())
            .map(|s| s.call.call.call_id.as_str().to_string())
            .collect()
    })
}

/// A decision valid for `valid_ms` from now: its expiry.
fn valid_for(valid_ms: u64) -> Result<Time, PartyError> {
    now_ms().checked_add(valid_ms).map(Time).ok_or_else(|| {
        PartyError::Misuse(format!(
            "a decision valid for {valid_ms} ms expires past time's end"
        ))
    })
}

/// The party `approver`'s `words` on calls of the checkpoint it was handed (or, `None`, the
/// one the run's approver was handed), each naming its call: the request that carries them,
/// every decision bound by the driver core to its call as the checkpoint shows it (the call,
/// its arguments, its requester and the checkpoint's revision, APR-1, BAT-2).
pub fn decision(
    row: &Row,
    checkpoint: Option<Checkpoint>,
    approver: &str,
    words: &[(String, Word)],
    valid_ms: u64,
) -> Result<Request, PartyError> {
    let checkpoint = match checkpoint {
        Some(cp) => cp,
        None => handed(row, Status::Approval)?,
    };
    let (asking, batch) = asking(row, checkpoint)?;
    let (checkpoint, decision) = lifecycle::decide(
        &asking,
        batch,
        words,
        party(approver)?,
        valid_for(valid_ms)?,
    )
    .map_err(PartyError::Misuse)?;
    Ok(Request::Resume {
        checkpoint,
        decision,
    })
}

/// An approval (or a denial) of the call the run waits on, or of every call of its batch
/// that no decision has reached yet: see [`decision`].
pub fn approval(
    row: &Row,
    checkpoint: Option<Checkpoint>,
    approver: &str,
    approve: bool,
    valid_ms: u64,
) -> Result<Request, PartyError> {
    let word = || if approve { Word::Approve } else { Word::Deny };
    let mut words: Vec<(String, Word)> =
        undecided(row).into_iter().map(|id| (id, word())).collect();
    let single = checkpoint
        .or(row.checkpoint)
        .is_some_and(|cp| cp.batch.is_none());
    if single {
        // A single approval's one call: the core takes it from the checkpoint.
        words = vec![(String::new(), word())];
    }
    decision(row, checkpoint, approver, &words, valid_ms)
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

/// A time of the runtime's clock (ms since the Unix epoch) as a date people read:
/// `2026-12-01 10:04:38 UTC`.
pub fn date(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, day_secs) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar), by eras of
    // 400 years, each 146,097 days.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        day_secs / 3600,
        day_secs / 60 % 60,
        day_secs % 60
    )
}

/// How far `at` is from `now` (both ms), in words: `in 9m 58s`, `2h 3m ago`.
pub fn from_now(now: u64, at: u64) -> String {
    let span = |ms: u64| {
        let s = ms / 1000;
        match s {
            0..60 => format!("{s}s"),
            60..3600 => format!("{}m {}s", s / 60, s % 60),
            3600..86_400 => format!("{}h {}m", s / 3600, s / 60 % 60),
            _ => format!("{}d {}h", s / 86_400, s / 3600 % 24),
        }
    };
    if at >= now {
        format!("in {}", span(at - now))
    } else {
        format!("{} ago", span(now - at))
    }
}

/// The party a run waits on, if it waits on one outside the runtime: an approver, a
/// callback's sender, a person (manual intervention) or whoever frees a resource. A run whose
/// outcome is being reconciled waits on a worker, not a party.
pub fn waits_on(row: &Row) -> Option<&Name> {
    match row.run.phase() {
        Phase::Suspended(s) if !matches!(s.reason, Reason::OutcomeUnknown { .. }) => {
            Some(&s.responsible)
        }
        _ => None,
    }
}

/// One line about a run for people at time `now`: where it is, who it waits on, and until
/// when; a failed run's cause in the project's words.
pub fn describe(row: &Row, now: u64) -> String {
    let run = &row.run;
    let head = format!(
        "{} [{}] revision {}",
        row.key,
        row.program,
        run.revision().0
    );
    let call = |f: &resumable_kernel::InFlight| {
        format!(
            "{} ({}) attempt {}",
            f.call.call.call_id, f.call.call.tool, f.attempt
        )
    };
    match run.phase() {
        Phase::Running { in_flight: None } => format!("{head}: running"),
        Phase::Running { in_flight: Some(f) } => {
            format!("{head}: running, call {} in flight", call(f))
        }
        Phase::Suspended(s) => {
            let what = match s.reason {
                Reason::PendingApproval { call, requester } => format!(
                    "waits for {} to approve {} ({}) asked by {requester}",
                    s.responsible, call.call.call_id, call.call.tool
                ),
                Reason::ExternalCallback { callback } => {
                    format!("waits for callback {callback} from {}", s.responsible)
                }
                Reason::PendingBatch => format!(
                    "waits for {} to decide a batch of {} calls",
                    s.responsible,
                    run.batch().map_or(0, |b| b.slots.len())
                ),
                Reason::ResourceWait { resource } => {
                    format!("waits for resource {resource} ({})", s.responsible)
                }
                Reason::ManualIntervention { unresolved, .. } => format!(
                    "waits on a person ({}){}",
                    s.responsible,
                    unresolved.map_or(String::new(), |f| format!(
                        ": the outcome of {} is unknown",
                        call(&f)
                    ))
                ),
                Reason::OutcomeUnknown { in_flight, .. } => format!(
                    "outcome of {} unknown, reconciling by query",
                    call(&in_flight)
                ),
            };
            format!(
                "{head}: suspended, {what}, expires {} ({})",
                date(s.expires_at.0),
                from_now(now, s.expires_at.0)
            )
        }
        Phase::Completed { .. } => format!("{head}: completed"),
        Phase::Failed(cause) => format!("{head}: failed, {}", cause_words(cause)),
    }
}

/// Why a run failed, in the project's snake_case words and its evidence.
pub fn cause_words(cause: &FailCause) -> String {
    match cause {
        FailCause::Denied { call_id } => format!("denied: call {call_id}"),
        FailCause::Expired { unresolved: None } => "expired".to_string(),
        FailCause::Expired {
            unresolved: Some(f),
        } => format!(
            "expired: the outcome of call {} ({}) attempt {} was never settled",
            f.call.call.call_id, f.call.call.tool, f.attempt
        ),
        FailCause::Cancelled { by } => format!("cancelled by {by}"),
        FailCause::Error { code } => format!("error: {code}"),
        FailCause::Abandoned { by } => format!("abandoned by {by}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_dates_and_time_left() {
        assert_eq!(date(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(date(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(date(1_796_100_629_504), "2026-12-01 04:50:29 UTC");
        assert_eq!(from_now(1_000, 599_000), "in 9m 58s");
        assert_eq!(from_now(7_380_000, 0), "2h 3m ago");
        assert_eq!(from_now(0, 90_000_000), "in 1d 1h");
    }
}
