//! Batches of calls (spec 5.5, BAT-1 to BAT-5, POL-1): one suspension for the calls a model
//! turn proposes together, one decision per call, the approved calls dispatched together and
//! each settled on its own by the single-call rules.
//!
//! Written from the specification's text alone. The batch is held in the kernel's vocabulary
//! ([`Batch`], [`Slot`], [`SlotState`]) so that lockstep can compare it slot by slot; every
//! rule that reads or changes it is here.

use super::guards::{
    guard_party, guard_policy, guard_requester_is_not_responsible, guard_some_decision,
};
use super::moves::{bind, held_by_operator, Move};
use super::{RecordedCall, RefRun, Rules, Status};
use resumable_kernel::{
    ApprovalField, Batch, BoundCall, Call, CallDecision, Command, Decisions, Digest, FailCause,
    HistoryEntry, InFlight, List, Name, Proposal, Proposals, Reason, Rejection, Resume, Slot,
    SlotState, Suspension, Time, Verdict, VerdictKind, BATCH_CAPACITY,
};

impl Rules {
    /// BAT-1: suspend for a batch, after the expiry checks of 4.3 row 1 (made by the caller):
    /// first the list as a whole, then each call in turn, the first refusal returned. Every slot
    /// awaits its decision; the batch's checkpoint is sealed at the new revision.
    pub(super) fn suspend_batch(
        &self,
        run: &RefRun,
        at: Time,
        calls: &Proposals,
        expires_at: Time,
        responsible: Name,
        resource_version: u64,
    ) -> Result<Move, Rejection> {
        guard_batch_listing(calls)?;
        for p in calls.iter() {
            self.guard_batch_call(run, p, responsible)?;
        }
        let opened = run.revision.next().ok_or(Rejection::RevisionExhausted)?;
        let suspension = Suspension {
            reason: Reason::PendingBatch,
            since: at,
            expires_at,
            responsible,
        };
        let batch = new_batch(run, at, calls, opened, suspension, resource_version);
        let mut mv = Move::to(Status::Suspended(suspension))
            .observing(resource_version)
            .with_batch(batch);
        for p in calls.iter() {
            mv = mv.binding(p.call);
        }
        Ok(mv)
    }

    /// BAT-1, one call of the batch in turn: a requester other than the approver (APR-3),
    /// bound by 4.9 with its own prior, and some decision left to its approver (POL-1, BAT-5).
    fn guard_batch_call(
        &self,
        run: &RefRun,
        p: &Proposal,
        responsible: Name,
    ) -> Result<(), Rejection> {
        guard_requester_is_not_responsible(p.requester, responsible)?;
        (self.admit)(run, &p.call, &p.prior)?;
        // POL-1: some verdict could answer the call; an edit only if its key is fresh
        // (BAT-5 refuses an edit of a key an earlier call bound).
        let takes: &[VerdictKind] = if p.prior.key.is_none() {
            &VerdictKind::ALL
        } else {
            &[
                VerdictKind::Approve,
                VerdictKind::Reject,
                VerdictKind::Respond,
                VerdictKind::Deny,
            ]
        };
        guard_some_decision(run, &p.call, takes)
    }

