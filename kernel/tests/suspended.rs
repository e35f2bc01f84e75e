//! The suspended phase, for every reason: every input kind but resume (see the
//! `suspended_*` files for resumes), accepted with its exact transition or refused exactly.

use resumable_kernel::*;
use resumable_testkit::*;

/// One suspended run of every reason (and of the variants an unknown outcome and a manual
/// intervention take), with the reason's name and the suspension's expiry.
struct Case {
    run: Run,
    reason: ReasonKind,
    expires_at: u64,
}

fn every_reason() -> Vec<Case> {
    let c = publish();
    vec![
        Case {
            run: pending(c).0,
            reason: ReasonKind::PendingApproval,
            expires_at: 50,
        },
        Case {
            run: awaiting_callback().0,
            reason: ReasonKind::ExternalCallback,
            expires_at: 50,
        },
        Case {
            run: awaiting_resource().0,
            reason: ReasonKind::ResourceWait,
            expires_at: 50,
        },
        Case {
            run: awaiting_person().0,
            reason: ReasonKind::ManualIntervention,
            expires_at: 50,
        },
        Case {
            run: unresolved_effect(c).0,
            reason: ReasonKind::ManualIntervention,
            expires_at: 3 + WINDOW,
        },
        Case {
            run: outcome_unknown(c).0,
            reason: ReasonKind::OutcomeUnknown,
            expires_at: 2 + WINDOW,
        },
        Case {
            run: cancelled_in_flight(c).0,
            reason: ReasonKind::OutcomeUnknown,
            expires_at: 2 + WINDOW,
        },
    ]
}

/// The waits with no effect unresolved: for an approval, a callback, a resource, a person.
fn plain_waits() -> [Run; 4] {
    [
        pending(publish()).0,
        awaiting_callback().0,
        awaiting_resource().0,
        awaiting_person().0,
    ]
}

#[test]
fn suspended_suspend_is_rejected_as_already_suspended() {
    // SUS-2: a second suspend while one is pending is refused, naming the pending reason.
    let fresh = call("call-2", "notify:demo", "idem-2");
    for case in every_reason() {
        assert_eq!(
            reject(&case.run, at(10, suspend_for_approval(fresh, 60))),
            Rejection::AlreadySuspended {
                reason: case.reason
            }
        );
    }
}

#[test]
fn suspended_dispatch_complete_and_fail_are_rejected_as_not_running() {
    let fresh = call("call-2", "notify:demo", "idem-2");
    for case in every_reason() {
        let refused = [first_dispatch(fresh), complete(b"r"), fail("E1")];
        for event in refused {
            assert_eq!(
                reject(&case.run, at(10, event)),
                Rejection::NotRunning {
                    phase: PhaseKind::Suspended
                },
                "{:?} {:?}",
                case.reason,
                event.kind()
            );
        }
    }
}

#[test]
fn suspended_tool_result_is_rejected_with_no_dispatch_in_flight() {
    // REC-1: once the outcome is unknown, only the reconcile answer settles it; even the
    // in-flight call's own late answer is refused (the status query reports it instead).
    let c = publish();
    for case in every_reason() {
        let late = Event::ToolResult {
            call_id: c.call_id,
            attempt: 0,
            result: Digest::of(b"late"),
        };
        assert_eq!(
            reject(&case.run, at(10, late)),
            Rejection::NoDispatchInFlight {
                phase: PhaseKind::Suspended
            },
            "{:?}",
            case.reason
        );
    }
}

#[test]
fn suspended_recover_is_rejected_with_nothing_in_flight() {
    for case in every_reason() {
        assert_eq!(
            reject(&case.run, at(10, Event::Recover)),
            Rejection::NothingInFlight {
                phase: PhaseKind::Suspended
            },
            "{:?}",
            case.reason
        );
    }
}

#[test]
fn suspended_expire_before_or_at_the_expiry_is_rejected() {
    // EXP-1: the suspension holds until its expiry has passed, not at the expiry itself.
    for case in every_reason() {
        for now in [case.expires_at - 1, case.expires_at] {
            assert_eq!(
                reject(&case.run, at(now, Event::Expire)),
                Rejection::NotExpired {
                    expires_at: Time(case.expires_at),
                    now: Time(now)
                }
            );
        }
    }
}

#[test]
fn suspended_expire_after_the_expiry_fails_an_approval_callback_resource_or_person_wait() {
    // EXP-1: no suspension waits forever.
    for run in plain_waits() {
        let (next, fx) = accept(&run, at(51, Event::Expire));
        assert_eq!(
            next.phase(),
            &Phase::Failed(FailCause::Expired { unresolved: None })
        );
        assert_eq!(next.revision(), Revision(2));
        assert_eq!(
            effects(&fx),
            vec![record(2, 51, EventKind::Expire, PhaseKind::Failed)]
        );
    }
}

