//! Resume (spec 5): the rows every resume meets, then one handler per decision.

use super::checks::{
    check_approval, dispatch_of, held_by_operator, mismatch, person, recheck, recheck_policy,
    record, settled,
};
use super::{batch, Commands, Stepped};
use crate::batch::{Allowed, VerdictKind};
use crate::checkpoint::Checkpoint;
use crate::effect::Command;
use crate::ids::{Digest, Name, Time};
use crate::input::{Decision, Facts, QueryAnswer, Resolution, Resume};
use crate::reject::Rejection;
use crate::run::{BoundCall, FailCause, InFlight, Phase, Reason, ResumeReceipt, Run, Suspension};

/// RES-1: a resume is a new, fully re-validated transition. Identity, schema, digest and
/// revision were checked with the guards of every input; the rows that follow are checked
/// here, in order, then the decision's own handler runs.
pub(super) fn resume(
    run: &Run,
    next: &mut Run,
    commands: &mut Commands,
    at: Time,
    r: &Resume,
) -> Stepped {
    // RES-4: the run must be suspended, exactly as the checkpoint says.
    let Phase::Suspended(s) = &run.phase else {
        return Err(Rejection::NotSuspended {
            phase: run.phase.kind(),
        });
    };
    if let Some(field) = Checkpoint::unsealed(run).and_then(|cp| mismatch(&cp, &r.checkpoint)) {
        return Err(Rejection::CheckpointMismatch { field });
    }
    // RES-5: no decision after the suspension's expiry.
    if at > s.expires_at {
        return Err(Rejection::Expired {
            expires_at: s.expires_at,
            now: at,
        });
    }
    let resumed = answer(run, next, commands, at, s, r)?;
    if let Some((f, result)) = resumed.settles {
        record(next, &f, result);
    }
    next.phase = resumed.phase;
    // RES-3: the resource version the driver observed is the run's from now on.
    next.resource_version = r.facts.resource_version;
    // RES-2: the receipt that tells a late or duplicate resumer how it fared.
    next.last_resume = Some(ResumeReceipt {
        from: run.revision,
        to: run.revision.next().ok_or(Rejection::RevisionExhausted)?,
        checkpoint: r.checkpoint.digest,
        decision: r.decision,
    });
    Ok(())
}

/// What an accepted decision leads to. Its commands are pushed onto the step's, and a batch's
/// decisions are recorded in the next run's batch, in place (spec 5.5).
pub(super) struct Resumed {
    pub(super) phase: Phase,
    /// A call whose committed result the decision records (REC-4).
    pub(super) settles: Option<(InFlight, Digest)>,
}

impl From<Phase> for Resumed {
    fn from(phase: Phase) -> Resumed {
        Resumed {
            phase,
            settles: None,
        }
    }
}

/// POL-1: the decisions the run's policy and the call's tool both allow.
fn permitted(run: &Run, call: &BoundCall) -> Allowed {
    run.policy.allowed.and(call.call.contract.allowed)
}

/// POL-1: the decision is one the run's policy and the call's tool both allow.
pub(super) fn allowed(run: &Run, call: &BoundCall, decision: VerdictKind) -> Result<(), Rejection> {
    if permitted(run, call).contains(decision) {
        Ok(())
    } else {
        Err(Rejection::DecisionNotAllowed { decision })
    }
}

/// The decisions a single pending approval takes (spec 5.1).
pub(super) const SINGLE_APPROVAL: Allowed = Allowed::of(&[VerdictKind::Approve, VerdictKind::Deny]);

/// The decisions a call of a batch takes when an earlier call bound its key: every verdict but
/// an edit, which could not rebind the key (BAT-5).
pub(super) const BOUND_KEY: Allowed = Allowed::of(&[
    VerdictKind::Approve,
    VerdictKind::Reject,
    VerdictKind::Respond,
    VerdictKind::Deny,
]);

