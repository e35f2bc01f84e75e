//! The broken rules: for each [`Variant`], the reference machine's table of rules with one
//! entry swapped for the rule the way a real runtime gets it wrong. The reference's own code
//! holds the honest rules only; every wrong one is here.

use super::Variant;
use crate::reference::{
    approved_call, bound_to_call, guard_policy, guard_resource_version, identity_fields,
    requester_never_approves, retry_by_contract, rows_1_to_5, to_a_person, Move, RecordedCall,
    RefRun, Rules, Status, StepResult,
};
use resumable_kernel::{
    Approval, ApprovalField, AuditRecord, Batch, BoundCall, Call, CallDecision, Checkpoint,
    Command, Decision, Digest, Event, EventKind, Facts, FailCause, IdempotencyKey, Identity,
    IdentityField, InFlight, Input, Name, PhaseKind, Prior, Rejection, Resume, Revision, SlotState,
    Suspension, Time, ToolContract, Verdict, BATCH_CAPACITY,
};

/// The honest table with one entry swapped, by variant: `Variant => entry: rule,`.
macro_rules! swapped {
    ($variant:expr; $($name:ident => $entry:ident: $rule:expr,)*) => {
        match $variant {
            $(Variant::$name => Rules {
                $entry: $rule,
                ..Rules::HONEST
            },)*
        }
    };
}

impl Variant {
    /// The rules of the reference broken so: the honest table with the one entry this
    /// variant breaks swapped for its broken rule. One line per variant: the variant, the
    /// entry it swaps, the broken rule.
    pub(crate) const fn rules(self) -> Rules {
        swapped! {
            self;
            NoRevisionCheck => revision: any_revision,
            DoubleSuspend => suspend_while_suspended: replaces_the_suspension,
            ApprovalNotBoundToArgs => approval_binding: bound_but_for_the_arguments,
            RetryUnknownWithoutReconcile => recover: dispatched_again,
            RetryWithoutContract => retry_attempt: same_key_without_contract,
            RetryFreshKeyOnDedupe => retry_attempt: fresh_key_on_dedupe,
            RetrySameKeyOnFence => retry_attempt: same_key_on_fence,
            IdentityAfterRevision => first_rows: revision_before_identity,
            NoIdentityCheck => identity: any_identity,
            IdentityIgnoresTenant => identity: ignoring_tenant,
            IdentityIgnoresSession => identity: ignoring_session,
            IdentityIgnoresRun => identity: ignoring_run,
            IdentityIgnoresDefinition => identity: ignoring_definition,
            ApprovalsNeverExpire => approval_lapsed: never,
            SelfApprovalAllowed => approver_entitled: requester_approves_itself,
            RerunStepOnResume => approved_dispatch: step_run_again,
            DenyLeavesRunning => denial: still_running,
            NoExpiry => expiry_passed: never,
            ResourceBlocksAnswers => resume_resource: refused_once_moved,
            ApprovalIgnoresResource => approval_rechecks: policy_alone,
            CancelLostOnEscalation => person_keeps_cancel: dropped,
            CancelEndsUnsettled => not_committed_cancels: fenced_or_not,
            LastCallOnlyKeyCheck => admit: against_the_last_call,
            SelfNamedApprover => approver_named: anyone_named,
            CancelNotCheckpointed => persisted: without_cancel,
            CancelExpiryForgetsEffect => unknown_expired: cancelled_expires_unresolved,
            LateResultRecorded => input_to_finished_run: late_result_recorded,
            ResumeRecordFromCheckpoint => resume_record: record_of_the_checkpoint,
            EscalationKeepsDeadline => escalation_expiry: the_passed_deadline,
            BatchDecisionWrongCall => decided_slots: the_call_after,
            BatchOneApprovalForAll => decided_slots: every_awaiting_call_on_approval,
            RejectedDispatched => dispatched_on_resume: rejected_too,
            EditIgnored => edit: the_proposed_call,
            DispatchUnderBareKey => tool_key: bare_key,
        }
    }
}

/// no-revision-check: any revision passes.
fn any_revision(_: &RefRun, _: &Checkpoint, _: &Decision) -> Result<(), Rejection> {
    Ok(())
}

/// double-suspend: a suspend while suspended goes through and replaces the pending one.
fn replaces_the_suspension(_: &Suspension) -> Result<(), Rejection> {
    Ok(())
}

/// approval-not-bound-to-args: revision, call id and requester, but not the arguments (the
/// approval is taken to name the pending call's).
fn bound_but_for_the_arguments(
    approval: &Approval,
    call: &BoundCall,
    requester: Name,
    revision: Revision,
) -> Option<ApprovalField> {
    let as_if_bound = Approval {
        args: call.call.args,
        ..*approval
    };
    bound_to_call(&as_if_bound, call, requester, revision)
}

