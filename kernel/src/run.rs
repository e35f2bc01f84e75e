//! The run: identity, revision, clock, policy and phase. Data that exists in only one phase
//! lives in that phase's variant, so an illegal combination cannot be written down.

use crate::batch::{Allowed, Batch, KeptBatch};
use crate::ids::{Digest, IdempotencyKey, Name, Revision, Time};
use crate::input::Decision;
use crate::names::named;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// Who a run belongs to and what it runs. Checked first on every resume (spec ID-1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Identity {
    /// The tenant that owns the run.
    pub tenant: Name,
    /// The session the run belongs to.
    pub session: Name,
    /// The run itself.
    pub run: Name,
    /// A fingerprint of the run's definition (a version tag or a shortened hash).
    pub definition: Name,
}

/// What the tool behind a call promises, declared by the driver with the call. It decides
/// which retry is safe after a "not committed" answer (spec REC-3).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct ToolContract {
    /// The tool remembers idempotency keys and commits each at most once.
    pub dedupes: bool,
    /// The tool's status query fences the key: once it answers "not committed", a late
    /// request under that key can no longer commit.
    pub query_fences: bool,
    /// How many attempts the call may take in all (at least 1).
    pub max_attempts: u8,
    /// The decisions an approver may give on a call to this tool (spec POL-1); by default
    /// every one but `respond`. Absent on the wire when it is the default.
    #[cfg_attr(
        feature = "serde",
        serde(default = "tool_default", skip_serializing_if = "is_tool_default")
    )]
    pub allowed: Allowed,
}

impl Default for ToolContract {
    fn default() -> ToolContract {
        ToolContract {
            dedupes: false,
            query_fences: false,
            max_attempts: 0,
            allowed: Allowed::TOOL_DEFAULT,
        }
    }
}

#[cfg(feature = "serde")]
fn tool_default() -> Allowed {
    Allowed::TOOL_DEFAULT
}

#[cfg(feature = "serde")]
fn is_tool_default(a: &Allowed) -> bool {
    *a == Allowed::TOOL_DEFAULT
}

#[cfg(feature = "serde")]
fn all_allowed() -> Allowed {
    Allowed::ALL
}

#[cfg(feature = "serde")]
fn is_all(a: &Allowed) -> bool {
    *a == Allowed::ALL
}

/// A tool call as the driver proposes it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Call {
    /// The call's identifier; an edited call is a new call with a new id.
    pub call_id: Name,
    /// The tool to call.
    pub tool: Name,
    /// The digest of the call's arguments.
    pub args: Digest,
    /// The idempotency key the call is dispatched under.
    pub key: IdempotencyKey,
    /// What the tool promises about keys and queries.
    pub contract: ToolContract,
}

/// A call accepted by the kernel, with its key bound to its payload: `key_digest` is the
/// digest of the key and the argument digest together (spec KEY-1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct BoundCall {
    /// The call as proposed.
    pub call: Call,
    /// Digest binding the call's key to its argument digest.
    pub key_digest: Digest,
}

/// A call that has been dispatched at least once and whose outcome is not yet recorded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct InFlight {
    /// The call.
    pub call: BoundCall,
    /// The key's attempt number, from 0: the tool sees the key and the attempt together.
    /// A retry after a fencing query uses the next attempt, a fresh key; a retry on a
    /// deduping tool keeps it, so the tool's dedupe applies (spec REC-3).
    pub attempt: u8,
    /// How many times the call has been dispatched, from 1; bounded by `max_attempts`.
    pub dispatches: u8,
}

/// The last call whose result the run recorded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct CallOutcome {
    /// The call's identifier.
    pub call_id: Name,
    /// The key it committed under.
    pub key: IdempotencyKey,
    /// Its argument digest.
    pub args: Digest,
    /// The digest of its result.
    pub result: Digest,
}

