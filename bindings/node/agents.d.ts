// Types of @resumable/kernel/agents: approvals of the OpenAI Agents JS SDK's `needsApproval`
// tools, decided by the kernel first, with the SDK's RunState stored in the same write as the
// kernel's run. agents.js says how it works and what it does not do yet (one interruption per
// turn; several are refused with `NotBuilt`).

import type {
  Accepted,
  Call,
  Checkpoint,
  History,
  Identity,
  Input,
  Name,
  Run,
} from './index';
import type { ApprovalRequest, DecisionValue, SqliteDatabase, Tool } from './gate';

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

export interface DeskOptions {
  store: TurnStore;
  name: string;
  identity: Identity;
  /** The time of each input (non-negative integers, never going back). */
  clock: () => number;
  operator?: Name;
  reconcileWindow?: number;
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
   * Suspends the kernel's run for the turn's one interruption and stores the SDK's state with
   * it; throws `NotBuilt` for several. Returns the request an approver decides on.
   */
  suspend(
    result: { interruptions: ApprovalItem[]; state: { toString(): string } },
    options: { requester: Name; approver: Name; expiresIn: number },
  ): ApprovalRequest;
  /**
   * Feeds a decision to the kernel first (throws `Refused`: nothing changes); an accepted one
   * is applied to the SDK's state, stored with the kernel's run, and the state returned.
   */
  decide<S = any>(agent: any, decision: DecisionValue): Promise<S>;
  /** The SDK's state as stored with the kernel's run (to run it again after a restart). */
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
