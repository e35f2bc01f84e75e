'use strict';
// The adapters' SQLite stores, the gate's `SqliteRunStore` (table `kernel_runs`) and the
// desk's `SqliteTurnStore` (table `turns`, with the SDK's state), one class with a table and
// extra columns each. Their tables are the ones earlier versions of the package created: a
// database those wrote (their statements are quoted below as they ran) loads and goes on, a
// database written now reads back with their statements, and compare-and-set on the revision
// refuses a stale commit or a second new run under one name, changing nothing.

const assert = require('node:assert/strict');
const path = require('node:path');
const { test } = require('node:test');

const Database = require('better-sqlite3');

const rk = require('..');
const { SqliteTurnStore } = require('../agents');
const { SqliteRunStore, historyJson } = require('../gate');
const { scratch } = require('./helpers');

const { tmp, closing } = scratch('resumable-store-');

const IDENTITY = { tenant: 'acme', session: 'chat-1', run: 'run-1', definition: 'writer@1' };
const POLICY = { operator: 'ops', reconcile_window: 3600 };
const CALL = {
  call_id: 'call_42',
  tool: 'publish',
  args: rk.digest({ post: 42 }),
  key: 'run-1:call_42',
  contract: { dedupes: true, query_fences: false, max_attempts: 3 },
};
const SDK_STATE = '{"currentStep":{"type":"next_step_interruption"}}';

// What the stores of earlier versions ran, to the letter: the table each created, the row it
// inserted (values in column order: name, revision, run, history, checkpoint[, state]) and
// the row it read back.
const EARLIER = [
  {
    Store: SqliteRunStore,
    table: 'kernel_runs',
    create:
      'CREATE TABLE IF NOT EXISTS kernel_runs (name TEXT PRIMARY KEY, ' +
      'revision INTEGER NOT NULL, run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT)',
    insert: 'INSERT INTO kernel_runs VALUES (?, ?, ?, ?, ?)',
    select: 'SELECT run, history, checkpoint FROM kernel_runs WHERE name = ?',
    extra: {},
  },
  {
    Store: SqliteTurnStore,
    table: 'turns',
    create:
      'CREATE TABLE IF NOT EXISTS turns (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, ' +
      'run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT, state TEXT)',
    insert: 'INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?)',
    select: 'SELECT run, history, checkpoint, state FROM turns WHERE name = ?',
    extra: { state: SDK_STATE },
  },
];

/**
 * A run suspended on the approval of CALL, then approved (the call dispatched): its run, its
 * history (the call bound) and the suspension's checkpoint, as a store holds them; and the
 * approval's dispatch.
 */
function approved() {
  const history = new rk.History();
  const wait = { wait: 'approval', call: CALL, requester: 'writer', prior: history.prior(CALL) };
  const suspend = rk.step(rk.newRun(IDENTITY, POLICY, 0), {
    at: 1,
    kind: 'suspend',
    wait,
    expires_at: 50,
    responsible: 'alice',
    resource_version: 0,
  });
  assert.equal(suspend.verdict, 'accepted');
  history.apply(suspend.effects);
  const checkpoint = rk.checkpointOf(suspend);
  const decision = {
    decision: 'approve',
    call_id: CALL.call_id,
    args: CALL.args,
    requester: 'writer',
    approver: 'alice',
    revision: checkpoint.revision,
    expires_at: 40,
  };
  const facts = { resource_version: 0, permitted: true, within_budget: true };
  const resume = rk.step(suspend.run, { at: 2, kind: 'resume', checkpoint, decision, facts });
  assert.equal(resume.verdict, 'accepted');
  history.apply(resume.effects);
  assert.equal(history.callIds.size, 1);
  return { run: resume.run, history, checkpoint, dispatch: rk.effect(resume, 'dispatch') };
}

/** The tool's result recorded on `stored`'s run: the value the next commit holds. */
function recorded(stored, dispatch) {
  const v = rk.step(stored.run, {
    at: 3,
    kind: 'tool_result',
    call_id: dispatch.call_id,
    attempt: dispatch.attempt,
    result: rk.digest('publish done #1'),
  });
  assert.equal(v.verdict, 'accepted');
  const history = stored.history;
  history.apply(v.effects);
  return { ...stored, run: v.run, history };
}

