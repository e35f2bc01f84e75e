//! The planner without a store: one fixture per phase a worker meets, the plan for each, and
//! the leases, requests and deadlines that come before it.

use super::*;
use crate::program::APPROVER;
use crate::store::{Request, RunKey, Status};
use crate::testing::{
    after, awaiting_approval, batch_in_flight, completed, failed, fresh, in_flight,
    outcome_unknown, program_step, retried,
};
use resumable_kernel::{Digest, Name, Next, Time, Wait};

const ME: &str = "worker-1";

fn plan_at(row: &Row, pending: Option<&Inbox>, now: u64) -> Option<Action> {
    plan(
        row,
        pending,
        now,
        ME,
        &Timing::default(),
        Some(row.resource_version),
    )
    .unwrap()
}

fn cancel_request(row: &Row) -> Inbox {
    Inbox {
        id: 7,
        key: row.key.clone(),
        party: "ops".to_string(),
        submitted_ms: 5,
        request: Request::Cancel {
            by: Name::lit("ops"),
        },
        answer: None,
        seal: None,
    }
}

fn leased(mut row: Row, owner: &str, until_ms: u64) -> Row {
    row.lease = Lease {
        owner: Some(owner.to_string()),
        until_ms,
    };
    row
}

#[test]
fn ready_run_gets_its_programs_next_step_stamped_now() {
    let row = fresh(Program::Seed);
    let Some(Action::Program(Event::Suspend {
        wait: Wait::Approval { call, .. },
        expires_at,
        responsible,
        ..
    })) = plan_at(&row, None, 1_000)
    else {
        panic!("the seed program's first step is a suspension for approval");
    };
    assert_eq!(call.tool, Name::lit("publish:demo"));
    assert_eq!(responsible, Name::lit(APPROVER));
    assert_eq!(expires_at, Time(1_000 + Timing::default().approval_ms));
}

#[test]
fn ready_run_is_stamped_no_earlier_than_its_last_input_when_the_clock_lags() {
    // A worker whose clock runs ahead stepped the order at 5,000: its charge, and the answer.
    let charging = program_step(&fresh(Program::Order), 5_000);
    let result = Event::ToolResult {
        call_id: Name::lit("charge-1"),
        attempt: 0,
        result: Digest::of(b"charged"),
    };
    let charged = after(&charging, 5_000, result, 1);
    let Some(Action::Program(Event::Suspend { expires_at, .. })) = plan_at(&charged, None, 1_000)
    else {
        panic!("the order's second step waits for the payment's callback");
    };
    assert_eq!(expires_at, Time(5_000 + Timing::default().callback_ms));
}

#[test]
fn ready_run_whose_program_has_no_more_steps_needs_nothing() {
    let mut row = fresh(Program::Order);
    row.pc = 5;
    assert_eq!(plan_at(&row, None, 1_000), None);
}

#[test]
fn ready_run_of_an_unknown_program_is_refused_with_its_name() {
    let mut row = fresh(Program::Seed);
    row.program = "no-such-program".to_string();
    let err = plan(&row, None, 1_000, ME, &Timing::default(), Some(0)).unwrap_err();
    assert!(err.to_string().contains("no-such-program"), "{err}");
}

#[test]
fn in_flight_run_without_a_live_holder_is_recovered_never_dispatched_again() {
    let row = in_flight();
    let Next::Result { dispatch } = row.run.next() else {
        panic!("the order's charge is in flight");
    };
    assert_eq!(plan_at(&row, None, 1_000), Some(Action::Recover(dispatch)));
}

#[test]
fn batch_in_flight_awaits_each_answer_and_without_a_live_holder_is_recovered_then_queried() {
    let row = batch_in_flight();
    let Next::Results { dispatches } = row.run.next() else {
        panic!("the batch's three calls are in flight together");
    };
    assert_eq!(dispatches.len(), 3);
    assert!(dispatches.iter().all(|d| awaits_answer(&row.run, d)));
    let first = *dispatches.get(0).unwrap();
    assert_eq!(plan_at(&row, None, 1_000), Some(Action::Recover(first)));
    // Recovered: every call is unknown, none awaits an answer any more (none may leave);
    // the first is the query's, the others wait their turn (BAT-4).
    let recovered = after(&row, 30, Event::Recover, row.pc);
    assert!(dispatches.iter().all(|d| !awaits_answer(&recovered.run, d)));
    assert_eq!(plan_at(&recovered, None, 1_000), Some(Action::Query(first)));
}

#[test]
fn outcome_unknown_run_gets_the_status_query_for_the_call_and_attempt_in_doubt() {
    let row = outcome_unknown();
    let Next::Query { dispatch, .. } = row.run.next() else {
        panic!("the recovered charge's outcome is unknown");
    };
    assert_eq!(dispatch.tool, Name::lit("charge:card"));
    assert_eq!(plan_at(&row, None, 1_000), Some(Action::Query(dispatch)));
}

#[test]
fn retried_run_after_not_committed_is_recovered_under_the_retry_attempt() {
    let row = retried();
    let Some(Action::Recover(d)) = plan_at(&row, None, 1_000) else {
        panic!("the retry is in flight with no live holder");
    };
    assert_eq!(d, row.run.dispatch_of(row.run.in_flight().unwrap()));
}

#[test]
fn suspended_run_before_its_deadline_waits_for_its_party() {
    let row = awaiting_approval();
    let due = row.run.deadline().unwrap().0;
    assert_eq!(plan_at(&row, None, due - 1), None);
}

#[test]
fn suspended_run_at_its_deadline_is_expired() {
    let row = awaiting_approval();
    let due = row.run.deadline().unwrap().0;
    assert_eq!(plan_at(&row, None, due), Some(Action::Expire));
    assert_eq!(plan_at(&row, None, due + 1), Some(Action::Expire));
}

