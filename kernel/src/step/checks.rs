//! Checks shared by several handlers: identity, checkpoint, revision, approval, the
//! re-checks of the present, the call log, and the suspensions the kernel opens itself.

use crate::calls::Prior;
use crate::checkpoint::{key_digest, Checkpoint, SCHEMA_VERSION};
use crate::effect::Dispatch;
use crate::ids::{Digest, Name, Revision, Time};
use crate::input::{Approval, Decision, Facts, Resume};
use crate::reject::{ApprovalField, CheckpointField, IdentityField, Rejection};
use crate::run::{
    BoundCall, Call, CallOutcome, FailCause, Identity, InFlight, Phase, Reason, Run, Suspension,
};
pub(super) fn terminal(run: &Run) -> Rejection {
    Rejection::Terminal {
        phase: run.phase.kind(),
    }
}

/// WAL-2: dispatch, complete and fail need a running run with nothing in flight.
pub(super) fn idle(run: &Run) -> Result<(), Rejection> {
    // BAT-4: a batch's calls in flight together are in flight too.
    if let Some(call_id) = super::batch::first_in_flight(run) {
        return Err(Rejection::DispatchInFlight { call_id });
    }
    match &run.phase {
        Phase::Running { in_flight: None } => Ok(()),
        Phase::Running { in_flight: Some(f) } => Err(Rejection::DispatchInFlight {
            call_id: f.call.call.call_id,
        }),
        Phase::Suspended(_) => Err(Rejection::NotRunning {
            phase: run.phase.kind(),
        }),
        Phase::Completed { .. } | Phase::Failed(_) => Err(terminal(run)),
    }
}

pub(super) fn check_identity(run: &Identity, offered: &Identity) -> Result<(), Rejection> {
    let field = if offered.tenant != run.tenant {
        IdentityField::Tenant
    } else if offered.session != run.session {
        IdentityField::Session
    } else if offered.run != run.run {
        IdentityField::Run
    } else if offered.definition != run.definition {
        IdentityField::Definition
    } else {
        return Ok(());
    };
    Err(Rejection::IdentityMismatch { field })
}

/// CKP-3, CKP-2, then RES-3 and RES-2: the checkpoint is of the schema this kernel resumes,
/// intact, and of the run's current revision (or the evidence of who won it).
pub(super) fn check_checkpoint(run: &Run, r: &Resume) -> Result<(), Rejection> {
    let cp = &r.checkpoint;
    let got = cp.schema_version;
    if got > SCHEMA_VERSION {
        return Err(Rejection::SchemaTooNew {
            supported: SCHEMA_VERSION,
            got,
        });
    }
    if got == 0 {
        return Err(Rejection::UnknownSchema { got });
    }
    if got < SCHEMA_VERSION {
        return Err(Rejection::MigrationRequired {
            got,
            current: SCHEMA_VERSION,
        });
    }
    cp.verify()
        .map_err(|(expected, found)| Rejection::DigestMismatch { expected, found })?;
    check_revision(run, cp.revision, &cp.digest, &r.decision)
}

/// RES-3, RES-2: the checkpoint's revision must be the run's. An older one is the checkpoint
/// the last resume was taken from (its caller is told whether its decision won) or stale.
fn check_revision(
    run: &Run,
    got: Revision,
    checkpoint: &Digest,
    decision: &Decision,
) -> Result<(), Rejection> {
    let current = run.revision;
    if got > current {
        return Err(Rejection::FutureRevision { current, got });
    }
    // BAT-2, RES-2: a batch's decisions bind to the checkpoint it opened with.
    if let Some(verdict) = super::batch::check_revision(run, got, checkpoint, decision) {
        return verdict;
    }
    if got < current {
        return Err(match &run.last_resume {
            Some(rc) if rc.from == got && rc.checkpoint == *checkpoint => {
                if rc.decision == *decision {
                    Rejection::AlreadyApplied {
                        from: rc.from,
                        to: rc.to,
                    }
                } else {
                    Rejection::AlreadyResumed {
                        from: rc.from,
                        to: rc.to,
                    }
                }
            }
            _ => Rejection::StaleRevision { current, got },
        });
    }
    Ok(())
}

/// RES-4: the first field in which a checkpoint differs from the one the run would write.
pub(super) fn mismatch(expected: &Checkpoint, got: &Checkpoint) -> Option<CheckpointField> {
    use CheckpointField::*;
    [
        (
            expected.reason == got.reason && expected.next_intent == got.next_intent,
            Reason,
        ),
        (expected.pending == got.pending, PendingCall),
        (expected.key_digest == got.key_digest, KeyDigest),
        (expected.requester == got.requester, Requester),
        (expected.waiting_on == got.waiting_on, WaitingOn),
        (
            expected.cancel_requested_by == got.cancel_requested_by,
            CancelRequestedBy,
        ),
        (expected.expires_at == got.expires_at, ExpiresAt),
        (expected.responsible == got.responsible, Responsible),
        (expected.created_at == got.created_at, CreatedAt),
        (
            expected.resource_version == got.resource_version,
            ResourceVersion,
        ),
        (expected.batch == got.batch, Batch),
    ]
    .into_iter()
    .find(|(same, _)| !same)
    .map(|(_, field)| field)
}

