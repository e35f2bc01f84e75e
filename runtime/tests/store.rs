//! The store contract, on every backend: a run is created once with its log's header; one
//! commit moves the run, appends its record, keeps its checkpoint and lease and answers the
//! request it consumed, all of it or nothing; the compare-and-set refuses a writer that
//! started from another revision or log position; a request is answered once; the scan lists
//! what workers must see. Each check runs on the in-memory store, on SQLite (a fresh file),
//! and on PostgreSQL (a fresh schema) when RESUMABLE_TEST_POSTGRES names a server, skipped
//! loudly otherwise. Each check opens two connections to one store, as two workers would.

use resumable_driver::Core;
use resumable_kernel::{
    Call, Checkpoint, Digest, Event, Fingerprint, HistoryEntry, IdempotencyKey, KeyUse, Name,
    Prior, Rejection, Run,
};
use resumable_runtime::driver::create_run;
use resumable_runtime::lifecycle::{self, Tail};
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::memory::MemoryStore;
use resumable_runtime::store::postgres::{test_address, PgStore};
use resumable_runtime::store::sqlite::SqliteStore;
use resumable_runtime::store::{
    status_of, wake_at, Answer, Answered, Cas, Commit, Consumed, Expect, Lease, Request, Row,
    RunKey, Status, Store,
};

#[path = "support/postgres.rs"]
mod sessions;

use sessions::{named, terminate_sessions};

type Open<'a> = &'a mut dyn FnMut() -> Box<dyn Store>;

fn sqlite_path(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("resumable-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("runs.db").to_str().unwrap().to_string()
}

/// Three tests for a check: on the memory store, on SQLite, on PostgreSQL (its schema
/// named by `$tag`, short enough for PostgreSQL's 63-byte names).
macro_rules! on_every_store {
    ($check:ident, $tag:literal) => {
        mod $check {
            use super::*;

            #[test]
            fn memory() {
                let store = MemoryStore::new();
                super::$check(&mut || Box::new(store.clone()));
            }

            #[test]
            fn sqlite() {
                let path = sqlite_path($tag);
                super::$check(&mut || Box::new(SqliteStore::open(&path).unwrap()));
            }

            #[test]
            fn postgres() {
                let Some(address) = test_address($tag) else {
                    return;
                };
                super::$check(&mut || Box::new(PgStore::open(&address).unwrap()));
                PgStore::drop_schema(&address).unwrap();
            }
        }
    };
}

fn new_run(store: &mut dyn Store, program: Program, name: &str) -> RunKey {
    create_run(store, program, name, 3, &Timing::default(), None)
        .unwrap()
        .expect("a new run")
}

/// Two connections to one store, as two workers hold them, and a new run of `program` named
/// `name` made through the first.
fn two_on_a_run(
    open: Open<'_>,
    program: Program,
    name: &str,
) -> (Box<dyn Store>, Box<dyn Store>, RunKey) {
    let (mut a, b) = (open(), open());
    let key = new_run(a.as_mut(), program, name);
    (a, b, key)
}

/// [`two_on_a_run`] with the seed's run `run-1`, and its program's first step decided through
/// the first connection (not committed).
fn two_and_a_step(open: Open<'_>) -> (Box<dyn Store>, Box<dyn Store>, RunKey, Step) {
    let (mut a, b, key) = two_on_a_run(open, Program::Seed, "run-1");
    let step = program_step(a.as_mut(), &key);
    (a, b, key, step)
}

/// A step decided on the run as stored, as the driver decides it: the row it started from,
/// the kernel's answer and the audit record, ready to commit.
struct Step {
    row: Row,
    next: Run,
    checkpoint: Option<Checkpoint>,
    accepted: bool,
    /// The kernel's answer, as a request that carried the input is answered.
    answer: Answer,
    /// What the step adds to the run's call history.
    history: Vec<HistoryEntry>,
    line: Vec<u8>,
    tail: Tail,
}

impl Step {
    fn commit<'a>(&'a self, lease: &'a Lease, consumed: Option<Consumed>) -> Commit<'a> {
        Commit {
            key: &self.row.key,
            expect: Expect::of(&self.row),
            run: &self.next,
            tail: self.tail,
            line: &self.line,
            checkpoint: self.checkpoint.as_ref(),
            pc: self.row.pc + u32::from(self.accepted),
            lease,
            consumed,
            history: &self.history,
        }
    }
}

/// Loads `key` and steps it with `event`, one time unit after its last input; a call it binds
/// states what the store's history holds of it, as the driver does.
fn decide(store: &mut dyn Store, key: &RunKey, event: Event) -> Step {
    let row = store.load(key).unwrap().expect("the run exists");
    let at = row.run.updated_at().0 + 1;
    let staged = lifecycle::stage(&Core::default(), store, &row, at, event).unwrap();
    let tail = lifecycle::tail_after(&staged);
    let (result, line) = (staged.result, staged.line);
    let (next, checkpoint, answer) = match &result {
        Ok(t) => (
            t.next,
            t.effects.checkpoint().copied(),
            Answer::Accepted(t.next.revision()),
        ),
        Err(r) => (row.run, row.checkpoint, Answer::Rejected(*r)),
    };
    Step {
        row,
        next,
        checkpoint,
        accepted: result.is_ok(),
        answer,
        history: result
            .map(|t| t.effects.histories().copied().collect())
            .unwrap_or_default(),
        line,
        tail,
    }
}

/// The program's own next step on `key`, decided.
fn program_step(store: &mut dyn Store, key: &RunKey) -> Step {
    let row = store.load(key).unwrap().unwrap();
    let program = Program::parse(&row.program).unwrap();
    let at = row.run.updated_at().0 + 1;
    let event = program.step(row.pc, at, 0, &Timing::default()).unwrap();
    decide(store, key, event)
}

fn cancel() -> Event {
    Event::Cancel {
        by: Name::lit("ops"),
    }
}

fn log_bytes(store: &mut dyn Store, key: &RunKey) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in store.log(key).unwrap() {
        bytes.extend_from_slice(&line);
        bytes.push(b'\n');
    }
    bytes
}

