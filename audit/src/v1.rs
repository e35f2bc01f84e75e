//! Format version 1, read for the logs runtimes already hold.
//!
//! A version 1 line carries `prev`, the SHA-256 of the previous line's bytes, and no MAC; its
//! header names the run and nothing else. Everything version 1 can be checked for is checked
//! (sequence, chain, revisions, the kernel's verdicts, the whole-log properties), and the
//! report lists what it cannot prove: it is unkeyed and declares no tool policy.
//!
//! [`read_record`] is the one place where a version 1 line becomes the record the validator
//! checks: a kernel that reads older checkpoints only through an explicit migration migrates a
//! resume's checkpoint here.

use crate::finding::{at, Finding, Problem};
use crate::validate::parse;
use crate::{Record, RunHeader, Verdict};
use resumable_kernel::{Digest, Input, Revision};
use serde::Deserialize;

/// The version 1 header: `format`, `version` and `run`, nothing else.
pub(super) fn read_header(text: &str, line: u64) -> Result<RunHeader, Finding> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(
        dead_code,
        reason = "format and version are read by the probe; here they are only allowed"
    )]
    struct Full {
        format: serde::de::IgnoredAny,
        version: serde::de::IgnoredAny,
        run: RunHeader,
    }
    let full: Full = parse(text, line)?;
    Ok(full.run)
}

/// One version 1 record line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1Record {
    seq: u64,
    revision: Revision,
    input: Input,
    verdict: Verdict,
    prev: Digest,
}

/// Reads a version 1 record and checks its place in the chain: `seq` must be `seq`, and `prev`
/// the digest of the previous line, `prev`. Returns the record as the validator checks it.
pub(super) fn read_record(
    text: &str,
    line: u64,
    seq: u64,
    prev: Digest,
) -> Result<Record, Finding> {
    let r: V1Record = parse(text, line)?;
    if r.seq != seq {
        let gap = Problem::SeqGap {
            expected: seq,
            found: r.seq,
        };
        return Err(at(line, None, gap));
    }
    if r.prev != prev {
        let broken = Problem::ChainBroken {
            expected: prev,
            found: r.prev,
        };
        return Err(at(line, None, broken));
    }
    Ok(Record {
        seq: r.seq,
        revision: r.revision,
        input: r.input,
        verdict: r.verdict,
    })
}
