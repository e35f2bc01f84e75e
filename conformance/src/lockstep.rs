//! Lockstep conformance: two lifecycle implementations fed the same inputs and compared after
//! every one, in both directions (spec CONF-1).
//!
//! [`Pair`] is itself a [`Lifecycle`]: its run holds both runs, and its step feeds the input
//! to both. When both accept, the runs they reach (seen through [`Observation`], the common
//! vocabulary) and the effects they command must be equal; when both refuse, the rejections
//! must be equal, variant and evidence. Anything else is a [`Divergence`], recorded in the
//! pair's run as data. Because the pair is a lifecycle, the model's world explores it like
//! any other: every input the world offers at every reachable state, the ones that must be
//! refused included, goes through both machines, and a disagreement is a state the checker
//! reaches, with a shortest trace to it, never a panic (see [`pair_world`]). At every reachable
//! state the world can also offer both machines [`probe`]s: adversarial inputs its actors
//! never send on a given configuration. [`Session`] drives a pair input by input, for named
//! cases and property tests, and [`render`] prints verdicts side by side.
//!
//! # Why both directions
//!
//! Replaying the traces one machine accepts on the other checks one inclusion only: that the
//! second accepts everything the first does. A kernel that accepts *more* than the reference
//! (a self-approval, a stale checkpoint) agrees with every trace the reference accepts, since
//! those traces never contain the input it wrongly accepts. Comparing the verdicts on every
//! input offered, refused ones included, checks both inclusions and the rejections too.
//! [`Comparison::ReplayAccepted`] keeps the one-sided check available, so that tests can show
//! what it misses.
//!
//! # Example
//!
//! ```
//! use resumable_conformance::lockstep::{kernel_and_reference, Said, Session};
//! use resumable_kernel::*;
//!
//! let id = Identity {
//!     tenant: Name::lit("acme"),
//!     session: Name::lit("s-1"),
//!     run: Name::lit("run-1"),
//!     definition: Name::lit("agent@1"),
//! };
//! let policy = Policy { operator: Name::lit("ops"), reconcile_window: 10, allowed: resumable_kernel::Allowed::ALL };
//! let mut s = Session::new(kernel_and_reference(), id, policy, Time(0)).unwrap();
//! let wait = Event::Suspend {
//!     wait: Wait::Callback { callback: Name::lit("webhook") },
//!     expires_at: Time(9),
//!     responsible: Name::lit("partner"),
//!     resource_version: 1,
//! };
//! assert!(s.feed(&Input { at: Time(1), event: wait }).agreed);
//! // SUS-2: both refuse the second suspend, with the same rejection.
//! let row = s.feed(&Input { at: Time(2), event: wait });
//! assert!(row.agreed);
//! assert!(matches!(row.a, Said::Refused(Rejection::AlreadySuspended { .. })));
//! assert!(s.divergence().is_none());
//! ```
//!
//! # What a pair does after a divergence
//!
//! The first disagreement is kept, with the input and what each machine said. From then on
//! the pair compares nothing more ([`Refusal::AlreadyDiverged`]; each machine is
//! [`Said::NotAsked`]): like a test that stops at its first failure, it stops telling anything
//! about either machine, and the world's own properties are not judged past that point (see
//! [`pair_world`]). As a lifecycle the pair then follows its leading machine alone, so every
//! verdict it gives is a machine's own.

mod pair;
pub mod pair_world;
pub mod probe;
pub mod render;
mod session;
mod tally;

pub use pair::{Compared, Pair, PairRun, Refusal};
pub use session::{Row, Session};
pub use tally::{agreed_rejections, Agreed, Tally};

use resumable_kernel::{Batch, Effects, Identity, Input, Policy, Rejection, ResumeReceipt};
use resumable_model::reference::Reference;
use resumable_model::{Kernel, Lifecycle, Snapshot};
use std::fmt;

/// Everything of a run two implementations must agree on, in the kernel's vocabulary: the
/// [`Snapshot`] the model's properties read, and the fields that only show later (the resource
/// version a resume is compared with, the receipt that answers a duplicate resume).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Observation {
    /// Revision, clock, phase and last recorded call.
    pub snapshot: Snapshot,
    /// Who the run belongs to (spec ID-1).
    pub identity: Identity,
    /// The run's policy.
    pub policy: Policy,
    /// The resource version the run last observed (spec RES-3).
    pub resource_version: u64,
    /// The receipt of the last accepted resume (spec RES-2).
    pub last_resume: Option<ResumeReceipt>,
    /// The run's last batch of calls, slot by slot (spec 5.5): the decision each call
    /// received and where it stands.
    pub batch: Option<Batch>,
}

