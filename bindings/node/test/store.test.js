'use strict';
// The SQLite store every adapter of the package drives through (driver.js), the schema the
// Python package shares: `resumable_runs` (one row per run) and `resumable_audit` (its log).
// A commit is one transaction with compare-and-set on the run's revision and its log's record
// count; a lost race writes nothing and the driver stages the same input again on the stored
// run (8 times at most). A database an earlier release wrote (tables `kernel_runs`, `turns`,
// their statements quoted below as they ran) holds runs this release cannot drive: opening it
// is refused with a message that says so and what to do; empty earlier tables are no bar.

const assert = require('node:assert/strict');
const path = require('node:path');
const { test } = require('node:test');

const Database = require('better-sqlite3');

const rk = require('..');
const d = require('../driver');
const { assertValidates, scratch } = require('./helpers');

const { tmp, closing } = scratch('resumable-store-');

const KEY = 'e5'.repeat(32);
const IDENTITY = { tenant: 'acme', session: 'chat-1', run: 'run-1', definition: 'writer@1' };
const PROPOSAL = {
  call_id: 'call_42',
  tool: 'publish',
  args: { post: 42 },
  key: 'run-1:call_42',
  contract: { dedupes: true, query_fences: false, max_attempts: 3 },
  requester: 'writer',
  approver: 'alice',
  expires_in: 50,
};

function open() {
  const db = new Database(path.join(tmp(), 'runs.db'));
  closing(() => db.close());
  return db;
}

function driver(store, ticks = { t: 0 }) {
  return new d.Driver({ store, name: 'run-1', identity: IDENTITY, key: KEY,
    clock: () => (ticks.t += 1) });
}

// What earlier releases ran, to the letter.
const EARLIER = {
  kernel_runs:
    'CREATE TABLE IF NOT EXISTS kernel_runs (name TEXT PRIMARY KEY, ' +
    'revision INTEGER NOT NULL, run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT)',
  turns:
    'CREATE TABLE IF NOT EXISTS turns (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, ' +
    'run TEXT NOT NULL, history TEXT NOT NULL, checkpoint TEXT, state TEXT)',
};

test('the schema is the one both packages share', () => {
  const db = open();
  new d.SqliteDriverStore(db);
  const columns = (table) => db.prepare(`PRAGMA table_info(${table})`).all()
    .map((c) => [c.name, c.type, c.notnull, c.pk]);
  assert.deepEqual(columns('resumable_runs'), [
    ['name', 'TEXT', 0, 1], ['revision', 'INTEGER', 1, 0], ['records', 'INTEGER', 1, 0],
    ['held', 'TEXT', 1, 0], ['book', 'TEXT', 1, 0], ['extra', 'TEXT', 0, 0],
  ]);
  assert.deepEqual(columns('resumable_audit'), [
    ['name', 'TEXT', 1, 1], ['seq', 'INTEGER', 1, 2], ['line', 'TEXT', 1, 0],
  ]);
});

test('a run and its log: one row, line 0 the header, each commit one line at its record', async () => {
  const db = open();
  const store = new d.SqliteDriverStore(db);
  const drv = driver(store);
  const todo = await drv.drive([PROPOSAL]);
  assert.equal(todo.todo, 'ask');
  const rows = db.prepare('SELECT seq FROM resumable_audit ORDER BY seq').all().map((r) => r.seq);
  assert.deepEqual(rows, [0, 1]);
  const row = db.prepare('SELECT revision, records, held FROM resumable_runs').get();
  const held = rk.parse(row.held);
  assert.deepEqual([row.revision, row.records], [held.run.revision, held.anchor.records]);
  assert.equal(drv.log().anchor, `1:${held.anchor.mac}`);
  assertValidates(drv.log(), KEY);
  // A second creation under the name changes nothing.
  assert.equal(store.create('run-1', rk.driverOpen({ run: { identity: IDENTITY,
    policy: { operator: 'ops', reconcile_window: 9 }, created_at: 0 } }, KEY)), false);
  assert.deepEqual(store.load('run-1').held, held);
});

test('a stale commit writes nothing: neither the row nor a line', async () => {
  const db = open();
  const store = new d.SqliteDriverStore(db);
  const drv = driver(store);
  const stale = store.load('run-1');
  await drv.drive([PROPOSAL]);
  const fed = rk.driverFeed(stale.held, stale.book, 5, { kind: 'expire' }, {}, KEY);
  assert.equal(store.commit('run-1', stale, fed), false);
  assert.equal(db.prepare('SELECT COUNT(*) AS n FROM resumable_audit').get().n, 2);
  assertValidates(drv.log(), KEY);
});

test('a lost compare-and-set is staged again on the stored run, 8 times at most', async () => {
  const db = open();
  const store = new d.SqliteDriverStore(db);
  const ticks = { t: 0 };
  const drv = driver(store, ticks);
  const other = driver(store, ticks);
  // Another writer moves the run after each load, `losses` times: the commit is lost, the
  // driver loads again and stages the same input on the run as it now is.
  let losses = 3;
  const racing = Object.create(store);
  racing.commit = (name, loaded, fed, extra) => {
    if (losses > 0) {
      losses -= 1;
      // The other writer's input: the kernel refuses it, and the log still moves.
      other.commit((x, now) => rk.driverFeed(x.held, x.book, now, { kind: 'recover' }, {}, KEY));
    }
    return store.commit(name, loaded, fed, extra);
  };
  drv.store = racing;
  const todo = await drv.drive([PROPOSAL]);
  assert.equal(todo.todo, 'ask');
  assert.equal(losses, 0);
  assertValidates(drv.log(), KEY);
  // A writer that always wins: the driver gives up, writing nothing of its own.
  const before = store.load('run-1').held.anchor.records;
  losses = 100;
  await assert.rejects(drv.answer(todo.request, rk.driverApproval(todo.request, true, 'alice', 40)),
    (e) => e instanceof d.Conflict && /lost 8 times/.test(e.message));
  assert.equal(store.load('run-1').held.anchor.records, before + d.RETRIES);
  assertValidates(drv.log(), KEY);
});

for (const [table, create] of Object.entries(EARLIER)) {
  test(`${table}: a database an earlier release wrote is refused with a clear message`, () => {
    const db = open();
    db.exec(create);
    const cols = table === 'turns' ? 6 : 5;
    db.prepare(`INSERT INTO ${table} VALUES (${Array(cols).fill('?').join(', ')})`)
      .run('run-1', 1, '{}', '{"call_ids":[],"keys":{}}', null, ...(cols === 6 ? [null] : []));
    assert.throws(() => new d.SqliteDriverStore(db), (e) => e instanceof d.EarlierStore &&
      e.message.includes(`1 run(s) in the table ${table}`) &&
      e.message.includes('cannot drive them') && e.message.includes('RENAME'));
    // Nothing was created; moved away, the database opens.
    assert.equal(db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'resumable_runs'")
      .get().n, 0);
    db.exec(`ALTER TABLE ${table} RENAME TO ${table}_earlier`);
    assert.doesNotThrow(() => new d.SqliteDriverStore(db));
  });

  test(`${table}: an empty earlier table is no bar`, () => {
    const db = open();
    db.exec(create);
    const store = new d.SqliteDriverStore(db);
    driver(store);
    assert.notEqual(store.load('run-1'), null);
  });
}
