'use strict';
// The SQLite store the adapters keep the kernel's run in: one row per run, holding the run,
// its call history and its last checkpoint, written with compare-and-set on the revision.
// The gate's `SqliteRunStore` (table `kernel_runs`) and the desk's `SqliteTurnStore` (table
// `turns`, the SDK's serialised RunState in a `state` column of the same row, so that both are
// stored in one write) are this one class, each naming its table and its extra columns. The
// tables are created with the text they always were, so a database written before keeps
// loading (test/store.test.js opens one).
//
// Not part of the package's API: `gate.js` and `agents.js` export the two stores.

const rk = require('./index.js');

/** A run's call history as JSON (sorted, so that equal histories are equal text). */
function historyJson(history) {
  const keys = {};
  for (const k of [...history.keys.keys()].sort()) keys[k] = { ...history.keys.get(k) };
  return { call_ids: [...history.callIds].sort(), keys };
}

/** The call history a `historyJson` form holds. */
function historyOf(json) {
  const h = new rk.History();
  for (const id of json.call_ids) h.callIds.add(id);
  for (const [k, v] of Object.entries(json.keys)) h.keys.set(k, { ...v });
  return h;
}

/**
 * Kernel runs in the SQLite table `table`, one row per run, compare-and-set on the revision.
 * Each name in `extra` is a text column stored as it is given, read back under the same name
 * beside the run, its history and its checkpoint. `db` is an open database with the
 * synchronous API of better-sqlite3 (`exec`, `prepare(sql).get/run`); the package does not
 * depend on it, the caller brings it.
 */
class SqliteStore {
  #table;
  #extra;

  constructor(db, table, extra) {
    this.db = db;
    this.#table = table;
    this.#extra = [...extra];
    const more = this.#extra.map((c) => `, ${c} TEXT`).join('');
    db.exec(
      `CREATE TABLE IF NOT EXISTS ${table} (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, ` +
        `run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT${more})`,
    );
  }

  /** The run stored under `name`, with its history, checkpoint and extra columns, or null. */
  load(name) {
    const columns = ['run', 'history', 'checkpoint', ...this.#extra].join(', ');
    const row = this.db.prepare(`SELECT ${columns} FROM ${this.#table} WHERE name = ?`).get(name);
    if (row === undefined) return null;
    const stored = {
      run: rk.parse(row.run),
      history: historyOf(JSON.parse(row.history)),
      checkpoint: row.checkpoint === null ? null : rk.parse(row.checkpoint),
    };
    for (const c of this.#extra) stored[c] = row[c];
    return stored;
  }

  /**
   * Stores the run and what goes with it, in one statement, if the stored revision is still
   * `before` (null: a new run); throws if not.
   */
  commit(name, before, stored) {
    const columns = ['revision', 'run', 'history', 'checkpoint', ...this.#extra];
    const values = [
      stored.run.revision,
      rk.stringify(stored.run),
      JSON.stringify(historyJson(stored.history)),
      stored.checkpoint === null ? null : rk.stringify(stored.checkpoint),
      ...this.#extra.map((c) => stored[c]),
    ];
    if (before === null) {
      const marks = columns.map(() => ', ?').join('');
      this.db
        .prepare(`INSERT INTO ${this.#table} (name, ${columns.join(', ')}) VALUES (?${marks})`)
        .run(name, ...values);
      return;
    }
    const set = columns.map((c) => `${c} = ?`).join(', ');
    const changed = this.db
      .prepare(`UPDATE ${this.#table} SET ${set} WHERE name = ? AND revision = ?`)
      .run(...values, name, before).changes;
    if (changed !== 1) throw new Error(`run ${name}: revision ${before} is no longer current`);
  }
}

module.exports = { SqliteStore, historyJson, historyOf };