#[test]
fn outcome_unknown_run_past_its_reconcile_window_is_expired_not_queried() {
    let row = outcome_unknown();
    let due = row.run.deadline().unwrap().0;
    assert!(matches!(
        plan_at(&row, None, due - 1),
        Some(Action::Query(_))
    ));
    assert_eq!(plan_at(&row, None, due), Some(Action::Expire));
}

#[test]
fn ended_runs_need_nothing() {
    for row in [completed(), failed()] {
        assert!(matches!(row.run.next(), Next::Nothing { .. }));
        assert_eq!(plan_at(&row, None, 1_000), None);
        assert_eq!(plan_at(&row, None, u64::MAX), None);
    }
}

/// A row in each phase a run goes through: new, waiting for approval, a call in flight, its
/// outcome unknown, retried, completed, failed.
fn one_of_each() -> [Row; 7] {
    [
        fresh(Program::Seed),
        awaiting_approval(),
        in_flight(),
        outcome_unknown(),
        retried(),
        completed(),
        failed(),
    ]
}

#[test]
fn waiting_request_comes_first_before_the_runs_own_work_and_its_expiry() {
    for row in one_of_each() {
        let request = cancel_request(&row);
        assert_eq!(
            plan_at(&row, Some(&request), 1_000),
            Some(Action::Request(request))
        );
    }
    let row = awaiting_approval();
    let request = cancel_request(&row);
    let due = row.run.deadline().unwrap().0;
    assert_eq!(
        plan_at(&row, Some(&request), due),
        Some(Action::Request(request)),
        "a decision already in the inbox is judged by the kernel, not pre-empted by expire"
    );
}

#[test]
fn run_held_by_another_live_worker_is_left_alone_even_with_a_request() {
    let row = leased(in_flight(), "worker-2", 2_000);
    let request = cancel_request(&row);
    assert_eq!(plan_at(&row, None, 1_999), None);
    assert_eq!(plan_at(&row, Some(&request), 1_999), None);
}

#[test]
fn run_whose_holders_lease_has_lapsed_is_recovered() {
    let row = leased(in_flight(), "worker-2", 2_000);
    assert!(matches!(
        plan_at(&row, None, 2_000),
        Some(Action::Recover(_))
    ));
}

#[test]
fn run_held_by_this_worker_is_planned_as_if_unheld() {
    let row = leased(in_flight(), ME, 2_000);
    assert!(matches!(
        plan_at(&row, None, 1_000),
        Some(Action::Recover(_))
    ));
}

fn summary(status: Status, wake_at: Option<u64>, pending: u32, lease: Lease) -> Summary {
    Summary {
        key: RunKey("tenant/session/run".to_string()),
        status,
        wake_at,
        lease,
        pending,
    }
}

#[test]
fn scan_line_wants_a_worker_exactly_when_its_next_step_is_a_workers() {
    for status in Status::ALL {
        let s = summary(status, None, 0, Lease::default());
        assert_eq!(wants_worker(&s, 1_000), status.needs_worker(), "{status:?}");
    }
    let waiting = [
        Status::Approval,
        Status::Callback,
        Status::Resource,
        Status::Person,
    ];
    for status in waiting {
        assert!(!wants_worker(
            &summary(status, Some(1_001), 0, Lease::default()),
            1_000
        ));
        assert!(wants_worker(
            &summary(status, Some(1_000), 0, Lease::default()),
            1_000
        ));
    }
    for status in [Status::Completed, Status::Failed] {
        assert!(wants_worker(
            &summary(status, None, 1, Lease::default()),
            1_000
        ));
    }
}

#[test]
fn status_needs_a_worker_exactly_when_the_kernel_names_a_workers_step() {
    for row in one_of_each() {
        let workers = matches!(
            row.run.next(),
            Next::Agent | Next::Result { .. } | Next::Query { .. }
        );
        let status = crate::store::status_of(&row.run);
        assert_eq!(status.needs_worker(), workers, "{status:?}");
    }
}

#[test]
fn scan_line_held_by_another_live_worker_is_not_actionable() {
    let other = Lease {
        owner: Some("worker-2".to_string()),
        until_ms: 2_000,
    };
    let s = summary(Status::Ready, None, 1, other.clone());
    assert!(!actionable(&s, 1_999, ME));
    assert!(actionable(&s, 2_000, ME));
    let mine = Lease {
        owner: Some(ME.to_string()),
        ..other
    };
    assert!(actionable(
        &summary(Status::Ready, None, 0, mine),
        1_000,
        ME
    ));
    let ended = summary(Status::Completed, None, 0, Lease::default());
    assert!(!actionable(&ended, 1_000, ME));
}

#[test]
fn scan_is_quiescent_only_when_no_line_wants_a_worker() {
    assert!(quiescent(&[], 1_000));
    let mut list = vec![
        summary(Status::Approval, Some(2_000), 0, Lease::default()),
        summary(Status::Person, None, 0, Lease::default()),
        summary(Status::Completed, None, 0, Lease::default()),
    ];
    assert!(quiescent(&list, 1_999));
    assert!(!quiescent(&list, 2_000), "the approval's deadline passed");
    list[2].pending = 1;
    assert!(!quiescent(&list, 1_000), "a request waits");
    list[2].pending = 0;
    // Held or not, a run whose next step is a worker's is not quiescent: its holder may die.
    let held = Lease {
        owner: Some("worker-2".to_string()),
        until_ms: u64::MAX,
    };
    list.push(summary(Status::InFlight, None, 0, held));
    assert!(!quiescent(&list, 1_000));
}
