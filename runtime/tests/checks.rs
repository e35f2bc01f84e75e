//! The torture's checks bite: each is shown to pass on an honest store and to fail on a store
//! where one thing went wrong (a decision lost or invented, a run stuck, a request never
//! answered, a key committed twice, a result the tool never committed, a commit no record
//! dispatched, a gated call dispatched without an approval, an edited log).

use resumable_driver::Core;
use resumable_kernel::{Digest, Event, Name};
use resumable_runtime::driver::create_run;
use resumable_runtime::lifecycle;
use resumable_runtime::parties;
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::sqlite::SqliteStore;
use resumable_runtime::store::{Answer, Cas, Commit, Consumed, Expect, Lease, RunKey, Store};
use resumable_runtime::tool::service::Entry;
use resumable_runtime::torture::checks::check;
use std::path::PathBuf;

struct World {
    dir: PathBuf,
    store: SqliteStore,
    key: RunKey,
}

fn world(name: &str) -> World {
    let dir = std::env::temp_dir().join(format!("resumable-checks-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut store = SqliteStore::open(dir.join("runs.db").to_str().unwrap()).unwrap();
    let key = create_run(
        &mut store,
        Program::Seed,
        "run-1",
        0,
        &Timing::default(),
        None,
    )
    .unwrap()
    .unwrap();
    World { dir, store, key }
}

impl World {
    /// Steps the run with `event` and commits it as the driver does, answering `consumed`.
    fn feed(&mut self, event: Event, pc: u32, consumed: Option<u64>) {
        let row = self.store.load(&self.key).unwrap().unwrap();
        let at = row.run.updated_at().0 + 1;
        let staged = lifecycle::stage(&Core::default(), &mut self.store, &row, at, event).unwrap();
        let tail = lifecycle::tail_after(&staged);
        let line = staged.line;
        let t = staged.result.expect("accepted");
        let commit = Commit {
            key: &self.key,
            expect: Expect::of(&row),
            run: &t.next,
            tail,
            line: &line,
            checkpoint: t.effects.checkpoint(),
            pc,
            lease: &Lease::default(),
            consumed: consumed.map(|request| Consumed {
                request,
                answer: Answer::Accepted(t.next.revision()),
            }),
            history: &t.effects.histories().copied().collect::<Vec<_>>(),
        };
        assert_eq!(self.store.commit(&commit).unwrap(), Cas::Done);
    }

    fn suspend(&mut self) {
        let at = self
            .store
            .load(&self.key)
            .unwrap()
            .unwrap()
            .run
            .updated_at()
            .0
            + 1;
        let event = Program::Seed.step(0, at, 0, &Timing::default()).unwrap();
        self.feed(event, 1, None);
    }

    fn approval(&mut self) -> (u64, Event) {
        let row = self.store.load(&self.key).unwrap().unwrap();
        let request = parties::approval(&row, None, "approver", true, 600_000).unwrap();
        let id = self
            .store
            .submit(&self.key, "approver", 0, &request)
            .unwrap();
        let resumable_runtime::store::Request::Resume {
            checkpoint,
            decision,
        } = request
        else {
            unreachable!()
        };
        let facts = resumable_runtime::driver::facts(row.resource_version);
        (
            id,
            Event::Resume(resumable_kernel::Resume {
                checkpoint,
                decision,
                facts,
            }),
        )
    }

    /// The tool commits `result` under the run's key, `times` times.
    fn ledger(&self, result: Digest, times: usize) {
        let row_key = lifecycle::tool_key(
            &Program::Seed
                .header("run-1", 0, &Timing::default())
                .unwrap()
                .identity,
            &resumable_kernel::IdempotencyKey::lit("idem-run-approval"),
        );
        let entry = Entry::Commit {
            tool: "publish:demo".into(),
            key: row_key,
            attempt: 0,
            result,
            resource: None,
        };
        let line = serde_json::to_string(&entry).unwrap() + "\n";
        std::fs::write(self.dir.join("ledger"), line.repeat(times)).unwrap();
    }

    /// The whole honest lifecycle: suspend, approval from the inbox, the tool's result, done.
    fn honest(&mut self) {
        self.suspend();
        let (id, resume) = self.approval();
        self.feed(resume, 1, Some(id));
        let call_id = Name::lit("call-1");
        self.feed(
            Event::ToolResult {
                call_id,
                attempt: 0,
                result: Digest::of(b"ok"),
            },
            1,
            None,
        );
        self.feed(
            Event::Complete {
                result: Digest::of(b"done"),
            },
            2,
            None,
        );
    }

    fn violations(&mut self) -> Vec<String> {
        check(&mut self.store, &self.dir.join("ledger"), None, true)
            .unwrap()
            .2
    }
}

#[test]
fn an_honest_store_passes_every_check() {
    let mut w = world("honest");
    w.honest();
    w.ledger(Digest::of(b"ok"), 1);
    assert_eq!(w.violations(), Vec::<String>::new());
}

#[test]
fn a_key_committed_twice_is_caught() {
    let mut w = world("twice");
    w.honest();
    w.ledger(Digest::of(b"ok"), 2);
    let v = w.violations();
    assert!(
        v.iter()
            .any(|v| v.contains("EFF-1") && v.contains("committed 2 times")),
        "{v:?}"
    );
}

#[test]
fn a_result_the_tool_never_committed_is_caught() {
    let mut w = world("phantom");
    w.honest();
    w.ledger(Digest::of(b"another"), 1);
    let v = w.violations();
    assert!(
        v.iter().any(|v| v.contains("the tool never committed")),
        "{v:?}"
    );
}

#[test]
fn a_run_left_moving_is_stuck() {
    let mut w = world("stuck");
    w.ledger(Digest::of(b"ok"), 0);
    let v = w.violations();
    assert!(v.iter().any(|v| v.starts_with("stuck:")), "{v:?}");
}

#[test]
fn a_decision_answered_by_a_record_that_does_not_show_it_is_lost() {
    let mut w = world("lost");
    w.suspend();
    let (id, _) = w.approval();
    // The request is marked accepted by a commit that records a cancel instead.
    w.feed(
        Event::Cancel {
            by: Name::lit("ops"),
        },
        1,
        Some(id),
    );
    w.ledger(Digest::of(b"ok"), 0);
    let v = w.violations();
    assert!(
        v.iter().any(|v| v.contains("which does not show it")),
        "{v:?}"
    );
}

#[test]
fn a_decision_in_the_log_that_no_request_made_is_caught() {
    let mut w = world("invented");
    w.suspend();
    let (_, resume) = w.approval();
    // The approval is recorded as if it came from nowhere: no request is answered by it.
    w.feed(resume, 1, None);
    w.ledger(Digest::of(b"ok"), 0);
    let v = w.violations();
    assert!(
        v.iter().any(|v| v.contains("a decision no request made")),
        "{v:?}"
    );
}

#[test]
fn a_request_never_answered_is_caught() {
    let mut w = world("unanswered");
    w.honest();
    w.ledger(Digest::of(b"ok"), 1);
    let request = resumable_runtime::store::Request::Cancel {
        by: Name::lit("ops"),
    };
    w.store.submit(&w.key, "ops", 0, &request).unwrap();
    let v = w.violations();
    assert!(v.iter().any(|v| v.contains("never answered")), "{v:?}");
}

#[test]
fn an_edited_audit_log_is_caught() {
    let mut w = world("edited");
    w.honest();
    w.ledger(Digest::of(b"ok"), 1);
    let db = rusqlite::Connection::open(w.dir.join("runs.db")).unwrap();
    db.execute(
        "UPDATE audit SET line = CAST(replace(CAST(line AS TEXT), '\"at\":', '\"at\": ') AS BLOB) \
         WHERE seq = 2",
        [],
    )
    .unwrap();
    let v = w.violations();
    assert!(v.iter().any(|v| v.contains("audit log of")), "{v:?}");
}

#[test]
fn a_commit_no_record_dispatched_is_caught() {
    // The call still waits for its approval, yet the tool committed it: what a driver that
    // dispatches before its commit leaves behind once that commit is lost.
    let mut w = world("undispatched");
    w.suspend();
    w.ledger(Digest::of(b"ok"), 1);
    let v = w.violations();
    assert!(
        v.iter()
            .any(|v| v.starts_with("WAL-1: tool key") && v.contains("no record dispatched it")),
        "{v:?}"
    );
}

#[test]
fn a_gated_call_dispatched_without_an_approval_is_caught() {
    let mut w = world("ungated");
    let Some(Event::Suspend {
        wait: resumable_kernel::Wait::Approval { call, .. },
        ..
    }) = Program::Seed.step(0, 1, 0, &Timing::default())
    else {
        unreachable!("the seed program asks for approval of its call")
    };
    // The gated call dispatched as the agent proposed it, with no approver asked.
    let dispatch = Event::Dispatch {
        call,
        prior: resumable_kernel::Prior::NONE,
        resource_version: None,
    };
    w.feed(dispatch, 1, None);
    w.feed(
        Event::ToolResult {
            call_id: call.call_id,
            attempt: 0,
            result: Digest::of(b"ok"),
        },
        1,
        None,
    );
    w.ledger(Digest::of(b"ok"), 1);
    let v = w.violations();
    assert!(
        v.iter()
            .any(|v| v.starts_with("APR-1:") && v.contains("no accepted approval bound")),
        "{v:?}"
    );
}
