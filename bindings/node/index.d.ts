// Types of @resumable/kernel: the kernel's JSON forms as the addon reads and writes them
// (spec/ in the repository names every field). Digests are 64 lowercase hex digits, names
// 1 to 64 bytes, idempotency keys 1 to 255 bytes, times and revisions non-negative integers.

/** 64 lowercase hex digits: a SHA-256 digest. */
export type Digest = string;
/** A name of 1 to 64 bytes (tenant, session, call id, tool, approver...). */
export type Name = string;
/** An idempotency key of 1 to 255 bytes. */
export type IdempotencyKey = string;
/**
 * An unsigned 64-bit integer: a number up to 2^53 - 1, a BigInt beyond it (`parse` reads
 * such integers as BigInt and `stringify` writes them back, so nothing is rounded).
 */
export type U64 = number | bigint;
/** A logical time, supplied by the driver (the kernel reads no clock). */
export type Time = U64;
/** A run's revision: each accepted input advances it by one. */
export type Revision = U64;

/** Any JSON value, as `canonical` and `digest` accept it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [name: string]: JsonValue };

export interface Identity {
  tenant: Name;
  session: Name;
  run: Name;
  definition: Name;
}

/** What an approver may decide about one call of a batch (spec 5.5, POL-1). */
export type VerdictKind = 'approve' | 'edit' | 'reject' | 'respond' | 'deny';

/** A set of verdicts, written as the list of their names (each at most once). */
export type Allowed = VerdictKind[];

export interface Policy {
  /** Who may resolve an unknown outcome by intervention. */
  operator: Name;
  /** How long an unknown outcome may be reconciled before it needs an operator. */
  reconcile_window: U64;
  /**
   * The verdicts an approver may give on this run (POL-1); absent: every one. A run that
   * hands rejections back to its agent leaves `deny` out; one that must stop on a refusal
   * leaves `reject` out.
   */
  allowed?: Allowed;
}

export interface ToolContract {
  dedupes: boolean;
  query_fences: boolean;
  max_attempts: number;
  /** The verdicts an approver may give on a call to this tool (POL-1); absent: all but respond. */
  allowed?: Allowed;
}

export interface Call {
  call_id: Name;
  tool: Name;
  args: Digest;
  key: IdempotencyKey;
  contract: ToolContract;
}

export interface BoundCall {
  call: Call;
  key_digest: Digest;
}

export interface InFlight {
  call: BoundCall;
  attempt: number;
  dispatches: number;
}

/** What the run's history holds of a call before it is bound (see `History.prior`). */
export interface Prior {
  call_id_used: boolean;
  key: { args: Digest; committed: boolean } | null;
}

export type Reason =
  | { reason: 'pending_approval'; call: BoundCall; requester: Name }
  | { reason: 'external_callback'; callback: Name }
  | { reason: 'manual_intervention'; unresolved: InFlight | null; cancelled_by: Name | null }
  | { reason: 'resource_wait'; resource: Name }
  /** The calls of the run's `batch` wait for the approver's decisions, one each (5.5). */
  | { reason: 'pending_batch' }
  | { reason: 'outcome_unknown'; in_flight: InFlight; cancelled_by: Name | null };

export type ReasonKind = Reason['reason'];

export type FailCause =
  | { cause: 'denied'; call_id: Name }
  | { cause: 'expired'; unresolved: InFlight | null }
  | { cause: 'cancelled'; by: Name }
  | { cause: 'error'; code: Name }
  | { cause: 'abandoned'; by: Name };

export type Phase =
  | { phase: 'running'; in_flight: InFlight | null }
  | { phase: 'suspended'; reason: Reason; since: Time; expires_at: Time; responsible: Name }
  | { phase: 'completed'; result: Digest }
  | ({ phase: 'failed' } & FailCause);

export type PhaseKind = Phase['phase'];

export interface CallOutcome {
  call_id: Name;
  key: IdempotencyKey;
  args: Digest;
  result: Digest;
}

export interface Approval {
  call_id: Name;
  args: Digest;
  requester: Name;
  approver: Name;
  revision: Revision;
  expires_at: Time;
}

