//! The streaming validator: reads a log line by line and stops at the first finding.
//!
//! # Judged, and not judged
//!
//! A log of this validator's rules (`resumable_kernel::RULES_VERSION`) is judged strictly: a
//! verdict that is not the kernel's is a divergence. A log of other rules, or a format 1 log,
//! which names none, is read in the shapes of its rules (`rules.rs`) and judged while the
//! kernel agrees with it; where it does not, or where a record is in no shape read for its
//! rules, the judging stops and the summary says from which line and why (`not_judged`),
//! since a change of rules and a forgery look alike to a kernel of other rules. A log of rules
//! whose shapes are not read is not judged at all. In every case the envelope of every record
//! (the chain, `seq`, the revision its verdict implies) and the anchor are checked to the end:
//! what the format proves, it proves under any rules.
//!
//! # What "constant memory" means here
//!
//! The validator holds, whatever the log's length: one line buffer of at most
//! [`Options::max_line_bytes`] bytes (reused), the kernel's `Run` rebuilt so far (fixed-size),
//! the chain's last MAC, counters, the header's tool policy, and the window of recent commits
//! for REC-4/EFF-1, at most [`Options::commit_window`] entries, and the run's call history
//! (one fingerprint per call id and one per key the run bound, to check the prior every
//! record states: that grows with the run's calls, as the runtime's own index does, never
//! with refused inputs, waits or the log's bytes). Nothing else grows with the log. The window is the one honest compromise: an exact "each key committed at most once
//! over the whole log" needs memory proportional to the number of commits, so the check is
//! exact over any `commit_window` consecutive commits, and the summary says when a log had
//! more commits than that (`commit_window_exceeded`), so a reader knows that reuses farther
//! apart went unchecked.

use crate::chain::{split_sealed, Anchor, Chain, ChainKind, Key, SEAL_LEN};
use crate::envelope::{Envelope, Tag};
use crate::finding::{at, Claim, Finding, Problem};
use crate::header::{self, Judging};
use crate::history::History;
use crate::json::{self, LineRead};
use crate::properties::{self, Broken, CommitWindow, ToolTable};
use crate::rules::{self, Dialect, Dialects, Read};
use crate::summary::{NotJudged, Summary, Unjudged, Unproven};
use crate::{verdict_of, Record, Verdict};
use resumable_kernel::{
    step, Digest, Event, Input, Rejection, Revision, Run, Transition, Wait, RULES_VERSION,
};
use serde::Deserialize;
use std::io::BufRead;

/// The longest line read, in bytes, without its newline. Every field of a record has a fixed
/// size (names are at most 31 bytes), so the longest record the writer produces is under
/// 3 KiB; 64 KiB leaves room for whitespace a runtime's serialiser may add, and bounds what
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

/// Parses one line as `T`, after refusing a repeated key; names the line and column of the
/// first error.
pub(crate) fn parse<'a, T: Deserialize<'a>>(text: &'a str, line: u64) -> Result<T, Finding> {
    if let Some(d) = json::duplicate_key(text) {
        let column = Some(d.offset as u64 + 1);
        return Err(at(line, column, Problem::DuplicateKey { key: d.key }));
    }
    serde_json::from_str(text).map_err(|e| {
        let (category, message) = json_error(&e);
        at(
            line,
            Some(e.column() as u64),
            Problem::Json { category, message },
        )
    })
}

