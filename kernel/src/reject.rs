//! Rejections: why an input was refused, each with its evidence. A rejection changes nothing.

use crate::batch::VerdictKind;
use crate::ids::{Digest, IdempotencyKey, Name, Revision, Time};
use crate::input::DecisionKind;
use crate::names::named;
use crate::run::{PhaseKind, ReasonKind};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

named! {
    /// Which identity field did not match. The value is not echoed, so a stranger learns nothing
    /// about the run (spec ID-1).
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum IdentityField {
        /// The tenant.
        Tenant = "tenant",
        /// The session.
        Session = "session",
        /// The run.
        Run = "run",
        /// The run's definition fingerprint.
        Definition = "definition",
    }
}

named! {
    /// Which checkpoint field disagrees with the run it claims to describe.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum CheckpointField {
        /// The suspension reason or where it re-enters.
        Reason = "reason",
        /// The pending call (id, tool, arguments or attempt): the action.
        PendingCall = "pending_call",
        /// The idempotency key digest.
        KeyDigest = "key_digest",
        /// The requester.
        Requester = "requester",
        /// The callback or resource awaited.
        WaitingOn = "waiting_on",
        /// The expiry.
        ExpiresAt = "expires_at",
        /// The responsible party.
        Responsible = "responsible",
        /// The creation time.
        CreatedAt = "created_at",
        /// The resource version the run last observed.
        ResourceVersion = "resource_version",
        /// Who cancelled while an effect's outcome is unsettled.
        CancelRequestedBy = "cancel_requested_by",
        /// The digest of a batch's calls.
        Batch = "batch",
    }
}

named! {
    /// Which part of an approval does not bind to the pending call.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum ApprovalField {
        /// The call id.
        CallId = "call_id",
        /// The argument digest.
        Args = "args",
        /// The requester.
        Requester = "requester",
        /// The checkpoint revision.
        Revision = "revision",
    }
}

named! {
    /// Who is at fault for a rejection, and so who should act on it.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum Fault {
        /// The caller sent something wrong or unauthorised: do not retry as is.
        Caller = "caller",
        /// Someone else moved first or time moved on: re-read the run and decide again.
        Race = "race",
        /// The driver misused the kernel: fix the driver.
        Driver = "driver",
    }
}