export type Resolution =
  | { resolution: 'committed'; result: Digest }
  | { resolution: 'continue' }
  | { resolution: 'abandon' };

export type QueryAnswer =
  | { answer: 'committed'; result: Digest }
  | { answer: 'not_committed' }
  | { answer: 'unknown' };

/** What was decided about one call of a batch, with the verdict's own value. */
export type CallVerdict =
  | { verdict: 'approve' }
  /** Run the call with the approver's arguments: their digest (BAT-5). */
  | { verdict: 'edit'; args: Digest }
  /** Never run the call; `reason` is the digest of the message handed back to the agent. */
  | { verdict: 'reject'; reason: Digest }
  /** Never run the call; `result` is the digest of the person's answer, the call's result. */
  | { verdict: 'respond'; result: Digest }
  /** Never run the call, and fail the run (APR-4). */
  | { verdict: 'deny' };

/** One decision on one call of a batch, bound to it by its approval (BAT-2). */
export type CallDecision = { approval: Approval } & CallVerdict;

export type Decision =
  | ({ decision: 'approve' } & Approval)
  | ({ decision: 'deny' } & Approval)
  | { decision: 'callback'; callback: Name; payload: Digest }
  | { decision: 'resource_ready'; resource: Name }
  | { decision: 'intervene'; by: Name; resolution: Resolution }
  | ({ decision: 'reconcile' } & QueryAnswer)
  /** Decisions on calls of the pending batch, each naming its call at most once (5.5). */
  | { decision: 'batch'; decisions: CallDecision[] };

export type DecisionKind = Decision['decision'];

export interface ResumeReceipt {
  from: Revision;
  to: Revision;
  checkpoint: Digest;
  decision: Decision;
}

/** Where one call of a batch stands (spec 5.5). */
export type SlotState =
  | { state: 'awaiting' }
  | { state: 'approved' }
  | { state: 'in_flight'; attempt: number; dispatches: number }
  | { state: 'unknown'; attempt: number; dispatches: number }
  | { state: 'held' }
  | { state: 'committed'; result: Digest }
  | { state: 'rejected'; reason: Digest }
  | { state: 'responded'; result: Digest }
  | { state: 'dropped' }
  | { state: 'denied' };

/** One call of a batch and where it stands. */
export type Slot = {
  /** The bound call; after an edit, with the approver's arguments and their key digest. */
  call: BoundCall;
  requester: Name;
  /** The argument digest the agent proposed: what a decision binds to. */
  proposed: Digest;
  /** Its key was bound by no earlier call: an edit may rebind it (BAT-5). */
  fresh: boolean;
  /** The decision it received, and the revision that recorded it. */
  decided: [CallDecision, Revision] | null;
} & SlotState;

/** The run's last batch, from the suspension that opens it until the next one opens. */
export interface Batch {
  /** The revision of the batch's checkpoint: every decision binds to it. */
  opened: Revision;
  /** The digest of the batch's checkpoint. */
  checkpoint: Digest;
  resource_version: U64;
  /** The revision at which the batch left its suspension, once it has. */
  closed: Revision | null;
  /** Its calls, in the order proposed (at most `BATCH_CAPACITY`). */
  slots: Slot[];
}

/** A run: the whole state the kernel decides on. Store it as it is returned. */
export interface Run {
  identity: Identity;
  policy: Policy;
  revision: Revision;
  resource_version: U64;
  updated_at: Time;
  phase: Phase;
  last_call: CallOutcome | null;
  last_resume: ResumeReceipt | null;
  /** The run's last batch; absent before the first. */
  batch?: Batch;
}

/** A sealed checkpoint (spec/checkpoint.md): what a suspension persists and a resume cites. */
export interface Checkpoint {
  schema_version: number;
  identity: Identity;
  revision: Revision;
  resource_version: U64;
  reason: ReasonKind;
  next_intent: string;
  pending: { call_id: Name; tool: Name; args: Digest; attempt: number } | null;
  key_digest: Digest | null;
  requester: Name | null;
  waiting_on: Name | null;
  expires_at: Time;
  responsible: Name;
  created_at: Time;
  cancel_requested_by: Name | null;
  /** For a batch awaiting decisions, the digest of its calls as proposed; absent otherwise. */
  batch?: Digest;
  digest: Digest;
}

