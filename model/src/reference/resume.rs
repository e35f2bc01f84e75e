//! Resume (spec 5, RES-1): after the guards of every input (identity, schema, digest,
//! revision, terminal phase, clock, revision counter), the rows of the spec's table in order,
//! then what the decision does.

use super::guards::{
    guard_awaited, guard_checkpoint_matches, guard_party, guard_policy, guard_present,
    guard_suspended,
};
use super::moves::{escalate, Move, StepResult};
use super::{RecordedCall, RefRun, Rules, Status};
use resumable_kernel::{
    Approval, ApprovalField, AuditRecord, BoundCall, Checkpoint, Command, Decision, Effects,
    EventKind, Facts, FailCause, Identity, IdentityField, InFlight, Name, QueryAnswer, Reason,
    Rejection, Resolution, Resume, ResumeReceipt, Revision, Suspension, Time, ToolContract,
    VerdictKind,
};

/// CAN-2: once an unsettled effect is settled, a waiting cancel ends the run; otherwise it
/// runs on.
fn settled(cancelled_by: Option<Name>) -> Status {
    match cancelled_by {
        Some(by) => Status::Failed(FailCause::Cancelled { by }),
        None => Status::Running,
    }
}

fn recorded(f: &InFlight, result: resumable_kernel::Digest) -> Option<RecordedCall> {
    Some(RecordedCall {
        call: f.call,
        attempt: f.attempt,
        result,
    })
}

impl Rules {
    /// A resume: the rows of spec 5 in order, then what the decision does, the resource it
    /// observed recorded (RES-3), the audit record (AUD-1) and the receipt (RES-2).
    pub(super) fn resume(&self, run: &RefRun, at: Time, resume: &Resume) -> StepResult {
        let cp = &resume.checkpoint;
        let decision = &resume.decision;
        // Rows 1 to 5 (schema, digest, revision) were checked with the guards of every input.
        // RES-3: what the resume's facts say of the resource, recorded below.
        let observed = (self.resume_resource)(cp, &resume.facts)?;
        let suspension = guard_suspended(run)?; // row 6
                                                // Row 7, RES-4: the two compared as the machine persists a checkpoint.
        let expected = run.checkpoint().map(self.persisted);
        guard_checkpoint_matches(run, expected, &(self.persisted)(*cp))?;
        self.guard_decision_in_time(&suspension, at)?; // row 8, RES-5
        self.guard_decision_answers(run, &suspension, decision, cp, at)?; // rows 9 and 10, RES-6
        let mut mv = self.decide(run, &suspension, resume, at)?; // rows 11 and 12
        if let Some(version) = observed {
            mv = mv.observing(version);
        }
        let (mut next, effects) =
            self.finish_step(run, at, EventKind::Resume, Some(decision.kind()), mv)?;
        // AUD-1: the resume's record, as the rule for it writes it from the transition's.
        let effects = match effects.audit() {
            Some(record) => Effects::of_batch(
                (self.resume_record)(*record, cp),
                effects.histories().copied(),
                effects.checkpoint().copied(),
                effects.commands().copied(),
            ),
            None => effects,
        };
        // RES-2: the receipt, for a late or duplicate resumer holding this checkpoint.
        next.last_resume = Some(ResumeReceipt {
            from: run.revision,
            to: next.revision,
            checkpoint: cp.digest,
            decision: *decision,
        });
        Ok((next, effects))
    }

    /// RES-5: a decision after the suspension's expiry is refused.
    fn guard_decision_in_time(&self, s: &Suspension, at: Time) -> Result<(), Rejection> {
        // APR-2 with RES-5: a suspension awaiting approval lapses by the approvals' rule.
        let lapsed = match s.reason {
            Reason::PendingApproval { .. } => (self.approval_lapsed)(s.expires_at, at),
            _ => at > s.expires_at,
        };
        if lapsed {
            return Err(Rejection::Expired {
                expires_at: s.expires_at,
                now: at,
            });
        }
        Ok(())
    }

