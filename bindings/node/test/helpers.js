'use strict';
// What the tests share: where the repository's scenarios are, and the command-line binary
// they are compared with (RESUMABLE_BIN, else the workspace's release build); the scratch
// directories and handles a test file releases after each test; worker processes started
// with `node -e` and what they said; a store's value read from its SQLite file.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { afterEach } = require('node:test');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SCENARIOS = path.join(ROOT, 'spec', 'scenarios');

function resumableBin() {
  const bin = process.env.RESUMABLE_BIN || path.join(ROOT, 'target', 'release', 'resumable');
  if (!fs.existsSync(bin)) {
    throw new Error(`no resumable binary at ${bin}: run cargo build --release or set RESUMABLE_BIN`);
  }
  return bin;
}

/**
 * Scratch space for the tests of one file: `tmp()` makes a directory under the system's
 * temporary one, named from `prefix`; `closing(close)` has `close` called. After each test,
 * every handle is closed (last opened first), then every directory removed.
 */
function scratch(prefix) {
  const dirs = [];
  const closers = [];
  afterEach(() => {
    while (closers.length > 0) closers.pop()();
    while (dirs.length > 0) fs.rmSync(dirs.pop(), { recursive: true, force: true });
  });
  return {
    tmp() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
    closing(close) {
      closers.push(close);
    },
  };
}

/**
 * Runs the worker module `file` as `node -e "require(file).main(argv)" ...args` in a new
 * process, with CRASH set to `crash` (where a worker kills itself; empty: nowhere), and
 * returns what spawnSync does.
 */
function spawnWorker(file, args, crash = '') {
  const script = `require(${JSON.stringify(file)}).main(process.argv.slice(1))`;
  return spawnSync(process.execPath, ['-e', script, ...args], {
    env: { ...process.env, CRASH: crash },
    encoding: 'utf8',
    timeout: 120_000,
  });
}

/** What a worker that exited cleanly said: the last line it printed, as JSON. */
function said(p) {
  assert.equal(p.status, 0, p.stderr);
  const lines = p.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

/** The value `Store` (an adapter's SQLite store) holds under `name` in `file`, or null. */
function storedIn(file, Store, name = 'run-1') {
  const Database = require('better-sqlite3');
  const db = new Database(file);
  try {
    return new Store(db).load(name);
  } finally {
    db.close();
  }
}

/**
 * Runs `resumable validate --key-file K --anchor A LOG` on a run's audit log (`log`, its
 * `anchor` as RECORDS:MAC) sealed under `key` (64 hex digits); returns what spawnSync does.
 */
function validate({ log, anchor }, key) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'resumable-validate-'));
  try {
    fs.writeFileSync(path.join(dir, 'audit.jsonl'), log);
    fs.writeFileSync(path.join(dir, 'audit.key'), key);
    return spawnSync(resumableBin(), ['validate', '--key-file', path.join(dir, 'audit.key'),
      '--anchor', anchor, path.join(dir, 'audit.jsonl')], { encoding: 'utf8', timeout: 60_000 });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Asserts that the log validates under its key and anchor. */
function assertValidates(logged, key) {
  const p = validate(logged, key);
  assert.equal(p.status, 0, `resumable validate: ${p.stdout}${p.stderr}\n${logged.log}`);
}

module.exports = {
  ROOT,
  SCENARIOS,
  assertValidates,
  resumableBin,
  said,
  scratch,
  spawnWorker,
  storedIn,
  validate,
};
