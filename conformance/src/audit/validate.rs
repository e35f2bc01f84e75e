//! The streaming validator: reads a log line by line and stops at the first finding.
//!
//! # What "constant memory" means here
//!
//! The validator holds, whatever the log's length: one line buffer of at most
//! [`Options::max_line_bytes`] bytes (reused), the kernel's `Run` rebuilt so far (fixed-size),
//! the previous line's digest, counters, and the window of recent commits for REC-4/EFF-1, at
//! most [`Options::commit_window`] entries. Nothing else grows with the log. The window is the
//! one honest compromise: an exact "each key committed at most once over the whole log" needs
//! memory proportional to the number of commits, so the check is exact over any
//! `commit_window` consecutive commits, and the summary says when a log had more commits than
//! that (`commit_window_exceeded`), so a reader knows that reuses farther apart went unchecked.
//! The kernel itself compares a new call only with the last one it recorded (KEY-2); the
//! window is wider evidence on top of it.

use super::{verdict_of, Record, RunHeader, Verdict, FORMAT, VERSION};
use resumable_kernel::{
    step, Decision, Digest, Event, Identity, Name, PhaseKind, Reason, Revision, Run,
};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{BufRead, Read};

/// The longest line read, in bytes, without its newline. Every field of a record has a fixed
/// size (names are at most 31 bytes), so the longest record the writer produces is about
/// 2 KiB; 64 KiB leaves room for whitespace a runtime's serialiser may add, and bounds what
/// the validator buffers: a longer line is refused after reading only this much of it.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// How many recent commits the REC-4/EFF-1 check remembers (see the module docs). About
/// 80 bytes each, so the window costs a few MiB at most.
pub const DEFAULT_COMMIT_WINDOW: usize = 16_384;

/// Limits of a validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The longest line accepted, in bytes, without its newline.
    pub max_line_bytes: usize,
    /// How many recent commits the REC-4/EFF-1 check remembers; at least 1.
    pub commit_window: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_line_bytes: MAX_LINE_BYTES,
            commit_window: DEFAULT_COMMIT_WINDOW,
        }
    }
}

/// What a conforming log contained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The run the log describes.
    pub identity: Identity,
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
}

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
    /// The header names another format.
    NotAnAuditLog {
        /// The format named.
        format: String,
    },
    /// The header names a version this validator does not read.
    UnknownVersion {
        /// The version named.
        found: u64,
        /// The version this validator reads.
        supported: u64,
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
        id: &'static str,
        /// What happened, in a sentence.
        what: String,
        /// The kernel's verdict for the input.
        expected: Box<Verdict>,
        /// The log's verdict.
        found: Box<Verdict>,
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
            | Problem::Json { .. }
            | Problem::NotAnAuditLog { .. }
            | Problem::UnknownVersion { .. } => Class::Malformed,
            Problem::SeqGap { .. }
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

    /// The kernel's verdict and the log's, when the finding compares them.
    pub fn verdicts(&self) -> Option<(&Verdict, &Verdict)> {
        match &self.problem {
            Problem::Property {
                expected, found, ..
            }
            | Problem::VerdictDiverges { expected, found } => Some((expected, found)),
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
            Problem::NotAnAuditLog { format } => {
                format!("the header names format {format:?}, not {FORMAT:?}")
            }
            Problem::UnknownVersion { found, supported } => {
                format!("unknown format version {found}; this validator reads version {supported}")
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

/// A short name for a verdict: "accepted" or "rejected (stale_revision)".
fn verdict_summary(v: &Verdict) -> String {
    match v {
        Verdict::Accepted(_) => "accepted".into(),
        Verdict::Rejected(r) => {
            let tag = serde_json::to_value(r)
                .ok()
                .and_then(|v| {
                    v.get("rejection")
                        .and_then(|t| t.as_str())
                        .map(String::from)
                })
                .unwrap_or_else(|| "?".into());
            format!("rejected ({tag})")
        }
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
            let json = |v: &Verdict| serde_json::to_string(v).unwrap_or_default();
            write!(f, "\n  expected (kernel): {}", json(expected))?;
            write!(f, "\n  found (log):       {}", json(found))?;
        }
        Ok(())
    }
}

impl std::error::Error for Finding {}

fn at(line: u64, column: Option<u64>, problem: Problem) -> Finding {
    Finding {
        line,
        column,
        problem,
    }
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
        self.buf.clear();
        // `take` bounds what one line may cost: a line past the limit is refused after
        // reading limit + 1 bytes of it, never read whole.
        let cap = u64::try_from(self.limit)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let read = (&mut self.reader)
            .take(cap)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| {
                at(
                    self.line + 1,
                    None,
                    Problem::Io {
                        message: e.to_string(),
                    },
                )
            })?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        let line = self.line;
        match self.buf.last() {
            Some(b'\n') => {
                self.buf.pop();
            }
            _ if self.buf.len() > self.limit => {
                return Err(at(
                    line,
                    Some(self.limit as u64 + 1),
                    Problem::LineTooLong {
                        limit: self.limit as u64,
                    },
                ))
            }
            _ => {
                return Err(at(
                    line,
                    Some(self.buf.len() as u64 + 1),
                    Problem::Unterminated,
                ))
            }
        }
        if self.buf.last() == Some(&b'\r') {
            return Err(at(
                line,
                Some(self.buf.len() as u64),
                Problem::CarriageReturn,
            ));
        }
        if self.buf.is_empty() {
            return Err(at(line, None, Problem::BlankLine));
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(at(line, Some(e.valid_up_to() as u64 + 1), Problem::NotUtf8)),
        }
    }
}

/// Parses one line as `T`, naming the line and column of the first error.
fn parse<'a, T: Deserialize<'a>>(text: &'a str, line: u64) -> Result<T, Finding> {
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
        at(
            line,
            Some(e.column() as u64),
            Problem::Json { category, message },
        )
    })
}

