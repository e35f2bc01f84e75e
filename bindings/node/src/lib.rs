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

// The driver core (`resumable_driver::forms`): the driving contract written once, which every
// adapter of this package (driver.js and the framework glue over it) calls. Each function takes
// what the adapter's store holds (the held run and its book), the adapter's own `now` and the
// facts it observed, and returns what to commit and what to carry out; none holds state or
// reads a clock. `key` is the audit key (64 hex digits) or absent (chained by SHA-256 alone).

/// A driver's error thrown.
fn driven(result: resumable_driver::forms::Result<String>) -> Result<String> {
    result.map_err(error)
}

/// A new run from its audit log's header: `{"held", "book", "line"}` (`line`: line 1 of its log).
#[napi]
pub fn driver_open(header: String, key: Option<String>) -> Result<String> {
    driven(resumable_driver::forms::open(&header, key.as_deref()))
}

/// What to do now about `proposals` (one model turn's calls) on the held run and its book, at
/// the driver's `now`, with the facts observed now: a todo (`feed`, `ask`, `query`, `done`,
/// `changed`, `waits`, `busy`, `ended`).
#[napi]
pub fn driver_plan(
    held: String,
    book: String,
    now: i64,
    proposals: String,
    facts: String,
) -> Result<String> {
    driven(resumable_driver::forms::plan(
        &held,
        &book,
        time(now)?,
        &proposals,
        &facts,
    ))
}

/// As `driver_plan`, for a turn a framework reviews as one batch even of one call (HITL's and
/// the Agents SDK's shape: each call may be approved, edited, rejected or answered).
#[napi]
pub fn driver_plan_turn(
    held: String,
    book: String,
    now: i64,
    proposals: String,
    facts: String,
) -> Result<String> {
    driven(resumable_driver::forms::plan_turn(
        &held,
        &book,
        time(now)?,
        &proposals,
        &facts,
    ))
}

/// Feeds the event a plan gave (`{"todo": "feed"}`) with what the book keeps of it.
#[napi]
pub fn driver_feed(
    held: String,
    book: String,
    now: i64,
    event: String,
    kept: String,
    key: Option<String>,
) -> Result<String> {
    driven(resumable_driver::forms::feed(
        &held,
        &book,
        time(now)?,
        &event,
        &kept,
        key.as_deref(),
    ))
}

/// Feeds a party's answer to `request`: only its checkpoint and decision are read.
#[napi]
pub fn driver_answer(
    held: String,
    book: String,
    now: i64,
    request: String,
    message: String,
    facts: String,
    key: Option<String>,
) -> Result<String> {
    driven(resumable_driver::forms::answer(
        &held,
        &book,
        time(now)?,
        &request,
        &message,
        &facts,
        key.as_deref(),
    ))
}

/// Feeds a framework's decision list on `request` by `approver`, valid until `expires_at`.
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn driver_decide(
    held: String,
    book: String,
    now: i64,
    request: String,
    words: String,
    approver: String,
    expires_at: i64,
    facts: String,
    key: Option<String>,
) -> Result<String> {
    driven(resumable_driver::forms::decide(
        &held,
        &book,
        time(now)?,
        &request,
        &words,
        &approver,
        time(expires_at)?,
        &facts,
        key.as_deref(),
    ))
}

/// Feeds decisions on some calls of `request`, each naming its call (`[{"call_id", "decision":
/// WORD}]`), by `approver`, valid until `expires_at`, as one batch answer.
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn driver_decide_calls(
    held: String,
    book: String,
    now: i64,
    request: String,
    words: String,
    approver: String,
    expires_at: i64,
    facts: String,
    key: Option<String>,
) -> Result<String> {
    driven(resumable_driver::forms::decide_calls(
        &held,
        &book,
        time(now)?,
        &request,
        &words,
        &approver,
        time(expires_at)?,
        &facts,
        key.as_deref(),
    ))
}

/// Feeds a human-in-the-loop resume value (whatever the framework handed back) answering
/// `request` as one batch answer; `approver` is the adapter's, for a value that names none. A
/// value that is no decision is `{"verdict": "not_a_decision", "message"}`, nothing to commit.
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn driver_resume(
    held: String,
    book: String,
    now: i64,
    request: String,
    value: String,
    approver: String,
    facts: String,
    key: Option<String>,
) -> Result<String> {
    driven(resumable_driver::forms::resume(
        &held,
        &book,
        time(now)?,
        &request,
        &value,
        &approver,
        &facts,
        key.as_deref(),
    ))
}

/// What `driver_resume` would feed for `value` (`{"answer", "kept"}`), or
/// `{"verdict": "not_a_decision", "message"}`; stages nothing.
#[napi]
pub fn driver_read_resume(request: String, value: String, approver: String) -> Result<String> {
    driven(resumable_driver::forms::read_resume(
        &request, &value, &approver,
    ))
}

/// Whether `driver_resume` would feed `value` as a decision on `request` and count it, or not;
/// stages nothing.
#[napi]
pub fn driver_is_resume_decision(
    request: String,
    value: String,
    approver: String,
) -> Result<String> {
    driven(resumable_driver::forms::is_resume_decision(
        &request, &value, &approver,
    ))
}

/// Feeds the tool's answer (`result`, JSON text) to `tool_call` as the core handed it out.
#[napi]
pub fn driver_tool_result(
    held: String,
    book: String,
    now: i64,
    tool_call: String,
    result: String,
    key: Option<String>,
) -> Result<String> {
    driven(resumable_driver::forms::tool_result(
        &held,
        &book,
        time(now)?,
        &tool_call,
        &result,
        key.as_deref(),
    ))
}

/// Feeds the status query's answer about `dispatch`: `found` the committed result's JSON,
/// `"null"` for a firm "not committed", absent when the query failed (unknown).
#[napi]
#[allow(clippy::too_many_arguments)]
pub fn driver_reconcile(
    held: String,
    book: String,
    now: i64,
    dispatch: String,
    found: Option<String>,
    facts: String,
    key: Option<String>,
) -> Result<String> {
    driven(resumable_driver::forms::reconcile(
        &held,
        &book,
        time(now)?,
        &dispatch,
        found.as_deref(),
        &facts,
        key.as_deref(),
    ))
}

/// Whether a party's message is an answer the core would feed, or no decision at all.
#[napi]
pub fn driver_is_answer(message: String) -> Result<String> {
    driven(resumable_driver::forms::is_answer(&message))
}

/// When the driver must next call in for the held run (its deadline), or `null`.
#[napi]
pub fn driver_wake_at(held: String) -> Result<String> {
    driven(resumable_driver::forms::wake_at(&held))
}

/// The approver's side: the answer approving (or denying) the one call of `request`.
#[napi]
pub fn driver_approval(
    request: String,
    approve: bool,
    approver: String,
    expires_at: i64,
) -> Result<String> {
    driven(resumable_driver::forms::approval(
        &request,
        approve,
        &approver,
        time(expires_at)?,
    ))
}

/// A time from JavaScript: a non-negative integer (a JavaScript number holds it exactly up to
/// 2^53 - 1, which is where `index.js` stops reading integers as numbers).
fn time(t: i64) -> Result<u64> {
    u64::try_from(t).map_err(|_| error(format!("a time is a non-negative integer, got {t}")))
}
