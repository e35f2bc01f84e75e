//! Argument digests every language computes alike: SHA-256 over a JSON value's RFC 8785
//! (JSON Canonicalization Scheme, JCS) canonical form.
//!
//! An approval binds the digest of the call's arguments (spec APR-1), so the approver's screen,
//! the runtime and the kernel must compute it byte for byte alike from the same JSON value,
//! whatever language parsed it. RFC 8785 fixes that form: object members sorted by the UTF-16
//! code units of their names, no insignificant whitespace, strings with the fewest escapes,
//! and every number written as ECMAScript writes an IEEE 754 double.
//!
//! The reader is strict where JSON readers disagree, because two readers that understand one
//! text differently would digest different values: a repeated member name, a lone surrogate,
//! an integer outside I-JSON's exact range (magnitude above 2^53 - 1, which RFC 8785's
//! section 3.1 I-JSON input must not rely on), a number no double can hold (`1e400`), and a
//! text nested deeper than [`MAX_DEPTH`] are refused, each with its byte offset. NaN and the
//! infinities are not JSON, so they are refused too when a value is built by hand
//! ([`Value::number`]).
//!
//! ```
//! use resumable_audit::jcs;
//! let text = r#"{"b": [1.0, 2e1, "\u00e9"], "a": null}"#;
//! assert_eq!(jcs::canonical(text).unwrap(), r#"{"a":null,"b":[1,20,"é"]}"#);
//! assert_eq!(jcs::digest(text).unwrap(), jcs::digest(r#"{"a":null,"b":[1,20,"é"]}"#).unwrap());
//! ```

use resumable_kernel::Digest;
use std::fmt;

/// How deeply arrays and objects may nest: deeper texts are refused rather than risk the stack.
pub const MAX_DEPTH: usize = 128;

/// The largest integer I-JSON holds exactly, 2^53 - 1.
pub const MAX_EXACT_INTEGER: i64 = (1 << 53) - 1;

/// A JSON value, as RFC 8785 sees it: every number an IEEE 754 double.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A finite double (built through [`Value::number`] or [`Value::integer`]).
    Number(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object's members, in any order; names are distinct.
    Object(Vec<(String, Value)>),
}

/// Why a text or a value has no canonical form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The byte offset in the text where the problem was found (0 for a value built by hand).
    pub offset: usize,
    /// What is wrong, in one sentence.
    pub what: String,
}