/// serde_json's error as a category and a message without its position (reported apart).
fn json_error(e: &serde_json::Error) -> (&'static str, String) {
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
    (category, message)
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
pub(crate) enum Sealing {
    /// Format 1: `prev` is the SHA-256 of the previous line.
    V1 { prev: Digest },
    /// Formats 2 and 3: each line ends with its MAC. `verify` is false for a keyed log read
    /// without its key: the MACs are then taken as written, to follow the chain to the anchor.
    Sealed { chain: Chain, verify: bool },
}

/// Reads a sealed line: its MAC must be in place and, when `verify`, be the chain's.
pub(crate) fn unseal<'a>(
    text: &'a str,
    line: u64,
    chain: &mut Chain,
    verify: bool,
) -> Result<&'a str, Finding> {
    let Some((body, mac)) = split_sealed(text) else {
        let column = Some(text.len().saturating_sub(SEAL_LEN) as u64 + 1);
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

/// How the records are judged now.
enum Mode {
    /// Strictly, on the run rebuilt so far.
    Strict(Run),
    /// Leniently, on the run rebuilt so far, in one of the dialects the log may be in.
    Lenient(Run, Dialects),
    /// Not (any more): the envelope alone is checked.
    Stopped,
}

/// What the envelope of a record says: its number, its revision, and what it claims.
#[derive(Clone, Copy)]
struct Head {
    seq: u64,
    revision: Revision,
    accepted: bool,
}

/// The validation under way.
struct Validator {
    mode: Mode,
    sealing: Sealing,
    tools: Option<ToolTable>,
    commits: CommitWindow,
    /// The run's call history so far, built from the kernel's answers: every prior a record
    /// states is checked against it, and a record of older rules, which stated none, is
    /// judged with the prior it holds.
    history: History,
    summary: Summary,
    /// Whether a record was judged in another dialect than this validator's own.
    lenient: bool,
}

/// A format 2 or 3 record line as written, in this validator's shapes: the record and its
/// MAC (which [`unseal`] checks is in its place, last).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "the MAC is read from its place by `unseal`; here it is only allowed"
)]
struct SealedRecord {
    seq: u64,
    revision: Revision,
    input: Input,
    verdict: Verdict,
    mac: Digest,
}

/// The input of a record, read in this validator's shapes (the rules of every dialect read
/// write inputs alike but for the prior; a checkpoint of an older schema is migrated in
/// `rules::input_in`).
#[derive(Deserialize)]
struct InputOnly {
    input: serde_json::Value,
}

/// A record's input as rules of any dialect wrote it. Rules 3 and earlier kept the run's call
/// history in the run and stated no prior with a call: the prior is the one `history` holds,
/// which is what the kernel of those rules checked the call against.
fn input_of(text: &str, history: &History) -> Result<Input, serde_json::Error> {
    let mut value = serde_json::from_str::<InputOnly>(text)?.input;
    let holder = match value.get("kind").and_then(serde_json::Value::as_str) {
        Some("dispatch") => value.as_object_mut(),
        Some("suspend") => value
            .get_mut("wait")
            .filter(|w| w.get("wait").and_then(serde_json::Value::as_str) == Some("approval"))
            .and_then(serde_json::Value::as_object_mut),
        _ => None,
    };
    let stated = match holder {
        Some(holder) if !holder.contains_key("prior") => {
            let none = serde_json::json!({"call_id_used": false, "key": null});
            holder.insert("prior".to_string(), none);
            false
        }
        _ => true,
    };
    let mut input: Input = serde_json::from_value(value)?;
    if !stated {
        if let Event::Dispatch { call, prior, .. }
        | Event::Suspend {
            wait: Wait::Approval { call, prior, .. },
            ..
        } = &mut input.event
        {
            *prior = history.prior(call);
        }
    }
    Ok(input)
}

