//! Resume (spec 5, RES-1): after the guards of every input (identity, schema, digest,
//! revision, terminal phase, clock, revision counter), the rows of the spec's table in order,
//! then what the decision does.

use super::guards::{
    guard_awaited, guard_checkpoint_matches_run, guard_party, guard_policy, guard_resource_version,
    guard_suspended,
};
use super::moves::{command, escalate, finish_step, Move, Stepped};
use super::{RecordedCall, RefRun, Reference, Status};
use crate::variant::Variant;
use resumable_kernel::{
    Approval, AuditRecord, BoundCall, Checkpoint, Command, Decision, Effects, EventKind, FailCause,
    IdentityField, InFlight, Name, PhaseKind, QueryAnswer, Reason, Rejection, Resolution, Resume,
    ResumeReceipt, Revision, Suspension, Time, VerdictKind,
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

impl Reference {
    pub(super) fn resume(&self, run: &RefRun, at: Time, resume: &Resume) -> Stepped {
        let cp = &resume.checkpoint;
        let decision = &resume.decision;
        // Rows 1 to 5 (schema, digest, revision) were checked with the guards of every input.
        if self.breaks(Variant::ResourceBlocksAnswers) {
            // The broken way: the resource is compared for every decision, first.
            guard_resource_version(cp, &resume.facts)?;
        }
        let suspension = guard_suspended(run)?; // row 6
        if self.breaks(Variant::CancelNotCheckpointed) {
            // The broken way: no checkpoint carries the cancel, so none is compared.
            let waiting = run.checkpoint().and_then(|c| c.cancel_requested_by);
            let compared = Checkpoint {
                cancel_requested_by: waiting,
                ..*cp
            };
            guard_checkpoint_matches_run(run, &compared)?; // row 7, RES-4
        } else {
            guard_checkpoint_matches_run(run, cp)?; // row 7, RES-4
        }
        self.guard_decision_in_time(&suspension, at)?; // row 8, RES-5
        self.guard_decision_answers(run, &suspension, decision, cp, at)?; // rows 9 and 10, RES-6
        let mut mv = self.decide(run, &suspension, resume, at)?; // rows 11 and 12
        if !self.breaks(Variant::ResourceBlocksAnswers) {
            // RES-3: the driver's honest observation of the resource is the run's from now on.
            mv = mv.observing(resume.facts.resource_version);
        }
        let (mut next, mut effects) =
            finish_step(run, at, EventKind::Resume, Some(decision.kind()), mv)?;
        if self.breaks(Variant::ResumeRecordFromCheckpoint) {
            // The broken way: the record describes the checkpoint, not the transition.
            let from_checkpoint = AuditRecord {
                revision: cp.revision,
                at: cp.created_at,
                event: EventKind::Resume,
                decision: Some(decision.kind()),
                phase: PhaseKind::Suspended,
                reason: Some(cp.reason),
            };
            effects = Effects::of_batch(
                from_checkpoint,
                effects.histories().copied(),
                effects.checkpoint().copied(),
                effects.commands().copied(),
            );
        }
        // RES-2: the receipt, for a late or duplicate resumer holding this checkpoint.
        next.last_resume = Some(ResumeReceipt {
            from: run.revision,
            to: next.revision,
            checkpoint: cp.digest,
            decision: *decision,
        });
        Ok((next, effects))
    }

    /// ID-1: the checkpoint belongs to this tenant, session, run and definition. Checked
    /// first, so a stranger learns nothing else; the field is named, the value never echoed.
    pub(super) fn guard_identity(&self, run: &RefRun, cp: &Checkpoint) -> Result<(), Rejection> {
        if self.breaks(Variant::NoIdentityCheck) {
            return Ok(());
        }
        let (mine, theirs) = (&run.identity, &cp.identity);
        // In the spec's order; a variant that ignores one field skips it.
        let fields = [
            (
                IdentityField::Tenant,
                Variant::IdentityIgnoresTenant,
                theirs.tenant == mine.tenant,
            ),
            (
                IdentityField::Session,
                Variant::IdentityIgnoresSession,
                theirs.session == mine.session,
            ),
            (
                IdentityField::Run,
                Variant::IdentityIgnoresRun,
                theirs.run == mine.run,
            ),
            (
                IdentityField::Definition,
                Variant::IdentityIgnoresDefinition,
                theirs.definition == mine.definition,
            ),
        ];
        match (fields.into_iter()).find(|&(_, ignored, same)| !same && !self.breaks(ignored)) {
            Some((field, _, _)) => Err(Rejection::IdentityMismatch { field }),
            None => Ok(()),
        }
    }

    /// RES-3 and RES-2: the checkpoint is at the run's revision. One from the future is
    /// refused; an older one is either the very checkpoint the last resume was taken from (a
    /// duplicate of the winner, or a conflicting loser) or stale.
    pub(super) fn guard_revision(
        &self,
        run: &RefRun,
        cp: &Checkpoint,
        decision: &Decision,
    ) -> Result<(), Rejection> {
        if self.breaks(Variant::NoRevisionCheck) {
            return Ok(());
        }
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

    /// RES-5: a decision after the suspension's expiry is refused.
    fn guard_decision_in_time(&self, s: &Suspension, at: Time) -> Result<(), Rejection> {
        let awaits_approval = matches!(s.reason, Reason::PendingApproval { .. });
        if awaits_approval && self.breaks(Variant::ApprovalsNeverExpire) {
            return Ok(());
        }
        if at > s.expires_at {
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
    /// (APR-2); the approver is not the requester, and is the party the run recorded (APR-3).
    /// The caller checks rule 5 (POL-1) after it.
    fn guard_approval(
        &self,
        call: &BoundCall,
        requester: Name,
        responsible: Name,
        revision: Revision,
        approval: &Approval,
        at: Time,
    ) -> Result<(), Rejection> {
        use resumable_kernel::ApprovalField as F;
        let unbound = if approval.revision != revision {
            Some(F::Revision)
        } else if approval.call_id != call.call.call_id {
            Some(F::CallId)
        } else if approval.args != call.call.args && !self.breaks(Variant::ApprovalNotBoundToArgs) {
            Some(F::Args)
        } else if approval.requester != requester {
            Some(F::Requester)
        } else {
            None
        };
        if let Some(field) = unbound {
            return Err(Rejection::ApprovalMismatch { field });
        }
        if at > approval.expires_at && !self.breaks(Variant::ApprovalsNeverExpire) {
            return Err(Rejection::ApprovalExpired {
                expires_at: approval.expires_at,
                now: at,
            });
        }
        if approval.approver == requester {
            // The broken variant takes the requester for an entitled approver of its own
            // call, skipping both this check and the party check below.
            if self.breaks(Variant::SelfApprovalAllowed) {
                return Ok(());
            }
            return Err(Rejection::SelfApproval {
                party: approval.approver,
            });
        }
        guard_party(responsible, approval.approver)
    }

    /// RES-3, RES-7: a decision that acts on the resource the checkpoint was decided on
    /// re-checks that it has not moved, then current permission and budget.
    fn guard_present(&self, resume: &Resume) -> Result<(), Rejection> {
        guard_resource_version(&resume.checkpoint, &resume.facts)?;
        guard_policy(&resume.facts)
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
                if self.breaks(Variant::DenyLeavesRunning) {
                    Move::to(Status::Running)
                } else {
                    Move::to(Status::Failed(FailCause::Denied {
                        call_id: call.call.call_id,
                    }))
                }
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
                        self.guard_present(resume)?;
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
        if self.breaks(Variant::ApprovalIgnoresResource) {
            guard_policy(&resume.facts)?;
        } else {
            self.guard_present(resume)?;
        }
        let in_flight = InFlight {
            call: *call,
            attempt: 0,
            dispatches: 1,
        };
        let approved = Command::Dispatch(command(run, call, 0));
        let mv = Move::to(Status::AwaitingResult(in_flight));
        Ok(match run.last_call {
            // The interrupted step runs again from its start, and with it the side effect it
            // issued before the pause: that dispatch goes out first, where the approved one
            // should (a transition carries one command; the approved call never leaves).
            Some(done) if self.breaks(Variant::RerunStepOnResume) => {
                mv.then(Command::Dispatch(command(run, &done.call, done.attempt)))
            }
            _ => mv.then(approved),
        })
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
        let carried = if self.breaks(Variant::CancelLostOnEscalation) {
            None
        } else {
            cancelled_by
        };
        Ok(match (answer, cancelled_by) {
            // REC-4: the committed result is recorded and reused; a waiting cancel now ends
            // the run.
            (QueryAnswer::Committed { result }, _) => {
                Move::to(settled(cancelled_by)).recording(recorded(&f, *result))
            }
            // REC-2: nobody can tell: a person decides; never retried blindly.
            (QueryAnswer::Unknown, _) => escalate(run, f, carried, at)?,
            // The fenced attempt can never commit: the cancel takes effect.
            (QueryAnswer::NotCommitted, Some(by))
                if fences || self.breaks(Variant::CancelEndsUnsettled) =>
            {
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
        if f.dispatches >= contract.max_attempts || self.guard_present(resume).is_err() {
            return escalate(run, f, None, at);
        }
        let fresh = f.attempt.checked_add(1);
        let attempt = if contract.query_fences {
            // The old key is fenced and can never commit: only a fresh attempt can succeed.
            if self.breaks(Variant::RetrySameKeyOnFence) {
                Some(f.attempt)
            } else {
                fresh
            }
        } else if contract.dedupes {
            // The delayed original may still arrive: only the same key lets dedupe absorb it.
            if self.breaks(Variant::RetryFreshKeyOnDedupe) {
                fresh
            } else {
                Some(f.attempt)
            }
        } else if self.breaks(Variant::RetryWithoutContract) {
            Some(f.attempt)
        } else {
            // Neither fence nor dedupe: any retry may commit twice.
            None
        };
        let (Some(attempt), Some(dispatches)) = (attempt, f.dispatches.checked_add(1)) else {
            return escalate(run, f, None, at);
        };
        let again = InFlight {
            call: f.call,
            attempt,
            dispatches,
        };
        Ok(Move::to(Status::AwaitingResult(again))
            .then(Command::Dispatch(command(run, &f.call, attempt))))
    }
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
