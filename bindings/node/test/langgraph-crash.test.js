'use strict';
// Inside LangGraph.js: a crash between the side effect and the checkpoint write. A real Node
// process running the graph (SQLite checkpointer) is killed with SIGKILL right after the tool
// committed; a new process goes on from the graph's last checkpoint. The tool's ledger is a
// file outside both, where the commits are counted.

const assert = require('node:assert/strict');
const path = require('node:path');
const { test } = require('node:test');

const rk = require('..');
const gate = require('../gate');
const { said, scratch, spawnWorker, storedIn } = require('./helpers');
const { Ledger } = require('./ledger');

const WORKER = path.join(__dirname, 'langgraph-crash-worker.js');
const STILL = 'LangGraph.js no longer shows this: the gate test beside it guards nothing here';

const { tmp } = scratch('resumable-crash-');

const worker = (mode, step, dir, crash = '') => spawnWorker(WORKER, [mode, step, dir], crash);

const commits = (dir) => new Ledger(path.join(dir, 'tool.ledger')).commits();

/**
 * A new directory whose graph ran to its interrupt and was approved in a process killed with
 * SIGKILL at `crash`, the tool's ledger then holding `committed` commits.
 */
function killedApproving(mode, crash, committed) {
  const dir = tmp();
  assert.equal(said(worker(mode, 'start', dir)).interrupted, true);
  const killed = worker(mode, 'approve', dir, crash);
  assert.equal(killed.signal, 'SIGKILL', killed.stderr);
  assert.equal(commits(dir), committed);
  return dir;
}

// How the kernel's run was last resumed: a reconciliation shows the tool was asked, not
// called again blindly (which a deduping tool would hide from the ledger).
function lastResume(dir) {
  const stored = storedIn(path.join(dir, 'kernel.db'), gate.SqliteDriverStore);
  return stored.held.run.last_resume.decision;
}

/** A new process goes on in `dir`: the node returns the result of the one commit there is. */
function restartedToOneCommit(dir) {
  assert.deepEqual(said(worker('gate', 'restart', dir)), {
    out: ['publish done #1'],
    interrupted: false,
  });
  assert.equal(commits(dir), 1);
}

test('plain: a crash after the commit repeats it', () => {
  const dir = killedApproving('plain', 'after', 1);
  // The graph's checkpoint predates the commit. Depending on whether the resume value reached
  // the checkpointer before the kill, the new process runs the node again with it, or is back
  // at the interrupt, where the approval, sent again because nothing came of it, runs the
  // node again. Either way the post is published a second time.
  let out = said(worker('plain', 'restart', dir));
  if (out.interrupted) out = said(worker('plain', 'resend', dir));
  assert.deepEqual(out.out, ['published with approve']);
  assert.equal(commits(dir), 2, STILL);
});

test('gate: a crash after the commit is reconciled, not repeated', () => {
  const dir = killedApproving('gate', 'after', 1);
  // The new process finds the dispatch in flight in the kernel's run; the kernel asks the
  // tool under the same tool key, records the commit it finds, and the node returns it.
  restartedToOneCommit(dir);
  assert.deepEqual(lastResume(dir), {
    decision: 'reconcile',
    answer: 'committed',
    result: rk.digest('publish done #1'),
  });
  // Once more: nothing left to do, nothing committed again.
  assert.deepEqual(said(worker('gate', 'restart', dir)).out, ['publish done #1']);
  assert.equal(commits(dir), 1);
});

test('gate: a crash between its commit and the tool retries under the same key', () => {
  const dir = killedApproving('gate', 'before', 0);
  // The tool answers that nothing was committed under the key; the kernel's contract for a
  // deduping tool allows a retry under the same key: committed once.
  restartedToOneCommit(dir);
  assert.deepEqual(lastResume(dir), { decision: 'reconcile', answer: 'not_committed' });
});
