//! A SQLite store in a directory of its own, holding one run.

use resumable_runtime::driver::create_run;
use resumable_runtime::program::{Program, Timing};
use resumable_runtime::store::sqlite::SqliteStore;
use resumable_runtime::store::RunKey;
use std::path::PathBuf;

/// A fresh directory named `name` and a store in it (`runs.db`) holding one run of `program`
/// named `run`, created at t0: the directory, the store and the run's key.
pub fn store_with_run(name: &str, program: Program, run: &str) -> (PathBuf, SqliteStore, RunKey) {
    let dir = std::env::temp_dir().join(format!("resumable-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut store = SqliteStore::open(dir.join("runs.db").to_str().unwrap()).unwrap();
    let timing = Timing::default();
    let key = create_run(&mut store, program, run, 0, &timing, None)
        .unwrap()
        .expect("a new run");
    (dir, store, key)
}