    /// RES-6: the decision answers the suspension's reason, naming what is awaited, from the
    /// party the run recorded. Approvals are bound further by APR-1 to APR-3.
    fn guard_decision_answers(
        &self,
        run: &RefRun,
        s: &Suspension,
        decision: &Decision,
        cp: &Checkpoint,
        at: Time,
    ) -> Result<(), Rejection> {
        match (&s.reason, decision) {
            (
                Reason::PendingApproval { call, requester },
                Decision::Approve(approval) | Decision::Deny(approval),
            ) => {
                self.guard_approval(call, *requester, s.responsible, cp.revision, approval, at)?;
                // POL-1: the run's policy and the call's tool both allow the decision.
                let kind = match decision {
                    Decision::Deny(_) => VerdictKind::Deny,
                    _ => VerdictKind::Approve,
                };
                if !run
                    .policy
                    .allowed
                    .and(call.call.contract.allowed)
                    .contains(kind)
                {
                    return Err(Rejection::DecisionNotAllowed { decision: kind });
                }
                Ok(())
            }
            (Reason::ExternalCallback { callback }, Decision::Callback { callback: got, .. }) => {
                guard_awaited(*callback, *got)
            }
            (Reason::ResourceWait { resource }, Decision::ResourceReady { resource: got }) => {
                guard_awaited(*resource, *got)
            }
            (
                Reason::ManualIntervention { unresolved, .. },
                Decision::Intervene { by, resolution },
            ) => {
                guard_party(s.responsible, *by)?;
                // REC-4: "committed" records the unresolved effect's result; with none, there
                // is nothing to record.
                if matches!(resolution, Resolution::Committed { .. }) && unresolved.is_none() {
                    return Err(Rejection::NothingUnresolved);
                }
                Ok(())
            }
            (Reason::OutcomeUnknown { .. }, Decision::Reconcile(_)) => Ok(()),
            (Reason::PendingBatch, Decision::Batch { decisions }) => {
                self.guard_batch_decisions(run, s, decisions, at)
            }
            (reason, decision) => Err(Rejection::DecisionMismatch {
                reason: reason.kind(),
                decision: decision.kind(),
            }),
        }
    }

    /// Spec 5.2, for approve and deny alike: the approval binds to the checkpoint revision
    /// and the pending call's id, argument digest and requester (APR-1); it has not expired
    /// (APR-2); the approver is entitled (APR-3). The caller checks rule 5 (POL-1) after it.
    fn guard_approval(
        &self,
        call: &BoundCall,
        requester: Name,
        responsible: Name,
        revision: Revision,
        approval: &Approval,
        at: Time,
    ) -> Result<(), Rejection> {
        if let Some(field) = (self.approval_binding)(approval, call, requester, revision) {
            return Err(Rejection::ApprovalMismatch { field });
        }
        if (self.approval_lapsed)(approval.expires_at, at) {
            return Err(Rejection::ApprovalExpired {
                expires_at: approval.expires_at,
                now: at,
            });
        }
        (self.approver_entitled)(approval.approver, requester, responsible)
    }

    /// What the decision does, once every guard passed (spec 5.1): rows 11 and 12.
    fn decide(
        &self,
        run: &RefRun,
        s: &Suspension,
        resume: &Resume,
        at: Time,
    ) -> Result<Move, Rejection> {
        Ok(match (&s.reason, &resume.decision) {
            (Reason::PendingApproval { call, .. }, Decision::Approve(_)) => {
                self.approve(run, call, resume)?
            }
            // APR-4: a denial fails the run; the denied call never runs.
            (Reason::PendingApproval { call, .. }, Decision::Deny(_)) => {
                Move::to((self.denial)(call))
            }
            // The run continues its own steps once current policy allows it; the resource
            // it waited on may well have moved, which is recorded, not refused.
            (Reason::ExternalCallback { .. }, Decision::Callback { .. })
            | (Reason::ResourceWait { .. }, Decision::ResourceReady { .. }) => {
                guard_policy(&resume.facts)?;
                Move::to(Status::Running)
            }
            (
                Reason::ManualIntervention {
                    unresolved,
                    cancelled_by,
                },
                Decision::Intervene { by, resolution },
            ) => match resolution {
                // The person established the effect committed: record it (REC-4), then a
                // waiting cancel takes effect (CAN-2).
                Resolution::Committed { result } => Move::to(settled(*cancelled_by))
                    .recording(unresolved.and_then(|f| recorded(&f, *result))),
                // The person made sure the effect did not and will not commit: a waiting
                // cancel takes effect; otherwise the run goes on, after the re-checks.
                Resolution::Continue => {
                    if cancelled_by.is_none() {
                        guard_present(resume)?;
                    }
                    Move::to(settled(*cancelled_by))
                }
                Resolution::Abandon => Move::to(Status::Failed(FailCause::Abandoned { by: *by })),
            },
            (
                Reason::OutcomeUnknown {
                    in_flight,
                    cancelled_by,
                },
                Decision::Reconcile(answer),
            ) => self.reconcile(run, *in_flight, *cancelled_by, answer, resume, at)?,
            (Reason::PendingBatch, Decision::Batch { decisions }) => {
                self.decide_batch(run, s, decisions, resume)?
            }
            // The decision guard refused every other pairing; kept total rather than trusted.
            (reason, decision) => {
                return Err(Rejection::DecisionMismatch {
                    reason: reason.kind(),
                    decision: decision.kind(),
                })
            }
        })
    }

