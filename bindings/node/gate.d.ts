// Types of @resumable/kernel/gate: a tool call gated behind a person's approval, where the
// kernel decides, for graph runtimes whose nodes pause with an `interrupt` and run again from
// their start on resume (LangGraph's `interrupt()` and `new Command({ resume })`). gate.js
// says how it works and what it does not do (one call per interrupt; batches are hitl.js).

import type {
  Call as KernelCall,
  Checkpoint,
  Digest,
  Identity,
  History,
  IdempotencyKey,
  Input,
  Accepted,
  Name,
  Rejected,
  Run,
  Time,
} from './index';

/** How many answers one call may go through before the gate gives up. */
export const MAX_ROUNDS: number;

/** A rejection the gate raises for a resume value that is not a decision at all. */
export interface NotADecision {
  verdict: 'not_a_decision';
  accepted: false;
  rejection: { rejection: 'not_a_decision' };
  message: string;
}

/** The kernel refused the input: nothing was committed and nothing was dispatched. */
export class Refused extends Error {
  name: 'Refused';
  readonly rejection: Rejected | NotADecision;
  constructor(rejection: Rejected | NotADecision);
}

/** A shape the adapters do not build: named, never guessed (see each module's header). */
export class NotBuilt extends Error {
  name: 'NotBuilt';
}

/** The approver denied the call: the run has failed, and the call was never made. */
export class Denied extends Error {
  name: 'Denied';
}

/** A run as a store holds it. */
export interface Stored {
  run: Run;
  history: History;
  checkpoint: Checkpoint | null;
}

/** Where the kernel's runs live: synchronous, compare-and-set on the revision. */
export interface RunStore {
  load(name: string): Stored | null;
  /** Stores the run if the stored revision is still `before` (null: a new run); throws if not. */
  commit(name: string, before: Run['revision'] | null, stored: Stored): void;
}

/** The synchronous database API the SQLite store needs (better-sqlite3's). */
export interface SqliteDatabase {
  exec(sql: string): unknown;
  prepare(sql: string): {
    get(...params: unknown[]): any;
    run(...params: unknown[]): { changes: number };
  };
}

/** The kernel's runs in SQLite: one row per run, with its call history and last checkpoint. */
export class SqliteRunStore implements RunStore {
  constructor(db: SqliteDatabase);
  readonly db: SqliteDatabase;
  load(name: string): Stored | null;
  commit(name: string, before: Run['revision'] | null, stored: Stored): void;
}

/** A call history as JSON, and back. */
export interface HistoryJson {
  call_ids: string[];
  keys: { [key: string]: { args: Digest; committed: boolean } };
}
export function historyJson(history: History): HistoryJson;
export function historyOf(json: HistoryJson): History;

/** A tool call the graph wants to make. */
export interface GatedCall {
  callId: Name;
  tool: Name;
  /** The arguments; the kernel binds the approval to their digest (RFC 8785, SHA-256). */
  args: { [name: string]: unknown };
  key: IdempotencyKey;
}

/** The kernel's form of a call (its arguments as their digest). */
export function kernelForm(call: GatedCall): KernelCall;

/**
 * A tool as the kernel drives it: `commit` carries a call out under the kernel's tool key and
 * returns its result (a deduping tool commits a key once and answers the first result again),
 * `query` says whether a key was committed and with what result.
 */
export interface Tool {
  commit(toolKey: Digest, tool: Name, args: GatedCall['args']): string | Promise<string>;
  query(toolKey: Digest): string | null | Promise<string | null>;
}

/** What an interrupt surfaces: the call, its requester, the checkpoint to cite. */
export interface ApprovalRequest {
  call: KernelCall;
  requester: Name;
  checkpoint: Checkpoint;
  /** Why the last answer was refused (its kind and evidence), if it was. */
  refused?: Rejected['rejection'] | NotADecision['rejection'];
  message?: string;
}

/** The resume value that decides a request. */
export interface DecisionValue {
  at: Time;
  checkpoint: Checkpoint;
  decision: Extract<Input, { kind: 'resume' }>['decision'];
}

/** An approval bound to the request's call id, argument digest, requester and revision. */
export function approve(
  request: ApprovalRequest,
  approver: Name,
  expiresAt: Time,
  at: Time,
): DecisionValue;
/** A denial of the request: the run fails. */
export function deny(
  request: ApprovalRequest,
  approver: Name,
  expiresAt: Time,
  at: Time,
): DecisionValue;

export interface GateOptions {
  store: RunStore;
  /** The run's name in the store. */
  name: string;
  identity: Identity;
  tool: Tool;
  /** The graph's interrupt: returns the resume value, or throws to pause the graph. */
  interrupt: (request: ApprovalRequest) => unknown;
  /** The time of each input (non-negative integers, never going back). */
  clock: () => number;
  /** Who may resolve an unknown outcome by intervention (default `ops`). */
  operator?: Name;
  /** How long an unknown outcome may be reconciled (default 3600, in the clock's unit). */
  reconcileWindow?: number;
}

/** Gates the calls of one kernel run behind approvals. */
export class ApprovalGate {
  constructor(options: GateOptions);
  /** The run as the store holds it. */
  stored(): Stored;
  /** One kernel step, committed before anything it commands is carried out. */
  step(input: Input): Accepted;
  /**
   * Makes `call` once `approver` approved it and returns the tool's result. Safe to call
   * again from a node that runs again: a recorded result is returned, a pending approval is
   * asked for again, a dispatch in flight is reconciled, never repeated. Throws `Denied` when
   * the run failed on a denial, `NotBuilt` when the run waits on another call's approval.
   */
  call(
    call: GatedCall,
    options: { requester: Name; approver: Name; expiresIn: number },
  ): Promise<string>;
  /** Feeds one resume value to the kernel (throws `Refused`); an accepted approval runs. */
  resume(answer: unknown, call: GatedCall): Promise<void>;
}
