// Types of @resumable/kernel/hitl: LangChain's human-in-the-loop for `createAgent`, decided by
// the kernel (a turn's gated tool calls as one batch). hitl.js says how it works and what it
// does not do.

import type {
  Approval,
  Call,
  Checkpoint,
  Name,
  Rejected,
  Time,
  Identity,
  VerdictKind,
  Allowed,
} from './index';
import type { NotADecision, Tool } from './gate';
import type { Turn, TurnStore } from './agents';

export { Denied, NotBuilt, Refused } from './gate';

/** A gated tool: `true` is the plain middleware's default (approve, edit, reject). */
export type InterruptOn = { [tool: string]: boolean | { allowedDecisions: VerdictKind[] } };

/** One decision as the plain middleware takes it, with `deny` for "stop the run". */
export type HitlDecision =
  | { type: 'approve' }
  | { type: 'edit'; editedAction: { name: string; args: { [name: string]: unknown } } }
  | { type: 'reject'; message?: string }
  | { type: 'respond'; message: string }
  | { type: 'deny' };

/** What the gate's interrupt holds: the plain middleware's request and the kernel's batch. */
export interface HitlRequest {
  actionRequests: { name: string; args: { [name: string]: unknown } }[];
  reviewConfigs: { actionName: string; allowedDecisions: VerdictKind[] }[];
  calls: { call: Call; requester: Name }[];
  /** The calls still awaiting a decision. */
  awaiting: string[];
  checkpoint: Checkpoint;
  /** Why the last resume value was refused, if it was. */
  refused?: Rejected['rejection'] | NotADecision['rejection'];
  message?: string;
}

/** The resume value: HITL decisions, each bound to its call. */
export interface HitlResume {
  at: Time;
  checkpoint: Checkpoint;
  decisions: (HitlDecision & { approval: Approval })[];
}

/**
 * The resume value for `request`: one decision per call in the request's order (a shorter
 * list decides the first calls; null skips one), each bound to its call.
 */
export function hitlDecisions(
  request: HitlRequest,
  list: (HitlDecision | null)[],
  options: { approver: Name; expiresAt: Time; at: Time },
): HitlResume;

export interface HitlGateOptions {
  store: TurnStore;
  name: string;
  identity: Identity;
  clock: () => number;
  interruptOn: InterruptOn;
  requester: Name;
  approver: Name;
  expiresIn: number;
  operator?: Name;
  reconcileWindow?: number;
  allowed?: Allowed;
}

/** The kernel's gate for one agent run's human-in-the-loop. */
export class HitlGate {
  constructor(options: HitlGateOptions);
  /** The verdicts each gated tool allows, by tool name. */
  allowed: { [tool: string]: VerdictKind[] };
  turn(): Turn;
  /** The middleware for `createAgent({ middleware })`. */
  middleware(): any;
  /** Carries out the call from inside a gated tool; null when the kernel has not dispatched it. */
  runTool(callId: string, tool: Tool, args: { [name: string]: unknown }): Promise<string | null>;
}
