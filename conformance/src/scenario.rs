//! Scenarios as data: parsing the JSON-lines format of `spec/scenario-format.md`.
//!
//! The first non-blank line is a [`Header`]; every further non-blank line is one kernel
//! [`Input`] in the kernel's serde form, with a few conveniences for writing by hand:
//!
//! - a digest may be written `{"text": "..."}` (the SHA-256 of the text) instead of 64 hex;
//! - a resume's checkpoint may be a [`CheckpointRef`] to a checkpoint the trace emitted
//!   (`"latest"`, `{"latest": {changes}}`, `{"emitted": 1}`), resolved during replay;
//! - an approval's `revision` may be omitted (it is the checkpoint's), and so may a resume's
//!   `facts` or any of their fields (the resource is unchanged since the checkpoint, current
//!   policy permits, the budget covers);
//! - any line may carry a `"note"` that the trace prints, and an input may carry an
//!   `"expect"` (`"accepted"` or a rejection's name) that the replay checks.
//!
//! Parsing never panics: every malformed line is a [`ScenarioError`] naming the line and,
//! where the JSON parser gives one, the column.

use crate::SpecId;
use resumable_kernel::{
    Checkpoint, Digest, Event, Identity, Input, Intent, Name, Policy, ReasonKind, Revision, Run,
    Time, SCHEMA_VERSION,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The scenario format version this crate reads and documents.
pub const FORMAT_VERSION: u32 = 1;

/// A malformed scenario: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1, where the JSON parser gives one.
    pub column: Option<usize>,
    /// What is wrong, as one line of text.
    pub message: String,
}

impl ScenarioError {
    pub(crate) fn at(line: usize, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            line,
            column: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.column {
            Some(c) => write!(f, "{}:{}: {}", self.line, c, self.message),
            None => write!(f, "{}: {}", self.line, self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The serde form of a list of spec IDs: their names, as spec/ writes them. A name that is
/// no spec ID is refused, by name.
mod spec_ids {
    use crate::SpecId;
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ids: &[SpecId], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ids.iter().map(|id| id.name()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<SpecId>, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        (names.iter())
            .map(|name| {
                crate::spec_id(name).ok_or_else(|| {
                    D::Error::custom(format!("\"shows\" names `{name}`, which is not a spec ID"))
                })
            })
            .collect()
    }
}

/// The first line of a scenario: what it is called, what it shows, and the run it creates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The scenario's name (by convention, the file's stem).
    pub scenario: String,
    /// The format version: [`FORMAT_VERSION`].
    pub format: u32,
    /// The spec IDs the scenario shows; at least one. On the wire, each as spec/ writes it.
    #[serde(with = "spec_ids")]
    pub shows: Vec<SpecId>,
    /// One sentence saying what the scenario shows.
    pub description: String,
    /// The run the inputs are fed to.
    pub run: RunSpec,
    /// A remark the trace prints under the description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The run a scenario creates: its identity, its policy and when it was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// The tenant that owns the run.
    pub tenant: Name,
    /// The session.
    pub session: Name,
    /// The run's identifier.
    pub run: Name,
    /// The run's definition fingerprint.
    pub definition: Name,
    /// The party who reconciles unknown outcomes.
    pub operator: Name,
    /// How long a reconciliation or an escalated intervention may wait.
    pub reconcile_window: u64,
    /// When the run was created.
    pub created_at: Time,
}

impl RunSpec {
    /// The run's identity.
    pub fn identity(&self) -> Identity {
        Identity {
            tenant: self.tenant,
            session: self.session,
            run: self.run,
            definition: self.definition,
        }
    }

    /// A new run, running at revision 0, or why its policy cannot govern one.
    pub fn create(&self) -> Result<Run, resumable_kernel::PolicyError> {
        Run::new(
            self.identity(),
            Policy {
                operator: self.operator,
                reconcile_window: self.reconcile_window,
            },
            self.created_at,
        )
    }
}

/// A parsed scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The header.
    pub header: Header,
    /// The header's line number.
    pub header_line: usize,
    /// The inputs, in order.
    pub steps: Vec<Step>,
}

/// Which checkpoint a [`CheckpointRef`] starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The last checkpoint the trace emitted.
    Latest,
    /// The checkpoint the trace emitted at this revision.
    Emitted(Revision),
}

/// A resume's checkpoint, written as a reference to one the trace emitted, optionally with
/// fields changed (to show what a forged, tampered or misdirected checkpoint meets).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointRef {
    /// The emitted checkpoint it starts from.
    pub source: Source,
    /// Fields to change, as a partial checkpoint in serde form (nested objects merge).
    pub changes: Map<String, Value>,
    /// Whether to recompute the digest after the changes. `false` keeps the emitted digest,
    /// which then no longer matches: a tampered checkpoint (spec CKP-2).
    pub reseal: bool,
}

