//! `resumable_kernel._native`: the lifecycle kernel for Python, as pure functions over the
//! project's JSON forms (runs, inputs, transitions, checkpoints, rejections with their kind and
//! evidence, audit records), with the RFC 8785 argument digest.
//!
//! Every function takes and returns JSON text in the kernel's serde form, holds no state
//! between calls and reads no clock: the module has no global state. A rejection is a value
//! (`{"verdict": NAME, "rejection": {...}, "message": ...}`); input that is not the kernel's
//! form (malformed JSON, a repeated key, a field the kernel does not have, a run that breaks an
//! invariant) raises the one exception class, `ResumableError`, carrying the kernel's message.
//! The typed layer on top is Python (`resumable_kernel/__init__.py`).

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use resumable_audit::forms;
use resumable_audit::jcs::{self, Value};

create_exception!(
    _native,
    ResumableError,
    PyValueError,
    "Input that is not the kernel's JSON form, or a value with no canonical form; the message is the kernel's."
);

fn error(message: impl Into<String>) -> PyErr {
    ResumableError::new_err(message.into())
}

/// A function of `resumable_audit::forms` as Python sees it: its error as `ResumableError`.
fn native(result: forms::Result<String>) -> PyResult<String> {
    result.map_err(error)
}

/// A new run at revision 0 from `{"identity": ..., "policy": ..., "created_at": T}`.
#[pyfunction]
fn new_run(spec: &str) -> PyResult<String> {
    native(forms::new_run(spec))
}

/// One kernel step: `run` and `input` in the kernel's serde form. Returns
/// `{"verdict": "accepted", "run": NEXT, "effects": [...]}` or
/// `{"verdict": NAME, "rejection": {...}, "message": ...}`; a rejection changes nothing.
#[pyfunction]
fn step(run: &str, input: &str) -> PyResult<String> {
    native(forms::step(run, input))
}

/// The checkpoint with its digest recomputed over its other fields (what the kernel seals).
#[pyfunction]
fn seal_checkpoint(checkpoint: &str) -> PyResult<String> {
    native(forms::seal_checkpoint(checkpoint))
}

/// The fingerprint the run's history indexes a call id by (16 hex digits).
#[pyfunction]
fn call_id_fingerprint(call_id: &str) -> PyResult<String> {
    native(forms::call_id_fingerprint(call_id))
}

/// The fingerprint the run's history indexes an idempotency key by (16 hex digits).
#[pyfunction]
fn key_fingerprint(key: &str) -> PyResult<String> {
    native(forms::key_fingerprint(key))
}

/// The tool key the kernel dispatches a call under: its idempotency key bound to the run's
/// identity (64 hex digits). A driver queries the tool under it after a crash.
#[pyfunction]
fn tool_key(identity: &str, key: &str) -> PyResult<String> {
    native(forms::tool_key(identity, key))
}

/// How deeply a Python value may nest before it is refused (a list holding itself, too).
const MAX_DEPTH: usize = jcs::MAX_DEPTH;

/// A Python value as JSON: `None`, `bool`, `int` (magnitude at most 2^53 - 1), finite
/// `float`, `str`, `list` or `tuple`, `dict` with `str` keys. Anything else is refused.
fn value_of(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(error(format!(
            "nested deeper than {MAX_DEPTH} levels (or a container holds itself)"
        )));
    }
    let refuse = |e: jcs::Error| error(e.what);
    if obj.is_none() {
        Ok(Value::Null)
    } else if let Ok(b) = obj.cast::<PyBool>() {
        Ok(Value::Bool(b.is_true()))
    } else if let Ok(i) = obj.cast::<PyInt>() {
        match i.extract::<i64>() {
            Ok(i) => Value::integer(i.into()).map_err(refuse),
            Err(_) => Err(error(format!(
                "the integer {i} is outside I-JSON's exact range (magnitude at most 2^53 - 1)"
            ))),
        }
    } else if let Ok(f) = obj.cast::<PyFloat>() {
        Value::number(f.value()).map_err(refuse)
    } else if let Ok(s) = obj.cast::<PyString>() {
        let s = s
            .to_str()
            .map_err(|_| error("a string holds a lone surrogate, which is not text"))?;
        Ok(Value::String(s.to_owned()))
    } else if let Ok(list) = obj.cast::<PyList>() {
        let items = list.iter().map(|item| value_of(&item, depth + 1));
        Ok(Value::Array(items.collect::<PyResult<_>>()?))
    } else if let Ok(tuple) = obj.cast::<PyTuple>() {
        let items = tuple.iter().map(|item| value_of(&item, depth + 1));
        Ok(Value::Array(items.collect::<PyResult<_>>()?))
    } else if let Ok(dict) = obj.cast::<PyDict>() {
        let mut members = Vec::with_capacity(dict.len());
        for (k, v) in dict.iter() {
            let Ok(name) = k.cast::<PyString>() else {
                let kind = k.get_type().name()?;
                return Err(error(format!("an object's names are strings, not {kind}")));
            };
            let name = name
                .to_str()
                .map_err(|_| error("a name holds a lone surrogate, which is not text"))?;
            members.push((name.to_owned(), value_of(&v, depth + 1)?));
        }
        Ok(Value::Object(members))
    } else {
        let kind = obj.get_type().name()?;
        Err(error(format!("a {kind} is not a JSON value")))
    }
}

