//! CONF-1 is two-sided: a kernel that accepts more than the reference and a reference that
//! accepts more than the kernel are both caught, each with a shortest counterexample.
//!
//! # Why replaying the reference's traces on the kernel is not enough
//!
//! The first mutant, [`SelfApprovingKernel`], is the kernel with one rule loosened: where the
//! kernel refuses a requester approving its own call (spec APR-3), it lets the approval
//! through as if the recorded approver had sent it. Every trace the reference accepts is
//! accepted by this mutant with the same runs and effects, because the reference never
//! accepts a self-approval, so no accepted trace contains the one input on which the mutant
//! differs. Replaying the reference's accepted traces on the kernel checks only that the
//! kernel accepts *at least* what the reference accepts; it cannot see a kernel that accepts
//! *more*. The lockstep check offers every input to both machines, the refused ones included,
//! and compares the verdicts: there the self-approval is refused by one and accepted by the
//! other. The tests below run both checks over the same world and show the replay passing
//! where lockstep fails.
//!
//! The second mutant is the reference with double suspend allowed (spec SUS-2): it accepts an
//! input the kernel refuses. That direction a replay does catch, and lockstep catches it too.

use resumable_conformance::lockstep::pair_world::{
    self, check, check_with, LockstepReport, Probes,
};
use resumable_conformance::lockstep::{Disagreement, Observable, Observation, Pair};
use resumable_kernel::{
    Decision, Effects, Event, Identity, Input, Policy, Rejection, Resume, Run, Time,
};
use resumable_model::checker::{Options, Verdict};
use resumable_model::config::Config;
use resumable_model::properties::names;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::{Kernel, Lifecycle, Snapshot};
use std::collections::BTreeMap;

/// The kernel with APR-3 loosened in one place: a resume the kernel refuses as a
/// self-approval is stepped again with the approver replaced by the party the suspension
/// names, so the requester's own approval goes through. Everything else is the kernel's.
#[derive(Clone, Copy, Debug, Default)]
struct SelfApprovingKernel;

impl Lifecycle for SelfApprovingKernel {
    type Run = Run;

    fn name(&self) -> &'static str {
        "self-approving-kernel"
    }

    fn create(
        &self,
        identity: Identity,
        policy: Policy,
        at: Time,
    ) -> Result<Run, resumable_kernel::PolicyError> {
        Kernel.create(identity, policy, at)
    }

    fn step(&self, run: &Run, input: &Input) -> Result<(Run, Effects), Rejection> {
        let refused = match Kernel.step(run, input) {
            Err(r @ Rejection::SelfApproval { .. }) => r,
            other => return other,
        };
        match (&input.event, run.suspension()) {
            (Event::Resume(r), Some(s)) => match r.decision {
                Decision::Approve(mut a) => {
                    a.approver = s.responsible;
                    let event = Event::Resume(Resume {
                        decision: Decision::Approve(a),
                        ..*r
                    });
                    Kernel.step(run, &Input { event, ..*input })
                }
                _ => Err(refused),
            },
            _ => Err(refused),
        }
    }

    fn snapshot(&self, run: &Run) -> Snapshot {
        Kernel.snapshot(run)
    }
}

impl Observable for SelfApprovingKernel {
    fn observe(&self, run: &Run) -> Observation {
        Kernel.observe(run)
    }
}

/// A small world that offers both inputs the mutants differ on: the requester approving its
/// own call, and the agent asking to suspend again while its first request waits: the
/// whole-world lockstep check's default world without its crash.
fn world() -> Config {
    Config {
        crashes: 0,
        ..pair_world::default_config()
    }
}

fn run<A: Observable, B: Observable>(pair: Pair<A, B>) -> LockstepReport {
    check(pair, world(), &Options::default()).unwrap()
}

/// The counterexample of a violated CONF-1, checked to be a shortest one that ends on the
/// divergence.
fn counterexample(r: &LockstepReport) -> String {
    let text = counterexample_of(r);
    let trace = r.counterexample.as_ref().expect("checked above");
    let last = trace.trace.last().expect("the trace has steps");
    let action = last.action.as_deref().unwrap_or_default();
    assert!(action.contains("CONF-1 divergence"), "{action}");
    text
}

/// The counterexample of a violated CONF-1 (the driver's are always shortest ones).
fn counterexample_of(r: &LockstepReport) -> String {
    assert_eq!(r.conf_1, Verdict::Violated);
    assert!(r.counterexample.is_some(), "a violated CONF-1 has a trace");
    r.counterexample_text().unwrap_or_default()
}

fn only(kind: Disagreement, r: &LockstepReport) {
    let kinds: Vec<Disagreement> = r.disagreements.keys().copied().collect();
    assert_eq!(kinds, vec![kind]);
}

#[test]
fn kernel_more_permissive_than_the_reference_is_caught_by_lockstep() {
    let r = run(Pair::new(SelfApprovingKernel, Reference::new()));
    let text = counterexample(&r);
    only(Disagreement::OnlyAAccepted, &r);
    assert!(
        text.contains("only self-approving-kernel accepted"),
        "{text}"
    );
    insta::assert_snapshot!("kernel_more_permissive", text);
}

