//! A status query's answer is about one dispatch: staged again on a run that moved on to
//! another call's unknown outcome (a lost compare-and-set, another worker that reconciled
//! first), it is refused, never recorded as the other call's result.

use resumable_driver::book::Book;
use resumable_driver::{forms, observed, plan, Core};
use resumable_kernel::{Event, Reason, Time};

mod common;
use common::header;

fn proposal(id: &str, amount: u64) -> plan::Proposal {
    common::payment(id, &format!("pay-1:{id}"), "bob", amount, None)
}

#[test]
fn an_answer_about_one_dispatch_is_never_recorded_for_another() {
    let core = Core::new(None);
    let (mut held, _) = core.open(&header()).expect("open");
    let mut book = Book::default();
    let step = |held: &mut resumable_driver::Held, book: &mut Book, at, event, kept| {
        let staged = core.stage(held, Time(at), event, book).expect("stage");
        book.keep(&staged, &kept);
        assert!(staged.rejected().is_none(), "{:?}", staged.rejected());
        *held = staged.after(held);
    };
    // Call 1 dispatched, its worker gone: recovered, its outcome unknown.
    let one = [proposal("call-1", 50)];
    let plan::Todo::Feed(e, k) = plan::plan(&held, &book, Time(1), &one[0], observed(0)) else {
        panic!("dispatch")
    };
    step(&mut held, &mut book, 1, e, k);
    step(&mut held, &mut book, 2, Event::Recover, Default::default());
    let plan::Todo::Query(first) = plan::plan(&held, &book, Time(3), &one[0], observed(0)) else {
        panic!("query")
    };
    assert!(plan::waits_on(&held, &first));
    // Another worker reconciles it (committed) and the run goes on to call 2, also unknown.
    let (e, k) =
        plan::reconcile(&held, &first, Ok(Some(r#""receipt-1""#)), observed(0)).expect("reconcile");
    step(&mut held, &mut book, 3, e, k);
    let two = proposal("call-2", 70);
    let plan::Todo::Feed(e, k) = plan::plan(&held, &book, Time(4), &two, observed(0)) else {
        panic!("dispatch 2")
    };
    step(&mut held, &mut book, 4, e, k);
    step(&mut held, &mut book, 5, Event::Recover, Default::default());
    assert!(matches!(
        held.run.suspension().map(|s| s.reason),
        Some(Reason::OutcomeUnknown { .. })
    ));
    // The first worker's answer about call 1, staged again on the run as it now is: refused.
    assert!(!plan::waits_on(&held, &first));
    assert!(plan::reconcile(&held, &first, Ok(Some(r#""receipt-1""#)), observed(0)).is_err());
    let held_json = serde_json::to_string(&held).expect("held");
    let book_json = serde_json::to_string(&book).expect("book");
    let d_json = serde_json::to_string(&first).expect("dispatch");
    let out = forms::reconcile(
        &held_json,
        &book_json,
        6,
        &d_json,
        Some(r#""receipt-1""#),
        r#"{"resource_version":0,"permitted":true,"within_budget":true}"#,
        None,
    )
    .expect("a value");
    assert!(out.contains(r#""verdict":"not_waiting""#), "{out}");
}
