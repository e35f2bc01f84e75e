//! Reading untrusted JSON lines: a bounded line reader, and the duplicate-key check that every
//! reader of this crate runs before parsing (and the scenario reader of `resumable-conformance`
//! with it).
//!
//! JSON leaves duplicate keys to the parser, and parsers disagree: serde's derived types refuse
//! some, `serde_json::Value` keeps the last, other languages keep the first. A record that two
//! readers understand differently is a way to hide a field from one of them (`"at":1,"at":2`),
//! so scenarios, audit logs, anchors and checkpoint files are refused, by position, when any
//! object in them repeats a key. The check is one pass over the bytes, without allocating for
//! keys that hold no escape.

use std::collections::HashSet;
use std::io::{self, BufRead, Read};

/// How [`read_line`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineRead {
    /// No bytes were left: the end of the input.
    Eof,
    /// A whole line was read into the buffer, without its LF.
    Line,
    /// The line is longer than the limit; the buffer holds the limit plus one byte of it,
    /// and nothing more was read.
    TooLong,
    /// The input ended without an LF; the buffer holds what there was.
    Unterminated,
}

/// Reads one line into `buf` (cleared first), reading at most `limit + 1` bytes of it: a line
/// longer than `limit` is refused after that much, never read whole, so an endless input
/// without newlines (`/dev/zero`) costs `limit` bytes of memory and ends at once.
pub fn read_line<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    limit: usize,
) -> io::Result<LineRead> {
    buf.clear();
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let read = reader.take(cap).read_until(b'\n', buf)?;
    if read == 0 {
        return Ok(LineRead::Eof);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(LineRead::Line);
    }
    Ok(if buf.len() > limit {
        LineRead::TooLong
    } else {
        LineRead::Unterminated
    })
}

/// A key repeated within one JSON object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateKey {
    /// The byte offset of the repeated key's opening quote, from 0.
    pub offset: usize,
    /// The key, unescaped.
    pub key: String,
}

