//! Batches of calls (spec 5.5): opening one, its decisions, its calls in flight together, and
//! the hand-over of each unsettled call to the single-call rules, one after another.

use super::checks::{
    bind, check_approval, dispatch_of, held_by_operator, recheck, record, unknown,
};
use super::resume::{allowed, decidable, Resumed, BOUND_KEY};
use super::{Commands, Stepped};
use crate::batch::{
    Allowed, Batch, Decided, Decisions, KeptBatch, List, Proposals, Slot, SlotState, Verdict,
};
use crate::checkpoint::{key_digest, Checkpoint};
use crate::effect::Command;
use crate::ids::{Digest, Name, Revision, Time};
use crate::input::{Decision, Resume};
use crate::reject::{ApprovalField, Rejection};
use crate::run::{FailCause, InFlight, Phase, Reason, Run, Suspension};

/// BAT-1: the batch a `suspend` opens: not empty, no call id or key twice, each requester not
/// the approver (APR-3), each call bound by its own prior (4.9) and left some decision its
/// approver may give (POL-1).
pub(super) fn open(
    run: &Run,
    calls: &Proposals,
    responsible: Name,
    resource_version: u64,
) -> Result<KeptBatch, Rejection> {
    if calls.is_empty() {
        return Err(Rejection::EmptyBatch);
    }
    for (i, p) in calls.iter().enumerate() {
        let twice = calls
            .iter()
            .take(i)
            .any(|q| q.call.call_id == p.call.call_id || q.call.key == p.call.key);
        if twice {
            return Err(Rejection::DuplicateInBatch {
                call_id: p.call.call_id,
            });
        }
    }
    let mut slots = List::new();
    for p in calls.iter() {
        if p.requester == responsible {
            return Err(Rejection::SelfApproval { party: p.requester });
        }
        let call = bind(&p.call, &p.prior)?;
        let fresh = p.prior.key.is_none();
        decidable(run, &call, if fresh { Allowed::ALL } else { BOUND_KEY })?;
        let _ = slots.push(Slot {
            call,
            requester: p.requester,
            proposed: p.call.args,
            fresh,
            decided: None,
            state: SlotState::Awaiting,
        });
    }
    Ok(KeptBatch {
        calls: Batch {
            opened: run.revision.next().ok_or(Rejection::RevisionExhausted)?,
            checkpoint: Digest::default(),
            resource_version,
            closed: None,
            slots,
        },
        approver: None,
    })
}

/// BAT-2, RES-2: a batch decision carrying the batch's own checkpoint. A decision on a call
/// already decided is answered as RES-2 answers a duplicate resume; on a batch that left its
/// suspension otherwise, `AlreadyResumed` with the revision that closed it. While the batch is
/// open, its checkpoint is the only one its decisions may carry. `None`: the usual rows apply.
pub(super) fn check_revision(
    run: &Run,
    got: Revision,
    checkpoint: &Digest,
    decision: &Decision,
) -> Option<Result<(), Rejection>> {
    let kept = run.batch.as_ref()?;
    let b = &kept.calls;
    let own = got == b.opened && *checkpoint == b.checkpoint;
    if own {
        if let Decision::Batch { decisions } = decision {
            for d in decisions.iter() {
                let Some((recorded, to)) =
                    b.slot(&d.approval.call_id).and_then(|s| kept.decision(s))
                else {
                    continue;
                };
                let (from, to) = (b.opened, to);
                return Some(Err(if recorded == *d {
                    Rejection::AlreadyApplied { from, to }
                } else {
                    Rejection::AlreadyResumed { from, to }
                }));
            }
            if let Some(to) = b.closed {
                return Some(Err(Rejection::AlreadyResumed { from: b.opened, to }));
            }
        }
    }
    match (b.is_open(), own) {
        (true, true) => Some(Ok(())),
        // The open batch's decisions bind to its own checkpoint and to no other.
        (true, false) if !(got == run.revision && got == b.opened) => {
            Some(Err(Rejection::StaleRevision {
                current: run.revision,
                got,
            }))
        }
        _ => None,
    }
}

/// BAT-2, BAT-3, BAT-5, POL-1, APR-4: the decisions of one resume on the open batch, checked
/// in order, then applied together to `next`'s batch. The batch resumes once every call is
/// decided, its approved calls' dispatches pushed onto `commands`.
pub(super) fn decide(
    run: &Run,
    next: &mut Run,
    commands: &mut Commands,
    at: Time,
    s: &Suspension,
    r: &Resume,
    decisions: &Decisions,
) -> Result<Resumed, Rejection> {
    let Some(batch) = run.batch.as_ref().map(|b| &b.calls).filter(|b| b.is_open()) else {
        // A `pending_batch` suspension always has its batch open (an invariant).
        return Err(Rejection::NoDecision);
    };
    check_decisions(run, at, s, batch, decisions)?;
    let decided_at = run.revision.next().ok_or(Rejection::RevisionExhausted)?;
    let Some(next) = next.batch.as_mut() else {
        return Err(Rejection::NoDecision);
    };
    let (denied, settles) = record_decisions(next, decisions, decided_at);
    let next = &mut next.calls;
    let mut resumed = Resumed::from(Phase::Suspended(*s));
    if let Some(call_id) = denied {
        // APR-4: a denial fails the run; no call of the batch runs.
        resumed.phase = Phase::Failed(FailCause::Denied { call_id });
    } else if next.slots.iter().all(|s| s.decided.is_some()) {
        // BAT-3: every call is decided: the batch resumes.
        resumed.phase = dispatch_approved(run, r, next, commands)?;
    }
    resumed.settles = settles;
    Ok(resumed)
}