/// What replay fills in from the resolved checkpoint, because the line left it out.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Fill {
    /// The checkpoint is a reference, resolved against the checkpoints emitted so far.
    pub checkpoint: Option<CheckpointRef>,
    /// The approval's `revision` is the checkpoint's.
    pub approval_revision: bool,
    /// The facts' `resource_version` is the checkpoint's.
    pub facts_resource_version: bool,
}

/// One input line of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The line number, from 1.
    pub line: usize,
    /// A remark the trace prints with the step.
    pub note: Option<String>,
    /// The verdict the scenario claims: `accepted`, or a rejection's name.
    pub expect: Option<String>,
    /// The input as written. Where [`Step::fill`] says so, a resume holds a placeholder
    /// (checkpoint, approval revision, resource version) until [`Step::resolve`] runs.
    pub input: Input,
    /// What replay fills in.
    pub fill: Fill,
}

impl Step {
    /// The input with every reference resolved against the checkpoints emitted so far (in
    /// order), or a message saying why it cannot be.
    pub fn resolve(&self, emitted: &[Checkpoint]) -> Result<Input, String> {
        let mut input = self.input;
        let Event::Resume(resume) = &mut input.event else {
            return Ok(input);
        };
        if let Some(r) = &self.fill.checkpoint {
            resume.checkpoint = r.resolve(emitted)?;
        }
        if self.fill.approval_revision {
            if let resumable_kernel::Decision::Approve(a) | resumable_kernel::Decision::Deny(a) =
                &mut resume.decision
            {
                a.revision = resume.checkpoint.revision;
            }
        }
        if self.fill.facts_resource_version {
            resume.facts.resource_version = resume.checkpoint.resource_version;
        }
        Ok(input)
    }
}

impl CheckpointRef {
    /// The checkpoint this reference names, with its changes applied.
    pub fn resolve(&self, emitted: &[Checkpoint]) -> Result<Checkpoint, String> {
        let base = match self.source {
            Source::Latest => emitted.last().copied().ok_or_else(|| {
                "no checkpoint has been emitted yet: \"latest\" needs an earlier suspension"
                    .to_string()
            })?,
            Source::Emitted(rev) => emitted
                .iter()
                .rev()
                .find(|c| c.revision == rev)
                .copied()
                .ok_or_else(|| {
                    let seen: Vec<String> =
                        emitted.iter().map(|c| c.revision.to_string()).collect();
                    format!(
                        "no checkpoint was emitted at {rev} (emitted so far: {})",
                        if seen.is_empty() {
                            "none".to_string()
                        } else {
                            seen.join(", ")
                        }
                    )
                })?,
        };
        if self.changes.is_empty() {
            return Ok(if self.reseal { base.seal() } else { base });
        }
        let mut value = serde_json::to_value(base)
            .map_err(|e| format!("cannot represent the checkpoint as JSON: {e}"))?;
        merge(&mut value, &self.changes, "")?;
        let changed: Checkpoint = serde_json::from_value(value)
            .map_err(|e| format!("the changed checkpoint is not a checkpoint: {e}"))?;
        Ok(if self.reseal { changed.seal() } else { changed })
    }

    /// The changes as `path=value` pairs, for the trace.
    pub fn describe_changes(&self) -> String {
        let mut out = Vec::new();
        flatten(&self.changes, "", &mut out);
        out.join(", ")
    }
}

