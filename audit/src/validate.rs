//! The streaming validator: reads a log line by line and stops at the first finding.
//!
//! # What "constant memory" means here
//!
//! The validator holds, whatever the log's length: one line buffer of at most
//! [`Options::max_line_bytes`] bytes (reused), the kernel's `Run` rebuilt so far (fixed-size),
//! the chain's last MAC, counters, the header's tool policy, the window of recent commits
//! for REC-4/EFF-1, at most [`Options::commit_window`] entries, and the run's call history
//! (one fingerprint per call id and one per key the run bound, to check the prior every
//! record states: that grows with the run's calls, as the runtime's own index does, never
//! with refused inputs, waits or the log's bytes). Nothing else grows with the log. The window is the one honest compromise: an exact "each key committed at most once
//! over the whole log" needs memory proportional to the number of commits, so the check is
//! exact over any `commit_window` consecutive commits, and the summary says when a log had
//! more commits than that (`commit_window_exceeded`), so a reader knows that reuses farther
//! apart went unchecked.

use crate::chain::{split_sealed, Anchor, Chain, ChainKind, Key, KeyId};
use crate::finding::{at, Finding, Problem};
use crate::history::History;
use crate::json::{self, LineRead};
use crate::properties::{self, Broken, CommitWindow, ToolTable};
use crate::{v1, verdict_of, HeaderLine, Record, RunHeader, Verdict, FORMAT, VERSIONS_READ};
use resumable_kernel::{step, Digest, Identity, PhaseKind, Revision, Run};
use serde::{Deserialize, Serialize};
use std::io::BufRead;

/// The longest line read, in bytes, without its newline. Every field of a record has a fixed
/// size (names are at most 64 bytes, keys 255), so the longest record the writer produces is
/// under 5 KiB; 64 KiB leaves room for whitespace a runtime's serialiser may add, and bounds what
/// the validator buffers: a longer line is refused after reading only this much of it.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// How many recent commits the REC-4/EFF-1 check remembers (see the module docs). About
/// 100 bytes each, so the window costs a few MiB at most.
pub const DEFAULT_COMMIT_WINDOW: usize = 16_384;

/// What a validation is given besides the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The longest line accepted, in bytes, without its newline.
    pub max_line_bytes: usize,
    /// How many recent commits the REC-4/EFF-1 check remembers; at least 1.
    pub commit_window: usize,
    /// The run's audit key: every line's MAC must verify under it. Without it, a keyed log's
    /// MACs are not checked and the report says so.
    pub key: Option<Key>,
    /// The anchor the runtime stored with the run: the log must end exactly there.
    pub anchor: Option<Anchor>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_line_bytes: MAX_LINE_BYTES,
            commit_window: DEFAULT_COMMIT_WINDOW,
            key: None,
            anchor: None,
        }
    }
}

/// Something a conforming log was not shown to be, for want of a key, an anchor or a policy.
/// In JSON: `{"unproven": "unkeyed", "message": "..."}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unproven {
    /// The log is not sealed with a key (version 1, or a `sha256` chain).
    Unkeyed,
    /// The log is sealed with a key, but none was given: its MACs were not checked.
    KeyNotGiven,
    /// No anchor was given.
    NoAnchor,
    /// The header declares no tool policy (version 1, or no `tools`).
    NoToolPolicy,
}

impl Serialize for Unproven {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Unproven", 2)?;
        st.serialize_field("unproven", self.code())?;
        st.serialize_field("message", self.message())?;
        st.end()
    }
}