/// POL-1: a call put to an approver leaves them some decision that `decide` could accept:
/// one of the `offered` ones (approve and deny for a single approval, every verdict for a
/// call of a batch) that the run's policy and the call's tool both allow. Otherwise no
/// decision could ever answer the suspension, and the run would wait for its expiry.
pub(super) fn decidable(run: &Run, call: &BoundCall, offered: Allowed) -> Result<(), Rejection> {
    if permitted(run, call).and(offered).is_empty() {
        Err(Rejection::NoDecisionAllowed {
            call_id: call.call.call_id,
        })
    } else {
        Ok(())
    }
}

/// RES-6: the decision must answer the suspension's reason; each pairing has its handler.
fn answer(
    run: &Run,
    next: &mut Run,
    commands: &mut Commands,
    at: Time,
    s: &Suspension,
    r: &Resume,
) -> Result<Resumed, Rejection> {
    let cp = &r.checkpoint;
    match (&s.reason, &r.decision) {
        (Reason::PendingApproval { call, requester }, Decision::Approve(a)) => {
            check_approval(a, call, requester, cp.revision, at, &s.responsible)?;
            allowed(run, call, VerdictKind::Approve)?;
            approve(run, commands, call, cp, &r.facts)
        }
        // APR-4: a denial, under the same checks, fails the run; the call never runs.
        (Reason::PendingApproval { call, requester }, Decision::Deny(a)) => {
            check_approval(a, call, requester, cp.revision, at, &s.responsible)?;
            allowed(run, call, VerdictKind::Deny)?;
            Ok(Phase::Failed(FailCause::Denied {
                call_id: call.call.call_id,
            })
            .into())
        }
        (Reason::ExternalCallback { callback }, Decision::Callback { callback: got, .. })
        | (
            Reason::ResourceWait { resource: callback },
            Decision::ResourceReady { resource: got },
        ) => awaited(callback, got, &r.facts),
        (
            Reason::ManualIntervention {
                unresolved,
                cancelled_by,
            },
            Decision::Intervene { by, resolution },
        ) => intervene(s, *unresolved, *cancelled_by, *by, resolution, r),
        (
            Reason::OutcomeUnknown {
                in_flight,
                cancelled_by,
            },
            Decision::Reconcile(answer),
        ) => reconcile(run, commands, at, in_flight, *cancelled_by, answer, r),
        (Reason::PendingBatch, Decision::Batch { decisions }) => {
            batch::decide(run, next, commands, at, s, r, decisions)
        }
        (reason, decision) => Err(Rejection::DecisionMismatch {
            reason: reason.kind(),
            decision: decision.kind(),
        }),
    }
}

/// APR-1, WAL-1: the approved call is dispatched once, under its original key, after the
/// re-checks of the present (RES-3, RES-7).
fn approve(
    run: &Run,
    commands: &mut Commands,
    call: &BoundCall,
    cp: &Checkpoint,
    facts: &Facts,
) -> Result<Resumed, Rejection> {
    recheck(cp, facts)?;
    let in_flight = InFlight {
        call: *call,
        attempt: 0,
        dispatches: 1,
    };
    let _ = commands.push(Command::Dispatch(dispatch_of(run, &in_flight)));
    Ok(Phase::Running {
        in_flight: Some(in_flight),
    }
    .into())
}

/// RES-6, RES-7: the awaited callback or resource, by name; the run continues its own steps
/// after the re-checks of permission and budget. The resource version it reports is recorded,
/// not compared: a resource that moved is what a wait for it is about.
fn awaited(expected: &Name, got: &Name, facts: &Facts) -> Result<Resumed, Rejection> {
    if got != expected {
        return Err(Rejection::WaitMismatch {
            expected: *expected,
            got: *got,
        });
    }
    recheck_policy(facts)?;
    Ok(Phase::Running { in_flight: None }.into())
}