fn flatten(map: &Map<String, Value>, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in map {
        match v {
            Value::Object(sub) if !sub.is_empty() => flatten(sub, &format!("{prefix}{k}."), out),
            Value::String(s) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
                out.push(format!("{prefix}{k}={}..", &s[..8]))
            }
            Value::String(s) => out.push(format!("{prefix}{k}={s}")),
            other => out.push(format!("{prefix}{k}={other}")),
        }
    }
}

/// Merges `changes` into `target`: nested objects merge field by field, anything else
/// replaces. A field the checkpoint does not have is refused, so a typo cannot pass silently.
fn merge(target: &mut Value, changes: &Map<String, Value>, path: &str) -> Result<(), String> {
    let Value::Object(fields) = target else {
        return Err(format!("checkpoint field `{path}` is not an object"));
    };
    for (k, v) in changes {
        let Some(slot) = fields.get_mut(k) else {
            return Err(format!("unknown checkpoint field `{path}{k}`"));
        };
        match (slot, v) {
            (slot @ Value::Object(_), Value::Object(sub)) => {
                merge(slot, sub, &format!("{path}{k}."))?
            }
            (slot, v) => *slot = v.clone(),
        }
    }
    Ok(())
}

/// The longest scenario line read, in bytes, without its newline. A hand-written input is a
/// few hundred bytes; the bound keeps an endless line (`/dev/zero`) from being read whole.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Reads a scenario one line at a time, so that a replay holds one line in memory, never the
/// file: [`Reader::header`] first, then [`Reader::next_step`] until `None`. Every line is
/// bounded by [`MAX_LINE_BYTES`], must be UTF-8, and may not repeat a key in any object.
pub struct Reader<R> {
    reader: R,
    buf: Vec<u8>,
    line: usize,
}

impl<R: std::io::BufRead> Reader<R> {
    /// A reader at the start of a scenario.
    pub fn new(reader: R) -> Reader<R> {
        Reader {
            reader,
            buf: Vec::new(),
            line: 0,
        }
    }

    /// The next non-blank line as JSON: its number, its text and its value; `None` at the end.
    fn next_value(&mut self) -> Result<Option<(usize, String, Value)>, ScenarioError> {
        use crate::json::{read_line, LineRead};
        loop {
            let line = self.line + 1;
            let read = read_line(&mut self.reader, &mut self.buf, MAX_LINE_BYTES)
                .map_err(|e| ScenarioError::at(line, format!("cannot read: {e}")))?;
            match read {
                LineRead::Eof => return Ok(None),
                LineRead::TooLong => {
                    return Err(ScenarioError {
                        line,
                        column: Some(MAX_LINE_BYTES + 1),
                        message: format!(
                            "line longer than {MAX_LINE_BYTES} bytes; not read further"
                        ),
                    })
                }
                LineRead::Line | LineRead::Unterminated => self.line = line,
            }
            let raw = self.buf.strip_suffix(b"\r").unwrap_or(&self.buf);
            let text = std::str::from_utf8(raw).map_err(|e| ScenarioError {
                line,
                column: Some(e.valid_up_to() + 1),
                message: "not UTF-8 text (a scenario is JSON lines)".to_string(),
            })?;
            if text.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(text).map_err(|e| json_error(line, &e))?;
            if let Some(d) = crate::json::duplicate_key(text) {
                return Err(ScenarioError {
                    line,
                    column: Some(d.offset + 1),
                    message: format!(
                        "the key {:?} appears twice in one object; readers disagree on which \
                         one counts, so the line is refused",
                        d.key
                    ),
                });
            }
            return Ok(Some((line, text.to_string(), value)));
        }
    }

    /// Reads the header, the first non-blank line.
    pub fn header(&mut self) -> Result<(Header, usize), ScenarioError> {
        let Some((line, text, value)) = self.next_value()? else {
            return Err(ScenarioError::at(
                1,
                "empty scenario: expected a header line ({\"scenario\": ..., \"format\": 1, ...})",
            ));
        };
        Ok((parse_header(line, &text, &value)?, line))
    }

