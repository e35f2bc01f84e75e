//! The seam between this runtime and the kernel and audit-log crates. Every call into their
//! APIs goes through the few functions here, so a change on their side (a fallible
//! `Run::new`, a keyed audit chain, a tool key carried by the dispatch) is absorbed in one
//! place.

use crate::store::RunKey;
use resumable_conformance::audit::{self, Record, RunHeader};
use resumable_kernel::{Digest, Identity, Input, Name, PolicyError, Rejection, Run, Transition};
use serde::{Deserialize, Serialize};

/// The end of a run's audit log: the last record's number (0: the header alone) and the
/// digest of the last line. Stored with the run, it anchors the log: a log cut short at a
/// line boundary no longer ends where the anchor says.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Tail {
    /// The last record's `seq`; 0 when only the header is written.
    pub seq: u64,
    /// SHA-256 of the last line, without its LF.
    pub digest: Digest,
}

/// The run a header describes, at revision 0, or why its policy cannot govern one.
pub fn new_run(header: &RunHeader) -> Result<Run, PolicyError> {
    header.run()
}

/// The kernel's step: the only place this runtime decides anything about a run.
pub fn step(run: &Run, input: &Input) -> Result<Transition, Rejection> {
    resumable_kernel::step(run, input)
}

/// The store's key for a run: its identity, so two tenants' runs of the same name never meet.
pub fn run_key(identity: &Identity) -> RunKey {
    RunKey(format!(
        "{}/{}/{}",
        identity.tenant, identity.session, identity.run
    ))
}

/// The key the tool sees for a call, as text: the kernel's tool key (KEY-3), the call's
/// idempotency key bound to the run's identity, so that two runs using the same key (every
/// run of one program does) are two keys to the tool. The kernel's `Dispatch` carries the
/// same digest; this recomputes it for a call known only from the run.
pub fn tool_key(identity: &Identity, key: &Name) -> String {
    resumable_kernel::checkpoint::tool_key(identity, key).to_string()
}

/// Line 1 of a run's audit log, without its LF, and the tail it leaves.
pub fn header_line(header: &RunHeader) -> std::io::Result<(Vec<u8>, Tail)> {
    let mut bytes = audit::Writer::new(Vec::new(), header)?.into_inner()?;
    bytes.pop(); // the writer ends every line with LF; the store keeps lines without it
    let digest = Digest::of(&bytes);
    Ok((bytes, Tail { seq: 0, digest }))
}

/// The audit record of `input` on `before` with the kernel's answer, without its LF, chained
/// to `tail`; and the tail it leaves. Byte for byte what `audit::Writer` writes.
pub fn record_line(
    tail: Tail,
    before: &Run,
    input: &Input,
    result: &Result<Transition, Rejection>,
) -> Result<(Vec<u8>, Tail), serde_json::Error> {
    let revision = match result {
        Ok(t) => t.next.revision(),
        Err(_) => before.revision(),
    };
    let record = Record {
        seq: tail.seq + 1,
        revision,
        input: *input,
        verdict: audit::verdict_of(before, result),
        prev: tail.digest,
    };
    let bytes = serde_json::to_vec(&record)?;
    let digest = Digest::of(&bytes);
    Ok((
        bytes,
        Tail {
            seq: record.seq,
            digest,
        },
    ))
}

/// Validates a whole log (lines with their LF) with the audit-log validator, and checks that
/// it ends where the anchor says. Returns the validator's summary line or the finding.
pub fn validate_log(log: &[u8], anchor: Tail) -> Result<audit::Summary, String> {
    let summary = audit::validate(log, &audit::Options::default())
        .map_err(|finding| audit::report_text("log", &Err(finding)).trim().to_string())?;
    let last = log
        .strip_suffix(b"\n")
        .and_then(|l| l.rsplit(|b| *b == b'\n').next())
        .unwrap_or_default();
    if summary.records != anchor.seq || Digest::of(last) != anchor.digest {
        return Err(format!(
            "the log ends at record {} but the anchor stored with the run says {} (digest {})",
            summary.records, anchor.seq, anchor.digest
        ));
    }
    Ok(summary)
}

pub use resumable_conformance::audit::{Accepted, Verdict};

/// Reads one record line back (for the torture's checks).
pub fn parse_record(line: &[u8]) -> Result<Record, String> {
    serde_json::from_slice(line).map_err(|e| e.to_string())
}
