//! Audit logs: the versioned JSON-lines format a runtime writes, the [`Writer`] that produces
//! it from kernel steps, and the streaming [`validate`] that checks a log against the kernel.
//!
//! This crate depends on the kernel and on serde, serde_json, sha2 and hmac, nothing more: a
//! runtime links it to write its logs, and a CI pipeline to validate them, without the model
//! checker. It reads no clock and opens no file; its callers hand it readers and writers.
//!
//! The format is specified in `spec/audit-log.md`. In short, line 1 is a [`Header`] naming
//! the run and the runtime's tool policy; every further line is one [`Record`]: the input, the
//! verdict the runtime gave it (accepted, or rejected with the rejection: refused attempts are
//! recorded too), and the run's revision after it. Every line ends with a MAC over its own
//! bytes and the previous line's MAC ([`chain`]): HMAC-SHA-256 under a key the runtime holds
//! (never written in the log), or plain SHA-256 in an unkeyed log. With the key, the validator
//! refuses any line the key does not vouch for; an [`Anchor`] (the record count and the last
//! MAC, stored by the runtime with its run) catches a cut tail. The validator re-runs the kernel
//! on every input and checks the safety properties over the whole log, so a log that the key
//! vouches for is still checked against the lifecycle's rules.
//!
//! Kernel values (inputs, rejections, dispatches, checkpoints) are written in their own serde
//! form, so their shape is the kernel's, not the format's: the header names the rules they
//! were written under (`resumable_kernel::RULES_VERSION`, from format version 3 on). A log of
//! this validator's rules is judged strictly; a log of older rules is read in the shapes those
//! rules wrote and judged while this validator's kernel agrees with it, and otherwise reported
//! not judged ([`Summary::not_judged`]), never called tampered for its age.
//!
//! # Example: write a keyed log, then validate it
//!
//! ```
//! use resumable_audit::{self as audit, Header, Key, RunHeader, Writer};
//! use resumable_kernel::*;
//!
//! let header = Header {
//!     run: RunHeader {
//!         identity: Identity {
//!             tenant: Name::lit("acme"),
//!             session: Name::lit("s-1"),
//!             run: Name::lit("run-1"),
//!             definition: Name::lit("flow@1"),
//!         },
//!         policy: Policy { operator: Name::lit("ops"), reconcile_window: 100, allowed: resumable_kernel::Allowed::ALL },
//!         created_at: Time(0),
//!     },
//!     tools: Some(Vec::new()),
//! };
//! let key = Key::from_bytes([42; 32]); // in a runtime: read from a file, never logged
//! let mut log = Writer::new(Vec::new(), &header, Some(&key)).unwrap();
//! let done = Input { at: Time(1), event: Event::Complete { result: Digest::of(b"ok") } };
//! log.step(&done).unwrap().unwrap();
//! // Refused inputs are recorded too: the run is terminal now.
//! assert!(log.step(&done).unwrap().is_err());
//! let anchor = log.anchor(); // stored with the run, in the same transaction as the record
//! let bytes = log.into_inner().unwrap();
//!
//! let options = audit::Options { key: Some(key), anchor: Some(anchor), ..Default::default() };
//! let summary = audit::validate(&bytes[..], &options).unwrap();
//! assert_eq!((summary.records, summary.accepted, summary.rejected), (2, 1, 1));
//! assert!(summary.unproven.is_empty());
//! ```

use resumable_kernel::IdempotencyKey;
use resumable_kernel::{
    DecisionKind, Digest, Dispatch, Effect, EventKind, HistoryEntry, Identity, Input, List, Name,
    PhaseKind, Policy, ReasonKind, Rejection, Revision, Run, Time, ToolContract, Transition,
    BATCH_CAPACITY,
};
use serde::{Deserialize, Serialize};

