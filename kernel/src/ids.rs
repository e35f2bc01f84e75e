//! Small value types that arrive in inputs: names, digests, times and revisions.
//!
//! Every type here is `Copy` and fixed-size, so a run and its inputs never touch the heap.

use core::fmt;

/// The most bytes a [`Name`] holds: a UUID string (36), a tool name as OpenAI and MCP servers
/// write them (up to 64), a provider's call id (`call_...`, `toolu_...`).
pub const NAME_CAPACITY: usize = Name::CAPACITY;

/// The most bytes an [`IdempotencyKey`] holds: as payment APIs allow them (255).
pub const KEY_CAPACITY: usize = IdempotencyKey::CAPACITY;

/// The width names had before they were widened (31 bytes). Digests encode a name of at most
/// this many bytes exactly as they always did (length, then the bytes zero-padded to this
/// width), so the tool keys and checkpoint digests of every name that was valid before are
/// unchanged; a longer name is encoded as its length and its bytes, which no padded name can
/// be mistaken for (its length byte is larger than the width).
pub const LEGACY_NAME_WIDTH: usize = 31;

/// Identifier text of at most `N` bytes of printable ASCII without spaces, held inline.
///
/// The bytes past `len` are always zero, so equality, ordering and hashing see only the text.
/// Two widths are used: [`Name`] for tenants, sessions, runs, definitions, tools, call ids,
/// parties, callbacks and resources; [`IdempotencyKey`] for idempotency keys.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

/// An identifier: 1 to [`NAME_CAPACITY`] bytes of printable ASCII without spaces.
pub type Name = Text<64>;

/// An idempotency key: 1 to [`KEY_CAPACITY`] bytes of printable ASCII without spaces.
pub type IdempotencyKey = Text<255>;

/// Why a string is not valid identifier text ([`Name`] or [`IdempotencyKey`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The string is empty.
    #[error("an identifier cannot be empty")]
    Empty,
    /// The string is longer than the field holds.
    #[error("an identifier here holds at most {capacity} bytes, got {len}")]
    TooLong {
        /// The length that was offered, in bytes.
        len: usize,
        /// The most the field holds, in bytes.
        capacity: usize,
    },
    /// The string holds a byte that is not printable ASCII (or is a space).
    #[error("an identifier is printable ASCII without spaces; byte {at} is not")]
    NotPrintable {
        /// The offset of the first offending byte.
        at: usize,
    },
}

impl<const N: usize> Text<N> {
    /// The most bytes this text holds.
    pub const CAPACITY: usize = N;

    /// Makes the text, or says why the string cannot be one.
    pub const fn new(s: &str) -> Result<Text<N>, NameError> {
        let src = s.as_bytes();
        if src.is_empty() {
            return Err(NameError::Empty);
        }
        // A length byte holds at most 255: no capacity is larger.
        if src.len() > N || src.len() > u8::MAX as usize {
            return Err(NameError::TooLong {
                len: src.len(),
                capacity: N,
            });
        }
        let mut bytes = [0u8; N];
        let mut i = 0;
        while i < src.len() {
            let b = src[i];
            if b < 0x21 || b > 0x7e {
                return Err(NameError::NotPrintable { at: i });
            }
            bytes[i] = b;
            i += 1;
        }
        Ok(Text {
            len: src.len() as u8,
            bytes,
        })
    }

    /// Makes the text from a literal known to be valid; an invalid literal fails the build when
    /// used in a `const`, and panics otherwise. Meant for tests and examples, not for input.
    pub const fn lit(s: &str) -> Text<N> {
        match Text::new(s) {
            Ok(text) => text,
            Err(_) => panic!("invalid name literal"),
        }
    }

    /// The text as a string slice.
    pub fn as_str(&self) -> &str {
        // Only printable ASCII is ever stored, so this cannot fail; the fallback keeps the
        // function total rather than trusting that reasoning with a panic.
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }

    /// The text's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        let len = usize::from(self.len).min(N);
        &self.bytes[..len]
    }

    /// The same text in another width, if it fits.
    pub fn widen<const M: usize>(&self) -> Result<Text<M>, NameError> {
        Text::new(self.as_str())
    }

    /// Feeds the canonical encoding digests use to `out`: the length byte, then the bytes,
    /// zero-padded to [`LEGACY_NAME_WIDTH`] when shorter (see that constant).
    pub(crate) fn encode(&self, mut out: impl FnMut(&[u8])) {
        const ZEROS: [u8; LEGACY_NAME_WIDTH] = [0; LEGACY_NAME_WIDTH];
        let bytes = self.as_bytes();
        out(&[self.len]);
        out(bytes);
        out(&ZEROS[..LEGACY_NAME_WIDTH.saturating_sub(bytes.len())]);
    }
}

