//! Suspended with an unknown outcome: the three reconcile answers under each tool contract
//! (REC-2, REC-3, REC-4), the attempt bound, answers after the resource moved (RES-3), and a
//! cancel while in flight (CAN-1, CAN-2).

use resumable_kernel::*;
use resumable_testkit::*;

const DEDUPES: (bool, bool) = (true, false);
const FENCES: (bool, bool) = (false, true);
const BOTH: (bool, bool) = (true, true);
const NEITHER: (bool, bool) = (false, false);

fn tool(contract: (bool, bool), max_attempts: u8) -> Call {
    with_contract(publish(), contract.0, contract.1, max_attempts)
}

fn answer(a: QueryAnswer) -> Decision {
    Decision::Reconcile(a)
}

fn committed() -> QueryAnswer {
    QueryAnswer::Committed {
        result: Digest::of(b"committed"),
    }
}

/// The reconcile resume's audit record at r3, t3 (the unknown outcome is at r2, t2).
fn reconciled(phase: PhaseKind, reason: Option<ReasonKind>) -> Effect {
    audit(
        3,
        3,
        EventKind::Resume,
        Some(DecisionKind::Reconcile),
        phase,
        reason,
    )
}

/// The manual intervention an unknown outcome of `c` escalates to at t3.
fn handed_to_a_person(c: Call, attempt: u8, dispatches: u8) -> Phase {
    handed_over_with(c, attempt, dispatches, None)
}

/// The same, carrying the cancel of `cancelled_by`.
fn handed_over_with(c: Call, attempt: u8, dispatches: u8, cancelled_by: Option<Name>) -> Phase {
    Phase::Suspended(Suspension {
        reason: Reason::ManualIntervention {
            unresolved: Some(in_flight(c, attempt, dispatches)),
            cancelled_by,
        },
        since: Time(3),
        expires_at: Time(3 + WINDOW),
        responsible: OPERATOR,
    })
}

#[test]
fn suspended_reconcile_committed_records_the_result_and_never_dispatches_again() {
    // REC-4, under every contract.
    for contract in [DEDUPES, FENCES, BOTH, NEITHER] {
        let c = tool(contract, 3);
        let (run, cp) = outcome_unknown(c);
        let (next, fx) = accept(&run, at(3, resume(cp, answer(committed()))));
        assert_eq!(next.phase(), &Phase::Running { in_flight: None });
        assert_eq!(
            next.last_call(),
            Some(&outcome(&c, Digest::of(b"committed")))
        );
        assert_eq!(
            effects(&fx),
            vec![reconciled(PhaseKind::Running, None), spends(&c)],
            "{contract:?}"
        );
        // The recorded call cannot be made again: its id is spent.
        assert_eq!(
            reject(&next, at(4, spent(&c).dispatch(c))),
            Rejection::CallIdReused { call_id: c.call_id }
        );
    }
}

#[test]
fn suspended_reconcile_not_committed_retries_under_the_same_key_or_a_fresh_attempt() {
    // REC-3: a deduping tool cannot commit the same key and attempt twice, so the retry goes
    // out under them; a fencing query fences the old key, so only a fresh attempt can commit
    // now; a tool that does both is safe either way, by the brief's table, and the kernel
    // prefers the fence.
    for (contract, attempt) in [(DEDUPES, 0), (FENCES, 1), (BOTH, 1)] {
        let c = tool(contract, 3);
        let (run, cp) = outcome_unknown(c);
        let (next, fx) = accept(&run, at(3, resume(cp, answer(QueryAnswer::NotCommitted))));
        assert_eq!(next.phase(), &running_with(c, attempt, 2), "{contract:?}");
        let retry = Effect::Dispatch(dispatch_of(&run, &c, attempt));
        let expected = vec![reconciled(PhaseKind::Running, None), retry];
        assert_eq!(effects(&fx), expected, "{contract:?}");
    }
}