/** One call of a batch as the agent proposes it. */
export interface Proposal {
  call: Call;
  /** Who asks for it; never the approver. */
  requester: Name;
  /** What the run's history holds of the call's id and key (`History.prior`). */
  prior: Prior;
}

export type Wait =
  | { wait: 'approval'; call: Call; requester: Name; prior: Prior }
  /** One suspension for up to `BATCH_CAPACITY` calls, in order (BAT-1). */
  | { wait: 'batch'; calls: Proposal[] }
  | { wait: 'callback'; callback: Name }
  | { wait: 'intervention' }
  | { wait: 'resource'; resource: Name };

export interface Facts {
  resource_version: U64;
  permitted: boolean;
  within_budget: boolean;
}

export type Event =
  | { kind: 'suspend'; wait: Wait; expires_at: Time; responsible: Name; resource_version: number }
  | { kind: 'dispatch'; call: Call; prior: Prior }
  | { kind: 'tool_result'; call_id: Name; attempt: number; result: Digest }
  | { kind: 'recover' }
  | { kind: 'resume'; checkpoint: Checkpoint; decision: Decision; facts: Facts }
  | { kind: 'expire' }
  | { kind: 'cancel'; by: Name }
  | { kind: 'complete'; result: Digest }
  | { kind: 'fail'; code: Name };

export type EventKind = Event['kind'];

/** One input to the kernel: a fact or request from outside, with its time. */
export type Input = { at: Time } & Event;

export interface AuditRecord {
  revision: Revision;
  at: Time;
  event: EventKind;
  decision: DecisionKind | null;
  phase: PhaseKind;
  reason: ReasonKind | null;
}

export interface Dispatch {
  call_id: Name;
  tool: Name;
  args: Digest;
  key: IdempotencyKey;
  /** The key the tool is called under: the idempotency key bound to the run's identity. */
  tool_key: Digest;
  attempt: number;
}

/** A history entry; `call_id` and `key` are fingerprints (16 hex digits). */
export type HistoryEntry =
  | { entry: 'bound'; call_id: string; key: string; args: Digest }
  | { entry: 'settled'; key: string };

/** What the driver carries out after the commit that stores the run, in order. */
export type Effect =
  | ({ effect: 'audit' } & AuditRecord)
  | ({ effect: 'history' } & HistoryEntry)
  | ({ effect: 'persist_checkpoint' } & Checkpoint)
  | ({ effect: 'dispatch' } & Dispatch)
  | ({ effect: 'query' } & Dispatch);

export type EffectKind = Effect['effect'];

/** Which identity field a checkpoint got wrong; the values are never echoed (ID-1). */
export type IdentityField = 'tenant' | 'session' | 'run' | 'definition';

/**
 * Which checkpoint field disagrees with the run it claims to describe (`pending_call`: the
 * pending call's id, tool, arguments or attempt).
 */
export type CheckpointField =
  | 'reason' | 'pending_call' | 'key_digest' | 'requester' | 'waiting_on' | 'expires_at'
  | 'responsible' | 'created_at' | 'resource_version' | 'cancel_requested_by' | 'batch';

/** Which part of an approval does not bind to the pending call (APR-1). */
export type ApprovalField = 'call_id' | 'args' | 'requester' | 'revision';

// The kernel's rejections, one interface each: the `rejection` tag and the evidence, field for
// field as the kernel writes them (spec/lifecycle.md section 8). A checkpoint's schema versions
// and a call's attempts are small integers (`number`); times, revisions and resource versions
// are `U64`.

