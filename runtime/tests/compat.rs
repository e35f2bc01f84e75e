//! A store written by an earlier release loads and resumes under this kernel: release
//! 604adaf's SQLite store (`compat/604adaf/store/demo.db`, never regenerated) holds a run
//! suspended for an approval, with its call log inline in the run, as rules 3 kept it.

use resumable_kernel::{Approval, Decision, Event, Input, Prior, Resume, Time};
use resumable_runtime::driver::facts;
use resumable_runtime::parties;
use resumable_runtime::store::sqlite::SqliteStore;
use resumable_runtime::store::Store;
use std::path::{Path, PathBuf};

/// A fresh copy of the old store's file, named for one test.
fn copy_of_the_old_file(name: &str) -> PathBuf {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat/604adaf/store/demo.db");
    let dir = std::env::temp_dir().join(format!("resumable-compat-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("demo.db");
    std::fs::copy(corpus, &db).expect("the corpus holds the store");
    db
}

fn copy_of_the_old_store(name: &str) -> SqliteStore {
    SqliteStore::open(copy_of_the_old_file(name).to_str().unwrap()).unwrap()
}

#[test]
fn a_reader_reads_a_store_of_release_604adaf_and_writes_nothing() {
    // `status` and `log` open the store for reading only. The old run loads as it is; its
    // inline call log stays for the first worker to move (that release's store has no
    // history table yet, and a reader never writes), so the file is left byte for byte.
    let db = copy_of_the_old_file("read");
    let before = std::fs::read(&db).unwrap();
    let mut store = SqliteStore::open_read_only(db.to_str().unwrap()).unwrap();
    let row = parties::resolve(&mut store, "run-approval").expect("the old run loads");
    assert!(row.checkpoint.is_some(), "suspended with its checkpoint");
    assert!(row.run.suspension().is_some());
    drop(store);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "a reader changed the store"
    );
}

#[test]
fn a_run_stored_by_release_604adaf_loads_its_history_moves_to_the_store_and_it_resumes() {
    let mut store = copy_of_the_old_store("resume");
    let row = parties::resolve(&mut store, "run-approval").expect("the old run loads");
    let cp = row.checkpoint.expect("suspended with its checkpoint");
    let pending = row
        .run
        .suspension()
        .and_then(|s| s.reason.call())
        .unwrap()
        .0;
    // The inline call log moved to the history table: the pending call is known there.
    let prior = store.prior(&row.key, &pending.call).unwrap();
    assert!(prior.call_id_used, "{prior:?}");
    assert_eq!(
        prior.key.map(|k| (k.args, k.committed)),
        Some((pending.call.args, false))
    );
    // The approval that run waits for, before its suspension expires, under this kernel.
    let at = Time(cp.expires_at.0 - 1);
    let approval = Approval {
        call_id: pending.call.call_id,
        args: pending.call.args,
        requester: cp.requester.unwrap(),
        approver: cp.responsible,
        revision: cp.revision,
        expires_at: at.after(1_000),
    };
    let input = Input {
        at,
        event: Event::Resume(Resume {
            checkpoint: cp,
            decision: Decision::Approve(approval),
            facts: facts(row.resource_version),
        }),
    };
    let t = resumable_kernel::step(&row.run, &input).expect("the old checkpoint resumes");
    assert_eq!(
        t.effects.dispatch().map(|d| d.call_id),
        Some(pending.call.call_id)
    );
    // The same call proposed again is refused by its migrated history.
    let again = Input {
        at,
        event: Event::Dispatch {
            call: pending.call,
            prior,
            resource_version: None,
        },
    };
    assert!(resumable_kernel::step(&t.next, &again).is_err());
    assert_ne!(prior, Prior::NONE);
}

/// Every audit line of the store file at `path`, with its run and position, in the log's
/// order; and whether its `audit` table is keyed without a rowid.
fn audit_lines(path: &Path) -> (Vec<(String, i64, Vec<u8>)>, bool) {
    let db = rusqlite::Connection::open(path).unwrap();
    let mut lines = db
        .prepare("SELECT key, seq, line FROM audit ORDER BY key, seq")
        .unwrap();
    let lines = lines
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let without_rowid: bool = db
        .query_row(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = 'audit'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (lines, without_rowid)
}

#[test]
fn the_audit_table_of_release_604adaf_moves_to_a_rowid_table_line_for_line_when_a_writer_opens_it()
{
    // That release keyed `audit` without a rowid; this one appends records to a rowid table
    // (sql::schema says why). A writer's open moves every line, once; the log reads back the
    // same.
    let db = copy_of_the_old_file("audit");
    let (before, without_rowid) = audit_lines(&db);
    assert!(without_rowid, "the old release's table has no rowid");
    assert!(before.len() >= 2, "{before:?}");
    let mut reader = SqliteStore::open_read_only(db.to_str().unwrap()).unwrap();
    let row = parties::resolve(&mut reader, "run-approval").expect("the old run loads");
    let log = reader.log(&row.key).unwrap();
    drop(reader);
    for _ in 0..2 {
        drop(SqliteStore::open(db.to_str().unwrap()).unwrap());
        let (after, without_rowid) = audit_lines(&db);
        assert!(!without_rowid, "moved to a rowid table");
        assert_eq!(after, before, "every line kept, in order");
    }
    let mut store = SqliteStore::open(db.to_str().unwrap()).unwrap();
    assert_eq!(store.log(&row.key).unwrap(), log);
    assert_eq!(
        row.tail.seq as usize,
        log.len() - 1,
        "the anchor ends the log"
    );
}
