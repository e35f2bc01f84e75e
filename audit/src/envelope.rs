//! The envelope of a record: what the format says of every record, whatever the rules its
//! kernel values were written under: its number, the revision after it, whether it claims an
//! acceptance or a refusal, and (format 1) the digest of the line before. It is read for every
//! record of a log that is not judged strictly, so that a broken chain, a gap or a revision out
//! of step is a divergence there too.

use resumable_kernel::{Digest, Revision};
use serde::de::IgnoredAny;
use serde::Deserialize;

/// A record line's envelope; the input and the verdict's contents are skipped unread.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Envelope {
    pub(crate) seq: u64,
    pub(crate) revision: Revision,
    #[expect(
        dead_code,
        reason = "required in its place, read only in the rules' own shapes"
    )]
    input: IgnoredAny,
    pub(crate) verdict: Tag,
    /// Format 1: the SHA-256 of the line before.
    #[serde(default)]
    pub(crate) prev: Option<Digest>,
    /// Formats 2 and 3: the line's MAC, which the chain reads from its place at the end.
    #[serde(default)]
    pub(crate) mac: Option<IgnoredAny>,
}

/// Whether a verdict claims an acceptance or a refusal: the format's, under every rules.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Tag {
    Accepted(IgnoredAny),
    Rejected(IgnoredAny),
}