fn a_run_is_created_once_with_its_header(open: Open<'_>) {
    let (_a, mut b, key) = two_on_a_run(open, Program::Seed, "run-1");
    assert_eq!(
        create_run(
            b.as_mut(),
            Program::Seed,
            "run-1",
            0,
            &Timing::default(),
            None
        )
        .unwrap(),
        None,
        "the second create of one key is refused"
    );
    let row = b.load(&key).unwrap().unwrap();
    assert_eq!((row.run.revision().0, row.tail.seq, row.pc), (0, 0, 0));
    assert_eq!((row.program.as_str(), row.resource_version), ("seed", 3));
    assert_eq!((row.checkpoint, row.lease), (None, Lease::default()));
    let log = b.log(&key).unwrap();
    assert_eq!(log.len(), 1, "the header alone");
    assert!(
        log[0].starts_with(b"{"),
        "{:?}",
        String::from_utf8_lossy(&log[0])
    );
    lifecycle::validate_log(&log_bytes(b.as_mut(), &key), row.tail, None).unwrap();
    let nobody = RunKey("tenant-a/session-1/nobody".to_string());
    assert!(b.load(&nobody).unwrap().is_none());
    assert!(b.log(&nobody).unwrap().is_empty());
}
on_every_store!(a_run_is_created_once_with_its_header, "create");

fn one_commit_moves_the_run_with_its_record_checkpoint_position_and_lease(open: Open<'_>) {
    let (mut a, mut b, key, step) = two_and_a_step(open);
    let lease = Lease {
        owner: Some("worker-1".to_string()),
        until_ms: 1_700_000_000_000,
    };
    assert_eq!(a.commit(&step.commit(&lease, None)).unwrap(), Cas::Done);
    // Seen through the other connection, all of it.
    let row = b.load(&key).unwrap().unwrap();
    assert_eq!(row.run, step.next);
    assert_eq!((row.run.revision().0, row.tail, row.pc), (1, step.tail, 1));
    assert_eq!(row.checkpoint, step.checkpoint);
    assert!(row.checkpoint.is_some(), "the suspension's checkpoint");
    assert_eq!(row.lease, lease);
    assert_eq!(b.log(&key).unwrap()[1], step.line);
    lifecycle::validate_log(&log_bytes(b.as_mut(), &key), row.tail, None).unwrap();
    // What the scan indexes is the kernel's: the status of Run::next, the wake-up of
    // Run::deadline.
    let line = &b.scan(false).unwrap()[0];
    assert_eq!(line.status, Status::Approval);
    assert_eq!(line.status, status_of(&step.next));
    assert_eq!(line.wake_at, wake_at(&step.next));
    assert!(line.wake_at.is_some());
    assert_eq!(line.lease, lease);
}
on_every_store!(
    one_commit_moves_the_run_with_its_record_checkpoint_position_and_lease,
    "commit"
);

