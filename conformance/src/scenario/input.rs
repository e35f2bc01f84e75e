//! One input line: the kernel's serde form, with the conveniences for writing by hand turned
//! into it, and every field checked to be one the kernel reads.

use super::read::{json_error, take_string, type_name};
use super::references::resume_conveniences;
use super::{ScenarioError, Step};
use resumable_kernel::{Digest, Input};
use serde_json::Value;

pub(super) fn parse_input(line: usize, text: &str, value: Value) -> Result<Step, ScenarioError> {
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
    let mut fill = resume_conveniences(&mut written).map_err(|m| ScenarioError::at(line, m))?;
    fill.prior = prior_convenience(&mut written);
    let input: Input = serde_path_to_error::deserialize(written.clone())
        .map_err(|e| data_error(line, text, &e))?;
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
fn data_error(
    line: usize,
    text: &str,
    e: &serde_path_to_error::Error<serde_json::Error>,
) -> ScenarioError {
    let inner = e.inner().to_string();
    let column = serde_json::from_str::<Input>(text)
        .err()
        .map(|raw| json_error(line, &raw))
        .filter(|raw| raw.message == inner)
        .and_then(|raw| raw.column);
    // The field the value sits in, as the line writes it (`wait.call.key`), unless the
    // error is about the line as a whole.
    let path = match e.path().to_string() {
        path if path != "." => Some(path),
        // A tagged or flattened part of the input hides the path from the deserialiser: find
        // the identifier that fails with this very message.
        _ => serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| identifier_failing_with(&v, "", &inner)),
    };
    let message = match path {
        Some(path) => format!("`{path}`: {inner}"),
        None => inner,
    };
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

/// The path of the first string in `v` that, read as the identifier its field holds (an
/// idempotency key under `key`, a name elsewhere), is refused with `message`.
fn identifier_failing_with(v: &Value, path: &str, message: &str) -> Option<String> {
    use resumable_kernel::{IdempotencyKey, Name};
    let here = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match v {
        Value::Object(obj) => obj.iter().find_map(|(key, value)| {
            let refused = match value {
                Value::String(text) if key == "key" => IdempotencyKey::new(text).err(),
                Value::String(text) => Name::new(text).err(),
                _ => None,
            };
            match refused {
                Some(e) if e.to_string() == message => Some(here(key)),
                _ => identifier_failing_with(value, &here(key), message),
            }
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| identifier_failing_with(item, &format!("{path}[{i}]"), message)),
        _ => None,
    }
}

/// A call the line proposes (a dispatch, or a suspension for approval) may leave out its
/// `prior`: replay then states what the run's history holds, as a driver does. The line gets
/// a placeholder until then; returns whether it did.
fn prior_convenience(written: &mut Value) -> bool {
    let Value::Object(obj) = written else {
        return false;
    };
    let none = serde_json::json!({"call_id_used": false, "key": null});
    let kind = obj.get("kind").and_then(Value::as_str).map(str::to_owned);
    let wait = obj
        .get("wait")
        .and_then(|w| w.get("wait"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    match (kind.as_deref(), wait.as_deref()) {
        (Some("dispatch"), _) => fill_prior(obj, &none),
        (Some("suspend"), Some("approval")) => match obj.get_mut("wait") {
            Some(Value::Object(wait)) => fill_prior(wait, &none),
            _ => false,
        },
        // Each call of a batch that leaves its prior out gets it from the history.
        (Some("suspend"), Some("batch")) => {
            let mut filled = false;
            if let Some(Value::Array(calls)) = obj.get_mut("wait").and_then(|w| w.get_mut("calls"))
            {
                for p in calls.iter_mut() {
                    if let Value::Object(p) = p {
                        filled |= fill_prior(p, &none);
                    }
                }
            }
            filled
        }
        _ => false,
    }
}

fn fill_prior(holder: &mut serde_json::Map<String, Value>, none: &Value) -> bool {
    if holder.contains_key("prior") {
        return false;
    }
    holder.insert("prior".to_string(), none.clone());
    true
}
