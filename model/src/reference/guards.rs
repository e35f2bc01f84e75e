//! Guards several inputs share, each citing the spec ID it enforces. A guard reads the run
//! and the input and either passes or names the rejection, with its evidence.

use super::{RefRun, Status};
use resumable_kernel::{
    Call, Checkpoint, CheckpointField, Facts, InFlight, Name, Prior, Rejection, Resume, Suspension,
    Time, VerdictKind, SCHEMA_VERSION,
};

/// CLK-1: time never runs backwards within a run.
pub(super) fn guard_clock(run: &RefRun, at: Time) -> Result<(), Rejection> {
    if at < run.clock {
        return Err(Rejection::ClockRegressed {
            last: run.clock,
            got: at,
        });
    }
    Ok(())
}

/// REV-1: a run whose revision counter is exhausted accepts nothing more.
pub(super) fn guard_revision_counter(run: &RefRun) -> Result<(), Rejection> {
    match run.revision.next() {
        Some(_) => Ok(()),
        None => Err(Rejection::RevisionExhausted),
    }
}

/// INV-1: completed and failed are absorbing.
pub(super) fn guard_not_terminal(run: &RefRun) -> Result<(), Rejection> {
    match run.status {
        Status::Completed { .. } | Status::Failed(_) => Err(terminal(run)),
        _ => Ok(()),
    }
}

pub(crate) fn terminal(run: &RefRun) -> Rejection {
    Rejection::Terminal {
        phase: run.phase().kind(),
    }
}

/// WAL-2: while a dispatch is in flight the run waits for it.
pub(super) fn in_flight_rejection(f: &InFlight) -> Rejection {
    Rejection::DispatchInFlight {
        call_id: f.call.call.call_id,
    }
}

/// Dispatch, complete and fail need a running run with nothing in flight (WAL-2).
pub(super) fn guard_running_idle(run: &RefRun) -> Result<(), Rejection> {
    match run.status {
        // BAT-4: the batch's calls in flight together keep the run busy.
        Status::Running => match run.batch_in_flight() {
            Some(f) => Err(in_flight_rejection(&f)),
            None => Ok(()),
        },
        Status::AwaitingResult(f) => Err(in_flight_rejection(&f)),
        Status::Suspended(_) | Status::Completed { .. } | Status::Failed(_) => {
            Err(Rejection::NotRunning {
                phase: run.phase().kind(),
            })
        }
    }
}

/// SUS-1, EXP-1: a suspension expires after it begins, and before the end of time, so that
/// an input can pass its expiry.
pub(super) fn guard_expiry(expires_at: Time, at: Time) -> Result<(), Rejection> {
    if expires_at <= at {
        return Err(Rejection::ExpiryNotInFuture {
            expires_at,
            now: at,
        });
    }
    if expires_at == Time::END {
        return Err(Rejection::ExpiryUnreachable { expires_at });
    }
    Ok(())
}

/// REC-3, KEY-2, KEY-1, REC-4: a call allows at least one attempt; over the run's whole
/// history, as the store's index reports it, its id was never used, and its key was never
/// bound to other arguments nor spent by a recorded result. (The run holds no history; its
/// last call is no part of the rule.)
pub(super) fn admit_by_history(_: &RefRun, call: &Call, prior: &Prior) -> Result<(), Rejection> {
    if call.contract.max_attempts == 0 {
        return Err(Rejection::NoAttemptsAllowed);
    }
    if prior.call_id_used {
        return Err(Rejection::CallIdReused {
            call_id: call.call_id,
        });
    }
    match prior.key {
        Some(earlier) if earlier.args != call.args => Err(Rejection::KeyConflict { key: call.key }),
        Some(earlier) if earlier.committed => Err(Rejection::KeyCommitted { key: call.key }),
        _ => Ok(()),
    }
}

/// POL-1 at suspend time (spec 4.3, 5.5): a call is put to an approver only if some decision
/// it takes (`takes`) is one the run's policy and the call's tool both allow; otherwise no
/// decision could ever answer the suspension.
pub(super) fn guard_some_decision(
    run: &RefRun,
    call: &Call,
    takes: &[VerdictKind],
) -> Result<(), Rejection> {
    let answerable = takes
        .iter()
        .any(|kind| run.policy.allowed.contains(*kind) && call.contract.allowed.contains(*kind));
    if answerable {
        Ok(())
    } else {
        Err(Rejection::NoDecisionAllowed {
            call_id: call.call_id,
        })
    }
}