/// Why a run is suspended, with what the suspension waits on.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "reason", rename_all = "snake_case"))]
pub enum Reason {
    /// A gated call waits for an approver's decision.
    PendingApproval {
        /// The call awaiting approval.
        call: BoundCall,
        /// Who asked for the call.
        requester: Name,
    },
    /// The run waits for an external callback.
    ExternalCallback {
        /// The callback awaited.
        callback: Name,
    },
    /// A person must decide; `unresolved` names an effect whose outcome is still unknown.
    ManualIntervention {
        /// The in-flight effect the person must settle, if any.
        unresolved: Option<InFlight>,
        /// Who cancelled while the effect was unsettled; the cancel takes effect once the
        /// person settles it (spec CAN-2).
        cancelled_by: Option<Name>,
    },
    /// The run waits for a resource.
    ResourceWait {
        /// The resource awaited.
        resource: Name,
    },
    /// The calls of the run's batch wait for the approver's decisions, one each (spec 5.5).
    PendingBatch,
    /// A dispatch was in flight when the worker stopped: its outcome must be reconciled.
    OutcomeUnknown {
        /// The call whose outcome is unknown.
        in_flight: InFlight,
        /// Who cancelled while the effect was in flight; the cancel takes effect on reconcile.
        cancelled_by: Option<Name>,
    },
}

/// A suspension: a reason, an expiry and a responsible party (spec SUS-1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Suspension {
    /// Why the run waits, and on what.
    pub reason: Reason,
    /// When the suspension began: the checkpoint's creation time.
    pub since: Time,
    /// After this time, decisions are refused and the suspension can be expired.
    pub expires_at: Time,
    /// The party who must act: the approver, the callback's owner, the operator.
    pub responsible: Name,
}

#[expect(
    clippy::large_enum_variant,
    reason = "no heap in the kernel: every variant is held inline"
)]
/// Why a run failed. Failure is terminal.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "cause", rename_all = "snake_case"))]
pub enum FailCause {
    /// An approver denied the pending call.
    Denied {
        /// The call that was denied.
        call_id: Name,
    },
    /// A suspension expired; `unresolved` names an effect whose outcome was never settled.
    Expired {
        /// The effect left unsettled, if any.
        unresolved: Option<InFlight>,
    },
    /// The run was cancelled.
    Cancelled {
        /// Who cancelled it.
        by: Name,
    },
    /// The run reported an error of its own.
    Error {
        /// The error's code.
        code: Name,
    },
    /// A person abandoned the run during manual intervention.
    Abandoned {
        /// Who abandoned it.
        by: Name,
    },
}

/// The phase of a run. `Completed` and `Failed` are terminal and absorbing (spec INV-1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "phase", rename_all = "snake_case"))]
pub enum Phase {
    /// The run is stepping. With `in_flight`, the intent to dispatch a call is durable and
    /// the driver has been told to dispatch it; the run waits for the tool's answer.
    Running {
        /// The call dispatched and not yet answered, if any.
        in_flight: Option<InFlight>,
    },
    /// The run waits, resumable.
    Suspended(Suspension),
    /// The run finished.
    Completed {
        /// The digest of its final result.
        result: Digest,
    },
    /// The run failed.
    Failed(FailCause),
}

named! {
    /// The name of a phase, for rejections, traces and diagrams.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum PhaseKind {
        /// [`Phase::Running`].
        Running = "running",
        /// [`Phase::Suspended`].
        Suspended = "suspended",
        /// [`Phase::Completed`].
        Completed = "completed",
        /// [`Phase::Failed`].
        Failed = "failed",
    }
}

named! {
    /// The name of a suspension reason.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum ReasonKind {
        /// [`Reason::PendingApproval`].
        PendingApproval = "pending_approval",
        /// [`Reason::ExternalCallback`].
        ExternalCallback = "external_callback",
        /// [`Reason::ManualIntervention`].
        ManualIntervention = "manual_intervention",
        /// [`Reason::ResourceWait`].
        ResourceWait = "resource_wait",
        /// [`Reason::OutcomeUnknown`].
        OutcomeUnknown = "outcome_unknown",
        /// [`Reason::PendingBatch`].
        PendingBatch = "pending_batch",
    }
}

