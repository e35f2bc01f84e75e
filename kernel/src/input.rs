//! Inputs: facts and requests from outside, each with the time the driver observed it.

use crate::batch::{Decisions, Proposals};
use crate::calls::Prior;
use crate::checkpoint::Checkpoint;
use crate::ids::{Digest, Name, Revision, Time};
use crate::names::named;
use crate::run::Call;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// One input to [`crate::step`]: an event and the time it happened, as the driver saw it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Input {
    /// When the event happened. Time never runs backwards within a run (spec CLK-1).
    pub at: Time,
    /// What happened.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub event: Event,
}

#[expect(
    clippy::large_enum_variant,
    reason = "no heap in the kernel: every variant is held inline"
)]
/// What the run waits for when it suspends on request.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "wait", rename_all = "snake_case"))]
pub enum Wait {
    /// Approval of a gated call, asked for by `requester`.
    Approval {
        /// The call to approve.
        call: Call,
        /// Who asks for it; never the approver.
        requester: Name,
        /// What the run's history holds about the call's id and key (spec KEY-1, KEY-2,
        /// REC-4), looked up by the driver just before.
        prior: Prior,
    },
    /// An external callback.
    Callback {
        /// The callback awaited.
        callback: Name,
    },
    /// A person.
    Intervention,
    /// A resource.
    Resource {
        /// The resource awaited.
        resource: Name,
    },
    /// Approval of a batch of calls, one decision each (spec 5.5, BAT-1).
    Batch {
        /// The calls, in the order proposed.
        calls: Proposals,
    },
}

/// An approver's decision on a pending call, bound to everything it approves (spec APR-1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Approval {
    /// The call decided on.
    pub call_id: Name,
    /// The argument digest decided on.
    pub args: Digest,
    /// Who asked for the call.
    pub requester: Name,
    /// Who decides.
    pub approver: Name,
    /// The checkpoint revision the decision was made on.
    pub revision: Revision,
    /// The decision is void after this time.
    pub expires_at: Time,
}

/// What the tool's status query answered for an in-flight call.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "answer", rename_all = "snake_case"))]
pub enum QueryAnswer {
    /// The call committed, with this result.
    Committed {
        /// The digest of the committed result.
        result: Digest,
    },
    /// The call did not commit (and, if the query fences, now never will under that key).
    NotCommitted,
    /// The query could not tell.
    Unknown,
}

/// A person's resolution of a manual intervention.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(
    feature = "serde",
    serde(tag = "resolution", rename_all = "snake_case")
)]
pub enum Resolution {
    /// The unresolved effect committed, with this result: record it and continue.
    Committed {
        /// The digest of the committed result.
        result: Digest,
    },
    /// Continue without the effect (the person has made sure it did not and will not commit).
    Continue,
    /// Give the run up.
    Abandon,
}

#[expect(
    clippy::large_enum_variant,
    reason = "no heap in the kernel: a batch's decisions are held inline"
)]
/// The decision a resume carries. Each kind answers one suspension reason.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "decision", rename_all = "snake_case"))]
pub enum Decision {
    /// Approve the pending call.
    Approve(Approval),
    /// Deny the pending call: the run fails.
    Deny(Approval),
    /// The awaited callback arrived.
    Callback {
        /// The callback that arrived.
        callback: Name,
        /// The digest of its payload.
        payload: Digest,
    },
    /// The awaited resource is ready.
    ResourceReady {
        /// The resource.
        resource: Name,
    },
    /// A person resolved a manual intervention.
    Intervene {
        /// Who resolved it.
        by: Name,
        /// How.
        resolution: Resolution,
    },
    /// The status query for an unknown outcome answered.
    Reconcile(QueryAnswer),
    /// Decisions on calls of the pending batch, one per call (spec 5.5, BAT-2).
    Batch {
        /// The decisions.
        decisions: Decisions,
    },
}

named! {
    /// The name of a decision kind.
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum DecisionKind {
        /// [`Decision::Approve`].
        Approve = "approve",
        /// [`Decision::Deny`].
        Deny = "deny",
        /// [`Decision::Callback`].
        Callback = "callback",
        /// [`Decision::ResourceReady`].
        ResourceReady = "resource_ready",
        /// [`Decision::Intervene`].
        Intervene = "intervene",
        /// [`Decision::Reconcile`].
        Reconcile = "reconcile",
        /// [`Decision::Batch`].
        Batch = "batch",
    }
}

