//! The rules the reference machine consults at the places where real runtimes go wrong: a
//! table with one entry per such rule, named for what it decides. [`Rules::HONEST`] is the
//! table written from the specification; each broken variant is that table with one entry
//! swapped for its broken rule (`Variant::rules`, the broken rules in `model/src/variant/`).
//! The handlers are methods of the table, so every rule a step applies is either written in
//! them once or read from an entry here.
//!
//! An entry holds the honest rule of its own room (`guards.rs`, `events.rs`, `resume.rs`,
//! `batch.rs`); this file only lists them, in the order of the specification's sections.

use super::batch::{approved_runs, decided_by_its_name, edited};
use super::events::{
    identity_first, nothing_before_the_guards, reconcile_first, refuse_second_suspension,
    to_a_person,
};
use super::guards::{admit_by_history, guard_present, guard_requester_is_not_responsible};
use super::moves::{Move, StepResult};
use super::resume::{
    approved_call, bound_to_call, fails_run, guard_identity, guard_revision,
    record_of_the_transition, recorded_from_facts, requester_never_approves, retry_by_contract,
};
use super::{RefRun, Status};
use resumable_kernel::{
    Approval, ApprovalField, AuditRecord, Batch, BoundCall, Call, CallDecision, Checkpoint,
    Command, Decision, Digest, Facts, IdempotencyKey, Identity, InFlight, Input, Name, Prior,
    Rejection, Resume, Revision, SlotState, Suspension, Time, ToolContract, BATCH_CAPACITY,
};

