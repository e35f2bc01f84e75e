//! `resumable-kernel.node`: the lifecycle kernel for Node, as pure functions over the project's
//! JSON forms (runs, inputs, transitions, checkpoints, rejections with their kind and evidence,
//! audit records), with the RFC 8785 argument digest.
//!
//! Every function takes and returns JSON text in the kernel's serde form, holds no state
//! between calls and reads no clock: the addon has no global state. A rejection is a value
//! (`{"verdict": NAME, "rejection": {...}, "message": ...}`); input that is not the kernel's
//! form (malformed JSON, a repeated key, a field the kernel does not have, a run that breaks an
//! invariant) throws, carrying the kernel's message, and the JavaScript layer (`index.js`)
//! turns every such throw into its one error class, `ResumableError`. The surface is text in,
//! text out, so that a WebAssembly build could offer the same one.

use napi::{Error, Result, Status};
use napi_derive::napi;
use resumable_audit::jcs::{self, Value};
use resumable_audit::{Anchor, Key, RunHeader, ToolPolicy, Writer};
use resumable_kernel::{
    Checkpoint, Effect, Fingerprint, IdempotencyKey, Identity, Input, Name, Rejection, Run,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

fn error(message: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, message.into())
}

/// Parses `text` as `what` in the kernel's serde form, refusing a repeated key first: JSON
/// readers disagree on which of two equal keys counts, so the project refuses both.
fn parse<T: DeserializeOwned>(what: &str, text: &str) -> Result<T> {
    if let Some(d) = resumable_audit::json::duplicate_key(text) {
        return Err(error(format!(
            "{what}: the key {:?} appears twice in one object; readers disagree on which one counts",
            d.key
        )));
    }
    serde_json::from_str(text).map_err(|e| error(format!("{what}: {e}")))
}

fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| error(format!("cannot write JSON: {e}")))
}

/// What a step answered, in JSON: accepted with the next run and its effects, or the rejection.
#[derive(Serialize)]
#[serde(untagged)]
enum Verdict<'a> {
    Accepted {
        verdict: &'static str,
        run: &'a Run,
        effects: Vec<Effect>,
    },
    Rejected {
        verdict: &'static str,
        rejection: &'a Rejection,
        message: String,
    },
}

impl<'a> Verdict<'a> {
    fn of(result: &'a core::result::Result<resumable_kernel::Transition, Rejection>) -> Self {
        match result {
            Ok(t) => Verdict::Accepted {
                verdict: "accepted",
                run: &t.next,
                effects: t.effects.iter().copied().collect(),
            },
            Err(r) => Verdict::Rejected {
                verdict: r.kind().name(),
                rejection: r,
                message: r.to_string(),
            },
        }
    }
}

/// The version of the kernel's rules (a run records the rules it was decided under).
#[napi]
pub fn rules_version() -> u32 {
    resumable_kernel::RULES_VERSION.into()
}

/// The version of the audit-log format this addon writes.
#[napi]
pub fn audit_format_version() -> u32 {
    u32::try_from(resumable_audit::VERSION).unwrap_or(u32::MAX)
}

/// A new run at revision 0 from `{"identity": ..., "policy": ..., "created_at": T}`.
#[napi]
pub fn new_run(spec: String) -> Result<String> {
    let header: RunHeader = parse("run spec", &spec)?;
    let run = header.run().map_err(|e| error(format!("run spec: {e}")))?;
    to_json(&run)
}

/// One kernel step: `run` and `input` in the kernel's serde form. Returns
/// `{"verdict": "accepted", "run": NEXT, "effects": [...]}` or
/// `{"verdict": NAME, "rejection": {...}, "message": ...}`; a rejection changes nothing.
#[napi]
pub fn step(run: String, input: String) -> Result<String> {
    let run: Run = parse("run", &run)?;
    let input: Input = parse("input", &input)?;
    let result = resumable_kernel::step(&run, &input);
    to_json(&Verdict::of(&result))
}

/// The checkpoint with its digest recomputed over its other fields (what the kernel seals).
#[napi]
pub fn seal_checkpoint(checkpoint: String) -> Result<String> {
    let checkpoint: Checkpoint = parse("checkpoint", &checkpoint)?;
    to_json(&checkpoint.seal())
}

/// The fingerprint the run's history indexes a call id by (16 hex digits).
#[napi]
pub fn call_id_fingerprint(call_id: String) -> Result<String> {
    let name = Name::new(&call_id).map_err(|e| error(format!("call id: {e}")))?;
    Ok(Fingerprint::call_id(&name).to_string())
}

/// The fingerprint the run's history indexes an idempotency key by (16 hex digits).
#[napi]
pub fn key_fingerprint(key: String) -> Result<String> {
    let key = IdempotencyKey::new(&key).map_err(|e| error(format!("key: {e}")))?;
    Ok(Fingerprint::key(&key).to_string())
}

