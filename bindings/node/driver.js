'use strict';
// The driving contract's I/O, once, for every adapter of this package: the SQLite store of
// the schema both language packages share, compare-and-set with retry on a lost race, the
// audit log and its anchor, and the loop "plan -> feed and commit -> carry out the tool calls
// -> feed their answers". Every rule lives in the driver core (the Rust crate
// `resumable-driver`, reached through `index.js`): what to feed, the time an input is judged
// at, the arguments a tool receives, whether a proposed call is the recorded one, when to
// expire. This module only loads, commits and calls out.
//
// - Time: `clock()` is the adapter's own; the core stamps every input with it. A party's
//   message is judged for its checkpoint and decision alone: a time it claims is never read.
// - Facts: `facts(proposals)` is a function the app gives, observing the resource version,
//   the permission and the budget itself, never copied from a party's message.
// - Tools: `{ commit(call), query(call) }` (see README.md, "The tool protocol").

const rk = require('./index.js');

/** Most times a staged input is staged again after losing a compare-and-set. */
const RETRIES = 8;
/** Most moves one `drive` makes before it gives up (a tool that never settles). */
const MAX_ROUNDS = 1000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS resumable_runs (
  name TEXT PRIMARY KEY,
  revision INTEGER NOT NULL,
  records INTEGER NOT NULL,
  held TEXT NOT NULL,
  book TEXT NOT NULL,
  extra TEXT
);
CREATE TABLE IF NOT EXISTS resumable_audit (
  name TEXT NOT NULL, seq INTEGER NOT NULL, line TEXT NOT NULL, PRIMARY KEY (name, seq)
);`;

/** The tables earlier releases of this package wrote (one row per run, no audit log). */
const EARLIER_TABLES = ['kernel_runs', 'turns'];

/** A store written by an earlier release holds runs this release cannot drive. */
class EarlierStore extends Error {
  constructor(message) {
    super(message);
    this.name = 'EarlierStore';
  }
}

/** Another writer kept winning the compare-and-set: nothing of this input was written. */
class Conflict extends Error {
  constructor(message) {
    super(message);
    this.name = 'Conflict';
  }
}

/**
 * The kernel refused an input the adapter cannot ask again about (`verdict`: its kind,
 * `rejection` with the evidence, `message`). The refusal is in the audit log.
 */
class Refused extends Error {
  constructor(verdict) {
    super(`${verdict.verdict}: ${verdict.message}`);
    this.name = 'Refused';
    this.rejection = verdict;
  }
}

/** A call other than the proposed one is recorded under its call id: refused, nothing run. */
class Changed extends Error {
  constructor(todo) {
    super(
      `call ${todo.proposed.call_id}: the call recorded under this id is another one ` +
        `(tool ${todo.recorded.tool}, arguments ${todo.recorded.args}); ` +
        `proposed: tool ${todo.proposed.tool}, arguments ${todo.proposed.args}. ` +
        'A new call needs a new call id.',
    );
    this.name = 'Changed';
    this.recorded = todo.recorded;
    this.proposed = todo.proposed;
  }
}

/** The run cannot go on (`phase` failed or completed, `cause`): nothing more is asked. */
class Ended extends Error {
  constructor(todo, name = 'Ended') {
    const cause = todo.cause ? todo.cause.cause : null;
    super(`the run has ${todo.phase}${cause ? ` (${cause}: ${JSON.stringify(todo.cause)})` : ''}`);
    this.name = name;
    this.phase = todo.phase;
    /** Why it failed, by name (`denied`, `expired`, ...), or null. */
    this.cause = cause;
    /** The kernel's whole cause, with its evidence. */
    this.failure = todo.cause ?? null;
  }
}

/** The run waits on something else than this call (another call, a person) or is busy. */
class Waiting extends Error {
  constructor(todo) {
    const what = todo.todo === 'busy' ? `is busy with call ${todo.call_id}` :
      todo.todo === 'unknown' ? `cannot learn the outcome of call ${todo.dispatch.call_id}` :
        `waits on ${todo.reason} by ${todo.responsible} until ${todo.expires_at}`;
    super(`the run ${what}`);
    this.name = 'Waiting';
    this.todo = todo;
  }
}

/** A shape the adapters do not build: named, never guessed. */
class NotBuilt extends Error {
  constructor(message) {
    super(message);
    this.name = 'NotBuilt';
  }
}

function tableExists(db, table) {
  const row = db
    .prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?")
    .get(table);
  return Number(row.n) > 0;
}

/**
 * The runs of every adapter in SQLite, the schema the Python package shares: `resumable_runs`
 * (one row per run: its revision, its log's record count, the held run, its book, an
 * adapter's extra) and `resumable_audit` (each run's log, line by line). `db` is an open
 * database with better-sqlite3's synchronous API (`exec`, `prepare(sql).get/all/run`); the
 * caller brings it.
 *
 * A database an earlier release wrote (tables `kernel_runs`, `turns`) holds runs without an
 * audit log or the arguments of their calls, which this release cannot drive: opening it is
 * refused, naming the tables, unless they are empty.
 */
class SqliteDriverStore {
  constructor(db) {
    this.db = db;
    for (const table of EARLIER_TABLES) {
      if (!tableExists(db, table)) continue;
      const { n } = db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get();
      if (Number(n) > 0) {
        throw new EarlierStore(
          `this database holds ${n} run(s) in the table ${table}, written by an earlier ` +
            'release of @resumable/kernel without an audit log or the arguments of their ' +
            'calls: this release cannot drive them. Finish them with the release that ' +
            `wrote them, or move the table away (ALTER TABLE ${table} RENAME TO ...), then ` +
            'open the database again.',
        );
      }
    }
    db.exec(SCHEMA);
  }

  /** The run stored under `name` (`{ held, book, extra }`), or null. */
  load(name) {
    const row = this.db
      .prepare('SELECT held, book, extra FROM resumable_runs WHERE name = ?')
      .get(name);
    if (row === undefined) return null;
    return { held: rk.parse(row.held), book: rk.parse(row.book), extra: row.extra ?? null };
  }

  /** Stores a new run and line 1 of its log; false if a run of that name is stored. */
  create(name, opened, extra = null) {
    const db = this.db;
    db.exec('BEGIN IMMEDIATE');
    try {
      const changed = db
        .prepare(
          'INSERT OR IGNORE INTO resumable_runs (name, revision, records, held, book, extra) ' +
            'VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(name, opened.held.run.revision, opened.held.anchor.records,
          rk.stringify(opened.held), rk.stringify(opened.book), extra).changes;
      if (changed === 1) {
        db.prepare('INSERT INTO resumable_audit (name, seq, line) VALUES (?, 0, ?)')
          .run(name, opened.line);
      }
      db.exec('COMMIT');
      return changed === 1;
    } catch (e) {
      db.exec('ROLLBACK');
      throw e;
    }
  }

  /**
   * Commits what an input staged on `loaded` (`fed`: its `held`, `book` and audit `line`) in
   * one transaction, with compare-and-set on the loaded run's revision and record count.
   * Returns false, writing nothing, when another writer moved the run first.
   */
  commit(name, loaded, fed, extra) {
    const db = this.db;
    const sets = extra === undefined ? '' : ', extra = ?';
    const more = extra === undefined ? [] : [extra];
    db.exec('BEGIN IMMEDIATE');
    try {
      const changed = db
        .prepare(
          `UPDATE resumable_runs SET revision = ?, records = ?, held = ?, book = ?${sets} ` +
            'WHERE name = ? AND revision = ? AND records = ?',
        )
        .run(fed.held.run.revision, fed.held.anchor.records, rk.stringify(fed.held),
          rk.stringify(fed.book), ...more, name, loaded.held.run.revision,
          loaded.held.anchor.records).changes;
      if (changed !== 1) {
        db.exec('ROLLBACK');
        return false;
      }
      db.prepare('INSERT INTO resumable_audit (name, seq, line) VALUES (?, ?, ?)')
        .run(name, fed.held.anchor.records, fed.line);
      db.exec('COMMIT');
      return true;
    } catch (e) {
      db.exec('ROLLBACK');
      throw e;
    }
  }

  /** The run's audit log: its lines in order, each followed by LF. */
  log(name) {
    return this.db
      .prepare('SELECT line FROM resumable_audit WHERE name = ? ORDER BY seq')
      .all(name)
      .map((r) => `${r.line}\n`)
      .join('');
  }

  /** The log's anchor for `resumable validate --anchor`: `RECORDS:MAC`. */
  anchor(name) {
    const s = this.load(name);
    if (s === null) throw new Error(`run ${name} is not in the store`);
    return `${s.held.anchor.records}:${s.held.anchor.mac}`;
  }
}

const OBSERVED = Object.freeze({ resource_version: 0, permitted: true, within_budget: true });

/**
 * One run driven through the core. `store` a `SqliteDriverStore`; `name` the run's name in it
 * (one per agent run, e.g. the graph's thread id); `identity` and `policy` the run's (created
 * on first use, at `clock()`); `clock()` the adapter's time, in the unit of every expiry
 * (milliseconds with the default `Date.now`); `facts(proposals)` what the adapter observes
 * now; `tools` a function naming each tool's `{ commit, query }` (or one tool for all); `key`
 * the audit key (64 hex digits), without which the log is chained by SHA-256 alone.
 */
class Driver {
  constructor({ store, name, identity, policy, tools, clock, facts, key, header }) {
    if (store === undefined || name === undefined) throw new TypeError('store and name');
    this.store = store;
    this.name = name;
    this.clock = clock ?? Date.now;
    this.observe = facts ?? (() => OBSERVED);
    this.key = key ?? null;
    this.tools = tools ?? null;
    if (store.load(name) === null) {
      const run = {
        identity: { ...identity },
        policy: policy ?? { operator: 'ops', reconcile_window: 3_600_000 },
        created_at: this.clock(),
      };
      store.create(name, rk.driverOpen({ run, tools: header?.tools ?? null }, this.key));
    }
  }

  /** The run as the store holds it: `{ held, book, extra }`. */
  load() {
    const s = this.store.load(this.name);
    if (s === null) throw new Error(`run ${this.name} is not in the store`);
    return s;
  }

  /** The facts observed now, checked for their shape. */
  facts(proposals) {
    const f = this.observe(proposals);
    if (f === null || typeof f !== 'object' || typeof f.permitted !== 'boolean') {
      throw new TypeError('facts(): { resource_version, permitted, within_budget }');
    }
    return f;
  }

  /**
   * Stages an input on the stored run with `stage(stored, now)` (one of the core's functions)
   * and commits it with compare-and-set; on a lost race loads the run again and stages the
   * same input again, `RETRIES` times at most. `extra(stored, fed)` gives an adapter's extra
   * column to store in the same write (undefined: unchanged). A message the core refuses as
   * not a decision is returned with nothing written.
   */
  commit(stage, extra) {
    for (let attempt = 0; attempt < RETRIES; attempt += 1) {
      const stored = this.load();
      const fed = stage(stored, this.clock());
      if (typeof fed.verdict === 'string') return fed; // not a decision: nothing to commit
      const more = extra === undefined ? undefined : extra(stored, fed);
      if (this.store.commit(this.name, stored, fed, more)) return fed;
    }
    throw new Conflict(`run ${this.name}: the compare-and-set was lost ${RETRIES} times`);
  }

  /** The tool `{ commit, query }` of the name `tool`. */
  tool(tool, given) {
    const tools = given ?? this.tools;
    const found = typeof tools === 'function' ? tools(tool) : tools;
    if (!found || typeof found.commit !== 'function' || typeof found.query !== 'function') {
      throw new TypeError(`no tool { commit, query } for ${tool}`);
    }
    return found;
  }

  /** What to do now about `proposals` (one turn's calls), at the adapter's time. */
  plan(proposals, { turn = false } = {}) {
    const s = this.load();
    const planner = turn ? rk.driverPlanTurn : rk.driverPlan;
    return planner(s.held, s.book, this.clock(), proposals, this.facts(proposals));
  }

  /**
   * Drives `proposals` as far as the core goes without a party: feeds what the plan says,
   * carries out the tool calls after each commit, answers status queries, and returns the
   * first todo the caller must act on: `ask`, `done`, `changed`, `waits`, `busy`, `ended`, or
   * `unknown` (a status query failed; the outcome stays unknown). A feed the kernel refuses
   * throws `Refused`. `turn` plans the calls as one reviewed batch even of one call; `extra`
   * gives an adapter's extra column to store with each feed (see `commit`).
   */
  async drive(proposals, { tools, turn = false, extra } = {}) {
    let refusals = 0;
    for (let round = 0; round < MAX_ROUNDS; round += 1) {
      const todo = this.plan(proposals, { turn });
      if (todo.todo === 'feed') {
        const fed = this.commit((s, now) =>
          rk.driverFeed(s.held, s.book, now, todo.event, todo.kept, this.key), extra);
        if (fed.verdict.verdict !== 'accepted') {
          // Another writer moved the run between the plan and the commit (the refusal is in
          // the log): plan again; the same refusal again and again is the kernel's answer.
          refusals += 1;
          if (refusals >= RETRIES) throw new Refused(fed.verdict);
          continue;
        }
        refusals = 0;
        await this.carryOut(fed, tools);
      } else if (todo.todo === 'query') {
        const unknown = await this.query(todo.dispatch, tools);
        if (unknown) return { todo: 'unknown', dispatch: todo.dispatch };
      } else {
        return todo;
      }
    }
    throw new Error(`run ${this.name}: the calls did not settle in ${MAX_ROUNDS} moves`);
  }

  /** Feeds a party's answer to `request` (only its checkpoint and decision are read). */
  async answer(request, message, { tools } = {}) {
    const fed = this.commit((s, now) => rk.driverAnswer(s.held, s.book, now, request, message,
      this.facts(), this.key));
    if (typeof fed.verdict !== 'string') await this.carryOut(fed, tools);
    return fed;
  }

  /** Feeds a framework's decision list on `request` by `approver`, valid until `expiresAt`. */
  async decide(request, words, approver, expiresAt, { tools, extra, carry = true } = {}) {
    const fed = this.commit((s, now) => rk.driverDecide(s.held, s.book, now, request, words,
      approver, expiresAt, this.facts(), this.key), extra);
    if (carry && typeof fed.verdict !== 'string') await this.carryOut(fed, tools);
    return fed;
  }

  /**
   * Feeds a human-in-the-loop resume value on `request` (the core reads it: spec/frameworks.md,
   * "Resuming"), `approver` the adapter's for a value that names none.
   */
  async resume(request, value, approver, { tools, extra, carry = true } = {}) {
    const fed = this.commit((s, now) => rk.driverResume(s.held, s.book, now, request, value,
      approver, this.facts(), this.key), extra);
    if (carry && typeof fed.verdict !== 'string') await this.carryOut(fed, tools);
    return fed;
  }

  /**
   * Carries out what a committed input commands: each tool call with the arguments the core
   * handed out (the approved or edited ones), its answer fed back; then the status query.
   */
  async carryOut(fed, tools) {
    for (const call of fed.tool_calls) await this.dispatch(call, tools);
    if (fed.query !== null && fed.query !== undefined) await this.query(fed.query, tools);
  }

  /** Calls the tool for one handed-out call and feeds its answer. */
  async dispatch(call, tools) {
    const result = await this.tool(call.tool, tools).commit({ ...call, args: JSON.parse(call.args) });
    if (result === null || result === undefined) {
      throw new TypeError(`tool ${call.tool}: commit() answered nothing (a result is JSON, not null)`);
    }
    return this.commit((s, now) => rk.driverToolResult(s.held, s.book, now, call, result, this.key));
  }

  /**
   * Asks the tool's status query about `dispatch` and feeds the answer: a result (committed),
   * null (firmly not committed) or a throw (unknown). Returns true when the outcome stays
   * unknown.
   */
  async query(dispatch, tools) {
    let found;
    try {
      found = await this.tool(dispatch.tool, tools).query(dispatch);
    } catch {
      found = undefined;
    }
    const fed = this.commit((s, now) =>
      rk.driverReconcile(s.held, s.book, now, dispatch, found, this.facts(), this.key));
    if (typeof fed.verdict === 'string') return false; // not_waiting: answered already; plan again
    if (found === undefined) return true;
    await this.carryOut(fed, tools);
    return false;
  }

  /** When the core must next be called for this run (its deadline), or null. */
  wakeAt() {
    return rk.driverWakeAt(this.load().held);
  }

  /** The run's audit log (JSON lines) and its anchor, for `resumable validate`. */
  log() {
    return { log: this.store.log(this.name), anchor: this.store.anchor(this.name) };
  }
}

/** The outcome a `done` todo holds for the app: a result (parsed JSON), or what a person said. */
function outcomeValue(outcome) {
  if (outcome.outcome === 'result') return { result: JSON.parse(outcome.result) };
  return { [outcome.outcome]: outcome.message };
}

/** Throws the error a todo the caller cannot go on from stands for. */
function stop(todo) {
  switch (todo.todo) {
    case 'changed':
      throw new Changed(todo);
    case 'ended':
      throw new Ended(todo);
    case 'waits':
    case 'busy':
    case 'unknown':
      throw new Waiting(todo);
    default:
      throw new Error(`unexpected todo ${todo.todo}`);
  }
}

module.exports = {
  MAX_ROUNDS,
  RETRIES,
  Changed,
  Conflict,
  Driver,
  EarlierStore,
  Ended,
  NotBuilt,
  Refused,
  SqliteDriverStore,
  Waiting,
  outcomeValue,
  stop,
};
