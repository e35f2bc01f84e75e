//! Deliberately broken lifecycles: each [`Variant`] swaps exactly one entry of the reference
//! machine's table of rules for a broken rule, the way real runtimes get it wrong (the broken
//! rules are in `variant/broken.rs`; the table, and the honest rules, in the reference).
//!
//! They exist so that every safety property can be shown to bite: the checker must find a
//! counterexample on the variant that targets the property, and none on the reference. Each
//! variant names the spec IDs it breaks ([`Variant::targets`]).

mod broken;

use resumable_kernel::{IdentityField, SpecId};
use std::fmt;

/// One broken rule. See each variant for the spec ID it breaks and how a runtime gets there.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Variant {
    /// RES-3 off: the revision of the checkpoint is not compared with the run's, so a stale
    /// checkpoint (an approval from an old browser tab, a forked thread) is accepted. A
    /// runtime gets here by looking a checkpoint up by run id and trusting whatever it finds.
    NoRevisionCheck,
    /// SUS-2 off: a suspend while suspended replaces the pending suspension, silently
    /// dropping the approval or callback the run was waiting on. A runtime gets here by
    /// storing "the current interrupt" in one slot that a second interrupt overwrites.
    DoubleSuspend,
    /// APR-1 broken in one place: the approval's argument digest is not compared with the
    /// pending call's, so an approval of one payload releases another. A runtime gets here by
    /// keying approvals on the call id alone while the arguments can still be edited.
    ApprovalNotBoundToArgs,
    /// REC-1/REC-2 off: a restart with a dispatch in flight re-dispatches it at once instead
    /// of suspending to reconcile by query. A runtime gets here by treating "no response" as
    /// "not done" and retrying on restart (activity retry without a status check).
    RetryUnknownWithoutReconcile,
    /// REC-3 broken: "not committed" retries under the same key even when the tool neither
    /// dedupes nor fences its query, so the delayed original and the retry can both commit.
    /// A runtime gets here by trusting the status query as if it were a fence.
    RetryWithoutContract,
    /// REC-3 broken: on a deduping tool whose query does not fence, the retry takes a fresh
    /// attempt key, so the tool's dedupe no longer protects it and the delayed original
    /// commits as well. A runtime gets here by minting a new key "to be safe" on every retry.
    RetryFreshKeyOnDedupe,
    /// REC-3 broken: with a fencing query, the retry reuses the fenced key, which the tool
    /// will never commit again: the retry can never succeed. A runtime gets here by reusing
    /// the key after the query that killed it.
    RetrySameKeyOnFence,
    /// ID-1 broken in one place: identity is checked after the revision, so a stranger's
    /// checkpoint learns whether its revision is stale, current or from the future before
    /// being told it is not theirs. A runtime gets here by checking the cheap version field
    /// first.
    IdentityAfterRevision,
    /// ID-1 off: the checkpoint's tenant, session, run and definition are never compared, so
    /// a resume can cross tenants or sessions. A runtime gets here by trusting the id in the
    /// URL rather than the one in the checkpoint.
    NoIdentityCheck,
    /// ID-1 broken in one field: the tenant is never compared (session, run and definition
    /// are), so a session of the same name in another tenant resumes this run. A runtime gets
    /// here by scoping the lookup to the session id and forgetting the tenant around it.
    IdentityIgnoresTenant,
    /// ID-1 broken in one field: the session is never compared, so a checkpoint from another
    /// session of the tenant, with the same run id, resumes this run. A runtime gets here by
    /// keying runs on tenant and run id alone.
    IdentityIgnoresSession,
    /// ID-1 broken in one field: the run id is never compared, so another run of the same
    /// session resumes this one. A runtime gets here by keeping one "current checkpoint" per
    /// session.
    IdentityIgnoresRun,
    /// ID-1 broken in one field: the definition is never compared, so a checkpoint taken
    /// under another definition of the run (an older deployment of the agent) resumes it. A
    /// runtime gets here by treating the definition fingerprint as metadata.
    IdentityIgnoresDefinition,
    /// APR-2 and RES-5 off for approvals: neither the approval's own expiry nor the expiry
    /// of a pending-approval suspension is checked, so an approval is a standing pass as long
    /// as nobody fed `expire` first. A runtime gets here by storing approvals without a
    /// deadline.
    ApprovalsNeverExpire,
    /// APR-3 broken: the requester is accepted as an approver of its own call. A runtime gets
    /// here by letting "the user" approve where the user is also the one who asked.
    SelfApprovalAllowed,
    /// The LangGraph way: resuming an approval re-runs the interrupted step from its start,
    /// so the side effect that step issued before the pause (the last recorded call) is
    /// dispatched again before the approved call. Breaks REC-4 (a committed result is
    /// reused, never executed again) and, on a tool that does not dedupe, EFF-1.
    RerunStepOnResume,
    /// APR-4 broken: a denial leaves the run running (the revision still advances) instead of
    /// failing it. A runtime gets here by treating "denied" as "skip this tool call" while
    /// the agent loop carries on and may propose the same action again.
    DenyLeavesRunning,
    /// EXP-1 and LIVE-1 off: expire is always refused, so a suspension waits forever. A
    /// runtime gets here by having no timer for suspended runs.
    NoExpiry,
    /// RES-3 applied to every decision, LIVE-2 broken: the resource version is compared for
    /// every resume, before anything else, and never recorded from the facts. A call that
    /// moves its own resource (a publish) then locks its unknown outcome: every reconcile
    /// answer and every intervention is refused with honest facts. A runtime gets here by
    /// treating "the resource changed" as a reason to refuse any input.
    ResourceBlocksAnswers,
    /// RES-3 broken for approvals: an approval is accepted although the resource moved since
    /// the checkpoint the approver saw. A runtime gets here by re-checking permission and
    /// budget after an approval but not the resource.
    ApprovalIgnoresResource,
    /// CAN-2 broken: a cancel waiting on an unknown outcome is dropped when the outcome goes
    /// to a person (an "unknown" answer, or the reconciliation expiring), and a person's
    /// intervention refuses a cancel; the person's "committed" or "continue" then returns the
    /// run to running as if nobody had cancelled. A runtime gets here by rebuilding the
    /// suspension from its reason alone.
    CancelLostOnEscalation,
    /// EFF-2 broken: with a cancel waiting, "not committed" from a query that does not fence
    /// ends the run cancelled at once, though the late original may still commit, unrecorded.
    /// A runtime gets here by reading "not committed" as "never will".
    CancelEndsUnsettled,
    /// KEY-1, KEY-2, REC-4 broken: a call id or key is compared with the last recorded call
    /// only, so an earlier call id comes back, an earlier key is bound to other arguments, or
    /// a committed key is dispatched again. A runtime gets here by keeping "the last result"
    /// and no history of keys.
    LastCallOnlyKeyCheck,
    /// APR-3 broken at suspend: a suspension for approval may name the requester itself as
    /// the approver, who may then approve its own call. A runtime gets here by taking the
    /// approver from the request, which the agent fills in.
    SelfNamedApprover,
    /// CAN-2 broken in the checkpoint: a suspension with a cancel waiting is persisted
    /// without it, so whoever reads the checkpoint (a restarted worker, the operator) does not
    /// know the run was cancelled. A runtime gets here by building the checkpoint from the
    /// wait alone and keeping the cancel in memory.
    CancelNotCheckpointed,
    /// CAN-2 broken at expiry: with a cancel waiting on an unknown outcome, the
    /// reconciliation's expiry ends the run expired without naming the effect and without a
    /// person, though the effect may still commit. A runtime gets here by reading "cancelled,
    /// and out of time" as "nothing more to do".
    CancelExpiryForgetsEffect,
    /// INV-1 broken: a tool response that reaches a finished run is recorded on it (the
    /// revision advances, the run stays finished). A runtime gets here by writing every
    /// response into the record of the run it names, without asking whether the run is live.
    LateResultRecorded,
    /// AUD-1 broken: a resume's audit record is filled from the checkpoint it resumes (its
    /// revision, time, phase and reason), not from the transition: the log shows the resume
    /// as if it had happened when the run suspended, and no record of the new revision. A
    /// runtime gets here by building the record from the checkpoint object it has in hand.
    ResumeRecordFromCheckpoint,
    /// SUS-1 broken: when an unknown outcome's reconciliation expires and goes to a person,
    /// the new suspension keeps the old, passed deadline, so it expires before it began. A
    /// runtime gets here by changing the suspension's reason in place.
    EscalationKeepsDeadline,
    /// BAT-2 broken: a decision on one call of a batch is recorded on the call after it (the
    /// last one's on the first), so a call runs, or is rejected, by a decision that named
    /// another. A runtime gets here by matching decisions to calls by position in a list that
    /// the approver's interface ordered differently.
    BatchDecisionWrongCall,
    /// BAT-2 broken: one approval decides every call of the batch still undecided, so calls
    /// the approver never looked at run. A runtime gets here by keeping one "approved" flag
    /// for the whole interruption.
    BatchOneApprovalForAll,
    /// BAT-3 broken: a rejected call is dispatched with the approved ones when the batch
    /// resumes. A runtime gets here by dispatching every call of the turn and only filtering
    /// out denials.
    RejectedDispatched,
    /// BAT-5 broken: an edited call is dispatched with the arguments the agent proposed, not
    /// the approver's. A runtime gets here by recording the edit for the record but
    /// dispatching the call object it already held.
    EditIgnored,
    /// KEY-3 off: a dispatch (and its query) sends the tool the idempotency key as the agent
    /// named it, not bound to the run's identity, so two runs that use one key share the
    /// tool's dedupe record and fence. A runtime gets here by passing the agent's key through
    /// to the tool's `Idempotency-Key` header.
    DispatchUnderBareKey,
}