/// One entry per rule a variant may break; see [`Rules::HONEST`] for what each decides.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rules {
    /// Spec 4.1, before every input's guards: what an input to a finished run does first.
    pub(crate) input_to_finished_run: fn(&Rules, &RefRun, &Input) -> Option<StepResult>,
    /// Spec 4.1 and 5 rows 1 to 5: the checks a resume meets first, and their order.
    pub(crate) first_rows: fn(&Rules, &RefRun, &Resume) -> Result<(), Rejection>,
    /// ID-1: the run's identity (`mine`) against the checkpoint's (`theirs`).
    pub(crate) identity: fn(mine: &Identity, theirs: &Identity) -> Result<(), Rejection>,
    /// RES-3 and RES-2: the checkpoint's revision against the run's.
    pub(crate) revision: fn(&RefRun, &Checkpoint, &Decision) -> Result<(), Rejection>,
    /// SUS-2: a suspend while the run is suspended.
    pub(crate) suspend_while_suspended: fn(&Suspension) -> Result<(), Rejection>,
    /// APR-3 at suspend: the approver a suspension for one call's approval names.
    pub(crate) approver_named: fn(requester: Name, responsible: Name) -> Result<(), Rejection>,
    /// KEY-1, KEY-2, REC-4: binding a call, against what the run's history holds of it.
    pub(crate) admit: fn(&RefRun, &Call, &Prior) -> Result<(), Rejection>,
    /// KEY-3: the key under which the tool keeps a run's call.
    pub(crate) tool_key: fn(&Identity, &IdempotencyKey) -> Digest,
    /// CKP-1, CAN-2: the checkpoint as persisted (and compared, RES-4) from the one that
    /// describes the suspension.
    pub(crate) persisted: fn(Checkpoint) -> Checkpoint,
    /// REC-1: what a restart does to a dispatch in flight.
    pub(crate) recover: fn(&Rules, &RefRun, Time, InFlight) -> Result<Move, Rejection>,
    /// EXP-1: whether the clock at `at` has passed a suspension's expiry.
    pub(crate) expiry_passed: fn(expires_at: Time, at: Time) -> bool,
    /// REC-2, CAN-2: what the expiry of an unknown outcome's reconciliation does (before the
    /// end of time).
    #[expect(
        clippy::type_complexity,
        reason = "the rule's inputs, each named in its type"
    )]
    pub(crate) unknown_expired:
        fn(&Rules, &RefRun, &Suspension, InFlight, Option<Name>, Time) -> Result<Move, Rejection>,
    /// SUS-1: the expiry of the person's suspension that an expired reconciliation opens,
    /// from the one it opens with and the one that passed.
    pub(crate) escalation_expiry: fn(opened: Time, passed: Time) -> Time,
    /// CAN-2: what a suspension a person settles keeps of a cancel waiting on its effect.
    pub(crate) person_keeps_cancel: fn(Option<Name>) -> Option<Name>,
    /// RES-3 on every resume: what the resource version of the resume's facts does; `Some`
    /// is the version the run records once the decision is taken.
    pub(crate) resume_resource: fn(&Checkpoint, &Facts) -> Result<Option<u64>, Rejection>,
    /// AUD-1: a resume's audit record, from the transition's and the checkpoint resumed.
    pub(crate) resume_record: fn(AuditRecord, &Checkpoint) -> AuditRecord,
    /// APR-2, and RES-5 for a suspension awaiting approval: whether a deadline has passed.
    pub(crate) approval_lapsed: fn(expires_at: Time, at: Time) -> bool,
    /// APR-1: the field of an approval that does not bind to the pending call, its
    /// requester and the checkpoint's revision, if any.
    pub(crate) approval_binding:
        fn(&Approval, &BoundCall, requester: Name, revision: Revision) -> Option<ApprovalField>,
    /// APR-3: whether the approver may decide on the requester's call, in the suspension
    /// whose responsible party is `responsible`.
    pub(crate) approver_entitled:
        fn(approver: Name, requester: Name, responsible: Name) -> Result<(), Rejection>,
    /// RES-3, RES-7: the re-checks of the present before an approved call is dispatched.
    pub(crate) approval_rechecks: fn(&Resume) -> Result<(), Rejection>,
    /// WAL-1, REC-4: the command an approval of `call` gives.
    pub(crate) approved_dispatch: fn(&Rules, &RefRun, &BoundCall) -> Command,
    /// APR-4: where a denial of the pending call leaves the run.
    pub(crate) denial: fn(&BoundCall) -> Status,
    /// EFF-2, CAN-2: whether "not committed" ends a run whose cancel waits, by whether the
    /// query fences.
    pub(crate) not_committed_cancels: fn(fences: bool) -> bool,
    /// REC-3: the attempt a retry after "not committed" goes out under, or `None` for none.
    pub(crate) retry_attempt: fn(&ToolContract, attempt: u8) -> Option<u8>,
    /// BAT-2: the slots a batch decision naming the slot `named` decides.
    pub(crate) decided_slots: fn(&Batch, named: usize, &CallDecision) -> [bool; BATCH_CAPACITY],
    /// BAT-3: whether a call of a batch in this state is dispatched when the batch resumes.
    pub(crate) dispatched_on_resume: fn(SlotState) -> bool,
    /// BAT-5: the call an edit leaves to run, from the call proposed and the approver's
    /// arguments.
    pub(crate) edit: fn(&BoundCall, Digest) -> BoundCall,
}