impl Unproven {
    /// The stable snake_case name.
    pub fn code(self) -> &'static str {
        match self {
            Unproven::Unkeyed => "unkeyed",
            Unproven::KeyNotGiven => "key_not_given",
            Unproven::NoAnchor => "no_anchor",
            Unproven::NoToolPolicy => "no_tool_policy",
        }
    }

    /// What the validation could not prove, in a sentence.
    pub fn message(self) -> &'static str {
        match self {
            Unproven::Unkeyed => {
                "the log is unkeyed: anyone can rewrite it and recompute its chain, so it \
                 cannot prove that no record was dropped, reordered, duplicated or edited (a \
                 refused attempt erased, a digest or a party changed, a resolution rewritten) \
                 as long as the kernel accepts the result, nor that the header's operator and \
                 policy are the runtime's; a keyed log with --key-file can"
            }
            Unproven::KeyNotGiven => {
                "the log is keyed, but no key was given: its MACs were not checked, so it \
                 proves no more than an unkeyed log, and an anchor can only check its record \
                 count (give --key-file)"
            }
            Unproven::NoAnchor => {
                "no anchor was given: a log cut at a line boundary cannot be told from a \
                 complete one, and without a key neither can an edited last line (give \
                 --anchor)"
            }
            Unproven::NoToolPolicy => {
                "the header declares no tool policy: a gated call dispatched without an \
                 approval, or a call under another contract than its tool's, cannot be told"
            }
        }
    }
}

/// What a conforming log contained, and what the validation could not prove.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The run the log describes.
    pub identity: Identity,
    /// The log's format version.
    pub version: u64,
    /// How the lines are chained: `hmac-sha256`, `sha256`, or `prev-sha256` (version 1).
    pub chain: &'static str,
    /// The id of the key that sealed the log, when it is keyed.
    pub key_id: Option<KeyId>,
    /// Whether every line's MAC was verified under the key given.
    pub authenticated: bool,
    /// Whether the log ended exactly at the anchor given: its record count and its last MAC
    /// (not set for a keyed log read without its key, whose MACs were not checked).
    pub anchored: bool,
    /// Records read (the header not counted).
    pub records: u64,
    /// Records of accepted inputs.
    pub accepted: u64,
    /// Records of refused inputs.
    pub rejected: u64,
    /// The run's revision after the last record.
    pub revision: Revision,
    /// The run's phase after the last record.
    pub phase: PhaseKind,
    /// Calls dispatched (first dispatches and retries).
    pub dispatches: u64,
    /// Results recorded as committed.
    pub commits: u64,
    /// How many recent commits the REC-4/EFF-1 check remembered.
    pub commit_window: u64,
    /// Whether the log had more commits than the window, so that a key reused farther apart
    /// than the window would not have been seen.
    pub commit_window_exceeded: bool,
    /// What the validation could not prove, for want of a key, an anchor or a policy.
    pub unproven: Vec<Unproven>,
}

/// Parses one line as `T`, after refusing a repeated key; names the line and column of the
/// first error.
pub(super) fn parse<'a, T: Deserialize<'a>>(text: &'a str, line: u64) -> Result<T, Finding> {
    if let Some(d) = json::duplicate_key(text) {
        let column = Some(d.offset as u64 + 1);
        return Err(at(line, column, Problem::DuplicateKey { key: d.key }));
    }
    serde_json::from_str(text).map_err(|e| {
        use serde_json::error::Category;
        let category = match e.classify() {
            Category::Io => "io",
            Category::Syntax => "syntax",
            Category::Data => "data",
            Category::Eof => "eof",
        };
        // serde_json appends " at line L column C"; the position is reported separately.
        let full = e.to_string();
        let message = match full.rfind(" at line ") {
            Some(i) => full[..i].to_string(),
            None => full,
        };
        let problem = Problem::Json { category, message };
        at(line, Some(e.column() as u64), problem)
    })
}

/// Reads lines with a hard length limit, reusing one buffer.
struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    line: u64,
    limit: usize,
}

impl<R: BufRead> Lines<R> {
    /// The next line without its newline, `None` at the end, or the finding that stops here.
    fn next(&mut self) -> Result<Option<&str>, Finding> {
        let read = json::read_line(&mut self.reader, &mut self.buf, self.limit).map_err(|e| {
            let message = e.to_string();
            at(self.line + 1, None, Problem::Io { message })
        })?;
        let line = self.line + 1;
        let column = |n: usize| Some(n as u64 + 1);
        match read {
            LineRead::Eof => return Ok(None),
            LineRead::TooLong => {
                let limit = self.limit as u64;
                return Err(at(line, column(self.limit), Problem::LineTooLong { limit }));
            }
            LineRead::Unterminated => {
                return Err(at(line, column(self.buf.len()), Problem::Unterminated))
            }
            LineRead::Line => self.line = line,
        }
        if self.buf.last() == Some(&b'\r') {
            let crlf = Problem::CarriageReturn;
            return Err(at(line, Some(self.buf.len() as u64), crlf));
        }
        if self.buf.is_empty() {
            return Err(at(line, None, Problem::BlankLine));
        }
        std::str::from_utf8(&self.buf)
            .map(Some)
            .map_err(|e| at(line, column(e.valid_up_to()), Problem::NotUtf8))
    }
}

