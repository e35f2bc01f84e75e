//! What a run needs next and when its next timer falls due (`Run::next`, `Run::deadline`):
//! read off the run alone, and always in agreement with what `step` accepts.

use resumable_kernel::*;
use resumable_testkit::*;

#[test]
fn running_idle_run_waits_on_the_agent_and_has_no_deadline() {
    let run = new_run("run-next");
    assert_eq!(run.next(), Next::Agent);
    assert_eq!(run.deadline(), None);
}

#[test]
fn running_call_in_flight_names_the_dispatch_the_step_emitted() {
    // WAL-1, KEY-3: the outstanding dispatch is exactly the command the dispatch emitted.
    let c = publish();
    let (run, fx) = accept(&new_run("run-next"), at(1, first_dispatch(c)));
    assert_eq!(
        run.next(),
        Next::Result {
            dispatch: *fx.dispatch().unwrap()
        }
    );
    assert_eq!(
        fx.command(),
        Some(Command::Dispatch(*fx.dispatch().unwrap()))
    );
    assert_eq!(run.deadline(), None);
}

#[test]
fn suspended_outcome_unknown_names_the_query_the_recover_emitted() {
    // REC-1: after a recovery, the pending command is the query the recover commanded, and
    // the reconcile window's end is the deadline.
    let c = publish();
    let run = call_in_flight(c);
    let (run, fx) = accept(&run, at(2, Event::Recover));
    let query = *fx.query().unwrap();
    assert_eq!(fx.command(), Some(Command::Query(query)));
    assert_eq!(
        run.next(),
        Next::Query {
            dispatch: query,
            expires_at: Time(2 + WINDOW),
        }
    );
    assert_eq!(run.deadline(), Some(Time(2 + WINDOW + 1)));
}

#[test]
fn suspended_for_approval_waits_on_the_approver_until_its_expiry() {
    let (run, _) = pending(publish());
    assert_eq!(
        run.next(),
        Next::Decision {
            reason: ReasonKind::PendingApproval,
            responsible: APPROVER,
            expires_at: Time(50),
        }
    );
    assert_eq!(run.deadline(), Some(Time(51)));
}

#[test]
fn suspended_expire_is_refused_before_the_deadline_and_accepted_at_it() {
    // EXP-1: the deadline is the first instant at which `expire` is accepted, for every
    // reason a run can wait on.
    let c = publish();
    let waits = [
        pending(c).0,
        awaiting_callback().0,
        awaiting_resource().0,
        awaiting_person().0,
        outcome_unknown(c).0,
        unresolved_effect(c).0,
    ];
    for run in waits {
        let due = run.deadline().expect("a suspended run has a deadline");
        let early = step(&run, &at(due.0 - 1, Event::Expire));
        assert!(
            matches!(early, Err(Rejection::NotExpired { .. })),
            "{:?}: expire before the deadline gave {early:?}",
            run.next()
        );
        assert!(step(&run, &at(due.0, Event::Expire)).is_ok());
    }
}

#[test]
fn terminal_run_needs_nothing_and_has_no_deadline() {
    for (run, phase) in [
        (completed_run(), PhaseKind::Completed),
        (failed_run(), PhaseKind::Failed),
    ] {
        assert_eq!(run.next(), Next::Nothing { phase });
        assert_eq!(run.deadline(), None);
    }
}
