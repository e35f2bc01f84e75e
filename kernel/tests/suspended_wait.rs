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
    resume_record(2, 5, decision, phase)
}

#[test]
fn suspended_callback_resource_ready_and_intervention_resume_the_run_or_abandon_it() {
    // Each wait is answered by its own decision: the callback, the resource, a person's
    // go-ahead resume the run; a person who abandons it fails it.
    let ready = Decision::ResourceReady { resource: RESOURCE };
    let running = (Phase::Running { in_flight: None }, PhaseKind::Running);
    let abandoned = (
        Phase::Failed(FailCause::Abandoned { by: OPERATOR }),
        PhaseKind::Failed,
    );
    let cases = [
        (
            awaiting_callback(),
            callback(CALLBACK),
            running,
            DecisionKind::Callback,
        ),
        (
            awaiting_resource(),
            ready,
            running,
            DecisionKind::ResourceReady,
        ),
        (
            awaiting_person(),
            intervene(OPERATOR, Resolution::Continue),
            running,
            DecisionKind::Intervene,
        ),
        (
            awaiting_person(),
            intervene(OPERATOR, Resolution::Abandon),
            abandoned,
            DecisionKind::Intervene,
        ),
    ];
    for ((run, cp), decision, (phase, ended), kind) in cases {
        let (next, fx) = accept(&run, at(5, resume(cp, decision)));
        assert_eq!(next.phase(), &phase, "{kind}");
        assert_eq!(next.revision(), Revision(2), "{kind}");
        assert_eq!(effects(&fx), vec![resumed(kind, ended)], "{kind}");
    }
}

#[test]
fn suspended_callback_or_resource_of_another_name_is_rejected_before_permission() {
    // Brief 3.12: a resume aimed at the wrong target fails loudly, whatever the policy says.
    let (webhook, pool) = (Name::lit("webhook-8"), Name::lit("cpu-pool"));
    let other_pool = Decision::ResourceReady { resource: pool };
    let cases = [
        (
            awaiting_callback(),
            callback(webhook),
            true,
            (CALLBACK, webhook),
        ),
        (
            awaiting_callback(),
            callback(webhook),
            false,
            (CALLBACK, webhook),
        ),
        (awaiting_resource(), other_pool, true, (RESOURCE, pool)),
    ];
    for ((run, cp), decision, permitted, (expected, got)) in cases {
        let input = with_facts(cp, decision, permitted, permitted);
        let mismatch = Rejection::WaitMismatch { expected, got };
        assert_eq!(reject(&run, at(5, input)), mismatch, "{got}, {permitted}");
    }
}

#[test]
fn suspended_decisions_that_lead_to_new_work_are_rechecked_against_permission_then_budget() {
    // RES-7: the run goes on to new work after a callback, a ready resource or a person's
    // go-ahead, so current policy is re-checked; abandoning leads to none, and is not.
    let ready = Decision::ResourceReady { resource: RESOURCE };
    let go_on = intervene(OPERATOR, Resolution::Continue);
    let cases = [
        (awaiting_callback(), callback(CALLBACK), false),
        (awaiting_resource(), ready, true),
        (awaiting_person(), go_on, true),
    ];
    for ((run, cp), decision, within_budget) in cases {
        let case = decision.kind();
        let revoked = with_facts(cp, decision, false, within_budget);
        assert_eq!(
            reject(&run, at(5, revoked)),
            Rejection::PermissionRevoked,
            "{case}"
        );
        let beyond = with_facts(cp, decision, true, false);
        assert_eq!(
            reject(&run, at(5, beyond)),
            Rejection::BudgetExhausted,
            "{case}"
        );
    }
    let (run, cp) = awaiting_person();
    let give_up = intervene(OPERATOR, Resolution::Abandon);
    let (next, _) = accept(&run, at(5, with_facts(cp, give_up, false, false)));
    assert_eq!(next.phase().kind(), PhaseKind::Failed);
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
fn suspended_intervention_on_an_unresolved_effect_records_a_commit_without_rechecking_anything() {
    // REC-4: the person confirmed the commit; the result is recorded and reused, the call is
    // not executed again. No new work starts, so no re-check applies. And (a bug the model
    // found first, resource-blocks-answers) the call's own commit may have moved the
    // resource: the person reporting that commit must not be refused for it.
    let c = publish();
    let (run, cp) = unresolved_effect(c);
    let result = Digest::of(b"committed");
    let decision = intervene(OPERATOR, Resolution::Committed { result });
    let (next, fx) = accept(&run, at(5, with_facts(cp, decision, false, false)));
    assert_eq!(next.phase(), &Phase::Running { in_flight: None });
    assert_eq!(next.last_call(), Some(&outcome(&c, result)));
    let record = resume_record(4, 5, DecisionKind::Intervene, PhaseKind::Running);
    assert_eq!(effects(&fx), vec![record, spends(&c)]);
    let moved = cp.resource_version + 1;
    let (next, _) = accept(&run, at(5, resume_at_version(cp, decision, moved)));
    assert_eq!(next.last_call().map(|o| o.result), Some(result));
    assert_eq!(next.resource_version(), moved);
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
