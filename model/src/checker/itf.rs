//! Traces in the Informal Trace Format (ITF), the JSON trace format of Apalache and Quint
//! (<https://apalache-mc.org/docs/adr/015adr-trace.html>), so that a counterexample can be
//! read by their tools and by the `itf` crate.
//!
//! A trace is an object with `#meta`, `vars` (the names of the state variables) and `states`
//! (one object per state: `#meta` with its `index`, then a value per variable). Values use
//! ITF's encodings: booleans, strings and lists as in JSON, records as objects, integers that
//! may need 64 bits as `{"#bigint": "<decimal>"}`, and Quint's encoding of a sum type, as a
//! record `{"tag": ..., "value": ...}` (an option is `Some` or `None`, the latter with the
//! empty tuple as its value). The driver adds one variable of its own, `action`: what the
//! step into the state did (`"init"` for the initial state).

use super::{Summarize, TraceStep};
use serde_json::{json, Map, Value};

/// The value of `#meta.format-description`.
pub const FORMAT_DESCRIPTION: &str = "https://apalache-mc.org/docs/adr/015adr-trace.html";

/// The variable the driver adds: what the step into each state did.
pub const ACTION: &str = "action";

/// An integer in ITF's big-integer encoding, which any 64-bit number needs (JSON readers
/// lose precision past 2^53).
pub fn bigint(n: impl Into<i128>) -> Value {
    json!({ "#bigint": n.into().to_string() })
}

/// A variant of a sum type, in Quint's encoding.
pub fn variant(tag: &str, value: Value) -> Value {
    json!({ "tag": tag, "value": value })
}

/// An option, in Quint's encoding: `Some` with the value, or `None` with the empty tuple.
pub fn option(value: Option<Value>) -> Value {
    match value {
        Some(v) => variant("Some", v),
        None => variant("None", json!({ "#tup": [] })),
    }
}

/// The ITF document of a trace: `description` says what it shows (e.g. `counterexample to
/// "RES-3 ..."`), `steps` are the trace's rendered steps, `states` the states they lead to,
/// initial state first.
pub(crate) fn document<'s, M>(
    model: &M,
    description: &str,
    steps: &[TraceStep],
    states: impl Iterator<Item = &'s M::State>,
) -> Value
where
    M: Summarize,
    M::State: 's,
{
    let mut vars: Vec<String> = vec![ACTION.to_owned()];
    let mut encoded = Vec::new();
    for (index, (state, step)) in states.zip(steps).enumerate() {
        let mut object = Map::new();
        object.insert("#meta".to_owned(), json!({ "index": index }));
        let action = step.action.clone().unwrap_or_else(|| "init".to_owned());
        object.insert(ACTION.to_owned(), Value::String(action));
        for (name, value) in model.itf_state(state) {
            if !vars.contains(&name) {
                vars.push(name.clone());
            }
            object.insert(name, value);
        }
        encoded.push(Value::Object(object));
    }
    json!({
        "#meta": {
            "format": "ITF",
            "format-description": FORMAT_DESCRIPTION,
            "source": "resumable check",
            "description": description,
        },
        "vars": vars,
        "states": encoded,
    })
}
