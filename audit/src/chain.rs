//! The chain that seals every line of a version 2 log, the key behind it, and the anchor a
//! runtime stores with its run.
//!
//! Line *n* ends with `,"mac":"<64 hex>"}`. Its **body** is every byte before that `,"mac"`;
//! its MAC is `HMAC-SHA-256(key, mac(n-1) || body(n))` in a keyed log and
//! `SHA-256(mac(n-1) || body(n))` in an unkeyed one, where `mac(0)` is 32 zero bytes and
//! `mac(n-1)` is the 32 raw bytes of the previous line's MAC. Every line, the header included,
//! is sealed, so every byte of the log but the MAC fields themselves is covered, and each MAC
//! covers everything before it. Without the key, a keyed chain cannot be recomputed; an
//! unkeyed one can, by anyone, which is why the report says what an unkeyed log cannot prove.
//!
//! HMAC-SHA-256 comes from the RustCrypto `hmac` crate over the `sha2` the kernel already uses:
//! a reviewed, constant-time construction that is not worth writing by hand.

use hmac::{Hmac, KeyInit, Mac};
use resumable_kernel::Digest;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::fmt;
use std::str::FromStr;

/// What a sealed line ends with, before the 64 hex digits of its MAC and the closing `"}`.
pub const MAC_FIELD: &str = ",\"mac\":\"";

/// The length of a sealed line's ending: `,"mac":"`, 64 hex digits, `"}`.
pub const SEAL_LEN: usize = MAC_FIELD.len() + 64 + 2;

/// How a log's lines are chained, as its header names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChainKind {
    /// HMAC-SHA-256 under the run's audit key: only the key's holder can seal a line.
    #[serde(rename = "hmac-sha256")]
    HmacSha256,
    /// SHA-256 without a key: catches accidents, and any edit when an anchor is given, but
    /// anyone can recompute it.
    #[serde(rename = "sha256")]
    Sha256,
}

impl ChainKind {
    /// The name the header uses.
    pub fn name(self) -> &'static str {
        match self {
            ChainKind::HmacSha256 => "hmac-sha256",
            ChainKind::Sha256 => "sha256",
        }
    }
}

/// A 256-bit audit key. It never appears in a log: the header names it by its [`KeyId`].
/// `Debug` shows the id only.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key(id {})", self.id())
    }
}

/// Why a key could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError(pub String);

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

impl Key {
    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Key {
        Key(bytes)
    }

    /// A key from a key file's text: 64 hex digits, optionally followed by one newline
    /// (`openssl rand -hex 32 > audit.key` writes one).
    pub fn from_hex(text: &str) -> Result<Key, KeyError> {
        let hex = text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(text);
        Digest::from_hex(hex)
            .map(|d| Key(d.0))
            .map_err(|e| KeyError(format!("a key file holds 64 hex digits (32 bytes): {e}")))
    }

    /// The key's public name: the first 8 bytes of SHA-256 over a fixed label and the key.
    /// It tells which key sealed a log without revealing the key.
    pub fn id(&self) -> KeyId {
        let mut h = Sha256::new();
        h.update(b"resumable-audit key id\0");
        h.update(self.0);
        let full: [u8; 32] = h.finalize().into();
        let mut id = [0u8; 8];
        id.copy_from_slice(&full[..8]);
        KeyId(id)
    }
}

/// The public name of a [`Key`], written in a keyed log's header as 16 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(pub [u8; 8]);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

impl Serialize for KeyId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KeyId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<KeyId, D::Error> {
        let text = <&str>::deserialize(d)?;
        let mut id = [0u8; 8];
        // Hex digits only: a check on bytes, so no slice can split a character, and no sign
        // (which `from_str_radix` would take) gives a second spelling of one id.
        let ok = text.len() == 16
            && text.bytes().all(|c| c.is_ascii_hexdigit())
            && id.iter_mut().enumerate().all(|(i, b)| {
                u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                    .map(|v| *b = v)
                    .is_ok()
            });
        if ok {
            Ok(KeyId(id))
        } else {
            Err(serde::de::Error::custom("a key id is 16 hex digits"))
        }
    }
}