/// The RFC 8785 canonical form of a Python value (see `digest`).
#[pyfunction]
fn canonical(value: &Bound<'_, PyAny>) -> PyResult<String> {
    value_of(value, 0)?.canonical().map_err(|e| error(e.what))
}

/// The argument digest of a Python value: SHA-256 over its RFC 8785 canonical form, in hex.
#[pyfunction]
fn digest(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let canonical = canonical(value)?;
    Ok(forms::digest_of_canonical(&canonical))
}

/// The RFC 8785 canonical form of one JSON text.
#[pyfunction]
fn canonical_json(text: &str) -> PyResult<String> {
    native(forms::canonical_json(text))
}

/// The argument digest of one JSON text, as `resumable digest` prints it.
#[pyfunction]
fn digest_json(text: &str) -> PyResult<String> {
    native(forms::digest_json(text))
}

/// Starts an audit log (spec/audit-log.md): `header` is `{"run": {"identity", "policy",
/// "created_at"}, "tools": [...] | null}`, `key` 64 hex digits (HMAC-SHA-256) or `None`
/// (plain SHA-256). Returns `{"line": HEADER_LINE, "run": RUN, "anchor": ANCHOR}`.
#[pyfunction]
#[pyo3(signature = (header, key=None))]
fn audit_open(header: &str, key: Option<&str>) -> PyResult<String> {
    native(forms::audit_open(header, key))
}

/// Appends one record to a log that stands at `run` and `anchor` (as the last call returned
/// them): steps the run with `input`, seals the record under `key`, and returns `{"line",
/// "run", "anchor", "verdict"}`, the verdict as `step` gives it. Refused inputs are recorded
/// too.
#[pyfunction]
#[pyo3(signature = (run, anchor, input, key=None))]
fn audit_append(run: &str, anchor: &str, input: &str, key: Option<&str>) -> PyResult<String> {
    native(forms::audit_append(run, anchor, input, key))
}

/// A function of `resumable_driver::forms` as Python sees it: its error as `ResumableError`.
fn driven(result: resumable_driver::forms::Result<String>) -> PyResult<String> {
    result.map_err(error)
}

/// The driver core (`resumable_driver::forms`): a new run from its log's header, sealed under
/// `key` (64 hex digits) or chained by SHA-256. Returns `{"held", "book", "line"}`, `line`
/// being line 1 of its audit log.
#[pyfunction]
#[pyo3(signature = (header, key=None))]
fn driver_open(header: &str, key: Option<&str>) -> PyResult<String> {
    driven(resumable_driver::forms::open(header, key))
}

/// What to do now about `proposals` (a JSON list of the calls of one model turn) on the held
/// run and its book, at the driver's `now`, with the facts the driver observed now: a todo
/// (`{"todo": "feed" | "ask" | "query" | "done" | "changed" | "waits" | "busy" | "ended"}`).
#[pyfunction]
fn driver_plan(held: &str, book: &str, now: u64, proposals: &str, facts: &str) -> PyResult<String> {
    driven(resumable_driver::forms::plan(
        held, book, now, proposals, facts,
    ))
}

/// As `driver_plan`, but the turn is put to its approver as one batch even of one call: for an
/// approver that answers with a decision list (`driver_decide`).
#[pyfunction]
fn driver_plan_turn(
    held: &str,
    book: &str,
    now: u64,
    proposals: &str,
    facts: &str,
) -> PyResult<String> {
    driven(resumable_driver::forms::plan_turn(
        held, book, now, proposals, facts,
    ))
}