impl<const N: usize> fmt::Display for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<const N: usize> fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl<const N: usize> core::str::FromStr for Text<N> {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Text::new(s)
    }
}

/// A SHA-256 digest: of a checkpoint, of a call's arguments, of a result, of a key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Digest(pub [u8; 32]);

/// Why a string is not a valid hex [`Digest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    /// The string is not 64 characters long.
    #[error("a digest is 64 hex characters, got {len}")]
    Length {
        /// The length that was offered.
        len: usize,
    },
    /// A character is not a hex digit.
    #[error("a digest is hex; character {at} is not")]
    NotHex {
        /// The offset of the first offending character.
        at: usize,
    },
}

impl Digest {
    /// Computes the SHA-256 digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        use sha2::Digest as _;
        Digest(sha2::Sha256::digest(bytes).into())
    }

    /// Parses 64 hex digits (either case).
    pub fn from_hex(s: &str) -> Result<Digest, DigestError> {
        let src = s.as_bytes();
        if src.len() != 64 {
            return Err(DigestError::Length { len: src.len() });
        }
        let mut out = [0u8; 32];
        for (i, pair) in src.chunks_exact(2).enumerate() {
            let hi = hex_value(pair[0]).ok_or(DigestError::NotHex { at: 2 * i })?;
            let lo = hex_value(pair[1]).ok_or(DigestError::NotHex { at: 2 * i + 1 })?;
            out[i] = (hi << 4) | lo;
        }
        Ok(Digest(out))
    }

    /// Writes the digest as 64 lowercase hex digits into `buf` and returns it as a string.
    pub fn to_hex<'a>(&self, buf: &'a mut [u8; 64]) -> &'a str {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for (i, b) in self.0.iter().enumerate() {
            buf[2 * i] = HEX[usize::from(b >> 4)];
            buf[2 * i + 1] = HEX[usize::from(b & 0xf)];
        }
        core::str::from_utf8(buf).unwrap_or("")
    }
}

pub(crate) fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 64];
        f.write_str(self.to_hex(&mut buf))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Eight hex digits identify a digest in a trace; the full value is in Display.
        let mut buf = [0u8; 64];
        write!(f, "{}..", &self.to_hex(&mut buf)[..8])
    }
}

/// A point in time, in units the driver chooses (milliseconds, logical ticks). The kernel only
/// compares times and adds durations; it never reads a clock.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Time(pub u64);

impl Time {
    /// The last instant. No suspension may expire at it: no later input could pass it, and a
    /// suspension that cannot be passed would wait forever (spec EXP-1).
    pub const END: Time = Time(u64::MAX);

    /// The latest expiry a suspension may have: one before [`Time::END`], so that an input at
    /// the end of time still passes it.
    pub const LATEST_EXPIRY: Time = Time(u64::MAX - 1);

    /// This time plus a duration in the same units, saturating at the end of time.
    pub const fn after(self, duration: u64) -> Time {
        Time(self.0.saturating_add(duration))
    }

    /// The expiry of a suspension that begins now and lasts `duration`: this time plus the
    /// duration, bounded by [`Time::LATEST_EXPIRY`] so that it can always be passed.
    pub const fn expiry_after(self, duration: u64) -> Time {
        let end = self.0.saturating_add(duration);
        if end > Time::LATEST_EXPIRY.0 {
            Time::LATEST_EXPIRY
        } else {
            Time(end)
        }
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}", self.0)
    }
}

/// The state revision of a run: 0 when created, plus one for every accepted input.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct Revision(pub u64);

impl Revision {
    /// The next revision, or `None` when the counter is exhausted.
    pub const fn next(self) -> Option<Revision> {
        match self.0.checked_add(1) {
            Some(n) => Some(Revision(n)),
            None => None,
        }
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "r{}", self.0)
    }
}

#[cfg(feature = "serde")]
mod serde_impls {
    use super::{Digest, Text};
    use core::fmt;
    use serde::de::{self, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    impl<const N: usize> Serialize for Text<N> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(self.as_str())
        }
    }

    impl<'de, const N: usize> Deserialize<'de> for Text<N> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<const N: usize>;
            impl<const N: usize> Visitor<'_> for V<N> {
                type Value = Text<N>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    write!(f, "1 to {N} bytes of printable ASCII without spaces")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<N>, E> {
                    Text::new(v).map_err(E::custom)
                }
            }
            d.deserialize_str(V::<N>)
        }
    }

    impl Serialize for Digest {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut buf = [0u8; 64];
            s.serialize_str(self.to_hex(&mut buf))
        }
    }

    impl<'de> Deserialize<'de> for Digest {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Digest;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a digest: 64 hex digits")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Digest, E> {
                    Digest::from_hex(v).map_err(E::custom)
                }
            }
            d.deserialize_str(V)
        }
    }
}
