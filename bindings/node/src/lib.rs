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
use resumable_audit::forms;
use resumable_audit::jcs::{self, Value};

fn error(message: impl Into<String>) -> Error {
    Error::new(Status::InvalidArg, message.into())
}

/// A function of `resumable_audit::forms` as Node sees it: its error thrown.
fn native<T>(result: forms::Result<T>) -> Result<T> {
    result.map_err(error)
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

/// The most calls one batch holds (spec 5.5, BAT-1).
#[napi]
pub fn batch_capacity() -> u32 {
    u32::try_from(resumable_kernel::BATCH_CAPACITY).unwrap_or(u32::MAX)
}

/// A new run at revision 0 from `{"identity": ..., "policy": ..., "created_at": T}`.
#[napi]
pub fn new_run(spec: String) -> Result<String> {
    native(forms::new_run(&spec))
}

/// One kernel step: `run` and `input` in the kernel's serde form. Returns
/// `{"verdict": "accepted", "run": NEXT, "effects": [...]}` or
/// `{"verdict": NAME, "rejection": {...}, "message": ...}`; a rejection changes nothing.
#[napi]
pub fn step(run: String, input: String) -> Result<String> {
    native(forms::step(&run, &input))
}

/// The checkpoint with its digest recomputed over its other fields (what the kernel seals).
#[napi]
pub fn seal_checkpoint(checkpoint: String) -> Result<String> {
    native(forms::seal_checkpoint(&checkpoint))
}

/// The fingerprint the run's history indexes a call id by (16 hex digits).
#[napi]
pub fn call_id_fingerprint(call_id: String) -> Result<String> {
    native(forms::call_id_fingerprint(&call_id))
}

/// The fingerprint the run's history indexes an idempotency key by (16 hex digits).
#[napi]
pub fn key_fingerprint(key: String) -> Result<String> {
    native(forms::key_fingerprint(&key))
}

/// The tool key the kernel dispatches a call under: its idempotency key bound to the run's
/// identity (64 hex digits). A driver queries the tool under it after a crash.
#[napi]
pub fn tool_key(identity: String, key: String) -> Result<String> {
    native(forms::tool_key(&identity, &key))
}

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
    let value: serde_json::Value = native(forms::parse("value", &text))?;
    value_of(&value, 0)?.canonical().map_err(|e| error(e.what))
}

/// The argument digest of a JavaScript value, given as `JSON.stringify` wrote it: SHA-256
/// over its RFC 8785 canonical form, in hex.
#[napi]
pub fn digest_value(text: String) -> Result<String> {
    let canonical = canonical_value(text)?;
    Ok(forms::digest_of_canonical(&canonical))
}

/// The RFC 8785 canonical form of one JSON text, read strictly (I-JSON).
#[napi]
pub fn canonical_json(text: String) -> Result<String> {
    native(forms::canonical_json(&text))
}

/// The argument digest of one JSON text, as `resumable digest` prints it.
#[napi]
pub fn digest_json(text: String) -> Result<String> {
    native(forms::digest_json(&text))
}

/// Starts an audit log (spec/audit-log.md): `header` is `{"run": {"identity", "policy",
/// "created_at"}, "tools": [...] | null}`, `key` 64 hex digits (HMAC-SHA-256) or absent
/// (plain SHA-256). Returns `{"line": HEADER_LINE, "run": RUN, "anchor": ANCHOR}`.
#[napi]
pub fn audit_open(header: String, key: Option<String>) -> Result<String> {
    native(forms::audit_open(&header, key.as_deref()))
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
    native(forms::audit_append(&run, &anchor, &input, key.as_deref()))
}