    /// Spec 5 row 10 for a batch (BAT-2, POL-1, BAT-5), check by check, the first refusal
    /// returned: the list is not empty and names each call at most once; each decision names
    /// a call of the batch (one already decided was answered with rows 4 and 5); then,
    /// decision by decision, it binds to its call as an approval binds
    /// (APR-1 to APR-3), gives a verdict the run and the tool allow, and edits only a call
    /// whose key was fresh.
    pub(super) fn guard_batch_decisions(
        &self,
        run: &RefRun,
        s: &Suspension,
        decisions: &Decisions,
        at: Time,
    ) -> Result<(), Rejection> {
        let Some(batch) = run.open_batch() else {
            return Err(Rejection::DecisionMismatch {
                reason: s.reason.kind(),
                decision: resumable_kernel::DecisionKind::Batch,
            });
        };
        if decisions.is_empty() {
            return Err(Rejection::NoDecision);
        }
        for (i, d) in decisions.iter().enumerate() {
            let id = d.approval.call_id;
            if decisions.iter().take(i).any(|e| e.approval.call_id == id) {
                return Err(Rejection::DuplicateDecision { call_id: id });
            }
        }
        // Check 2, over every decision before check 3 looks at any: each names a call of the
        // batch. (A call already decided was answered with rows 4 and 5.)
        for d in decisions.iter() {
            if batch.slot(&d.approval.call_id).is_none() {
                return Err(Rejection::ApprovalMismatch {
                    field: ApprovalField::CallId,
                });
            }
        }
        // Checks 3 to 5, decision by decision.
        for d in decisions.iter() {
            let a = &d.approval;
            let Some(slot) = batch.slot(&a.call_id) else {
                continue;
            };
            // APR-1: the batch's checkpoint, the call's proposed arguments and requester.
            let unbound = if a.revision != batch.opened {
                Some(ApprovalField::Revision)
            } else if a.args != slot.proposed {
                Some(ApprovalField::Args)
            } else if a.requester != slot.requester {
                Some(ApprovalField::Requester)
            } else {
                None
            };
            if let Some(field) = unbound {
                return Err(Rejection::ApprovalMismatch { field });
            }
            // APR-2.
            if at > a.expires_at {
                return Err(Rejection::ApprovalExpired {
                    expires_at: a.expires_at,
                    now: at,
                });
            }
            // APR-3.
            if a.approver == slot.requester {
                return Err(Rejection::SelfApproval { party: a.approver });
            }
            guard_party(s.responsible, a.approver)?;
            // POL-1: the run's policy and the call's tool both allow the verdict.
            let kind = d.verdict.kind();
            let allowed = run.policy.allowed.and(slot.call.call.contract.allowed);
            if !allowed.contains(kind) {
                return Err(Rejection::DecisionNotAllowed { decision: kind });
            }
            // BAT-5: a key that named one payload before this batch keeps naming it.
            if matches!(d.verdict, Verdict::Edit { .. }) && !slot.fresh {
                return Err(Rejection::EditKeyBound {
                    key: slot.call.call.key,
                });
            }
        }
        Ok(())
    }

    /// Spec 5 row 11 for a batch (BAT-2, BAT-3, APR-4): a denial fails the run; otherwise each
    /// call decided takes its state; while a call still awaits its decision the run stays
    /// suspended on the same batch; once every call is decided the batch resumes: after the
    /// re-checks of the present if any call is approved, every approved call is dispatched, in
    /// slot order.
    pub(super) fn decide_batch(
        &self,
        run: &RefRun,
        s: &Suspension,
        decisions: &Decisions,
        resume: &Resume,
    ) -> Result<Move, Rejection> {
        let Some(open) = run.open_batch() else {
            return Err(Rejection::DecisionMismatch {
                reason: s.reason.kind(),
                decision: resumable_kernel::DecisionKind::Batch,
            });
        };
        let mut batch = *open;
        let recorded_at = run.revision.next().ok_or(Rejection::RevisionExhausted)?;
        if let Some(failed) = fail_on_denial(batch, decisions, recorded_at) {
            return Ok(failed);
        }
        let touched = self.take_batch_decisions(&mut batch, decisions, recorded_at);
        let (history, record) = decision_history(&batch, &touched);
        let awaiting = batch.slots.iter().any(|x| x.state == SlotState::Awaiting);
        let mut mv = if awaiting {
            // The run stays suspended on the same batch: same since, expiry, responsible and
            // checkpoint.
            Move::to(Status::Suspended(*s))
        } else {
            self.resume_batch(run, &mut batch, resume)?
        };
        mv.history = history;
        mv.record = record;
        Ok(mv.with_batch(batch))
    }

    /// BAT-2: each call decided takes its state, decision by decision in the input's order;
    /// returns which slots took a decision.
    fn take_batch_decisions(
        &self,
        batch: &mut Batch,
        decisions: &Decisions,
        recorded_at: resumable_kernel::Revision,
    ) -> [bool; resumable_kernel::BATCH_CAPACITY] {
        let mut touched = [false; resumable_kernel::BATCH_CAPACITY];
        for d in decisions.iter() {
            let Some(named) = batch
                .slots
                .iter()
                .position(|slot| slot.call.call.call_id == d.approval.call_id)
            else {
                continue;
            };
            let decided = (self.decided_slots)(batch, named, d);
            for (i, slot) in batch.slots.iter_mut().enumerate() {
                if decided[i] {
                    self.take_decision(slot, d, recorded_at);
                    touched[i] = true;
                }
            }
        }
        touched
    }