/** The run is completed or failed; nothing moves it again. */
export interface TerminalRejection { rejection: 'terminal'; phase: PhaseKind }
/** The checkpoint names another tenant, session, run or definition. */
export interface IdentityMismatchRejection { rejection: 'identity_mismatch'; field: IdentityField }
/** The input's time is before the run's last accepted input. */
export interface ClockRegressedRejection { rejection: 'clock_regressed'; last: Time; got: Time }
/** The checkpoint was written by a newer schema than this kernel reads. */
export interface SchemaTooNewRejection {
  rejection: 'schema_too_new';
  supported: number;
  got: number;
}
/** The checkpoint claims a schema version no kernel ever wrote (0). */
export interface UnknownSchemaRejection { rejection: 'unknown_schema'; got: number }
/** The checkpoint is an older schema and was not migrated. */
export interface MigrationRequiredRejection {
  rejection: 'migration_required';
  got: number;
  current: number;
}
/** The checkpoint's digest does not match its fields: `expected` recomputed, `found` carried. */
export interface DigestMismatchRejection {
  rejection: 'digest_mismatch';
  expected: Digest;
  found: Digest;
}
/** The checkpoint is older than the run and no resume was taken from it. */
export interface StaleRevisionRejection {
  rejection: 'stale_revision';
  current: Revision;
  got: Revision;
}
/** The checkpoint claims a revision the run never reached. */
export interface FutureRevisionRejection {
  rejection: 'future_revision';
  current: Revision;
  got: Revision;
}
/** This exact decision already resumed this checkpoint: the caller won. */
export interface AlreadyAppliedRejection {
  rejection: 'already_applied';
  from: Revision;
  to: Revision;
}
/** Another decision already resumed this checkpoint: the caller lost. */
export interface AlreadyResumedRejection {
  rejection: 'already_resumed';
  from: Revision;
  to: Revision;
}
/** The resource changed since the checkpoint. */
export interface ResourceChangedRejection {
  rejection: 'resource_changed';
  checkpoint: U64;
  current: U64;
}
/** The run is not suspended. */
export interface NotSuspendedRejection { rejection: 'not_suspended'; phase: PhaseKind }
/** The checkpoint disagrees with the run's suspension: the first field that differs. */
export interface CheckpointMismatchRejection {
  rejection: 'checkpoint_mismatch';
  field: CheckpointField;
}
/** The suspension expired before the decision arrived. */
export interface ExpiredRejection { rejection: 'expired'; expires_at: Time; now: Time }
/** The decision does not answer the suspension's reason. */
export interface DecisionMismatchRejection {
  rejection: 'decision_mismatch';
  reason: ReasonKind;
  decision: DecisionKind;
}
/** The approval is for another call, arguments, requester or revision. */
export interface ApprovalMismatchRejection { rejection: 'approval_mismatch'; field: ApprovalField }
/** The approval itself expired. */
export interface ApprovalExpiredRejection {
  rejection: 'approval_expired';
  expires_at: Time;
  now: Time;
}
/** The requester tried to approve its own call. */
export interface SelfApprovalRejection { rejection: 'self_approval'; party: Name }
/** The decision came from a party other than the one the kernel recorded. */
export interface UnauthorisedRejection { rejection: 'unauthorised'; expected: Name; got: Name }
/** The callback or resource is not the one awaited. */
export interface WaitMismatchRejection { rejection: 'wait_mismatch'; expected: Name; got: Name }
/** Current policy no longer permits the step about to run. */
export interface PermissionRevokedRejection { rejection: 'permission_revoked' }
/** The budget no longer covers the step about to run. */
export interface BudgetExhaustedRejection { rejection: 'budget_exhausted' }
/** The input needs a running run. */
export interface NotRunningRejection { rejection: 'not_running'; phase: PhaseKind }
/** A suspend arrived while a suspension is pending: its reason. */
export interface AlreadySuspendedRejection { rejection: 'already_suspended'; reason: ReasonKind }
/** The expiry is not after the input's time. */
export interface ExpiryNotInFutureRejection {
  rejection: 'expiry_not_in_future';
  expires_at: Time;
  now: Time;
}
/** The expiry is the last instant, which no later input could pass. */
export interface ExpiryUnreachableRejection { rejection: 'expiry_unreachable'; expires_at: Time }
/** The input's time is the last instant: no suspension can begin. */
export interface ClockExhaustedRejection { rejection: 'clock_exhausted'; at: Time }
/** A call declared a contract allowing no attempt at all. */
export interface NoAttemptsAllowedRejection { rejection: 'no_attempts_allowed' }
/** The key was already used with other arguments. */
export interface KeyConflictRejection { rejection: 'key_conflict'; key: IdempotencyKey }
/** The key's committed result is already recorded: reuse it, never execute again. */
export interface KeyCommittedRejection { rejection: 'key_committed'; key: IdempotencyKey }
/** The call id was already used; an edited call needs a new id. */
export interface CallIdReusedRejection { rejection: 'call_id_reused'; call_id: Name }
/** The run's in-flight dispatch (this call) must be answered first. */
export interface DispatchInFlightRejection { rejection: 'dispatch_in_flight'; call_id: Name }
/** A tool result arrived while nothing is being dispatched. */
export interface NoDispatchInFlightRejection {
  rejection: 'no_dispatch_in_flight';
  phase: PhaseKind;
}
/** A tool result for another call or attempt than the one in flight. */
export interface ResultMismatchRejection {
  rejection: 'result_mismatch';
  /** The call in flight. */
  call_id: Name;
  /** The attempt in flight. */
  attempt: number;
  /** The call answered. */
  got_call: Name;
  /** The attempt answered. */
  got_attempt: number;
}
/** Recover arrived with nothing in flight. */
export interface NothingInFlightRejection { rejection: 'nothing_in_flight'; phase: PhaseKind }
/** An intervention said an effect committed, but no effect is unsettled. */
export interface NothingUnresolvedRejection { rejection: 'nothing_unresolved' }
/** Expire arrived before the expiry. */
export interface NotExpiredRejection { rejection: 'not_expired'; expires_at: Time; now: Time }
/** A cancel already waits for an unsettled effect to be settled. */
export interface CancelPendingRejection { rejection: 'cancel_pending' }
/** The revision counter is exhausted. */
export interface RevisionExhaustedRejection { rejection: 'revision_exhausted' }
/** A batch with no calls. */
export interface EmptyBatchRejection { rejection: 'empty_batch' }
/** Two calls of one batch share a call id or a key: the later of the two. */
export interface DuplicateInBatchRejection { rejection: 'duplicate_in_batch'; call_id: Name }
/** A batch resume with no decision. */
export interface NoDecisionRejection { rejection: 'no_decision' }
/** Two decisions of one resume on the same call. */
export interface DuplicateDecisionRejection { rejection: 'duplicate_decision'; call_id: Name }
/** A decision the run's policy or the call's tool does not allow. */
export interface DecisionNotAllowedRejection {
  rejection: 'decision_not_allowed';
  decision: VerdictKind;
}
/** An edit of a call whose key an earlier call bound (BAT-5). */
export interface EditKeyBoundRejection { rejection: 'edit_key_bound'; key: IdempotencyKey }
/** A suspension of a call no approver could answer: no decision both policy and tool allow. */
export interface NoDecisionAllowedRejection { rejection: 'no_decision_allowed'; call_id: Name }