pub mod chain;
mod envelope;
#[cfg(feature = "fixtures")]
mod examples;
mod finding;
#[cfg(feature = "fixtures")]
pub mod forge;
pub mod forms;
mod header;
pub mod history;
pub mod jcs;
pub mod json;
mod properties;
mod report;
mod rules;
#[cfg(feature = "fixtures")]
pub mod sample;
mod summary;
mod validate;
mod writer;

pub use chain::{Anchor, ChainKind, Key, KeyError, KeyId};
pub use finding::{Claim, Class, Finding, Older, Problem};
pub use report::{report_json, report_text};
pub use summary::{NotJudged, Summary, Unjudged, Unproven, NOT_JUDGED_EXIT};
pub use validate::{validate, Options, DEFAULT_COMMIT_WINDOW, MAX_LINE_BYTES};
pub use writer::Writer;

/// The value of the header's `format` field.
pub const FORMAT: &str = "resumable-audit";
/// The format version this crate writes: 3, the first whose header names its rules.
pub const VERSION: u64 = 3;
/// The format versions this crate reads.
pub const VERSIONS_READ: [u64; 3] = [1, 2, 3];

/// The run a log describes: enough to rebuild the run at revision 0.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunHeader {
    /// Who the run belongs to.
    pub identity: Identity,
    /// The run's policy: its operator and reconcile window.
    pub policy: Policy,
    /// When the run was created.
    pub created_at: Time,
}

impl RunHeader {
    /// The run this header describes, at revision 0, or why its policy cannot govern one.
    pub fn run(&self) -> Result<Run, resumable_kernel::PolicyError> {
        Run::new(self.identity, self.policy, self.created_at)
    }
}

/// What the runtime declares about one tool: whether a call to it needs an approval, and the
/// contract every call to it must carry.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// The tool.
    pub tool: Name,
    /// Whether a call to the tool is dispatched only on an approval (never directly).
    pub gated: bool,
    /// What the tool promises about keys and queries.
    pub contract: ToolContract,
}

/// What a header declares: the run, and the tool policy, if the runtime has one. (The writer
/// adds the format, the rules and the chain.)
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Header {
    /// The run.
    pub run: RunHeader,
    /// Every tool the run may call, with its gate and contract; `None` when the runtime
    /// declares no policy (the report then says what that leaves unchecked).
    pub tools: Option<Vec<ToolPolicy>>,
}

/// Line 1 of a version 2 or 3 log, without its MAC. `rules` is there exactly in version 3.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderLine<'a> {
    format: &'a str,
    version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rules: Option<u16>,
    chain: ChainKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key_id: Option<KeyId>,
    run: RunHeader,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<ToolPolicy>>,
}

/// One line after the header, without its MAC: an input and the verdict it got.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The record's number, from 1, without gaps.
    pub seq: u64,
    /// The run's revision after the input: one more for an accepted input (REV-1), unchanged
    /// for a refused one (REJ-2).
    pub revision: Revision,
    /// The input, complete enough to re-run it through the kernel.
    pub input: Input,
    /// What the runtime decided.
    pub verdict: Verdict,
}

/// The verdict a record carries: what the kernel answered for the input.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[expect(
    clippy::large_enum_variant,
    reason = "records are parsed one at a time and never stored in bulk, so the size gap \
              between the variants costs nothing worth a box"
)]
pub enum Verdict {
    /// The input was accepted; what the transition recorded and commanded.
    Accepted(Accepted),
    /// The input was refused, with the kernel's rejection and its evidence (REJ-1).
    Rejected(Rejection),
}

