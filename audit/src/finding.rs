//! What the validator finds: the first thing wrong with a log, where, and whose fault it is.

use crate::chain::{ChainKind, KeyId};
use crate::{Verdict, FORMAT};
use resumable_kernel::{Digest, Revision, SpecId};
use serde::Serialize;
use std::fmt;

/// Whose fault a finding is, and so the exit status: a log that is not a readable log of this
/// format (2), or a readable log that disagrees with the kernel or a safety property (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The log cannot be read as this format.
    Malformed,
    /// The log is readable and wrong.
    Divergence,
}

impl Class {
    /// The command-line exit status for this class.
    pub fn exit_code(self) -> u8 {
        match self {
            Class::Malformed => 2,
            Class::Divergence => 1,
        }
    }
}

#[expect(
    clippy::large_enum_variant,
    reason = "a verdict holds a batch's dispatches inline, as the kernel does"
)]
/// A verdict as a log wrote it: in this validator's shapes, or, in a log of older rules, in
/// the shapes of those rules. Serialised as the verdict itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Claim {
    /// In this validator's shapes.
    Verdict(Verdict),
    /// In the shapes of the log's older rules.
    Older(Older),
}

/// A verdict in the shapes of older rules, as read from a log; it serialises as it was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Older(pub(crate) crate::rules::VerdictR2);

/// The first thing wrong with a log, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The line, from 1 (the header is line 1).
    pub line: u64,
    /// The byte column within the line, from 1, when the problem has a position.
    pub column: Option<u64>,
    /// What is wrong.
    pub problem: Problem,
}

/// What is wrong with a log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum Problem {
    /// Reading failed.
    Io {
        /// The reader's error.
        message: String,
    },
    /// The log has no bytes at all, so no header.
    Empty,
    /// A line is longer than the limit; only the limit was read.
    LineTooLong {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The last line has no newline: the log was cut off while it was written.
    Unterminated,
    /// A line ends with CR LF; the format uses LF alone, and the CR would be hashed.
    CarriageReturn,
    /// A line is empty.
    BlankLine,
    /// A line is not valid UTF-8.
    NotUtf8,
    /// A line is not JSON of the expected shape.
    Json {
        /// What kind of error: syntax, data (a wrong type or value) or eof.
        category: &'static str,
        /// serde_json's description, without its position.
        message: String,
    },
    /// A key appears twice in one JSON object of the line.
    DuplicateKey {
        /// The key, unescaped.
        key: String,
    },
    /// A version 2 line does not end with its MAC: `,"mac":"<64 lowercase hex>"}`.
    Unsealed,
    /// The header names another format.
    NotAnAuditLog {
        /// The format named.
        format: String,
    },
    /// The header names a version this validator does not read.
    UnknownVersion {
        /// The version named.
        found: u64,
        /// The versions this validator reads.
        supported: [u64; 3],
    },
    /// A key was given, but the log is not sealed with a key (version 1, or an unkeyed
    /// version 2 chain): nothing in it is vouched for by the key.
    NotKeyed {
        /// The log's format version.
        version: u64,
    },
    /// The header names another key than the one given.
    KeyMismatch {
        /// The id of the key given.
        expected: KeyId,
        /// The id the header names.
        found: KeyId,
    },
    /// A version 2 line's MAC is not the chain's MAC of its body: the line was edited or
    /// forged, or a line before it was removed, reordered or spliced.
    MacMismatch {
        /// How the chain is sealed.
        chain: ChainKind,
        /// The MAC the line must carry.
        expected: Digest,
        /// The MAC it carries.
        found: Digest,
    },
    /// A record's number is not the one after the previous record's.
    SeqGap {
        /// The number that should come next.
        expected: u64,
        /// The number found.
        found: u64,
    },
    /// A record's `prev` is not the digest of the line before it.
    ChainBroken {
        /// The digest of the previous line.
        expected: Digest,
        /// The digest the record carries.
        found: Digest,
    },
    /// A record's revision does not follow from its own verdict (REV-1, REJ-2).
    RevisionGap {
        /// The revision the verdict implies.
        expected: Revision,
        /// The revision found.
        found: Revision,
    },
    /// A record violates a safety property over the whole log.
    Property {
        /// The spec ID of the property.
        #[serde(serialize_with = "spec_id_name")]
        id: SpecId,
        /// What happened, in a sentence.
        what: String,
        /// The kernel's verdict for the input.
        expected: Box<Verdict>,
        /// The log's verdict, as the log wrote it.
        found: Box<Claim>,
    },
    /// A record breaks the tool policy the header declares: a tool it does not list, or a
    /// call under another contract than the tool's.
    Policy {
        /// What happened, in a sentence.
        what: String,
    },
    /// The log ends before the record count of the anchor: its tail was cut off.
    Truncated {
        /// The records the anchor counts.
        expected: u64,
        /// The records the log holds.
        found: u64,
    },
    /// The log holds a record past the anchor's count, which the anchor does not vouch for.
    PastAnchor {
        /// The records the anchor counts.
        anchored: u64,
    },
    /// The log's last line does not carry the anchor's MAC: it was edited, or the log was
    /// rewritten with a recomputed chain.
    AnchorMismatch {
        /// The anchor's MAC.
        expected: Digest,
        /// The MAC of the log's last line.
        found: Digest,
    },
    /// A record's verdict is not the kernel's verdict for its input.
    VerdictDiverges {
        /// The kernel's verdict.
        expected: Box<Verdict>,
        /// The log's verdict.
        found: Box<Verdict>,
    },
}