impl Variant {
    /// Every variant, in a stable order.
    pub const ALL: [Variant; 34] = [
        Variant::NoRevisionCheck,
        Variant::DoubleSuspend,
        Variant::ApprovalNotBoundToArgs,
        Variant::RetryUnknownWithoutReconcile,
        Variant::RetryWithoutContract,
        Variant::RetryFreshKeyOnDedupe,
        Variant::RetrySameKeyOnFence,
        Variant::IdentityAfterRevision,
        Variant::NoIdentityCheck,
        Variant::IdentityIgnoresTenant,
        Variant::IdentityIgnoresSession,
        Variant::IdentityIgnoresRun,
        Variant::IdentityIgnoresDefinition,
        Variant::ApprovalsNeverExpire,
        Variant::SelfApprovalAllowed,
        Variant::RerunStepOnResume,
        Variant::DenyLeavesRunning,
        Variant::NoExpiry,
        Variant::ResourceBlocksAnswers,
        Variant::ApprovalIgnoresResource,
        Variant::CancelLostOnEscalation,
        Variant::CancelEndsUnsettled,
        Variant::LastCallOnlyKeyCheck,
        Variant::SelfNamedApprover,
        Variant::CancelNotCheckpointed,
        Variant::CancelExpiryForgetsEffect,
        Variant::LateResultRecorded,
        Variant::ResumeRecordFromCheckpoint,
        Variant::EscalationKeepsDeadline,
        Variant::BatchDecisionWrongCall,
        Variant::BatchOneApprovalForAll,
        Variant::RejectedDispatched,
        Variant::EditIgnored,
        Variant::DispatchUnderBareKey,
    ];

