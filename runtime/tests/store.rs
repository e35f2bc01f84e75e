//! The store contract, on both backends: one commit is all or nothing, the compare-and-set
//! refuses a writer that started from an older revision or log position, requests are
//! answered once, and the raw compare-and-set behaves the same. PostgreSQL tests run when
//! RESUMABLE_TEST_POSTGRES names a server, and are skipped loudly otherwise.

use resumable_kernel::{Event, Input, Time};
use resumable_runtime::driver::create_run;
use resumable_runtime::lifecycle;
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::postgres::{test_address, PgStore};
use resumable_runtime::store::sqlite::SqliteStore;
use resumable_runtime::store::{status_of, Answer, Cas, Commit, Lease, Request, Store};

fn sqlite(name: &str) -> SqliteStore {
    let dir = std::env::temp_dir().join(format!("resumable-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    SqliteStore::open(dir.join("runs.db").to_str().unwrap()).unwrap()
}

/// One step of a run, committed from `expect`; returns what the store said.
fn step_and_commit(
    store: &mut dyn Store,
    key: &resumable_runtime::store::RunKey,
    stale: bool,
) -> Cas {
    let row = store.load(key).unwrap().unwrap();
    let at = row.run.updated_at().0 + 1;
    let event = Program::Seed
        .step(row.pc, at, 0, &Timing::default())
        .unwrap();
    let input = Input {
        at: Time(at),
        event,
    };
    let result = lifecycle::step(&row.run, &input);
    let (line, tail) = lifecycle::record_line(row.tail, &row.run, &input, &result, None).unwrap();
    let t = result.unwrap();
    let expect_seq = if stale {
        row.tail.seq.wrapping_sub(1)
    } else {
        row.tail.seq
    };
    store
        .commit(&Commit {
            key,
            expect: (row.run.revision(), expect_seq),
            run: &t.next,
            tail,
            line: &line,
            checkpoint: t.effects.checkpoint(),
            status: status_of(&t.next),
            wake_at: None,
            pc: row.pc + 1,
            lease: &Lease::default(),
            consumed: None,
            history: None,
        })
        .unwrap()
}

fn contract(store: &mut dyn Store) {
    let timing = Timing::default();
    let key = create_run(store, Program::Seed, "run-1", 0, &timing, None)
        .unwrap()
        .unwrap();
    assert_eq!(
        create_run(store, Program::Seed, "run-1", 0, &timing, None).unwrap(),
        None
    );
    // A writer that started from an older log position is refused, and writes nothing.
    assert_eq!(step_and_commit(store, &key, true), Cas::Conflict);
    assert_eq!(store.log(&key).unwrap().len(), 1);
    assert_eq!(step_and_commit(store, &key, false), Cas::Done);
    let row = store.load(&key).unwrap().unwrap();
    assert_eq!((row.run.revision().0, row.tail.seq, row.pc), (1, 1, 1));
    assert!(
        row.checkpoint.is_some(),
        "the suspension's checkpoint lands with the run"
    );
    let lines = store.log(&key).unwrap();
    assert_eq!(lines.len(), 2);
    let mut bytes = lines.join(&b'\n');
    bytes.push(b'\n');
    lifecycle::validate_log(&bytes, row.tail, None).unwrap();
    // The anchor catches a log cut short at a line boundary.
    let cut = [lines[0].clone(), b"\n".to_vec()].concat();
    assert!(lifecycle::validate_log(&cut, row.tail, None).is_err());
    // Requests wait in the inbox until a commit answers them, once.
    let request = Request::Cancel {
        by: resumable_kernel::Name::lit("ops"),
    };
    let id = store.submit(&key, "ops", 5, &request).unwrap();
    assert_eq!(store.scan(false).unwrap()[0].pending, 1);
    let input = Input {
        at: Time(row.run.updated_at().0 + 1),
        event: Event::Cancel {
            by: resumable_kernel::Name::lit("ops"),
        },
    };
    let result = lifecycle::step(&row.run, &input);
    let (line, tail) = lifecycle::record_line(row.tail, &row.run, &input, &result, None).unwrap();
    let next = result.unwrap().next;
    let commit = Commit {
        key: &key,
        expect: (row.run.revision(), row.tail.seq),
        run: &next,
        tail,
        line: &line,
        checkpoint: None,
        status: status_of(&next),
        wake_at: None,
        pc: row.pc,
        lease: &Lease::default(),
        consumed: Some((id, Answer::Accepted(next.revision()))),
        history: None,
    };
    assert_eq!(store.commit(&commit).unwrap(), Cas::Done);
    assert_eq!(
        store.commit(&commit).unwrap(),
        Cas::Conflict,
        "a commit lands once"
    );
    let answered = store.inbox(&key, false).unwrap();
    assert_eq!(
        answered[0].answer,
        Some((Answer::Accepted(next.revision()), 2))
    );
    assert!(store.inbox(&key, true).unwrap().is_empty());
    assert!(
        store.scan(false).unwrap().is_empty(),
        "an ended run with no request is not scanned"
    );
    assert_eq!(store.scan(true).unwrap().len(), 1);
    // The yardstick's compare-and-set.
    assert_eq!(store.raw_cas(1, 0, b"a").unwrap(), Cas::Done);
    assert_eq!(store.raw_cas(1, 0, b"b").unwrap(), Cas::Conflict);
    assert_eq!(store.raw_cas(1, 1, b"c").unwrap(), Cas::Done);
    assert_eq!(store.raw_cas(1, 1, b"d").unwrap(), Cas::Conflict);
}

#[test]
fn sqlite_store_keeps_the_contract() {
    contract(&mut sqlite("contract"));
}

#[test]
fn postgres_store_keeps_the_contract() {
    let Some(address) = test_address("store_contract") else {
        return;
    };
    contract(&mut PgStore::open(&address).unwrap());
    PgStore::drop_schema(&address).unwrap();
}

#[test]
fn sqlite_store_refuses_a_corrupted_run_record() {
    let mut store = sqlite("corrupt");
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
    drop(store);
    let dir = std::env::temp_dir().join(format!("resumable-store-{}-corrupt", std::process::id()));
    let path = dir.join("runs.db");
    // A careless hand edits the stored run: its revision no longer matches its phase's data.
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute(
        "UPDATE runs SET run = replace(run, '\"revision\":0', '\"revision\":\"x\"')",
        [],
    )
    .unwrap();
    drop(db);
    let mut store = SqliteStore::open(path.to_str().unwrap()).unwrap();
    let err = store.load(&key).unwrap_err().to_string();
    assert!(err.contains("unreadable"), "{err}");
}
