//! The driving contract as an adapter meets it: a payments app's call behind an approval,
//! driven through the core against a store of its own, with the hostile moves a framework
//! and a careless user make (arguments changed before the resume, a late delivery, a new call
//! under an old id, a second answer, a lost compare-and-set, a process gone mid-call).

use resumable_audit::{Anchor, Key};

mod common;
use resumable_driver::book::{Book, HandOut, Kept, Outcome, ToolCall};
use resumable_driver::party::{self, Word};
use resumable_driver::plan::{self, Proposal, Request, Todo};
use resumable_driver::{observed, Core, Facts, Held, Staged};
use resumable_kernel::{Decision, Event, FailCause, Name, PhaseKind, RejectionKind, Time};

const KEY: [u8; 32] = [7; 32];

/// An adapter's store: one row (held run and book) and the audit log, written together with
/// compare-and-set on the revision and the log's end.
struct Store {
    held: Held,
    book: Book,
    lines: Vec<Vec<u8>>,
}

impl Store {
    fn open(core: &Core) -> Store {
        let header = common::header();
        let (held, line) = core.open(&header).unwrap();
        Store {
            held,
            book: Book::default(),
            lines: vec![line],
        }
    }

    /// Commits `staged` if the row is still the one it was staged on.
    fn commit(&mut self, on: &Held, staged: &Staged, kept: &Kept) -> bool {
        if !self.held.same_place(on) {
            return false;
        }
        self.book.keep(staged, kept);
        self.held = staged.after(on);
        self.lines.push(staged.line.clone());
        true
    }

    /// Stages `event` at `now` on the stored row, without committing it.
    fn stage(&self, core: &Core, now: u64, event: Event) -> Box<Staged> {
        (core.stage(&self.held, Time(now), event, &mut self.book.clone())).unwrap()
    }

    /// Stages `event` at `now` on the stored row and commits it.
    fn feed(&mut self, core: &Core, now: u64, event: Event, kept: &Kept) -> Box<Staged> {
        let on = self.held;
        let staged = self.stage(core, now, event);
        assert!(self.commit(&on, &staged, kept));
        staged
    }

    /// What to do now, at `now`, about `p`.
    fn plan(&self, now: u64, p: &Proposal) -> Todo {
        plan::plan(&self.held, &self.book, Time(now), p, FACTS)
    }

    /// Suspends the batch `turn` at t1 and returns alice's request for it.
    fn ask_batch(&mut self, core: &Core, turn: &[Proposal]) -> Request {
        let Todo::Feed(event, kept) =
            plan::plan_batch(&self.held, &self.book, Time(1), turn, FACTS)
        else {
            panic!("suspend the batch")
        };
        self.feed(core, 1, event, &kept);
        let Todo::Ask(request) = plan::plan_batch(&self.held, &self.book, Time(2), turn, FACTS)
        else {
            panic!("ask")
        };
        *request
    }