/// What an accepted input did: the kernel's audit record (AUD-1) without the revision and
/// time, which the record already carries, and the effects a reader needs to check the safety
/// properties without re-running anything: the checkpoint persisted, the call dispatched or
/// queried, and the result committed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accepted {
    /// The kind of input accepted.
    pub event: EventKind,
    /// For a resume, the kind of decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<DecisionKind>,
    /// The phase after the transition.
    pub phase: PhaseKind,
    /// The suspension reason after the transition, when suspended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ReasonKind>,
    /// The digest of the checkpoint persisted (CKP-1), when the run is suspended after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Digest>,
    /// The call dispatched (WAL-1), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<Dispatch>,
    /// The call whose status is queried (REC-1), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<Dispatch>,
    /// The result the transition recorded as committed (REC-4), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed: Option<Commit>,
    /// What the transition added to the run's call history (KEY-1, KEY-2, REC-4), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryEntry>,
    /// A batch's further dispatches, after `dispatch`, in order (spec 5.5).
    #[serde(default, skip_serializing_if = "List::is_empty")]
    pub dispatch_more: List<Dispatch, BATCH_CAPACITY>,
    /// A batch's further history entries, after `history`, in order (spec 5.5).
    #[serde(default, skip_serializing_if = "List::is_empty")]
    pub history_more: List<HistoryEntry, BATCH_CAPACITY>,
}

/// A result recorded as committed, under the key and attempt the tool saw.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commit {
    /// The call.
    pub call_id: Name,
    /// The idempotency key.
    pub key: IdempotencyKey,
    /// The key's attempt: with a fencing query, the tool sees key and attempt together.
    pub attempt: u8,
    /// The digest of the result.
    pub result: Digest,
}

/// The verdict a log must record for `input` on `before`, given the kernel's answer.
///
/// The writer and the validator both build verdicts here, so what one writes is exactly what
/// the other expects; the validator's independent evidence is the kernel's own answer, the
/// digest chain and the whole-log properties.
pub fn verdict_of(before: &Run, result: &Result<Transition, Rejection>) -> Verdict {
    match result {
        Err(rejection) => Verdict::Rejected(*rejection),
        Ok(t) => {
            let mut accepted = Accepted {
                event: EventKind::Complete,
                decision: None,
                phase: t.next.phase().kind(),
                reason: None,
                checkpoint: None,
                dispatch: None,
                query: None,
                committed: None,
                history: None,
                dispatch_more: List::new(),
                history_more: List::new(),
            };
            for effect in t.effects.iter() {
                match effect {
                    Effect::Audit(r) => {
                        accepted.event = r.event;
                        accepted.decision = r.decision;
                        accepted.phase = r.phase;
                        accepted.reason = r.reason;
                    }
                    Effect::History(h) if accepted.history.is_some() => {
                        let _ = accepted.history_more.push(h);
                    }
                    Effect::History(h) => accepted.history = Some(h),
                    Effect::PersistCheckpoint(cp) => accepted.checkpoint = Some(cp.digest),
                    Effect::Dispatch(d) if accepted.dispatch.is_some() => {
                        let _ = accepted.dispatch_more.push(d);
                    }
                    Effect::Dispatch(d) => accepted.dispatch = Some(d),
                    Effect::Query(d) => accepted.query = Some(d),
                }
            }
            accepted.committed = committed(before, &t.next);
            Verdict::Accepted(accepted)
        }
    }
}

/// The result a transition recorded, with the attempt it committed under: a new `last_call`
/// is a commit of the call the run held before (in flight, or unresolved in a suspension).
fn committed(before: &Run, after: &Run) -> Option<Commit> {
    let outcome = after.last_call()?;
    if before.last_call() == Some(outcome) {
        return None;
    }
    let attempt = before.in_flight().map(|f| f.attempt).or_else(|| {
        before
            .suspension()
            .and_then(|s| s.reason.call())
            .map(|c| c.1)
    });
    // A batch's call answered while in flight with others (spec BAT-4); a person's answer in
    // the tool's place commits nothing at the tool.
    let attempt = attempt.or_else(|| match before.batch()?.slot(&outcome.call_id)?.state {
        resumable_kernel::SlotState::InFlight { attempt, .. } => Some(attempt),
        _ => None,
    })?;
    Some(Commit {
        call_id: outcome.call_id,
        key: outcome.key,
        attempt,
        result: outcome.result,
    })
}