/**
 * A rejection in the kernel's form: its name in `rejection`, its evidence as further fields
 * (spec/lifecycle.md section 8). Narrow on `rejection` to read the evidence.
 */
export type Rejection =
  | TerminalRejection
  | IdentityMismatchRejection
  | ClockRegressedRejection
  | SchemaTooNewRejection
  | UnknownSchemaRejection
  | MigrationRequiredRejection
  | DigestMismatchRejection
  | StaleRevisionRejection
  | FutureRevisionRejection
  | AlreadyAppliedRejection
  | AlreadyResumedRejection
  | ResourceChangedRejection
  | NotSuspendedRejection
  | CheckpointMismatchRejection
  | ExpiredRejection
  | DecisionMismatchRejection
  | ApprovalMismatchRejection
  | ApprovalExpiredRejection
  | SelfApprovalRejection
  | UnauthorisedRejection
  | WaitMismatchRejection
  | PermissionRevokedRejection
  | BudgetExhaustedRejection
  | NotRunningRejection
  | AlreadySuspendedRejection
  | ExpiryNotInFutureRejection
  | ExpiryUnreachableRejection
  | ClockExhaustedRejection
  | NoAttemptsAllowedRejection
  | KeyConflictRejection
  | KeyCommittedRejection
  | CallIdReusedRejection
  | DispatchInFlightRejection
  | NoDispatchInFlightRejection
  | ResultMismatchRejection
  | NothingInFlightRejection
  | NothingUnresolvedRejection
  | NotExpiredRejection
  | CancelPendingRejection
  | RevisionExhaustedRejection
  | EmptyBatchRejection
  | DuplicateInBatchRejection
  | NoDecisionRejection
  | DuplicateDecisionRejection
  | DecisionNotAllowedRejection
  | EditKeyBoundRejection
  | NoDecisionAllowedRejection;