/// The running chain: the MAC of the last line sealed, and how to compute the next one.
#[derive(Clone)]
pub struct Chain {
    /// The HMAC keyed once, cloned for each line, so a line costs no key schedule.
    keyed: Option<Hmac<Sha256>>,
    last: Digest,
}

impl Chain {
    /// A chain before its first line (the header): the previous MAC is 32 zero bytes.
    pub fn new(key: Option<&Key>) -> Chain {
        Chain::resume(key, Digest::default())
    }

    /// A chain that goes on after a line whose MAC was `last`.
    pub fn resume(key: Option<&Key>, last: Digest) -> Chain {
        Chain {
            keyed: key.and_then(|k| Hmac::<Sha256>::new_from_slice(&k.0).ok()),
            last,
        }
    }

    /// How this chain seals.
    pub fn kind(&self) -> ChainKind {
        if self.keyed.is_some() {
            ChainKind::HmacSha256
        } else {
            ChainKind::Sha256
        }
    }

    /// The MAC of the last line.
    pub fn last(&self) -> Digest {
        self.last
    }

    /// The MAC a line with this body must carry next.
    pub fn mac(&self, body: &[u8]) -> Digest {
        match &self.keyed {
            Some(template) => {
                let mut m = template.clone();
                m.update(&self.last.0);
                m.update(body);
                Digest(m.finalize().into_bytes().into())
            }
            None => {
                let mut h = Sha256::new();
                h.update(self.last.0);
                h.update(body);
                Digest(h.finalize().into())
            }
        }
    }

    /// Moves the chain past a line whose MAC is `mac`.
    pub fn advance(&mut self, mac: Digest) {
        self.last = mac;
    }

    /// Seals `object`, the compact JSON of one line without its MAC (ending with `}`): appends
    /// the line, with its MAC and LF, to `out` and moves the chain on. Returns the MAC.
    pub fn seal(&mut self, object: &[u8], out: &mut Vec<u8>) -> Digest {
        let body = object.strip_suffix(b"}").unwrap_or(object);
        let mac = self.mac(body);
        let mut hex = [0u8; 64];
        out.extend_from_slice(body);
        out.extend_from_slice(MAC_FIELD.as_bytes());
        out.extend_from_slice(mac.to_hex(&mut hex).as_bytes());
        out.extend_from_slice(b"\"}\n");
        self.last = mac;
        mac
    }
}

/// A sealed line's body and the MAC it carries, if it ends as a sealed line must: `,"mac":"`,
/// 64 lowercase hex digits, `"}`.
pub fn split_sealed(line: &str) -> Option<(&str, Digest)> {
    let cut = line.len().checked_sub(SEAL_LEN)?;
    let (body, seal) = (line.get(..cut)?, line.get(cut..)?);
    let hex = seal.strip_prefix(MAC_FIELD)?.strip_suffix("\"}")?;
    if hex.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    Digest::from_hex(hex).ok().map(|mac| (body, mac))
}

/// What a runtime stores with its run, in the same transaction as each record: how many
/// records the log holds and the MAC of its last line (of the header, before any record). A
/// log that ends earlier (a truncated tail) or whose last line differs (an edit, or a whole
/// rewrite of an unkeyed log) no longer matches it. Written `RECORDS:HEX`, or as the JSON
/// object `{"records": N, "mac": "HEX"}` of an anchor file.
///
/// For a version 1 log, `mac` is the SHA-256 of the last line's bytes (the `prev` the next
/// record would carry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    /// Records in the log (the header not counted).
    pub records: u64,
    /// The MAC of the log's last line.
    pub mac: Digest,
}

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.records, self.mac)
    }
}

impl FromStr for Anchor {
    type Err = String;

    /// `RECORDS:HEX`, e.g. `9:3f2a…` (64 hex digits).
    fn from_str(text: &str) -> Result<Anchor, String> {
        let (records, mac) = text
            .split_once(':')
            .ok_or("an anchor is RECORDS:MAC (a count, a colon, 64 hex digits)")?;
        let records = records
            .parse()
            .map_err(|e| format!("the anchor's record count {records:?}: {e}"))?;
        let mac = Digest::from_hex(mac).map_err(|e| format!("the anchor's MAC: {e}"))?;
        Ok(Anchor { records, mac })
    }
}