impl Problem {
    /// Whether the problem makes the log unreadable or wrong.
    pub fn class(&self) -> Class {
        match self {
            Problem::Io { .. }
            | Problem::Empty
            | Problem::LineTooLong { .. }
            | Problem::Unterminated
            | Problem::CarriageReturn
            | Problem::BlankLine
            | Problem::NotUtf8
            | Problem::DuplicateKey { .. }
            | Problem::Unsealed
            | Problem::Json { .. }
            | Problem::NotAnAuditLog { .. }
            | Problem::UnknownVersion { .. } => Class::Malformed,
            Problem::NotKeyed { .. }
            | Problem::KeyMismatch { .. }
            | Problem::MacMismatch { .. }
            | Problem::Policy { .. }
            | Problem::Truncated { .. }
            | Problem::PastAnchor { .. }
            | Problem::AnchorMismatch { .. }
            | Problem::SeqGap { .. }
            | Problem::ChainBroken { .. }
            | Problem::RevisionGap { .. }
            | Problem::Property { .. }
            | Problem::VerdictDiverges { .. } => Class::Divergence,
        }
    }
}

impl Finding {
    /// The command-line exit status: 2 for a malformed log, 1 for a divergence.
    pub fn exit_code(&self) -> u8 {
        self.problem.class().exit_code()
    }

    /// The kernel's verdict and the log's, as JSON, when the finding compares them.
    pub fn verdicts(&self) -> Option<(String, String)> {
        fn json<T: Serialize>(value: &T) -> String {
            serde_json::to_string(value).unwrap_or_default()
        }
        match &self.problem {
            Problem::Property {
                expected, found, ..
            } => Some((json(expected), json(found))),
            Problem::VerdictDiverges { expected, found } => Some((json(expected), json(found))),
            _ => None,
        }
    }

    /// The finding as one JSON object: line, column, class, the problem's fields and the
    /// message the text report prints.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(&self.problem)
            .unwrap_or_else(|_| serde_json::Value::Object(serde_json::Map::new()));
        if let serde_json::Value::Object(map) = &mut value {
            map.insert("line".into(), self.line.into());
            map.insert("column".into(), self.column.into());
            map.insert(
                "class".into(),
                serde_json::to_value(self.problem.class()).unwrap_or_default(),
            );
            map.insert("message".into(), self.message().into());
        }
        value
    }

    /// The one-sentence message, without the position.
    pub fn message(&self) -> String {
        match &self.problem {
            Problem::Io { message } => format!("cannot read the log: {message}"),
            Problem::Empty => "the log is empty: line 1 must be the header".into(),
            Problem::LineTooLong { limit } => {
                format!("line longer than {limit} bytes; not read further")
            }
            Problem::Unterminated => {
                "the last line has no newline: the log was cut off while it was written".into()
            }
            Problem::CarriageReturn => {
                "the line ends with CR LF; the format uses LF alone (the CR would be hashed)".into()
            }
            Problem::BlankLine => "the line is empty".into(),
            Problem::NotUtf8 => "the line is not valid UTF-8".into(),
            Problem::Json { category, message } => {
                let what = if self.line == 1 { "header" } else { "record" };
                format!("not a valid {what} ({category} error): {message}")
            }
            Problem::DuplicateKey { .. }
            | Problem::Unsealed
            | Problem::NotKeyed { .. }
            | Problem::KeyMismatch { .. }
            | Problem::MacMismatch { .. }
            | Problem::Policy { .. }
            | Problem::Truncated { .. }
            | Problem::PastAnchor { .. }
            | Problem::AnchorMismatch { .. } => sealing_message(&self.problem),
            Problem::NotAnAuditLog { format } => {
                format!("the header names format {format:?}, not {FORMAT:?}")
            }
            Problem::UnknownVersion { found, supported } => {
                let mut read: Vec<String> = supported.iter().map(u64::to_string).collect();
                let last = read.pop().unwrap_or_default();
                format!(
                    "unknown format version {found}; this validator reads versions {} and {last}",
                    read.join(", ")
                )
            }
            Problem::SeqGap { expected, found } => format!(
                "record seq {found} where seq {expected} should come: a record is missing, \
                 repeated or out of order"
            ),
            Problem::ChainBroken { expected, found } => format!(
                "prev is {found}, but the previous line's digest is {expected}: the log was \
                 edited, reordered or spliced here or on the line before"
            ),
            Problem::RevisionGap { expected, found } => format!(
                "revision {} does not follow from the verdict: expected {} (REV-1: an accepted \
                 input advances it by one; REJ-2: a refused one leaves it)",
                found.0, expected.0
            ),
            Problem::Property { id, what, .. } => format!("{id} violated: {what}"),
            Problem::VerdictDiverges { expected, found } => {
                let (log, kernel) = (verdict_summary(found), verdict_summary(expected));
                if log == kernel {
                    format!("the log's verdict, {log}, differs from the kernel's in its fields")
                } else {
                    format!("the log says {log}, the kernel says {kernel}")
                }
            }
        }
    }
}

