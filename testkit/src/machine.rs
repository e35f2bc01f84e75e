//! A lifecycle machine as the shared scenarios drive it, and the scenarios themselves.

use core::fmt::Debug;

use resumable_kernel::*;

use crate::{approval, at, call, first_dispatch, identity, resume, suspend_for_approval};
use crate::{OPERATOR, WINDOW};

/// A lifecycle machine the shared scenarios can drive: the kernel ([`KernelMachine`]), the
/// reference machine, or one of its broken variants.
pub trait Machine {
    /// The machine's own run state.
    type Run: Debug;

    /// A short name for panic messages.
    fn name(&self) -> &'static str;

    /// A new run, or why the policy cannot govern one.
    fn create(
        &self,
        identity: Identity,
        policy: Policy,
        at: Time,
    ) -> Result<Self::Run, PolicyError>;

    /// One step: the next run and its effects, or the rejection.
    fn step(&self, run: &Self::Run, input: &Input) -> Result<(Self::Run, Effects), Rejection>;

    /// Where the run is.
    fn phase(&self, run: &Self::Run) -> Phase;

    /// The run's state revision.
    fn revision(&self, run: &Self::Run) -> Revision;
}

/// The kernel as a [`Machine`].
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelMachine;

impl Machine for KernelMachine {
    type Run = Run;

    fn name(&self) -> &'static str {
        "kernel"
    }

    fn create(&self, identity: Identity, policy: Policy, at: Time) -> Result<Run, PolicyError> {
        Run::new(identity, policy, at)
    }

    fn step(&self, run: &Run, input: &Input) -> Result<(Run, Effects), Rejection> {
        step(run, input).map(|t| (t.next, t.effects))
    }

    fn phase(&self, run: &Run) -> Phase {
        *run.phase()
    }

    fn revision(&self, run: &Run) -> Revision {
        run.revision()
    }
}

/// A new run of `m` named `run`, at t0 under the fixtures' policy.
pub fn new_run_on<M: Machine>(m: &M, run: &str) -> M::Run {
    let policy = Policy {
        operator: OPERATOR,
        reconcile_window: WINDOW,
        allowed: Allowed::ALL,
    };
    (m.create(identity(run), policy, Time(0))).expect("the window is not 0")
}

/// Steps `m` and expects acceptance; returns the next run and the effects.
pub fn accept_on<M: Machine>(m: &M, run: &M::Run, input: Input) -> (M::Run, Effects) {
    match m.step(run, &input) {
        Ok(t) => t,
        Err(r) => panic!("{}: expected acceptance of {input:?}, got {r:?}", m.name()),
    }
}

/// Steps `m` and expects a rejection.
pub fn reject_on<M: Machine>(m: &M, run: &M::Run, input: Input) -> Rejection {
    match m.step(run, &input) {
        Ok(t) => panic!("{}: expected a rejection of {input:?}, got {t:?}", m.name()),
        Err(r) => r,
    }
}

/// The checkpoint the effects persist; panics if there is none.
pub fn checkpoint_of(fx: &Effects) -> Checkpoint {
    *fx.checkpoint().expect("a suspension persists a checkpoint")
}

/// The reason `run` of `m` is suspended for, if it is.
pub fn reason_on<M: Machine>(m: &M, run: &M::Run) -> Option<ReasonKind> {
    match m.phase(run) {
        Phase::Suspended(s) => Some(s.reason.kind()),
        _ => None,
    }
}

/// A run of `m` suspended at t1 for approval of `c`, expiring at t50, with its checkpoint.
pub fn pending_on<M: Machine>(m: &M, c: Call) -> (M::Run, Checkpoint) {
    let run = new_run_on(m, "run-approval");
    let (run, fx) = accept_on(m, &run, at(1, suspend_for_approval(c, 50)));
    (run, checkpoint_of(&fx))
}

/// A run of `m` whose dispatch of `c` (at t1) was in flight when the worker restarted (at t2).
pub fn outcome_unknown_on<M: Machine>(m: &M, c: Call) -> (M::Run, Checkpoint) {
    let run = new_run_on(m, "run-unknown");
    let (run, _) = accept_on(m, &run, at(1, first_dispatch(c)));
    let (run, fx) = accept_on(m, &run, at(2, Event::Recover));
    (run, checkpoint_of(&fx))
}

/// An edit of a checkpoint, for the seed's tampered checkpoints.
type Tamper = fn(&mut Checkpoint);

/// The seed chapter's simulation on `m`: the same steps, the same verdicts.
///
/// The seed prints, in order: `suspended 1 idem-run-approval`; a refused second suspend; a
/// refused checkpoint of another run; of another action; of an older revision; the approved
/// action executed once; `running 2`; and `manual_intervention suspended` for an unknown
/// reconcile answer.
pub fn seed_simulation<M: Machine>(m: &M) {
    let publish = call("call-1", "publish:demo", "idem-run-approval");
    let (run, checkpoint) = seed_suspended(m, publish);
    seed_refusals(m, &run, checkpoint, publish);
    seed_approved(m, &run, checkpoint, publish);
    seed_unknown(m);
}