fn a_commit_from_another_revision_or_log_position_writes_nothing(open: Open<'_>) {
    let (_a, mut b, key, step) = two_and_a_step(open);
    let lease = Lease::default();
    let right = step.commit(&lease, None);
    for expect in [
        Expect {
            seq: right.expect.seq + 1,
            ..right.expect
        },
        Expect {
            revision: resumable_kernel::Revision(right.expect.revision.0 + 1),
            ..right.expect
        },
    ] {
        let wrong = Commit {
            expect,
            ..right.clone()
        };
        assert_eq!(b.commit(&wrong).unwrap(), Cas::Conflict, "{expect:?}");
        assert_eq!(b.log(&key).unwrap().len(), 1, "nothing appended");
        assert_eq!(b.load(&key).unwrap().unwrap(), step.row, "nothing moved");
    }
    assert_eq!(b.commit(&right).unwrap(), Cas::Done);
}
on_every_store!(
    a_commit_from_another_revision_or_log_position_writes_nothing,
    "stale"
);

fn of_two_writers_from_one_row_one_wins(open: Open<'_>) {
    let (mut a, mut b, key, first) = two_and_a_step(open);
    let second = program_step(b.as_mut(), &key);
    let lease = Lease::default();
    assert_eq!(a.commit(&first.commit(&lease, None)).unwrap(), Cas::Done);
    assert_eq!(
        b.commit(&second.commit(&lease, None)).unwrap(),
        Cas::Conflict
    );
    assert_eq!(b.log(&key).unwrap().len(), 2, "one record, the winner's");
}
on_every_store!(of_two_writers_from_one_row_one_wins, "race");

fn a_refusal_is_recorded_without_moving_the_revision_and_moves_the_log(open: Open<'_>) {
    let (mut a, mut b, key) = two_on_a_run(open, Program::Seed, "run-1");
    let lease = Lease::default();
    let suspend = program_step(a.as_mut(), &key);
    assert_eq!(a.commit(&suspend.commit(&lease, None)).unwrap(), Cas::Done);
    // Expire before the suspension's expiry: refused (EXP-1), and recorded (REJ-1).
    let early = decide(a.as_mut(), &key, Event::Expire);
    assert!(!early.accepted);
    // A second refusal decided from the same row, by another worker.
    let again = decide(b.as_mut(), &key, Event::Expire);
    assert_eq!(a.commit(&early.commit(&lease, None)).unwrap(), Cas::Done);
    let row = b.load(&key).unwrap().unwrap();
    assert_eq!((row.run.revision().0, row.tail.seq), (1, 2));
    assert_eq!(row.checkpoint, suspend.checkpoint, "the checkpoint stays");
    // Same revision, but the log moved: the other worker's record would fork the chain.
    assert_eq!(
        b.commit(&again.commit(&lease, None)).unwrap(),
        Cas::Conflict
    );
    let summary = lifecycle::validate_log(&log_bytes(b.as_mut(), &key), row.tail, None).unwrap();
    assert_eq!((summary.accepted, summary.rejected), (1, 1));
}
on_every_store!(
    a_refusal_is_recorded_without_moving_the_revision_and_moves_the_log,
    "refused"
);