/// The first key repeated within one object of `text`, if any. Keys are compared after
/// unescaping (`"a"` and `"\u0061"` are the same key). Text that is not JSON yields `None` or
/// a finding on the part read so far, never a panic: the parser reports the syntax error.
pub fn duplicate_key(text: &str) -> Option<DuplicateKey> {
    let bytes = text.as_bytes();
    // For each open container: whether it is an object, and where its keys start in `keys`.
    let mut frames: Vec<(bool, usize)> = Vec::new();
    // Each key of the open objects: its span (quotes included) and whether it holds an escape.
    let mut keys: Vec<Span> = Vec::new();
    let mut big: Vec<Option<HashSet<String>>> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                frames.push((true, keys.len()));
                big.push(None);
                expect_key = true;
            }
            b'[' => {
                frames.push((false, keys.len()));
                big.push(None);
                expect_key = false;
            }
            b'}' | b']' => {
                let (_, start) = frames.pop()?;
                keys.truncate(start);
                big.pop();
                expect_key = false;
            }
            b',' => expect_key = matches!(frames.last(), Some((true, _))),
            b'"' => {
                let end = string_end(bytes, i)?;
                if expect_key {
                    let (_, start) = *frames.last()?;
                    let set = big.last_mut()?;
                    if let Some(found) = repeated(text, &keys[start..], set, (i, end)) {
                        return Some(found);
                    }
                    let escaped = bytes[i..end].contains(&b'\\');
                    keys.push((i, end, escaped));
                    expect_key = false;
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether any byte of the word `w` is `b` (non-zero if so): the classic SWAR test.
fn has_byte(w: u64, b: u8) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let x = w ^ (LO * u64::from(b));
    x.wrapping_sub(LO) & !x & HI
}

/// The index of the closing quote of the string opening at `open`. Plain bytes (hex digests,
/// names) are skipped eight at a time.
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut j = open + 1;
    loop {
        while let Some(word) = bytes.get(j..j + 8) {
            let w = u64::from_le_bytes(word.try_into().ok()?);
            if has_byte(w, b'"') | has_byte(w, b'\\') != 0 {
                break;
            }
            j += 8;
        }
        match bytes.get(j)? {
            b'"' => return Some(j),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

/// Past this many keys in one object, keys are looked up in a set rather than compared one by
/// one, so a hostile object of thousands of keys costs linear time.
const LINEAR_KEYS: usize = 32;

/// A key's span in the text, quotes included, and whether it holds an escape.
type Span = (usize, usize, bool);

/// Whether the key at `span` (quotes included) repeats one of `earlier`, the keys of the same
/// object so far. Keys without escapes (all of them, in what our writers write) are compared
/// as bytes, without allocating.
fn repeated(
    text: &str,
    earlier: &[Span],
    set: &mut Option<HashSet<String>>,
    span: (usize, usize),
) -> Option<DuplicateKey> {
    let raw = |a: usize, b: usize| text.get(a..=b).unwrap_or("");
    let key = raw(span.0, span.1);
    let found = || DuplicateKey {
        offset: span.0,
        key: unescape(key),
    };
    if earlier.len() >= LINEAR_KEYS {
        let set = set.get_or_insert_with(|| {
            earlier
                .iter()
                .map(|&(a, b, _)| unescape(raw(a, b)))
                .collect()
        });
        return (!set.insert(unescape(key))).then(found);
    }
    let bytes = text.as_bytes();
    let escaped = key.contains('\\');
    let same = |&(a, b, other_escaped): &Span| {
        if escaped || other_escaped {
            unescape(raw(a, b)) == unescape(key)
        } else {
            // Lengths first: most keys of an object differ in length, and this skips a call.
            b - a == span.1 - span.0 && bytes.get(a..=b) == bytes.get(span.0..=span.1)
        }
    };
    earlier.iter().any(same).then(found)
}

/// A quoted JSON string's value; the raw text (without quotes) if it does not decode.
fn unescape(quoted: &str) -> String {
    if !quoted.contains('\\') {
        return quoted.trim_matches('"').to_string();
    }
    serde_json::from_str(quoted).unwrap_or_else(|_| quoted.trim_matches('"').to_string())
}

/// Why [`decode_checkpoint`] refused its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointError {
    /// The bytes are not UTF-8.
    NotUtf8,
    /// A key repeats within one object.
    DuplicateKey(DuplicateKey),
    /// The kernel refused them (shape, schema, digest).
    Decode(resumable_kernel::checkpoint::DecodeError),
}

/// Decodes a checkpoint from JSON as the kernel does (`checkpoint::decode_json`: schema gate,
/// explicit migration of older schemas, digest), after refusing a repeated key anywhere in it:
/// the kernel's decoder reads the fields it knows and ignores others, so `{"x":1,"x":2}` would
/// otherwise pass.
pub fn decode_checkpoint(
    bytes: &[u8],
) -> Result<resumable_kernel::checkpoint::Decoded, CheckpointError> {
    let text = std::str::from_utf8(bytes).map_err(|_| CheckpointError::NotUtf8)?;
    if let Some(d) = duplicate_key(text) {
        return Err(CheckpointError::DuplicateKey(d));
    }
    resumable_kernel::checkpoint::decode_json(bytes).map_err(CheckpointError::Decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dup(text: &str) -> Option<(usize, String)> {
        duplicate_key(text).map(|d| (d.offset, d.key))
    }

    #[test]
    fn a_repeated_key_is_found_at_its_second_occurrence() {
        assert_eq!(dup(r#"{"at":1,"at":2}"#), Some((8, "at".into())));
        assert_eq!(dup(r#"{"a":{"b":1,"c":{"b":2}},"b":3}"#), None);
        assert_eq!(
            dup(r#"{"a":[{"x":1},{"x":2,"x":3}]}"#),
            Some((21, "x".into()))
        );
    }

    #[test]
    fn keys_are_compared_unescaped_and_values_are_not_keys() {
        assert_eq!(dup(r#"{"at":1,"\u0061t":2}"#), Some((8, "at".into())));
        assert_eq!(dup(r#"{"a":"b","b":"a"}"#), None);
        assert_eq!(dup(r#"{"a":"x\"y","x\"y":1}"#), None);
        assert_eq!(dup(r#"["a","a"]"#), None);
    }

    #[test]
    fn a_wide_object_is_checked_through_a_set() {
        let mut text = String::from("{");
        for i in 0..1000 {
            text.push_str(&format!("\"k{i}\":0,"));
        }
        assert_eq!(
            dup(&format!("{text}\"k999\":1}}")),
            Some((text.len(), "k999".into()))
        );
        assert_eq!(dup(&format!("{text}\"k1000\":1}}")), None);
    }

    #[test]
    fn broken_json_never_panics() {
        for text in [
            "{",
            "}",
            "]]]",
            "{\"a",
            "{\"a\\",
            "{\"a\":1,\"a",
            "\"",
            "{,,\"a\"}",
        ] {
            let _ = duplicate_key(text);
        }
    }

    #[test]
    fn a_line_past_the_limit_is_refused_after_the_limit() {
        let mut buf = Vec::new();
        let mut zeros = io::BufReader::new(io::repeat(0));
        assert_eq!(
            read_line(&mut zeros, &mut buf, 10).unwrap(),
            LineRead::TooLong
        );
        assert_eq!(buf.len(), 11);
        let mut two = &b"ab\ncd"[..];
        assert_eq!(read_line(&mut two, &mut buf, 10).unwrap(), LineRead::Line);
        assert_eq!(buf, b"ab");
        assert_eq!(
            read_line(&mut two, &mut buf, 10).unwrap(),
            LineRead::Unterminated
        );
        assert_eq!(read_line(&mut two, &mut buf, 10).unwrap(), LineRead::Eof);
    }
}