/// Feeds the event of a `feed` todo with what the book keeps of it, at `now`. Returns
/// `{"verdict", "held", "book", "line", "history", "tool_calls", "query"}`.
#[pyfunction]
#[pyo3(signature = (held, book, now, event, kept, key=None))]
fn driver_feed(
    held: &str,
    book: &str,
    now: u64,
    event: &str,
    kept: &str,
    key: Option<&str>,
) -> PyResult<String> {
    driven(resumable_driver::forms::feed(
        held, book, now, event, kept, key,
    ))
}

/// Feeds a party's answer to an `ask` todo's request: only its `checkpoint` and `decision`
/// are read, never a time or facts it claims.
#[pyfunction]
#[pyo3(signature = (held, book, now, request, message, facts, key=None))]
fn driver_answer(
    held: &str,
    book: &str,
    now: u64,
    request: &str,
    message: &str,
    facts: &str,
    key: Option<&str>,
) -> PyResult<String> {
    driven(resumable_driver::forms::answer(
        held, book, now, request, message, facts, key,
    ))
}

/// Feeds a framework's decision list (one decision per call of `request`, in the framework's
/// words) by `approver`, valid until `expires_at`, as one batch answer.
#[pyfunction]
#[pyo3(signature = (held, book, now, request, words, approver, expires_at, facts, key=None))]
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per input of the step"
)]
fn driver_decide(
    held: &str,
    book: &str,
    now: u64,
    request: &str,
    words: &str,
    approver: &str,
    expires_at: u64,
    facts: &str,
    key: Option<&str>,
) -> PyResult<String> {
    driven(resumable_driver::forms::decide(
        held, book, now, request, words, approver, expires_at, facts, key,
    ))
}

/// Feeds decisions on some calls of `request`, each naming its call (`[{"call_id", "decision":
/// WORD}]`), by `approver`, valid until `expires_at`, as one batch answer.
#[pyfunction]
#[pyo3(signature = (held, book, now, request, words, approver, expires_at, facts, key=None))]
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per input of the step"
)]
fn driver_decide_calls(
    held: &str,
    book: &str,
    now: u64,
    request: &str,
    words: &str,
    approver: &str,
    expires_at: u64,
    facts: &str,
    key: Option<&str>,
) -> PyResult<String> {
    driven(resumable_driver::forms::decide_calls(
        held, book, now, request, words, approver, expires_at, facts, key,
    ))
}

/// Feeds a human-in-the-loop resume value (whatever the framework handed back) answering
/// `request` as one batch answer; `approver` is the adapter's, for a value that names none. A
/// value that is no decision is `{"verdict": "not_a_decision", "message"}`, nothing to commit.
#[pyfunction]
#[pyo3(signature = (held, book, now, request, value, approver, facts, key=None))]
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per input of the step"
)]
fn driver_resume(
    held: &str,
    book: &str,
    now: u64,
    request: &str,
    value: &str,
    approver: &str,
    facts: &str,
    key: Option<&str>,
) -> PyResult<String> {
    driven(resumable_driver::forms::resume(
        held, book, now, request, value, approver, facts, key,
    ))
}

/// What `driver_resume` would feed for `value` (`{"answer", "kept"}`), or
/// `{"verdict": "not_a_decision", "message"}`; stages nothing.
#[pyfunction]
fn driver_read_resume(request: &str, value: &str, approver: &str) -> PyResult<String> {
    driven(resumable_driver::forms::read_resume(
        request, value, approver,
    ))
}

/// Whether `driver_resume` would feed `value` as a decision on `request` (`"true"`) and count
/// it, or not (`"false"`); stages nothing.
#[pyfunction]
fn driver_is_resume_decision(request: &str, value: &str, approver: &str) -> PyResult<String> {
    driven(resumable_driver::forms::is_resume_decision(
        request, value, approver,
    ))
}

/// Whether a party's message is an answer `driver_answer` would feed (`"true"`), or no
/// decision at all (`"false"`); stages nothing.
#[pyfunction]
fn driver_is_answer(message: &str) -> PyResult<String> {
    driven(resumable_driver::forms::is_answer(message))
}

