//! Suspended on an external callback, a resource or a person: the decisions that answer each
//! reason, how each is refused (RES-6, RES-7, REC-4), and which of them a moved resource holds
//! back (RES-3).

use resumable_kernel::*;
use resumable_testkit::*;

fn callback(name: Name) -> Decision {
    Decision::Callback {
        callback: name,
        payload: Digest::of(b"payload"),
    }
}

fn intervene(by: Name, resolution: Resolution) -> Decision {
    Decision::Intervene { by, resolution }
}

fn resumed(decision: DecisionKind, phase: PhaseKind) -> Effect {
    audit(2, 5, EventKind::Resume, Some(decision), phase, None)
}

#[test]
fn suspended_callback_arrival_resumes_the_run() {
    let (run, cp) = awaiting_callback();
    let (next, fx) = accept(&run, at(5, resume(cp, callback(CALLBACK))));
    assert_eq!(next.phase(), &Phase::Running { in_flight: None });
    assert_eq!(next.revision(), Revision(2));
    assert_eq!(
        effects(&fx),
        vec![resumed(DecisionKind::Callback, PhaseKind::Running)]
    );
}

#[test]
fn suspended_callback_of_another_name_is_rejected() {
    // Brief 3.12: a resume aimed at the wrong target fails loudly.
    let (run, cp) = awaiting_callback();
    let other = Name::lit("webhook-8");
    assert_eq!(
        reject(&run, at(5, resume(cp, callback(other)))),
        Rejection::WaitMismatch {
            expected: CALLBACK,
            got: other
        }
    );
}

#[test]
fn suspended_callback_of_another_name_without_permission_is_rejected_as_a_mismatch() {
    let (run, cp) = awaiting_callback();
    let other = Name::lit("webhook-8");
    assert_eq!(
        reject(&run, at(5, with_facts(cp, callback(other), false, false))),
        Rejection::WaitMismatch {
            expected: CALLBACK,
            got: other
        }
    );
}

#[test]
fn suspended_callback_is_rechecked_against_permission_then_budget() {
    // RES-7: the run goes on to new work, so current policy is re-checked.
    let (run, cp) = awaiting_callback();
    assert_eq!(
        reject(
            &run,
            at(5, with_facts(cp, callback(CALLBACK), false, false))
        ),
        Rejection::PermissionRevoked
    );
    assert_eq!(
        reject(&run, at(5, with_facts(cp, callback(CALLBACK), true, false))),
        Rejection::BudgetExhausted
    );
}

#[test]
fn suspended_resource_ready_resumes_the_run() {
    let (run, cp) = awaiting_resource();
    let ready = Decision::ResourceReady { resource: RESOURCE };
    let (next, fx) = accept(&run, at(5, resume(cp, ready)));
    assert_eq!(next.phase(), &Phase::Running { in_flight: None });
    assert_eq!(
        effects(&fx),
        vec![resumed(DecisionKind::ResourceReady, PhaseKind::Running)]
    );
}

#[test]
fn suspended_resource_ready_for_another_resource_is_rejected() {
    let (run, cp) = awaiting_resource();
    let other = Name::lit("cpu-pool");
    assert_eq!(
        reject(
            &run,
            at(5, resume(cp, Decision::ResourceReady { resource: other }))
        ),
        Rejection::WaitMismatch {
            expected: RESOURCE,
            got: other
        }
    );
}

#[test]
fn suspended_resource_ready_is_rechecked_against_permission_then_budget() {
    let (run, cp) = awaiting_resource();
    let ready = Decision::ResourceReady { resource: RESOURCE };
    assert_eq!(
        reject(&run, at(5, with_facts(cp, ready, false, true))),
        Rejection::PermissionRevoked
    );
    assert_eq!(
        reject(&run, at(5, with_facts(cp, ready, true, false))),
        Rejection::BudgetExhausted
    );
}

#[test]
fn suspended_intervention_continue_resumes_the_run() {
    let (run, cp) = awaiting_person();
    let decision = intervene(OPERATOR, Resolution::Continue);
    let (next, fx) = accept(&run, at(5, resume(cp, decision)));
    assert_eq!(next.phase(), &Phase::Running { in_flight: None });
    assert_eq!(
        effects(&fx),
        vec![resumed(DecisionKind::Intervene, PhaseKind::Running)]
    );
}

#[test]
fn suspended_intervention_abandon_fails_the_run() {
    let (run, cp) = awaiting_person();
    let decision = intervene(OPERATOR, Resolution::Abandon);
    let (next, fx) = accept(&run, at(5, resume(cp, decision)));
    assert_eq!(
        next.phase(),
        &Phase::Failed(FailCause::Abandoned { by: OPERATOR })
    );
    assert_eq!(
        effects(&fx),
        vec![resumed(DecisionKind::Intervene, PhaseKind::Failed)]
    );
}

#[test]
fn suspended_intervention_by_another_person_is_rejected() {
    // RES-6: only the responsible party recorded by the kernel resolves it.
    let (run, cp) = awaiting_person();
    let mallory = Name::lit("mallory");
    for resolution in [
        Resolution::Continue,
        Resolution::Abandon,
        Resolution::Committed {
            result: Digest::of(b"r"),
        },
    ] {
        assert_eq!(
            reject(&run, at(5, resume(cp, intervene(mallory, resolution)))),
            Rejection::Unauthorised {
                expected: OPERATOR,
                got: mallory
            }
        );
    }
}

