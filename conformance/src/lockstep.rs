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
//! reaches, with a shortest trace to it, never a panic (see [`world`]). At every reachable
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
//! let policy = Policy { operator: Name::lit("ops"), reconcile_window: 10 };
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
//! the pair refuses every input (as [`Rejection::Terminal`]): like a test that stops at its
//! first failure, it stops telling anything about either machine, and the world's own
//! properties are not judged past that point (see [`world`]).

pub mod probe;
pub mod render;
pub mod world;

use resumable_kernel::{
    AuditRecord, CallLog, Effect, Effects, Event, EventKind, Identity, Input, Phase, Policy,
    PolicyError, Rejection, ResumeReceipt, Time,
};
use resumable_model::reference::Reference;
use resumable_model::{Kernel, Lifecycle, Snapshot};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

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
    /// Every call the run has bound, as the kernel fingerprints them (spec KEY-1, KEY-2).
    pub calls: CallLog,
    /// The receipt of the last accepted resume (spec RES-2).
    pub last_resume: Option<ResumeReceipt>,
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
            calls: *run.calls(),
            last_resume: run.last_resume().copied(),
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
            calls: run.history.call_log(),
            last_resume: run.last_resume,
        }
    }
}

/// What one machine said.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[expect(clippy::large_enum_variant, reason = "compared and hashed by value; boxing buys nothing here")]
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

/// A tally of what a pair compared and agreed on: per input kind, how often both accepted and
/// how often both refused with each rejection. It shows a check was not vacuous: that the
/// inputs that must be refused were offered, and refused alike.
#[derive(Debug, Default)]
pub struct Tally {
    counts: Mutex<BTreeMap<(EventKind, &'static str), u64>>,
    disagreements: Mutex<BTreeMap<Disagreement, u64>>,
}

impl Tally {
    fn add(&self, kind: EventKind, verdict: &'static str) {
        // A poisoned lock means another thread panicked while counting; the counts are only
        // statistics, so keep counting rather than spread the panic.
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *counts.entry((kind, verdict)).or_insert(0) += 1;
    }

    fn disagree(&self, kind: Disagreement) {
        let mut counts = self
            .disagreements
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *counts.entry(kind).or_insert(0) += 1;
    }