    /// The next input, or `None` at the end of the scenario. Call [`Reader::header`] first.
    pub fn next_step(&mut self) -> Result<Option<Step>, ScenarioError> {
        match self.next_value()? {
            None => Ok(None),
            Some((line, text, value)) => parse_input(line, &text, value).map(Some),
        }
    }
}

/// Parses a scenario from bytes.
pub fn parse(bytes: &[u8]) -> Result<Scenario, ScenarioError> {
    let mut reader = Reader::new(bytes);
    let (header, header_line) = reader.header()?;
    let mut steps = Vec::new();
    while let Some(step) = reader.next_step()? {
        steps.push(step);
    }
    if steps.is_empty() {
        return Err(no_inputs(header_line));
    }
    Ok(Scenario {
        header,
        header_line,
        steps,
    })
}

/// The error for a scenario whose header is followed by no input.
pub fn no_inputs(header_line: usize) -> ScenarioError {
    ScenarioError::at(header_line, "the scenario has a header but no inputs")
}

/// A serde_json error as a scenario error: the column it gives, and its message without the
/// position it appends (the line is the scenario's, not the parser's).
fn json_error(line: usize, e: &serde_json::Error) -> ScenarioError {
    use serde_json::error::Category;
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text);
    let message = match e.classify() {
        Category::Syntax | Category::Eof => format!("not JSON: {message}"),
        Category::Data | Category::Io => message.to_string(),
    };
    ScenarioError {
        line,
        column: (e.line() > 0 && e.column() > 0).then_some(e.column()),
        message,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn parse_header(line: usize, text: &str, value: &Value) -> Result<Header, ScenarioError> {
    let Value::Object(obj) = value else {
        return Err(ScenarioError::at(
            line,
            format!(
                "missing header: the first line must be a JSON object naming the scenario, found {}",
                type_name(value)
            ),
        ));
    };
    if !obj.contains_key("scenario") {
        let found = if obj.contains_key("kind") {
            "an input"
        } else {
            "an object without a \"scenario\" field"
        };
        return Err(ScenarioError::at(
            line,
            format!(
                "missing header: the first line must name the scenario \
                 ({{\"scenario\": ..., \"format\": 1, \"shows\": [...], ...}}), found {found}"
            ),
        ));
    }
    // The version is read first, so that a newer format is named as such rather than
    // reported as unknown fields.
    match obj.get("format") {
        Some(Value::Number(n)) if n.as_u64() == Some(u64::from(FORMAT_VERSION)) => {}
        Some(Value::Number(n)) => {
            return Err(ScenarioError::at(
                line,
                format!(
                    "scenario format {n} is not supported; this build reads format {FORMAT_VERSION}"
                ),
            ))
        }
        _ => {} // missing or mistyped: serde says which, with a column
    }
    let header: Header = serde_json::from_str(text).map_err(|e| json_error(line, &e))?;
    if header.scenario.trim().is_empty() {
        return Err(ScenarioError::at(line, "the scenario's name is empty"));
    }
    if header.description.trim().is_empty() {
        return Err(ScenarioError::at(
            line,
            "the scenario's description is empty",
        ));
    }
    if header.shows.is_empty() {
        return Err(ScenarioError::at(
            line,
            "\"shows\" is empty: name the spec IDs the scenario shows",
        ));
    }
    Ok(header)
}

fn take_string(
    obj: &mut Map<String, Value>,
    key: &str,
    line: usize,
) -> Result<Option<String>, ScenarioError> {
    match obj.remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ScenarioError::at(
            line,
            format!("\"{key}\" must be a string, found {}", type_name(&other)),
        )),
    }
}

