//! The rules version: one number for every verdict and every serialised form of this kernel.
//!
//! Two kernels of the same rules version give every input on every run the same verdict (the
//! same transition with the same effects, or the same rejection with the same evidence), and
//! write and read every value (run, input, effect, rejection, checkpoint, digest) as the same
//! bytes. Whenever one of these changes, the number goes up by one, in the change that makes
//! it, with a line in the history below. A wording that no value carries (a comment, a
//! `Display` message) is not a rule.
//!
//! An audit log names the rules it was written under in its header (`spec/audit-log.md`), so a
//! validator of later rules knows whether it can judge the log or must say that it does not.
//! `conformance/tests/rules_version.rs` fails when a file that shows a verdict changes (a
//! trace snapshot, a scenario, an audit-log example) while this number stays the same.
//!
//! The checkpoint's schema version ([`crate::checkpoint::SCHEMA_VERSION`]) is narrower: it
//! names the checkpoint's fields and digest. A new schema is a new rules version; a new rules
//! version need not be a new schema.
//!
//! # History
//!
//! A release is a commit of the main line. Each version is named with the releases that ran
//! it, the first and the last.
//!
//! - **1**, releases 2e29375 to ee837ca: the first kernel. Checkpoint schema 2; a resume of a
//!   run that had ended was refused as `terminal` before its checkpoint was read. Those from
//!   6485647 on write audit-log format 1.
//! - **2**, releases a119106 to 7f7da14 (717b2db among them): a resume's checkpoint (schema,
//!   digest, revision) is checked before the terminal check, so a decision whose reply was
//!   lost learns that it won (`already_applied`) or lost (`already_resumed`) after the run
//!   ended too (REJ-1). Audit-log format 1.
//! - **3**, from release 0b6a243: checkpoint schema 3 (a pending cancel is carried through an
//!   escalation, CAN-2); a dispatch and a query carry the tool key, the key bound to the run's
//!   identity (KEY-3); a call log refuses a reused call id, a key with other arguments and a
//!   committed key over the run's whole history (KEY-1, REC-4); answers that are facts about
//!   the past are never refused for a moved resource, and every accepted resume records the
//!   resource version (RES-3); expiries are bounded below the end of time; `reconcile_first`
//!   is gone. Audit-log format 2, then 3 (which names this number).
//! - **4**, this release: identifiers of real size (names of 64 bytes, idempotency keys of
//!   255; a name of at most 31 bytes is encoded, and digested, as before); the run's call
//!   history lives in the driver's store, not in the run: a dispatch and a suspension for
//!   approval carry the `prior` the driver's history index holds for the call, and a
//!   transition that binds a call or spends a key emits a `history` effect (the audit
//!   record's verdict carries it); a run holds no `calls` and is never refused for having
//!   made too many (`call_log_full` is gone). Audit-log format 3.
//! - **5**, releases d70eac4 to 216041f: batches of calls (spec 5.5): `suspend` with `wait: batch`, `resume`
//!   with `decision: batch` (approve, edit, reject, respond, deny per call), calls in flight
//!   together, a run's `batch`, a checkpoint's `batch` digest; the decisions a run's policy and
//!   a tool's contract allow (`allowed`, POL-1); a `dispatch` may state the resource version
//!   the agent observed. Every input rules 4 accepted or refused has the same verdict and every
//!   value rules 4 wrote is written the same (the new fields are absent when they hold their
//!   defaults), so a rules-4 log is read as written. Audit-log format 3.
//! - **6**, this release: a batch input that denies a call records its denials alone (the
//!   input's other decisions leave their calls awaiting, with no history entry and no result
//!   recorded), where rules 5 recorded every decision of the input before failing the run; a
//!   `suspend` that puts a call to an approver whom the run's policy and the call's contract
//!   leave no decision is refused, `no_decision_allowed { call_id }` (POL-1), where rules 5
//!   accepted it and let it wait for its expiry. Every other input has the verdict rules 5 gave
//!   it, and every value is written as rules 5 wrote it; a rules-5 log is judged until the
//!   first record whose verdict these two changes make differ, and not judged from there
//!   (a rules-4 log, which holds neither batches nor narrowed policies, is judged strictly).
//!   Audit-log format 3.

/// The rules this kernel decides by (see the module docs for what the number names and its
/// history).
pub const RULES_VERSION: u16 = 6;