/// Why an input was refused. Every variant is distinct, so a caller whose reply was lost can
/// tell whether it won (spec REJ-1), and each carries the evidence for its verdict.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "rejection", rename_all = "snake_case"))]
pub enum Rejection {
    /// The run is completed or failed; nothing moves it again.
    #[error("run is {phase}, a terminal phase")]
    Terminal {
        /// The terminal phase.
        phase: PhaseKind,
    },
    /// The checkpoint names another tenant, session, run or definition.
    #[error("checkpoint is not for this run: {field} differs")]
    IdentityMismatch {
        /// The field that differs.
        field: IdentityField,
    },
    /// The input's time is before the run's last accepted input.
    #[error("time ran backwards: last {last}, got {got}")]
    ClockRegressed {
        /// The run's time.
        last: Time,
        /// The input's time.
        got: Time,
    },
    /// The checkpoint was written by a newer schema.
    #[error("checkpoint schema {got} is newer than supported {supported}")]
    SchemaTooNew {
        /// The version this kernel reads.
        supported: u16,
        /// The version offered.
        got: u16,
    },
    /// The checkpoint claims a schema version no kernel ever wrote (0), which has no migration.
    #[error("checkpoint schema {got} is unknown: no kernel writes it and none migrates it")]
    UnknownSchema {
        /// The version offered.
        got: u16,
    },
    /// The checkpoint is an older schema and was not migrated.
    #[error("checkpoint schema {got} needs an explicit migration to {current}")]
    MigrationRequired {
        /// The version offered.
        got: u16,
        /// The current version.
        current: u16,
    },
    /// The checkpoint's digest does not match its fields.
    #[error("checkpoint digest mismatch: expected {expected}, found {found}")]
    DigestMismatch {
        /// The digest of the fields.
        expected: Digest,
        /// The digest carried.
        found: Digest,
    },
    /// The checkpoint is older than the run and no resume was taken from it.
    #[error("stale revision: current {current}, got {got}")]
    StaleRevision {
        /// The run's revision.
        current: Revision,
        /// The checkpoint's revision.
        got: Revision,
    },
    /// The checkpoint claims a revision the run never reached.
    #[error("revision from the future: current {current}, got {got}")]
    FutureRevision {
        /// The run's revision.
        current: Revision,
        /// The checkpoint's revision.
        got: Revision,
    },
    /// This exact decision already resumed this checkpoint: the caller won.
    #[error("already applied: this decision resumed {from} into {to}")]
    AlreadyApplied {
        /// The revision resumed from.
        from: Revision,
        /// The revision it produced.
        to: Revision,
    },
    /// Another decision already resumed this checkpoint: the caller lost.
    #[error("conflict: another decision resumed {from} into {to}")]
    AlreadyResumed {
        /// The revision resumed from.
        from: Revision,
        /// The revision it produced.
        to: Revision,
    },
    /// The resource changed since the checkpoint.
    #[error("resource changed: checkpoint saw {checkpoint}, current {current}")]
    ResourceChanged {
        /// The version in the checkpoint.
        checkpoint: u64,
        /// The current version.
        current: u64,
    },
    /// The run is not suspended.
    #[error("run is {phase}, not suspended")]
    NotSuspended {
        /// The run's phase.
        phase: PhaseKind,
    },
    /// The checkpoint disagrees with the run's suspension.
    #[error("checkpoint does not match the run: {field} differs")]
    CheckpointMismatch {
        /// The first field that differs.
        field: CheckpointField,
    },
    /// The suspension expired before the decision arrived.
    #[error("suspension expired at {expires_at}, now {now}")]
    Expired {
        /// The expiry.
        expires_at: Time,
        /// The input's time.
        now: Time,
    },
    /// The decision does not answer the suspension's reason.
    #[error("decision {decision} does not answer reason {reason}")]
    DecisionMismatch {
        /// The suspension reason.
        reason: ReasonKind,
        /// The decision offered.
        decision: DecisionKind,
    },
    /// The approval is for another call, arguments, requester or revision.
    #[error("approval does not bind to the pending call: {field} differs")]
    ApprovalMismatch {
        /// The field that differs.
        field: ApprovalField,
    },
    /// The approval itself expired.
    #[error("approval expired at {expires_at}, now {now}")]
    ApprovalExpired {
        /// The approval's expiry.
        expires_at: Time,
        /// The input's time.
        now: Time,
    },
    /// The requester tried to approve its own call.
    #[error("{party} cannot approve its own call")]
    SelfApproval {
        /// The party.
        party: Name,
    },
    /// The decision came from a party other than the one the kernel recorded.
    #[error("only {expected} may decide, not {got}")]
    Unauthorised {
        /// The responsible party.
        expected: Name,
        /// The party that decided.
        got: Name,
    },
    /// The callback or resource is not the one awaited.
    #[error("waiting on {expected}, not {got}")]
    WaitMismatch {
        /// What the suspension awaits.
        expected: Name,
        /// What arrived.
        got: Name,
    },
    /// Current policy no longer permits the step about to run.
    #[error("permission revoked under current policy")]
    PermissionRevoked,
    /// The budget no longer covers the step about to run.
    #[error("budget exhausted")]
    BudgetExhausted,
    /// The input needs a running run.
    #[error("run is {phase}, not running")]
    NotRunning {
        /// The run's phase.
        phase: PhaseKind,
    },
    /// A suspend arrived while a suspension is pending.
    #[error("already suspended ({reason})")]
    AlreadySuspended {
        /// The pending suspension's reason.
        reason: ReasonKind,
    },
    /// The expiry is not after the input's time.
    #[error("expiry {expires_at} is not after now {now}")]
    ExpiryNotInFuture {
        /// The expiry offered.
        expires_at: Time,
        /// The input's time.
        now: Time,
    },
    /// The expiry is the last instant, which no later input could pass: the suspension would
    /// wait forever.
    #[error("expiry {expires_at} could never be passed")]
    ExpiryUnreachable {
        /// The expiry offered.
        expires_at: Time,
    },
    /// The input's time is the last instant, at which no new suspension can be given an
    /// expiry that a later input could pass.
    #[error("time {at} is the end of time: no suspension can begin")]
    ClockExhausted {
        /// The input's time.
        at: Time,
    },
    /// A call declared a contract allowing no attempt at all.
    #[error("a call needs at least one attempt")]
    NoAttemptsAllowed,
    /// The key was already used with other arguments.
    #[error("key {key} is bound to other arguments")]
    KeyConflict {
        /// The key.
        key: IdempotencyKey,
    },
    /// The key's committed result is already recorded: it is reused, never executed again.
    #[error("key {key} already committed: reuse its recorded result")]
    KeyCommitted {
        /// The key.
        key: IdempotencyKey,
    },
    /// The call id was already used; an edited call needs a new id.
    #[error("call {call_id} was already made; an edited call is a new call")]
    CallIdReused {
        /// The call id.
        call_id: Name,
    },
    /// The input needs the run's in-flight dispatch to be answered first.
    #[error("call {call_id} is in flight: wait for its answer")]
    DispatchInFlight {
        /// The call in flight.
        call_id: Name,
    },
    /// A tool result arrived while nothing is being dispatched.
    #[error("no dispatch in flight (run is {phase})")]
    NoDispatchInFlight {
        /// The run's phase.
        phase: PhaseKind,
    },
    /// A tool result for another call or attempt.
    #[error(
        "result for {got_call} attempt {got_attempt}, in flight is {call_id} attempt {attempt}"
    )]
    ResultMismatch {
        /// The call in flight.
        call_id: Name,
        /// The attempt in flight.
        attempt: u8,
        /// The call answered.
        got_call: Name,
        /// The attempt answered.
        got_attempt: u8,
    },
    /// Recover arrived with nothing in flight.
    #[error("nothing in flight to recover (run is {phase})")]
    NothingInFlight {
        /// The run's phase.
        phase: PhaseKind,
    },
    /// An intervention said an effect committed, but no effect is unsettled.
    #[error("no unsettled effect: nothing to record as committed")]
    NothingUnresolved,
    /// Expire arrived before the expiry.
    #[error("not expired: expires at {expires_at}, now {now}")]
    NotExpired {
        /// The expiry.
        expires_at: Time,
        /// The input's time.
        now: Time,
    },
    /// A cancel already waits for an unsettled effect to be settled.
    #[error("a cancel already waits for an unsettled effect to be settled")]
    CancelPending,
    /// The revision counter is exhausted.
    #[error("revision counter exhausted")]
    RevisionExhausted,
    /// A batch with no calls.
    #[error("a batch needs at least one call")]
    EmptyBatch,
    /// Two calls of one batch share a call id or a key.
    #[error("call {call_id} shares its id or its key with an earlier call of the batch")]
    DuplicateInBatch {
        /// The later of the two calls.
        call_id: Name,
    },
    /// A batch resume with no decision.
    #[error("a batch resume needs at least one decision")]
    NoDecision,
    /// Two decisions of one resume on the same call.
    #[error("call {call_id} is decided twice in one resume")]
    DuplicateDecision {
        /// The call decided twice.
        call_id: Name,
    },
    /// A decision the run's policy or the call's tool does not allow.
    #[error("{decision} is not a decision this run or this tool allows")]
    DecisionNotAllowed {
        /// The decision given.
        decision: VerdictKind,
    },
    /// An edit of a call whose key an earlier call bound.
    #[error("key {key} was bound before this call: an edit cannot rebind it to new arguments")]
    EditKeyBound {
        /// The key.
        key: IdempotencyKey,
    },
    /// A suspension that puts a call to an approver who could give it no decision: none of
    /// the decisions the call takes is one the run's policy and the call's tool both allow.
    #[error("no decision the run's policy and call {call_id}'s contract both allow: no approver could answer it")]
    NoDecisionAllowed {
        /// The call no decision could answer.
        call_id: Name,
    },
}