/** The names of the kernel's rejections. */
export type RejectionKind = Rejection['rejection'];

/** The kernel accepted the input: store `run`, then carry out `effects` in order. */
export interface Accepted {
  verdict: 'accepted';
  accepted: true;
  run: Run;
  effects: Effect[];
}

/** The kernel refused the input; the run is unchanged. A value, never thrown. */
export interface Rejected {
  verdict: RejectionKind;
  accepted: false;
  rejection: Rejection;
  /** The kernel's sentence. */
  message: string;
}

export type Verdict = Accepted | Rejected;

/**
 * The one error class: input that is not the kernel's JSON form (malformed JSON, a repeated
 * key, a field the kernel does not have, a name too long, a run that breaks an invariant), or
 * a value with no canonical form. The message is the kernel's. A rejection is not an error.
 */
export class ResumableError extends Error {
  name: 'ResumableError';
}

/** JSON.parse, with every integer beyond 2^53 - 1 in magnitude read as a BigInt. */
export function parse(json: string): any;
/** JSON.stringify, with every BigInt written as its digits. */
export function stringify(value: unknown): string;

/** The version of the kernel's rules. */
export const RULES_VERSION: number;
/** The version of the audit-log format written by `AuditLog`. */
export const AUDIT_FORMAT_VERSION: number;
/** The most calls one batch holds (spec 5.5, BAT-1). */
export const BATCH_CAPACITY: number;

/** A new run at revision 0, running. */
export function newRun(identity: Identity, policy: Policy, createdAt: Time): Run;
/** One kernel step: a rejection is returned, never thrown, and changes nothing. */
export function step(run: Run | string, input: Input | string): Verdict;
/** One kernel step over JSON text, the fastest form: the verdict as JSON text. */
export function stepJson(run: string, input: string): string;
/** The effect of this kind an accepted verdict carries, if any. */
export function effect<K extends EffectKind>(
  verdict: Verdict,
  kind: K,
): Extract<Effect, { effect: K }> | undefined;
/** The checkpoint to persist (without its `effect` tag) of an accepted verdict, if any. */
export function checkpointOf(verdict: Verdict): Checkpoint | undefined;
/** The checkpoint with its digest recomputed over its other fields. */
export function sealCheckpoint(checkpoint: Checkpoint | string): Checkpoint;
/** The tool key the kernel dispatches a call under (64 hex digits). */
export function toolKey(identity: Identity, key: IdempotencyKey): Digest;
/** The RFC 8785 canonical form of a value. */
export function canonical(value: JsonValue): string;
/** The argument digest of a value: SHA-256 over its RFC 8785 canonical form. */
export function digest(value: JsonValue): Digest;
/** The RFC 8785 canonical form of one JSON text, read strictly (I-JSON). */
export function canonicalJson(text: string): string;
/** The argument digest of one JSON text, as `resumable digest` prints it. */
export function digestJson(text: string): Digest;

/** A run's call history as a driver keeps it (in memory): feed it effects, ask it priors. */
export class History {
  constructor();
  readonly callIds: Set<string>;
  readonly keys: Map<string, { args: Digest; committed: boolean }>;
  /** What the history holds about the call's id and key: the `prior` to state. */
  prior(call: { call_id: Name; key: IdempotencyKey }): Prior;
  /** Writes the history entry an accepted transition's effects carry, if any. */
  apply(effects: readonly Effect[]): void;
}

