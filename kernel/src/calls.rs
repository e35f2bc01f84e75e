//! The run's call log: every call the run has bound, over its whole history, so that a call id
//! names one call and an idempotency key one payload (spec KEY-1, KEY-2), and a key whose
//! result was recorded is never dispatched again (spec REC-4).
//!
//! The log is a fixed-size table inside the run: [`CALL_LOG_CAPACITY`] entries. When it is
//! full, a new call is refused with [`Rejection::CallLogFull`]; nothing is ever forgotten, so
//! a reuse can never slip past a log that dropped its first use.

use crate::ids::{Digest, IdempotencyKey, Name, Text};
use crate::reject::Rejection;
use crate::run::Call;
use core::fmt;
use core::hash::{Hash, Hasher};

/// How many calls one run may bind in all. A run that needs more is continued as a new run.
pub const CALL_LOG_CAPACITY: usize = 32;

/// The first 8 bytes of a domain-separated SHA-256 of a name. Equal names always have equal
/// fingerprints, so a reuse is never missed; two different names that share a fingerprint
/// (a chance of 2^-64 per pair) can only cause a refusal, never an acceptance.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Fingerprint(pub [u8; 8]);

impl Fingerprint {
    fn of<const N: usize>(domain: &[u8], name: &Text<N>) -> Fingerprint {
        use sha2::Digest as _;
        let mut hasher = sha2::Sha256::new();
        hasher.update(domain);
        name.encode(|b| hasher.update(b));
        let full: [u8; 32] = hasher.finalize().into();
        let mut out = [0u8; 8];
        out.copy_from_slice(&full[..8]);
        Fingerprint(out)
    }

    /// The fingerprint of a call id.
    pub fn call_id(name: &Name) -> Fingerprint {
        Fingerprint::of(b"resumable/call-id\0", name)
    }

    /// The fingerprint of an idempotency key.
    pub fn key(name: &IdempotencyKey) -> Fingerprint {
        Fingerprint::of(b"resumable/key-name\0", name)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// One call the run bound: its id, its key, its argument digest, and whether its committed
/// result was recorded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LoggedCall {
    /// The fingerprint of the call id.
    pub call_id: Fingerprint,
    /// The fingerprint of the idempotency key.
    pub key: Fingerprint,
    /// The argument digest the key is bound to.
    pub args: Digest,
    /// The call's committed result was recorded: the key is spent.
    pub committed: bool,
}

/// The calls a run has bound, oldest first (see the module documentation).
#[derive(Clone, Copy)]
pub struct CallLog {
    len: u8,
    entries: [LoggedCall; CALL_LOG_CAPACITY],
}

impl CallLog {
    /// An empty log.
    pub const fn new() -> CallLog {
        CallLog {
            len: 0,
            entries: [LoggedCall {
                call_id: Fingerprint([0; 8]),
                key: Fingerprint([0; 8]),
                args: Digest([0; 32]),
                committed: false,
            }; CALL_LOG_CAPACITY],
        }
    }

    /// The calls bound so far, oldest first.
    pub fn entries(&self) -> &[LoggedCall] {
        // `len` never exceeds the capacity: `admit` refuses a call once the log is full and
        // the deserialiser refuses a longer list; `min` keeps the slice total regardless.
        &self.entries[..usize::from(self.len).min(CALL_LOG_CAPACITY)]
    }

    /// How many calls the run has bound.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether the run has bound no call yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// KEY-2, KEY-1, REC-4: the log with `call` added, or why it cannot be bound, checked in
    /// this order: its id was used before; its key was bound to other arguments; its key's
    /// result was recorded; the log is full.
    pub(crate) fn admit(&self, call: &Call) -> Result<CallLog, Rejection> {
        let entry = LoggedCall {
            call_id: Fingerprint::call_id(&call.call_id),
            key: Fingerprint::key(&call.key),
            args: call.args,
            committed: false,
        };
        let earlier = self.entries();
        if earlier.iter().any(|e| e.call_id == entry.call_id) {
            return Err(Rejection::CallIdReused {
                call_id: call.call_id,
            });
        }
        let same_key = || earlier.iter().filter(|e| e.key == entry.key);
        if same_key().any(|e| e.args != entry.args) {
            return Err(Rejection::KeyConflict { key: call.key });
        }
        if same_key().any(|e| e.committed) {
            return Err(Rejection::KeyCommitted { key: call.key });
        }
        let mut next = *self;
        let Some(slot) = next.entries.get_mut(usize::from(self.len)) else {
            return Err(Rejection::CallLogFull {
                capacity: CALL_LOG_CAPACITY as u8,
            });
        };
        *slot = entry;
        next.len += 1;
        Ok(next)
    }