    /// BAT-3: every call is decided. If any is approved, the re-checks of the present run
    /// first, against the batch's checkpoint; then every approved call is dispatched in slot
    /// order, each at attempt 0, dispatches 1, and the run is running with them in flight.
    fn resume_batch(
        &self,
        run: &RefRun,
        batch: &mut Batch,
        resume: &Resume,
    ) -> Result<Move, Rejection> {
        if batch.slots.iter().any(|x| x.state == SlotState::Approved) {
            // RES-3, RES-7: the approver decided on the batch's checkpoint.
            super::guards::guard_resource_version(&resume.checkpoint, &resume.facts)?;
            guard_policy(&resume.facts)?;
        }
        let mut mv = Move::to(Status::Running);
        for slot in batch.slots.iter_mut() {
            if (self.dispatched_on_resume)(slot.state) {
                slot.state = SlotState::InFlight {
                    attempt: 0,
                    dispatches: 1,
                };
                mv = mv.then(Command::Dispatch(self.command(run, &slot.call, 0)));
            }
        }
        Ok(mv)
    }

    /// One decision taken by its slot: the verdict becomes the call's state, and the slot
    /// keeps the decision with the revision that recorded it.
    fn take_decision(
        &self,
        slot: &mut Slot,
        d: &CallDecision,
        recorded_at: resumable_kernel::Revision,
    ) {
        slot.decided = Some((*d, recorded_at));
        slot.state = match d.verdict {
            Verdict::Approve => SlotState::Approved,
            Verdict::Edit { args } => {
                slot.call = (self.edit)(&slot.call, args);
                SlotState::Approved
            }
            Verdict::Reject { reason } => SlotState::Rejected { reason },
            Verdict::Respond { result } => SlotState::Responded { result },
            Verdict::Deny => SlotState::Denied,
        };
    }

    /// BAT-4: a tool's answer for one of the batch's calls in flight together, in any order.
    pub(super) fn batch_result(
        &self,
        run: &RefRun,
        call_id: Name,
        attempt: u8,
        result: Digest,
    ) -> Result<Move, Rejection> {
        let (Some(first), Some(mut batch)) = (run.batch_in_flight(), run.batch) else {
            return Err(Rejection::NoDispatchInFlight {
                phase: run.phase().kind(),
            });
        };
        let found = batch.slots.iter_mut().find(|slot| {
            slot.call.call.call_id == call_id
                && matches!(slot.state, SlotState::InFlight { attempt: a, .. } if a == attempt)
        });
        let Some(slot) = found else {
            return Err(Rejection::ResultMismatch {
                call_id: first.call.call.call_id,
                attempt: first.attempt,
                got_call: call_id,
                got_attempt: attempt,
            });
        };
        slot.state = SlotState::Committed { result };
        let done = RecordedCall {
            call: slot.call,
            attempt,
            result,
        };
        Ok(Move::to(Status::Running)
            .recording(Some(done))
            .with_batch(batch))
    }

    /// BAT-4, REC-1, CAN-1: a restart or a cancel while the batch's calls are in flight makes
    /// every one unknown; the first, in slot order, becomes the phase's, held by the operator
    /// and queried; the others wait their turn.
    pub(super) fn batch_unknown(
        &self,
        run: &RefRun,
        at: Time,
        cancelled_by: Option<Name>,
    ) -> Result<Move, Rejection> {
        let Some(mut batch) = run.batch else {
            return Err(Rejection::NothingInFlight {
                phase: run.phase().kind(),
            });
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
        let mv = Move::to(Status::Running).with_batch(batch);
        self.take_up_next(run, at, mv, cancelled_by)
    }
}

/// The slot of the call with this id, to change.
fn slot_mut<'a>(batch: &'a mut Batch, call_id: &Name) -> Option<&'a mut Slot> {
    batch
        .slots
        .iter_mut()
        .find(|s| s.call.call.call_id == *call_id)
}