impl Decision {
    /// The decision's kind.
    pub fn kind(&self) -> DecisionKind {
        match self {
            Decision::Approve(_) => DecisionKind::Approve,
            Decision::Deny(_) => DecisionKind::Deny,
            Decision::Callback { .. } => DecisionKind::Callback,
            Decision::ResourceReady { .. } => DecisionKind::ResourceReady,
            Decision::Intervene { .. } => DecisionKind::Intervene,
            Decision::Reconcile(_) => DecisionKind::Reconcile,
            Decision::Batch { .. } => DecisionKind::Batch,
        }
    }
}

/// Facts the driver establishes just before a resume, under current policy (spec RES-7).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Facts {
    /// The current version of the resource the run acts on.
    pub resource_version: u64,
    /// Whether current policy still permits the step about to run.
    pub permitted: bool,
    /// Whether the budget still covers the step about to run.
    pub within_budget: bool,
}

/// A request to resume a suspended run from a checkpoint with a decision.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Resume {
    /// The checkpoint the resumer read.
    pub checkpoint: Checkpoint,
    /// The decision it carries.
    pub decision: Decision,
    /// The driver's current facts.
    pub facts: Facts,
}

/// What happened.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
#[expect(
    clippy::large_enum_variant,
    reason = "no heap in the kernel: the checkpoint is held inline"
)]
pub enum Event {
    /// Suspend the running run (spec SUS-2).
    Suspend {
        /// What it waits for.
        wait: Wait,
        /// When the suspension expires; after `at`.
        expires_at: Time,
        /// Who must act. For an approval: the approver, never the requester.
        responsible: Name,
        /// The current resource version, recorded in the checkpoint.
        resource_version: u64,
    },
    /// Dispatch an ungated call: record the intent, then tell the driver to dispatch (WAL-1).
    Dispatch {
        /// The call.
        call: Call,
        /// What the run's history holds about the call's id and key (spec KEY-1, KEY-2,
        /// REC-4), looked up by the driver just before.
        prior: Prior,
        /// The resource version the agent observed when it decided to call, if the driver
        /// knows it: the run records it, so a retry re-checks against it (spec RES-3).
        #[cfg_attr(
            feature = "serde",
            serde(default, skip_serializing_if = "Option::is_none")
        )]
        resource_version: Option<u64>,
    },
    /// The tool answered a dispatch: the call committed with this result.
    ToolResult {
        /// The call answered.
        call_id: Name,
        /// The attempt answered.
        attempt: u8,
        /// The digest of the result.
        result: Digest,
    },
    /// A worker restarted after losing its volatile state (spec REC-1).
    Recover,
    /// Resume a suspension from a checkpoint with a decision (spec RES-1).
    Resume(Resume),
    /// The clock passed a suspension's expiry (spec EXP-1).
    Expire,
    /// Cancel the run (spec CAN-1).
    Cancel {
        /// Who cancels.
        by: Name,
    },
    /// The run finished with this result.
    Complete {
        /// The digest of the final result.
        result: Digest,
    },
    /// The run reports an error of its own.
    Fail {
        /// The error's code.
        code: Name,
    },
}

/// The name of an event kind.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum EventKind {
    /// [`Event::Suspend`].
    Suspend,
    /// [`Event::Dispatch`].
    Dispatch,
    /// [`Event::ToolResult`].
    ToolResult,
    /// [`Event::Recover`].
    Recover,
    /// [`Event::Resume`].
    Resume,
    /// [`Event::Expire`].
    Expire,
    /// [`Event::Cancel`].
    Cancel,
    /// [`Event::Complete`].
    Complete,
    /// [`Event::Fail`].
    Fail,
}

impl Event {
    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Suspend { .. } => EventKind::Suspend,
            Event::Dispatch { .. } => EventKind::Dispatch,
            Event::ToolResult { .. } => EventKind::ToolResult,
            Event::Recover => EventKind::Recover,
            Event::Resume(_) => EventKind::Resume,
            Event::Expire => EventKind::Expire,
            Event::Cancel { .. } => EventKind::Cancel,
            Event::Complete { .. } => EventKind::Complete,
            Event::Fail { .. } => EventKind::Fail,
        }
    }
}
