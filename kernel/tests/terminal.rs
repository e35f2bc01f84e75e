//! The terminal phases, completed and failed (for every cause): every input kind is refused
//! (INV-1), after the identity check of a resume (ID-1) and before the clock (CLK-1).

use resumable_kernel::*;
use resumable_testkit::*;

/// A checkpoint sealed for `run`'s identity at its revision: one that passes identity, so
/// the terminal check is what answers.
fn checkpoint_for(run: &Run) -> Checkpoint {
    let (_, cp) = pending(publish());
    resealed(cp, |cp| {
        cp.identity = *run.identity();
        cp.revision = run.revision();
    })
}

/// Terminal runs: completed, and failed by each cause the lifecycle produces.
fn terminal_runs() -> Vec<Run> {
    let c = publish();
    let (approval_run, cp) = pending(c);
    let denied = accept(
        &approval_run,
        at(2, resume(cp, Decision::Deny(approval(&cp, &c)))),
    )
    .0;
    let expired = accept(&awaiting_callback().0, at(51, Event::Expire)).0;
    let cancelled = accept(&new_run("run-c"), at(1, Event::Cancel { by: CANCELLER })).0;
    let (person, pcp) = awaiting_person();
    let give_up = Decision::Intervene {
        by: OPERATOR,
        resolution: Resolution::Abandon,
    };
    let abandoned = accept(&person, at(2, resume(pcp, give_up))).0;
    vec![
        completed_run(),
        failed_run(),
        denied,
        expired,
        cancelled,
        abandoned,
    ]
}

#[test]
fn terminal_runs_cover_completion_and_every_failure_cause() {
    let phases: Vec<_> = terminal_runs().iter().map(|r| *r.phase()).collect();
    assert!(matches!(phases[0], Phase::Completed { .. }));
    assert!(matches!(phases[1], Phase::Failed(FailCause::Error { .. })));
    assert!(matches!(phases[2], Phase::Failed(FailCause::Denied { .. })));
    assert!(matches!(
        phases[3],
        Phase::Failed(FailCause::Expired { .. })
    ));
    assert!(matches!(
        phases[4],
        Phase::Failed(FailCause::Cancelled { .. })
    ));
    assert!(matches!(
        phases[5],
        Phase::Failed(FailCause::Abandoned { .. })
    ));
}

#[test]
fn terminal_input_of_every_kind_is_rejected_as_terminal_even_from_the_past_or_the_last_revision() {
    // INV-1: terminal phases are absorbing; checked before CLK-1, the phase being the more
    // useful answer, and before the revision counter's end (REV-1).
    for run in terminal_runs() {
        let terminal = Rejection::Terminal {
            phase: run.phase().kind(),
        };
        let (last, cp) = (run.updated_at().0, checkpoint_for(&run));
        refuses_every_kind(&run, cp, last + 1, terminal);
        refuses_every_kind(&run, cp, last - 1, terminal);
        let exhausted = with_revision(&run, u64::MAX);
        refuses_every_kind(&exhausted, checkpoint_for(&exhausted), last + 1, terminal);
    }
}

#[test]
fn terminal_resume_from_another_run_is_rejected_for_identity_first() {
    // ID-1: a stranger is not even told that the run has ended.
    for run in terminal_runs() {
        let stranger = resealed(checkpoint_for(&run), |cp| {
            cp.identity.session = Name::lit("session-2")
        });
        let t = run.updated_at().0 + 1;
        assert_eq!(
            reject(
                &run,
                at(
                    t,
                    resume(stranger, Decision::Reconcile(QueryAnswer::Unknown))
                )
            ),
            Rejection::IdentityMismatch {
                field: IdentityField::Session
            }
        );
    }
}

#[test]
fn terminal_run_is_unchanged_by_every_refused_input() {
    // REJ-2 through the owning wrapper.
    for run in terminal_runs() {
        let mut stepped = run;
        for input in one_of_each_kind(checkpoint_for(&run), run.updated_at().0 + 1) {
            assert!(stepped.apply(&input).is_err());
            assert_eq!(stepped, run);
        }
    }
}

#[test]
fn terminal_resume_with_a_broken_or_old_checkpoint_is_rejected_for_the_checkpoint_first() {
    // Spec 4.1, guard 2: schema, digest and revision come before the terminal check, so a
    // late resumer learns what happened to its checkpoint even after the run ended (REJ-1).
    for run in terminal_runs() {
        let cp = checkpoint_for(&run);
        let t = run.updated_at().0 + 1;
        let decision = Decision::Reconcile(QueryAnswer::Unknown);
        let garbage = Checkpoint {
            digest: Digest([7; 32]),
            ..cp
        };
        assert_eq!(
            reject(&run, at(t, resume(garbage, decision))),
            Rejection::DigestMismatch {
                expected: cp.digest,
                found: garbage.digest
            }
        );
        let newer = resealed(cp, |cp| cp.schema_version = SCHEMA_VERSION + 1);
        assert_eq!(
            reject(&run, at(t, resume(newer, decision))),
            Rejection::SchemaTooNew {
                supported: SCHEMA_VERSION,
                got: SCHEMA_VERSION + 1
            }
        );
        let ahead = resealed(cp, |cp| cp.revision = Revision(run.revision().0 + 1));
        assert_eq!(
            reject(&run, at(t, resume(ahead, decision))),
            Rejection::FutureRevision {
                current: run.revision(),
                got: ahead.revision
            }
        );
    }
}