/// BAT-1, the list as a whole: it is not empty, and no two calls share an id or a key (the
/// later call is named).
fn guard_batch_listing(calls: &Proposals) -> Result<(), Rejection> {
    if calls.is_empty() {
        return Err(Rejection::EmptyBatch);
    }
    for (i, p) in calls.iter().enumerate() {
        let shares = |q: &Proposal| q.call.call_id == p.call.call_id || q.call.key == p.call.key;
        if calls.iter().take(i).any(shares) {
            return Err(Rejection::DuplicateInBatch {
                call_id: p.call.call_id,
            });
        }
    }
    Ok(())
}

/// BAT-1: the new batch, opened at revision `opened`, one slot per call in the order proposed,
/// each awaiting its decision, and its checkpoint: the digest of the checkpoint the run emits
/// once suspended on it, which every decision binds to.
fn new_batch(
    run: &RefRun,
    at: Time,
    calls: &Proposals,
    opened: resumable_kernel::Revision,
    suspension: Suspension,
    resource_version: u64,
) -> Batch {
    let mut slots = List::new();
    for p in calls.iter() {
        let _ = slots.push(Slot {
            call: bind(&p.call),
            requester: p.requester,
            proposed: p.call.args,
            // BAT-5: a key no earlier call bound may be rebound by an edit.
            fresh: p.prior.key.is_none(),
            decided: None,
            state: SlotState::Awaiting,
        });
    }
    let mut batch = Batch {
        opened,
        checkpoint: Digest::default(),
        resource_version,
        closed: None,
        slots,
    };
    let opening = RefRun {
        revision: opened,
        clock: at,
        status: Status::Suspended(suspension),
        resource_version,
        batch: Some(batch),
        ..*run
    };
    batch.checkpoint = opening
        .checkpoint()
        .map(|cp| cp.seal().digest)
        .unwrap_or_default();
    batch
}

/// APR-4: if any decision is a denial, the run fails naming the first denied call (in slot
/// order, as the calls are) and no call of the batch runs; only the denials are recorded.
/// `None` when nothing is denied.
fn fail_on_denial(
    mut batch: Batch,
    decisions: &Decisions,
    recorded_at: resumable_kernel::Revision,
) -> Option<Move> {
    let denies = |id: &Name| {
        decisions
            .iter()
            .any(|d| d.approval.call_id == *id && matches!(d.verdict, Verdict::Deny))
    };
    let first_denied = batch.slots.iter().find(|x| denies(&x.call.call.call_id));
    let first = first_denied.map(|x| x.call.call.call_id)?;
    for d in decisions.iter() {
        if matches!(d.verdict, Verdict::Deny) {
            if let Some(slot) = slot_mut(&mut batch, &d.approval.call_id) {
                slot.decided = Some((*d, recorded_at));
                slot.state = SlotState::Denied;
            }
        }
    }
    let failed = Status::Failed(FailCause::Denied { call_id: first });
    Some(Move::to(failed).with_batch(batch))
}

/// BAT-5, REC-4: what the decisions just taken add to the history, in slot order: an edited
/// call is bound again with the approver's arguments, and a call a person answered is
/// recorded as the last result, its key spent.
fn decision_history(
    batch: &Batch,
    touched: &[bool; resumable_kernel::BATCH_CAPACITY],
) -> (
    List<HistoryEntry, { resumable_kernel::BATCH_CAPACITY }>,
    Option<RecordedCall>,
) {
    let mut history = List::<HistoryEntry, { resumable_kernel::BATCH_CAPACITY }>::new();
    let mut record = None;
    for (i, slot) in batch.slots.iter().enumerate() {
        if !touched[i] {
            continue;
        }
        match (slot.decided.map(|(d, _)| d.verdict), slot.state) {
            (Some(Verdict::Edit { .. }), SlotState::Approved) => {
                let _ = history.push(HistoryEntry::bound(&slot.call.call));
            }
            (_, SlotState::Responded { result }) => {
                let _ = history.push(HistoryEntry::settled(&slot.call.call.key));
                record = Some(RecordedCall {
                    call: slot.call,
                    attempt: 0,
                    result,
                });
            }
            _ => {}
        }
    }
    (history, record)
}