/** Where an audit log stands: its sequence number and the last record's seal. */
export type Anchor = { [field: string]: JsonValue };

/** A tool's policy as an audit log's header declares it (spec/audit-log.md). */
export type ToolPolicy = { [field: string]: JsonValue };

/** An audit log being written (spec/audit-log.md), as three values a runtime stores. */
export class AuditLog {
  constructor(run: Run, anchor: Anchor, lines: string[], key?: string | null);
  run: Run;
  anchor: Anchor;
  readonly lines: string[];
  readonly key: string | null;
  /** Starts a log for a new run; `key` (64 hex digits) makes its seals HMAC-SHA-256. */
  static open(
    identity: Identity,
    policy: Policy,
    createdAt: Time,
    options?: { key?: string | null; tools?: ToolPolicy[] | null },
  ): AuditLog;
  /** Steps the log's run with `input`, appends the sealed record, returns the verdict. */
  record(input: Input | string): Verdict;
  /** The log as written: JSON lines. */
  text(): string;
  /** The anchor file's contents, for `resumable validate --anchor FILE`. */
  anchorJson(): string;
}

// ---------------------------------------------------------------------------------------------
// The driver core (`resumable-driver`'s JSON forms): the driving contract, once. Pure functions
// of what the adapter's store holds, the adapter's own `now` and the facts it observed.

/** What a store holds of one run: the run, the end of its audit log, its latest checkpoint. */
export interface Held {
  run: Run;
  anchor: { records: U64; mac: Digest };
  checkpoint: Checkpoint | null;
}

/** A run's calls: the history index and, per call id, its record (opaque to adapters). */
export type Book = { [field: string]: JsonValue };

/** How a recorded call ended. */
export type Outcome =
  | { outcome: 'result'; result: string }
  | { outcome: 'rejected'; message: string }
  | { outcome: 'responded'; message: string };

/** A call the agent proposes now, with its arguments themselves. */
export interface DriverProposal {
  call_id: Name;
  tool: Name;
  args: JsonValue;
  key: IdempotencyKey;
  contract: ToolContract;
  requester: Name;
  /** Who must approve it; null: dispatched at once. */
  approver?: Name | null;
  /** How long the approver has, from the suspension, in the run's time unit. */
  expires_in?: U64;
}

/** One call put to a party: the arguments themselves beside their digest. */
export interface Asked {
  call_id: Name;
  tool: Name;
  /** The arguments, RFC 8785 canonical JSON. */
  args: string;
  args_digest: Digest;
  requester: Name;
}

/** A request put to the party a run waits on. */
export interface Request {
  calls: Asked[];
  responsible: Name;
  expires_at: Time;
  checkpoint: Checkpoint;
  /** How many answers were fed while the calls waited. */
  answers: number;
}

/** What the book keeps of an input once it is accepted (opaque to adapters). */
export type Kept = { [field: string]: JsonValue };

/** What to do now about a proposal. */
export type Todo =
  | { todo: 'feed'; event: Event; kept: Kept }
  | { todo: 'ask'; request: Request }
  | { todo: 'query'; dispatch: Dispatch }
  | { todo: 'done'; outcomes: Outcome[]; answers: number }
  | { todo: 'changed'; recorded: Call; proposed: Call }
  | { todo: 'waits'; reason: ReasonKind; responsible: Name; expires_at: Time }
  | { todo: 'busy'; call_id: Name }
  | { todo: 'ended'; phase: PhaseKind; cause: FailCause | null };

/** A call the driver hands to its tool: the arguments the dispatch's digest binds. */
export interface ToolCall {
  call_id: Name;
  tool: Name;
  tool_key: Digest;
  attempt: number;
  /** The arguments, canonical JSON: the approved (or edited) ones. */
  args: string;
  args_digest: Digest;
}

/** A step's verdict on the wire: accepted, a kernel rejection, or not a decision. */
export type FedVerdict =
  | { verdict: 'accepted'; run: Run; effects: Effect[] }
  | { verdict: Exclude<RejectionKind, never>; rejection: Rejection; message: string }
  | { verdict: 'not_a_decision'; rejection: {}; message: string };

