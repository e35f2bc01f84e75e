'use strict';
// What the OpenAI Agents SDK tests and their worker processes share: the run's identity, the
// publish tool that needs approval (its `execute` plain, or through the kernel's desk), the
// desk a worker process opens over its directory, the request it keeps there for the next
// process, and `DeskScene`: an agent whose publish tool the desk gates, with the tool's
// ledger, on a clock of ticks, which each test file gives its own `turn` and `decide`.

const fs = require('node:fs');
const path = require('node:path');

const Database = require('better-sqlite3');
const { Agent, RunState, tool } = require('@openai/agents');
const { z } = require('zod');

const agents = require('../agents');
const { DedupingTool, Ledger } = require('./ledger');
const { ScriptedModel } = require('./scripted-model');

const IDENTITY = { tenant: 'acme', session: 'chat-1', run: 'run-1', definition: 'writer@1' };
const KEY = 'b2'.repeat(32);

/** The SDK's `publish` tool, which needs approval; `execute` carries the post out. */
function publishTool(execute) {
  return tool({
    name: 'publish',
    description: 'Publish a post.',
    parameters: z.object({ post: z.number() }),
    needsApproval: true,
    execute,
  });
}

/** The publish tool whose `execute` goes through the desk's `runTool` to `publisher`. */
function gatedPublish(desk, publisher) {
  return publishTool(async ({ post }, _ctx, details) => {
    void post; // the SDK's arguments: the tool gets the ones the core hands out
    const result = await desk.runTool(details.toolCall, publisher);
    return result ?? 'refused: the kernel has not dispatched this call';
  });
}

/** The desk of a worker process: its turns in DIR/turns.db, on the wall clock. */
function workerDesk(dir) {
  return new agents.ApprovalDesk({
    store: new agents.SqliteTurnStore(new Database(path.join(dir, 'turns.db'))),
    name: 'run-1',
    identity: IDENTITY,
    clock: () => Date.now(),
    reconcileWindow: 3_600_000,
    key: KEY,
    RunState,
  });
}

const requestFile = (dir) => path.join(dir, 'request.json');

/**
 * Suspends the desk on the turn's interruptions (`result`, the SDK's), as `writer` asking
 * `alice`, and keeps the request in DIR for the process that decides.
 */
async function suspendAndKeep(desk, result, dir) {
  const request = await desk.suspend(result, {
    requester: 'writer',
    approver: 'alice',
    expiresIn: 600_000,
  });
  fs.writeFileSync(requestFile(dir), JSON.stringify(request));
  return request;
}

/** The request a former process kept in DIR. */
const keptRequest = (dir) => JSON.parse(fs.readFileSync(requestFile(dir), 'utf8'));

/**
 * An agent whose publish tool needs approval, the kernel's desk (its turns in DIR/turns.db,
 * the database closed by `closing`), and the tool's ledger in DIR. `allowed` is the run's
 * policy's (by default every verdict).
 */
class DeskScene {
  constructor(dir, closing, { allowed } = {}) {
    this.ledger = new Ledger(path.join(dir, 'tool.ledger'));
    this.ticks = 0;
    const db = new Database(path.join(dir, 'turns.db'));
    closing(() => db.close());
    this.desk = new agents.ApprovalDesk({
      store: new agents.SqliteTurnStore(db),
      name: 'run-1',
      identity: IDENTITY,
      clock: () => this.clock(),
      allowed,
      RunState,
      key: KEY,
    });
    this.publish = gatedPublish(this.desk, new DedupingTool(this.ledger));
  }

  clock() {
    this.ticks += 1;
    return this.ticks;
  }

  agent(...turns) {
    return new Agent({ name: 'writer', model: new ScriptedModel(turns), tools: [this.publish] });
  }
}

module.exports = {
  DeskScene,
  IDENTITY,
  KEY,
  gatedPublish,
  keptRequest,
  publishTool,
  suspendAndKeep,
  workerDesk,
};
