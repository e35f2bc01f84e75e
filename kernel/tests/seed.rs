//! The seed chapter's simulation, reproduced on the kernel: the same steps, the same verdicts.
//!
//! The seed prints, in order: `suspended 1 idem-run-approval`; a refused second suspend; a
//! refused checkpoint of another run; of another action; of an older revision; the approved
//! action executed once; `running 2`; and `manual_intervention suspended` for an unknown
//! reconcile answer.

mod common;
use common::*;
use resumable_kernel::*;

#[test]
fn seed_simulation_verdicts_are_reproduced() {
    let publish = call("call-1", "publish:demo", "idem-run-approval");
    let run = new_run("run-approval");

    // suspend_for_approval: suspended at revision 1, with the idempotency key.
    let (run, fx) = accept(&run, at(1, suspend_for_approval(publish, 50)));
    let checkpoint = *fx.checkpoint().expect("a suspension persists a checkpoint");
    assert_eq!(run.phase().kind(), PhaseKind::Suspended);
    assert_eq!(checkpoint.revision, Revision(1));
    assert_eq!(
        checkpoint.key_digest,
        Some(checkpoint::key_digest(
            &IdempotencyKey::lit("idem-run-approval"),
            &publish.args
        ))
    );

    // A second suspend while one is pending is refused.
    let again = call("call-2", "publish:again", "idem-run-approval-2");
    assert_eq!(
        reject(&run, at(2, suspend_for_approval(again, 50))),
        Rejection::AlreadySuspended {
            reason: ReasonKind::PendingApproval
        }
    );

    let approve = |cp: &Checkpoint| Decision::Approve(approval(cp, &publish));

    // A checkpoint naming another run is refused (resealed, so only identity differs).
    let mut other_run = checkpoint;
    other_run.identity.run = Name::lit("run-other");
    let other_run = other_run.seal();
    assert_eq!(
        reject(&run, at(2, resume(other_run, approve(&other_run)))),
        Rejection::IdentityMismatch {
            field: IdentityField::Run
        }
    );

    // A checkpoint naming another action is refused.
    let mut other_action = checkpoint;
    other_action.pending = other_action.pending.map(|p| PendingCall {
        tool: Name::lit("delete:demo"),
        ..p
    });
    let other_action = other_action.seal();
    assert_eq!(
        reject(&run, at(2, resume(other_action, approve(&other_action)))),
        Rejection::CheckpointMismatch {
            field: CheckpointField::PendingCall
        }
    );

    // A checkpoint of an older revision is refused.
    let mut old = checkpoint;
    old.revision = Revision(0);
    let old = old.seal();
    assert_eq!(
        reject(&run, at(2, resume(old, approve(&old)))),
        Rejection::StaleRevision {
            current: Revision(1),
            got: Revision(0)
        }
    );

    // Approved: the action is dispatched once, under the original key; running at revision 2.
    let (run, fx) = accept(&run, at(2, resume(checkpoint, approve(&checkpoint))));
    let dispatches: Vec<_> = fx
        .iter()
        .filter(|e| matches!(e, Effect::Dispatch(_)))
        .collect();
    assert_eq!(dispatches.len(), 1);
    let d = fx.dispatch().unwrap();
    assert_eq!(
        (d.tool, d.key),
        (
            Name::lit("publish:demo"),
            IdempotencyKey::lit("idem-run-approval")
        )
    );
    assert_eq!(run.phase().kind(), PhaseKind::Running);
    assert_eq!(run.revision(), Revision(2));

    // The same approval again is a duplicate of the winner, not a second execution.
    assert_eq!(
        reject(&run, at(3, resume(checkpoint, approve(&checkpoint)))),
        Rejection::AlreadyApplied {
            from: Revision(1),
            to: Revision(2)
        }
    );

    // An unknown reconcile answer keeps the run suspended, for manual intervention.
    let (unknown, cp) = outcome_unknown(call("call-9", "publish:demo", "idem-run-unknown"));
    let (unknown, fx) = accept(
        &unknown,
        at(3, resume(cp, Decision::Reconcile(QueryAnswer::Unknown))),
    );
    assert_eq!(unknown.phase().kind(), PhaseKind::Suspended);
    assert_eq!(
        unknown.suspension().map(|s| s.reason.kind()),
        Some(ReasonKind::ManualIntervention)
    );
    assert!(
        fx.dispatch().is_none(),
        "an unknown outcome is never retried"
    );
}