fn requests_wait_in_order_until_one_commit_answers_each_once(open: Open<'_>) {
    let (mut a, mut b, key) = two_on_a_run(open, Program::Seed, "run-1");
    let other = new_run(a.as_mut(), Program::Order, "order-1");
    let request = Request::Cancel {
        by: Name::lit("ops"),
    };
    let first = a.submit(&key, "ops", 5, &request).unwrap();
    let second = b.submit(&key, "ops-2", 6, &request).unwrap();
    let elsewhere = a.submit(&other, "ops", 7, &request).unwrap();
    assert!(
        first < second && second < elsewhere,
        "{first} {second} {elsewhere}"
    );
    let waiting = b.inbox(&key, true).unwrap();
    let seen: Vec<_> = waiting
        .iter()
        .map(|r| (r.id, r.party.as_str(), r.submitted_ms, r.request, r.answer))
        .collect();
    assert_eq!(
        seen,
        [
            (first, "ops", 5, request, None),
            (second, "ops-2", 6, request, None)
        ]
    );
    let pending: Vec<_> = b.scan(false).unwrap().iter().map(|s| s.pending).collect();
    assert_eq!(
        pending,
        [2, 1],
        "ordered by key: tenant-a's run, then tenant-b's order"
    );
    // The cancel is fed and answered in the commit that records it.
    let step = decide(a.as_mut(), &key, cancel());
    let consumed = Consumed {
        request: first,
        answer: Answer::Accepted(step.next.revision()),
    };
    let lease = Lease::default();
    assert_eq!(
        a.commit(&step.commit(&lease, Some(consumed))).unwrap(),
        Cas::Done
    );
    let all = b.inbox(&key, false).unwrap();
    assert_eq!(
        all[0].answer,
        Some(Answered {
            answer: consumed.answer,
            seq: step.tail.seq
        }),
        "the answer names the record that carries it"
    );
    assert_eq!(all[1].answer, None);
    let left: Vec<u64> = b.inbox(&key, true).unwrap().iter().map(|r| r.id).collect();
    assert_eq!(left, [second]);
    // The same request again, from the run as it now is: answered already, so the whole
    // commit is refused, its run and its record too.
    let late = decide(b.as_mut(), &key, cancel());
    assert!(!late.accepted, "the run has ended");
    let before = b.load(&key).unwrap().unwrap();
    let twice = Consumed {
        request: first,
        answer: late.answer,
    };
    assert_eq!(
        b.commit(&late.commit(&lease, Some(twice))).unwrap(),
        Cas::Conflict
    );
    assert_eq!(b.load(&key).unwrap().unwrap(), before);
    assert_eq!(b.log(&key).unwrap().len(), 2);
    assert_eq!(b.inbox(&key, false).unwrap()[0].answer, all[0].answer);
}
on_every_store!(
    requests_wait_in_order_until_one_commit_answers_each_once,
    "inbox"
);

fn a_commit_answering_a_request_that_does_not_exist_writes_nothing(open: Open<'_>) {
    let (mut a, mut b, key) = two_on_a_run(open, Program::Seed, "run-1");
    let step = decide(a.as_mut(), &key, cancel());
    let consumed = Consumed {
        request: 4_000,
        answer: Answer::Accepted(step.next.revision()),
    };
    let lease = Lease::default();
    assert_eq!(
        a.commit(&step.commit(&lease, Some(consumed))).unwrap(),
        Cas::Conflict
    );
    // The run's move and its record were rolled back with it.
    assert_eq!(b.load(&key).unwrap().unwrap(), step.row);
    assert_eq!(b.log(&key).unwrap().len(), 1);
}
on_every_store!(
    a_commit_answering_a_request_that_does_not_exist_writes_nothing,
    "nosuch"
);

fn the_scan_lists_runs_not_ended_or_with_requests_waiting_ordered_by_key(open: Open<'_>) {
    let (mut a, mut b) = (open(), open());
    let lease = Lease::default();
    let ended = new_run(a.as_mut(), Program::Seed, "run-c");
    let waiting = new_run(a.as_mut(), Program::Seed, "run-a");
    let ready = new_run(a.as_mut(), Program::Seed, "run-b");
    let cancelled = decide(a.as_mut(), &ended, cancel());
    assert_eq!(
        a.commit(&cancelled.commit(&lease, None)).unwrap(),
        Cas::Done
    );
    let suspend = program_step(a.as_mut(), &waiting);
    assert_eq!(a.commit(&suspend.commit(&lease, None)).unwrap(), Cas::Done);
    let listed: Vec<(String, Status, bool)> = b
        .scan(false)
        .unwrap()
        .into_iter()
        .map(|s| (s.key.0, s.status, s.wake_at.is_some()))
        .collect();
    assert_eq!(
        listed,
        [
            (waiting.0.clone(), Status::Approval, true),
            (ready.0.clone(), Status::Ready, false),
        ]
    );
    let all: Vec<String> = b.scan(true).unwrap().into_iter().map(|s| s.key.0).collect();
    assert_eq!(all, [waiting.0, ready.0, ended.0.clone()]);
    // An ended run with a request waiting is listed: the request must be answered.
    let request = Request::Cancel {
        by: Name::lit("ops"),
    };
    b.submit(&ended, "ops", 0, &request).unwrap();
    let with_request = b.scan(false).unwrap();
    let line = with_request.iter().find(|s| s.key == ended).unwrap();
    assert_eq!((line.status, line.pending), (Status::Failed, 1));
}
on_every_store!(
    the_scan_lists_runs_not_ended_or_with_requests_waiting_ordered_by_key,
    "scan"
);