/// retry-unknown-without-reconcile: "no answer" is taken for "not done" and the call goes
/// out again at once.
fn dispatched_again(rules: &Rules, run: &RefRun, _: Time, f: InFlight) -> Result<Move, Rejection> {
    let again = InFlight {
        dispatches: f.dispatches.saturating_add(1),
        ..f
    };
    Ok(Move::to(Status::AwaitingResult(again))
        .then(Command::Dispatch(rules.command(run, &f.call, f.attempt))))
}

/// retry-without-contract: a tool that neither dedupes nor fences is retried under the same
/// key.
fn same_key_without_contract(contract: &ToolContract, attempt: u8) -> Option<u8> {
    if !contract.query_fences && !contract.dedupes {
        return Some(attempt);
    }
    retry_by_contract(contract, attempt)
}

/// retry-fresh-key-on-dedupe: a deduping, non-fencing tool is retried under a fresh key.
fn fresh_key_on_dedupe(contract: &ToolContract, attempt: u8) -> Option<u8> {
    if !contract.query_fences && contract.dedupes {
        return attempt.checked_add(1);
    }
    retry_by_contract(contract, attempt)
}

/// retry-same-key-on-fence: a fencing tool is retried under the key its query fenced.
fn same_key_on_fence(contract: &ToolContract, attempt: u8) -> Option<u8> {
    if contract.query_fences {
        return Some(attempt);
    }
    retry_by_contract(contract, attempt)
}

/// identity-after-revision: schema, digest and revision first, then the identity.
fn revision_before_identity(rules: &Rules, run: &RefRun, resume: &Resume) -> Result<(), Rejection> {
    rows_1_to_5(rules, run, resume)?;
    (rules.identity)(&run.identity, &resume.checkpoint.identity)
}

/// no-identity-check: any identity passes.
fn any_identity(_: &Identity, _: &Identity) -> Result<(), Rejection> {
    Ok(())
}

/// The identity compared field by field in the spec's order, but for `ignored`.
fn identity_but(
    ignored: IdentityField,
    mine: &Identity,
    theirs: &Identity,
) -> Result<(), Rejection> {
    let fields = identity_fields(mine, theirs).into_iter();
    match fields
        .filter(|&(field, _)| field != ignored)
        .find(|&(_, same)| !same)
    {
        Some((field, _)) => Err(Rejection::IdentityMismatch { field }),
        None => Ok(()),
    }
}

/// identity-ignores-tenant.
fn ignoring_tenant(mine: &Identity, theirs: &Identity) -> Result<(), Rejection> {
    identity_but(IdentityField::Tenant, mine, theirs)
}

/// identity-ignores-session.
fn ignoring_session(mine: &Identity, theirs: &Identity) -> Result<(), Rejection> {
    identity_but(IdentityField::Session, mine, theirs)
}

/// identity-ignores-run.
fn ignoring_run(mine: &Identity, theirs: &Identity) -> Result<(), Rejection> {
    identity_but(IdentityField::Run, mine, theirs)
}

/// identity-ignores-definition.
fn ignoring_definition(mine: &Identity, theirs: &Identity) -> Result<(), Rejection> {
    identity_but(IdentityField::Definition, mine, theirs)
}

/// approvals-never-expire and no-expiry: no deadline ever passes.
fn never(_: Time, _: Time) -> bool {
    false
}

/// self-approval-allowed: the requester is taken for an entitled approver of its own call,
/// skipping the party check too.
fn requester_approves_itself(
    approver: Name,
    requester: Name,
    responsible: Name,
) -> Result<(), Rejection> {
    if approver == requester {
        return Ok(());
    }
    requester_never_approves(approver, requester, responsible)
}

/// rerun-step-on-resume: the interrupted step runs again from its start, and with it the
/// side effect it issued before the pause: that dispatch goes out where the approved one
/// should (a transition carries one command; the approved call never leaves).
fn step_run_again(rules: &Rules, run: &RefRun, call: &BoundCall) -> Command {
    match run.last_call {
        Some(done) => Command::Dispatch(rules.command(run, &done.call, done.attempt)),
        None => approved_call(rules, run, call),
    }
}

/// deny-leaves-running: a denial is taken for "skip this call".
fn still_running(_: &BoundCall) -> Status {
    Status::Running
}

/// resource-blocks-answers: the resource is compared for every decision, first, and never
/// recorded from the facts.
fn refused_once_moved(cp: &Checkpoint, facts: &Facts) -> Result<Option<u64>, Rejection> {
    guard_resource_version(cp, facts)?;
    Ok(None)
}

/// approval-ignores-resource: permission and budget are re-checked, not the resource.
fn policy_alone(resume: &Resume) -> Result<(), Rejection> {
    guard_policy(&resume.facts)
}

/// cancel-lost-on-escalation: a person's suspension is rebuilt from its reason alone.
fn dropped(_: Option<Name>) -> Option<Name> {
    None
}