/// The tool key the kernel dispatches a call under: its idempotency key bound to the run's
/// identity (64 hex digits). A driver queries the tool under it after a crash.
#[napi]
pub fn tool_key(identity: String, key: String) -> Result<String> {
    let identity: Identity = parse("identity", &identity)?;
    let key = IdempotencyKey::new(&key).map_err(|e| error(format!("key: {e}")))?;
    Ok(resumable_kernel::checkpoint::tool_key(&identity, &key).to_string())
}

/// A value as JavaScript's `JSON.stringify` wrote it, read back as RFC 8785 sees it: every
/// number the double JavaScript held (the text is its shortest round-trip form, read back
/// exactly), so an integer-valued double of 2^53 or more keeps its canonical form. The
/// JavaScript layer has already refused what is not JSON (see `canonical` in `index.js`).
fn value_of(value: &serde_json::Value, depth: usize) -> Result<Value> {
    if depth > jcs::MAX_DEPTH {
        return Err(error(format!(
            "nested deeper than {} levels",
            jcs::MAX_DEPTH
        )));
    }
    Ok(match value {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => {
            let f = n
                .as_f64()
                .ok_or_else(|| error(format!("{n} is not a double")))?;
            Value::number(f).map_err(|e| error(e.what))?
        }
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| value_of(v, depth + 1))
                .collect::<Result<_>>()?,
        ),
        serde_json::Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| Ok((k.clone(), value_of(v, depth + 1)?)))
                .collect::<Result<_>>()?,
        ),
    })
}

/// The RFC 8785 canonical form of a JavaScript value, given as `JSON.stringify` wrote it.
#[napi]
pub fn canonical_value(text: String) -> Result<String> {
    let value: serde_json::Value = parse("value", &text)?;
    value_of(&value, 0)?.canonical().map_err(|e| error(e.what))
}

/// The argument digest of a JavaScript value, given as `JSON.stringify` wrote it: SHA-256
/// over its RFC 8785 canonical form, in hex.
#[napi]
pub fn digest_value(text: String) -> Result<String> {
    let canonical = canonical_value(text)?;
    Ok(resumable_kernel::Digest::of(canonical.as_bytes()).to_string())
}

/// The RFC 8785 canonical form of one JSON text, read strictly (I-JSON).
#[napi]
pub fn canonical_json(text: String) -> Result<String> {
    jcs::canonical(&text).map_err(|e| error(e.to_string()))
}

/// The argument digest of one JSON text, as `resumable digest` prints it.
#[napi]
pub fn digest_json(text: String) -> Result<String> {
    jcs::digest(&text)
        .map(|d| d.to_string())
        .map_err(|e| error(e.to_string()))
}

fn key_of(key: Option<String>) -> Result<Option<Key>> {
    key.map(|k| Key::from_hex(k.trim()).map_err(|e| error(format!("audit key: {e}"))))
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
    String::from_utf8(bytes).map_err(|e| error(format!("the audit line is not UTF-8: {e}")))
}

/// Starts an audit log (spec/audit-log.md): `header` is `{"run": {"identity", "policy",
/// "created_at"}, "tools": [...] | null}`, `key` 64 hex digits (HMAC-SHA-256) or absent
/// (plain SHA-256). Returns `{"line": HEADER_LINE, "run": RUN, "anchor": ANCHOR}`.
#[napi]
pub fn audit_open(header: String, key: Option<String>) -> Result<String> {
    let h: LogHeader = parse("audit header", &header)?;
    let key = key_of(key)?;
    let header = resumable_audit::Header {
        run: h.run,
        tools: h.tools,
    };
    let writer = Writer::new(Vec::new(), &header, key.as_ref())
        .map_err(|e| error(format!("audit header: {e}")))?;
    let (run, anchor) = (*writer.run(), writer.anchor());
    let line = line_of(writer.into_inner().map_err(|e| error(e.to_string()))?)?;
    to_json(&Appended {
        line,
        run: &run,
        anchor,
    })
}

/// Appends one record to a log that stands at `run` and `anchor` (as the last call returned
/// them): steps the run with `input`, seals the record under `key`, and returns `{"line",
/// "run", "anchor", "verdict"}`, the verdict as `step` gives it. Refused inputs are recorded
/// too.
#[napi]
pub fn audit_append(
    run: String,
    anchor: String,
    input: String,
    key: Option<String>,
) -> Result<String> {
    let run: Run = parse("run", &run)?;
    let anchor = Anchor::from_json(anchor.as_bytes()).map_err(|e| error(format!("anchor: {e}")))?;
    let input: Input = parse("input", &input)?;
    let key = key_of(key)?;
    let mut writer = Writer::resume(Vec::new(), run, key.as_ref(), anchor);
    let result = writer
        .step(&input)
        .map_err(|e| error(format!("audit record: {e}")))?;
    let (next, anchor) = (*writer.run(), writer.anchor());
    let line = line_of(writer.into_inner().map_err(|e| error(e.to_string()))?)?;
    to_json(&Recorded {
        line,
        run: &next,
        anchor,
        verdict: Verdict::of(&result),
    })
}
