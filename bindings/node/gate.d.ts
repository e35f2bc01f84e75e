// Types of @resumable/kernel/gate: a tool call gated behind an approval in LangGraph.js, glue
// over the driver core (gate.js says how it works).

import type { Answer, JsonValue, Name, Request, Rejection, ToolContract } from './index';
import type { Driver, DriverOptions, Tool, Tools } from './driver';

export {
  Changed,
  Ended,
  NotBuilt,
  Refused,
  SqliteDriverStore,
  SqliteDriverStore as SqliteRunStore,
  Waiting,
} from './driver';
export type { SqliteDatabase, Tool, Tools } from './driver';

/** The approver denied the call: the run failed, the call was never made. */
export class Denied extends Error {
  phase: string;
  cause: string | null;
}

/** What an interrupt shows: the core's request, and after a refusal, why. */
export type ApprovalRequest = Request & {
  refused?: Rejection | {};
  verdict?: string;
  message?: string;
};

/** The call a node wants to make. */
export interface GatedCall {
  callId: string;
  tool: string;
  args: JsonValue;
  /** The idempotency key; the tool sees it bound to the run (`tool_key`). */
  key: string;
  contract?: ToolContract;
}

export interface GateOptions extends Omit<DriverOptions, 'tools'> {
  /** LangGraph's `interrupt`. */
  interrupt: (value: ApprovalRequest | { [k: string]: JsonValue }) => unknown;
  tool?: Tool;
  tools?: Tools;
  contract?: ToolContract;
  driver?: Driver;
}

export class ApprovalGate {
  constructor(options: GateOptions);
  readonly driver: Driver;
  /** Makes the call once its approver approved it; returns the tool's result. */
  call(
    call: GatedCall,
    ask: { requester: Name; approver: Name; expiresIn: number },
  ): Promise<JsonValue>;
  stored(): ReturnType<Driver['load']>;
  log(): { log: string; anchor: string };
}

/** The approver's answer approving the one call of `request`, valid until `expiresAt`. */
export function approve(request: Request, approver: Name, expiresAt: number): Answer;
/** The approver's answer denying it: the run fails. */
export function deny(request: Request, approver: Name, expiresAt: number): Answer;