fn the_stored_anchor_catches_a_log_cut_short_or_edited(open: Open<'_>) {
    let mut a = open();
    let key = new_run(a.as_mut(), Program::Seed, "run-1");
    let step = program_step(a.as_mut(), &key);
    assert_eq!(
        a.commit(&step.commit(&Lease::default(), None)).unwrap(),
        Cas::Done
    );
    let row = a.load(&key).unwrap().unwrap();
    let lines = a.log(&key).unwrap();
    let cut = [lines[0].clone(), b"\n".to_vec()].concat();
    assert!(lifecycle::validate_log(&cut, row.tail, None).is_err());
    let whole = log_bytes(a.as_mut(), &key);
    let edited = String::from_utf8(whole.clone())
        .unwrap()
        .replacen("\"at\":", "\"at\": ", 1);
    assert!(lifecycle::validate_log(&whole, row.tail, None).is_ok());
    assert!(lifecycle::validate_log(edited.as_bytes(), row.tail, None).is_err());
}
on_every_store!(
    the_stored_anchor_catches_a_log_cut_short_or_edited,
    "anchor"
);

fn a_whole_lifecycle_reads_back_the_same_through_every_commit(open: Open<'_>) {
    let (mut a, mut b, key) = two_on_a_run(open, Program::Order, "order-1");
    let lease = Lease {
        owner: Some("worker-1".to_string()),
        until_ms: 5,
    };
    // The charge is dispatched, answered, and the program goes on to wait for its callback:
    // each commit reads back exactly as written, through the other connection.
    let charge = program_step(a.as_mut(), &key);
    assert_eq!(a.commit(&charge.commit(&lease, None)).unwrap(), Cas::Done);
    assert_eq!(b.load(&key).unwrap().unwrap().run, charge.next);
    let answered = decide(
        b.as_mut(),
        &key,
        Event::ToolResult {
            call_id: Name::lit("charge-1"),
            attempt: 0,
            result: Digest::of(b"charged"),
        },
    );
    assert!(answered.accepted);
    let answered_commit = Commit {
        pc: answered.row.pc, // a tool's answer is not the program's own step
        ..answered.commit(&lease, None)
    };
    assert_eq!(b.commit(&answered_commit).unwrap(), Cas::Done);
    let waits = program_step(a.as_mut(), &key);
    assert_eq!(a.commit(&waits.commit(&lease, None)).unwrap(), Cas::Done);
    let row = b.load(&key).unwrap().unwrap();
    assert_eq!(row.run, waits.next);
    assert_eq!((row.pc, row.tail.seq), (2, 3));
    assert_eq!(status_of(&row.run), Status::Callback);
    let summary = lifecycle::validate_log(&log_bytes(b.as_mut(), &key), row.tail, None).unwrap();
    assert_eq!((summary.dispatches, summary.commits), (1, 1));
}
on_every_store!(
    a_whole_lifecycle_reads_back_the_same_through_every_commit,
    "whole"
);

/// The order's first call, as its program proposes it.
fn charge() -> Call {
    let Some(Event::Dispatch { call, .. }) = Program::Order.step(0, 1, 0, &Timing::default())
    else {
        unreachable!("the order's first step is its charge")
    };
    call
}