impl Anchor {
    /// An anchor file's contents: one JSON object `{"records": N, "mac": "HEX"}`, with no
    /// other field and no repeated key, optionally followed by whitespace.
    pub fn from_json(bytes: &[u8]) -> Result<Anchor, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "an anchor file is UTF-8 JSON")?;
        if let Some(d) = crate::json::duplicate_key(text) {
            return Err(format!("the key {:?} appears twice", d.key));
        }
        serde_json::from_str(text).map_err(|e| format!("not an anchor: {e}"))
    }

    /// The anchor as an anchor file's JSON, with its LF.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"records\":{},\"mac\":\"{}\"}}\n",
            self.records, self.mac
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_line_splits_into_its_body_and_mac() {
        let mut chain = Chain::new(Some(&Key::from_bytes([7; 32])));
        let mut out = Vec::new();
        let mac = chain.seal(br#"{"a":1}"#, &mut out);
        let line = std::str::from_utf8(&out).unwrap().trim_end();
        assert_eq!(split_sealed(line), Some((r#"{"a":1"#, mac)));
        assert_eq!(
            Chain::new(Some(&Key::from_bytes([7; 32]))).mac(br#"{"a":1"#),
            mac
        );
        assert_ne!(
            Chain::new(Some(&Key::from_bytes([8; 32]))).mac(br#"{"a":1"#),
            mac
        );
        assert_ne!(Chain::new(None).mac(br#"{"a":1"#), mac);
        assert_eq!(split_sealed(&line.to_uppercase()), None);
        assert_eq!(split_sealed(r#"{"a":1}"#), None);
    }

    #[test]
    fn the_macs_match_an_independent_implementation() {
        // Python's hmac and hashlib over the same bytes: 32 zero bytes, then the body.
        let body = br#"{"a":1"#;
        assert_eq!(
            Chain::new(Some(&Key::from_bytes([7; 32])))
                .mac(body)
                .to_string(),
            "7d56c36a7fe736160241b883b3e2e3fd6903999df4c628797b0481e9284ce8bb"
        );
        assert_eq!(
            Chain::new(None).mac(body).to_string(),
            "607ca6addc015e6bd181f4700e76996f0a2361ee7a2e4b2dbe5d7dd2f948d448"
        );
        assert_eq!(
            Key::from_bytes([0; 32]).id().to_string(),
            "29354861009d6adb"
        );
    }

    #[test]
    fn a_key_file_is_64_hex_digits_and_an_optional_newline() {
        let hex = "00".repeat(32);
        assert!(Key::from_hex(&hex).is_ok());
        assert!(Key::from_hex(&format!("{hex}\n")).is_ok());
        assert!(Key::from_hex(&format!("{hex}\n\n")).is_err());
        assert!(Key::from_hex("secret").is_err());
        assert_eq!(
            format!("{:?}", Key::from_hex(&hex).unwrap()),
            format!("Key(id {})", Key::from_bytes([0; 32]).id())
        );
    }

    #[test]
    fn a_key_id_is_exactly_16_hex_digits_and_never_panics() {
        let id = |text: &str| serde_json::from_str::<KeyId>(&format!("\"{text}\""));
        assert_eq!(
            id("29354861009d6adb").unwrap(),
            Key::from_bytes([0; 32]).id()
        );
        // Found by fuzzing: a two-byte character across a digit pair once panicked.
        assert!(id("de3\u{33d}0493e18cac4").is_err());
        assert!(id("+9354861009d6adb").is_err());
        assert!(id("29354861009d6ad").is_err());
    }

    #[test]
    fn an_anchor_reads_as_text_and_as_json_and_refuses_repeated_keys() {
        let anchor = Anchor {
            records: 9,
            mac: Digest::of(b"x"),
        };
        assert_eq!(anchor.to_string().parse::<Anchor>(), Ok(anchor));
        assert_eq!(Anchor::from_json(anchor.to_json().as_bytes()), Ok(anchor));
        let twice = format!("{{\"records\":1,\"records\":9,\"mac\":\"{}\"}}", anchor.mac);
        assert!(Anchor::from_json(twice.as_bytes())
            .unwrap_err()
            .contains("twice"));
        assert!("9".parse::<Anchor>().is_err());
    }
}
