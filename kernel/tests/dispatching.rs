//! The running phase with a call in flight: the intent is durable and the driver has been told
//! to dispatch. Every input kind, accepted with its exact transition or refused exactly.

use resumable_kernel::*;
use resumable_testkit::*;

#[test]
fn dispatching_tool_result_records_the_result_with_the_next_revision() {
    // WAL-2: the result and the next revision land together; REC-4 reuses it from then on.
    let c = publish();
    let (next, fx) = accept(&call_in_flight(c), at(2, tool_result(&c, 0, b"ok")));
    assert_eq!(next.phase(), &Phase::Running { in_flight: None });
    assert_eq!(next.revision(), Revision(2));
    assert_eq!(next.last_call(), Some(&outcome(&c, Digest::of(b"ok"))));
    assert_eq!(
        effects(&fx),
        vec![
            record(2, 2, EventKind::ToolResult, PhaseKind::Running),
            spends(&c),
        ]
    );
}

#[test]
fn after_a_result_the_steps_that_record_none_spend_no_key_again() {
    // REC-4: a key is spent once, by the step that records its result. The run keeps that
    // result as its last call afterwards; no later step, which records no result, adds to the
    // history.
    let c = publish();
    let (after, _) = accept(&call_in_flight(c), at(2, tool_result(&c, 0, b"ok")));
    assert!(after.last_call().is_some());
    let (waiting, fx) = accept(
        &after,
        at(
            3,
            Event::Suspend {
                wait: Wait::Callback { callback: CALLBACK },
                expires_at: Time(100),
                responsible: OWNER,
                resource_version: 0,
            },
        ),
    );
    assert_eq!(fx.history(), None);
    assert_eq!(waiting.last_call(), after.last_call());
    let (_, fx) = accept(&after, at(3, complete(b"done")));
    assert_eq!(fx.history(), None);
}

#[test]
fn dispatching_tool_result_for_another_call_or_attempt_is_rejected() {
    // The answer must be the in-flight call's, under its attempt.
    let c = publish();
    let other = call("call-2", "publish:demo", "idem-1");
    for (call, attempt) in [(other, 0), (c, 1)] {
        let mismatch = Rejection::ResultMismatch {
            call_id: c.call_id,
            attempt: 0,
            got_call: call.call_id,
            got_attempt: attempt,
        };
        let answer = tool_result(&call, attempt, b"ok");
        assert_eq!(reject(&call_in_flight(c), at(2, answer)), mismatch);
    }
}

#[test]
fn dispatching_late_result_of_a_fenced_attempt_is_rejected_after_the_retry() {
    // REC-3: after a fencing query said "not committed", attempt 0 is dead; its late answer
    // is not the retry's answer.
    let c = with_contract(publish(), false, true, 3);
    let (run, cp) = outcome_unknown(c);
    let (run, _) = accept(
        &run,
        at(
            3,
            resume(cp, Decision::Reconcile(QueryAnswer::NotCommitted)),
        ),
    );
    assert_eq!(run.in_flight(), Some(&in_flight(c, 1, 2)));
    assert_eq!(
        reject(&run, at(4, tool_result(&c, 0, b"late"))),
        Rejection::ResultMismatch {
            call_id: c.call_id,
            attempt: 1,
            got_call: c.call_id,
            got_attempt: 0
        }
    );
    let (next, _) = accept(&run, at(4, tool_result(&c, 1, b"ok")));
    assert_eq!(next.last_call().map(|o| o.result), Some(Digest::of(b"ok")));
}

#[test]
fn dispatching_recover_or_cancel_suspends_with_an_unknown_outcome_and_queries_the_tool() {
    // REC-1: a restart never re-dispatches; it asks the tool's status query. CAN-1: the
    // effect may have happened, so a cancel takes effect once it is reconciled.
    let c = publish();
    let cases = [
        (7, Event::Recover, EventKind::Recover, None),
        (
            2,
            Event::Cancel { by: CANCELLER },
            EventKind::Cancel,
            Some(CANCELLER),
        ),
    ];
    for (t, event, kind, cancelled_by) in cases {
        let (next, fx) = accept(&call_in_flight(c), at(t, event));
        let expected = unknown_outcome(c, t, cancelled_by);
        assert_eq!(next.phase(), &Phase::Suspended(expected), "{kind:?}");
        let record = suspended_record(2, t, kind, ReasonKind::OutcomeUnknown);
        let query = Effect::Query(dispatch_of(&next, &c, 0));
        let expected = vec![record, persisted(&next), query];
        assert_eq!(effects(&fx), expected, "{kind:?}");
    }
}

