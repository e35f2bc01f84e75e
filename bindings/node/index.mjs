// The ES module entry point: the same objects as the CommonJS one (one addon, one error class).
import { createRequire } from 'node:module';

const kernel = createRequire(import.meta.url)('./index.js');

export const {
  AUDIT_FORMAT_VERSION,
  BATCH_CAPACITY,
  RULES_VERSION,
  AuditLog,
  History,
  ResumableError,
  canonical,
  canonicalJson,
  checkpointOf,
  digest,
  digestJson,
  driverAnswer,
  driverApproval,
  driverDecide,
  driverDecideCalls,
  driverFeed,
  driverOpen,
  driverPlan,
  driverPlanTurn,
  driverReadResume,
  driverReconcile,
  driverResume,
  driverToolResult,
  driverIsAnswer,
  driverIsResumeDecision,
  driverWakeAt,
  effect,
  newRun,
  parse,
  sealCheckpoint,
  step,
  stepJson,
  stringify,
  toolKey,
} = kernel;
export default kernel;