    /// APR-1, WAL-1: after the re-checks of the present (RES-3, RES-7), the approved call is
    /// dispatched once, under its original key.
    fn approve(&self, run: &RefRun, call: &BoundCall, resume: &Resume) -> Result<Move, Rejection> {
        (self.approval_rechecks)(resume)?;
        let in_flight = InFlight {
            call: *call,
            attempt: 0,
            dispatches: 1,
        };
        Ok(Move::to(Status::AwaitingResult(in_flight))
            .then((self.approved_dispatch)(self, run, call)))
    }

    /// REC-2 to REC-4, CAN-2: the status query's answer for an unknown outcome. An answer is
    /// a fact about the past and is never refused for the present's sake. "Not committed"
    /// settles the outcome only if the query fences.
    fn reconcile(
        &self,
        run: &RefRun,
        f: InFlight,
        cancelled_by: Option<Name>,
        answer: &QueryAnswer,
        resume: &Resume,
        at: Time,
    ) -> Result<Move, Rejection> {
        let fences = f.call.call.contract.query_fences;
        let carried = (self.person_keeps_cancel)(cancelled_by);
        Ok(match (answer, cancelled_by) {
            // REC-4: the committed result is recorded and reused; a waiting cancel now ends
            // the run.
            (QueryAnswer::Committed { result }, _) => {
                Move::to(settled(cancelled_by)).recording(recorded(&f, *result))
            }
            // REC-2: nobody can tell: a person decides; never retried blindly.
            (QueryAnswer::Unknown, _) => escalate(run, f, carried, at)?,
            // The fenced attempt can never commit: the cancel takes effect.
            (QueryAnswer::NotCommitted, Some(by)) if (self.not_committed_cancels)(fences) => {
                Move::to(Status::Failed(FailCause::Cancelled { by }))
            }
            // Unfenced, the late original could still commit: a person settles it.
            (QueryAnswer::NotCommitted, Some(_)) => escalate(run, f, carried, at)?,
            // REC-3: retry only as the tool's contract allows.
            (QueryAnswer::NotCommitted, None) => self.retry(run, f, resume, at)?,
        })
    }

    /// REC-3: after "not committed", a fencing query allows a retry under a fresh attempt
    /// key; a deduping tool allows one under the same key; with neither, a person decides.
    /// Either way at most `max_attempts` dispatches in all, and only if the present still
    /// allows it; otherwise a person decides.
    fn retry(
        &self,
        run: &RefRun,
        f: InFlight,
        resume: &Resume,
        at: Time,
    ) -> Result<Move, Rejection> {
        let contract = f.call.call.contract;
        if f.dispatches >= contract.max_attempts || guard_present(resume).is_err() {
            return escalate(run, f, None, at);
        }
        let attempt = (self.retry_attempt)(&contract, f.attempt);
        let (Some(attempt), Some(dispatches)) = (attempt, f.dispatches.checked_add(1)) else {
            return escalate(run, f, None, at);
        };
        let again = InFlight {
            call: f.call,
            attempt,
            dispatches,
        };
        Ok(Move::to(Status::AwaitingResult(again))
            .then(Command::Dispatch(self.command(run, &f.call, attempt))))
    }
}

/// RES-3: the resume's facts are the driver's honest observation of the resource, recorded
/// as the run's once the decision is taken; a decision is refused for a moved resource only
/// where it acts on the present ([`guard_present`]).
pub(super) fn recorded_from_facts(_: &Checkpoint, facts: &Facts) -> Result<Option<u64>, Rejection> {
    Ok(Some(facts.resource_version))
}

/// AUD-1: the record describes the transition, as it was made.
pub(super) fn record_of_the_transition(record: AuditRecord, _: &Checkpoint) -> AuditRecord {
    record
}

/// APR-1: the approval binds to the checkpoint's revision, then the pending call's id,
/// argument digest and requester; the first field that does not is named.
pub(crate) fn bound_to_call(
    approval: &Approval,
    call: &BoundCall,
    requester: Name,
    revision: Revision,
) -> Option<ApprovalField> {
    if approval.revision != revision {
        Some(ApprovalField::Revision)
    } else if approval.call_id != call.call.call_id {
        Some(ApprovalField::CallId)
    } else if approval.args != call.call.args {
        Some(ApprovalField::Args)
    } else if approval.requester != requester {
        Some(ApprovalField::Requester)
    } else {
        None
    }
}

/// APR-3: the requester never approves its own call, and only the party the run recorded
/// decides.
pub(crate) fn requester_never_approves(
    approver: Name,
    requester: Name,
    responsible: Name,
) -> Result<(), Rejection> {
    if approver == requester {
        return Err(Rejection::SelfApproval { party: approver });
    }
    guard_party(responsible, approver)
}

