//! Small value types that arrive in inputs: names, digests, times and revisions.
//!
//! Every type here is `Copy` and fixed-size, so a run and its inputs never touch the heap.

use core::fmt;

/// The most bytes a [`Name`] holds. Longer identifiers (UUID strings, URLs) are digested or
/// shortened by the driver before they reach the kernel.
pub const NAME_CAPACITY: usize = 31;

/// A short identifier: 1 to 31 bytes of printable ASCII without spaces.
///
/// Tenants, sessions, runs, call ids, tools, parties and idempotency keys are all names. The
/// bytes past `len` are always zero, so equality and hashing see only the name itself.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name {
    len: u8,
    bytes: [u8; NAME_CAPACITY],
}

/// Why a string is not a valid [`Name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The string is empty.
    #[error("a name cannot be empty")]
    Empty,
    /// The string is longer than [`NAME_CAPACITY`] bytes.
    #[error("a name holds at most {NAME_CAPACITY} bytes, got {len}")]
    TooLong {
        /// The length that was offered, in bytes.
        len: usize,
    },
    /// The string holds a byte that is not printable ASCII (or is a space).
    #[error("a name is printable ASCII without spaces; byte {at} is not")]
    NotPrintable {
        /// The offset of the first offending byte.
        at: usize,
    },
}

impl Name {
    /// Makes a name, or says why the string cannot be one.
    pub const fn new(s: &str) -> Result<Name, NameError> {
        let src = s.as_bytes();
        if src.is_empty() {
            return Err(NameError::Empty);
        }
        if src.len() > NAME_CAPACITY {
            return Err(NameError::TooLong { len: src.len() });
        }
        let mut bytes = [0u8; NAME_CAPACITY];
        let mut i = 0;
        while i < src.len() {
            let b = src[i];
            if b < 0x21 || b > 0x7e {
                return Err(NameError::NotPrintable { at: i });
            }
            bytes[i] = b;
            i += 1;
        }
        Ok(Name {
            len: src.len() as u8,
            bytes,
        })
    }

    /// Makes a name from a literal known to be valid; an invalid literal fails the build when
    /// used in a `const`, and panics otherwise. Meant for tests and examples, not for input.
    pub const fn lit(s: &str) -> Name {
        match Name::new(s) {
            Ok(name) => name,
            Err(_) => panic!("invalid name literal"),
        }
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        // Only printable ASCII is ever stored, so this cannot fail; the fallback keeps the
        // function total rather than trusting that reasoning with a panic.
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }

    /// The stored bytes, zero-padded to [`NAME_CAPACITY`]: the canonical encoding digests use.
    pub(crate) fn padded(&self) -> (u8, &[u8; NAME_CAPACITY]) {
        (self.len, &self.bytes)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl core::str::FromStr for Name {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Name::new(s)
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
    use super::{Digest, Name};
    use core::fmt;
    use serde::de::{self, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    impl Serialize for Name {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(self.as_str())
        }
    }

    impl<'de> Deserialize<'de> for Name {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Name;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a name: 1 to 31 bytes of printable ASCII")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Name, E> {
                    Name::new(v).map_err(E::custom)
                }
            }
            d.deserialize_str(V)
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