#[test]
fn suspended_reconcile_that_cannot_retry_hands_it_to_a_person() {
    // REC-2: an unknown outcome is never retried blindly, under any contract. REC-3: with
    // neither dedupe nor fence the original may still commit late, so a "not committed" is
    // never retried automatically; and retries are bounded by max_attempts (here one attempt
    // was all the contract allowed).
    let mut cases = vec![(NEITHER, 3, QueryAnswer::NotCommitted)];
    for contract in [DEDUPES, FENCES, BOTH, NEITHER] {
        cases.push((contract, 3, QueryAnswer::Unknown));
    }
    for contract in [DEDUPES, FENCES, BOTH] {
        cases.push((contract, 1, QueryAnswer::NotCommitted));
    }
    for (contract, max_attempts, a) in cases {
        let c = tool(contract, max_attempts);
        let (run, cp) = outcome_unknown(c);
        let (next, fx) = accept(&run, at(3, resume(cp, answer(a))));
        let case = format!("{contract:?} of {max_attempts}, {a:?}");
        assert_eq!(next.phase(), &handed_to_a_person(c, 0, 1), "{case}");
        let reason = Some(ReasonKind::ManualIntervention);
        let expected = vec![reconciled(PhaseKind::Suspended, reason), persisted(&next)];
        assert_eq!(effects(&fx), expected, "{case}");
    }
}

#[test]
fn suspended_reconcile_retries_until_max_attempts_then_hands_it_to_a_person() {
    // Three attempts under a fencing query: attempts 0, 1, 2, then a person.
    let c = tool(FENCES, 3);
    let (mut run, mut cp) = outcome_unknown(c);
    let mut t = 3;
    for attempt in 1..3u8 {
        let (next, fx) = accept(&run, at(t, resume(cp, answer(QueryAnswer::NotCommitted))));
        assert_eq!(next.in_flight(), Some(&in_flight(c, attempt, attempt + 1)));
        assert_eq!(fx.dispatch(), Some(&dispatch_of(&run, &c, attempt)));
        let (next, fx) = accept(&next, at(t + 1, Event::Recover));
        (run, cp) = (next, *fx.checkpoint().unwrap());
        t += 2;
    }
    let (next, fx) = accept(&run, at(t, resume(cp, answer(QueryAnswer::NotCommitted))));
    assert_eq!(
        next.suspension().map(|s| s.reason),
        Some(Reason::ManualIntervention {
            unresolved: Some(in_flight(c, 2, 3)),
            cancelled_by: None,
        })
    );
    assert_eq!(fx.dispatch(), None);
}

#[test]
fn suspended_reconcile_retry_that_the_present_no_longer_allows_hands_it_to_a_person() {
    // RES-3, RES-7: a retry acts on the present, so it re-checks the resource, permission
    // and budget; but the answer is a fact and is never refused: a person decides instead.
    let c = tool(DEDUPES, 3);
    let (run, cp) = outcome_unknown(c);
    let retry = answer(QueryAnswer::NotCommitted);
    let moved = resume_at_version(cp, retry, cp.resource_version + 1);
    for input in [
        with_facts(cp, retry, false, true),
        with_facts(cp, retry, true, false),
        moved,
    ] {
        let (next, fx) = accept(&run, at(3, input));
        assert_eq!(next.phase(), &handed_to_a_person(c, 0, 1));
        assert_eq!(fx.dispatch(), None);
    }
}

#[test]
fn suspended_reconcile_without_a_retry_needs_no_permission_budget_or_unmoved_resource() {
    // Recording a commit, or handing the effect to a person, starts no new work; and an
    // answer about the past is never refused because the resource moved (the call itself
    // may well have moved it): the run records the version reported (RES-3).
    let cases = [
        (tool(DEDUPES, 3), committed()),
        (tool(DEDUPES, 3), QueryAnswer::Unknown),
        (tool(NEITHER, 3), QueryAnswer::NotCommitted),
        (tool(FENCES, 1), QueryAnswer::NotCommitted),
    ];
    for (c, a) in cases {
        let (run, cp) = outcome_unknown(c);
        let (next, fx) = accept(&run, at(3, with_facts(cp, answer(a), false, false)));
        assert_eq!(fx.dispatch(), None, "{a:?}");
        assert_eq!(next.revision(), Revision(3));
        let moved = cp.resource_version + 5;
        let (next, _) = accept(&run, at(3, resume_at_version(cp, answer(a), moved)));
        assert_eq!(next.resource_version(), moved, "{a:?}");
    }
}

#[test]
fn suspended_reconcile_committed_after_a_cancel_in_flight_records_the_result_and_fails() {
    // CAN-1, REC-4: the effect happened; the run records it and then honours the cancel.
    let c = publish();
    let (run, cp) = cancelled_in_flight(c);
    let (next, fx) = accept(&run, at(3, resume(cp, answer(committed()))));
    assert_eq!(
        next.phase(),
        &Phase::Failed(FailCause::Cancelled { by: CANCELLER })
    );
    assert_eq!(
        next.last_call().map(|o| o.result),
        Some(Digest::of(b"committed"))
    );
    assert_eq!(
        effects(&fx),
        vec![reconciled(PhaseKind::Failed, None), spends(&c)]
    );
}