#[test]
fn dispatching_suspend_dispatch_complete_and_fail_wait_for_the_answer() {
    // WAL-2: while a dispatch is in flight, the run waits for it.
    let c = publish();
    let fresh = call("call-2", "notify:demo", "idem-2");
    let refused = [
        suspend_for_approval(fresh, 50),
        first_dispatch(fresh),
        complete(b"r"),
        fail("E1"),
    ];
    for event in refused {
        assert_eq!(
            reject(&call_in_flight(c), at(2, event)),
            Rejection::DispatchInFlight { call_id: c.call_id },
            "{:?}",
            event.kind()
        );
    }
}

#[test]
fn dispatching_expire_is_rejected_as_not_suspended() {
    assert_eq!(
        reject(&call_in_flight(publish()), at(1_000, Event::Expire)),
        Rejection::NotSuspended {
            phase: PhaseKind::Running
        }
    );
}

#[test]
fn dispatching_resume_is_rejected_as_not_suspended() {
    // RES-4: even a checkpoint at the current revision, sealed, for this run.
    let c = publish();
    let run = call_in_flight(c);
    let (_, later) = accept(&run, at(2, Event::Recover));
    let forged = resealed(*later.checkpoint().unwrap(), |cp| {
        cp.revision = run.revision()
    });
    let reconcile = Decision::Reconcile(QueryAnswer::Committed {
        result: Digest::of(b"ok"),
    });
    assert_eq!(
        reject(&run, at(2, resume(forged, reconcile))),
        Rejection::NotSuspended {
            phase: PhaseKind::Running
        }
    );
}

#[test]
fn dispatching_input_from_the_past_is_rejected() {
    // CLK-1 applies before the in-flight rules.
    let c = publish();
    let run = accept(&new_run("run-in-flight"), at(5, first_dispatch(c))).0;
    for event in [tool_result(&c, 0, b"ok"), Event::Recover, Event::Expire] {
        assert_eq!(
            reject(&run, at(4, event)),
            Rejection::ClockRegressed {
                last: Time(5),
                got: Time(4)
            }
        );
    }
}

#[test]
fn dispatching_recover_near_the_end_of_time_opens_a_suspension_that_can_still_expire() {
    // EXP-1: the reconcile window saturates at the latest expiry, one before the end of
    // time, so an input at the end can still pass it; at the end itself none can open.
    let c = publish();
    let run = call_in_flight(c);
    let near = Time::LATEST_EXPIRY.0 - 1;
    let (next, _) = accept(&run, at(near, Event::Recover));
    let s = next.suspension().expect("suspended");
    assert_eq!(s.expires_at, Time::LATEST_EXPIRY);
    // Expired at the end of time, the unknown outcome cannot go to a person who would have
    // no time left: the run ends as the intervention would, naming the unsettled effect.
    let (ended, _) = accept(
        &next,
        Input {
            at: Time::END,
            event: Event::Expire,
        },
    );
    assert_eq!(ended.phase(), &expired_unresolved(c));
    assert_eq!(
        reject(
            &run,
            Input {
                at: Time::END,
                event: Event::Recover
            }
        ),
        Rejection::ClockExhausted { at: Time::END }
    );
}

#[test]
fn dispatching_commands_carry_a_tool_key_namespaced_by_the_run() {
    // KEY-3: two runs that use one key never share the tool's dedupe record or fence; one
    // run's retries keep theirs.
    let c = publish();
    let a = accept(&new_run("run-a"), at(1, first_dispatch(c)));
    let b = accept(&new_run("run-b"), at(1, first_dispatch(c)));
    let (ka, kb) = (
        a.1.dispatch().unwrap().tool_key,
        b.1.dispatch().unwrap().tool_key,
    );
    assert_ne!(ka, kb);
    assert_eq!(ka, checkpoint::tool_key(a.0.identity(), &c.key));
    let (_, fx) = accept(&a.0, at(2, Event::Recover));
    let query = fx.iter().find_map(|e| match e {
        Effect::Query(q) => Some(q.tool_key),
        _ => None,
    });
    assert_eq!(query, Some(ka));
}
