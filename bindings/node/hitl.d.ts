// Types of @resumable/kernel/hitl: LangChain's human-in-the-loop for `createAgent`, glue over
// the driver core (hitl.js says how it works).

import type { Allowed, Checkpoint, JsonValue, Name, Request, Run, Held, Book, ToolContract, VerdictKind } from './index';
import type { Driver, DriverOptions, Tool } from './driver';

export { Changed, NotBuilt, Refused } from './driver';
export { Denied } from './gate';

/** A HITL decision, in LangChain's words. */
export type HitlDecision =
  | { type: 'approve' }
  | { type: 'edit'; editedAction: { name: string; args: { [k: string]: JsonValue } } }
  | { type: 'reject'; message?: string }
  | { type: 'respond'; message: string }
  | { type: 'deny' };

/** What the interrupt shows: the plain middleware's fields and the core's request. */
export type HitlRequest = Request & {
  actionRequests: Array<{ name: string; args: JsonValue }>;
  reviewConfigs: Array<{ actionName: string; allowedDecisions: VerdictKind[] }>;
  refused?: unknown;
  verdict?: string;
  message?: string;
};

export interface HitlOptions extends Omit<DriverOptions, 'tools'> {
  interruptOn: { [tool: string]: boolean | { allowedDecisions: VerdictKind[] } };
  /** The gated tools, carried out by the gate with the core's arguments. */
  tools: { [tool: string]: Tool } | ((name: string) => Tool | undefined);
  requester: Name;
  approver: Name;
  expiresIn: number;
  allowed?: Allowed;
  operator?: Name;
  reconcileWindow?: number;
  contract?: ToolContract;
  driver?: Driver;
}

export class HitlGate {
  constructor(options: HitlOptions);
  readonly driver: Driver;
  allowed: { [tool: string]: VerdictKind[] };
  middleware(): any;
  turn(): { held: Held; book: Book; extra: string | null; run: Run; checkpoint: Checkpoint | null };
  log(): { log: string; anchor: string };
}

/** The resume value: decisions in request order (`null` leaves a call), on its checkpoint. */
export function hitlDecisions(
  request: Request,
  list: Array<HitlDecision | null>,
  options?: { approver?: Name; expiresAt?: number },
): { checkpoint: Checkpoint; decisions: Array<HitlDecision | null>; approver?: Name; expires_at?: number };