    /// The disagreements met so far, by kind, and how often: every step of a search that
    /// reached a divergence, not only the shortest.
    pub fn disagreements(&self) -> BTreeMap<Disagreement, u64> {
        self.disagreements
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The agreements counted so far: (input kind, `"accepted"` or the rejection's name) and
    /// how often.
    pub fn counts(&self) -> BTreeMap<(EventKind, &'static str), u64> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The names of the rejections both machines agreed on, sorted.
    pub fn agreed_rejections(&self) -> Vec<&'static str> {
        agreed_rejections(&self.counts())
    }
}

/// The rejection names among counted agreements, sorted and without repeats.
pub fn agreed_rejections(counts: &BTreeMap<(EventKind, &'static str), u64>) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = (counts.keys())
        .map(|(_, verdict)| *verdict)
        .filter(|v| *v != ACCEPTED)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

const ACCEPTED: &str = "accepted";

/// Two lifecycle implementations in lockstep: `a` the subject, `b` the yardstick.
#[derive(Clone, Debug)]
pub struct Pair<A, B> {
    /// The first machine.
    pub a: A,
    /// The second machine.
    pub b: B,
    /// Which inputs are compared.
    pub comparison: Comparison,
    tally: Option<Arc<Tally>>,
}

/// The run of a [`Pair`]: both runs, and the first disagreement if there was one.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PairRun<RA, RB> {
    /// The first machine's run.
    pub a: RA,
    /// The second machine's run.
    pub b: RB,
    /// The first disagreement, if any. Once set, the pair refuses every input. Boxed: a
    /// divergence holds a whole input and two verdicts, and the run is copied and hashed at
    /// every state a search visits, where it is almost always absent.
    pub divergence: Option<Box<Divergence>>,
    /// The machine whose run the pair shows: the first, unless only the second accepted the
    /// input the machines disagreed on.
    pub lead: Side,
}

/// Both verdicts on one input, and what the pair makes of them.
#[derive(Clone, Debug)]
pub struct Compared<RA, RB> {
    /// What the first machine said.
    pub a: Said,
    /// What the second machine said.
    pub b: Said,
    /// The pair's own step: the common verdict, or a divergence recorded as a transition.
    pub next: Result<(PairRun<RA, RB>, Effects), Rejection>,
}

impl<A: Observable, B: Observable> Pair<A, B> {
    /// The two-sided pair of `a` and `b`.
    pub fn new(a: A, b: B) -> Pair<A, B> {
        Pair {
            a,
            b,
            comparison: Comparison::TwoSided,
            tally: None,
        }
    }

    /// The same pair comparing only what `b` accepts (replaying `b`'s traces on `a`).
    pub fn replaying_accepted(mut self) -> Pair<A, B> {
        self.comparison = Comparison::ReplayAccepted;
        self
    }

    /// The same pair, counting its agreements in `tally`.
    pub fn counting(mut self, tally: Arc<Tally>) -> Pair<A, B> {
        self.tally = Some(tally);
        self
    }

    /// The tally, if the pair counts.
    pub fn tally(&self) -> Option<&Arc<Tally>> {
        self.tally.as_ref()
    }

    fn names(&self) -> [&'static str; 2] {
        [self.a.name(), self.b.name()]
    }

    fn count(&self, input: &Input, verdict: &'static str) {
        if let Some(t) = &self.tally {
            t.add(input.event.kind(), verdict);
        }
    }

    /// Feeds `input` to both machines and compares their verdicts.
    pub fn compare(
        &self,
        run: &PairRun<A::Run, B::Run>,
        input: &Input,
    ) -> Compared<A::Run, B::Run> {
        if run.divergence.is_some() {
            let refused = Rejection::Terminal {
                phase: self.snapshot(run).phase.kind(),
            };
            return Compared {
                a: Said::Refused(refused),
                b: Said::Refused(refused),
                next: Err(refused),
            };
        }
        let stepped_a = self.a.step(&run.a, input);
        let stepped_b = self.b.step(&run.b, input);
        let a = said(&self.a, &stepped_a);
        let b = said(&self.b, &stepped_b);
        let divergence = Divergence {
            input: Some(*input),
            names: self.names(),
            a,
            b,
        };
        let diverged = |a: A::Run, b: B::Run, lead: Side| PairRun {
            a,
            b,
            divergence: Some(Box::new(divergence)),
            lead,
        };
        let two_sided = self.comparison == Comparison::TwoSided;
        let next = match (stepped_a, stepped_b) {
            (Ok((next_a, effects)), Ok((next_b, _))) if a == b => {
                self.count(input, ACCEPTED);
                Ok((
                    PairRun {
                        a: next_a,
                        b: next_b,
                        divergence: None,
                        lead: Side::A,
                    },
                    effects,
                ))
            }
            (Ok((next_a, effects)), Ok((next_b, _))) => {
                Ok((diverged(next_a, next_b, Side::A), effects))
            }
            (Err(ra), Err(rb)) if ra == rb => {
                self.count(input, render::rejection_name(&ra));
                Err(ra)
            }
            (Err(_), Err(rb)) if !two_sided => Err(rb),
            (Err(_), Err(_)) => {
                let effects = self.unchanged(run, input);
                Ok((diverged(run.a.clone(), run.b.clone(), Side::A), effects))
            }
            (Ok(_), Err(rb)) if !two_sided => Err(rb),
            (Ok((next_a, effects)), Err(_)) => {
                Ok((diverged(next_a, run.b.clone(), Side::A), effects))
            }
            (Err(_), Ok((next_b, effects))) => {
                Ok((diverged(run.a.clone(), next_b, Side::B), effects))
            }
        };
        if let (Some(t), Ok((next, _))) = (&self.tally, &next) {
            if let Some(d) = &next.divergence {
                t.disagree(d.disagreement());
            }
        }
        Compared { a, b, next }
    }

    /// The effects of the one transition that is not a lifecycle's: the pair records that
    /// both machines refused an input differently. Its audit record describes the unchanged
    /// run, at the unchanged revision; no property of the world is judged past it.
    fn unchanged(&self, run: &PairRun<A::Run, B::Run>, input: &Input) -> Effects {
        let snap = self.snapshot(run);
        Effects::new(Effect::Audit(AuditRecord {
            revision: snap.revision,
            at: input.at,
            event: input.event.kind(),
            decision: match &input.event {
                Event::Resume(r) => Some(r.decision.kind()),
                _ => None,
            },
            phase: snap.phase.kind(),
            reason: match &snap.phase {
                Phase::Suspended(s) => Some(s.reason.kind()),
                _ => None,
            },
        }))
    }
}

impl<A: Observable, B: Observable> Lifecycle for Pair<A, B> {
    type Run = PairRun<A::Run, B::Run>;

    fn name(&self) -> &'static str {
        match self.comparison {
            Comparison::TwoSided => "lockstep",
            Comparison::ReplayAccepted => "replay",
        }
    }

    fn create(
        &self,
        identity: Identity,
        policy: Policy,
        at: Time,
    ) -> Result<Self::Run, PolicyError> {
        let a = self.a.create(identity, policy, at)?;
        let b = self.b.create(identity, policy, at)?;
        let (oa, ob) = (self.a.observe(&a), self.b.observe(&b));
        let divergence = (oa != ob).then(|| {
            Box::new(Divergence {
                input: None,
                names: self.names(),
                a: Said::Created(oa),
                b: Said::Created(ob),
            })
        });
        Ok(PairRun {
            a,
            b,
            divergence,
            lead: Side::A,
        })
    }

    fn step(&self, run: &Self::Run, input: &Input) -> Result<(Self::Run, Effects), Rejection> {
        self.compare(run, input).next
    }

    fn snapshot(&self, run: &Self::Run) -> Snapshot {
        match run.lead {
            Side::A => self.a.snapshot(&run.a),
            Side::B => self.b.snapshot(&run.b),
        }
    }
}

impl<A: Observable, B: Observable> Observable for Pair<A, B> {
    fn observe(&self, run: &Self::Run) -> Observation {
        match run.lead {
            Side::A => self.a.observe(&run.a),
            Side::B => self.b.observe(&run.b),
        }
    }
}

/// One input fed to both machines by a [`Session`], with both verdicts.
#[derive(Clone, Debug)]
pub struct Row {
    /// The input.
    pub input: Input,
    /// What the first machine said.
    pub a: Said,
    /// What the second machine said.
    pub b: Said,
    /// Whether the two agreed (before this input, the pair had not diverged).
    pub agreed: bool,
}

/// A pair and one run of it, driven input by input: for named cases, property tests and
/// side-by-side tables.
#[derive(Clone, Debug)]
pub struct Session<A: Observable, B: Observable> {
    pair: Pair<A, B>,
    run: PairRun<A::Run, B::Run>,
    rows: Vec<Row>,
}

impl<A: Observable, B: Observable> Session<A, B> {
    /// A new run of `pair`, or why the policy cannot govern one.
    pub fn new(
        pair: Pair<A, B>,
        identity: Identity,
        policy: Policy,
        at: Time,
    ) -> Result<Session<A, B>, PolicyError> {
        let run = pair.create(identity, policy, at)?;
        Ok(Session {
            pair,
            run,
            rows: Vec::new(),
        })
    }

    /// Feeds one input to both machines; returns the row it adds.
    pub fn feed(&mut self, input: &Input) -> &Row {
        let before = self.run.divergence.is_none();
        let compared = self.pair.compare(&self.run, input);
        if let Ok((next, _)) = &compared.next {
            self.run = next.clone();
        }
        let agreed = before && self.run.divergence.is_none();
        self.rows.push(Row {
            input: *input,
            a: compared.a,
            b: compared.b,
            agreed,
        });
        // The row was just pushed, so the vector is not empty.
        let last = self.rows.len() - 1;
        &self.rows[last]
    }

    /// The rows so far.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The pair's run now.
    pub fn run(&self) -> &PairRun<A::Run, B::Run> {
        &self.run
    }

    /// The pair.
    pub fn pair(&self) -> &Pair<A, B> {
        &self.pair
    }

    /// The first disagreement, if any.
    pub fn divergence(&self) -> Option<&Divergence> {
        self.run.divergence.as_deref()
    }

    /// The run as both machines see it (the leading machine's, after a divergence).
    pub fn observation(&self) -> Observation {
        self.pair.observe(&self.run)
    }

    /// The rows as a side-by-side table (see [`render::rows`]).
    pub fn to_text(&self) -> String {
        render::rows(self.pair.names(), &self.rows)
    }
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
