//! The driver in one process, on the in-memory store with tools answered in memory: the
//! seed's example end to end (its refused attempts recorded, its approval applied once), and
//! an unanswered dispatch recovered and reconciled by query on another worker.

use resumable_kernel::{Name, Rejection};
use resumable_runtime::driver::{create_run, Driver};
use resumable_runtime::lifecycle;
use resumable_runtime::parties;
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::memory::MemoryStore;
use resumable_runtime::store::sqlite::SqliteStore;
use resumable_runtime::store::{Answer, Status, Store};
use resumable_runtime::tool::{MemoryTools, ToolReply, ToolRequest, Tools};
use std::io;

#[path = "support/approver.rs"]
mod approver;

use approver::{approve, config};

fn settle<S: Store, T: Tools>(d: &mut Driver<S, T>) {
    for _ in 0..50 {
        if d.pass(0).unwrap().1 {
            return;
        }
    }
    panic!("the store did not settle");
}

fn log_of(store: &mut dyn Store, key: &resumable_runtime::store::RunKey) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in store.log(key).unwrap() {
        bytes.extend_from_slice(&line);
        bytes.push(b'\n');
    }
    bytes
}

#[test]
fn the_seed_example_runs_end_to_end_and_its_refused_attempts_are_recorded() {
    let mut d = Driver::new(MemoryStore::new(), MemoryTools::default(), config("w1"));
    let timing = Timing::default();
    let key = create_run(d.store(), Program::Seed, "run-approval", 0, &timing, None)
        .unwrap()
        .unwrap();
    settle(&mut d);
    let row = parties::resolve(d.store(), "run-approval").unwrap();
    assert_eq!(
        resumable_runtime::store::status_of(&row.run),
        Status::Approval
    );
    let handed = row.checkpoint.unwrap();
    // The seed's refusals: another run, another action, an old revision.
    let mut other_run = handed;
    other_run.identity.run = Name::lit("run-other");
    let mut other_action = handed;
    other_action.pending.as_mut().unwrap().tool = Name::lit("delete:demo");
    let mut old = handed;
    old.revision.0 -= 1;
    let genuine = parties::approval(&row, Some(handed), "approver", true, 60_000).unwrap();
    for cp in [other_run, other_action.seal(), old.seal()] {
        let request = parties::approval(&row, Some(cp), "approver", true, 60_000).unwrap();
        approve(d.store(), &key, &request);
    }
    // The genuine approval, then the same request again (a retried send).
    approve(d.store(), &key, &genuine);
    approve(d.store(), &key, &genuine);
    settle(&mut d);
    let answers: Vec<Answer> = d
        .store()
        .inbox(&key, false)
        .unwrap()
        .into_iter()
        .map(|r| r.answer.unwrap().answer)
        .collect();
    let names: Vec<String> = answers
        .iter()
        .map(|a| match a {
            Answer::Accepted(_) => "accepted".to_string(),
            Answer::Rejected(r) => serde_json::to_value(r).unwrap()["rejection"].to_string(),
            Answer::Unauthenticated => "unauthenticated".to_string(),
        })
        .collect();
    assert_eq!(
        names,
        [
            "\"identity_mismatch\"",
            "\"checkpoint_mismatch\"",
            "\"stale_revision\"",
            "accepted",
            "\"already_applied\"",
        ]
    );
    assert!(matches!(
        answers[4],
        Answer::Rejected(Rejection::AlreadyApplied { .. })
    ));
    let row = d.store().load(&key).unwrap().unwrap();
    assert_eq!(
        resumable_runtime::store::status_of(&row.run),
        Status::Completed
    );
    let log = log_of(d.store(), &key);
    let summary = lifecycle::validate_log(&log, row.tail, None).unwrap();
    assert_eq!((summary.accepted, summary.rejected), (4, 4));
    assert_eq!((summary.dispatches, summary.commits), (1, 1));
}

/// Tools whose answers to calls and queries never come back; a resource's version is still
/// read (at 0, never moved).
struct Silent {
    reading: bool,
}

impl Tools for Silent {
    fn send(&mut self, request: &ToolRequest) -> io::Result<()> {
        self.reading = matches!(request, ToolRequest::Version { .. });
        Ok(())
    }
    fn receive(&mut self) -> io::Result<ToolReply> {
        if self.reading {
            return Ok(ToolReply::Version { version: 0 });
        }
        Err(io::Error::new(io::ErrorKind::TimedOut, "no answer"))
    }
}

#[test]
fn a_dispatch_without_an_answer_is_recovered_and_reconciled_by_query_never_retried_blindly() {
    let store = MemoryStore::new();
    let mut lost = Driver::new(store.clone(), Silent { reading: false }, config("w1"));
    let timing = Timing::default();
    let key = create_run(lost.store(), Program::Order, "order-1", 0, &timing, None)
        .unwrap()
        .unwrap();
    // The first worker dispatches, gets no answer, recovers; its query gets no answer either.
    lost.turn(&key, false).unwrap();
    let row = lost.store().load(&key).unwrap().unwrap();
    assert_eq!(
        resumable_runtime::store::status_of(&row.run),
        Status::Unknown
    );
    // Another worker asks the status query: not committed; the tool dedupes, so the retry
    // goes out under the same key and attempt, and the run moves on.
    let mut d = Driver::new(store, MemoryTools::default(), config("w2"));
    d.turn(&key, false).unwrap();
    let row = d.store().load(&key).unwrap().unwrap();
    assert_eq!(
        resumable_runtime::store::status_of(&row.run),
        Status::Callback
    );
    let log = log_of(d.store(), &key);
    let text = String::from_utf8(log.clone()).unwrap();
    assert_eq!(text.matches("\"kind\":\"recover\"").count(), 1);
    // One resume: the answered query. The unanswered one was never fed as an answer.
    assert_eq!(text.matches("\"kind\":\"resume\"").count(), 1);
    lifecycle::validate_log(&log, row.tail, None).unwrap();
}

#[test]
fn the_store_holds_runs_named_by_uuid_and_by_a_name_at_its_limit_and_refuses_one_over() {
    // On a durable store: its columns hold the names whole.
    let dir = std::env::temp_dir().join(format!("resumable-driver-{}-names", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("runs.db").to_str().unwrap()).unwrap();
    let mut d = Driver::new(store, MemoryTools::default(), config("w1"));
    let timing = Timing::default();
    let uuid = "6f1c2a9e-3b7d-4e8a-9c0f-2d5e7a1b3c4d";
    let widest = "r".repeat(resumable_kernel::NAME_CAPACITY);
    for name in [uuid, widest.as_str()] {
        let key = create_run(d.store(), Program::Seed, name, 0, &timing, None)
            .unwrap()
            .expect("a new run");
        settle(&mut d);
        let row = parties::resolve(d.store(), name).unwrap();
        assert_eq!(row.key, key);
        assert_eq!(row.run.identity().run.as_str(), name);
        assert_eq!(
            resumable_runtime::store::status_of(&row.run),
            Status::Approval
        );
    }
    let over = "r".repeat(resumable_kernel::NAME_CAPACITY + 1);
    let refused = create_run(d.store(), Program::Seed, &over, 0, &timing, None).unwrap_err();
    assert!(
        refused.to_string().contains("at most 64 bytes, got 65"),
        "{refused}"
    );
}