/// APR-3: the party responsible for an approval is never its requester.
pub(super) fn guard_requester_is_not_responsible(
    requester: Name,
    responsible: Name,
) -> Result<(), Rejection> {
    if requester == responsible {
        return Err(Rejection::SelfApproval { party: requester });
    }
    Ok(())
}

/// CKP-3: the current schema only; an older one must be migrated explicitly first, and
/// version 0 was never written and has no migration.
pub(super) fn guard_schema(cp: &Checkpoint) -> Result<(), Rejection> {
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
    Ok(())
}

/// CKP-2: the digest carried is the digest of the fields.
pub(super) fn guard_digest(cp: &Checkpoint) -> Result<(), Rejection> {
    cp.verify()
        .map_err(|(expected, found)| Rejection::DigestMismatch { expected, found })
}

/// RES-3: the resource has not moved since the checkpoint the decision was made on.
pub(crate) fn guard_resource_version(cp: &Checkpoint, facts: &Facts) -> Result<(), Rejection> {
    if facts.resource_version != cp.resource_version {
        return Err(Rejection::ResourceChanged {
            checkpoint: cp.resource_version,
            current: facts.resource_version,
        });
    }
    Ok(())
}

/// Spec 5 row 6: only a suspended run can be resumed (terminal phases were refused first).
pub(super) fn guard_suspended(run: &RefRun) -> Result<Suspension, Rejection> {
    match run.status {
        Status::Suspended(s) => Ok(s),
        _ => Err(Rejection::NotSuspended {
            phase: run.phase().kind(),
        }),
    }
}

/// RES-4: the checkpoint describes the run's suspension (`expected`, the run's own, or `None`
/// if it is not suspended) field by field; the first field that differs is named.
pub(super) fn guard_checkpoint_matches(
    run: &RefRun,
    expected: Option<Checkpoint>,
    cp: &Checkpoint,
) -> Result<(), Rejection> {
    let Some(expected) = expected else {
        return Err(Rejection::NotSuspended {
            phase: run.phase().kind(),
        });
    };
    let field = if cp.reason != expected.reason || cp.next_intent != expected.next_intent {
        CheckpointField::Reason
    } else if cp.pending != expected.pending {
        CheckpointField::PendingCall
    } else if cp.key_digest != expected.key_digest {
        CheckpointField::KeyDigest
    } else if cp.requester != expected.requester {
        CheckpointField::Requester
    } else if cp.waiting_on != expected.waiting_on {
        CheckpointField::WaitingOn
    } else if cp.cancel_requested_by != expected.cancel_requested_by {
        CheckpointField::CancelRequestedBy
    } else if cp.expires_at != expected.expires_at {
        CheckpointField::ExpiresAt
    } else if cp.responsible != expected.responsible {
        CheckpointField::Responsible
    } else if cp.created_at != expected.created_at {
        CheckpointField::CreatedAt
    } else if cp.resource_version != expected.resource_version {
        CheckpointField::ResourceVersion
    } else if cp.batch != expected.batch {
        // Spec 5.5: a batch's checkpoint carries the digest of its calls; the list of 5 row 7
        // does not place it, so it is compared last.
        CheckpointField::Batch
    } else {
        return Ok(());
    };
    Err(Rejection::CheckpointMismatch { field })
}

/// RES-6: a callback or resource decision names what the suspension awaits.
pub(super) fn guard_awaited(expected: Name, got: Name) -> Result<(), Rejection> {
    if expected != got {
        return Err(Rejection::WaitMismatch { expected, got });
    }
    Ok(())
}

/// RES-6, APR-3: only the party the run recorded decides.
pub(crate) fn guard_party(expected: Name, got: Name) -> Result<(), Rejection> {
    if expected != got {
        return Err(Rejection::Unauthorised { expected, got });
    }
    Ok(())
}

/// RES-7: a resume that leads to new work re-checks current permission, then budget.
pub(crate) fn guard_policy(facts: &Facts) -> Result<(), Rejection> {
    if !facts.permitted {
        return Err(Rejection::PermissionRevoked);
    }
    if !facts.within_budget {
        return Err(Rejection::BudgetExhausted);
    }
    Ok(())
}

/// RES-3, RES-7: a decision that acts on the resource the checkpoint was decided on
/// re-checks that it has not moved, then current permission and budget.
pub(crate) fn guard_present(resume: &Resume) -> Result<(), Rejection> {
    guard_resource_version(&resume.checkpoint, &resume.facts)?;
    guard_policy(&resume.facts)
}
