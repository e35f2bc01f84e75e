//! Reading a scenario: one bounded line at a time, the header first, then the inputs.

use super::input::parse_input;
use super::{Header, ScenarioError, Step, FORMAT_VERSION};
use serde_json::{Map, Value};

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
        use resumable_audit::json::{read_line, LineRead};
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
            if let Some(d) = resumable_audit::json::duplicate_key(text) {
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

/// A serde_json error as a scenario error: the column it gives, and its message without the
/// position it appends (the line is the scenario's, not the parser's).
pub(super) fn json_error(line: usize, e: &serde_json::Error) -> ScenarioError {
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

pub(super) fn type_name(v: &Value) -> &'static str {
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
    let header: Header = serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(
        text,
    ))
    .map_err(|e| {
        let mut error = json_error(line, e.inner());
        let path = e.path().to_string();
        if path != "." {
            error.message = format!("`{path}`: {}", error.message);
        }
        error
    })?;
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

pub(super) fn take_string(
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
