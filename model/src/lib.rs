//! The model: an independent reference lifecycle machine, the concurrent environment around
//! runs (workers that crash, a store with compare-and-set, approvers, a lossy tool, a clock),
//! and the lifecycle's properties named by spec ID, checked with stateright.
//!
//! The environment is generic over [`Lifecycle`], so the same checker runs on the kernel, on
//! the reference machine and on deliberately broken variants.

pub mod checker;
pub mod config;
pub mod driving;
pub mod properties;
pub mod reference;
pub mod twopc;
pub mod variant;
pub mod world;

use resumable_kernel::{
    Batch, CallOutcome, Effects, Identity, Input, Phase, Policy, PolicyError, Rejection, Revision,
    Run, Time,
};
use std::fmt::Debug;
use std::hash::Hash;

/// What every lifecycle implementation shows of a run, in the kernel's vocabulary: enough
/// for the properties and for comparing two implementations state by state.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Snapshot {
    /// The state revision.
    pub revision: Revision,
    /// The time of the last accepted input.
    pub updated_at: Time,
    /// The phase, with the data that lives in it.
    pub phase: Phase,
    /// The last call result recorded.
    pub last_call: Option<CallOutcome>,
}

/// A lifecycle implementation: the kernel, the reference machine, or a broken variant.
///
/// Implementations share the kernel's data vocabulary (inputs, effects, rejections,
/// checkpoints and their digest) but not its logic.
pub trait Lifecycle: Clone + Debug + Send + Sync + 'static {
    /// The implementation's own run state.
    type Run: Clone + Debug + Hash + Eq + Send + Sync + 'static;

    /// A short name for reports.
    fn name(&self) -> &'static str;

    /// A new run, running at revision 0, or why the policy cannot govern one.
    fn create(
        &self,
        identity: Identity,
        policy: Policy,
        at: Time,
    ) -> Result<Self::Run, PolicyError>;

    /// One step: the next run and its effects, or the rejection. Never panics.
    fn step(&self, run: &Self::Run, input: &Input) -> Result<(Self::Run, Effects), Rejection>;

    /// The run as the properties see it.
    fn snapshot(&self, run: &Self::Run) -> Snapshot;

    /// The run's last batch of calls, as the kernel lists it (`Run::batch`, spec 5.5): what
    /// the approvers of a batch read (which calls still await a decision) and where each
    /// call stands. The world reads it to offer decisions and to tell a call in flight;
    /// the batch properties check what it says against the world's own ledger. A lifecycle
    /// without batches has none.
    fn batch(&self, _run: &Self::Run) -> Option<Batch> {
        None
    }
}

/// The kernel as a lifecycle implementation: the default subject of every check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Kernel;

impl Lifecycle for Kernel {
    type Run = Run;

    fn name(&self) -> &'static str {
        "kernel"
    }

    fn create(&self, identity: Identity, policy: Policy, at: Time) -> Result<Run, PolicyError> {
        Run::new(identity, policy, at)
    }

    fn step(&self, run: &Run, input: &Input) -> Result<(Run, Effects), Rejection> {
        resumable_kernel::step(run, input).map(|t| (t.next, t.effects))
    }

    fn snapshot(&self, run: &Run) -> Snapshot {
        Snapshot {
            revision: run.revision(),
            updated_at: run.updated_at(),
            phase: *run.phase(),
            last_call: run.last_call().copied(),
        }
    }

    fn batch(&self, run: &Run) -> Option<Batch> {
        run.batch()
    }
}