/// How the log's lines are chained, and where the chain stands.
enum Sealing {
    /// Version 1: `prev` is the SHA-256 of the previous line.
    V1 { prev: Digest },
    /// Version 2: each line ends with its MAC. `verify` is false for a keyed log read without
    /// its key: the MACs are then taken as written, to follow the chain to the anchor.
    V2 { chain: Chain, verify: bool },
}

/// Reads a sealed version 2 line: its MAC must be in place and, when `verify`, be the chain's.
fn unseal<'a>(
    text: &'a str,
    line: u64,
    chain: &mut Chain,
    verify: bool,
) -> Result<&'a str, Finding> {
    let Some((body, mac)) = split_sealed(text) else {
        let column = Some(text.len().saturating_sub(crate::chain::SEAL_LEN) as u64 + 1);
        return Err(at(line, column, Problem::Unsealed));
    };
    let expected = chain.mac(body.as_bytes());
    if verify && expected != mac {
        let kind = chain.kind();
        let found = mac;
        return Err(at(line, None, mac_mismatch(kind, expected, found)));
    }
    chain.advance(mac);
    Ok(text)
}

fn mac_mismatch(chain: ChainKind, expected: Digest, found: Digest) -> Problem {
    Problem::MacMismatch {
        chain,
        expected,
        found,
    }
}

/// The validation under way.
struct Validator {
    run: Run,
    sealing: Sealing,
    tools: Option<ToolTable>,
    commits: CommitWindow,
    /// The run's call history so far, to check every prior a record states.
    history: History,
    summary: Summary,
}

/// Reads the header: format and version first, so an unknown version is named as such rather
/// than as whatever shape a future version has; then the version's header, strictly.
fn read_header(text: &str, options: &Options) -> Result<Validator, Finding> {
    #[derive(Deserialize)]
    struct Probe {
        format: String,
        version: u64,
    }
    let probe: Probe = parse(text, 1)?;
    if probe.format != FORMAT {
        let format = probe.format;
        return Err(at(1, None, Problem::NotAnAuditLog { format }));
    }
    let (run, sealing, tools, key_id) = match probe.version {
        1 => {
            let prev = Digest::of(text.as_bytes());
            (v1::read_header(text, 1)?, Sealing::V1 { prev }, None, None)
        }
        2 => header_v2(text, options)?,
        found => {
            let supported = VERSIONS_READ;
            return Err(at(1, None, Problem::UnknownVersion { found, supported }));
        }
    };
    if options.key.is_some() && key_id.is_none() {
        let version = probe.version;
        return Err(at(1, None, Problem::NotKeyed { version }));
    }
    // A header read from JSON holds a valid policy (its deserialiser checks it); should a
    // hand-built one not, the header is refused like any other bad value.
    let start = run.run().map_err(|e| {
        let (category, message) = ("data", e.to_string());
        at(1, None, Problem::Json { category, message })
    })?;
    Ok(Validator::new(
        run,
        start,
        sealing,
        tools,
        key_id,
        probe.version,
        options,
    ))
}

type HeaderParts = (RunHeader, Sealing, Option<ToolTable>, Option<KeyId>);