impl Validator {
    fn new(start: header::Start, options: &Options) -> Result<Validator, Finding> {
        // A header read from JSON holds a valid policy (its deserialiser checks it); should a
        // hand-built one not, the header is refused like any other bad value.
        let run = |h: Option<crate::RunHeader>| match h {
            Some(h) => h.run().map(Some).map_err(|e| {
                let (category, message) = ("data", e.to_string());
                at(1, None, Problem::Json { category, message })
            }),
            None => Ok(None),
        };
        let other_rules = start.rules.is_some_and(|r| r != RULES_VERSION)
            && matches!(start.judging, Judging::Lenient(_));
        let (mode, not_judged) = match (start.judging, run(start.run)?) {
            (Judging::Strict, Some(r)) => (Mode::Strict(r), None),
            (Judging::Lenient(d), Some(r)) => (Mode::Lenient(r, d), None),
            (_, _) => {
                let line = 1;
                let reason = Unjudged::Rules;
                let rules = start.rules;
                (
                    Mode::Stopped,
                    Some(NotJudged {
                        line,
                        rules,
                        reason,
                    }),
                )
            }
        };
        let commits = CommitWindow::new(options.commit_window);
        let chain = match (&start.sealing, start.key_id) {
            (Sealing::V1 { .. }, _) => "prev-sha256",
            (Sealing::Sealed { .. }, Some(_)) => ChainKind::HmacSha256.name(),
            (Sealing::Sealed { .. }, None) => ChainKind::Sha256.name(),
        };
        let summary = Summary {
            identity: start.run.map(|h| h.identity),
            version: start.version,
            rules: start.rules,
            validator_rules: RULES_VERSION,
            chain,
            key_id: start.key_id,
            authenticated: false,
            anchored: false,
            records: 0,
            accepted: 0,
            rejected: 0,
            judged: 0,
            not_judged,
            revision: Revision(0),
            phase: None,
            dispatches: 0,
            commits: 0,
            commit_window: commits.capacity() as u64,
            commit_window_exceeded: false,
            unproven: Vec::new(),
        };
        Ok(Validator {
            mode,
            sealing: start.sealing,
            tools: start.tools,
            commits,
            history: History::new(),
            summary,
            // A log that names rules other than this validator's, read in its own shapes (rules
            // 5), is judged by a kernel of other rules all the same: what it proves is the
            // same as for a log read in an older dialect.
            lenient: other_rules,
        })
    }

    /// Checks one record line: its envelope, then, as the mode says, its verdict.
    fn record(&mut self, text: &str, line: u64) -> Result<(), Finding> {
        let (head, record) = self.read(text, line)?;
        self.envelope(head, line)?;
        match record {
            Some(record) => self.strict(&record, line)?,
            None => self.judge(text, line, head)?,
        }
        self.summary.records = head.seq;
        self.summary.revision = head.revision;
        if head.accepted {
            self.summary.accepted += 1;
        } else {
            self.summary.rejected += 1;
        }
        Ok(())
    }

    /// Reads a record line's envelope and checks its place in the chain. A sealed line judged
    /// strictly is read whole at once, in this validator's shapes (the common case, one parse).
    fn read(&mut self, text: &str, line: u64) -> Result<(Head, Option<Record>), Finding> {
        if let (Mode::Strict(_), Sealing::Sealed { chain, verify }) =
            (&self.mode, &mut self.sealing)
        {
            let r: SealedRecord = parse(text, line)?;
            unseal(text, line, chain, *verify)?;
            let accepted = matches!(r.verdict, Verdict::Accepted(_));
            let head = Head {
                seq: r.seq,
                revision: r.revision,
                accepted,
            };
            let record = Record {
                seq: r.seq,
                revision: r.revision,
                input: r.input,
                verdict: r.verdict,
            };
            return Ok((head, Some(record)));
        }
        let e: Envelope = parse(text, line)?;
        let field = |message: &str| {
            let (category, message) = ("data", message.to_string());
            at(line, None, Problem::Json { category, message })
        };
        match &mut self.sealing {
            Sealing::V1 { prev } => {
                if e.mac.is_some() {
                    return Err(field("unknown field `mac`: a format 1 record has `prev`"));
                }
                let Some(found) = e.prev else {
                    return Err(field("missing field `prev`"));
                };
                if found != *prev {
                    let broken = Problem::ChainBroken {
                        expected: *prev,
                        found,
                    };
                    return Err(at(line, None, broken));
                }
                *prev = Digest::of(text.as_bytes());
            }
            Sealing::Sealed { chain, verify } => {
                if e.prev.is_some() {
                    return Err(field("unknown field `prev`: a sealed record has `mac`"));
                }
                unseal(text, line, chain, *verify)?;
            }
        }
        let accepted = matches!(e.verdict, Tag::Accepted(_));
        let head = Head {
            seq: e.seq,
            revision: e.revision,
            accepted,
        };
        if !matches!(self.mode, Mode::Strict(_)) {
            return Ok((head, None));
        }
        // Judged strictly but not sealed (a format 1 log of this validator's rules): the
        // record in this validator's shapes, read a second time.
        #[derive(Deserialize)]
        struct Body {
            input: Input,
            verdict: Verdict,
        }
        let body: Body = parse(text, line)?;
        let record = Record {
            seq: head.seq,
            revision: head.revision,
            input: body.input,
            verdict: body.verdict,
        };
        Ok((head, Some(record)))
    }

