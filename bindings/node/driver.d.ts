// Types of @resumable/kernel/driver: the driving contract's I/O, once (driver.js says how it
// works). Every rule is the driver core's (index.d.ts, `driver*`); this is the store, the
// compare-and-set, the audit log and the loop around it.

import type {
  Book,
  Call,
  Checkpoint,
  Dispatch,
  Facts,
  FailCause,
  Fed,
  Held,
  Identity,
  JsonValue,
  Name,
  NotADecision,
  PhaseKind,
  Policy,
  Rejected,
  Request,
  Time,
  Todo,
  ToolCall,
  ToolPolicy,
} from './index';

/** Most times a staged input is staged again after losing a compare-and-set (8). */
export const RETRIES: number;
export const MAX_ROUNDS: number;

/** An open database with better-sqlite3's synchronous API. */
export interface SqliteDatabase {
  exec(sql: string): unknown;
  prepare(sql: string): {
    get(...params: unknown[]): any;
    all(...params: unknown[]): any[];
    run(...params: unknown[]): { changes: number };
  };
}

/** One run as the store holds it. */
export interface Stored {
  held: Held;
  book: Book;
  /** An adapter's own (the Agents SDK desk: the serialised RunState). */
  extra: string | null;
}

/** The shared SQLite schema: `resumable_runs` and `resumable_audit`. */
export class SqliteDriverStore {
  constructor(db: SqliteDatabase);
  readonly db: SqliteDatabase;
  load(name: string): Stored | null;
  create(name: string, opened: { held: Held; book: Book; line: string }, extra?: string | null): boolean;
  commit(name: string, loaded: Stored, fed: Fed, extra?: string): boolean;
  /** The run's audit log, JSON lines each followed by LF. */
  log(name: string): string;
  /** `RECORDS:MAC`, for `resumable validate --anchor`. */
  anchor(name: string): string;
}

/** A call as a tool receives it: the arguments the core handed out (approved or edited). */
export interface ToolInvocation extends Omit<ToolCall, 'args'> {
  args: JsonValue;
}

/**
 * A tool, as the driver calls it (README.md, "The tool protocol"). `commit` makes the call at
 * most once per `tool_key` (a retry under the same key answers the first result); `query`
 * answers what was committed under `tool_key`: the result, `null` for "firmly not committed",
 * or throws when it cannot tell.
 */
export interface Tool {
  commit(call: ToolInvocation): Promise<JsonValue> | JsonValue;
  query(call: Dispatch | ToolCall): Promise<JsonValue | null> | JsonValue | null;
}

export type Tools = Tool | ((name: Name) => Tool | undefined);

export interface DriverOptions {
  store: SqliteDriverStore;
  /** The run's name in the store: one per agent run (e.g. the graph's thread id). */
  name: string;
  identity: Identity;
  policy?: Policy;
  tools?: Tools;
  /** The adapter's own clock, in the unit of every expiry (default `Date.now`, ms). */
  clock?: () => number;
  /** What the adapter observes now, never a party's claim. */
  facts?: (proposals?: unknown) => Facts;
  /** The audit key, 64 hex digits (HMAC-SHA-256); without it the log is chained by SHA-256. */
  key?: string | null;
  header?: { tools?: ToolPolicy[] | null };
}

export class Driver {
  constructor(options: DriverOptions);
  readonly store: SqliteDriverStore;
  readonly name: string;
  readonly key: string | null;
  load(): Stored;
  plan(proposals: unknown[], options?: { turn?: boolean }): Todo;
  drive(
    proposals: unknown[],
    options?: { tools?: Tools; turn?: boolean; extra?: (stored: Stored, fed: Fed) => string | undefined },
  ): Promise<Exclude<Todo, { todo: 'feed' } | { todo: 'query' }> | { todo: 'unknown'; dispatch: Dispatch }>;
  commit(
    stage: (stored: Stored, now: number) => Fed | NotADecision,
    extra?: (stored: Stored, fed: Fed) => string | undefined,
  ): Fed | NotADecision;
  answer(request: Request, message: unknown, options?: { tools?: Tools }): Promise<Fed | NotADecision>;
  decide(
    request: Request,
    words: unknown,
    approver: Name,
    expiresAt: number,
    options?: { tools?: Tools; carry?: boolean; extra?: (stored: Stored, fed: Fed) => string | undefined },
  ): Promise<Fed | NotADecision>;
  /** Feeds a human-in-the-loop resume value on `request`, read by the core. */
  resume(
    request: Request,
    value: unknown,
    approver: Name,
    options?: { tools?: Tools; carry?: boolean; extra?: (stored: Stored, fed: Fed) => string | undefined },
  ): Promise<Fed | NotADecision>;
  wakeAt(): Time | null;
  /** The audit log and its anchor, for `resumable validate --key-file K --anchor A`. */
  log(): { log: string; anchor: string };
}

export class EarlierStore extends Error {}
export class Conflict extends Error {}
export class NotBuilt extends Error {}
/** The kernel refused an input: `rejection` is its verdict. */
export class Refused extends Error {
  rejection: Rejected | NotADecision;
}
/** A different call under a recorded call id: refused, never the old receipt. */
export class Changed extends Error {
  recorded: Call;
  proposed: Call;
}
/** The run cannot go on. */
export class Ended extends Error {
  phase: PhaseKind;
  cause: FailCause['cause'] | null;
  failure: FailCause | null;
}
/** The run waits on something else, or is busy. */
export class Waiting extends Error {
  todo: Todo | { todo: 'unknown'; dispatch: Dispatch };
}

export function outcomeValue(outcome: unknown): { [k: string]: JsonValue };
export function stop(todo: Todo): never;
export type { Checkpoint };