fn parse_input(line: usize, text: &str, value: Value) -> Result<Step, ScenarioError> {
    let Value::Object(mut obj) = value else {
        return Err(ScenarioError::at(
            line,
            format!("an input is a JSON object, found {}", type_name(&value)),
        ));
    };
    if obj.contains_key("scenario") {
        return Err(ScenarioError::at(
            line,
            "a second header: a file holds one scenario, headed by its first line",
        ));
    }
    let note = take_string(&mut obj, "note", line)?;
    let expect = take_string(&mut obj, "expect", line)?;
    let mut written = Value::Object(obj);
    digests_from_text(&mut written, "").map_err(|m| ScenarioError::at(line, m))?;
    let fill = resume_conveniences(&mut written).map_err(|m| ScenarioError::at(line, m))?;
    let input: Input =
        serde_json::from_value(written.clone()).map_err(|e| data_error(line, text, &e))?;
    // Kernel types accept and ignore fields they do not know; a scenario must not, or a
    // misspelt field would silently take its default. Every field written must be one the
    // input, written back, also has.
    let canonical = serde_json::to_value(input)
        .map_err(|e| ScenarioError::at(line, format!("cannot write the input back: {e}")))?;
    known_fields(&written, &canonical, "").map_err(|m| ScenarioError::at(line, m))?;
    Ok(Step {
        line,
        note,
        expect,
        input,
        fill,
    })
}

/// A type error found on the rewritten input. The rewritten value has no positions, so the
/// line's own text is parsed again: where that meets the same error, its column is given.
fn data_error(line: usize, text: &str, e: &serde_json::Error) -> ScenarioError {
    let message = e.to_string();
    let column = serde_json::from_str::<Input>(text)
        .err()
        .map(|raw| json_error(line, &raw))
        .filter(|raw| raw.message == message)
        .and_then(|raw| raw.column);
    ScenarioError {
        line,
        column,
        message,
    }
}