impl Error {
    fn at(offset: usize, what: impl Into<String>) -> Error {
        Error {
            offset,
            what: what.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for Error {}

impl Value {
    /// A number, refused when it is NaN or infinite (neither is JSON).
    pub fn number(f: f64) -> Result<Value, Error> {
        if f.is_finite() {
            Ok(Value::Number(f))
        } else {
            Err(Error::at(0, format!("{f} is not a JSON number")))
        }
    }

    /// An integer, refused outside I-JSON's exact range (magnitude at most 2^53 - 1): beyond
    /// it the double RFC 8785 digests would not be the integer written.
    pub fn integer(i: i128) -> Result<Value, Error> {
        if i.unsigned_abs() > MAX_EXACT_INTEGER.unsigned_abs().into() {
            return Err(Error::at(
                0,
                format!(
                    "the integer {i} is outside I-JSON's exact range (magnitude at most 2^53 - 1)"
                ),
            ));
        }
        #[expect(clippy::cast_precision_loss, reason = "exact: |i| < 2^53")]
        Ok(Value::Number(i as f64))
    }

    /// The value's canonical form (RFC 8785), refused when an object repeats a name.
    pub fn canonical(&self) -> Result<String, Error> {
        let mut out = String::new();
        write_value(self, &mut out)?;
        Ok(out)
    }
}

/// Parses one JSON text, strictly (see the module's documentation).
pub fn parse(text: &str) -> Result<Value, Error> {
    let mut p = Parser {
        bytes: text.as_bytes(),
        text,
        pos: 0,
    };
    p.whitespace();
    let value = p.value(0)?;
    p.whitespace();
    if p.pos != p.bytes.len() {
        return Err(p.error("more than one JSON value: unexpected text after the value"));
    }
    Ok(value)
}

/// The canonical form (RFC 8785) of one JSON text.
pub fn canonical(text: &str) -> Result<String, Error> {
    parse(text)?.canonical()
}

/// The digest of one JSON text: SHA-256 over its canonical form (RFC 8785).
pub fn digest(text: &str) -> Result<Digest, Error> {
    Ok(Digest::of(canonical(text)?.as_bytes()))
}

/// The digest of a value: SHA-256 over its canonical form (RFC 8785).
pub fn digest_value(value: &Value) -> Result<Digest, Error> {
    Ok(Digest::of(value.canonical()?.as_bytes()))
}

fn write_value(value: &Value, out: &mut String) -> Result<(), Error> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(f) => write_number(*f, out)?,
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out)?;
            }
            out.push(']');
        }
        Value::Object(members) => {
            // RFC 8785 section 3.2.3: names sorted by their UTF-16 code units.
            let mut sorted: Vec<&(String, Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(Error::at(0, format!("the name {:?} appears twice", w[0].0)));
            }
            out.push('{');
            for (i, (name, item)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                write_value(item, out)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// Writes a string as RFC 8785 section 3.2.2.2 does: `"` and `\` escaped, the control
/// characters as `\b \t \n \f \r` or `\u00xx` (lower-case hex), everything else as itself.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes a finite double as ECMAScript's `Number.prototype.toString` does (RFC 8785 section
/// 3.2.2.3): the shortest digits that read back as the same double, in plain notation for
/// exponents from -6 to 20 and in exponent notation (`1e+21`, `1.5e-7`) outside.
pub fn write_number(f: f64, out: &mut String) -> Result<(), Error> {
    if !f.is_finite() {
        return Err(Error::at(0, format!("{f} is not a JSON number")));
    }
    if f == 0.0 {
        // Both zeros are written "0".
        out.push('0');
        return Ok(());
    }
    if f < 0.0 {
        out.push('-');
    }
    // Rust writes the shortest round-tripping digits: `d.ddde[-]x`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if digits.len() >= 15 {
        digits = even_on_a_tie(f.abs(), digits);
    }
    // ECMAScript's n: the value is 0.digits times 10^n.
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let n = exponent + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
    Ok(())
}

/// ECMAScript's tie rule, which Rust's shortest formatting does not follow: when the double
/// lies exactly halfway between the two shortest digit strings that read back as it, the one
/// ending in an even digit is written (`0x43143ff3c1cb0959` is 1424953923781206.25: `.2`, not
/// `.3`). A tie needs the exact value to have one significant digit more than the shortest
/// form, ending in 5, which happens only for 16- and 17-digit forms: the caller asks then.
fn even_on_a_tie(f: f64, shortest: String) -> String {
    // The exact decimal expansion of the double (at most 767 significant digits).
    let exact = format!("{f:.800e}");
    let exact_digits: String = (exact
        .split_once('e')
        .map_or(exact.as_str(), |p| p.0)
        .chars())
    .filter(|c| *c != '.')
    .collect();
    let exact_digits = exact_digits.trim_end_matches('0');
    let k = shortest.len();
    if exact_digits.len() != k + 1 || !exact_digits.ends_with('5') {
        return shortest;
    }
    // The two candidates: the first k exact digits, and one unit more in the last place.
    let low = &exact_digits[..k];
    if shortest == low || low.ends_with(['0', '2', '4', '6', '8']) {
        return low.to_string();
    }
    shortest
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, what: impl Into<String>) -> Error {
        Error::at(self.pos, what)
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, Error> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("not a JSON value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, Error> {
        match self.peek() {
            None => Err(self.error("the text ends where a value should be")),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[') => self.array(depth + 1),
            Some(b'{') => self.object(depth + 1),
            Some(_) => Err(self.error("not a JSON value")),
        }
    }

    fn nest(&self, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<Value, Error> {
        self.nest(depth)?;
        self.pos += 1;
        let mut items = Vec::new();
        self.whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.whitespace();
            items.push(self.value(depth)?);
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected `,` or `]` in an array")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Error> {
        self.nest(depth)?;
        self.pos += 1;
        let mut members: Vec<(String, Value)> = Vec::new();
        let mut names = std::collections::HashSet::new();
        self.whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a member name (a string)"));
            }
            let at = self.pos;
            let name = self.string()?;
            if !names.insert(name.clone()) {
                return Err(Error::at(
                    at,
                    format!("the name {name:?} appears twice in one object; readers disagree on which one counts"),
                ));
            }
            self.whitespace();
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:` after a member name"));
            }
            self.pos += 1;
            self.whitespace();
            let value = self.value(depth)?;
            members.push((name, value));
            self.whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error("expected `,` or `}` in an object")),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, Error> {
        let digits = self.text.get(self.pos..self.pos + 4);
        let unit = digits
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|d| u16::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.error("`\\u` must be followed by four hex digits"))?;
        self.pos += 4;
        Ok(unit)
    }

    fn string(&mut self) -> Result<String, Error> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(&self.text[start..self.pos]);
            match self.peek() {
                None => return Err(self.error("the text ends inside a string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escaped = self.peek();
                    self.pos += 1;
                    match escaped {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{8}'),
                        Some(b'f') => out.push('\u{c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => out.push(self.unicode_escape()?),
                        _ => {
                            self.pos -= 1;
                            return Err(self.error("not a JSON escape"));
                        }
                    }
                }
                Some(_) => {
                    return Err(self.error("a control character must be escaped in a string"))
                }
            }
        }
    }

    /// The character a `\uXXXX` escape (or a pair of them) writes; a lone surrogate is no
    /// character, and is refused.
    fn unicode_escape(&mut self) -> Result<char, Error> {
        let at = self.pos - 2;
        let lone = |what: &str| Error::at(at, format!("a lone {what} surrogate is not text"));
        let unit = self.hex4()?;
        let code = match unit {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(lone("high"));
                }
                self.pos += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(lone("high"));
                }
                0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(lone("low")),
            unit => u32::from(unit),
        };
        char::from_u32(code).ok_or_else(|| lone("high"))
    }

    fn number(&mut self) -> Result<Value, Error> {
        let start = self.pos;
        let bad = |p: &Parser<'_>| p.error("not a JSON number");
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(bad(self)),
        }
        let mut integer = true;
        if self.peek() == Some(b'.') {
            integer = false;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(bad(self));
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(bad(self));
            }
            self.digits();
        }
        let literal = &self.text[start..self.pos];
        if integer {
            // At most 16 digits fit the exact range; a longer literal is out of it.
            let digits = literal.trim_start_matches('-').len();
            let value = if digits <= 16 {
                literal.parse::<i128>().ok()
            } else {
                None
            };
            return value
                .ok_or(())
                .and_then(|i| Value::integer(i).map_err(|_| ()))
                .map_err(|()| {
                    Error::at(
                        start,
                        format!(
                            "the integer {literal} is outside I-JSON's exact range (magnitude at most 2^53 - 1)"
                        ),
                    )
                });
        }
        // Rust's parse rounds correctly to the nearest double.
        match literal.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::Number(f)),
            _ => Err(Error::at(
                start,
                format!("the number {literal} is beyond what a double holds"),
            )),
        }
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }
}