impl Reason {
    /// The reason's name.
    pub fn kind(&self) -> ReasonKind {
        match self {
            Reason::PendingApproval { .. } => ReasonKind::PendingApproval,
            Reason::ExternalCallback { .. } => ReasonKind::ExternalCallback,
            Reason::ManualIntervention { .. } => ReasonKind::ManualIntervention,
            Reason::ResourceWait { .. } => ReasonKind::ResourceWait,
            Reason::OutcomeUnknown { .. } => ReasonKind::OutcomeUnknown,
            Reason::PendingBatch => ReasonKind::PendingBatch,
        }
    }

    /// The call this suspension holds, if any: awaiting approval, or in flight.
    pub fn call(&self) -> Option<(BoundCall, u8)> {
        match self {
            Reason::PendingApproval { call, .. } => Some((*call, 0)),
            Reason::OutcomeUnknown { in_flight, .. }
            | Reason::ManualIntervention {
                unresolved: Some(in_flight),
                ..
            } => Some((in_flight.call, in_flight.attempt)),
            _ => None,
        }
    }

    /// Who cancelled while an effect's outcome is unsettled, if anyone (spec CAN-2).
    pub fn cancelled_by(&self) -> Option<Name> {
        match self {
            Reason::OutcomeUnknown { cancelled_by, .. }
            | Reason::ManualIntervention { cancelled_by, .. } => *cancelled_by,
            _ => None,
        }
    }
}

impl Phase {
    /// The phase's name.
    pub fn kind(&self) -> PhaseKind {
        match self {
            Phase::Running { .. } => PhaseKind::Running,
            Phase::Suspended(_) => PhaseKind::Suspended,
            Phase::Completed { .. } => PhaseKind::Completed,
            Phase::Failed(_) => PhaseKind::Failed,
        }
    }

    /// Whether the phase is terminal (completed or failed).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Phase::Completed { .. } | Phase::Failed(_))
    }
}

/// Settings fixed when a run is created. Read back from JSON only if valid.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "PolicyFields"))]
pub struct Policy {
    /// The party who reconciles unknown outcomes and handles manual intervention.
    pub operator: Name,
    /// How long a reconciliation or an escalated intervention may wait, in time units; at
    /// least 1, so that such a suspension lasts beyond the instant it begins.
    pub reconcile_window: u64,
    /// The decisions an approver may give on this run (spec POL-1): every one unless narrowed
    /// (a run that hands rejections back to the agent instead of failing leaves `deny` out).
    /// Absent on the wire when it is every one.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "is_all"))]
    pub allowed: Allowed,
}

/// Why a policy cannot govern a run.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum PolicyError {
    /// A reconcile window of 0 would make every reconciliation expire the instant it begins.
    #[error("the reconcile window must be at least 1")]
    ReconcileWindowZero,
}

/// A policy's fields as read, before [`Policy::validate`].
#[cfg(feature = "serde")]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFields {
    operator: Name,
    reconcile_window: u64,
    #[serde(default = "all_allowed")]
    allowed: Allowed,
}

#[cfg(feature = "serde")]
impl TryFrom<PolicyFields> for Policy {
    type Error = PolicyError;
    fn try_from(f: PolicyFields) -> Result<Policy, PolicyError> {
        let policy = Policy {
            operator: f.operator,
            reconcile_window: f.reconcile_window,
            allowed: f.allowed,
        };
        policy.validate()?;
        Ok(policy)
    }
}

impl Policy {
    /// Checks the policy: the reconcile window is at least 1.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.reconcile_window == 0 {
            return Err(PolicyError::ReconcileWindowZero);
        }
        Ok(())
    }
}

/// The decision that won the last resume, kept so that a duplicate of it is answered as a
/// duplicate and a different one as a conflict (spec RES-2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct ResumeReceipt {
    /// The revision the resume was taken from.
    pub from: Revision,
    /// The revision the resume produced.
    pub to: Revision,
    /// The digest of the checkpoint it was taken from: only a caller holding that checkpoint
    /// is told how its decision fared.
    pub checkpoint: Digest,
    /// The decision that won.
    pub decision: Decision,
}