fn header_v2(text: &str, options: &Options) -> Result<HeaderParts, Finding> {
    let Some((body, _)) = split_sealed(text) else {
        let column = Some(text.len().saturating_sub(crate::chain::SEAL_LEN) as u64 + 1);
        return Err(at(1, column, Problem::Unsealed));
    };
    // Read the header without its MAC, with the struct the writer writes.
    let object = format!("{body}}}");
    let head: HeaderLine = parse(&object, 1)?;
    if (head.chain == ChainKind::HmacSha256) != head.key_id.is_some() {
        let message = "a header names a key_id exactly when its chain is hmac-sha256".into();
        let category = "data";
        return Err(at(1, None, Problem::Json { category, message }));
    }
    let verify = match (&options.key, head.key_id) {
        (Some(key), Some(found)) if key.id() != found => {
            let expected = key.id();
            return Err(at(1, None, Problem::KeyMismatch { expected, found }));
        }
        (Some(_), Some(_)) | (None, None) => true,
        (_, _) => false,
    };
    let mut chain = Chain::new(options.key.as_ref().filter(|_| head.key_id.is_some()));
    unseal(text, 1, &mut chain, verify)?;
    let tools = match &head.tools {
        Some(list) => {
            Some(ToolTable::new(list).map_err(|what| at(1, None, Problem::Policy { what }))?)
        }
        None => None,
    };
    Ok((head.run, Sealing::V2 { chain, verify }, tools, head.key_id))
}

impl Validator {
    fn new(
        header: RunHeader,
        run: Run,
        sealing: Sealing,
        tools: Option<ToolTable>,
        key_id: Option<KeyId>,
        version: u64,
        options: &Options,
    ) -> Validator {
        let commits = CommitWindow::new(options.commit_window);
        let chain = match (&sealing, key_id) {
            (Sealing::V1 { .. }, _) => "prev-sha256",
            (Sealing::V2 { .. }, Some(_)) => ChainKind::HmacSha256.name(),
            (Sealing::V2 { .. }, None) => ChainKind::Sha256.name(),
        };
        let summary = Summary {
            identity: header.identity,
            version,
            chain,
            key_id,
            authenticated: false,
            anchored: false,
            records: 0,
            accepted: 0,
            rejected: 0,
            revision: run.revision(),
            phase: run.phase().kind(),
            dispatches: 0,
            commits: 0,
            commit_window: commits.capacity() as u64,
            commit_window_exceeded: false,
            unproven: Vec::new(),
        };
        Validator {
            run,
            sealing,
            tools,
            commits,
            history: History::new(),
            summary,
        }
    }

    /// Reads one record line, in its version's form, and checks its place in the chain.
    fn read(&mut self, text: &str, line: u64) -> Result<Record, Finding> {
        let seq = self.summary.records + 1;
        match &mut self.sealing {
            Sealing::V1 { prev } => {
                let record = v1::read_record(text, line, seq, *prev)?;
                *prev = Digest::of(text.as_bytes());
                Ok(record)
            }
            Sealing::V2 { chain, verify } => {
                let sealed: SealedRecord = parse(text, line)?;
                unseal(text, line, chain, *verify)?;
                let record = Record {
                    seq: sealed.seq,
                    revision: sealed.revision,
                    input: sealed.input,
                    verdict: sealed.verdict,
                };
                if record.seq != seq {
                    let gap = Problem::SeqGap {
                        expected: seq,
                        found: record.seq,
                    };
                    return Err(at(line, None, gap));
                }
                Ok(record)
            }
        }
    }

    /// Checks a record against the run and the kernel, and moves the run on.
    fn check(&mut self, record: &Record, line: u64) -> Result<(), Finding> {
        let implied = match record.verdict {
            // At the last revision the kernel refuses (RevisionExhausted): the verdict
            // comparison below names that, so the revision check does not.
            Verdict::Accepted(_) => self.run.revision().next().unwrap_or(record.revision),
            Verdict::Rejected(_) => self.run.revision(),
        };
        if record.revision != implied {
            let gap = Problem::RevisionGap {
                expected: implied,
                found: record.revision,
            };
            return Err(at(line, None, gap));
        }
        let result = step(&self.run, &record.input);
        let expected = verdict_of(&self.run, &result);
        let tools = self.tools.as_ref();
        let checked = properties::check_prior(&self.history, record)
            .and_then(|()| properties::check(&self.run, record, &expected, &self.commits, tools));
        if let Err(broken) = checked {
            let problem = match broken {
                Broken::Policy(what) => Problem::Policy { what },
                Broken::Property(id, what) => Problem::Property {
                    id,
                    what,
                    expected: Box::new(expected),
                    found: Box::new(record.verdict),
                },
            };
            return Err(at(line, None, problem));
        }
        if record.verdict != expected {
            let problem = Problem::VerdictDiverges {
                expected: Box::new(expected),
                found: Box::new(record.verdict),
            };
            return Err(at(line, None, problem));
        }
        self.summary.records = record.seq;
        match (&expected, result) {
            (Verdict::Accepted(a), Ok(t)) => {
                self.summary.accepted += 1;
                self.summary.dispatches += u64::from(a.dispatch.is_some());
                if let Some(c) = &a.committed {
                    self.summary.commits += 1;
                    self.commits.insert((c.key, c.attempt), c.call_id, line);
                }
                if let Some(entry) = &a.history {
                    self.history.apply(entry);
                }
                self.run = t.next;
            }
            _ => self.summary.rejected += 1,
        }
        Ok(())
    }

