//! A compacted book ([`Book::compact`]) drops the settled calls' arguments and outcomes and
//! keeps the history index whole: every reuse the kernel refuses on the full book (a call id
//! again, a committed key under a new id, a key with other arguments) it refuses on the
//! compacted one, by the same name; a call still waiting keeps its record and is decided as
//! before.

mod common;
use resumable_driver::book::{Book, Outcome};
use resumable_driver::plan::{self, Proposal, Todo};
use resumable_driver::{observed, Core, Held};
use resumable_kernel::{PhaseKind, RejectionKind, Time};

/// One run's store: the held run and its book.
struct Store {
    core: Core,
    held: Held,
    book: Book,
    now: u64,
}

impl Store {
    fn open() -> Store {
        let core = Core::new(None);
        let (held, _line) = core.open(&common::header()).unwrap();
        Store {
            core,
            held,
            book: Book::default(),
            now: 0,
        }
    }

    /// Plans `p` and feeds what the plan says until it is done or refused: the todo it
    /// stopped at, and the kind of the last rejection, if the kernel refused an input.
    fn drive(&mut self, p: &Proposal) -> (Todo, Option<RejectionKind>) {
        for _ in 0..10 {
            self.now += 1;
            let todo = plan::plan(&self.held, &self.book, Time(self.now), p, observed(0));
            let Todo::Feed(event, kept) = todo else {
                return (todo, None);
            };
            let staged = self
                .core
                .stage(&self.held, Time(self.now), event, &mut self.book.clone())
                .unwrap();
            self.book.keep(&staged, &kept);
            self.held = staged.after(&self.held);
            if let Some(r) = staged.rejected() {
                let todo = plan::plan(&self.held, &self.book, Time(self.now), p, observed(0));
                return (todo, Some(r.kind()));
            }
            let calls: Vec<_> = staged
                .dispatches()
                .map(|d| self.book.tool_call(d).unwrap())
                .collect();
            for call in calls {
                self.now += 1;
                let (event, kept) = Book::tool_result(&call, r#"{"paid":true}"#).unwrap();
                let staged = self
                    .core
                    .stage(&self.held, Time(self.now), event, &mut self.book.clone())
                    .unwrap();
                assert!(staged.accepted().is_some(), "{:?}", staged.result);
                self.book.keep(&staged, &kept);
                self.held = staged.after(&self.held);
            }
        }
        panic!("the proposal did not settle");
    }

    fn compact(&mut self) -> usize {
        self.book.compact(&self.held.run)
    }
}

fn payment(call_id: &str, key: &str, amount: u64, approver: Option<&str>) -> Proposal {
    common::payment(call_id, key, "bob", amount, approver)
}

/// A store whose run made `n` ungated calls, each settled with a result, then compacted.
fn settled(n: u32, compacted: bool) -> Store {
    let mut store = Store::open();
    for i in 0..n {
        let (todo, refused) = store.drive(&payment(
            &format!("call-{i}"),
            &format!("k-{i}"),
            u64::from(i),
            None,
        ));
        assert!(matches!(todo, Todo::Done { .. }), "{todo:?}");
        assert_eq!(refused, None);
    }
    if compacted {
        store.compact();
    }
    store
}

/// What the kernel says of `p` on a run of three settled calls, with the book compacted or
/// not.
fn verdict_of(p: &Proposal, compacted: bool) -> (Todo, Option<RejectionKind>) {
    settled(3, compacted).drive(p)
}

#[test]
fn compacting_drops_the_settled_records_and_keeps_the_index() {
    let mut store = settled(5, false);
    let full = serde_json::to_string(&store.book).unwrap().len();
    assert_eq!((store.book.len(), store.book.bound()), (5, 5));
    // The last call is the run's last recorded result: its record stays.
    assert_eq!(store.compact(), 4);
    assert_eq!((store.book.len(), store.book.bound()), (1, 5));
    let text = serde_json::to_string(&store.book).unwrap();
    assert!(text.len() < full, "{} bytes, {full} before", text.len());
    let back: Book = serde_json::from_str(&text).unwrap();
    assert_eq!(back, store.book);
}

#[test]
fn a_settled_call_proposed_again_after_compaction_is_refused_as_a_reused_call_id() {
    let again = payment("call-1", "k-1", 1, None);
    // On the full book the same call finds its recorded outcome.
    let (todo, refused) = verdict_of(&again, false);
    let Todo::Done { outcomes, .. } = todo else {
        panic!("{todo:?}")
    };
    assert!(matches!(&outcomes[..], [Outcome::Result { .. }]));
    assert_eq!(refused, None);
    // Compacted, its outcome is gone and its id is not: the kernel refuses it by name.
    let (_, refused) = verdict_of(&again, true);
    assert_eq!(refused, Some(RejectionKind::CallIdReused));
}

#[test]
fn a_changed_call_under_a_settled_id_after_compaction_is_refused_as_a_reused_call_id() {
    let changed = payment("call-1", "k-other", 999, None);
    let (todo, _) = verdict_of(&changed, false);
    assert!(matches!(todo, Todo::Changed { .. }), "{todo:?}");
    let (_, refused) = verdict_of(&changed, true);
    assert_eq!(refused, Some(RejectionKind::CallIdReused));
}

#[test]
fn a_committed_key_under_a_new_call_id_after_compaction_is_refused_as_on_the_full_book() {
    for (p, what) in [
        (payment("call-new", "k-1", 1, None), "the same arguments"),
        (payment("call-new", "k-1", 999, None), "other arguments"),
    ] {
        let (_, full) = verdict_of(&p, false);
        let (_, compacted) = verdict_of(&p, true);
        assert!(
            matches!(
                full,
                Some(RejectionKind::KeyCommitted | RejectionKind::KeyConflict)
            ),
            "{what}: {full:?}"
        );
        assert_eq!(compacted, full, "{what}");
    }
}

#[test]
fn a_new_call_after_compaction_runs_as_on_the_full_book() {
    let (todo, refused) = verdict_of(&payment("call-new", "k-new", 7, None), true);
    assert!(matches!(todo, Todo::Done { .. }), "{todo:?}");
    assert_eq!(refused, None);
}

#[test]
fn a_call_waiting_for_its_approval_keeps_its_record_through_compaction() {
    let mut store = settled(3, false);
    let gated = payment("call-gated", "k-gated", 42, Some("alice"));
    let (todo, refused) = store.drive(&gated);
    assert_eq!(refused, None);
    assert!(matches!(todo, Todo::Ask(_)), "{todo:?}");
    // Kept: the waiting call, and the run's last recorded result.
    assert_eq!(store.compact(), 2);
    assert_eq!((store.book.len(), store.book.bound()), (2, 4));
    assert!(store.book.record(&gated.call.call_id).is_some());
    // The approver is shown the kept arguments, and the call is decided as before.
    store.now += 1;
    let todo = plan::plan(
        &store.held,
        &store.book,
        Time(store.now),
        &gated,
        observed(0),
    );
    let Todo::Ask(request) = todo else {
        panic!("{todo:?}")
    };
    assert_eq!(request.calls[0].args, gated.args.canonical);
    assert_eq!(store.held.run.phase().kind(), PhaseKind::Suspended);
}