/// A lifecycle whose runs can be mapped into the common vocabulary of [`Observation`].
pub trait Observable: Lifecycle {
    /// The run, in the common vocabulary.
    fn observe(&self, run: &Self::Run) -> Observation;
}

impl Observable for Kernel {
    fn observe(&self, run: &Self::Run) -> Observation {
        Observation {
            snapshot: self.snapshot(run),
            identity: *run.identity(),
            policy: *run.policy(),
            resource_version: run.resource_version(),
            last_resume: run.last_resume().copied(),
            batch: run.batch(),
        }
    }
}

impl Observable for Reference {
    fn observe(&self, run: &Self::Run) -> Observation {
        Observation {
            snapshot: self.snapshot(run),
            identity: run.identity,
            policy: run.policy,
            resource_version: run.resource_version,
            last_resume: run.last_resume,
            batch: run.batch,
        }
    }
}

/// What one machine said.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "compared and hashed by value; boxing buys nothing here"
)]
pub enum Said {
    /// A new run, as created (before any input).
    Created(Observation),
    /// The input was accepted: the run it led to and the effects commanded.
    Accepted {
        /// The run after the input.
        run: Observation,
        /// The effects, in order.
        effects: Effects,
    },
    /// The input was refused.
    Refused(Rejection),
    /// The machine was not asked: the pair had already diverged.
    NotAsked,
}

impl Said {
    /// Whether the machine accepted the input.
    pub fn accepted(&self) -> bool {
        matches!(self, Said::Accepted { .. })
    }
}

/// Which of the pair's two machines.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Side {
    /// The first machine (the subject: usually the kernel).
    A,
    /// The second machine (the yardstick: usually the reference).
    B,
}

/// How two verdicts disagree.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Disagreement {
    /// The two machines were created in different states.
    Creation,
    /// Only the first machine accepted the input: it is more permissive.
    OnlyAAccepted,
    /// Only the second machine accepted the input: it is more permissive.
    OnlyBAccepted,
    /// Both refused, with different rejections or evidence (spec REJ-1).
    Rejections,
    /// Both accepted, but reached different runs.
    Runs,
    /// Both accepted and reached the same run, but commanded different effects.
    Effects,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Disagreement::Creation => "created in different states",
            Disagreement::OnlyAAccepted => "only the first accepted",
            Disagreement::OnlyBAccepted => "only the second accepted",
            Disagreement::Rejections => "both refused, differently",
            Disagreement::Runs => "both accepted, reaching different runs",
            Disagreement::Effects => "both accepted, commanding different effects",
        })
    }
}

/// The first disagreement of a pair: the input, and what each machine said.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Divergence {
    /// The input both were fed; `None` for a disagreement at creation.
    pub input: Option<Input>,
    /// The names of the two machines, first then second.
    pub names: [&'static str; 2],
    /// What the first machine said.
    pub a: Said,
    /// What the second machine said.
    pub b: Said,
}

impl Divergence {
    /// How the verdicts disagree.
    pub fn disagreement(&self) -> Disagreement {
        match (&self.a, &self.b) {
            (Said::Accepted { .. }, Said::Refused(_)) => Disagreement::OnlyAAccepted,
            (Said::Refused(_), Said::Accepted { .. }) => Disagreement::OnlyBAccepted,
            (Said::Refused(_), Said::Refused(_)) => Disagreement::Rejections,
            (Said::Accepted { run: ra, .. }, Said::Accepted { run: rb, .. }) if ra != rb => {
                Disagreement::Runs
            }
            (Said::Accepted { .. }, Said::Accepted { .. }) => Disagreement::Effects,
            _ => Disagreement::Creation,
        }
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render::divergence(self))
    }
}

/// Which inputs a pair compares.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Comparison {
    /// Every input, accepted or refused by either: the two-sided check of CONF-1.
    TwoSided,
    /// Only the inputs the second machine accepts: replaying its accepted traces on the
    /// first. An input the second refuses is refused by the pair with the second's
    /// rejection, whatever the first says. Kept to show what a one-sided check misses.
    ReplayAccepted,
}

/// What a machine said, from its step's result.
fn said<L: Observable>(machine: &L, stepped: &Result<(L::Run, Effects), Rejection>) -> Said {
    match stepped {
        Ok((next, effects)) => Said::Accepted {
            run: machine.observe(next),
            effects: *effects,
        },
        Err(r) => Said::Refused(*r),
    }
}

/// The pair of the kernel and the reference machine: the subject of spec CONF-1.
pub fn kernel_and_reference() -> Pair<Kernel, Reference> {
    Pair::new(Kernel, Reference::new())
}