/** What a staged input returns: what to commit, then what to carry out. */
export interface Fed {
  verdict: FedVerdict;
  held: Held;
  book: Book;
  /** The audit line of the input, without its LF. */
  line: string;
  history: HistoryEntry[];
  tool_calls: ToolCall[];
  query: Dispatch | null;
}

/** A party's message refused before the kernel: nothing to commit. */
export interface NotADecision {
  verdict: 'not_a_decision';
  rejection: {};
  message: string;
}

/** A framework's decision on one call (spec/frameworks.md). */
export type Word =
  | { type: 'approve' }
  | { type: 'edit'; edited_action: { name: string; args: JsonValue } }
  | { type: 'edit'; editedAction: { name: string; args: JsonValue } }
  | { type: 'reject'; message?: string }
  | { type: 'respond'; message: string }
  | { type: 'deny' };

/** A party's answer: a decision on the checkpoint it was shown. */
export interface Answer {
  checkpoint: Checkpoint;
  decision: Decision;
}

/** The audit header of a new run: `{ run: { identity, policy, created_at }, tools }`. */
export interface Header {
  run: { identity: Identity; policy: Policy; created_at: Time };
  tools?: ToolPolicy[] | null;
}

export function driverOpen(
  header: Header,
  key?: string | null,
): { held: Held; book: Book; line: string };
export function driverPlan(
  held: Held,
  book: Book,
  now: number,
  proposals: DriverProposal[],
  facts: Facts,
): Todo;
export function driverPlanTurn(
  held: Held,
  book: Book,
  now: number,
  proposals: DriverProposal[],
  facts: Facts,
): Todo;
export function driverFeed(
  held: Held,
  book: Book,
  now: number,
  event: Event,
  kept: Kept,
  key?: string | null,
): Fed;
export function driverAnswer(
  held: Held,
  book: Book,
  now: number,
  request: Request,
  message: unknown,
  facts: Facts,
  key?: string | null,
): Fed | NotADecision;
export function driverDecide(
  held: Held,
  book: Book,
  now: number,
  request: Request,
  words: unknown,
  approver: Name,
  expiresAt: number,
  facts: Facts,
  key?: string | null,
): Fed | NotADecision;
export function driverDecideCalls(
  held: Held,
  book: Book,
  now: number,
  request: Request,
  words: Array<{ call_id: Name; decision: Word }>,
  approver: Name,
  expiresAt: number,
  facts: Facts,
  key?: string | null,
): Fed | NotADecision;
export function driverToolResult(
  held: Held,
  book: Book,
  now: number,
  toolCall: ToolCall,
  result: JsonValue,
  key?: string | null,
): Fed;
export function driverReconcile(
  held: Held,
  book: Book,
  now: number,
  dispatch: Dispatch,
  found: JsonValue | undefined,
  facts: Facts,
  key?: string | null,
): Fed;
/**
 * Feeds a human-in-the-loop resume value (whatever the graph handed back) answering `request`
 * as one batch answer (spec/frameworks.md, "Resuming": `{ checkpoint, decisions, approver?,
 * expires_at? }` or `{ request, decisions, approver, expires_at }`); `approver` is the
 * adapter's, for a value that names none.
 */
export function driverResume(
  held: Held,
  book: Book,
  now: number,
  request: Request,
  value: unknown,
  approver: Name,
  facts: Facts,
  key?: string | null,
): Fed | NotADecision;
/** What `driverResume` would feed for `value`, staging nothing: the answer and what is kept. */
export function driverReadResume(
  request: Request,
  value: unknown,
  approver: Name,
): { answer: Answer; kept: Kept } | NotADecision;
/** Whether `driverResume` would feed `value` as a decision on `request` (and count it). */
export function driverIsResumeDecision(request: Request, value: unknown, approver: Name): boolean;
/** Whether a party's message is an answer the core would feed (false: no decision at all). */
export function driverIsAnswer(message: unknown): boolean;
export function driverWakeAt(held: Held): Time | null;
export function driverApproval(
  request: Request,
  approve: boolean,
  approver: Name,
  expiresAt: number,
): Answer;