named! {
    /// The name of a rejection: one per [`Rejection`] variant, without its evidence. The one
    /// place the wire names of rejections are written ([`RejectionKind::name`]); a test checks
    /// they are the tags serde gives the variants.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum RejectionKind {
        /// [`Rejection::Terminal`].
        Terminal = "terminal",
        /// [`Rejection::IdentityMismatch`].
        IdentityMismatch = "identity_mismatch",
        /// [`Rejection::ClockRegressed`].
        ClockRegressed = "clock_regressed",
        /// [`Rejection::SchemaTooNew`].
        SchemaTooNew = "schema_too_new",
        /// [`Rejection::UnknownSchema`].
        UnknownSchema = "unknown_schema",
        /// [`Rejection::MigrationRequired`].
        MigrationRequired = "migration_required",
        /// [`Rejection::DigestMismatch`].
        DigestMismatch = "digest_mismatch",
        /// [`Rejection::StaleRevision`].
        StaleRevision = "stale_revision",
        /// [`Rejection::FutureRevision`].
        FutureRevision = "future_revision",
        /// [`Rejection::AlreadyApplied`].
        AlreadyApplied = "already_applied",
        /// [`Rejection::AlreadyResumed`].
        AlreadyResumed = "already_resumed",
        /// [`Rejection::ResourceChanged`].
        ResourceChanged = "resource_changed",
        /// [`Rejection::NotSuspended`].
        NotSuspended = "not_suspended",
        /// [`Rejection::CheckpointMismatch`].
        CheckpointMismatch = "checkpoint_mismatch",
        /// [`Rejection::Expired`].
        Expired = "expired",
        /// [`Rejection::DecisionMismatch`].
        DecisionMismatch = "decision_mismatch",
        /// [`Rejection::ApprovalMismatch`].
        ApprovalMismatch = "approval_mismatch",
        /// [`Rejection::ApprovalExpired`].
        ApprovalExpired = "approval_expired",
        /// [`Rejection::SelfApproval`].
        SelfApproval = "self_approval",
        /// [`Rejection::Unauthorised`].
        Unauthorised = "unauthorised",
        /// [`Rejection::WaitMismatch`].
        WaitMismatch = "wait_mismatch",
        /// [`Rejection::PermissionRevoked`].
        PermissionRevoked = "permission_revoked",
        /// [`Rejection::BudgetExhausted`].
        BudgetExhausted = "budget_exhausted",
        /// [`Rejection::NotRunning`].
        NotRunning = "not_running",
        /// [`Rejection::AlreadySuspended`].
        AlreadySuspended = "already_suspended",
        /// [`Rejection::ExpiryNotInFuture`].
        ExpiryNotInFuture = "expiry_not_in_future",
        /// [`Rejection::ExpiryUnreachable`].
        ExpiryUnreachable = "expiry_unreachable",
        /// [`Rejection::ClockExhausted`].
        ClockExhausted = "clock_exhausted",
        /// [`Rejection::NoAttemptsAllowed`].
        NoAttemptsAllowed = "no_attempts_allowed",
        /// [`Rejection::KeyConflict`].
        KeyConflict = "key_conflict",
        /// [`Rejection::KeyCommitted`].
        KeyCommitted = "key_committed",
        /// [`Rejection::CallIdReused`].
        CallIdReused = "call_id_reused",
        /// [`Rejection::DispatchInFlight`].
        DispatchInFlight = "dispatch_in_flight",
        /// [`Rejection::NoDispatchInFlight`].
        NoDispatchInFlight = "no_dispatch_in_flight",
        /// [`Rejection::ResultMismatch`].
        ResultMismatch = "result_mismatch",
        /// [`Rejection::NothingInFlight`].
        NothingInFlight = "nothing_in_flight",
        /// [`Rejection::NothingUnresolved`].
        NothingUnresolved = "nothing_unresolved",
        /// [`Rejection::NotExpired`].
        NotExpired = "not_expired",
        /// [`Rejection::CancelPending`].
        CancelPending = "cancel_pending",
        /// [`Rejection::RevisionExhausted`].
        RevisionExhausted = "revision_exhausted",
        /// [`Rejection::EmptyBatch`].
        EmptyBatch = "empty_batch",
        /// [`Rejection::DuplicateInBatch`].
        DuplicateInBatch = "duplicate_in_batch",
        /// [`Rejection::NoDecision`].
        NoDecision = "no_decision",
        /// [`Rejection::DuplicateDecision`].
        DuplicateDecision = "duplicate_decision",
        /// [`Rejection::DecisionNotAllowed`].
        DecisionNotAllowed = "decision_not_allowed",
        /// [`Rejection::EditKeyBound`].
        EditKeyBound = "edit_key_bound",
        /// [`Rejection::NoDecisionAllowed`].
        NoDecisionAllowed = "no_decision_allowed",
    }
}