/// WAL-1: the approved call is dispatched once, under its original key.
pub(crate) fn approved_call(rules: &Rules, run: &RefRun, call: &BoundCall) -> Command {
    Command::Dispatch(rules.command(run, call, 0))
}

/// APR-4: a denial fails the run; the denied call never runs.
pub(super) fn fails_run(call: &BoundCall) -> Status {
    Status::Failed(FailCause::Denied {
        call_id: call.call.call_id,
    })
}

/// REC-3: after "not committed", a fencing query allows a retry under a fresh attempt key
/// (the old key is fenced and can never commit); a deduping tool allows one under the same
/// key (the delayed original may still arrive, and only the same key lets dedupe absorb
/// it); with neither, any retry may commit twice: none.
pub(crate) fn retry_by_contract(contract: &ToolContract, attempt: u8) -> Option<u8> {
    if contract.query_fences {
        attempt.checked_add(1)
    } else if contract.dedupes {
        Some(attempt)
    } else {
        None
    }
}

/// ID-1: the checkpoint belongs to this tenant, session, run and definition (`theirs` against
/// the run's, `mine`). Checked first, so a stranger learns nothing else; the first field that
/// differs is named, its value never echoed.
pub(super) fn guard_identity(mine: &Identity, theirs: &Identity) -> Result<(), Rejection> {
    match identity_fields(mine, theirs)
        .into_iter()
        .find(|&(_, same)| !same)
    {
        Some((field, _)) => Err(Rejection::IdentityMismatch { field }),
        None => Ok(()),
    }
}

/// Each field of two identities, in the spec's order, and whether the two agree on it.
pub(crate) fn identity_fields(mine: &Identity, theirs: &Identity) -> [(IdentityField, bool); 4] {
    [
        (IdentityField::Tenant, theirs.tenant == mine.tenant),
        (IdentityField::Session, theirs.session == mine.session),
        (IdentityField::Run, theirs.run == mine.run),
        (
            IdentityField::Definition,
            theirs.definition == mine.definition,
        ),
    ]
}

/// RES-3 and RES-2: the checkpoint is at the run's revision. One from the future is
/// refused; an older one is either the very checkpoint the last resume was taken from (a
/// duplicate of the winner, or a conflicting loser) or stale.
pub(super) fn guard_revision(
    run: &RefRun,
    cp: &Checkpoint,
    decision: &Decision,
) -> Result<(), Rejection> {
    // Spec 5.5, with rows 4 and 5: a batch decision on the batch's own checkpoint is
    // answered from the batch, even after it left its suspension or the run ended.
    if let (Decision::Batch { decisions }, Some(b)) = (decision, &run.batch) {
        if cp.revision == b.opened && cp.digest == b.checkpoint {
            return answer_from_batch(b, decisions);
        }
    }
    // BAT-2: while a batch awaits decisions, its checkpoint is the one it opened with; any
    // other checkpoint not from the future is stale (spec 5.5, "Duplicates and late
    // decisions").
    let (current, got) = (run.revision, cp.revision);
    if got > current {
        return Err(Rejection::FutureRevision { current, got });
    }
    if let Some(b) = run.open_batch() {
        if got == b.opened {
            return Ok(());
        }
        return Err(Rejection::StaleRevision { current, got });
    }
    if got < current {
        return Err(match run.last_resume {
            Some(won) if won.from == got && won.checkpoint == cp.digest => {
                if won.decision == *decision {
                    Rejection::AlreadyApplied {
                        from: won.from,
                        to: won.to,
                    }
                } else {
                    Rejection::AlreadyResumed {
                        from: won.from,
                        to: won.to,
                    }
                }
            }
            _ => Rejection::StaleRevision { current, got },
        });
    }
    Ok(())
}

/// RES-2 for a batch (spec 5.5): the first decision of the list, in order, that names a call
/// already decided is answered with the decision recorded for it; failing that, a batch that
/// left its suspension answers that another input resumed it; an open batch with no call of
/// the list decided goes on to the checks of the decisions.
fn answer_from_batch(
    b: &resumable_kernel::Batch,
    decisions: &resumable_kernel::Decisions,
) -> Result<(), Rejection> {
    let from = b.opened;
    for d in decisions.iter() {
        if let Some((recorded, to)) = b.slot(&d.approval.call_id).and_then(|s| s.decided) {
            return Err(if recorded == *d {
                Rejection::AlreadyApplied { from, to }
            } else {
                Rejection::AlreadyResumed { from, to }
            });
        }
    }
    match b.closed {
        Some(to) => Err(Rejection::AlreadyResumed { from, to }),
        None => Ok(()),
    }
}
