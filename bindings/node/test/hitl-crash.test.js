'use strict';
// The kernel's HITL gate inside LangChain's createAgent across a SIGKILL: the process dies
// right after the kernel took the approver's decisions (an approval and an edit), before the
// graph stored the middleware's answer or any tool ran. The app sends the same answer again
// in a new process: the kernel answers it as already taken, the edit's arguments are taken
// from it (checked against the kernel's digest), and the dispatches the dead process made are
// reconciled by asking the tool, then made once, under their keys.

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test } = require('node:test');

const Database = require('better-sqlite3');

const rk = require('..');
const agents = require('../agents');
const { Ledger } = require('./ledger');

const WORKER = path.join(__dirname, 'hitl-crash-worker.js');

function spawn(step, dir, crash = '') {
  const script = `require(${JSON.stringify(WORKER)}).main(process.argv.slice(1))`;
  return spawnSync(process.execPath, ['-e', script, step, dir], {
    env: { ...process.env, CRASH: crash },
    encoding: 'utf8',
    timeout: 120_000,
  });
}

function worker(step, dir) {
  const p = spawn(step, dir);
  assert.equal(p.status, 0, p.stderr);
  const lines = p.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

function kernelRun(dir) {
  const db = new Database(path.join(dir, 'kernel.db'));
  try {
    return new agents.SqliteTurnStore(db).load('run-1').run;
  } finally {
    db.close();
  }
}

test('gate: killed after the kernel took the decisions, the answer sent again runs each call once', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'resumable-hitl-crash-'));
  try {
    assert.deepEqual(worker('start', dir), { awaiting: ['c1', 'c2'] });
    const killed = spawn('decide', dir, 'decided');
    assert.equal(killed.signal, 'SIGKILL', killed.stderr);
    const ledger = new Ledger(path.join(dir, 'tool.ledger'));
    assert.equal(ledger.commits(), 0);
    // The kernel took both decisions and dispatched both calls; nothing else happened.
    const decided = kernelRun(dir);
    assert.deepEqual(decided.batch.slots.map((s) => s.state), ['in_flight', 'in_flight']);
    assert.equal(decided.batch.slots[1].call.call.args, rk.digest({ post: 20 }));
    // The same answer, sent again by a new process.
    assert.deepEqual(worker('resend', dir), { final: 'done' });
    assert.deepEqual(ledger.entries().map((e) => e.args.post).sort((a, b) => a - b), [1, 20]);
    const settled = kernelRun(dir);
    assert.deepEqual(settled.batch.slots.map((s) => s.state), ['committed', 'committed']);
    // Each was reconciled first (the tool held nothing under its key), then made once.
    assert.deepEqual(settled.last_resume.decision, {
      decision: 'reconcile',
      answer: 'not_committed',
    });
    // And once more: no interrupt waits, so the answer comes to nothing and nothing runs.
    assert.deepEqual(worker('resend', dir), { final: 'done' });
    assert.equal(ledger.commits(), 2);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
