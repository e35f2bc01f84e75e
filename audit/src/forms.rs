//! The kernel and the audit-log writer as pure functions over the project's JSON forms: what
//! the Python and Node packages offer, written once so the two cannot drift. Every function
//! takes and returns JSON text in the kernel's serde form, holds no state and reads no clock;
//! an error is the message a binding raises as its one error class. A rejection is a value
//! (`{"verdict": NAME, "rejection": {...}, "message": ...}`), not an error.

use crate::{jcs, Anchor, Key, RunHeader, ToolPolicy, Writer};
use resumable_kernel::{
    Checkpoint, Effect, Fingerprint, IdempotencyKey, Identity, Input, Name, Rejection, Run,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What a binding raises: the kernel's (or the reader's) message.
pub type Result<T> = std::result::Result<T, String>;

/// Parses `text` as `what` in the kernel's serde form, refusing a repeated key first: JSON
/// readers disagree on which of two equal keys counts, so the project refuses both.
pub fn parse<T: DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    if let Some(d) = crate::json::duplicate_key(text) {
        return Err(format!(
            "{what}: the key {:?} appears twice in one object; readers disagree on which one counts",
            d.key
        ));
    }
    serde_json::from_str(text).map_err(|e| format!("{what}: {e}"))
}

fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| format!("cannot write JSON: {e}"))
}

/// What a step answered, in JSON: accepted with the next run and its effects, or the rejection.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Verdict<'a> {
    /// `{"verdict": "accepted", "run": NEXT, "effects": [...]}`.
    Accepted {
        /// `"accepted"`.
        verdict: &'static str,
        /// The next run.
        run: &'a Run,
        /// Its effects, in order.
        effects: Vec<Effect>,
    },
    /// `{"verdict": KIND, "rejection": {...}, "message": ...}`.
    Rejected {
        /// The rejection's kind.
        verdict: &'static str,
        /// The rejection with its evidence.
        rejection: &'a Rejection,
        /// Its message.
        message: String,
    },
}

impl<'a> Verdict<'a> {
    /// The verdict of a step's result.
    pub fn of(result: &'a std::result::Result<resumable_kernel::Transition, Rejection>) -> Self {
        match result {
            Ok(t) => Verdict::Accepted {
                verdict: "accepted",
                run: &t.next,
                effects: t.effects.iter().collect(),
            },
            Err(r) => Verdict::Rejected {
                verdict: r.kind().name(),
                rejection: r,
                message: r.to_string(),
            },
        }
    }
}

/// A new run at revision 0 from `{"identity": ..., "policy": ..., "created_at": T}`.
pub fn new_run(spec: &str) -> Result<String> {
    let header: RunHeader = parse("run spec", spec)?;
    let run = header.run().map_err(|e| format!("run spec: {e}"))?;
    to_json(&run)
}

/// One kernel step: `run` and `input` in the kernel's serde form. Returns
/// `{"verdict": "accepted", "run": NEXT, "effects": [...]}` or
/// `{"verdict": NAME, "rejection": {...}, "message": ...}`; a rejection changes nothing.
pub fn step(run: &str, input: &str) -> Result<String> {
    let run: Run = parse("run", run)?;
    let input: Input = parse("input", input)?;
    let result = resumable_kernel::step(&run, &input);
    to_json(&Verdict::of(&result))
}

/// The checkpoint with its digest recomputed over its other fields (what the kernel seals).
pub fn seal_checkpoint(checkpoint: &str) -> Result<String> {
    let checkpoint: Checkpoint = parse("checkpoint", checkpoint)?;
    to_json(&checkpoint.seal())
}

/// The fingerprint the run's history indexes a call id by (16 hex digits).
pub fn call_id_fingerprint(call_id: &str) -> Result<String> {
    let name = Name::new(call_id).map_err(|e| format!("call id: {e}"))?;
    Ok(Fingerprint::call_id(&name).to_string())
}

/// The fingerprint the run's history indexes an idempotency key by (16 hex digits).
pub fn key_fingerprint(key: &str) -> Result<String> {
    let key = IdempotencyKey::new(key).map_err(|e| format!("key: {e}"))?;
    Ok(Fingerprint::key(&key).to_string())
}