    /// The last line's MAC, as an anchor compares it; `None` when the MACs were not checked
    /// (a keyed log read without its key), since any MAC could then have been written.
    fn last_mac(&self) -> Option<Digest> {
        match &self.sealing {
            Sealing::V1 { prev } => Some(*prev),
            Sealing::V2 { chain, verify } => verify.then(|| chain.last()),
        }
    }

    /// After the last line: the anchor, then what could not be proven.
    fn finish(mut self, lines: u64, options: &Options) -> Result<Summary, Finding> {
        let records = self.summary.records;
        if let Some(anchor) = &options.anchor {
            if records < anchor.records {
                let cut = Problem::Truncated {
                    expected: anchor.records,
                    found: records,
                };
                return Err(at(lines + 1, None, cut));
            }
            match self.last_mac() {
                Some(found) if found != anchor.mac => {
                    let expected = anchor.mac;
                    return Err(at(lines, None, Problem::AnchorMismatch { expected, found }));
                }
                Some(_) => self.summary.anchored = true,
                None => {}
            }
        }
        let s = &mut self.summary;
        s.revision = self.run.revision();
        s.phase = self.run.phase().kind();
        s.commit_window_exceeded = self.commits.exceeded;
        s.authenticated = options.key.is_some();
        if s.key_id.is_none() {
            s.unproven.push(Unproven::Unkeyed);
        } else if !s.authenticated {
            s.unproven.push(Unproven::KeyNotGiven);
        }
        if options.anchor.is_none() {
            s.unproven.push(Unproven::NoAnchor);
        }
        if self.tools.is_none() {
            s.unproven.push(Unproven::NoToolPolicy);
        }
        Ok(self.summary)
    }
}

/// A version 2 record line as written: the record and its MAC (which [`unseal`] checks is
/// in its place, last).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "the MAC is read from its place by `unseal`; here it is only allowed"
)]
struct SealedRecord {
    seq: u64,
    revision: Revision,
    input: resumable_kernel::Input,
    verdict: Verdict,
    mac: Digest,
}

/// Validates an audit log, streaming, in constant memory (see the module docs), and stops at
/// the first finding.
///
/// For every line, in this order: the line is read within the length limit, as UTF-8 and
/// JSON of the record's shape without a repeated key (malformed otherwise); its MAC is the
/// chain's (under the key, when one is given) or, in version 1, its `prev` is the digest of the
/// previous line; its `seq` follows the previous one; its revision follows from its own
/// verdict; it keeps to the header's tool policy, and the safety properties hold for what it
/// claims (APR-1, RES-3, REC-4/EFF-1); and its verdict is exactly the kernel's verdict for its
/// input on the run rebuilt so far. After the last line, the log must end at the anchor, when
/// one is given.
pub fn validate<R: BufRead>(reader: R, options: &Options) -> Result<Summary, Finding> {
    let mut lines = Lines {
        reader,
        buf: Vec::new(),
        line: 0,
        limit: options.max_line_bytes,
    };
    let head = match lines.next()? {
        Some(text) => text,
        None => return Err(at(1, None, Problem::Empty)),
    };
    let mut validator = read_header(head, options)?;
    loop {
        let line = lines.line + 1;
        let Some(text) = lines.next()? else { break };
        if let Some(anchor) = &options.anchor {
            if validator.summary.records == anchor.records {
                let past = Problem::PastAnchor {
                    anchored: anchor.records,
                };
                return Err(at(line, None, past));
            }
        }
        let record = validator.read(text, line)?;
        validator.check(&record, line)?;
    }
    validator.finish(lines.line, options)
}
