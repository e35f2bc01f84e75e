//! A run of real length on the embedded store: 10,000 calls, each bound with the prior the
//! store's history table holds of it and committed with its history entry; what a commit
//! writes does not grow with the history, and a key reused with other arguments at call 9,999
//! is still refused. (Release: about 20,000 fsync'd commits.)

use resumable_driver::Core;
use resumable_kernel::{Call, Digest, Event, IdempotencyKey, Name, ToolContract};
use resumable_runtime::lifecycle;
use resumable_runtime::program::Program;
use resumable_runtime::store::sqlite::SqliteStore;
use resumable_runtime::store::{Cas, Commit, Expect, Lease, RunKey, Store};

#[path = "support/sqlite.rs"]
mod sqlite;

use sqlite::store_with_run;

fn call(n: u32, key: u32, args: &[u8]) -> Call {
    Call {
        call_id: Name::new(&format!("call-{n:05}")).unwrap(),
        tool: Name::lit("publish:demo"),
        args: Digest::of(args),
        key: IdempotencyKey::new(&format!("key-{key:05}")).unwrap(),
        contract: ToolContract {
            dedupes: true,
            query_fences: false,
            max_attempts: 1,
            ..ToolContract::default()
        },
    }
}

/// A dispatch of `c`, whose prior the driver core states from the store.
fn dispatch(c: Call) -> Event {
    Event::Dispatch {
        call: c,
        prior: Default::default(),
        resource_version: None,
    }
}

/// Steps the stored run with `event` (a call's prior looked up in the store first) and
/// commits the outcome; returns whether the kernel accepted it and the run's stored size.
fn feed(store: &mut SqliteStore, key: &RunKey, event: Event, at: u64) -> (bool, usize) {
    let row = store.load(key).unwrap().unwrap();
    // The core states the dispatch's prior from the store's history.
    let staged = lifecycle::stage(&Core::default(), store, &row, at, event).unwrap();
    let tail = lifecycle::tail_after(&staged);
    let (result, line) = (staged.result, staged.line);
    let run = result.as_ref().map(|t| t.next).unwrap_or(row.run);
    let cas = store
        .commit(&Commit {
            key,
            expect: Expect::of(&row),
            run: &run,
            tail,
            line: &line,
            checkpoint: None,
            pc: row.pc,
            lease: &Lease::default(),
            consumed: None,
            history: &result
                .as_ref()
                .map(|t| t.effects.histories().copied().collect::<Vec<_>>())
                .unwrap_or_default(),
        })
        .unwrap();
    assert_eq!(cas, Cas::Done);
    (result.is_ok(), serde_json::to_string(&run).unwrap().len())
}

#[test]
#[ignore = "seconds in release; run with --release -- --ignored"]
fn a_run_of_ten_thousand_calls_keeps_its_size_and_refuses_a_key_reused_at_call_9999() {
    let (dir, mut store, key) = store_with_run("long", Program::Bench, "long-run");
    // Inputs are stamped after the run's creation (CLK-1): it was created at the clock's now.
    let mut at = store.load(&key).unwrap().unwrap().run.updated_at().0;
    let mut sizes = Vec::new();
    for n in 0..9_998u32 {
        let c = call(n, n, &n.to_be_bytes());
        at += 1;
        let (accepted, _) = feed(&mut store, &key, dispatch(c), at);
        assert!(accepted, "call {n}");
        at += 1;
        let answer = Event::ToolResult {
            call_id: c.call_id,
            attempt: 0,
            result: Digest::of(b"ok"),
        };
        let (accepted, size) = feed(&mut store, &key, answer, at);
        assert!(accepted, "result {n}");
        if n == 0 || n == 9_997 {
            sizes.push(size);
        }
    }
    // The run stored at call 9,998 is the size of the run at call 1, but for the digits of
    // its revision and time.
    assert!(sizes[1] - sizes[0] <= 16, "{sizes:?}");
    // Call 9,999 reuses key 42 with other arguments: refused over the whole history.
    at += 1;
    let reused = call(9_998, 42, b"other arguments");
    let (accepted, _) = feed(&mut store, &key, dispatch(reused), at);
    assert!(
        !accepted,
        "a key bound 9,956 calls earlier, with other arguments"
    );
    // Call 10,000 is a new one, accepted.
    at += 1;
    let fresh = call(9_999, 9_999, b"fresh");
    let (accepted, _) = feed(&mut store, &key, dispatch(fresh), at);
    assert!(accepted);
    let _ = std::fs::remove_dir_all(&dir);
}