/// The tool key the kernel dispatches a call under: its idempotency key bound to the run's
/// identity (64 hex digits). A driver queries the tool under it after a crash.
pub fn tool_key(identity: &str, key: &str) -> Result<String> {
    let identity: Identity = parse("identity", identity)?;
    let key = IdempotencyKey::new(key).map_err(|e| format!("key: {e}"))?;
    Ok(resumable_kernel::checkpoint::tool_key(&identity, &key).to_string())
}

/// The RFC 8785 canonical form of one JSON text.
pub fn canonical_json(text: &str) -> Result<String> {
    jcs::canonical(text).map_err(|e| e.to_string())
}

/// The argument digest of one JSON text, as `resumable digest` prints it.
pub fn digest_json(text: &str) -> Result<String> {
    jcs::digest(text)
        .map(|d| d.to_string())
        .map_err(|e| e.to_string())
}

/// The argument digest of a canonical form a binding built from its own values.
pub fn digest_of_canonical(canonical: &str) -> String {
    resumable_kernel::Digest::of(canonical.as_bytes()).to_string()
}

fn key_of(key: Option<&str>) -> Result<Option<Key>> {
    key.map(|k| Key::from_hex(k.trim()).map_err(|e| format!("audit key: {e}")))
        .transpose()
}

/// An audit log's header as a runtime declares it: the run, and its tool policy if any.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogHeader {
    run: RunHeader,
    #[serde(default)]
    tools: Option<Vec<ToolPolicy>>,
}

/// Where a log stands after a line: the run it describes and its anchor.
#[derive(Serialize)]
struct Appended<'a> {
    line: String,
    run: &'a Run,
    anchor: Anchor,
}

/// Where a log stands after a record: the line, the run, the anchor, and the kernel's verdict.
#[derive(Serialize)]
struct Recorded<'a> {
    line: String,
    run: &'a Run,
    anchor: Anchor,
    verdict: Verdict<'a>,
}

fn line_of(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| format!("the audit line is not UTF-8: {e}"))
}

/// Starts an audit log (spec/audit-log.md): `header` is `{"run": {"identity", "policy",
/// "created_at"}, "tools": [...] | null}`, `key` 64 hex digits (HMAC-SHA-256) or absent
/// (plain SHA-256). Returns `{"line": HEADER_LINE, "run": RUN, "anchor": ANCHOR}`.
pub fn audit_open(header: &str, key: Option<&str>) -> Result<String> {
    let h: LogHeader = parse("audit header", header)?;
    let key = key_of(key)?;
    let header = crate::Header {
        run: h.run,
        tools: h.tools,
    };
    let writer =
        Writer::new(Vec::new(), &header, key.as_ref()).map_err(|e| format!("audit header: {e}"))?;
    let (run, anchor) = (*writer.run(), writer.anchor());
    let line = line_of(writer.into_inner().map_err(|e| e.to_string())?)?;
    to_json(&Appended {
        line,
        run: &run,
        anchor,
    })
}

/// Appends one record to a log that stands at `run` and `anchor` (as the last call returned
/// them): steps the run with `input`, seals the record under `key`, and returns `{"line",
/// "run", "anchor", "verdict"}`, the verdict as [`step`] gives it. Refused inputs are recorded
/// too.
pub fn audit_append(run: &str, anchor: &str, input: &str, key: Option<&str>) -> Result<String> {
    let run: Run = parse("run", run)?;
    let anchor = Anchor::from_json(anchor.as_bytes()).map_err(|e| format!("anchor: {e}"))?;
    let input: Input = parse("input", input)?;
    let key = key_of(key)?;
    let mut writer = Writer::resume(Vec::new(), run, key.as_ref(), anchor);
    let result = writer
        .step(&input)
        .map_err(|e| format!("audit record: {e}"))?;
    let (next, anchor) = (*writer.run(), writer.anchor());
    let line = line_of(writer.into_inner().map_err(|e| e.to_string())?)?;
    to_json(&Recorded {
        line,
        run: &next,
        anchor,
        verdict: Verdict::of(&result),
    })
}