impl Rules {
    /// The rules as the specification writes them.
    pub(crate) const HONEST: Rules = Rules {
        // INV-1: a finished run is refused by the guards, after a resume's rows 1 to 5.
        input_to_finished_run: nothing_before_the_guards,
        // ID-1 first, so a stranger learns nothing else; then CKP-3, CKP-2, RES-3, RES-2.
        first_rows: identity_first,
        // ID-1: tenant, session, run and definition, in that order.
        identity: guard_identity,
        // RES-3, RES-2: stale, future, duplicate and losing checkpoints refused.
        revision: guard_revision,
        // SUS-2: refused; the pending suspension stays.
        suspend_while_suspended: refuse_second_suspension,
        // APR-3: the requester is never its own approver.
        approver_named: guard_requester_is_not_responsible,
        // KEY-1, KEY-2, REC-4: over the run's whole history, as the store's index reports it.
        admit: admit_by_history,
        // KEY-3: the run's identity and the call's key together.
        tool_key: resumable_kernel::checkpoint::tool_key,
        // CKP-1, CAN-2: the checkpoint describes the suspension whole, a waiting cancel too.
        persisted: as_described,
        // REC-1: reconciled by query before anything else.
        recover: reconcile_first,
        // EXP-1: strictly after the expiry.
        expiry_passed: after,
        // REC-2, CAN-2: a person decides, with any cancel that waits.
        unknown_expired: to_a_person,
        // SUS-1: the person's suspension expires a reconcile window from now.
        escalation_expiry: opened_anew,
        // CAN-2: a person's suspension carries the cancel.
        person_keeps_cancel: kept,
        // RES-3: the facts' resource version is recorded, never refused for its own sake.
        resume_resource: recorded_from_facts,
        // AUD-1: the record describes the transition.
        resume_record: record_of_the_transition,
        // APR-2, RES-5: strictly after the deadline.
        approval_lapsed: after,
        // APR-1: revision, call id, arguments, requester.
        approval_binding: bound_to_call,
        // APR-3: never the requester; only the party the run recorded.
        approver_entitled: requester_never_approves,
        // RES-3, RES-7: the resource has not moved, then permission and budget.
        approval_rechecks: guard_present,
        // WAL-1: the approved call, under its original key.
        approved_dispatch: approved_call,
        // APR-4: the run fails; the denied call never runs.
        denial: fails_run,
        // EFF-2: only a fencing query settles that the call never commits.
        not_committed_cancels: fences,
        // REC-3: a fresh key after a fence, the same key on a deduping tool, else none.
        retry_attempt: retry_by_contract,
        // BAT-2: the call the decision names, and no other.
        decided_slots: decided_by_its_name,
        // BAT-3: the approved calls (edited ones included), and no other.
        dispatched_on_resume: approved_runs,
        // BAT-5: the approver's arguments, the key bound to them.
        edit: edited,
    };
}

/// CKP-1: the checkpoint persisted is the one that describes the suspension.
fn as_described(checkpoint: Checkpoint) -> Checkpoint {
    checkpoint
}

/// Whether `at` is strictly after the deadline `expires_at`.
pub(crate) fn after(expires_at: Time, at: Time) -> bool {
    at > expires_at
}

/// SUS-1: the suspension a person is handed expires as it was opened.
fn opened_anew(opened: Time, _passed: Time) -> Time {
    opened
}

/// CAN-2: a cancel is kept as it is.
fn kept(cancelled_by: Option<Name>) -> Option<Name> {
    cancelled_by
}

/// EFF-2: "not committed" settles that the call never commits only if the query fences.
fn fences(fences: bool) -> bool {
    fences
}

#[cfg(test)]
mod tests {
    use super::Rules;
    use crate::variant::Variant;

    /// The entries of a table by address, in declaration order: what tells two tables apart.
    fn entries(r: &Rules) -> [usize; 27] {
        [
            r.input_to_finished_run as usize,
            r.first_rows as usize,
            r.identity as usize,
            r.revision as usize,
            r.suspend_while_suspended as usize,
            r.approver_named as usize,
            r.admit as usize,
            r.tool_key as usize,
            r.persisted as usize,
            r.recover as usize,
            r.expiry_passed as usize,
            r.unknown_expired as usize,
            r.escalation_expiry as usize,
            r.person_keeps_cancel as usize,
            r.resume_resource as usize,
            r.resume_record as usize,
            r.approval_lapsed as usize,
            r.approval_binding as usize,
            r.approver_entitled as usize,
            r.approval_rechecks as usize,
            r.approved_dispatch as usize,
            r.denial as usize,
            r.not_committed_cancels as usize,
            r.retry_attempt as usize,
            r.decided_slots as usize,
            r.dispatched_on_resume as usize,
            r.edit as usize,
        ]
    }

    /// Each variant's table is the honest one with exactly one entry swapped, for a rule that
    /// is not the honest one (`variant/broken.rs` names one entry per variant; this holds that
    /// the entry really changed and nothing else did). Distinct functions have distinct
    /// addresses, and a broken rule never has the body of the honest rule it replaces.
    #[test]
    fn each_variant_swaps_exactly_one_entry() {
        let honest = entries(&Rules::HONEST);
        for v in Variant::ALL {
            let broken = entries(&v.rules());
            let swapped = honest.iter().zip(&broken).filter(|(h, b)| h != b).count();
            assert_eq!(swapped, 1, "{v} swaps {swapped} entries");
        }
    }
}