    /// The variants that break the rules of batches (spec 5.5), the last four of
    /// [`Variant::ALL`].
    pub const BATCH: [Variant; 4] = [
        Variant::BatchDecisionWrongCall,
        Variant::BatchOneApprovalForAll,
        Variant::RejectedDispatched,
        Variant::EditIgnored,
    ];

    /// The variants that compare every identity field but one (ID-1), each with the field it
    /// ignores.
    pub const ONE_FIELD: [(Variant, IdentityField); 4] = [
        (Variant::IdentityIgnoresTenant, IdentityField::Tenant),
        (Variant::IdentityIgnoresSession, IdentityField::Session),
        (Variant::IdentityIgnoresRun, IdentityField::Run),
        (
            Variant::IdentityIgnoresDefinition,
            IdentityField::Definition,
        ),
    ];

    /// The variant's kebab-case name, as `check --variant` takes it.
    pub const fn name(self) -> &'static str {
        match self {
            Variant::NoRevisionCheck => "no-revision-check",
            Variant::DoubleSuspend => "double-suspend",
            Variant::ApprovalNotBoundToArgs => "approval-not-bound-to-args",
            Variant::RetryUnknownWithoutReconcile => "retry-unknown-without-reconcile",
            Variant::RetryWithoutContract => "retry-without-contract",
            Variant::RetryFreshKeyOnDedupe => "retry-fresh-key-on-dedupe",
            Variant::RetrySameKeyOnFence => "retry-same-key-on-fence",
            Variant::IdentityAfterRevision => "identity-after-revision",
            Variant::NoIdentityCheck => "no-identity-check",
            Variant::IdentityIgnoresTenant => "identity-ignores-tenant",
            Variant::IdentityIgnoresSession => "identity-ignores-session",
            Variant::IdentityIgnoresRun => "identity-ignores-run",
            Variant::IdentityIgnoresDefinition => "identity-ignores-definition",
            Variant::ApprovalsNeverExpire => "approvals-never-expire",
            Variant::SelfApprovalAllowed => "self-approval-allowed",
            Variant::RerunStepOnResume => "rerun-step-on-resume",
            Variant::DenyLeavesRunning => "deny-leaves-running",
            Variant::NoExpiry => "no-expiry",
            Variant::ResourceBlocksAnswers => "resource-blocks-answers",
            Variant::ApprovalIgnoresResource => "approval-ignores-resource",
            Variant::CancelLostOnEscalation => "cancel-lost-on-escalation",
            Variant::CancelEndsUnsettled => "cancel-ends-unsettled",
            Variant::LastCallOnlyKeyCheck => "last-call-only-key-check",
            Variant::SelfNamedApprover => "self-named-approver",
            Variant::CancelNotCheckpointed => "cancel-not-checkpointed",
            Variant::CancelExpiryForgetsEffect => "cancel-expiry-forgets-effect",
            Variant::LateResultRecorded => "late-result-recorded",
            Variant::ResumeRecordFromCheckpoint => "resume-record-from-checkpoint",
            Variant::EscalationKeepsDeadline => "escalation-keeps-deadline",
            Variant::BatchDecisionWrongCall => "batch-decision-wrong-call",
            Variant::BatchOneApprovalForAll => "batch-one-approval-for-all",
            Variant::RejectedDispatched => "rejected-dispatched",
            Variant::EditIgnored => "edit-ignored",
            Variant::DispatchUnderBareKey => "dispatch-under-bare-key",
        }
    }

    /// The variant with this kebab-case name, if any.
    pub fn from_name(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }

    /// One line saying what the variant does wrong.
    pub const fn description(self) -> &'static str {
        match self {
            Variant::NoRevisionCheck => "a resume from a stale checkpoint revision is accepted",
            Variant::DoubleSuspend => "a suspend while suspended replaces the pending suspension",
            Variant::ApprovalNotBoundToArgs => {
                "an approval is not compared with the pending call's argument digest"
            }
            Variant::RetryUnknownWithoutReconcile => {
                "a restart re-dispatches an in-flight call instead of reconciling it"
            }
            Variant::RetryWithoutContract => {
                "\"not committed\" retries under the same key on a tool that neither dedupes nor fences"
            }
            Variant::RetryFreshKeyOnDedupe => {
                "\"not committed\" retries under a fresh attempt key on a deduping, non-fencing tool"
            }
            Variant::RetrySameKeyOnFence => {
                "\"not committed\" retries under the fenced key, which can never commit"
            }
            Variant::IdentityAfterRevision => {
                "a resume checks the revision before the identity, telling strangers about the run"
            }
            Variant::NoIdentityCheck => {
                "a resume never compares the checkpoint's tenant, session, run or definition"
            }
            Variant::IdentityIgnoresTenant => {
                "a resume compares the checkpoint's session, run and definition, not its tenant"
            }
            Variant::IdentityIgnoresSession => {
                "a resume compares the checkpoint's tenant, run and definition, not its session"
            }
            Variant::IdentityIgnoresRun => {
                "a resume compares the checkpoint's tenant, session and definition, not its run"
            }
            Variant::IdentityIgnoresDefinition => {
                "a resume compares the checkpoint's tenant, session and run, not its definition"
            }
            Variant::ApprovalsNeverExpire => {
                "approve and deny decisions are accepted after any expiry"
            }
            Variant::SelfApprovalAllowed => "the requester may approve its own call",
            Variant::RerunStepOnResume => {
                "resuming an approval re-runs the step, dispatching the last recorded call again"
            }
            Variant::DenyLeavesRunning => "a denial leaves the run running instead of failing it",
            Variant::NoExpiry => "expire is always refused: suspensions wait forever",
            Variant::ResourceBlocksAnswers => {
                "every resume compares the resource version first: a moved resource locks an unknown outcome"
            }
            Variant::ApprovalIgnoresResource => {
                "an approval is accepted although the resource moved since its checkpoint"
            }
            Variant::CancelLostOnEscalation => {
                "a cancel waiting on an unknown outcome is dropped when a person takes it over"
            }
            Variant::CancelEndsUnsettled => {
                "with a cancel waiting, an unfenced \"not committed\" ends the run before the late original commits"
            }
            Variant::LastCallOnlyKeyCheck => {
                "call ids and keys are compared with the last recorded call only"
            }
            Variant::SelfNamedApprover => {
                "a suspension for approval may name the requester as its own approver"
            }
            Variant::CancelNotCheckpointed => {
                "a suspension's checkpoint leaves out the cancel waiting in it"
            }
            Variant::CancelExpiryForgetsEffect => {
                "with a cancel waiting, an unknown outcome's expiry ends the run without naming the effect"
            }
            Variant::LateResultRecorded => "a tool response that reaches a finished run is recorded",
            Variant::ResumeRecordFromCheckpoint => {
                "a resume's audit record is filled from the checkpoint it resumes"
            }
            Variant::EscalationKeepsDeadline => {
                "an unknown outcome handed to a person keeps the passed deadline"
            }
            Variant::BatchDecisionWrongCall => {
                "a batch decision is recorded on the call after the one it names"
            }
            Variant::BatchOneApprovalForAll => {
                "one approval decides every undecided call of the batch"
            }
            Variant::RejectedDispatched => {
                "a rejected call of a batch is dispatched with the approved ones"
            }
            Variant::EditIgnored => "an edited call is dispatched with the proposed arguments",
            Variant::DispatchUnderBareKey => {
                "the tool is sent the agent's bare key, not one bound to the run's identity"
            }
        }
    }

    /// The spec IDs the variant breaks: the properties that must catch it.
    pub const fn targets(self) -> &'static [SpecId] {
        match self {
            Variant::NoRevisionCheck => &[SpecId::Res3, SpecId::Res2],
            Variant::DoubleSuspend => &[SpecId::Sus2],
            Variant::ApprovalNotBoundToArgs => &[SpecId::Apr1],
            Variant::RetryUnknownWithoutReconcile => &[SpecId::Rec1, SpecId::Rec2],
            Variant::RetryWithoutContract => &[SpecId::Rec3, SpecId::Eff1],
            Variant::RetryFreshKeyOnDedupe => &[SpecId::Rec3, SpecId::Eff1],
            Variant::RetrySameKeyOnFence => &[SpecId::Rec3],
            Variant::IdentityAfterRevision => &[SpecId::Id1, SpecId::Res1],
            Variant::NoIdentityCheck
            | Variant::IdentityIgnoresTenant
            | Variant::IdentityIgnoresSession
            | Variant::IdentityIgnoresRun
            | Variant::IdentityIgnoresDefinition => &[SpecId::Id1],
            Variant::ApprovalsNeverExpire => &[SpecId::Apr2, SpecId::Res5],
            Variant::SelfApprovalAllowed => &[SpecId::Apr3],
            Variant::RerunStepOnResume => &[SpecId::Rec4, SpecId::Eff1],
            Variant::DenyLeavesRunning => &[SpecId::Apr4],
            Variant::NoExpiry => &[SpecId::Exp1, SpecId::Live1],
            Variant::ResourceBlocksAnswers => &[SpecId::Live2, SpecId::Res3],
            Variant::ApprovalIgnoresResource => &[SpecId::Res3],
            Variant::CancelLostOnEscalation => &[SpecId::Can2],
            Variant::CancelEndsUnsettled => &[SpecId::Eff2],
            Variant::LastCallOnlyKeyCheck => &[SpecId::Key1, SpecId::Key2, SpecId::Rec4],
            Variant::SelfNamedApprover => &[SpecId::Apr3],
            Variant::CancelNotCheckpointed => &[SpecId::Can2],
            Variant::CancelExpiryForgetsEffect => &[SpecId::Can2, SpecId::Eff2],
            Variant::LateResultRecorded => &[SpecId::Inv1],
            Variant::ResumeRecordFromCheckpoint => &[SpecId::Aud1],
            Variant::EscalationKeepsDeadline => &[SpecId::Sus1],
            Variant::BatchDecisionWrongCall => &[SpecId::Bat2, SpecId::Bat4],
            Variant::BatchOneApprovalForAll => &[SpecId::Bat2],
            Variant::RejectedDispatched => &[SpecId::Bat3],
            Variant::EditIgnored => &[SpecId::Bat5],
            Variant::DispatchUnderBareKey => &[SpecId::Key3],
        }
    }

    /// The spec IDs the variant breaks as spec/ writes them, comma-separated: "REC-3, EFF-1".
    pub fn targets_named(self) -> String {
        let names: Vec<&str> = self.targets().iter().map(|id| id.name()).collect();
        names.join(", ")
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