#[test]
fn suspended_expire_of_an_unknown_outcome_escalates_to_manual_intervention() {
    // EXP-1: an unknown outcome is never silently dropped: a person gets it first.
    let c = publish();
    let (run, _) = outcome_unknown(c);
    let (next, fx) = accept(&run, at(103, Event::Expire));
    let expected = Suspension {
        reason: Reason::ManualIntervention {
            unresolved: Some(in_flight(c, 0, 1)),
            cancelled_by: None,
        },
        since: Time(103),
        expires_at: Time(103 + WINDOW),
        responsible: OPERATOR,
    };
    assert_eq!(next.phase(), &Phase::Suspended(expected));
    let reason = ReasonKind::ManualIntervention;
    let record = suspended_record(3, 103, EventKind::Expire, reason);
    assert_eq!(effects(&fx), vec![record, persisted(&next)]);
    // The escalation expires too, and then the run fails naming the unsettled effect.
    let (last, _) = accept(&next, at(204, Event::Expire));
    assert_eq!(last.phase(), &expired_unresolved(c));
}

#[test]
fn suspended_expire_of_an_unresolved_intervention_fails_naming_the_effect() {
    let c = publish();
    let (run, _) = unresolved_effect(c);
    let (next, fx) = accept(&run, at(104, Event::Expire));
    assert_eq!(next.phase(), &expired_unresolved(c));
    let failed = record(4, 104, EventKind::Expire, PhaseKind::Failed);
    assert_eq!(effects(&fx), vec![failed]);
}

#[test]
fn suspended_expire_of_an_unknown_outcome_with_a_pending_cancel_carries_the_cancel() {
    // CAN-2: an accepted cancel is never lost: the person who takes the unknown outcome over
    // sees it in the suspension and in its checkpoint.
    let c = publish();
    let (run, _) = cancelled_in_flight(c);
    let (next, fx) = accept(&run, at(103, Event::Expire));
    assert_eq!(
        next.suspension().map(|s| s.reason),
        Some(Reason::ManualIntervention {
            unresolved: Some(in_flight(c, 0, 1)),
            cancelled_by: Some(CANCELLER),
        })
    );
    let cp = fx
        .checkpoint()
        .expect("an escalation persists a checkpoint");
    assert_eq!(cp.cancel_requested_by, Some(CANCELLER));
}

#[test]
fn suspended_cancel_fails_an_approval_callback_resource_or_person_wait() {
    for run in plain_waits() {
        let (next, fx) = accept(&run, at(5, Event::Cancel { by: CANCELLER }));
        assert_cancelled(&next, &fx, 2, 5);
    }
}

#[test]
fn suspended_cancel_of_an_unknown_outcome_waits_for_the_reconcile_answer() {
    // CAN-1: the query was already commanded on recovery; the cancel is recorded and a new
    // checkpoint persisted, keeping the suspension's start and expiry.
    let c = publish();
    let (run, _) = outcome_unknown(c);
    let (next, fx) = accept(&run, at(5, Event::Cancel { by: CANCELLER }));
    let expected = unknown_outcome(c, 2, Some(CANCELLER));
    assert_eq!(next.phase(), &Phase::Suspended(expected));
    let record = suspended_record(3, 5, EventKind::Cancel, ReasonKind::OutcomeUnknown);
    assert_eq!(effects(&fx), vec![record, persisted(&next)]);
}

#[test]
fn suspended_second_cancel_of_an_unknown_outcome_is_rejected_as_pending() {
    let (run, _) = cancelled_in_flight(publish());
    assert_eq!(
        reject(&run, at(5, Event::Cancel { by: OPERATOR })),
        Rejection::CancelPending
    );
}

#[test]
fn suspended_cancel_of_an_unresolved_intervention_is_recorded_until_the_person_settles_it() {
    // CAN-2: the effect may have committed, so the cancel waits in the same suspension (same
    // start, expiry and party), visible in a new checkpoint; a second cancel is refused.
    let c = publish();
    let (run, _) = unresolved_effect(c);
    let s = *run.suspension().expect("suspended");
    let (next, fx) = accept(&run, at(5, Event::Cancel { by: CANCELLER }));
    let expected = Suspension {
        reason: Reason::ManualIntervention {
            unresolved: Some(in_flight(c, 0, 1)),
            cancelled_by: Some(CANCELLER),
        },
        ..s
    };
    assert_eq!(next.phase(), &Phase::Suspended(expected));
    let record = suspended_record(4, 5, EventKind::Cancel, ReasonKind::ManualIntervention);
    assert_eq!(effects(&fx), vec![record, persisted(&next)]);
    assert_eq!(
        reject(&next, at(6, Event::Cancel { by: OPERATOR })),
        Rejection::CancelPending
    );
}

#[test]
fn suspended_input_from_the_past_is_rejected() {
    // CLK-1, for every reason and every non-resume input kind.
    for case in every_reason() {
        let (_, cp) = pending(publish());
        let last = case.run.updated_at();
        for input in one_of_each_kind(cp, last.0 - 1) {
            if input.event.kind() == EventKind::Resume {
                continue; // another run's checkpoint: refused for identity, first
            }
            assert_eq!(
                reject(&case.run, input),
                Rejection::ClockRegressed {
                    last,
                    got: Time(last.0 - 1)
                }
            );
        }
    }
}