/// Feeds the tool's answer (`result`, JSON) to a tool call the core handed out.
#[pyfunction]
#[pyo3(signature = (held, book, now, tool_call, result, key=None))]
fn driver_tool_result(
    held: &str,
    book: &str,
    now: u64,
    tool_call: &str,
    result: &str,
    key: Option<&str>,
) -> PyResult<String> {
    driven(resumable_driver::forms::tool_result(
        held, book, now, tool_call, result, key,
    ))
}

/// Feeds the status query's answer about `dispatch`: `found` the JSON result committed under
/// the key, `"null"` for a firm "not committed", `None` when the query failed.
#[pyfunction]
#[pyo3(signature = (held, book, now, dispatch, found, facts, key=None))]
fn driver_reconcile(
    held: &str,
    book: &str,
    now: u64,
    dispatch: &str,
    found: Option<&str>,
    facts: &str,
    key: Option<&str>,
) -> PyResult<String> {
    driven(resumable_driver::forms::reconcile(
        held, book, now, dispatch, found, facts, key,
    ))
}

/// When the driver must next call in for the held run (JSON: a time, or `null`).
#[pyfunction]
fn driver_wake_at(held: &str) -> PyResult<String> {
    driven(resumable_driver::forms::wake_at(held))
}

/// The approver's side: the answer approving (or denying) the one call of `request`, bound to
/// what was shown, with the approver's name and the decision's own expiry.
#[pyfunction]
fn driver_approval(
    request: &str,
    approve: bool,
    approver: &str,
    expires_at: u64,
) -> PyResult<String> {
    driven(resumable_driver::forms::approval(
        request, approve, approver, expires_at,
    ))
}

/// One run's held run and book kept native between steps (`resumable_driver::forms::Stored`):
/// the driver functions' steps as methods, each committing to the object what the function
/// would return as `held` and `book`, and answering the rest (`{"verdict", "line", "history",
/// "tool_calls", "query"}`). `dump` writes `{"held", "book"}` out, `load` reads it back.
#[pyclass(module = "resumable_kernel._native", name = "DriverRun")]
#[derive(Clone)]
struct DriverRun {
    inner: resumable_driver::forms::Stored,
}

#[pymethods]
impl DriverRun {
    /// A new run from its log's header, sealed under `key`: the run and line 1 of its log.
    #[staticmethod]
    #[pyo3(signature = (header, key=None))]
    fn open(header: &str, key: Option<&str>) -> PyResult<(DriverRun, String)> {
        let (inner, line) = resumable_driver::forms::Stored::open(header, key).map_err(error)?;
        Ok((DriverRun { inner }, line))
    }

    /// The run `dump` wrote: `{"held", "book"}`.
    #[staticmethod]
    fn load(text: &str) -> PyResult<DriverRun> {
        let inner = resumable_driver::forms::Stored::load(text).map_err(error)?;
        Ok(DriverRun { inner })
    }

    /// The held run and its book as JSON, `{"held", "book"}`.
    fn dump(&self) -> PyResult<String> {
        driven(self.inner.dump())
    }

    /// The held run as JSON, as the driver functions take it.
    fn held(&self) -> PyResult<String> {
        driven(self.inner.held_json())
    }

    /// The book as JSON, as the driver functions take it.
    fn book(&self) -> PyResult<String> {
        driven(self.inner.book_json())
    }

    /// How many calls the book keeps a record of.
    fn records(&self) -> usize {
        self.inner.book().len()
    }

    /// How many call ids the run ever bound (the history index, kept whole by `compact`).
    fn bound(&self) -> usize {
        self.inner.book().bound()
    }

    /// A copy, to stage on without changing this one.
    fn copy(&self) -> DriverRun {
        self.clone()
    }

    /// Drops the settled calls' arguments and outcomes from the book, keeping every call
    /// still waiting or named by the run and the history index whole: a settled call proposed
    /// again is then refused as a reused call id. Returns how many records were dropped.
    fn compact(&mut self) -> usize {
        self.inner.compact()
    }

    /// As `driver_plan`.
    fn plan(&self, now: u64, proposals: &str, facts: &str) -> PyResult<String> {
        driven(self.inner.plan(now, proposals, facts))
    }

    /// As `driver_plan_turn`.
    fn plan_turn(&self, now: u64, proposals: &str, facts: &str) -> PyResult<String> {
        driven(self.inner.plan_turn(now, proposals, facts))
    }