/// cancel-ends-unsettled: "not committed" is read as "never will", fenced or not.
fn fenced_or_not(_: bool) -> bool {
    true
}

/// last-call-only-key-check: the history the store reports is ignored and reuse is looked
/// for in the last recorded call only, as the kernel once did, so a call id or a key used
/// before that slips through.
fn against_the_last_call(run: &RefRun, call: &Call, _: &Prior) -> Result<(), Rejection> {
    if call.contract.max_attempts == 0 {
        return Err(Rejection::NoAttemptsAllowed);
    }
    if let Some(done) = run.last_call {
        if done.call.call.call_id == call.call_id {
            return Err(Rejection::CallIdReused {
                call_id: call.call_id,
            });
        }
        if done.call.call.key == call.key && done.call.call.args != call.args {
            return Err(Rejection::KeyConflict { key: call.key });
        }
    }
    Ok(())
}

/// self-named-approver: any approver may be named, the requester too.
fn anyone_named(_: Name, _: Name) -> Result<(), Rejection> {
    Ok(())
}

/// cancel-not-checkpointed: the checkpoint is built from the wait alone, without the cancel
/// (and is compared so).
fn without_cancel(checkpoint: Checkpoint) -> Checkpoint {
    Checkpoint {
        cancel_requested_by: None,
        ..checkpoint
    }
}

/// cancel-expiry-forgets-effect: cancelled and out of time is taken for nothing left to do.
fn cancelled_expires_unresolved(
    rules: &Rules,
    run: &RefRun,
    expired: &Suspension,
    in_flight: InFlight,
    cancelled_by: Option<Name>,
    at: Time,
) -> Result<Move, Rejection> {
    if cancelled_by.is_some() {
        return Ok(Move::to(Status::Failed(FailCause::Expired {
            unresolved: None,
        })));
    }
    to_a_person(rules, run, expired, in_flight, cancelled_by, at)
}

/// late-result-recorded: a tool response naming a finished run's recorded call is written
/// into its record (the run stays as it was but for the record and the revision).
fn late_result_recorded(rules: &Rules, run: &RefRun, input: &Input) -> Option<StepResult> {
    let Event::ToolResult {
        call_id,
        attempt,
        result,
    } = input.event
    else {
        return None;
    };
    let finished = matches!(run.status, Status::Completed { .. } | Status::Failed(_));
    let last = run.last_call.filter(|c| c.call.call.call_id == call_id);
    let (true, Some(last)) = (finished, last) else {
        return None;
    };
    let recorded = RecordedCall {
        attempt,
        result,
        ..last
    };
    let mv = Move::to(run.status).recording(Some(recorded));
    Some(rules.finish_step(run, input.at, EventKind::ToolResult, None, mv))
}

/// resume-record-from-checkpoint: the record describes the checkpoint resumed (its
/// revision, time, phase and reason), not the transition.
fn record_of_the_checkpoint(record: AuditRecord, cp: &Checkpoint) -> AuditRecord {
    AuditRecord {
        revision: cp.revision,
        at: cp.created_at,
        phase: PhaseKind::Suspended,
        reason: Some(cp.reason),
        ..record
    }
}

/// escalation-keeps-deadline: the reason changes in place, the passed deadline stays.
fn the_passed_deadline(_: Time, passed: Time) -> Time {
    passed
}

/// batch-decision-wrong-call: the verdict lands on the call after the one it names.
fn the_call_after(batch: &Batch, named: usize, _: &CallDecision) -> [bool; BATCH_CAPACITY] {
    let mut decided = [false; BATCH_CAPACITY];
    decided[(named + 1) % batch.slots.len()] = true;
    decided
}

/// batch-one-approval-for-all: one approval decides every call still undecided.
fn every_awaiting_call_on_approval(
    batch: &Batch,
    named: usize,
    d: &CallDecision,
) -> [bool; BATCH_CAPACITY] {
    let mut decided = [false; BATCH_CAPACITY];
    let everyone = matches!(d.verdict, Verdict::Approve);
    for (i, slot) in batch.slots.iter().enumerate() {
        decided[i] = i == named || (everyone && slot.state == SlotState::Awaiting);
    }
    decided
}

/// rejected-dispatched: the rejected calls go out with the approved ones.
fn rejected_too(state: SlotState) -> bool {
    matches!(state, SlotState::Approved | SlotState::Rejected { .. })
}

/// edit-ignored: the edit is recorded, the proposed call runs.
fn the_proposed_call(call: &BoundCall, _: Digest) -> BoundCall {
    *call
}

/// dispatch-under-bare-key: the tool is sent the key's own bytes, the same for every run
/// that uses it.
fn bare_key(_: &Identity, key: &IdempotencyKey) -> Digest {
    Digest::of(key.as_bytes())
}
