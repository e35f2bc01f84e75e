'use strict';
// The kernel's HITL gate inside LangChain's createAgent across a SIGKILL: the process dies
// right after the kernel took the approver's decisions (an approval and an edit), before the
// graph stored the middleware's answer or any tool ran. The app sends the same answer again
// in a new process: the kernel answers it as already taken, the edit's arguments are taken
// from it (checked against the kernel's digest), and the dispatches the dead process made are
// reconciled by asking the tool, then made once, under their keys.

const assert = require('node:assert/strict');
const path = require('node:path');
const { test } = require('node:test');

const rk = require('..');
const agents = require('../agents');
const { said, scratch, spawnWorker, storedIn } = require('./helpers');
const { Ledger } = require('./ledger');

const WORKER = path.join(__dirname, 'hitl-crash-worker.js');

const { tmp } = scratch('resumable-hitl-crash-');

const spawn = (step, dir, crash = '') => spawnWorker(WORKER, [step, dir], crash);
const worker = (step, dir) => said(spawn(step, dir));
const kernelRun = (dir) => storedIn(path.join(dir, 'kernel.db'), agents.SqliteTurnStore).held.run;

test('gate: killed after the kernel took the decisions, the answer sent again runs each call once', () => {
  const dir = tmp();
  assert.deepEqual(worker('start', dir), { awaiting: ['c1', 'c2'] });
  const killed = spawn('decide', dir, 'before');
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
});
