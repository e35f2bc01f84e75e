//! The torture's checks bite: each is shown to pass on an honest store and to fail on a store
//! where one thing went wrong (a decision lost or invented, a run stuck, a request never
//! answered, a key committed twice, a result the tool never committed, a commit no record
//! dispatched, a gated call dispatched without an approval, an edited log).

use resumable_driver::Core;
use resumable_kernel::{Digest, Event, Name};
use resumable_runtime::lifecycle;
use resumable_runtime::parties;
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::sqlite::SqliteStore;
use resumable_runtime::store::{Answer, Cas, Commit, Consumed, Expect, Lease, RunKey, Store};
use resumable_runtime::tool::service::Entry;
use resumable_runtime::torture::checks::check;
use std::path::PathBuf;

#[path = "support/sqlite.rs"]
mod sqlite;

use sqlite::store_with_run;

struct World {
    dir: PathBuf,
    store: SqliteStore,
    key: RunKey,
}

fn world(name: &str) -> World {
    let (dir, store, key) = store_with_run(&format!("checks-{name}"), Program::Seed, "run-1");
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

/// The honest lifecycle, after which an unrelated cancel waits in the inbox unanswered.
fn unanswered(w: &mut World) {
    w.honest();
    let request = resumable_runtime::store::Request::Cancel {
        by: Name::lit("ops"),
    };
    w.store.submit(&w.key, "ops", 0, &request).unwrap();
}

/// The honest lifecycle, after which one line of the audit log is edited.
fn edited(w: &mut World) {
    w.honest();
    let db = rusqlite::Connection::open(w.dir.join("runs.db")).unwrap();
    db.execute(
        "UPDATE audit SET line = CAST(replace(CAST(line AS TEXT), '\"at\":', '\"at\": ') AS BLOB) \
         WHERE seq = 2",
        [],
    )
    .unwrap();
}

/// The seed's call, gated on an approval, dispatched as the agent proposed it with no
/// approver asked, and its result recorded.
fn ungated(w: &mut World) {
    let Some(Event::Suspend {
        wait: resumable_kernel::Wait::Approval { call, .. },
        ..
    }) = Program::Seed.step(0, 1, 0, &Timing::default())
    else {
        unreachable!("the seed program asks for approval of its call")
    };
    let dispatch = Event::Dispatch {
        call,
        prior: resumable_kernel::Prior::NONE,
        resource_version: None,
    };
    w.feed(dispatch, 1, None);
    let result = Event::ToolResult {
        call_id: call.call_id,
        attempt: 0,
        result: Digest::of(b"ok"),
    };
    w.feed(result, 1, None);
}

/// The request is marked accepted by a commit that records a cancel instead.
fn lost(w: &mut World) {
    w.suspend();
    let (id, _) = w.approval();
    let cancel = Event::Cancel {
        by: Name::lit("ops"),
    };
    w.feed(cancel, 1, Some(id));
}

/// The approval is recorded as if it came from nowhere: no request is answered by it.
fn invented(w: &mut World) {
    w.suspend();
    let (_, resume) = w.approval();
    w.feed(resume, 1, None);
}

/// A store where one thing went wrong: its name, the run's story on the store, the result the
/// tool's ledger holds committed under the run's key and how many times, and whether a
/// violation says so.
type Breach = (
    &'static str,
    fn(&mut World),
    &'static [u8],
    usize,
    fn(&str) -> bool,
);

const BREACHES: [Breach; 9] = [
    ("twice", World::honest, b"ok", 2, |v| {
        v.contains("EFF-1") && v.contains("committed 2 times")
    }),
    ("phantom", World::honest, b"another", 1, |v| {
        v.contains("the tool never committed")
    }),
    ("stuck", |_| {}, b"ok", 0, |v| v.starts_with("stuck:")),
    ("lost", lost, b"ok", 0, |v| {
        v.contains("which does not show it")
    }),
    ("invented", invented, b"ok", 0, |v| {
        v.contains("a decision no request made")
    }),
    ("unanswered", unanswered, b"ok", 1, |v| {
        v.contains("never answered")
    }),
    ("edited", edited, b"ok", 1, |v| v.contains("audit log of")),
    // The call still waits for its approval, yet the tool committed it: what a driver that
    // dispatches before its commit leaves behind once that commit is lost.
    ("undispatched", World::suspend, b"ok", 1, |v| {
        v.starts_with("WAL-1: tool key") && v.contains("no record dispatched it")
    }),
    ("ungated", ungated, b"ok", 1, |v| {
        v.starts_with("APR-1:") && v.contains("no accepted approval bound")
    }),
];

#[test]
fn each_breach_is_caught() {
    for (name, story, result, times, found) in BREACHES {
        let mut w = world(name);
        story(&mut w);
        w.ledger(Digest::of(result), times);
        let v = w.violations();
        assert!(v.iter().any(|v| found(v)), "{name}: {v:?}");
    }
}