/// BAT-2, POL-1, BAT-5: each decision names a call of the batch once, is bound to it and to
/// the batch's checkpoint by the approver the run waits on (APR-1, APR-2, APR-3), is one the
/// policy and the tool allow, and edits only a call whose key is not yet bound.
fn check_decisions(
    run: &Run,
    at: Time,
    s: &Suspension,
    batch: &Batch<Decided>,
    decisions: &Decisions,
) -> Result<(), Rejection> {
    if decisions.is_empty() {
        return Err(Rejection::NoDecision);
    }
    for (i, d) in decisions.iter().enumerate() {
        let call_id = d.approval.call_id;
        if decisions
            .iter()
            .take(i)
            .any(|e| e.approval.call_id == call_id)
        {
            return Err(Rejection::DuplicateDecision { call_id });
        }
    }
    for d in decisions.iter() {
        let slot = batch
            .slot(&d.approval.call_id)
            .ok_or(Rejection::ApprovalMismatch {
                field: ApprovalField::CallId,
            })?;
        check_approval(
            &d.approval,
            &slot.call,
            &slot.requester,
            batch.opened,
            at,
            &s.responsible,
        )?;
        allowed(run, &slot.call, d.verdict.kind())?;
        if matches!(d.verdict, Verdict::Edit { .. }) && !slot.fresh {
            return Err(Rejection::EditKeyBound {
                key: slot.call.call.key,
            });
        }
    }
    Ok(())
}

/// Records each decision in its call's slot at revision `decided_at`: the call denied first
/// (APR-4), if any, and the call answered in the tool's place with its result (REC-4: a
/// person's answer is the call's result, recorded as any result is), if any.
fn record_decisions(
    next: &mut KeptBatch,
    decisions: &Decisions,
    decided_at: Revision,
) -> (Option<Name>, Option<(InFlight, Digest)>) {
    let mut answered = None;
    let mut denied = None;
    // APR-4: an input that denies a call records its denials only. The run fails on them, so
    // the other decisions of the input would never take effect: none is recorded (no edit
    // rebinds a key, no answer spends one), and each call they name stays as it was.
    let denying = decisions.iter().any(|d| d.verdict == Verdict::Deny);
    for slot in next.calls.slots.iter_mut() {
        let Some(d) = decisions.iter().find(|d| {
            d.approval.call_id == slot.call.call.call_id && (!denying || d.verdict == Verdict::Deny)
        }) else {
            continue;
        };
        next.approver = Some(d.approval.approver);
        slot.decided = Some(Decided::of(d, decided_at));
        slot.state = match d.verdict {
            Verdict::Approve => SlotState::Approved,
            Verdict::Edit { args } => {
                slot.call.call.args = args;
                slot.call.key_digest = key_digest(&slot.call.call.key, &args);
                SlotState::Approved
            }
            Verdict::Reject { reason } => SlotState::Rejected { reason },
            Verdict::Respond { result } => {
                let call = InFlight {
                    call: slot.call,
                    attempt: 0,
                    dispatches: 0,
                };
                answered = Some((call, result));
                SlotState::Responded { result }
            }
            Verdict::Deny => {
                denied = denied.or(Some(slot.call.call.call_id));
                SlotState::Denied
            }
        };
    }
    (denied, answered)
}

/// BAT-3, RES-3: the batch, every call decided, resumes: if any call is approved, the resume's
/// checkpoint and facts are checked again, and each approved call is dispatched.
fn dispatch_approved(
    run: &Run,
    r: &Resume,
    next: &mut Batch<Decided>,
    commands: &mut Commands,
) -> Result<Phase, Rejection> {
    if next.slots.iter().any(|s| s.state == SlotState::Approved) {
        recheck(&r.checkpoint, &r.facts)?;
    }
    for slot in next.slots.iter_mut() {
        if slot.state == SlotState::Approved {
            slot.state = SlotState::InFlight {
                attempt: 0,
                dispatches: 1,
            };
            let f = in_flight(slot, 0, 1);
            let _ = commands.push(Command::Dispatch(dispatch_of(run, &f)));
        }
    }
    Ok(Phase::Running { in_flight: None })
}

fn in_flight(slot: &Slot<Decided>, attempt: u8, dispatches: u8) -> InFlight {
    InFlight {
        call: slot.call,
        attempt,
        dispatches,
    }
}