/// Replaces every `{"text": "..."}` with the hex SHA-256 of the text.
fn digests_from_text(v: &mut Value, path: &str) -> Result<(), String> {
    match v {
        Value::Object(obj) if obj.len() == 1 && obj.contains_key("text") => match obj.get("text") {
            Some(Value::String(s)) => {
                *v = Value::String(Digest::of(s.as_bytes()).to_string());
                Ok(())
            }
            Some(other) => Err(format!(
                "`{path}`: a digest written as {{\"text\": ...}} needs a string, found {}",
                type_name(other)
            )),
            None => Ok(()),
        },
        Value::Object(obj) => {
            for (k, sub) in obj.iter_mut() {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                digests_from_text(sub, &p)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, sub) in items.iter_mut().enumerate() {
                digests_from_text(sub, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A checkpoint that stands in for a reference until replay resolves it.
fn placeholder_checkpoint() -> Checkpoint {
    const P: Name = Name::lit("placeholder");
    Checkpoint {
        schema_version: SCHEMA_VERSION,
        identity: Identity {
            tenant: P,
            session: P,
            run: P,
            definition: P,
        },
        revision: Revision(0),
        resource_version: 0,
        reason: ReasonKind::PendingApproval,
        next_intent: Intent::Dispatch,
        pending: None,
        key_digest: None,
        requester: None,
        waiting_on: None,
        expires_at: Time(0),
        responsible: P,
        created_at: Time(0),
        cancel_requested_by: None,
        digest: Digest::default(),
    }
}

/// For a resume: replaces a checkpoint reference with a placeholder and fills the fields
/// that may be left out, recording what replay must fill in from the resolved checkpoint.
fn resume_conveniences(written: &mut Value) -> Result<Fill, String> {
    let mut fill = Fill::default();
    let Value::Object(obj) = written else {
        return Ok(fill);
    };
    if obj.get("kind").and_then(Value::as_str) != Some("resume") {
        return Ok(fill);
    }
    if let Some(cp) = obj.get_mut("checkpoint") {
        if let Some(r) = checkpoint_ref(cp)? {
            fill.checkpoint = Some(r);
            *cp = serde_json::to_value(placeholder_checkpoint())
                .map_err(|e| format!("cannot write a placeholder checkpoint: {e}"))?;
        }
    }
    if let Some(Value::Object(d)) = obj.get_mut("decision") {
        let binds = matches!(
            d.get("decision").and_then(Value::as_str),
            Some("approve" | "deny")
        );
        if binds && !d.contains_key("revision") {
            d.insert("revision".into(), Value::from(0u64));
            fill.approval_revision = true;
        }
    }
    let facts = obj
        .entry("facts")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(f) = facts {
        if !f.contains_key("resource_version") {
            f.insert("resource_version".into(), Value::from(0u64));
            fill.facts_resource_version = true;
        }
        f.entry("permitted").or_insert(Value::Bool(true));
        f.entry("within_budget").or_insert(Value::Bool(true));
    }
    Ok(fill)
}

const REF_FORMS: &str =
    "\"latest\", {\"latest\": {changes}}, {\"emitted\": <revision>, \"changes\": {...}} \
     or a checkpoint written in full";

/// Reads a checkpoint reference; `None` for a checkpoint written in full.
fn checkpoint_ref(v: &Value) -> Result<Option<CheckpointRef>, String> {
    let obj = match v {
        Value::String(s) if s == "latest" => {
            return Ok(Some(CheckpointRef {
                source: Source::Latest,
                changes: Map::new(),
                reseal: true,
            }))
        }
        Value::String(s) => {
            return Err(format!(
                "checkpoint \"{s}\" is not a reference; a checkpoint is {REF_FORMS}"
            ))
        }
        Value::Object(obj) if obj.contains_key("latest") || obj.contains_key("emitted") => obj,
        _ => return Ok(None),
    };
    if let Some(k) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "latest" | "emitted" | "changes" | "reseal"))
    {
        return Err(format!(
            "unknown field `{k}` in a checkpoint reference; a checkpoint is {REF_FORMS}"
        ));
    }
    let (source, changes) = match (obj.get("latest"), obj.get("emitted")) {
        (Some(_), Some(_)) => {
            return Err("a checkpoint reference names \"latest\" or \"emitted\", not both".into())
        }
        (Some(latest), None) => {
            if obj.contains_key("changes") {
                return Err(
                    "with \"latest\", write the changes as its value: {\"latest\": {changes}}"
                        .into(),
                );
            }
            (Source::Latest, latest)
        }
        (None, Some(rev)) => {
            let rev = rev.as_u64().ok_or_else(|| {
                format!("\"emitted\" is a revision number, found {}", type_name(rev))
            })?;
            let changes = obj.get("changes").unwrap_or(&Value::Null);
            (Source::Emitted(Revision(rev)), changes)
        }
        (None, None) => return Ok(None),
    };
    let changes = match changes {
        Value::Object(c) => c.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(format!(
                "the changes to a checkpoint are an object of fields, found {}",
                type_name(other)
            ))
        }
    };
    let reseal = match obj.get("reseal") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "\"reseal\" is true or false, found {}",
                type_name(other)
            ))
        }
    };
    if reseal && changes.contains_key("digest") {
        return Err(
            "a changed digest would be overwritten by resealing; add \"reseal\": false".into(),
        );
    }
    Ok(Some(CheckpointRef {
        source,
        changes,
        reseal,
    }))
}

