//! The reference lifecycle machine: the lifecycle written a second time, from the
//! specification, for clarity rather than speed.
//!
//! It shares the kernel's data vocabulary (inputs, rejections, effects, checkpoints and their
//! digest) but none of its logic: it never calls the kernel's step. Conformance runs the two
//! side by side and compares, at every reachable state, which inputs each accepts and which
//! rejection each gives.
//!
//! # How a step reads
//!
//! Every input goes through the same three stages, in this order:
//!
//! 1. **Guards**: named functions, each citing the spec ID it enforces, called in the order
//!    the specification checks them. The first that fails gives the rejection, with its
//!    evidence; a rejected input changes nothing (REJ-2), which holds by construction since
//!    the step only borrows the run.
//! 2. **Transition**: the next run, at the next revision (REV-1), with its clock moved to the
//!    input's time (CLK-1).
//! 3. **Effects**: one new audit record first (AUD-1); a sealed checkpoint whenever the new
//!    state is suspended (CKP-1); then the dispatch or query the driver must issue (WAL-1).
//!
//! A [`Reference`] may carry a [`Variant`]: one rule deliberately broken, so that the model's
//! properties can be shown to catch it. The machine never asks which variant it is: at each
//! place where a runtime can go wrong it consults a table of rules (`rules.rs`), the
//! specification's own, or the specification's with the one entry the variant swaps.
//!
//! The machine's rooms: `events` (every input but resume, spec 4), `resume` (spec 5),
//! `batch` (spec 5.5), `guards` (the checks several inputs share, each citing its ID),
//! `moves` (the transition and its effects, spec 4 and 6) and `rules` (the table).

mod batch;
mod events;
mod guards;
mod moves;
mod resume;
mod rules;

pub(crate) use events::{rows_1_to_5, to_a_person};
pub(crate) use guards::{guard_policy, guard_resource_version};
pub(crate) use moves::{Move, StepResult};
pub(crate) use resume::{
    approved_call, bound_to_call, identity_fields, requester_never_approves, retry_by_contract,
};
pub(crate) use rules::Rules;

use crate::variant::Variant;
use crate::{Lifecycle, Snapshot};
use resumable_kernel::checkpoint::batch_digest;
use resumable_kernel::{
    Batch, BoundCall, CallOutcome, Checkpoint, Digest, Effects, FailCause, Identity, InFlight,
    Input, Intent, PendingCall, Phase, Policy, PolicyError, Reason, Rejection, ResumeReceipt,
    Revision, SlotState, Suspension, Time, SCHEMA_VERSION,
};

/// The reference machine, or one of its broken variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reference {
    /// The rule deliberately broken, if any; `None` is the reference itself.
    pub variant: Option<Variant>,
}

/// Where a run is in its lifecycle, in the specification's words. Data that exists in one
/// status only lives in that status.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Status {
    /// Running, with nothing dispatched.
    Running,
    /// Running, with the intent to dispatch a call recorded and the dispatch commanded: the
    /// run waits for the tool's answer (WAL-2).
    AwaitingResult(InFlight),
    /// Suspended: waiting, resumable, with a reason, an expiry and a responsible party.
    Suspended(Suspension),
    /// Completed (terminal).
    Completed {
        /// The digest of the run's final result.
        result: Digest,
    },
    /// Failed (terminal).
    Failed(FailCause),
}

/// A call whose result the run recorded: reused, never executed again (REC-4).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RecordedCall {
    /// The call, with its key bound to its arguments.
    pub call: BoundCall,
    /// The attempt that committed.
    pub attempt: u8,
    /// The digest of the committed result.
    pub result: Digest,
}

/// The reference machine's run, in plain fields.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RefRun {
    /// Who the run belongs to and what it runs (ID-1).
    pub identity: Identity,
    /// Settings fixed at creation.
    pub policy: Policy,
    /// The state revision: 0 at creation, plus one per accepted input (REV-1).
    pub revision: Revision,
    /// The resource version recorded by the last suspend.
    pub resource_version: u64,
    /// The time of the last accepted input (CLK-1).
    pub clock: Time,
    /// Where the run is.
    pub status: Status,
    /// The last call result recorded.
    pub last_call: Option<RecordedCall>,
    /// The decision that won the last resume (RES-2).
    pub last_resume: Option<ResumeReceipt>,
    /// The run's last batch of calls, from the suspension that opens it until the next one
    /// opens (spec 5.5, BAT-1). Held in the kernel's vocabulary, which is how lockstep
    /// compares it; every rule that changes it is the reference's own.
    pub batch: Option<Batch>,
}

impl RefRun {
    /// A new run, running at revision 0, created at `at`.
    pub fn new(identity: Identity, policy: Policy, at: Time) -> RefRun {
        RefRun {
            identity,
            policy,
            revision: Revision(0),
            resource_version: 0,
            clock: at,
            status: Status::Running,
            last_call: None,
            last_resume: None,
            batch: None,
        }
    }

    /// The batch, while it awaits decisions (the run is suspended for it).
    pub fn open_batch(&self) -> Option<&Batch> {
        match (&self.status, &self.batch) {
            (Status::Suspended(s), Some(b)) if s.reason == Reason::PendingBatch && b.is_open() => {
                Some(b)
            }
            _ => None,
        }
    }