/// BAT-4: the first call of the batch in flight together with others, if any.
pub(super) fn first_in_flight(run: &Run) -> Option<Name> {
    run.batch
        .as_ref()?
        .calls
        .slots
        .iter()
        .find(|s| matches!(s.state, SlotState::InFlight { .. }))
        .map(|s| s.call.call.call_id)
}

/// BAT-4, WAL-2, REC-4: the tool's answer for one of the batch's calls in flight, written into
/// `next`; `None` when none is in flight (the single-call rules answer), `next` untouched.
pub(super) fn tool_result(
    run: &Run,
    next: &mut Run,
    call_id: Name,
    attempt: u8,
    result: Digest,
) -> Option<Stepped> {
    let first = first_in_flight(run)?;
    let batch = &run.batch.as_ref()?.calls;
    let answered = batch.slots.iter().position(|s| {
        s.call.call.call_id == call_id
            && matches!(s.state, SlotState::InFlight { attempt: a, .. } if a == attempt)
    });
    let Some(index) = answered else {
        let SlotState::InFlight { attempt: a, .. } = batch.slot(&first)?.state else {
            return None;
        };
        return Some(Err(Rejection::ResultMismatch {
            call_id: first,
            attempt: a,
            got_call: call_id,
            got_attempt: attempt,
        }));
    };
    let f = in_flight(batch.slots.get(index)?, attempt, 1);
    let slot = next.batch.as_mut()?.calls.slots.iter_mut().nth(index)?;
    slot.state = SlotState::Committed { result };
    record(next, &f, result);
    Some(Ok(()))
}

/// REC-1, CAN-1 for a batch's calls in flight together: every one becomes unknown in `next`,
/// and it takes `phase` (running, or failed cancelled) for [`carry_on`] to hand the first of
/// them to the single-call rules. `false` when none is in flight, `next` untouched.
pub(super) fn all_unknown(run: &Run, next: &mut Run, phase: Phase) -> bool {
    let Some(batch) = next
        .batch
        .as_mut()
        .map(|b| &mut b.calls)
        .filter(|_| first_in_flight(run).is_some())
    else {
        return false;
    };
    for slot in batch.slots.iter_mut() {
        if let SlotState::InFlight {
            attempt,
            dispatches,
        } = slot.state
        {
            slot.state = SlotState::Unknown {
                attempt,
                dispatches,
            };
        }
    }
    next.phase = phase;
    true
}

/// BAT-4, CAN-2: after every handler. The call the phase held, once the phase lets go of it
/// (running idle, or failed cancelled), is committed if its result was recorded, else
/// dropped. Then, while a call of the batch is unknown, the next one in order becomes the
/// phase's, an unknown outcome held by the operator with its query, a waiting cancel carried.
pub(super) fn carry_on(
    run: &Run,
    at: Time,
    next: &mut Run,
    commands: &mut Commands,
) -> Result<(), Rejection> {
    let Some(batch) = next.batch.as_mut().map(|b| &mut b.calls) else {
        return Ok(());
    };
    let cancelled_by = match next.phase {
        Phase::Running { in_flight: None } => None,
        Phase::Failed(FailCause::Cancelled { by }) => Some(by),
        _ => return Ok(()),
    };
    for slot in batch.slots.iter_mut() {
        if slot.state == SlotState::Held {
            slot.state = match next.last_call {
                Some(done) if done.call_id == slot.call.call.call_id => SlotState::Committed {
                    result: done.result,
                },
                _ => SlotState::Dropped,
            };
        }
    }
    let waiting = batch.slots.iter_mut().find_map(|slot| match slot.state {
        SlotState::Unknown {
            attempt,
            dispatches,
        } => {
            slot.state = SlotState::Held;
            Some(in_flight(slot, attempt, dispatches))
        }
        _ => None,
    });
    if let Some(f) = waiting {
        next.phase = held_by_operator(run, at, unknown(f, cancelled_by))?;
        let _ = commands.push(Command::Query(dispatch_of(run, &f)));
    }
    Ok(())
}

/// CKP-1, BAT-1, 5.5: the checkpoint of the next run, if suspended; for a batch just opened,
/// its digest is kept in the batch, and a batch that left its suspension is closed.
pub(super) fn seal(run: &Run, next: &mut Run) -> Option<Checkpoint> {
    let revision = next.revision;
    let pending = matches!(
        next.suspension().map(|s| s.reason),
        Some(Reason::PendingBatch)
    );
    if let Some(b) = next.batch.as_mut().map(|b| &mut b.calls) {
        let was_pending = matches!(
            run.suspension().map(|s| s.reason),
            Some(Reason::PendingBatch)
        );
        if was_pending && !pending {
            b.closed = Some(revision);
        }
    }
    let checkpoint = Checkpoint::of(next);
    if let (Some(b), Some(cp)) = (next.batch.as_mut().map(|b| &mut b.calls), &checkpoint) {
        // The batch opened with this very step: its checkpoint is the one just sealed.
        if b.opened == revision {
            b.checkpoint = cp.digest;
        }
    }
    checkpoint
}