/// One agent run under the lifecycle. Its fields are private: a run is made by [`Run::new`]
/// or by a deserialiser that checks every invariant, and changed only by [`crate::step`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize))]
pub struct Run {
    pub(crate) identity: Identity,
    pub(crate) policy: Policy,
    pub(crate) revision: Revision,
    pub(crate) resource_version: u64,
    pub(crate) updated_at: Time,
    pub(crate) phase: Phase,
    pub(crate) last_call: Option<CallOutcome>,
    pub(crate) last_resume: Option<ResumeReceipt>,
    #[cfg_attr(
        feature = "serde",
        serde(
            skip_serializing_if = "Option::is_none",
            serialize_with = "crate::batch::serialize_kept"
        )
    )]
    pub(crate) batch: Option<KeptBatch>,
}

impl Run {
    /// A new run, running at revision 0, created at `at`, or why its policy cannot govern it.
    pub fn new(identity: Identity, policy: Policy, at: Time) -> Result<Run, PolicyError> {
        policy.validate()?;
        Ok(Run {
            identity,
            policy,
            revision: Revision(0),
            resource_version: 0,
            updated_at: at,
            phase: Phase::Running { in_flight: None },
            last_call: None,
            last_resume: None,
            batch: None,
        })
    }

    /// Who the run belongs to.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }
    /// The run's policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }
    /// The state revision.
    pub fn revision(&self) -> Revision {
        self.revision
    }
    /// The resource version the run last observed: recorded by a suspend and by every accepted
    /// resume (from the driver's facts), checked by the decisions that act on the present.
    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }
    /// The time of the last accepted input (or of creation).
    pub fn updated_at(&self) -> Time {
        self.updated_at
    }
    /// The current phase.
    pub fn phase(&self) -> &Phase {
        &self.phase
    }
    /// The last call result the run recorded: reused, never re-executed (spec REC-4).
    pub fn last_call(&self) -> Option<&CallOutcome> {
        self.last_call.as_ref()
    }
    /// The decision that won the last resume, if any.
    pub fn last_resume(&self) -> Option<&ResumeReceipt> {
        self.last_resume.as_ref()
    }
    /// The call in flight, if the run is running with a dispatch outstanding.
    pub fn in_flight(&self) -> Option<&InFlight> {
        match &self.phase {
            Phase::Running { in_flight: Some(f) } => Some(f),
            _ => None,
        }
    }
    /// The run's last batch of calls, if it ever suspended for one (spec 5.5), each decision
    /// recorded in it whole. The run keeps less of each decision (what it adds to its call's
    /// slot, [`crate::Decided`]), so the batch is made whole for the reader, not borrowed.
    pub fn batch(&self) -> Option<Batch> {
        self.batch.as_ref().map(KeptBatch::view)
    }
    /// The current suspension, if suspended.
    pub fn suspension(&self) -> Option<&Suspension> {
        match &self.phase {
            Phase::Suspended(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for Run {
    /// A run read back from storage is checked against every state invariant, so a corrupted
    /// or hand-edited record is refused at the boundary instead of reaching the step.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            identity: Identity,
            policy: Policy,
            revision: Revision,
            resource_version: u64,
            updated_at: Time,
            phase: Phase,
            last_call: Option<CallOutcome>,
            last_resume: Option<ResumeReceipt>,
            #[serde(default)]
            batch: Option<Batch>,
            /// Rules 2 and earlier kept the call log inline here (see `LoggedCall`).
            calls: Option<serde::de::IgnoredAny>,
        }
        let raw = Raw::deserialize(d)?;
        if raw.calls.is_some() {
            return Err(serde::de::Error::custom(
                "this run carries its call log inline, as rules 2 and earlier wrote it: move \
                 its `calls` into the driver's history index (LoggedCall::entries) and drop \
                 the field, or its history would be lost",
            ));
        }
        let run = Run {
            identity: raw.identity,
            policy: raw.policy,
            revision: raw.revision,
            resource_version: raw.resource_version,
            updated_at: raw.updated_at,
            phase: raw.phase,
            last_call: raw.last_call,
            last_resume: raw.last_resume,
            batch: match &raw.batch {
                Some(b) => Some(KeptBatch::keep(b).map_err(serde::de::Error::custom)?),
                None => None,
            },
        };
        crate::invariants::check_run(&run).map_err(serde::de::Error::custom)?;
        Ok(run)
    }
}