/// APR-1 to APR-3: an approval binds to the call, its arguments, its requester and the
/// checkpoint revision; it expires; only the recorded approver, never the requester, decides.
pub(super) fn check_approval(
    a: &Approval,
    call: &BoundCall,
    requester: &Name,
    revision: Revision,
    at: Time,
    responsible: &Name,
) -> Result<(), Rejection> {
    let field = if a.revision != revision {
        Some(ApprovalField::Revision)
    } else if a.call_id != call.call.call_id {
        Some(ApprovalField::CallId)
    } else if a.args != call.call.args {
        Some(ApprovalField::Args)
    } else if a.requester != *requester {
        Some(ApprovalField::Requester)
    } else {
        None
    };
    if let Some(field) = field {
        return Err(Rejection::ApprovalMismatch { field });
    }
    if at > a.expires_at {
        return Err(Rejection::ApprovalExpired {
            expires_at: a.expires_at,
            now: at,
        });
    }
    if a.approver == *requester {
        return Err(Rejection::SelfApproval { party: a.approver });
    }
    if a.approver != *responsible {
        return Err(Rejection::Unauthorised {
            expected: *responsible,
            got: a.approver,
        });
    }
    Ok(())
}

/// RES-3, RES-7: new work that acts on the resource the checkpoint was decided on (an
/// approved dispatch, a person's go-ahead, a retry) re-checks that the resource has not moved
/// since, then current permission and budget.
pub(super) fn recheck(cp: &Checkpoint, facts: &Facts) -> Result<(), Rejection> {
    if facts.resource_version != cp.resource_version {
        return Err(Rejection::ResourceChanged {
            checkpoint: cp.resource_version,
            current: facts.resource_version,
        });
    }
    recheck_policy(facts)
}

/// RES-7: current policy, supplied by the driver as facts, re-checked for new work.
pub(super) fn recheck_policy(facts: &Facts) -> Result<(), Rejection> {
    if !facts.permitted {
        return Err(Rejection::PermissionRevoked);
    }
    if !facts.within_budget {
        return Err(Rejection::BudgetExhausted);
    }
    Ok(())
}

/// REC-3, KEY-2, KEY-1, REC-4: a new call allows an attempt and, by what the run's history
/// holds of its id and key, may be bound; its key is bound to its arguments.
pub(super) fn bind(call: &Call, prior: &Prior) -> Result<BoundCall, Rejection> {
    if call.contract.max_attempts == 0 {
        return Err(Rejection::NoAttemptsAllowed);
    }
    prior.admit(call)?;
    Ok(BoundCall {
        call: *call,
        key_digest: key_digest(&call.key, &call.args),
    })
}

/// REC-4: records a call's committed result, to be reused, and spends its key.
pub(super) fn record(next: &mut Run, f: &InFlight, result: Digest) {
    let call = &f.call.call;
    next.last_call = Some(CallOutcome {
        call_id: call.call_id,
        key: call.key,
        args: call.args,
        result,
    });
}

/// KEY-3: the command for a call and attempt, under the key the tool must see.
pub(super) fn dispatch_of(run: &Run, f: &InFlight) -> Dispatch {
    run.dispatch_of(f)
}

pub(super) fn unknown(in_flight: InFlight, cancelled_by: Option<Name>) -> Reason {
    Reason::OutcomeUnknown {
        in_flight,
        cancelled_by,
    }
}

pub(super) fn person(unresolved: InFlight, cancelled_by: Option<Name>) -> Reason {
    Reason::ManualIntervention {
        unresolved: Some(unresolved),
        cancelled_by,
    }
}

/// CAN-2: once an unsettled effect is settled, a waiting cancel ends the run; otherwise it
/// runs on.
pub(super) fn settled(cancelled_by: Option<Name>) -> Phase {
    match cancelled_by {
        Some(by) => Phase::Failed(FailCause::Cancelled { by }),
        None => Phase::Running { in_flight: None },
    }
}

/// SUS-1, EXP-1: a suspension the kernel opens (reconciliation, escalation), owned by the
/// run's operator for the reconcile window, with an expiry that can be passed. At the end of
/// time no such expiry exists, and none is opened.
pub(super) fn held_by_operator(run: &Run, at: Time, reason: Reason) -> Result<Phase, Rejection> {
    if at == Time::END {
        return Err(Rejection::ClockExhausted { at });
    }
    Ok(Phase::Suspended(Suspension {
        reason,
        since: at,
        expires_at: at.expiry_after(run.policy.reconcile_window),
        responsible: run.policy.operator,
    }))
}
