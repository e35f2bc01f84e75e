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