#[test]
fn suspended_reconcile_not_committed_after_a_cancel_fails_only_if_the_query_fences() {
    // CAN-2: a fenced attempt can never commit, so the cancel takes effect; without a fence
    // the late original could still commit, so a person settles it, the cancel carried.
    for contract in [FENCES, BOTH, DEDUPES, NEITHER] {
        let c = tool(contract, 3);
        let (run, cp) = cancelled_in_flight(c);
        let (next, fx) = accept(&run, at(3, resume(cp, answer(QueryAnswer::NotCommitted))));
        let (_, fences) = contract;
        if fences {
            let cancelled = Phase::Failed(FailCause::Cancelled { by: CANCELLER });
            assert_eq!(next.phase(), &cancelled, "{contract:?}");
            assert_eq!(next.last_call(), None);
            assert_eq!(effects(&fx), vec![reconciled(PhaseKind::Failed, None)]);
        } else {
            let handed_over = handed_over_with(c, 0, 1, Some(CANCELLER));
            assert_eq!(next.phase(), &handed_over, "{contract:?}");
            assert_eq!(fx.dispatch(), None);
            let carried = fx.checkpoint().map(|cp| cp.cancel_requested_by);
            assert_eq!(carried, Some(Some(CANCELLER)));
        }
    }
}

#[test]
fn suspended_reconcile_unknown_after_a_cancel_in_flight_hands_it_over_with_the_cancel() {
    // REC-2 over CAN-2: the effect is still unsettled, so a person gets it, and the cancel
    // with it: a second cancel is pending, not lost; whatever the person settles ends the
    // run cancelled, the committed result recorded first; abandoning gives it up.
    let c = publish();
    let (run, cp) = cancelled_in_flight(c);
    let (next, fx) = accept(&run, at(3, resume(cp, answer(QueryAnswer::Unknown))));
    assert_eq!(next.phase(), &handed_over_with(c, 0, 1, Some(CANCELLER)));
    assert_eq!(fx.dispatch(), None);
    assert_eq!(
        reject(&next, at(4, Event::Cancel { by: CANCELLER })),
        Rejection::CancelPending
    );
    let cp = *fx.checkpoint().unwrap();
    assert_eq!(cp.cancel_requested_by, Some(CANCELLER));
    let by_person = |resolution| Decision::Intervene {
        by: OPERATOR,
        resolution,
    };
    let settled = [
        (
            Resolution::Committed {
                result: Digest::of(b"committed"),
            },
            FailCause::Cancelled { by: CANCELLER },
        ),
        (Resolution::Continue, FailCause::Cancelled { by: CANCELLER }),
        (Resolution::Abandon, FailCause::Abandoned { by: OPERATOR }),
    ];
    for (resolution, cause) in settled {
        // Moved or not, the resource does not hold the person back: the run ends.
        let moved = resume_at_version(cp, by_person(resolution), cp.resource_version + 1);
        let (last, _) = accept(&next, at(4, moved));
        assert_eq!(last.phase(), &Phase::Failed(cause), "{resolution:?}");
    }
    let committed = Resolution::Committed {
        result: Digest::of(b"committed"),
    };
    let (last, _) = accept(&next, at(4, resume(cp, by_person(committed))));
    assert_eq!(
        last.last_call().map(|o| o.result),
        Some(Digest::of(b"committed"))
    );
}

#[test]
fn suspended_reconcile_after_a_cancel_following_recovery_honours_the_cancel() {
    // CAN-1 also when the cancel arrives after the restart, during reconciliation.
    let c = tool(FENCES, 3);
    let (run, _) = outcome_unknown(c);
    let (run, fx) = accept(&run, at(3, Event::Cancel { by: CANCELLER }));
    let cp = *fx.checkpoint().unwrap();
    let (next, fx) = accept(&run, at(4, resume(cp, answer(QueryAnswer::NotCommitted))));
    assert_eq!(
        next.phase(),
        &Phase::Failed(FailCause::Cancelled { by: CANCELLER })
    );
    assert_eq!(fx.dispatch(), None);
}