    /// What the format says of every record under any rules: `seq` follows, and the revision
    /// follows from what the verdict claims (REV-1, REJ-2).
    fn envelope(&self, head: Head, line: u64) -> Result<(), Finding> {
        let seq = self.summary.records + 1;
        if head.seq != seq {
            let gap = Problem::SeqGap {
                expected: seq,
                found: head.seq,
            };
            return Err(at(line, None, gap));
        }
        let before = self.summary.revision;
        let implied = if head.accepted {
            // At the last revision the kernel refuses (RevisionExhausted): the verdict
            // comparison names that, so the revision check does not.
            before.next().unwrap_or(head.revision)
        } else {
            before
        };
        if head.revision != implied {
            let gap = Problem::RevisionGap {
                expected: implied,
                found: head.revision,
            };
            return Err(at(line, None, gap));
        }
        Ok(())
    }

    /// A record of this validator's rules: the properties, then the kernel's verdict; any
    /// disagreement is a divergence.
    fn strict(&mut self, record: &Record, line: u64) -> Result<(), Finding> {
        let Mode::Strict(run) = &self.mode else {
            return Ok(());
        };
        let run = *run;
        let result = step(&run, &record.input);
        let expected = verdict_of(&run, &result);
        if let Err(Broken::Property(id, what)) = properties::check_prior(&self.history, record) {
            let problem = Problem::Property {
                id,
                what,
                expected: Box::new(expected),
                found: Box::new(Claim::Verdict(record.verdict)),
            };
            return Err(at(line, None, problem));
        }
        self.properties(
            &run,
            record,
            &expected,
            Claim::Verdict(record.verdict),
            line,
        )?;
        if record.verdict != expected {
            let problem = Problem::VerdictDiverges {
                expected: Box::new(expected),
                found: Box::new(record.verdict),
            };
            return Err(at(line, None, problem));
        }
        self.agreed(&expected, result, line);
        Ok(())
    }

    /// The tool policy and the safety properties on what `record` claims, on `run` before it.
    fn properties(
        &self,
        run: &Run,
        record: &Record,
        expected: &Verdict,
        found: Claim,
        line: u64,
    ) -> Result<(), Finding> {
        let tools = self.tools.as_ref();
        let Err(broken) = properties::check(run, record, expected, &self.commits, tools) else {
            return Ok(());
        };
        let problem = match broken {
            Broken::Policy(what) => Problem::Policy { what },
            Broken::Property(id, what) => Problem::Property {
                id,
                what,
                expected: Box::new(*expected),
                found: Box::new(found),
            },
        };
        Err(at(line, None, problem))
    }

    /// A judged record agreed with the kernel: count it and move the run on.
    fn agreed(&mut self, expected: &Verdict, result: Result<Transition, Rejection>, line: u64) {
        self.summary.judged += 1;
        if let (Verdict::Accepted(a), Ok(t)) = (expected, result) {
            for entry in t.effects.histories() {
                self.history.apply(entry);
            }
            self.summary.dispatches +=
                u64::from(a.dispatch.is_some()) + a.dispatch_more.len() as u64;
            if let Some(c) = &a.committed {
                self.summary.commits += 1;
                self.commits.insert((c.key, c.attempt), c.call_id, line);
            }
            match &mut self.mode {
                Mode::Strict(run) | Mode::Lenient(run, _) => *run = t.next,
                Mode::Stopped => {}
            }
        }
    }