/// Every field in `written` must also be in `canonical` (the input written back by serde).
fn known_fields(written: &Value, canonical: &Value, path: &str) -> Result<(), String> {
    match (written, canonical) {
        (Value::Object(w), Value::Object(c)) => {
            for (k, sub) in w {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match c.get(k) {
                    Some(csub) => known_fields(sub, csub, &p)?,
                    None => return Err(format!("unknown field `{p}`")),
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resumable_kernel::Decision;

    const HEADER: &str = r#"{"scenario": "t", "format": 1, "shows": ["RES-3"], "description": "d", "run": {"tenant": "tenant-a", "session": "s-1", "run": "run-1", "definition": "demo@1", "operator": "ops", "reconcile_window": 100, "created_at": 0}}"#;
    const SUSPEND: &str = r#"{"at": 1, "kind": "suspend", "wait": {"wait": "approval", "call": {"call_id": "call-1", "tool": "publish:demo", "args": {"text": "post"}, "key": "k-1", "contract": {"dedupes": true, "query_fences": false, "max_attempts": 3}}, "requester": "agent"}, "expires_at": 50, "responsible": "approver", "resource_version": 7}"#;
    const APPROVAL: &str = r#"{"decision": "approve", "call_id": "call-1", "args": {"text": "post"}, "requester": "agent", "approver": "approver", "expires_at": 90}"#;

    fn scenario(lines: &[&str]) -> Result<Scenario, ScenarioError> {
        let mut text = String::from(HEADER);
        for l in lines {
            text.push('\n');
            text.push_str(l);
        }
        parse(text.as_bytes())
    }

    fn resume_line(checkpoint: &str) -> String {
        format!(
            r#"{{"at": 2, "kind": "resume", "checkpoint": {checkpoint}, "decision": {APPROVAL}}}"#
        )
    }

    /// The checkpoint the suspend emits, found by stepping the kernel directly.
    fn emitted(s: &Scenario) -> Checkpoint {
        let t = resumable_kernel::step(
            &s.header.run.create().expect("valid policy"),
            &s.steps[0].input,
        )
        .expect("the suspend is accepted");
        *t.effects
            .checkpoint()
            .expect("a suspension persists a checkpoint")
    }

    #[test]
    fn a_digest_written_as_text_is_the_sha256_of_the_text() {
        let s = scenario(&[SUSPEND]).unwrap();
        let Event::Suspend {
            wait: resumable_kernel::Wait::Approval { call, .. },
            ..
        } = s.steps[0].input.event
        else {
            panic!("a suspend for approval")
        };
        assert_eq!(call.args, Digest::of(b"post"));
    }

    #[test]
    fn latest_resolves_to_the_last_emitted_checkpoint_and_fills_revision_and_facts() {
        let s = scenario(&[SUSPEND, &resume_line("\"latest\"")]).unwrap();
        let cp = emitted(&s);
        let input = s.steps[1].resolve(&[cp]).unwrap();
        let Event::Resume(r) = input.event else {
            panic!("a resume")
        };
        assert_eq!(r.checkpoint, cp);
        let Decision::Approve(a) = r.decision else {
            panic!("an approval")
        };
        assert_eq!(
            a.revision, cp.revision,
            "an omitted revision is the checkpoint's"
        );
        assert_eq!(
            r.facts.resource_version, 7,
            "an omitted resource version is unchanged"
        );
        assert!(r.facts.permitted && r.facts.within_budget);
    }

    #[test]
    fn changes_to_the_latest_checkpoint_are_resealed_unless_told_not_to() {
        let s = scenario(&[
            SUSPEND,
            &resume_line(r#"{"latest": {"identity": {"run": "run-other"}}}"#),
            &resume_line(r#"{"latest": {"expires_at": 99}, "reseal": false}"#),
        ])
        .unwrap();
        let cp = emitted(&s);
        let Event::Resume(resealed) = s.steps[1].resolve(&[cp]).unwrap().event else {
            panic!("a resume")
        };
        assert_eq!(resealed.checkpoint.identity.run, Name::lit("run-other"));
        assert_eq!(resealed.checkpoint.identity.tenant, cp.identity.tenant);
        assert_eq!(resealed.checkpoint.verify(), Ok(()));
        let Event::Resume(stale) = s.steps[2].resolve(&[cp]).unwrap().event else {
            panic!("a resume")
        };
        assert_eq!(stale.checkpoint.expires_at, Time(99));
        assert_eq!(
            stale.checkpoint.digest, cp.digest,
            "the emitted digest is kept"
        );
        assert!(stale.checkpoint.verify().is_err());
    }

    #[test]
    fn emitted_names_a_checkpoint_by_revision_and_an_unknown_one_is_an_error() {
        let s = scenario(&[
            SUSPEND,
            &resume_line(r#"{"emitted": 1}"#),
            &resume_line(r#"{"emitted": 5}"#),
        ])
        .unwrap();
        let cp = emitted(&s);
        assert!(s.steps[1].resolve(&[cp]).is_ok());
        let err = s.steps[2].resolve(&[cp]).unwrap_err();
        assert!(err.contains("no checkpoint was emitted at r5"), "{err}");
        let err = s.steps[1].resolve(&[]).unwrap_err();
        assert!(err.contains("emitted so far: none"), "{err}");
    }

    #[test]
    fn latest_before_any_suspension_is_an_error_not_a_panic() {
        let s = scenario(&[&resume_line("\"latest\"")]).unwrap();
        let err = s.steps[0].resolve(&[]).unwrap_err();
        assert!(err.contains("no checkpoint has been emitted yet"), "{err}");
    }

    #[test]
    fn a_misspelt_checkpoint_change_is_refused() {
        let s = scenario(&[SUSPEND, &resume_line(r#"{"latest": {"revison": 0}}"#)]).unwrap();
        let err = s.steps[1].resolve(&[emitted(&s)]).unwrap_err();
        assert!(err.contains("unknown checkpoint field `revison`"), "{err}");
    }

    #[test]
    fn a_changed_digest_that_would_be_resealed_is_refused() {
        let digest = "0".repeat(64);
        let err = scenario(&[
            SUSPEND,
            &resume_line(&format!(r#"{{"latest": {{"digest": "{digest}"}}}}"#)),
        ])
        .unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("\"reseal\": false"), "{err}");
    }

    #[test]
    fn a_field_the_kernel_does_not_know_is_refused_with_its_path() {
        let line = SUSPEND.replace(
            "\"requester\": \"agent\"",
            "\"requester\": \"agent\", \"aprover\": \"x\"",
        );
        let err = scenario(&[&line]).unwrap_err();
        assert_eq!(
            (err.line, err.message.as_str()),
            (2, "unknown field `wait.aprover`")
        );
    }

    #[test]
    fn a_syntax_error_names_line_and_column() {
        let err = scenario(&[SUSPEND, r#"{"at": 2, "kind": }"#]).unwrap_err();
        assert_eq!((err.line, err.column), (3, Some(19)));
        assert!(err.message.starts_with("not JSON"), "{err}");
    }

    #[test]
    fn bytes_that_are_not_utf8_name_line_and_column() {
        let mut text = format!("{HEADER}\n").into_bytes();
        text.extend_from_slice(b"{\"at\": \xff}");
        let err = parse(&text).unwrap_err();
        assert_eq!((err.line, err.column), (2, Some(8)));
    }

    #[test]
    fn blank_lines_and_crlf_endings_are_accepted_and_notes_kept() {
        let text = format!(
            "\r\n{HEADER}\r\n\r\n{{\"at\": 1, \"kind\": \"expire\", \"note\": \"why\", \"expect\": \"not_suspended\"}}\r\n"
        );
        let s = parse(text.as_bytes()).unwrap();
        assert_eq!((s.header_line, s.steps[0].line), (2, 4));
        assert_eq!(s.steps[0].note.as_deref(), Some("why"));
        assert_eq!(s.steps[0].expect.as_deref(), Some("not_suspended"));
    }

    #[test]
    fn a_second_header_is_refused() {
        let err = scenario(&[HEADER]).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("second header"), "{err}");
    }

    #[test]
    fn a_newer_format_is_named_as_such() {
        let text = HEADER.replace("\"format\": 1", "\"format\": 2")
            + "\n{\"at\": 1, \"kind\": \"expire\"}";
        let err = parse(text.as_bytes()).unwrap_err();
        assert!(err.message.contains("format 2 is not supported"), "{err}");
    }

    #[test]
    fn every_truncation_of_a_scenario_parses_or_names_a_line() {
        // Cutting a valid scenario anywhere must give a scenario or an error, never a panic,
        // and replaying whatever parses must not panic either.
        let full = format!("{HEADER}\n{SUSPEND}\n{}\n", resume_line("\"latest\""));
        for cut in 0..=full.len() {
            match parse(&full.as_bytes()[..cut]) {
                Ok(s) => {
                    let t = crate::trace::replay(&s).expect("a complete line resolves");
                    assert_eq!(t.steps.len(), s.steps.len());
                }
                Err(e) => assert!(e.line >= 1 && !e.message.is_empty()),
            }
        }
    }
}