    /// REC-4: records that the call with this id committed, so its key is never dispatched
    /// again. A call id the log does not hold changes nothing (the invariants rule it out).
    pub(crate) fn settle(&mut self, call_id: &Name) {
        let id = Fingerprint::call_id(call_id);
        let len = usize::from(self.len).min(CALL_LOG_CAPACITY);
        if let Some(e) = self.entries[..len].iter_mut().find(|e| e.call_id == id) {
            e.committed = true;
        }
    }

    /// Whether the log holds a call with this id.
    pub fn contains(&self, call_id: &Name) -> bool {
        let id = Fingerprint::call_id(call_id);
        self.entries().iter().any(|e| e.call_id == id)
    }

    /// A log read back from storage, or `None` if it holds more than the capacity.
    pub fn from_entries(entries: &[LoggedCall]) -> Option<CallLog> {
        let mut log = CallLog::new();
        let slots = log.entries.get_mut(..entries.len())?;
        slots.copy_from_slice(entries);
        log.len = u8::try_from(entries.len()).ok()?;
        Some(log)
    }
}

impl Default for CallLog {
    fn default() -> CallLog {
        CallLog::new()
    }
}

// Equality and hashing see only the entries in use, never the unused tail.
impl PartialEq for CallLog {
    fn eq(&self, other: &CallLog) -> bool {
        self.entries() == other.entries()
    }
}

impl Eq for CallLog {}

impl Hash for CallLog {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.entries().hash(state);
    }
}

impl fmt::Debug for CallLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.entries()).finish()
    }
}

#[cfg(feature = "serde")]
mod wire {
    //! Fingerprints travel as 16 hex digits; the log as the list of its entries.
    use super::{CallLog, Fingerprint, LoggedCall, CALL_LOG_CAPACITY};
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    impl Serialize for Fingerprint {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(self)
        }
    }

    impl<'de> Deserialize<'de> for Fingerprint {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Hex;
            impl Visitor<'_> for Hex {
                type Value = Fingerprint;
                fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    f.write_str("16 hex digits")
                }
                fn visit_str<E: Error>(self, v: &str) -> Result<Fingerprint, E> {
                    let bytes = v.as_bytes();
                    if bytes.len() != 16 {
                        return Err(E::invalid_length(bytes.len(), &self));
                    }
                    let mut out = [0u8; 8];
                    for (i, pair) in bytes.chunks_exact(2).enumerate() {
                        let hi = crate::ids::hex_value(pair[0]);
                        let lo = crate::ids::hex_value(pair[1]);
                        let (Some(hi), Some(lo)) = (hi, lo) else {
                            return Err(E::invalid_value(serde::de::Unexpected::Str(v), &self));
                        };
                        out[i] = (hi << 4) | lo;
                    }
                    Ok(Fingerprint(out))
                }
            }
            d.deserialize_str(Hex)
        }
    }

    impl Serialize for CallLog {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.entries())
        }
    }

    impl<'de> Deserialize<'de> for CallLog {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Entries;
            impl<'de> Visitor<'de> for Entries {
                type Value = CallLog;
                fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    write!(f, "at most {CALL_LOG_CAPACITY} logged calls")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CallLog, A::Error> {
                    let mut entries = [LoggedCall::default(); CALL_LOG_CAPACITY];
                    let mut len = 0;
                    while let Some(entry) = seq.next_element::<LoggedCall>()? {
                        let slot = entries
                            .get_mut(len)
                            .ok_or_else(|| A::Error::invalid_length(len + 1, &self))?;
                        *slot = entry;
                        len += 1;
                    }
                    CallLog::from_entries(&entries[..len])
                        .ok_or_else(|| A::Error::invalid_length(len, &self))
                }
            }
            d.deserialize_seq(Entries)
        }
    }
}