impl Rejection {
    /// The rejection's kind: its name without its evidence.
    pub fn kind(&self) -> RejectionKind {
        match self {
            Rejection::Terminal { .. } => RejectionKind::Terminal,
            Rejection::IdentityMismatch { .. } => RejectionKind::IdentityMismatch,
            Rejection::ClockRegressed { .. } => RejectionKind::ClockRegressed,
            Rejection::SchemaTooNew { .. } => RejectionKind::SchemaTooNew,
            Rejection::UnknownSchema { .. } => RejectionKind::UnknownSchema,
            Rejection::MigrationRequired { .. } => RejectionKind::MigrationRequired,
            Rejection::DigestMismatch { .. } => RejectionKind::DigestMismatch,
            Rejection::StaleRevision { .. } => RejectionKind::StaleRevision,
            Rejection::FutureRevision { .. } => RejectionKind::FutureRevision,
            Rejection::AlreadyApplied { .. } => RejectionKind::AlreadyApplied,
            Rejection::AlreadyResumed { .. } => RejectionKind::AlreadyResumed,
            Rejection::ResourceChanged { .. } => RejectionKind::ResourceChanged,
            Rejection::NotSuspended { .. } => RejectionKind::NotSuspended,
            Rejection::CheckpointMismatch { .. } => RejectionKind::CheckpointMismatch,
            Rejection::Expired { .. } => RejectionKind::Expired,
            Rejection::DecisionMismatch { .. } => RejectionKind::DecisionMismatch,
            Rejection::ApprovalMismatch { .. } => RejectionKind::ApprovalMismatch,
            Rejection::ApprovalExpired { .. } => RejectionKind::ApprovalExpired,
            Rejection::SelfApproval { .. } => RejectionKind::SelfApproval,
            Rejection::Unauthorised { .. } => RejectionKind::Unauthorised,
            Rejection::WaitMismatch { .. } => RejectionKind::WaitMismatch,
            Rejection::PermissionRevoked => RejectionKind::PermissionRevoked,
            Rejection::BudgetExhausted => RejectionKind::BudgetExhausted,
            Rejection::NotRunning { .. } => RejectionKind::NotRunning,
            Rejection::AlreadySuspended { .. } => RejectionKind::AlreadySuspended,
            Rejection::ExpiryNotInFuture { .. } => RejectionKind::ExpiryNotInFuture,
            Rejection::ExpiryUnreachable { .. } => RejectionKind::ExpiryUnreachable,
            Rejection::ClockExhausted { .. } => RejectionKind::ClockExhausted,
            Rejection::NoAttemptsAllowed => RejectionKind::NoAttemptsAllowed,
            Rejection::KeyConflict { .. } => RejectionKind::KeyConflict,
            Rejection::KeyCommitted { .. } => RejectionKind::KeyCommitted,
            Rejection::CallIdReused { .. } => RejectionKind::CallIdReused,
            Rejection::DispatchInFlight { .. } => RejectionKind::DispatchInFlight,
            Rejection::NoDispatchInFlight { .. } => RejectionKind::NoDispatchInFlight,
            Rejection::ResultMismatch { .. } => RejectionKind::ResultMismatch,
            Rejection::NothingInFlight { .. } => RejectionKind::NothingInFlight,
            Rejection::NothingUnresolved => RejectionKind::NothingUnresolved,
            Rejection::NotExpired { .. } => RejectionKind::NotExpired,
            Rejection::CancelPending => RejectionKind::CancelPending,
            Rejection::RevisionExhausted => RejectionKind::RevisionExhausted,
            Rejection::EmptyBatch => RejectionKind::EmptyBatch,
            Rejection::DuplicateInBatch { .. } => RejectionKind::DuplicateInBatch,
            Rejection::NoDecision => RejectionKind::NoDecision,
            Rejection::DuplicateDecision { .. } => RejectionKind::DuplicateDecision,
            Rejection::DecisionNotAllowed { .. } => RejectionKind::DecisionNotAllowed,
            Rejection::EditKeyBound { .. } => RejectionKind::EditKeyBound,
            Rejection::NoDecisionAllowed { .. } => RejectionKind::NoDecisionAllowed,
        }
    }