/// The message of a problem of the seal, the key, the anchor or the policy.
fn sealing_message(problem: &Problem) -> String {
    match problem {
        Problem::DuplicateKey { key } => format!(
            "the key {key:?} appears twice in one object; readers disagree on which one \
                 counts, so the line is refused"
        ),
        Problem::Unsealed => format!(
            "the line does not end with its MAC ({}<64 lowercase hex digits>\"}}): a \
                 line of version 2 or 3 is sealed",
            crate::chain::MAC_FIELD
        ),
        Problem::NotKeyed { version } => format!(
            "a key was given, but this version {version} log is not sealed with a key: the \
                 key vouches for none of it (rewritten unkeyed, or written without the key)"
        ),
        Problem::KeyMismatch { expected, found } => format!(
            "the header names key {found}, the key given is {expected}: the log was sealed \
                 with another key"
        ),
        Problem::MacMismatch {
            chain: ChainKind::HmacSha256,
            ..
        } => "the line's MAC does not verify under the key: the line was edited or forged, \
                 or a line before it was removed, reordered or spliced"
            .into(),
        Problem::MacMismatch {
            expected, found, ..
        } => format!(
            "the line's chain digest is {found}, but SHA-256 of the previous line's and \
                 this line's bytes is {expected}: the line was edited, or a line before it was \
                 removed, reordered or spliced"
        ),
        Problem::Policy { what } => format!("the header's tool policy is broken: {what}"),
        Problem::Truncated { expected, found } => format!(
            "the log ends after {found} records, but the anchor counts {expected}: its \
                 tail was cut off"
        ),
        Problem::PastAnchor { anchored } => {
            format!("a record past the anchor's {anchored}: the anchor does not vouch for it")
        }
        Problem::AnchorMismatch { expected, found } => format!(
            "the last line's MAC is {found}, the anchor's is {expected}: the last line was \
                 edited, or the log was rewritten"
        ),
        _ => String::new(),
    }
}

/// A short name for a verdict: "accepted" or "rejected (stale_revision)".
fn verdict_summary(v: &Verdict) -> String {
    match v {
        Verdict::Accepted(_) => "accepted".into(),
        Verdict::Rejected(r) => format!("rejected ({})", r.kind()),
    }
}

impl fmt::Display for Finding {
    /// `line 7, column 12: message`, then the kernel's and the log's verdicts when compared.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(column) = self.column {
            write!(f, ", column {column}")?;
        }
        write!(f, ": {}", self.message())?;
        if let Some((expected, found)) = self.verdicts() {
            write!(f, "\n  expected (kernel): {expected}")?;
            write!(f, "\n  found (log):       {found}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Finding {}

/// A finding on `line`, at `column` if the problem has one.
pub(super) fn at(line: u64, column: Option<u64>, problem: Problem) -> Finding {
    Finding {
        line,
        column,
        problem,
    }
}

/// A spec ID in a report: its name, as spec/ writes it.
fn spec_id_name<S: serde::Serializer>(id: &SpecId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(id.name())
}