    /// The first call of the batch in flight together with others, as the run's phase would
    /// name it (BAT-4): the run is running, but not idle.
    pub fn batch_in_flight(&self) -> Option<InFlight> {
        if self.status != Status::Running {
            return None;
        }
        self.batch
            .as_ref()?
            .slots
            .iter()
            .find_map(|s| match s.state {
                SlotState::InFlight {
                    attempt,
                    dispatches,
                } => Some(InFlight {
                    call: s.call,
                    attempt,
                    dispatches,
                }),
                _ => None,
            })
    }

    /// The run's status as the kernel's phase vocabulary names it.
    pub fn phase(&self) -> Phase {
        match self.status {
            Status::Running => Phase::Running { in_flight: None },
            Status::AwaitingResult(f) => Phase::Running { in_flight: Some(f) },
            Status::Suspended(s) => Phase::Suspended(s),
            Status::Completed { result } => Phase::Completed { result },
            Status::Failed(cause) => Phase::Failed(cause),
        }
    }

    /// The run as the properties see it.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            revision: self.revision,
            updated_at: self.clock,
            phase: self.phase(),
            last_call: self.last_call.map(|r| CallOutcome {
                call_id: r.call.call.call_id,
                key: r.call.call.key,
                args: r.call.call.args,
                result: r.result,
            }),
        }
    }

    /// The checkpoint describing the run's suspension, unsealed (zero digest), or `None`
    /// when the run is not suspended. What a resume is compared with (RES-4), and, sealed,
    /// what a suspension persists (CKP-1).
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        let Status::Suspended(s) = self.status else {
            return None;
        };
        // Where a resume re-enters: an approved call is dispatched, an unknown outcome is
        // reconciled by query first, anything else continues the run's own steps.
        let (next_intent, requester, waiting_on, call) = match s.reason {
            Reason::PendingApproval { call, requester } => {
                (Intent::Dispatch, Some(requester), None, Some((call, 0)))
            }
            Reason::OutcomeUnknown { in_flight, .. } => (
                Intent::Reconcile,
                None,
                None,
                Some((in_flight.call, in_flight.attempt)),
            ),
            Reason::ManualIntervention { unresolved, .. } => (
                Intent::Continue,
                None,
                None,
                unresolved.map(|f| (f.call, f.attempt)),
            ),
            Reason::ExternalCallback { callback } => (Intent::Continue, None, Some(callback), None),
            Reason::ResourceWait { resource } => (Intent::Continue, None, Some(resource), None),
            // A batch's calls are dispatched once every one is decided; its checkpoint names
            // none of them but carries the digest of them all (spec 5.5).
            Reason::PendingBatch => (Intent::Dispatch, None, None, None),
        };
        // While a batch awaits decisions, every checkpoint is the one it opened with: its
        // revision and resource version, and the digest of its calls as proposed (BAT-2).
        let open = self.open_batch();
        Some(Checkpoint {
            schema_version: SCHEMA_VERSION,
            identity: self.identity,
            revision: open.map_or(self.revision, |b| b.opened),
            resource_version: open.map_or(self.resource_version, |b| b.resource_version),
            reason: s.reason.kind(),
            next_intent,
            pending: call.map(|(c, attempt)| PendingCall {
                call_id: c.call.call_id,
                tool: c.call.tool,
                args: c.call.args,
                attempt,
            }),
            key_digest: call.map(|(c, _)| c.key_digest),
            requester,
            waiting_on,
            expires_at: s.expires_at,
            responsible: s.responsible,
            created_at: s.since,
            batch: open.map(batch_digest),
            cancel_requested_by: match s.reason {
                Reason::OutcomeUnknown { cancelled_by, .. }
                | Reason::ManualIntervention { cancelled_by, .. } => cancelled_by,
                _ => None,
            },
            digest: Digest::default(),
        })
    }
}

impl Reference {
    /// The reference machine itself.
    pub const fn new() -> Reference {
        Reference { variant: None }
    }

    /// The reference with one rule broken.
    pub const fn broken(variant: Variant) -> Reference {
        Reference {
            variant: Some(variant),
        }
    }

    /// The rules the machine consults: the specification's, or those of its variant.
    pub(crate) const fn rules(&self) -> Rules {
        match self.variant {
            Some(v) => v.rules(),
            None => Rules::HONEST,
        }
    }
}

impl Lifecycle for Reference {
    type Run = RefRun;

    fn name(&self) -> &'static str {
        match self.variant {
            Some(v) => v.name(),
            None => "reference",
        }
    }

    fn create(&self, identity: Identity, policy: Policy, at: Time) -> Result<RefRun, PolicyError> {
        // The policy's reconcile window must let a reconciliation outlast its first instant.
        if policy.reconcile_window == 0 {
            return Err(PolicyError::ReconcileWindowZero);
        }
        Ok(RefRun::new(identity, policy, at))
    }

    fn step(&self, run: &RefRun, input: &Input) -> Result<(RefRun, Effects), Rejection> {
        Reference::step(self, run, input)
    }

    fn snapshot(&self, run: &RefRun) -> Snapshot {
        run.snapshot()
    }

    fn batch(&self, run: &RefRun) -> Option<Batch> {
        run.batch
    }
}