/// RES-6, REC-4, CAN-2: the operator settles a manual intervention. "Committed" records the
/// unsettled effect's result; "continue" drops it, after the re-checks of the present; either
/// ends the run cancelled if a cancel waits. "Abandon" gives the run up.
fn intervene(
    s: &Suspension,
    unresolved: Option<InFlight>,
    cancelled_by: Option<Name>,
    by: Name,
    resolution: &Resolution,
    r: &Resume,
) -> Result<Resumed, Rejection> {
    if by != s.responsible {
        return Err(Rejection::Unauthorised {
            expected: s.responsible,
            got: by,
        });
    }
    match (resolution, cancelled_by) {
        (Resolution::Abandon, _) => Ok(Phase::Failed(FailCause::Abandoned { by }).into()),
        (Resolution::Committed { result }, _) => {
            let f = unresolved.ok_or(Rejection::NothingUnresolved)?;
            Ok(Resumed {
                phase: settled(cancelled_by),
                settles: Some((f, *result)),
            })
        }
        (Resolution::Continue, Some(_)) => Ok(settled(cancelled_by).into()),
        (Resolution::Continue, None) => {
            recheck(&r.checkpoint, &r.facts)?;
            Ok(Phase::Running { in_flight: None }.into())
        }
    }
}

/// REC-2, REC-3, REC-4, CAN-2: the status query's answer for an unknown outcome. An answer
/// is a fact about the past: it is never refused for the present's sake.
fn reconcile(
    run: &Run,
    commands: &mut Commands,
    at: Time,
    f: &InFlight,
    cancelled_by: Option<Name>,
    answer: &QueryAnswer,
    r: &Resume,
) -> Result<Resumed, Rejection> {
    let contract = f.call.call.contract;
    let to_person = || held_by_operator(run, at, person(*f, cancelled_by)).map(Resumed::from);
    match (answer, cancelled_by) {
        // REC-4: the result is recorded and reused, never executed again.
        (QueryAnswer::Committed { result }, _) => Ok(Resumed {
            phase: settled(cancelled_by),
            settles: Some((*f, *result)),
        }),
        // REC-2: nobody can tell: a person decides; never retried blindly.
        (QueryAnswer::Unknown, _) => to_person(),
        // A fencing query settles the attempt: it can never commit now, so a waiting cancel
        // takes effect. One that does not fence leaves the late original free to commit.
        (QueryAnswer::NotCommitted, Some(_)) if contract.query_fences => {
            Ok(settled(cancelled_by).into())
        }
        (QueryAnswer::NotCommitted, Some(_)) => to_person(),
        (QueryAnswer::NotCommitted, None) => match retry(run, commands, f, r) {
            Some(resumed) => Ok(resumed),
            None => to_person(),
        },
    }
}

/// REC-3: the retry the tool's contract makes safe after "not committed": a fencing query
/// allows a fresh attempt key, a deduping tool the same key; never more than `max_attempts`
/// dispatches, its dispatch pushed onto `commands`. `None` when no retry is safe, or the
/// re-checks of the present fail: then a person decides, and `commands` is untouched.
fn retry(run: &Run, commands: &mut Commands, f: &InFlight, r: &Resume) -> Option<Resumed> {
    let contract = f.call.call.contract;
    let attempt = if contract.query_fences {
        // The old attempt is fenced and can never commit: only a fresh one can.
        f.attempt.checked_add(1)?
    } else if contract.dedupes {
        // The late original may still arrive: only the same key lets dedupe absorb it.
        f.attempt
    } else {
        // Neither: the late original and a retry could both commit.
        return None;
    };
    if f.dispatches >= contract.max_attempts {
        return None;
    }
    recheck(&r.checkpoint, &r.facts).ok()?;
    let again = InFlight {
        call: f.call,
        attempt,
        dispatches: f.dispatches.checked_add(1)?,
    };
    let _ = commands.push(Command::Dispatch(dispatch_of(run, &again)));
    Some(
        Phase::Running {
            in_flight: Some(again),
        }
        .into(),
    )
}