/// The seed's approval of `publish` on `checkpoint`.
fn seed_approval(checkpoint: &Checkpoint, publish: &Call) -> Decision {
    Decision::Approve(approval(checkpoint, publish))
}

/// Suspended at revision 1 for the approval of `publish`, with the idempotency key bound to
/// its arguments; a second suspend while one is pending is refused.
fn seed_suspended<M: Machine>(m: &M, publish: Call) -> (M::Run, Checkpoint) {
    let run = new_run_on(m, "run-approval");
    let (run, fx) = accept_on(m, &run, at(1, suspend_for_approval(publish, 50)));
    let checkpoint = checkpoint_of(&fx);
    assert_eq!(m.phase(&run).kind(), PhaseKind::Suspended);
    assert_eq!(reason_on(m, &run), Some(ReasonKind::PendingApproval));
    assert_eq!(checkpoint.revision, Revision(1));
    assert_eq!(
        checkpoint.key_digest,
        Some(checkpoint::key_digest(
            &IdempotencyKey::lit("idem-run-approval"),
            &publish.args
        ))
    );

    let again = call("call-2", "publish:again", "idem-run-approval-2");
    assert_eq!(
        reject_on(m, &run, at(2, suspend_for_approval(again, 50))),
        Rejection::AlreadySuspended {
            reason: ReasonKind::PendingApproval
        }
    );
    (run, checkpoint)
}

/// A checkpoint naming another run or another action, or of an older revision, is refused
/// (each resealed, so only the field edited differs).
fn seed_refusals<M: Machine>(m: &M, run: &M::Run, checkpoint: Checkpoint, publish: Call) {
    let tampered: [(&str, Tamper, Rejection); 3] = [
        (
            "another run",
            |cp| cp.identity.run = Name::lit("run-other"),
            Rejection::IdentityMismatch {
                field: IdentityField::Run,
            },
        ),
        (
            "another action",
            |cp| {
                let tool = Name::lit("delete:demo");
                cp.pending = cp.pending.map(|p| PendingCall { tool, ..p });
            },
            Rejection::CheckpointMismatch {
                field: CheckpointField::PendingCall,
            },
        ),
        (
            "an older revision",
            |cp| cp.revision = Revision(0),
            Rejection::StaleRevision {
                current: Revision(1),
                got: Revision(0),
            },
        ),
    ];
    for (what, edit, refused) in tampered {
        let mut cp = checkpoint;
        edit(&mut cp);
        let cp = cp.seal();
        let got = reject_on(m, run, at(2, resume(cp, seed_approval(&cp, &publish))));
        assert_eq!(got, refused, "{}: a checkpoint of {what}", m.name());
    }
}

/// Approved: the action is dispatched once, under the original key, running at revision 2;
/// the same approval again is a duplicate of the winner, not a second execution.
fn seed_approved<M: Machine>(m: &M, run: &M::Run, checkpoint: Checkpoint, publish: Call) {
    let approve = seed_approval(&checkpoint, &publish);
    let (run, fx) = accept_on(m, run, at(2, resume(checkpoint, approve)));
    let sent: Vec<Dispatch> = (fx.iter())
        .filter_map(|e| match e {
            Effect::Dispatch(d) => Some(d),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1);
    assert_eq!(fx.dispatch(), Some(&sent[0]));
    assert_eq!(
        (sent[0].tool, sent[0].key),
        (
            Name::lit("publish:demo"),
            IdempotencyKey::lit("idem-run-approval")
        )
    );
    assert_eq!(m.phase(&run).kind(), PhaseKind::Running);
    assert_eq!(m.revision(&run), Revision(2));

    assert_eq!(
        reject_on(m, &run, at(3, resume(checkpoint, approve))),
        Rejection::AlreadyApplied {
            from: Revision(1),
            to: Revision(2)
        }
    );
}

/// An unknown reconcile answer keeps the run suspended, for manual intervention, and the
/// call is never retried.
fn seed_unknown<M: Machine>(m: &M) {
    let (unknown, cp) = outcome_unknown_on(m, call("call-9", "publish:demo", "idem-run-unknown"));
    let (unknown, fx) = accept_on(
        m,
        &unknown,
        at(3, resume(cp, Decision::Reconcile(QueryAnswer::Unknown))),
    );
    assert_eq!(m.phase(&unknown).kind(), PhaseKind::Suspended);
    assert_eq!(reason_on(m, &unknown), Some(ReasonKind::ManualIntervention));
    assert!(
        fx.dispatch().is_none(),
        "an unknown outcome is never retried"
    );
}
