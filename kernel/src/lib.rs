//! The lifecycle kernel: the rules by which an agent run is checkpointed, suspended and
//! resumed safely, as one pure transition function.
//!
//! This crate contains no I/O and reads no clock, no random source and no environment: time
//! and identifiers arrive in the inputs. It is `no_std`, and [`step`] never allocates (only
//! the optional `json` feature's checkpoint decoder does, for serde_json's errors). [`step`]
//! borrows the run, so a rejected input leaves it exactly as it was, and it does not panic on
//! any input.
//!
//! # Driving contract
//!
//! For each input: call [`step`]. On a [`Rejection`], record it and change nothing. On a
//! [`Transition`], store `next` in the durable store with compare-and-set on the revision the
//! step started from (two workers racing on one run: the store decides who wins), together
//! with the audit record and the [`HistoryEntry`] the effects carry, then carry out the rest
//! in order: persist the checkpoint, dispatch or query the tool. Dispatch only after the store
//! write succeeded: that is the write-ahead rule. After a crash, reload the run and feed
//! [`Event::Recover`]; [`Run::next`] says what the run waits on, [`Run::deadline`] when its
//! next timer falls due.
//!
//! The run's call history lives in the driver's store, indexed by [`Fingerprint`]: before a
//! call is bound (a dispatch, or a suspension for its approval), look its id and key up and
//! pass what you found as its [`Prior`] ([`Prior::NONE`] for the first call of a run).
//!
//! # Example: a whole approval lifecycle
//!
//! ```
//! use resumable_kernel::*;
//! let id = Identity { tenant: Name::lit("acme"), session: Name::lit("s-1"),
//!     run: Name::lit("run-7"), definition: Name::lit("publisher@1") };
//! let policy = Policy { operator: Name::lit("ops"), reconcile_window: 100, allowed: Allowed::ALL };
//! let mut run = Run::new(id, policy, Time(0))?; // store it: revision 0
//! let call = Call { call_id: Name::lit("call-1"), tool: Name::lit("publish"),
//!     args: Digest::of(br#"{"post":42}"#), key: IdempotencyKey::lit("idem-1"),
//!     contract: ToolContract { dedupes: true, query_fences: false, max_attempts: 3,
//!         ..ToolContract::default() } };
//! let (agent, alice) = (Name::lit("agent"), Name::lit("alice"));
//!
//! // Suspend for alice's approval. Store the run (compare-and-set on revision 0), append the
//! // audit record, persist the checkpoint and hand it to alice.
//! let wait = Wait::Approval { call, requester: agent, prior: Prior::NONE };
//! let event = Event::Suspend { wait, expires_at: Time(50), responsible: alice,
//!     resource_version: 7 };
//! let checkpoint = *run.apply(&Input { at: Time(1), event })?.checkpoint().unwrap();
//!
//! // Alice approves that checkpoint: the resume re-validates everything against the present.
//! let approval = Approval { call_id: call.call_id, args: call.args, requester: agent,
//!     approver: alice, revision: checkpoint.revision, expires_at: Time(40) };
//! let facts = Facts { resource_version: 7, permitted: true, within_budget: true };
//! let event = Event::Resume(Resume { checkpoint, decision: Decision::Approve(approval), facts });
//! let effects = run.apply(&Input { at: Time(2), event })?;
//! // Store the run first (write-ahead), then dispatch under the key bound to this run.
//! assert_eq!(effects.dispatch().unwrap().tool_key, checkpoint::tool_key(&id, &call.key));
//!
//! // The tool's result lands with the next revision; the run completes.
//! let event = Event::ToolResult { call_id: call.call_id, attempt: 0, result: Digest::of(b"ok") };
//! run.apply(&Input { at: Time(3), event })?;
//! run.apply(&Input { at: Time(4), event: Event::Complete { result: Digest::of(b"done") } })?;
//! assert_eq!((run.phase().kind(), run.revision()), (PhaseKind::Completed, Revision(4)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod batch;
pub mod calls;
pub mod checkpoint;
pub mod effect;
pub mod ids;
pub mod input;
pub mod invariants;
pub(crate) mod names;
mod next;
pub mod reject;
mod rules;
pub mod run;
pub mod spec;
mod step;

pub use batch::{
    Allowed, Batch, CallDecision, Decided, Decisions, List, Proposal, Proposals, Slot, SlotState,
    Verdict, VerdictKind, BATCH_CAPACITY,
};
pub use calls::{Fingerprint, HistoryEntry, KeyUse, LoggedCall, Prior};
pub use checkpoint::{
    Checkpoint, CheckpointV1, CheckpointV2, Intent, PendingCall, SCHEMA_V1, SCHEMA_V2,
    SCHEMA_VERSION,
};
pub use effect::{AuditRecord, Command, Dispatch, Effect, Effects};
pub use ids::{
    Digest, IdempotencyKey, Name, NameError, Revision, Text, Time, KEY_CAPACITY, LEGACY_NAME_WIDTH,
    NAME_CAPACITY,
};
pub use input::{
    Approval, Decision, DecisionKind, Event, EventKind, Facts, Input, QueryAnswer, Resolution,
    Resume, Wait,
};
pub use next::Next;
pub use reject::{ApprovalField, CheckpointField, Fault, IdentityField, Rejection, RejectionKind};
pub use rules::RULES_VERSION;
pub use run::{
    BoundCall, Call, CallOutcome, FailCause, Identity, InFlight, Phase, PhaseKind, Policy,
    PolicyError, Reason, ReasonKind, ResumeReceipt, Run, Suspension, ToolContract,
};
pub use spec::SpecId;
pub use step::{step, Transition};

impl Run {
    /// Steps the run in place: on a transition, replaces the run and returns its effects; on a
    /// rejection, leaves it unchanged. A thin wrapper over [`step`] with no logic of its own.
    pub fn apply(&mut self, input: &Input) -> Result<Effects, Rejection> {
        let t = step(self, input)?;
        *self = t.next;
        Ok(t.effects)
    }
}