    /// A record of other (or unnamed) rules: read in each dialect the log may be in, judged by
    /// the kernel while it agrees; otherwise the judging stops here (not a finding). A
    /// property broken by what the record claims is a divergence under any rules.
    fn judge(&mut self, text: &str, line: u64, head: Head) -> Result<(), Finding> {
        let Mode::Lenient(run, dialects) = &self.mode else {
            return Ok(());
        };
        let (run, dialects) = (*run, *dialects);
        let input = match input_of(text, &self.history) {
            Ok(i) => i,
            Err(e) => return self.stop(line, shape(&e)),
        };
        // The record read in each dialect it may be in, with the kernel's answer to its input
        // as those rules wrote it.
        let mut judged = Vec::with_capacity(2);
        let mut unread = None;
        for dialect in dialects.each() {
            match rules::read_verdict(text, dialect) {
                Ok(read) => {
                    let result = step(&run, &rules::input_in(dialect, &run, &input));
                    let expected = verdict_of(&run, &result);
                    judged.push((dialect, read, expected, result));
                }
                Err(e) => unread = unread.or(Some(e)),
            }
        }
        let Some(&(first_dialect, first, first_expected, first_result)) = judged.first() else {
            let reason = unread.map_or_else(
                || Unjudged::Shape {
                    message: "no shape is read for the log's rules".into(),
                },
                |e| shape(&e),
            );
            return self.stop(line, reason);
        };
        let record = Record {
            seq: head.seq,
            revision: head.revision,
            input,
            verdict: rules::as_current(&first, run.identity()),
        };
        self.properties(&run, &record, &first_expected, first.claim(), line)?;
        let agreeing: Vec<_> = judged
            .iter()
            .filter(|(d, read, expected, result)| {
                rules::expected_in(*d, expected, result) == Some(*read)
            })
            .collect();
        let Some(&&(_, _, expected, result)) = agreeing.first() else {
            let expected = rules::expected_in(first_dialect, &first_expected, &first_result)
                .map_or_else(
                    || "(an answer the log's rules cannot write)".into(),
                    Read::to_json,
                );
            let found = first.to_json();
            return self.stop(line, Unjudged::Answer { expected, found });
        };
        let kept: Vec<Dialect> = agreeing.iter().map(|(d, _, _, _)| *d).collect();
        if let Mode::Lenient(_, d) = &mut self.mode {
            *d = dialects.only(&kept);
        }
        self.lenient |= kept != [Dialect::Current];
        self.agreed(&expected, result, line);
        Ok(())
    }

    /// Stops the judging at `line`: from here on, the envelope alone is checked.
    fn stop(&mut self, line: u64, reason: Unjudged) -> Result<(), Finding> {
        self.mode = Mode::Stopped;
        self.lenient = true;
        let rules = self.summary.rules;
        self.summary.not_judged = Some(NotJudged {
            line,
            rules,
            reason,
        });
        Ok(())
    }

    /// The last line's MAC, as an anchor compares it; `None` when the MACs were not checked
    /// (a keyed log read without its key), since any MAC could then have been written.
    fn last_mac(&self) -> Option<Digest> {
        match &self.sealing {
            Sealing::V1 { prev } => Some(*prev),
            Sealing::Sealed { chain, verify } => verify.then(|| chain.last()),
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
        s.phase = match &self.mode {
            Mode::Strict(run) | Mode::Lenient(run, _) => Some(run.phase().kind()),
            Mode::Stopped => None,
        };
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
        // A header of rules whose shapes are not read may declare a policy; it was not read,
        // which `not_judged` says.
        let header_read = s.not_judged.as_ref().is_none_or(|n| n.line > 1);
        if self.tools.is_none() && header_read {
            s.unproven.push(Unproven::NoToolPolicy);
        }
        if self.lenient && s.judged > 0 {
            s.unproven.push(Unproven::OtherRules);
        }
        Ok(self.summary)
    }
}

/// A record in none of the shapes read: serde_json's words, without the position.
fn shape(e: &serde_json::Error) -> Unjudged {
    let (category, message) = json_error(e);
    Unjudged::Shape {
        message: format!("{category} error: {message}"),
    }
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
///
/// A log whose records were not all judged (see the module docs) is an `Ok` summary whose
/// `not_judged` says why: [`Summary::conforming`] is false for it.
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
    let mut validator = Validator::new(header::read(head, options)?, options)?;
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
        validator.record(text, line)?;
    }
    validator.finish(lines.line, options)
}