    /// The log's validation under the key and the anchor stored with the run.
    fn validates(&self) -> bool {
        let mut log = Vec::new();
        for line in &self.lines {
            log.extend_from_slice(line);
            log.push(b'\n');
        }
        let options = resumable_audit::Options {
            key: Some(Key::from_hex(&hex(&KEY)).unwrap()),
            anchor: Some(Anchor {
                records: self.held.anchor.records,
                mac: self.held.anchor.mac,
            }),
            ..resumable_audit::Options::default()
        };
        resumable_audit::validate(&log[..], &options).is_ok_and(|s| s.conforming())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn core() -> Core {
    Core::new(Some(Key::from_hex(&hex(&KEY)).unwrap()))
}

/// The agent's payment `call_id` of `amount` to `to`, put to alice.
fn payment(call_id: &str, to: &str, amount: u64) -> Proposal {
    common::payment(
        call_id,
        &format!("pay:{call_id}"),
        to,
        amount,
        Some("alice"),
    )
}

/// Alice's answer to `request`, approving or denying it, valid until t1000.
fn alice(request: &Request, approve: bool) -> party::Answer {
    party::approval(request, approve, Name::lit("alice"), Time(1_000)).unwrap()
}

/// A store whose run was asked at t1 to pay bob 50 (call-1) and waits on alice: the core, the
/// store, the proposal and her request.
fn asked() -> (Core, Store, Proposal, Request) {
    let core = core();
    let mut store = Store::open(&core);
    let p = payment("call-1", "bob", 50);
    let request = ask(&mut store, &core, 1, &p);
    (core, store, p, request)
}

const FACTS: Facts = Facts {
    resource_version: 7,
    permitted: true,
    within_budget: true,
};

/// Plans and feeds until the run waits on alice: returns her request.
fn ask(store: &mut Store, core: &Core, now: u64, p: &Proposal) -> Request {
    for _ in 0..4 {
        match store.plan(now, p) {
            Todo::Feed(event, kept) => {
                store.feed(core, now, event, &kept);
            }
            Todo::Ask(request) => return *request,
            other => panic!("expected a request, got {other:?}"),
        }
    }
    panic!("no request after four steps")
}

/// Feeds alice's approval of `request` at `now`; returns what the commit hands to the tool.
fn approve(
    store: &mut Store,
    core: &Core,
    now: u64,
    request: &Request,
) -> (Box<Staged>, Vec<ToolCall>) {
    let answer = alice(request, true);
    let staged = store.feed(
        core,
        now,
        answer.event(FACTS),
        &party::Answer::kept(request),
    );
    let calls = staged
        .dispatches()
        .map(|d| store.book.tool_call(d).unwrap())
        .collect();
    (staged, calls)
}

fn pay(store: &mut Store, core: &Core, now: u64, call: &ToolCall, receipt: &str) {
    let (event, kept) = Book::tool_result(call, receipt).unwrap();
    let staged = store.feed(core, now, event, &kept);
    assert!(staged.accepted().is_some(), "{:?}", staged.rejected());
}

/// The payment of [`asked`], approved at t2 and paid at t3 with `receipt`: the core, the store
/// and the proposal.
fn paid(receipt: &str) -> (Core, Store, Proposal) {
    let (core, mut store, p, request) = asked();
    let (_, calls) = approve(&mut store, &core, 2, &request);
    pay(&mut store, &core, 3, &calls[0], receipt);
    (core, store, p)
}

/// A store whose run put a batch to alice at t1, paying bob 50 (call-1) and carol 70
/// (call-2): the core, the store and her request.
fn asked_batch() -> (Core, Store, Request) {
    let core = core();
    let mut store = Store::open(&core);
    let turn = [payment("call-1", "bob", 50), payment("call-2", "carol", 70)];
    let request = store.ask_batch(&core, &turn);
    (core, store, request)
}

#[test]
fn the_tool_receives_the_arguments_the_approval_bound() {
    let (core, mut store, _, request) = asked();
    assert_eq!(request.calls[0].args, r#"{"amount":50,"to":"bob"}"#);
    let (_, calls) = approve(&mut store, &core, 2, &request);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].args, r#"{"amount":50,"to":"bob"}"#);
    assert_eq!(calls[0].args_digest, request.calls[0].args_digest);
    assert!(store.validates());
}

#[test]
fn arguments_changed_before_the_resume_are_refused_never_paid() {
    let (core, mut store, _, request) = asked();
    // The graph's state is changed before the resume: the node proposes 999 under the same id.
    let changed = payment("call-1", "bob", 999);
    match store.plan(2, &changed) {
        Todo::Changed { recorded, proposed } => {
            assert_eq!(recorded.args, request.calls[0].args_digest);
            assert_eq!(proposed.args, changed.call.args);
        }
        other => panic!("a changed call must be refused, got {other:?}"),
    }
    // Even an approval fed by an adapter that ignored that hands the tool 50, never 999.
    let (_, calls) = approve(&mut store, &core, 2, &request);
    assert_eq!(calls[0].args, r#"{"amount":50,"to":"bob"}"#);
}

#[test]
fn a_book_whose_arguments_differ_from_the_dispatch_hands_out_nothing() {
    let (core, mut store, _, request) = asked();
    // Someone rewrites the kept arguments in the store (the digest field too).
    let text = serde_json::to_string(&store.book).unwrap();
    let forged = text
        .replace(r#"\"amount\":50"#, r#"\"amount\":999"#)
        .replace(&request.calls[0].args_digest.to_string(), &"0".repeat(64));
    assert_ne!(text, forged);
    store.book = serde_json::from_str(&forged).unwrap();
    let answer = alice(&request, true);
    let staged = store.feed(&core, 2, answer.event(FACTS), &Kept::default());
    let d = staged
        .dispatches()
        .next()
        .expect("the kernel dispatches the approved call");
    match store.book.tool_call(d) {
        Err(HandOut::Mismatch { dispatched, .. }) => {
            assert_eq!(dispatched, request.calls[0].args_digest)
        }
        other => panic!("forged arguments must never be handed out, got {other:?}"),
    }
}

#[test]
fn an_answer_is_judged_at_the_drivers_time_not_the_time_it_claims() {
    let (core, store, _, request) = asked();
    assert_eq!(request.expires_at, Time(61));
    // The approver stamps her message in time; it is delivered at 500.
    let answer = alice(&request, true);
    let mut message = serde_json::to_value(answer).unwrap();
    message["at"] = serde_json::json!(2);
    let read: party::Answer = serde_json::from_value(message).unwrap();
    let on = store.held;
    let staged = core
        .stage(&on, Time(500), read.event(FACTS), &mut store.book.clone())
        .unwrap();
    assert_eq!(staged.input.at, Time(500));
    assert_eq!(
        staged.rejected().map(|r| r.kind()),
        Some(RejectionKind::Expired)
    );
    assert_eq!(staged.dispatches().count(), 0);
}

#[test]
fn once_the_deadline_passes_the_core_feeds_expire_and_the_run_ends() {
    let core = core();
    let mut store = Store::open(&core);
    let p = payment("call-1", "bob", 50);
    ask(&mut store, &core, 1, &p);
    assert_eq!(
        resumable_driver::clock::wake_at(&store.held.run),
        Some(Time(62))
    );
    assert!(matches!(store.plan(61, &p), Todo::Ask(_)));
    let Todo::Feed(event, kept) = store.plan(62, &p) else {
        panic!("expire is due")
    };
    assert_eq!(event, Event::Expire);
    store.feed(&core, 62, event, &kept);
    match store.plan(63, &p) {
        Todo::Ended { phase, cause } => {
            assert_eq!(phase, PhaseKind::Failed);
            assert!(matches!(cause, Some(FailCause::Expired { .. })));
        }
        other => panic!("an expired run ends, it is not asked again: {other:?}"),
    }
    assert!(store.validates());
}

#[test]
fn facts_are_the_drivers_so_a_moved_resource_is_noticed() {
    let (core, store, _, request) = asked();
    assert_eq!(request.checkpoint.resource_version, 7);
    let answer = alice(&request, true);
    // The resource moved to 8 since the suspension: the driver observes 8.
    let staged = store.stage(&core, 2, answer.event(observed(8)));
    assert_eq!(
        staged.rejected().map(|r| r.kind()),
        Some(RejectionKind::ResourceChanged)
    );
}

#[test]
fn a_new_payment_under_an_old_call_id_never_gets_the_old_receipt() {
    let (core, mut store, first) = paid(r#"{"receipt":"r-1"}"#);
    // The same call again (the node runs again): its own receipt, and the one answer it took.
    match store.plan(4, &first) {
        Todo::Done { outcomes, answers } => {
            assert_eq!(
                outcomes,
                vec![Outcome::Result {
                    result: r#"{"receipt":"r-1"}"#.into()
                }]
            );
            assert_eq!(answers, 1);
        }
        other => panic!("the recorded call finds its result, got {other:?}"),
    }
    // Another payee under the same call id: refused, not answered with r-1.
    let second = payment("call-1", "carol", 70);
    assert!(matches!(store.plan(5, &second), Todo::Changed { .. }));
    // Under a new call id it is a new call, put to alice on its own.
    let third = payment("call-2", "carol", 70);
    let request = ask(&mut store, &core, 6, &third);
    assert_eq!(request.calls[0].args, r#"{"amount":70,"to":"carol"}"#);
    assert!(store.validates());
}

#[test]
fn every_answer_fed_is_counted_refused_or_accepted() {
    let (core, mut store, p, request) = asked();
    // First an answer bound to another revision: refused, and counted.
    let mut stale = alice(&request, true);
    if let Decision::Approve(a) = &mut stale.decision {
        a.revision = resumable_kernel::Revision(0);
    }
    let staged = store.feed(&core, 2, stale.event(FACTS), &party::Answer::kept(&request));
    assert!(staged.rejected().is_some());
    let Todo::Ask(again) = store.plan(3, &p) else {
        panic!("still waiting")
    };
    assert_eq!(again.answers, 1);
    let (_, calls) = approve(&mut store, &core, 3, &again);
    pay(&mut store, &core, 4, &calls[0], r#""ok""#);
    let Todo::Done { answers, .. } = store.plan(5, &p) else {
        panic!("done")
    };
    assert_eq!(answers, 2);
    assert!(store.validates());
}

#[test]
fn a_lost_compare_and_set_is_staged_again_on_the_stored_run() {
    let (core, mut store, _, request) = asked();
    let answer = alice(&request, true);
    let kept = party::Answer::kept(&request);
    // Two workers feed alice's answer (her message was delivered twice) on the same row.
    let on = store.held;
    let a = core
        .stage(&on, Time(2), answer.event(FACTS), &mut store.book.clone())
        .unwrap();
    let b = core
        .stage(&on, Time(2), answer.event(FACTS), &mut store.book.clone())
        .unwrap();
    assert!(store.commit(&on, &a, &kept));
    assert!(
        !store.commit(&on, &b, &kept),
        "the second loses the compare-and-set"
    );
    // Staged again on the run as it now is, the duplicate gets the same answer: it won.
    let again = store.feed(&core, 3, answer.event(FACTS), &kept);
    assert_eq!(
        again.rejected().map(|r| r.kind()),
        Some(RejectionKind::AlreadyApplied)
    );
    assert_eq!(again.dispatches().count(), 0, "nothing is dispatched twice");
    assert!(store.validates());
}

#[test]
fn a_call_whose_process_died_in_flight_is_reconciled_never_dispatched_again() {
    let (core, mut store, p, request) = asked();
    let (_, calls) = approve(&mut store, &core, 2, &request);
    // The process dies after the dispatch was committed; the tool committed it.
    let Todo::Feed(event, kept) = store.plan(3, &p) else {
        panic!("recover")
    };
    assert_eq!(event, Event::Recover);
    store.feed(&core, 3, event, &kept);
    let Todo::Query(d) = store.plan(4, &p) else {
        panic!("query")
    };
    assert_eq!(d.tool_key, calls[0].tool_key);
    let (event, kept) =
        plan::reconcile(&store.held, &d, Ok(Some(r#"{"receipt":"r-1"}"#)), FACTS).unwrap();
    let staged = store.feed(&core, 4, event, &kept);
    assert_eq!(staged.dispatches().count(), 0);
    assert!(matches!(store.plan(5, &p), Todo::Done { .. }));
    assert!(store.validates());
}

#[test]
fn a_denial_ends_the_run_with_its_cause() {
    let (core, mut store, p, request) = asked();
    let answer = alice(&request, false);
    store.feed(
        &core,
        2,
        answer.event(FACTS),
        &party::Answer::kept(&request),
    );
    assert!(matches!(
        store.plan(3, &p),
        Todo::Ended {
            cause: Some(FailCause::Denied { .. }),
            ..
        }
    ));
}

#[test]
fn a_batch_runs_each_call_with_the_arguments_decided_for_it() {
    let (core, mut store, request) = asked_batch();
    assert_eq!(request.calls.len(), 2);
    let words: Vec<Word> = serde_json::from_str(
        r#"[{"type": "approve"},
            {"type": "edit", "edited_action": {"name": "send_payment",
             "args": {"to": "carol", "amount": 7}}}]"#,
    )
    .unwrap();
    let (answer, kept) = party::decide(&request, &words, Name::lit("alice"), Time(1_000)).unwrap();
    let staged = store.feed(&core, 3, answer.event(FACTS), &kept);
    let mut args: Vec<String> = staged
        .dispatches()
        .map(|d| store.book.tool_call(d).unwrap().args)
        .collect();
    args.sort();
    assert_eq!(
        args,
        vec![
            r#"{"amount":50,"to":"bob"}"#,
            r#"{"amount":7,"to":"carol"}"#
        ]
    );
    assert!(store.validates());
}

#[test]
fn an_edit_that_renames_the_tool_is_not_a_decision() {
    let (_, _, request) = asked_batch();
    let words: Vec<Word> = serde_json::from_str(
        r#"[{"type": "approve"},
            {"type": "edit", "edited_action": {"name": "refund", "args": {}}}]"#,
    )
    .unwrap();
    assert!(party::decide(&request, &words, Name::lit("alice"), Time(1_000)).is_err());
}

#[test]
fn time_never_runs_backwards_within_a_run() {
    let core = core();
    let mut store = Store::open(&core);
    ask(&mut store, &core, 40, &payment("call-1", "bob", 50));
    // A worker whose clock lags: its input is stamped at the run's last time, not refused.
    let staged = store.stage(
        &core,
        10,
        Event::Cancel {
            by: Name::lit("ops"),
        },
    );
    assert_eq!(staged.input.at, Time(40));
}

#[test]
fn a_prior_is_stated_from_the_ledger_whatever_the_event_claimed() {
    let (core, store, first) = paid(r#""r-1""#);
    // An event that claims a fresh history for a spent key: the ledger's prior is stated.
    let event = Event::Dispatch {
        call: payment("call-9", "bob", 50).call,
        prior: resumable_kernel::Prior::NONE,
        resource_version: Some(7),
    };
    let mut event = event;
    if let Event::Dispatch { call, .. } = &mut event {
        call.key = first.call.key; // the spent key, under a new call id
    }
    let staged = store.stage(&core, 4, event);
    let Event::Dispatch { prior, .. } = staged.input.event else {
        panic!()
    };
    assert!(prior.key.is_some_and(|k| k.committed));
    assert!(staged.rejected().is_some());
}

#[test]
fn a_book_reads_back_what_it_wrote_and_refuses_a_field_it_does_not_have() {
    let (core, mut store, _, request) = asked();
    approve(&mut store, &core, 2, &request);
    let text = serde_json::to_string(&store.book).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut fields: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    fields.sort();
    assert_eq!(fields, ["call_ids", "calls", "keys"]);
    assert_eq!(serde_json::from_str::<Book>(&text).unwrap(), store.book);
    let extra = text.replacen('{', r#"{"spent_keys": [],"#, 1);
    assert!(serde_json::from_str::<Book>(&extra).is_err());
}

#[test]
fn a_message_is_read_for_its_decision_alone_and_what_is_none_is_no_answer() {
    let (_, _, _, request) = asked();
    let answer = alice(&request, true);
    let mut message = serde_json::to_value(answer).unwrap();
    message["at"] = serde_json::json!(2);
    message["facts"] = serde_json::json!({"resource_version": 8});
    let text = message.to_string();
    assert_eq!(party::Answer::read(&text).unwrap(), answer);
    assert_eq!(resumable_driver::forms::is_answer(&text).unwrap(), "true");
    for not_one in [
        r#""notify the payee?""#,
        "true",
        r#"{"decision": "approve"}"#,
    ] {
        assert!(party::Answer::read(not_one).is_err(), "{not_one}");
        assert_eq!(
            resumable_driver::forms::is_answer(not_one).unwrap(),
            "false"
        );
    }
}