function open(file) {
  const db = new Database(file);
  closing(() => db.close());
  return db;
}

for (const earlier of EARLIER) {
  const { Store, table, extra } = earlier;

  test(`${table}: a database an earlier version wrote loads, and the next commit goes on`, () => {
    const file = path.join(tmp(), 'kernel.db');
    const { run, history, checkpoint, dispatch } = approved();
    const written = new Database(file);
    written.exec(earlier.create);
    written
      .prepare(earlier.insert)
      .run(
        'run-1',
        run.revision,
        rk.stringify(run),
        JSON.stringify(historyJson(history)),
        rk.stringify(checkpoint),
        ...Object.values(extra),
      );
    written.close();

    const store = new Store(open(file));
    const loaded = store.load('run-1');
    assert.deepEqual(Object.keys(loaded), ['run', 'history', 'checkpoint', ...Object.keys(extra)]);
    assert.deepEqual(loaded.run, run);
    assert.deepEqual(historyJson(loaded.history), historyJson(history));
    assert.deepEqual(loaded.history.prior(CALL), {
      call_id_used: true,
      key: { args: CALL.args, committed: false },
    });
    assert.deepEqual(loaded.checkpoint, checkpoint);
    for (const [column, value] of Object.entries(extra)) assert.equal(loaded[column], value);
    assert.equal(store.load('run-2'), null);

    // The next transition commits over the row, compare-and-set on the revision it was at.
    const next = recorded(loaded, dispatch);
    store.commit('run-1', run.revision, next);
    const reloaded = store.load('run-1');
    assert.equal(reloaded.run.revision, run.revision + 1);
    assert.deepEqual(reloaded.run.last_call.result, rk.digest('publish done #1'));
    assert.deepEqual(historyJson(reloaded.history), historyJson(next.history));
    assert.equal(reloaded.history.prior(CALL).key.committed, true);
  });

  test(`${table}: the table is created as before, its rows read by the earlier statement`, () => {
    const file = path.join(tmp(), 'kernel.db');
    const db = open(file);
    const store = new Store(db);
    const sql = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?");
    assert.equal(sql.get(table).sql, earlier.create.replace('IF NOT EXISTS ', ''));
    const { run, history, checkpoint } = approved();
    store.commit('run-1', null, { run, history, checkpoint, ...extra });
    // Read with the earlier version's own statement, as that code would.
    const row = db.prepare(earlier.select).get('run-1');
    assert.deepEqual(rk.parse(row.run), run);
    assert.deepEqual(JSON.parse(row.history), historyJson(history));
    assert.deepEqual(rk.parse(row.checkpoint), checkpoint);
    for (const [column, value] of Object.entries(extra)) assert.equal(row[column], value);
  });

  test(`${table}: a stale revision and a second new run under one name change nothing`, () => {
    const db = open(path.join(tmp(), 'kernel.db'));
    const store = new Store(db);
    const { run, history, checkpoint, dispatch } = approved();
    const first = { run, history, checkpoint, ...extra };
    store.commit('run-1', null, first);
    const row = () => db.prepare(`SELECT * FROM ${table} WHERE name = ?`).get('run-1');
    const before = row();
    const next = recorded(store.load('run-1'), dispatch);
    assert.throws(
      () => store.commit('run-1', run.revision - 1, next),
      /run run-1: revision 1 is no longer current/,
    );
    assert.throws(() => store.commit('run-1', null, next), /UNIQUE constraint failed/);
    assert.deepEqual(row(), before);
    // A run stored before any checkpoint, and extra columns not yet given, are null.
    const fresh = { run: rk.newRun(IDENTITY, POLICY, 0), history: new rk.History() };
    store.commit('run-2', null, { ...fresh, checkpoint: null, ...extra });
    assert.equal(store.load('run-2').checkpoint, null);
    if ('state' in extra) {
      store.commit('run-3', null, { ...fresh, checkpoint: null, state: null });
      assert.equal(store.load('run-3').state, null);
    }
  });
}