#[test]
fn replaying_the_reference_accepted_traces_misses_the_more_permissive_kernel() {
    let r = run(Pair::new(SelfApprovingKernel, Reference::new()).replaying_accepted());
    assert!(r.report.exploration.complete, "{:?}", r.report.exploration);
    assert_eq!(r.conf_1, Verdict::Holds, "{:?}", r.counterexample_text());
    assert_eq!(r.disagreements, BTreeMap::new());
    // Not for want of trying: the self-approval was offered, and only the reference's
    // verdict on it counted.
    let offered = r.report.property(names::SELF_ARRIVES).unwrap();
    assert_eq!(offered.verdict, Verdict::Holds);
}

#[test]
fn reference_more_permissive_than_the_kernel_is_caught_by_lockstep() {
    let r = run(Pair::new(Kernel, Reference::broken(Variant::DoubleSuspend)));
    let text = counterexample(&r);
    only(Disagreement::OnlyBAccepted, &r);
    assert!(text.contains("only double-suspend accepted"), "{text}");
    insta::assert_snapshot!("reference_more_permissive", text);
}

#[test]
fn replaying_the_more_permissive_reference_traces_catches_it_too() {
    let r = run(Pair::new(Kernel, Reference::broken(Variant::DoubleSuspend)).replaying_accepted());
    let replayed = counterexample(&r);
    let lockstep = counterexample(&run(Pair::new(
        Kernel,
        Reference::broken(Variant::DoubleSuspend),
    )));
    // The same shortest path: in this direction the one-sided check sees what lockstep sees.
    assert_eq!(
        replayed.lines().filter(|l| !l.starts_with("   |")).count(),
        lockstep.lines().filter(|l| !l.starts_with("   |")).count()
    );
}

#[test]
fn the_kernel_and_the_reference_agree_on_the_world_the_mutants_are_caught_in() {
    let r = run(Pair::new(Kernel, Reference::new()));
    assert!(r.report.exploration.complete);
    assert_eq!(r.conf_1, Verdict::Holds, "{:?}", r.counterexample_text());
    assert!(r.disagreements.is_empty());
}

/// The world of a single run never offers a checkpoint of another tenant, so a reference
/// that skips the identity check (spec ID-1) agrees with the kernel on every input the world
/// sends; the probes offer one at every reachable state, and catch it.
#[test]
fn probes_catch_a_reference_without_identity_check_that_the_world_alone_misses() {
    let pair = || Pair::new(Kernel, Reference::broken(Variant::NoIdentityCheck));
    let plain = run(pair());
    assert!(plain.report.exploration.complete);
    assert_eq!(plain.conf_1, Verdict::Holds);
    let probed = check_with(pair(), world(), Probes::On, &Options::default()).unwrap();
    let text = counterexample_of(&probed);
    assert!(text.contains("only no-identity-check accepted"), "{text}");
    insta::assert_snapshot!("reference_without_identity_check", text);
}

/// Past its first divergence a pair asks neither machine and says so, rather than inventing a
/// rejection (a `terminal` for a run that is not): the session shows both `NotAsked`. As a
/// lifecycle it then follows its leading machine alone, so its verdicts stay a machine's own.
#[test]
fn after_a_divergence_the_pair_asks_neither_machine_and_follows_its_lead() {
    use resumable_conformance::lockstep::{Said, Session, Side};
    use resumable_kernel::{Allowed, Name, Wait};
    use resumable_testkit::batch;
    let pair = Pair::new(Kernel, Reference::broken(Variant::DoubleSuspend));
    let (identity, policy) = (batch::identity(), batch::policy(Allowed::ALL));
    let mut s = Session::new(pair.clone(), identity, policy, Time(0)).expect("a valid policy");
    let wait = |callback| Event::Suspend {
        wait: Wait::Callback {
            callback: Name::lit(callback),
        },
        expires_at: Time(50),
        responsible: Name::lit("partner"),
        resource_version: 1,
    };
    assert!(
        s.feed(&Input {
            at: Time(1),
            event: wait("w-1")
        })
        .agreed
    );
    let second = s.feed(&Input {
        at: Time(2),
        event: wait("w-2"),
    });
    assert!(!second.agreed, "only the broken reference suspends twice");
    let divergence = *s.divergence().expect("the pair diverged");
    assert_eq!(divergence.disagreement(), Disagreement::OnlyBAccepted);
    assert_eq!(s.run().lead, Side::B);

    let cancel = Input {
        at: Time(3),
        event: Event::Cancel {
            by: Name::lit("alice"),
        },
    };
    let third = s.feed(&cancel).clone();
    assert!(!third.agreed);
    assert_eq!((third.a, third.b), (Said::NotAsked, Said::NotAsked));
    assert_eq!(
        *s.divergence().expect("kept"),
        divergence,
        "the first divergence is kept"
    );

    // As a lifecycle, the pair is now the reference alone: it cancels the reference's run.
    let (next, _) = pair
        .step(s.run(), &cancel)
        .expect("the reference accepts a cancel");
    let alone = Reference::broken(Variant::DoubleSuspend)
        .step(&s.run().b, &cancel)
        .expect("the reference accepts a cancel")
        .0;
    assert_eq!(next.b, alone);
    assert_eq!(next.a, s.run().a, "the kernel's run is left as it was");
    assert_eq!(next.divergence.as_deref(), Some(&divergence));
}
