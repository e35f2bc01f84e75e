// Types of @resumable/kernel/agents: approvals of the OpenAI Agents JS SDK's `needsApproval`
// tools, glue over the driver core (agents.js says how it works). Typed against the SDK's own
// RunState: `decide` and `storedState` hand back the caller's RunState type.

import type { Held, Book, JsonValue, Name, Request, Run, Checkpoint, Allowed, ToolContract } from './index';
import type { Driver, DriverOptions, Tool } from './driver';

export { Changed, Ended, NotBuilt, Refused, SqliteDriverStore } from './driver';
export { SqliteDriverStore as SqliteTurnStore } from './driver';

/** The parts of an SDK RunState the desk uses. */
export interface RunStateLike {
  getInterruptions(): Array<{ rawItem: unknown }>;
  approve(item: any, options?: any): void;
  reject(item: any, options?: any): void;
  toString(): string;
}

/** The SDK's RunState class (`require('@openai/agents').RunState`), the caller's own. */
export interface RunStateClass<S extends RunStateLike> {
  fromString(agent: any, text: string): Promise<S>;
}

/** A turn that stopped on approvals, as the SDK's `run` returns it. */
export interface InterruptedResult {
  interruptions: ReadonlyArray<{ name?: string; rawItem: unknown }>;
  state: { toString(): string };
}

/** One decision on one call, in the SDK's words. */
export interface DeskDecision {
  call_id: Name;
  type: 'approve' | 'reject' | 'deny';
  approver: Name;
  expires_at: number;
  message?: string;
}

export interface DeskOptions<S extends RunStateLike> extends DriverOptions {
  RunState: RunStateClass<S>;
  allowed?: Allowed;
  operator?: Name;
  reconcileWindow?: number;
  contract?: ToolContract;
  driver?: Driver;
}

export class ApprovalDesk<S extends RunStateLike = RunStateLike> {
  constructor(options: DeskOptions<S>);
  readonly driver: Driver;
  turn(): { held: Held; book: Book; extra: string | null; run: Run; checkpoint: Checkpoint | null; state: string | null };
  suspend(
    result: InterruptedResult,
    ask: { requester: Name; approver: Name; expiresIn: number },
  ): Promise<Request>;
  /** The SDK's state to run once every call is decided; null while one awaits. */
  decide(agent: unknown, value: { request: Request; checkpoint: Checkpoint; decisions: DeskDecision[] }): Promise<S | null>;
  storedState(agent: unknown): Promise<S>;
  /** In the SDK tool's `execute`: `runTool(details.toolCall, tool)`; null: not dispatched. */
  runTool(
    toolCall: { callId: string; name: string; arguments: string } | undefined,
    tool: Tool,
  ): Promise<JsonValue | null>;
  log(): { log: string; anchor: string };
}

export function approveCall(request: Request, callId: Name, approver: Name, expiresAt: number): DeskDecision;
export function rejectCall(
  request: Request,
  callId: Name,
  approver: Name,
  expiresAt: number,
  message: string,
): DeskDecision;
export function denyCall(request: Request, callId: Name, approver: Name, expiresAt: number): DeskDecision;
export function decisions(
  request: Request,
  list: DeskDecision[],
): { request: Request; checkpoint: Checkpoint; decisions: DeskDecision[] };
export type { JsonValue };