    /// As `driver_feed`, committed to this run.
    #[pyo3(signature = (now, event, kept, key=None))]
    fn feed(&mut self, now: u64, event: &str, kept: &str, key: Option<&str>) -> PyResult<String> {
        driven(self.inner.feed(now, event, kept, key))
    }

    /// As `driver_decide`, committed to this run.
    #[pyo3(signature = (now, request, words, approver, expires_at, facts, key=None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per input of the step"
    )]
    fn decide(
        &mut self,
        now: u64,
        request: &str,
        words: &str,
        approver: &str,
        expires_at: u64,
        facts: &str,
        key: Option<&str>,
    ) -> PyResult<String> {
        driven(
            self.inner
                .decide(now, request, words, approver, expires_at, facts, key),
        )
    }

    /// As `driver_decide_calls`, committed to this run.
    #[pyo3(signature = (now, request, words, approver, expires_at, facts, key=None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per input of the step"
    )]
    fn decide_calls(
        &mut self,
        now: u64,
        request: &str,
        words: &str,
        approver: &str,
        expires_at: u64,
        facts: &str,
        key: Option<&str>,
    ) -> PyResult<String> {
        driven(
            self.inner
                .decide_calls(now, request, words, approver, expires_at, facts, key),
        )
    }

    /// As `driver_tool_result`, committed to this run.
    #[pyo3(signature = (now, tool_call, result, key=None))]
    fn tool_result(
        &mut self,
        now: u64,
        tool_call: &str,
        result: &str,
        key: Option<&str>,
    ) -> PyResult<String> {
        driven(self.inner.tool_result(now, tool_call, result, key))
    }

    /// As `driver_reconcile`, committed to this run.
    #[pyo3(signature = (now, dispatch, found, facts, key=None))]
    fn reconcile(
        &mut self,
        now: u64,
        dispatch: &str,
        found: Option<&str>,
        facts: &str,
        key: Option<&str>,
    ) -> PyResult<String> {
        driven(self.inner.reconcile(now, dispatch, found, facts, key))
    }

    /// As `driver_wake_at`.
    fn wake_at(&self) -> PyResult<String> {
        driven(self.inner.wake_at())
    }
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ResumableError", m.py().get_type::<ResumableError>())?;
    m.add("RULES_VERSION", resumable_kernel::RULES_VERSION)?;
    m.add("AUDIT_FORMAT_VERSION", resumable_audit::VERSION)?;
    m.add_function(wrap_pyfunction!(new_run, m)?)?;
    m.add_function(wrap_pyfunction!(step, m)?)?;
    m.add_function(wrap_pyfunction!(seal_checkpoint, m)?)?;
    m.add_function(wrap_pyfunction!(call_id_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(key_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(tool_key, m)?)?;
    m.add_function(wrap_pyfunction!(canonical, m)?)?;
    m.add_function(wrap_pyfunction!(digest, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(digest_json, m)?)?;
    m.add_function(wrap_pyfunction!(audit_open, m)?)?;
    m.add_function(wrap_pyfunction!(audit_append, m)?)?;
    m.add("DRIVER_RETRIES", resumable_driver::RETRIES)?;
    m.add_function(wrap_pyfunction!(driver_open, m)?)?;
    m.add_function(wrap_pyfunction!(driver_plan, m)?)?;
    m.add_function(wrap_pyfunction!(driver_plan_turn, m)?)?;
    m.add_function(wrap_pyfunction!(driver_feed, m)?)?;
    m.add_function(wrap_pyfunction!(driver_answer, m)?)?;
    m.add_function(wrap_pyfunction!(driver_decide, m)?)?;
    m.add_function(wrap_pyfunction!(driver_decide_calls, m)?)?;
    m.add_function(wrap_pyfunction!(driver_resume, m)?)?;
    m.add_function(wrap_pyfunction!(driver_read_resume, m)?)?;
    m.add_function(wrap_pyfunction!(driver_is_resume_decision, m)?)?;
    m.add_function(wrap_pyfunction!(driver_is_answer, m)?)?;
    m.add_function(wrap_pyfunction!(driver_tool_result, m)?)?;
    m.add_function(wrap_pyfunction!(driver_reconcile, m)?)?;
    m.add_function(wrap_pyfunction!(driver_wake_at, m)?)?;
    m.add_function(wrap_pyfunction!(driver_approval, m)?)?;
    m.add_class::<DriverRun>()?;
    Ok(())
}