/// Reads the header: format and version first, so an unknown version is named as such rather
/// than as whatever shape a future version has; then the run, strictly.
fn header(text: &str, line: u64) -> Result<RunHeader, Finding> {
    #[derive(Deserialize)]
    struct Probe {
        format: String,
        version: u64,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // format and version are read by the probe; here they are only allowed
    struct Full {
        format: serde::de::IgnoredAny,
        version: serde::de::IgnoredAny,
        run: RunHeader,
    }
    let probe: Probe = parse(text, line)?;
    if probe.format != FORMAT {
        return Err(at(
            line,
            None,
            Problem::NotAnAuditLog {
                format: probe.format,
            },
        ));
    }
    if probe.version != VERSION {
        return Err(at(
            line,
            None,
            Problem::UnknownVersion {
                found: probe.version,
                supported: VERSION,
            },
        ));
    }
    let full: Full = parse(text, line)?;
    Ok(full.run)
}

/// The recent commits, for REC-4/EFF-1: each (call, key, attempt) with the line that first
/// committed it, forgetting the oldest once `capacity` are held.
struct CommitWindow {
    lines: HashMap<(Name, Name, u8), u64>,
    order: VecDeque<(Name, Name, u8)>,
    capacity: usize,
    exceeded: bool,
}

impl CommitWindow {
    fn new(capacity: usize) -> CommitWindow {
        let capacity = capacity.max(1);
        CommitWindow {
            // Twice the capacity, so that the table rehashes in place as old entries leave
            // instead of growing: the window's memory is fixed when validation starts.
            lines: HashMap::with_capacity(capacity * 2),
            order: VecDeque::with_capacity(capacity),
            capacity,
            exceeded: false,
        }
    }

    fn first(&self, key: &(Name, Name, u8)) -> Option<u64> {
        self.lines.get(key).copied()
    }

    fn insert(&mut self, key: (Name, Name, u8), line: u64) {
        if self.order.len() == self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.lines.remove(&old);
            }
            self.exceeded = true;
        }
        self.order.push_back(key);
        self.lines.insert(key, line);
    }
}

/// Checks the safety properties on what the log claims, before comparing it with the kernel,
/// so that a forged verdict is named by the property it breaks. `run` is the kernel's run
/// before the record (every earlier record agreed with the kernel, or validation stopped).
fn check_properties(
    run: &Run,
    record: &Record,
    expected: &Verdict,
    commits: &CommitWindow,
) -> Result<(), (&'static str, String)> {
    let Verdict::Accepted(claim) = &record.verdict else {
        return Ok(());
    };
    // RES-3: a resume is accepted only from the run's current revision.
    if let Event::Resume(r) = &record.input.event {
        let got = r.checkpoint.revision;
        if got != run.revision() {
            let age = if got < run.revision() {
                "stale"
            } else {
                "future"
            };
            return Err((
                "RES-3",
                format!(
                    "a resume from {age} checkpoint revision {} was accepted while the run \
                     was at revision {}",
                    got.0,
                    run.revision().0
                ),
            ));
        }
    }
    // APR-1: a dispatch out of a pending approval needs an approval bound to that call, its
    // arguments, its requester and the checkpoint revision.
    if let Some(d) = &claim.dispatch {
        let pending = run.suspension().and_then(|s| match &s.reason {
            Reason::PendingApproval { call, requester } => Some((call.call, *requester)),
            _ => None,
        });
        let approval = match &record.input.event {
            Event::Resume(r) => match &r.decision {
                Decision::Approve(a) => Some(a),
                _ => None,
            },
            _ => None,
        };
        match (pending, approval) {
            (Some((call, requester)), Some(a)) => {
                let unbound = if a.call_id != call.call_id || d.call_id != call.call_id {
                    Some("call id")
                } else if a.args != call.args || d.args != call.args {
                    Some("argument digest")
                } else if a.requester != requester {
                    Some("requester")
                } else if a.revision != run.revision() {
                    Some("checkpoint revision")
                } else if d.key != call.key {
                    Some("idempotency key")
                } else {
                    None
                };
                if let Some(field) = unbound {
                    return Err((
                        "APR-1",
                        format!(
                            "call {} was dispatched on an approval whose {field} does not \
                             match the pending call",
                            d.call_id
                        ),
                    ));
                }
            }
            (Some((call, _)), None) => {
                return Err((
                    "APR-1",
                    format!(
                        "call {} was dispatched while call {} awaited approval, without one",
                        d.call_id, call.call_id
                    ),
                ))
            }
            (None, Some(_)) => {
                return Err((
                    "APR-1",
                    format!(
                        "call {} was dispatched on an approval while no call awaited approval",
                        d.call_id
                    ),
                ))
            }
            (None, None) => {}
        }
    }
    // REC-4, EFF-1: a key (with its attempt) is committed at most once.
    if let Some(c) = &claim.committed {
        if let Some(first) = commits.first(&(c.call_id, c.key, c.attempt)) {
            let kernel = match expected {
                Verdict::Accepted(_) => {
                    " (the kernel accepts the input: it compares a call \
                                         only with the last one recorded)"
                }
                Verdict::Rejected(_) => "",
            };
            return Err((
                "REC-4",
                format!(
                    "key {} (call {}, attempt {}) was committed again; it was first committed \
                     on line {first}: EFF-1 allows one commit per key{kernel}",
                    c.key, c.call_id, c.attempt
                ),
            ));
        }
    }
    Ok(())
}