#[test]
fn suspended_intervention_reporting_a_commit_with_no_effect_unresolved_is_rejected() {
    let (run, cp) = awaiting_person();
    let decision = intervene(
        OPERATOR,
        Resolution::Committed {
            result: Digest::of(b"r"),
        },
    );
    assert_eq!(
        reject(&run, at(5, resume(cp, decision))),
        Rejection::NothingUnresolved
    );
    // The operator sent it: the caller's fault, not the driver's.
    assert_eq!(Rejection::NothingUnresolved.fault(), Fault::Caller);
}

#[test]
fn suspended_resource_ready_or_callback_records_the_version_the_resource_moved_to() {
    // RES-3: a resource that moved is what a wait for it is about; the decision reports the
    // version the driver observed, and the run records it instead of refusing it.
    for (run, cp, decision) in [
        {
            let (run, cp) = awaiting_resource();
            (run, cp, Decision::ResourceReady { resource: RESOURCE })
        },
        {
            let (run, cp) = awaiting_callback();
            (run, cp, callback(CALLBACK))
        },
    ] {
        let (next, _) = accept(&run, at(5, resume_at_version(cp, decision, 7)));
        assert_eq!(next.phase(), &Phase::Running { in_flight: None });
        assert_eq!(next.resource_version(), 7);
    }
}

#[test]
fn suspended_intervention_continue_after_the_resource_moved_is_refused_but_abandon_is_not() {
    // RES-3: a person's go-ahead was given on the checkpoint's resource; if it moved since,
    // the go-ahead is refused (the person has not seen it), while abandoning, a fact that
    // acts on nothing, is accepted and records the version.
    let (run, cp) = awaiting_person();
    let go_on = intervene(OPERATOR, Resolution::Continue);
    assert_eq!(
        reject(&run, at(5, resume_at_version(cp, go_on, 2))),
        Rejection::ResourceChanged {
            checkpoint: 1,
            current: 2
        }
    );
    let give_up = intervene(OPERATOR, Resolution::Abandon);
    let (next, _) = accept(&run, at(5, resume_at_version(cp, give_up, 2)));
    assert_eq!(next.resource_version(), 2);
}

#[test]
fn suspended_intervention_committed_after_the_resource_moved_records_the_result() {
    // Bug found by the model first (resource-blocks-answers): the call's own commit moved the
    // resource, and the person reporting that commit must not be refused for it.
    let c = publish();
    let (run, cp) = unresolved_effect(c);
    let result = Digest::of(b"committed");
    let decision = intervene(OPERATOR, Resolution::Committed { result });
    let (next, _) = accept(
        &run,
        at(5, resume_at_version(cp, decision, cp.resource_version + 1)),
    );
    assert_eq!(next.last_call().map(|o| o.result), Some(result));
    assert_eq!(next.resource_version(), cp.resource_version + 1);
}

#[test]
fn suspended_intervention_continue_is_rechecked_but_abandon_is_not() {
    // RES-7: continuing leads to new work; abandoning leads to none.
    let (run, cp) = awaiting_person();
    let go_on = intervene(OPERATOR, Resolution::Continue);
    assert_eq!(
        reject(&run, at(5, with_facts(cp, go_on, false, true))),
        Rejection::PermissionRevoked
    );
    assert_eq!(
        reject(&run, at(5, with_facts(cp, go_on, true, false))),
        Rejection::BudgetExhausted
    );
    let give_up = intervene(OPERATOR, Resolution::Abandon);
    let (next, _) = accept(&run, at(5, with_facts(cp, give_up, false, false)));
    assert_eq!(next.phase().kind(), PhaseKind::Failed);
}

#[test]
fn suspended_intervention_on_an_unresolved_effect_records_a_commit_without_dispatching() {
    // REC-4: the person confirmed the commit; the result is recorded and reused, the call is
    // not executed again. No new work starts, so no re-check applies.
    let c = publish();
    let (run, cp) = unresolved_effect(c);
    let result = Digest::of(b"committed");
    let decision = intervene(OPERATOR, Resolution::Committed { result });
    let (next, fx) = accept(&run, at(5, with_facts(cp, decision, false, false)));
    assert_eq!(next.phase(), &Phase::Running { in_flight: None });
    assert_eq!(next.last_call(), Some(&outcome(&c, result)));
    assert_eq!(
        effects(&fx),
        vec![
            audit(
                4,
                5,
                EventKind::Resume,
                Some(DecisionKind::Intervene),
                PhaseKind::Running,
                None
            ),
            spends(&c),
        ]
    );
}

#[test]
fn suspended_intervention_on_an_unresolved_effect_continues_without_recording_a_result() {
    // The person made sure the effect did not and will not commit: nothing is recorded.
    let c = publish();
    let (run, cp) = unresolved_effect(c);
    let (next, fx) = accept(
        &run,
        at(5, resume(cp, intervene(OPERATOR, Resolution::Continue))),
    );
    assert_eq!(next.phase(), &Phase::Running { in_flight: None });
    assert_eq!(next.last_call(), None);
    assert_eq!(fx.dispatch(), None);
}

#[test]
fn suspended_intervention_on_an_unresolved_effect_can_abandon_the_run() {
    let (run, cp) = unresolved_effect(publish());
    let (next, _) = accept(
        &run,
        at(5, resume(cp, intervene(OPERATOR, Resolution::Abandon))),
    );
    assert_eq!(
        next.phase(),
        &Phase::Failed(FailCause::Abandoned { by: OPERATOR })
    );
}