    /// Who is at fault, and so who should act. Matched exhaustively: a new rejection must be
    /// given its fault here.
    pub fn fault(&self) -> Fault {
        use Rejection::*;
        match self {
            StaleRevision { .. }
            | AlreadyApplied { .. }
            | AlreadyResumed { .. }
            | ResourceChanged { .. }
            | Expired { .. }
            | ApprovalExpired { .. }
            | PermissionRevoked
            | BudgetExhausted
            | Terminal { .. }
            | NotSuspended { .. } => Fault::Race,
            ClockRegressed { .. }
            | ClockExhausted { .. }
            | MigrationRequired { .. }
            | NoAttemptsAllowed
            | NotExpired { .. }
            | NothingInFlight { .. }
            | RevisionExhausted => Fault::Driver,
            IdentityMismatch { .. }
            | SchemaTooNew { .. }
            | UnknownSchema { .. }
            | DigestMismatch { .. }
            | FutureRevision { .. }
            | CheckpointMismatch { .. }
            | DecisionMismatch { .. }
            | ApprovalMismatch { .. }
            | SelfApproval { .. }
            | Unauthorised { .. }
            | WaitMismatch { .. }
            | NotRunning { .. }
            | AlreadySuspended { .. }
            | ExpiryNotInFuture { .. }
            | ExpiryUnreachable { .. }
            | KeyConflict { .. }
            | KeyCommitted { .. }
            | CallIdReused { .. }
            | DispatchInFlight { .. }
            | NoDispatchInFlight { .. }
            | ResultMismatch { .. }
            | NothingUnresolved
            | CancelPending
            | EmptyBatch
            | DuplicateInBatch { .. }
            | NoDecision
            | DuplicateDecision { .. }
            | DecisionNotAllowed { .. }
            | EditKeyBound { .. }
            | NoDecisionAllowed { .. } => Fault::Caller,
        }
    }
}
