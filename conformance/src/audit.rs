//! Audit logs: the versioned JSON-lines format a runtime writes, the [`Writer`] that produces
//! it from kernel steps, and the streaming [`validate`] that checks a log against the kernel.
//!
//! The format is specified in `spec/audit-log.md`. In short, line 1 is a header naming the
//! run; every further line is one [`Record`]: the input, the verdict the runtime gave it
//! (accepted, or rejected with the rejection: refused attempts are recorded too), the run's
//! revision after it, and `prev`, the SHA-256 of the previous line's exact bytes. The chain of
//! digests makes the log tamper-evident: an edit, a removal, a reordering or a splice breaks
//! it. The digest is unkeyed, so a forger who recomputes the whole chain is not stopped by the
//! chain; the validator then still re-runs the kernel on every input and checks the safety
//! properties over the whole log, which is what catches a forged verdict.
//!
//! # Example: write a log, then validate it
//!
//! ```
//! use resumable_conformance::audit::{self, RunHeader, Writer};
//! use resumable_kernel::*;
//!
//! let header = RunHeader {
//!     identity: Identity {
//!         tenant: Name::lit("acme"),
//!         session: Name::lit("s-1"),
//!         run: Name::lit("run-1"),
//!         definition: Name::lit("flow@1"),
//!     },
//!     policy: Policy { operator: Name::lit("ops"), reconcile_window: 100 },
//!     created_at: Time(0),
//! };
//! let mut log = Writer::new(Vec::new(), &header).unwrap();
//! let done = Input { at: Time(1), event: Event::Complete { result: Digest::of(b"ok") } };
//! log.step(&done).unwrap().unwrap();
//! // Refused inputs are recorded too: the run is terminal now.
//! assert!(log.step(&done).unwrap().is_err());
//! let bytes = log.into_inner().unwrap();
//!
//! let summary = audit::validate(&bytes[..], &audit::Options::default()).unwrap();
//! assert_eq!((summary.records, summary.accepted, summary.rejected), (2, 1, 1));
//! ```

use resumable_kernel::{
    step, DecisionKind, Digest, Dispatch, Effect, EventKind, Identity, Input, Name, PhaseKind,
    Policy, ReasonKind, Rejection, Revision, Run, Time, Transition,
};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

mod report;
pub mod sample;
mod validate;

pub use report::{report_json, report_text};
pub use validate::{
    validate, Class, Finding, Options, Problem, Summary, DEFAULT_COMMIT_WINDOW, MAX_LINE_BYTES,
};

/// The value of the header's `format` field.
pub const FORMAT: &str = "resumable-audit";
/// The format version this crate writes and reads.
pub const VERSION: u64 = 1;

/// The run a log describes, as its header names it: enough to rebuild the run at revision 0.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunHeader {
    /// Who the run belongs to.
    pub identity: Identity,
    /// The run's policy.
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

/// Line 1 of a log, as written.
#[derive(Serialize)]
struct HeaderLine<'a> {
    format: &'a str,
    version: u64,
    run: &'a RunHeader,
}

/// One line after the header: an input and the verdict it got.
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
    /// SHA-256 of the previous line's bytes, without its newline (the header's for seq 1).
    pub prev: Digest,
}

/// The verdict a record carries: what the kernel answered for the input.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
// Records are parsed one at a time and never stored in bulk, so the size gap between the
// variants costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
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
}

/// A result recorded as committed, under the key and attempt the tool saw.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commit {
    /// The call.
    pub call_id: Name,
    /// The idempotency key.
    pub key: Name,
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
            };
            for effect in t.effects.iter() {
                match effect {
                    Effect::Audit(r) => {
                        accepted.event = r.event;
                        accepted.decision = r.decision;
                        accepted.phase = r.phase;
                        accepted.reason = r.reason;
                    }
                    Effect::PersistCheckpoint(cp) => accepted.checkpoint = Some(cp.digest),
                    Effect::Dispatch(d) => accepted.dispatch = Some(*d),
                    Effect::Query(d) => accepted.query = Some(*d),
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
    })?;
    Some(Commit {
        call_id: outcome.call_id,
        key: outcome.key,
        attempt,
        result: outcome.result,
    })
}

/// Writes an audit log: the header, then one record per input, each chained to the line
/// before. It keeps the run it describes, so it knows the revision and the attempt of a
/// commit; memory stays constant however long the log grows.
///
/// Feed it either inputs ([`Writer::step`] runs the kernel itself) or inputs with the answer
/// the kernel already gave on [`Writer::run`] ([`Writer::record`]).
pub struct Writer<W: Write> {
    out: W,
    run: Run,
    seq: u64,
    prev: Digest,
    line: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Starts a log for the run `header` describes, at revision 0, and writes the header.
    pub fn new(out: W, header: &RunHeader) -> io::Result<Writer<W>> {
        let mut writer = Writer {
            out,
            run: header
                .run()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            seq: 0,
            prev: Digest::default(),
            line: Vec::with_capacity(1024),
        };
        writer.write_line(&HeaderLine {
            format: FORMAT,
            version: VERSION,
            run: header,
        })?;
        Ok(writer)
    }

    /// Steps the log's run with `input`, records the verdict, and returns the kernel's answer.
    pub fn step(&mut self, input: &Input) -> io::Result<Result<Transition, Rejection>> {
        let result = step(&self.run, input);
        self.record(input, &result)?;
        Ok(result)
    }

    /// Records `input` with `result`, the kernel's answer for it on [`Writer::run`], and
    /// moves the run on when it was accepted.
    pub fn record(
        &mut self,
        input: &Input,
        result: &Result<Transition, Rejection>,
    ) -> io::Result<()> {
        let verdict = verdict_of(&self.run, result);
        let revision = match result {
            Ok(t) => t.next.revision(),
            Err(_) => self.run.revision(),
        };
        self.seq += 1;
        let record = Record {
            seq: self.seq,
            revision,
            input: *input,
            verdict,
            prev: self.prev,
        };
        self.write_line(&record)?;
        if let Ok(t) = result {
            self.run = t.next;
        }
        Ok(())
    }

    /// The run as the log describes it so far.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// How many records have been written (the header not counted).
    pub fn records(&self) -> u64 {
        self.seq
    }

    /// Flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    fn write_line<T: Serialize>(&mut self, value: &T) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, value)?;
        self.prev = Digest::of(&self.line);
        self.line.push(b'\n');
        self.out.write_all(&self.line)
    }
}
