//! The planner: what a worker does with a run now, as a pure function of what the store
//! shows and the time. It reads no clock and no store (the worker passes both in), and it
//! decides nothing about the lifecycle: what a run needs next is the kernel's to say
//! ([`Run::next`]), and when its timer falls due too ([`Run::deadline`]). The planner adds
//! only what the kernel cannot see: who holds the run, which request waits in its inbox, and
//! which step its agent program proposes.
//!
//! The broken flavours never appear here: the correct plan is the same whatever the driver's
//! flavour, and a flavour that breaks a rule replaces the worker's handling of one action
//! explicitly (`driver/flavor.rs`).
//!
//! [`Run::next`]: resumable_kernel::Run::next
//! [`Run::deadline`]: resumable_kernel::Run::deadline

use super::DriveError;
use crate::program::{Program, Timing};
use crate::store::{Inbox, Lease, Row, Summary};
use resumable_kernel::{Dispatch, Event, Next, Run, Time};

#[cfg(test)]
mod tests;

/// What a worker does with a run now.
#[expect(
    clippy::large_enum_variant,
    reason = "one action at a time, moved once: a request carries its checkpoint inline"
)]
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Feed the oldest request waiting in the run's inbox (a party's decision, a cancel).
    Request(Inbox),
    /// Feed the agent program's next step.
    Program(Event),
    /// Feed `recover`: a call is in flight and no live worker waits for its answer, so its
    /// outcome is unknown (REC-1). Never dispatch it again: the query settles it.
    Recover(Dispatch),
    /// Feed `expire`: the run's deadline has passed (EXP-1).
    Expire,
    /// Ask the tool's status query about this call and attempt, and feed the answer as a
    /// reconcile decision (REC-2).
    Query(Dispatch),
}

/// Whether `lease` is held by a live worker other than `owner` at `now`.
pub fn held_by_other(lease: &Lease, owner: &str, now: u64) -> bool {
    lease.owner.as_deref().is_some_and(|o| o != owner) && lease.until_ms > now
}

/// What the worker `owner` does with `row` at `now` (ms since the Unix epoch), with the
/// oldest request of its inbox if one waits and the resource's version as observed now
/// (`None` if it could not be); `None` when the run needs nothing from it now.
///
/// In order: nothing while another live worker holds the run; a waiting request first (a
/// party's decision is never kept waiting behind the run's own work); `expire` once the
/// kernel's deadline has passed; then whatever [`Run::next`] names: the program's step, a
/// `recover` for a call in flight (this worker acts only on runs no other live worker holds,
/// and holds no dispatch of its own across turns, so nobody waits for the answer), or the
/// status query for an unknown outcome. A run that waits on a party, or has ended, needs
/// nothing. Refused only if the row names a program this runtime does not know.
///
/// [`Run::next`]: resumable_kernel::Run::next
pub fn plan(
    row: &Row,
    pending: Option<&Inbox>,
    now: u64,
    owner: &str,
    timing: &Timing,
    observed: Option<u64>,
) -> Result<Option<Action>, DriveError> {
    if held_by_other(&row.lease, owner, now) {
        return Ok(None);
    }
    if let Some(request) = pending {
        return Ok(Some(Action::Request(request.clone())));
    }
    if resumable_driver::clock::due(&row.run, Time(now)) {
        return Ok(Some(Action::Expire));
    }
    Ok(match row.run.next() {
        Next::Agent => {
            let program =
                Program::parse(&row.program).ok_or_else(|| DriveError::UnknownProgram {
                    run: row.key.clone(),
                    program: row.program.clone(),
                })?;
            // The time the core will stamp the step with (CLK-1).
            let at = resumable_driver::clock::stamp(&row.run, Time(now)).0;
            // The program states the resource's version as observed now; while it cannot be
            // observed, the program waits.
            observed
                .and_then(|version| program.step(row.pc, at, version, timing))
                .map(Action::Program)
        }
        Next::Result { dispatch } => Some(Action::Recover(dispatch)),
        // A batch's calls in flight together: their answers were lost with the worker that
        // dispatched them; recovering makes each unknown, reconciled in turn (spec BAT-4).
        Next::Results { dispatches } => dispatches.get(0).copied().map(Action::Recover),
        Next::Query { dispatch, .. } => Some(Action::Query(dispatch)),
        Next::Decision { .. } | Next::Nothing { .. } => None,
    })
}

/// Whether `run` still waits on the answer to `d` (its call and attempt), as [`Run::next`]
/// says: the one call in flight, or one of a batch's calls in flight together. A dispatch
/// commanded by a committed transition leaves only while this holds; once the run has moved
/// on (its calls made unknown, another writer's input), what it waits on is recovery's.
///
/// [`Run::next`]: resumable_kernel::Run::next
pub fn awaits_answer(run: &Run, d: &Dispatch) -> bool {
    match run.next() {
        Next::Result { dispatch } => dispatch == *d,
        Next::Results { dispatches } => dispatches.iter().any(|x| x == d),
        _ => false,
    }
}

/// Whether a run in the scan wants a worker at `now`, whoever holds it: a request waits in
/// its inbox, its next step is a worker's (its program's step, a call's answer, a query), or
/// its deadline has passed.
pub fn wants_worker(s: &Summary, now: u64) -> bool {
    s.pending > 0 || s.status.needs_worker() || s.wake_at.is_some_and(|due| now >= due)
}

/// Whether the worker `owner` should give the run in the scan a turn at `now`.
pub fn actionable(s: &Summary, now: u64, owner: &str) -> bool {
    !held_by_other(&s.lease, owner, now) && wants_worker(s, now)
}

/// Whether nothing in the scan can move without someone outside at `now`: every run has
/// ended or waits on a party (an approver, a callback, a resource, a person) whose deadline
/// has not passed, and no request waits.
pub fn quiescent(list: &[Summary], now: u64) -> bool {
    !list.iter().any(|s| wants_worker(s, now))
}
