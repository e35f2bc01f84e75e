//! Two machines in lockstep: one input fed to both, their verdicts compared, and the first
//! disagreement kept.

use resumable_kernel::{
    AuditRecord, Effects, Event, Identity, Input, Phase, Policy, PolicyError, Rejection, Time,
};
use resumable_model::{Lifecycle, Snapshot};
use std::sync::Arc;

use super::{said, Agreed, Comparison, Divergence, Observable, Observation, Said, Side, Tally};

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
    /// The first disagreement, if any. Once set, the pair compares nothing more. Boxed: a
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
    pub next: Result<(PairRun<RA, RB>, Effects), Refusal>,
}

/// The run of the pair of `A` and `B`.
type RunOf<A, B> = PairRun<<A as Lifecycle>::Run, <B as Lifecycle>::Run>;

/// Why the pair takes no step on an input.
#[expect(
    clippy::large_enum_variant,
    reason = "a refusal carries the kernel's rejection inline, as the kernel returns it"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Refusal {
    /// Both machines refused it alike (or, replaying accepted traces, the second refused it).
    Both(Rejection),
    /// The pair had already diverged: it compares nothing more, and neither machine was asked.
    AlreadyDiverged,
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

    pub(super) fn names(&self) -> [&'static str; 2] {
        [self.a.name(), self.b.name()]
    }

    fn count(&self, input: &Input, verdict: Agreed) {
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
            return Compared {
                a: Said::NotAsked,
                b: Said::NotAsked,
                next: Err(Refusal::AlreadyDiverged),
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
                self.count(input, Agreed::Accepted);
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
                self.count(input, Agreed::Refused(ra.kind()));
                Err(Refusal::Both(ra))
            }
            (Err(_), Err(rb)) if !two_sided => Err(Refusal::Both(rb)),
            (Err(_), Err(_)) => {
                let effects = self.unchanged(run, input);
                Ok((diverged(run.a.clone(), run.b.clone(), Side::A), effects))
            }
            (Ok(_), Err(rb)) if !two_sided => Err(Refusal::Both(rb)),
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

    /// Past a divergence the pair, as a lifecycle, is its leading machine alone: that machine
    /// steps, the other's run and the divergence stay as they were. Every verdict is then one
    /// machine's own, never a made-up rejection. The world never steps a pair there (a state
    /// holding a divergence has no successors); a caller driving the pair by hand may.
    fn follow_lead(
        &self,
        run: &RunOf<A, B>,
        input: &Input,
    ) -> Result<(RunOf<A, B>, Effects), Rejection> {
        let mut next = run.clone();
        let effects = match run.lead {
            Side::A => {
                let (a, effects) = self.a.step(&run.a, input)?;
                next.a = a;
                effects
            }
            Side::B => {
                let (b, effects) = self.b.step(&run.b, input)?;
                next.b = b;
                effects
            }
        };
        Ok((next, effects))
    }

    /// The effects of the one transition that is not a lifecycle's: the pair records that
    /// both machines refused an input differently. Its audit record describes the unchanged
    /// run, at the unchanged revision; no property of the world is judged past it.
    fn unchanged(&self, run: &PairRun<A::Run, B::Run>, input: &Input) -> Effects {
        let snap = self.snapshot(run);
        let audit = AuditRecord {
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
        };
        Effects::of(audit, None, None, None)
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
        match self.compare(run, input).next {
            Ok(next) => Ok(next),
            Err(Refusal::Both(r)) => Err(r),
            Err(Refusal::AlreadyDiverged) => self.follow_lead(run, input),
        }
    }

    fn snapshot(&self, run: &Self::Run) -> Snapshot {
        match run.lead {
            Side::A => self.a.snapshot(&run.a),
            Side::B => self.b.snapshot(&run.b),
        }
    }

    fn batch(&self, run: &Self::Run) -> Option<resumable_kernel::Batch> {
        match run.lead {
            Side::A => self.a.batch(&run.a),
            Side::B => self.b.batch(&run.b),
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