/// BAT-2: a decision decides the call it names, and no other.
pub(super) fn decided_by_its_name(
    _: &Batch,
    named: usize,
    _: &CallDecision,
) -> [bool; BATCH_CAPACITY] {
    let mut decided = [false; BATCH_CAPACITY];
    decided[named] = true;
    decided
}

/// BAT-3: only the approved calls (an edited call is approved) are dispatched.
pub(super) fn approved_runs(state: SlotState) -> bool {
    state == SlotState::Approved
}

/// BAT-5: the call runs with the approver's arguments, its key bound to them.
pub(super) fn edited(call: &BoundCall, args: Digest) -> BoundCall {
    bind(&Call { args, ..call.call })
}

impl Rules {
    /// BAT-4: the next call of the batch whose outcome is unknown, in slot order, becomes the
    /// phase's: `outcome_unknown`, held by the operator, carrying any waiting cancel (CAN-2), with
    /// its `Query`. Returns the move unchanged when none waits.
    fn take_up_next(
        &self,
        run: &RefRun,
        at: Time,
        mut mv: Move,
        cancelled_by: Option<Name>,
    ) -> Result<Move, Rejection> {
        let Some(mut batch) = mv.batch.or(run.batch) else {
            return Ok(mv);
        };
        let next = batch.slots.iter_mut().find_map(|slot| match slot.state {
            SlotState::Unknown {
                attempt,
                dispatches,
            } => {
                slot.state = SlotState::Held;
                Some(InFlight {
                    call: slot.call,
                    attempt,
                    dispatches,
                })
            }
            _ => None,
        });
        let Some(f) = next else {
            return Ok(mv);
        };
        let reason = Reason::OutcomeUnknown {
            in_flight: f,
            cancelled_by,
        };
        mv.status = held_by_operator(run, at, reason)?;
        mv.batch = Some(batch);
        Ok(mv.then(Command::Query(self.command(run, &f.call, f.attempt))))
    }

    /// What every transition does to the run's batch, whatever its input:
    ///
    /// - `closed` is set when the run leaves the batch's suspension, by any input;
    /// - BAT-4: when the phase lets go of the batch call it held (the run would be running, idle,
    ///   or failed cancelled by a waiting cancel), the slot becomes `committed` if its result was
    ///   recorded, else `dropped`; then the next call whose outcome is unknown, if any, becomes
    ///   the phase's, so each is reconciled on its own, one after another.
    pub(super) fn let_go(&self, run: &RefRun, at: Time, mut mv: Move) -> Result<Move, Rejection> {
        let Some(mut batch) = mv.batch.or(run.batch) else {
            return Ok(mv);
        };
        if run.open_batch().is_some() {
            let stays =
                matches!(mv.status, Status::Suspended(s) if s.reason == Reason::PendingBatch);
            if !stays {
                batch.closed = run.revision.next();
            }
            mv.batch = Some(batch);
            return Ok(mv);
        }
        let phase_call = match run.status {
            Status::AwaitingResult(f) => Some(f.call.call.call_id),
            Status::Suspended(s) => match s.reason {
                Reason::OutcomeUnknown { in_flight, .. } => Some(in_flight.call.call.call_id),
                Reason::ManualIntervention { unresolved, .. } => {
                    unresolved.map(|f| f.call.call.call_id)
                }
                _ => None,
            },
            _ => None,
        };
        let Some(held) = batch.slots.iter_mut().find(|slot| {
            slot.state == SlotState::Held && Some(slot.call.call.call_id) == phase_call
        }) else {
            return Ok(mv);
        };
        let cancelled_by = match mv.status {
            Status::Running => None,
            Status::Failed(FailCause::Cancelled { by }) => Some(by),
            _ => return Ok(mv),
        };
        held.state = match mv.record {
            Some(done) if done.call.call.call_id == held.call.call.call_id => {
                SlotState::Committed {
                    result: done.result,
                }
            }
            _ => SlotState::Dropped,
        };
        mv.batch = Some(batch);
        self.take_up_next(run, at, mv, cancelled_by)
    }
}