/// Validates an audit log, streaming, in constant memory (see the module docs), and stops at
/// the first finding.
///
/// For every record, in this order: the line is read within the length limit, as UTF-8 and
/// JSON of the record's shape (malformed otherwise); its `seq` follows the previous one; its
/// `prev` is the digest of the previous line; its revision follows from its own verdict; the
/// safety properties hold for what it claims (RES-3, APR-1, REC-4/EFF-1); and its verdict is
/// exactly the kernel's verdict for its input on the run rebuilt so far.
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
    let run_header = header(head, 1)?;
    let mut prev = Digest::of(head.as_bytes());
    // A header read from JSON holds a valid policy (its deserialiser checks it).
    let mut run = run_header.run().map_err(|e| {
        at(
            1,
            None,
            Problem::Json {
                category: "data",
                message: e.to_string(),
            },
        )
    })?;
    let mut commits = CommitWindow::new(options.commit_window);
    let mut summary = Summary {
        identity: run_header.identity,
        records: 0,
        accepted: 0,
        rejected: 0,
        revision: run.revision(),
        phase: run.phase().kind(),
        dispatches: 0,
        commits: 0,
        commit_window: commits.capacity as u64,
        commit_window_exceeded: false,
    };
    loop {
        let line = lines.line + 1;
        let Some(text) = lines.next()? else { break };
        let record: Record = parse(text, line)?;
        let seq = summary.records + 1;
        if record.seq != seq {
            return Err(at(
                line,
                None,
                Problem::SeqGap {
                    expected: seq,
                    found: record.seq,
                },
            ));
        }
        if record.prev != prev {
            return Err(at(
                line,
                None,
                Problem::ChainBroken {
                    expected: prev,
                    found: record.prev,
                },
            ));
        }
        let implied = match record.verdict {
            // At the last revision the kernel refuses (RevisionExhausted): the verdict
            // comparison below names that, so the revision check does not.
            Verdict::Accepted(_) => run.revision().next().unwrap_or(record.revision),
            Verdict::Rejected(_) => run.revision(),
        };
        if record.revision != implied {
            return Err(at(
                line,
                None,
                Problem::RevisionGap {
                    expected: implied,
                    found: record.revision,
                },
            ));
        }
        let result = step(&run, &record.input);
        let expected = verdict_of(&run, &result);
        if let Err((id, what)) = check_properties(&run, &record, &expected, &commits) {
            return Err(at(
                line,
                None,
                Problem::Property {
                    id,
                    what,
                    expected: Box::new(expected),
                    found: Box::new(record.verdict),
                },
            ));
        }
        if record.verdict != expected {
            return Err(at(
                line,
                None,
                Problem::VerdictDiverges {
                    expected: Box::new(expected),
                    found: Box::new(record.verdict),
                },
            ));
        }
        summary.records = seq;
        match (&expected, result) {
            (Verdict::Accepted(a), Ok(t)) => {
                summary.accepted += 1;
                summary.dispatches += u64::from(a.dispatch.is_some());
                if let Some(c) = &a.committed {
                    summary.commits += 1;
                    commits.insert((c.call_id, c.key, c.attempt), line);
                }
                run = t.next;
            }
            _ => summary.rejected += 1,
        }
        prev = Digest::of(text.as_bytes());
    }
    summary.revision = run.revision();
    summary.phase = run.phase().kind();
    summary.commit_window_exceeded = commits.exceeded;
    Ok(summary)
}
