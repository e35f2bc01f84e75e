//! `plan_turn`: one call of a turn a framework reviews is put to its approver as a batch of
//! one, so that it may be edited, rejected or answered; `plan_batch` puts it alone.

use resumable_driver::book::Book;
use resumable_driver::{observed, party, plan, Core};
use resumable_kernel::{Event, Name, Reason, ReasonKind, Time, Wait};

mod common;
use common::header;

fn proposal() -> plan::Proposal {
    common::payment("call-1", "pay-1:call-1", "bob", 50, Some("alice"))
}

#[test]
fn one_call_of_a_reviewed_turn_is_a_batch_of_one_and_may_be_edited() {
    let core = Core::new(None);
    let (held, _) = core.open(&header()).expect("open");
    let mut book = Book::default();
    let turn = [proposal()];
    // plan_batch puts a lone call to its approver alone.
    let plan::Todo::Feed(Event::Suspend { wait, .. }, _) =
        plan::plan_batch(&held, &book, Time(1), &turn, observed(7))
    else {
        panic!("suspend")
    };
    assert!(matches!(wait, Wait::Approval { .. }));
    // plan_turn as a batch of one.
    let plan::Todo::Feed(event, kept) = plan::plan_turn(&held, &book, Time(1), &turn, observed(7))
    else {
        panic!("suspend")
    };
    assert!(matches!(
        event,
        Event::Suspend {
            wait: Wait::Batch { .. },
            ..
        }
    ));
    let staged = core.stage(&held, Time(1), event, &mut book).expect("stage");
    book.keep(&staged, &kept);
    let held = staged.after(&held);
    assert!(matches!(
        held.run.suspension().map(|s| s.reason.kind()),
        Some(ReasonKind::PendingBatch)
    ));
    let plan::Todo::Ask(request) = plan::plan_turn(&held, &book, Time(2), &turn, observed(7))
    else {
        panic!("ask")
    };
    // The approver edits the amount: the tool receives the edited arguments.
    let words: Vec<party::Word> =
        serde_json::from_str(r#"[{"type":"edit","edited_action":{"name":"send_payment","args":{"to":"bob","amount":40}}}]"#)
            .expect("words");
    let (answer, kept) =
        party::decide(&request, &words, Name::lit("alice"), Time(50)).expect("decide");
    let staged = core
        .stage(&held, Time(3), answer.event(observed(7)), &mut book)
        .expect("stage");
    book.keep(&staged, &kept);
    assert!(staged.rejected().is_none(), "{:?}", staged.rejected());
    let dispatch = staged.dispatches().next().copied().expect("dispatched");
    let call = book.tool_call(&dispatch).expect("handed out");
    assert_eq!(call.args, r#"{"amount":40,"to":"bob"}"#);
    assert!(!matches!(
        staged.after(&held).run.suspension().map(|s| s.reason),
        Some(Reason::PendingBatch)
    ));
}