fn a_runs_call_history_lands_with_its_commits_and_answers_each_prior(open: Open<'_>) {
    let (mut a, mut b, key) = two_on_a_run(open, Program::Order, "order-1");
    let other = new_run(a.as_mut(), Program::Seed, "run-1");
    let call = charge();
    assert_eq!(
        b.prior(&key, &call).unwrap(),
        Prior::NONE,
        "nothing bound yet"
    );
    // A binding whose commit is lost writes no history.
    let dispatch = program_step(a.as_mut(), &key);
    assert_eq!(dispatch.history, vec![HistoryEntry::bound(&call)]);
    let lease = Lease::default();
    let stale = Commit {
        expect: Expect {
            seq: 9,
            ..Expect::of(&dispatch.row)
        },
        ..dispatch.commit(&lease, None)
    };
    assert_eq!(a.commit(&stale).unwrap(), Cas::Conflict);
    assert_eq!(b.prior(&key, &call).unwrap(), Prior::NONE);
    // The binding lands with the dispatch: its id is used, its key bound to its arguments.
    assert_eq!(a.commit(&dispatch.commit(&lease, None)).unwrap(), Cas::Done);
    let bound = KeyUse {
        args: call.args,
        committed: false,
    };
    let prior = b.prior(&key, &call).unwrap();
    assert_eq!(
        prior,
        Prior {
            call_id_used: true,
            key: Some(bound)
        }
    );
    // Another call under the same key sees the key alone; another run sees nothing.
    let same_key = Call {
        call_id: Name::lit("charge-2"),
        ..call
    };
    let key_only = Prior {
        call_id_used: false,
        key: Some(bound),
    };
    assert_eq!(b.prior(&key, &same_key).unwrap(), key_only);
    assert_eq!(b.prior(&other, &call).unwrap(), Prior::NONE);
    // The result spends the key, and keeps its arguments.
    let result = decide(
        b.as_mut(),
        &key,
        Event::ToolResult {
            call_id: call.call_id,
            attempt: 0,
            result: Digest::of(b"charged"),
        },
    );
    assert_eq!(result.history, vec![HistoryEntry::settled(&call.key)]);
    assert_eq!(b.commit(&result.commit(&lease, None)).unwrap(), Cas::Done);
    let spent = b.prior(&key, &same_key).unwrap().key.unwrap();
    assert_eq!((spent.args, spent.committed), (call.args, true));
    // The same call proposed again is refused by what the store holds (KEY-2).
    let again = decide(
        a.as_mut(),
        &key,
        Event::Dispatch {
            call,
            prior: Prior::NONE, // stated from the store by `decide`
            resource_version: None,
        },
    );
    assert_eq!(
        again.answer,
        Answer::Rejected(Rejection::CallIdReused {
            call_id: call.call_id
        })
    );
    // A key spent that the history never saw bound is held as spent all the same.
    let unknown = IdempotencyKey::lit("never-bound");
    let step = decide(a.as_mut(), &other, cancel());
    let settled = HistoryEntry::Settled {
        key: Fingerprint::key(&unknown),
    };
    let commit = Commit {
        history: &[settled],
        ..step.commit(&lease, None)
    };
    assert_eq!(a.commit(&commit).unwrap(), Cas::Done);
    let never = Call {
        key: unknown,
        ..call
    };
    let held = b.prior(&other, &never).unwrap().key.unwrap();
    assert!(held.committed);
}
on_every_store!(
    a_runs_call_history_lands_with_its_commits_and_answers_each_prior,
    "history"
);

#[test]
fn sqlite_store_refuses_a_corrupted_run_record() {
    let path = sqlite_path("corrupt");
    let mut store = SqliteStore::open(&path).unwrap();
    let key = new_run(&mut store, Program::Seed, "run-1");
    drop(store);
    // A careless hand edits the stored run: its revision is no longer a number.
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute(
        "UPDATE runs SET run = replace(run, '\"revision\":0', '\"revision\":\"x\"')",
        [],
    )
    .unwrap();
    drop(db);
    let mut store = SqliteStore::open(&path).unwrap();
    let err = store.load(&key).unwrap_err().to_string();
    assert!(err.contains("unreadable") && err.contains(&key.0), "{err}");
}

#[test]
fn sqlite_store_refuses_a_negative_number_where_it_wrote_a_count() {
    let path = sqlite_path("negative");
    let mut store = SqliteStore::open(&path).unwrap();
    let key = new_run(&mut store, Program::Seed, "run-1");
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute("UPDATE runs SET pc = -1", []).unwrap();
    let err = store.load(&key).unwrap_err().to_string();
    assert!(err.contains("pc") && err.contains("negative"), "{err}");
}

#[test]
fn sqlite_store_keeps_what_was_committed_across_a_reopen() {
    let path = sqlite_path("reopen");
    let mut store = SqliteStore::open(&path).unwrap();
    let key = new_run(&mut store, Program::Seed, "run-1");
    let step = program_step(&mut store, &key);
    assert_eq!(
        store.commit(&step.commit(&Lease::default(), None)).unwrap(),
        Cas::Done
    );
    drop(store);
    let mut again = SqliteStore::open(&path).unwrap();
    assert_eq!(again.load(&key).unwrap().unwrap().run, step.next);
    assert_eq!(again.log(&key).unwrap().len(), 2);
}

