// Types of @resumable/kernel/agents: approvals of the OpenAI Agents JS SDK's `needsApproval`
// tools, decided by the kernel first, a turn's interruptions as one kernel batch, with the
// SDK's RunState stored in the same write as the kernel's run. agents.js says how it works and
// what it does not do (a turn of more than `BATCH_CAPACITY` interruptions: `NotBuilt`).

import type {
  Accepted,
  Allowed,
  Approval,
  Call,
  Checkpoint,
  History,
  Identity,
  Input,
  Name,
  Run,
  Time,
} from './index';
import type { SqliteDatabase, Tool } from './gate';

export { NotBuilt, Refused } from './gate';

/** What the store holds for one agent run, all written in one statement. */
export interface Turn {
  run: Run;
  history: History;
  checkpoint: Checkpoint | null;
  /** The SDK's serialised RunState (`state.toString()`), once a turn was suspended. */
  state: string | null;
}

/** Where turns live: synchronous, compare-and-set on the kernel's revision. */
export interface TurnStore {
  load(name: string): Turn | null;
  commit(name: string, before: Run['revision'] | null, turn: Turn): void;
}

/** Kernel runs and SDK run states in SQLite (better-sqlite3's API), one row per run. */
export class SqliteTurnStore implements TurnStore {
  constructor(db: SqliteDatabase);
  readonly db: SqliteDatabase;
  load(name: string): Turn | null;
  commit(name: string, before: Run['revision'] | null, turn: Turn): void;
}

/** The SDK's approval item, as far as the kernel reads it. */
export interface ApprovalItem {
  name?: string;
  rawItem: { callId: string; name: string; arguments?: string };
}

/** The kernel's call for an SDK approval item (key: `${runName}:${callId}`). */
export function callOf(item: ApprovalItem, runName: string): Call;

/** The parts of the SDK's RunState class the desk uses. */
export interface RunStateClass {
  fromString(agent: any, text: string): Promise<{
    getInterruptions(): ApprovalItem[];
    approve(item: any): void;
    reject(item: any, options?: { message?: string }): void;
    toString(): string;
  }>;
}

/** What an approver decides on: the batch's calls, in order, and its checkpoint. */
export interface BatchRequest {
  calls: { call: Call; requester: Name }[];
  checkpoint: Checkpoint;
}

/** One decision of the desk's: the SDK's words (`approve`, `reject` with its message) or `deny`. */
export type DeskDecision =
  | { approval: Approval; verdict: 'approve' }
  /** `message` is what the model is told; the kernel binds its digest. */
  | { approval: Approval; verdict: 'reject'; message: string }
  | { approval: Approval; verdict: 'deny' };

/** Decisions on calls of one batch, fed to the kernel as one input. */
export interface BatchDecisionValue {
  at: Time;
  checkpoint: Checkpoint;
  decisions: DeskDecision[];
}

/** The approval of one call of `request`. */
export function approveCall(
  request: BatchRequest,
  callId: string,
  approver: Name,
  expiresAt: Time,
): DeskDecision;
/** The rejection of one call of `request`: the model is told `message`, the run goes on. */
export function rejectCall(
  request: BatchRequest,
  callId: string,
  approver: Name,
  expiresAt: Time,
  message: string,
): DeskDecision;
/** The denial of one call of `request`: the run fails, no call of the batch runs. */
export function denyCall(
  request: BatchRequest,
  callId: string,
  approver: Name,
  expiresAt: Time,
): DeskDecision;
/** Decisions on calls of `request`, made at `at`, as `decide` takes them. */
export function decisions(
  request: BatchRequest,
  list: DeskDecision[],
  at: Time,
): BatchDecisionValue;

export interface DeskOptions {
  store: TurnStore;
  name: string;
  identity: Identity;
  /** The time of each input (non-negative integers, never going back). */
  clock: () => number;
  operator?: Name;
  reconcileWindow?: number;
  /** The verdicts the run's policy allows (POL-1); by default every one. */
  allowed?: Allowed;
  /** The SDK's RunState class; by default `require('@openai/agents').RunState`. */
  RunState?: RunStateClass;
}

/** One agent run's approvals, decided by the kernel. */
export class ApprovalDesk {
  constructor(options: DeskOptions);
  turn(): Turn;
  /** One kernel step, committed (with `state`, if given) before anything else happens. */
  step(input: Input, state?: string): Accepted;
  /**
   * Suspends the kernel's run for the turn's interruptions as one batch and stores the SDK's
   * state with it; throws `NotBuilt` for more than `BATCH_CAPACITY`. Returns the request an
   * approver decides on.
   */
  suspend(
    result: { interruptions: ApprovalItem[]; state: { toString(): string } },
    options: { requester: Name; approver: Name; expiresIn: number },
  ): BatchRequest;
  /**
   * Feeds decisions to the kernel first (throws `Refused`: nothing changes); accepted ones are
   * applied to the SDK's state and stored with the kernel's run. The state, ready to run, once
   * every call of the batch is decided; null while some call awaits its decision.
   */
  decide<S = any>(agent: any, decision: BatchDecisionValue): Promise<S | null>;
  /**
   * The SDK's state as stored with the kernel's run (to run it again after a restart); throws
   * while the batch awaits decisions.
   */
  storedState<S = any>(agent: any): Promise<S>;
  /**
   * Carries out the call from inside the SDK tool's `execute`, under the kernel's tool key: a
   * recorded result is returned, a dispatch this desk committed is made and recorded, one left
   * in flight by a process that died is reconciled with the tool, never repeated blindly.
   * Null when the kernel has not dispatched the call: the tool must not run.
   */
  runTool(callId: string, tool: Tool, args: { [name: string]: unknown }): Promise<string | null>;
  /** Records the tool's result in the kernel's run. */
  record(callId: string, attempt: number, result: string): void;
}