/// How many indexes named `runs_by_status` the SQLite file at `path` holds.
fn sqlite_status_indexes(path: &str) -> i64 {
    let db = rusqlite::Connection::open(path).unwrap();
    db.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'runs_by_status'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn sqlite_store_made_with_an_index_on_status_loses_it_when_opened() {
    let path = sqlite_path("status-index");
    drop(SqliteStore::open(&path).unwrap());
    assert_eq!(sqlite_status_indexes(&path), 0, "a new store has none");
    // As an earlier release made it.
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute_batch("CREATE INDEX runs_by_status ON runs (status)")
        .unwrap();
    drop(db);
    assert_eq!(sqlite_status_indexes(&path), 1);
    drop(SqliteStore::open(&path).unwrap());
    assert_eq!(sqlite_status_indexes(&path), 0, "dropped at open");
}

#[test]
fn postgres_store_made_with_an_index_on_status_loses_it_when_opened() {
    let Some(address) = test_address("status_index") else {
        return;
    };
    let (conn, schema) = resumable_runtime::store::postgres::split_address(&address);
    let mut admin = postgres::Client::connect(conn, postgres::NoTls).unwrap();
    let count = |admin: &mut postgres::Client| -> i64 {
        let sql = "SELECT count(*) FROM pg_indexes WHERE schemaname = $1
            AND indexname = 'runs_by_status'";
        admin.query_one(sql, &[&schema]).unwrap().get(0)
    };
    drop(PgStore::open(&address).unwrap());
    assert_eq!(count(&mut admin), 0, "a new store has none");
    admin
        .batch_execute(&format!(
            "CREATE INDEX runs_by_status ON {schema}.runs (status)"
        ))
        .unwrap();
    assert_eq!(count(&mut admin), 1);
    drop(PgStore::open(&address).unwrap());
    assert_eq!(count(&mut admin), 0, "dropped at open");
    PgStore::drop_schema(&address).unwrap();
}

#[test]
fn a_rejection_is_stored_with_its_evidence() {
    // What a refused party reads back is the kernel's rejection, evidence and all.
    let mut store = MemoryStore::new();
    let key = new_run(&mut store, Program::Seed, "run-1");
    let lease = Lease::default();
    let suspend = program_step(&mut store, &key);
    assert_eq!(
        store.commit(&suspend.commit(&lease, None)).unwrap(),
        Cas::Done
    );
    let id = store
        .submit(
            &key,
            "ops",
            0,
            &Request::Cancel {
                by: Name::lit("ops"),
            },
        )
        .unwrap();
    let early = decide(&mut store, &key, Event::Expire);
    let Answer::Rejected(rejection) = early.answer else {
        panic!("an early expire is refused");
    };
    assert!(
        matches!(rejection, Rejection::NotExpired { .. }),
        "{rejection:?}"
    );
    let consumed = Consumed {
        request: id,
        answer: Answer::Rejected(rejection),
    };
    assert_eq!(
        store.commit(&early.commit(&lease, Some(consumed))).unwrap(),
        Cas::Done
    );
    let answered = store.inbox(&key, false).unwrap()[0].answer.unwrap();
    assert_eq!(answered.answer, Answer::Rejected(rejection));
}

#[test]
fn postgres_store_connects_again_after_the_server_dropped_its_session() {
    let Some(address) = test_address("reconnect") else {
        return;
    };
    let name = format!("reconnect_{}", std::process::id());
    let mut store = PgStore::open(&named(&address, &name)).unwrap();
    let key = new_run(&mut store, Program::Seed, "run-1");
    terminate_sessions(&address, &name);
    // The statement that meets the dropped session fails, with the server's words (unless
    // the client saw the session end first); the next one connects again and finds what was
    // committed.
    if let Err(e) = store.load(&key) {
        let failed = e.to_string();
        assert!(failed.starts_with("store: postgres: "), "{failed}");
        assert!(failed.len() > "store: postgres: db error".len(), "{failed}");
    }
    assert_eq!(store.load(&key).unwrap().unwrap().key, key);
    drop(store);
    PgStore::drop_schema(&address).unwrap();
}

#[test]
fn postgres_errors_carry_the_servers_message() {
    let Some(address) = test_address("message") else {
        return;
    };
    let (conn, _) = resumable_runtime::store::postgres::split_address(&address);
    let missing = format!("{conn} dbname=no_such_database#message");
    let err = PgStore::open(&missing).err().unwrap().to_string();
    assert!(
        err.contains("database \"no_such_database\" does not exist"),
        "{err}"
    );
}
