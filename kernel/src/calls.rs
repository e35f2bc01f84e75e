//! The run's call history: every call it bound, over its whole life, so that a call id names
//! one call and an idempotency key one payload (spec KEY-1, KEY-2), and a key whose result was
//! recorded is never dispatched again (spec REC-4).
//!
//! The history does not live in the run. A run may bind any number of calls (a research agent
//! makes dozens, a coding agent thousands), and a run that carried them all would be copied,
//! hashed and stored whole on every step. Instead the driver keeps the history in its store,
//! indexed by the [`Fingerprint`]s of call ids and keys, and writes each [`HistoryEntry`] a
//! transition emits in the same commit as the run. Before each call is bound (a dispatch, or
//! a suspension for its approval) it looks the call's id and key up and states what it found
//! as a [`Prior`]; the kernel applies the rules to that fact, as it applies them to the facts
//! of a resume (spec RES-7). The audit log records every claim with the input it came with,
//! and the validator, which sees the whole history, checks every one.

use crate::ids::{Digest, IdempotencyKey, Name, Text};
use crate::reject::Rejection;
use crate::run::Call;
use core::fmt;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// The first 8 bytes of a domain-separated SHA-256 of a name: what a history index is keyed
/// by. Equal names always have equal fingerprints, so a reuse is never missed; two different
/// names that share a fingerprint (a chance of 2^-64 per pair) can only make a driver report
/// a prior use that did not happen, which refuses a call, never accepts one.
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

/// An idempotency key's binding in the run's history: the argument digest it is bound to, and
/// whether a result under it was recorded.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct KeyUse {
    /// The argument digest the key is bound to (spec KEY-1).
    pub args: Digest,
    /// A result under the key was recorded: the key is spent (spec REC-4).
    pub committed: bool,
}

/// What the driver's history index holds about a call's id and its key, looked up just before
/// the call is bound. The driver states it; the kernel applies the rules to it; the audit log
/// records it with the input, so a validator holding the whole history checks it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Prior {
    /// A call with this id was bound before (spec KEY-2).
    pub call_id_used: bool,
    /// The key's earlier binding, if the key was bound before.
    pub key: Option<KeyUse>,
}

impl Prior {
    /// Nothing was bound before: the first call of a run, or a call whose id and key the
    /// history has never seen.
    pub const NONE: Prior = Prior {
        call_id_used: false,
        key: None,
    };

    /// KEY-2, KEY-1, REC-4: whether `call` may be bound given what its history holds, checked
    /// in this order: its id was used before; its key was bound to other arguments; its key's
    /// result was recorded.
    pub(crate) fn admit(&self, call: &Call) -> Result<(), Rejection> {
        if self.call_id_used {
            return Err(Rejection::CallIdReused {
                call_id: call.call_id,
            });
        }
        if let Some(k) = &self.key {
            if k.args != call.args {
                return Err(Rejection::KeyConflict { key: call.key });
            }
            if k.committed {
                return Err(Rejection::KeyCommitted { key: call.key });
            }
        }
        Ok(())
    }
}

/// What a transition adds to the run's history, for the driver to write in the same commit as
/// the next run (spec WAL-1): a call bound, or a key spent.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "entry", rename_all = "snake_case"))]
pub enum HistoryEntry {
    /// A call was bound: its id is used from now on, and its key is bound to its arguments.
    Bound {
        /// The fingerprint of the call id.
        call_id: Fingerprint,
        /// The fingerprint of the idempotency key.
        key: Fingerprint,
        /// The argument digest the key is bound to.
        args: Digest,
    },
    /// A result under this key was recorded: the key is spent.
    Settled {
        /// The fingerprint of the idempotency key.
        key: Fingerprint,
    },
}

impl HistoryEntry {
    /// The entry that binds `call`.
    pub fn bound(call: &Call) -> HistoryEntry {
        HistoryEntry::Bound {
            call_id: Fingerprint::call_id(&call.call_id),
            key: Fingerprint::key(&call.key),
            args: call.args,
        }
    }

    /// The entry that spends `key`.
    pub fn settled(key: &IdempotencyKey) -> HistoryEntry {
        HistoryEntry::Settled {
            key: Fingerprint::key(key),
        }
    }
}

/// One entry of the call log a run carried inline under rules 2 and earlier (at most 32 of
/// them, in the run's `calls` field). A driver that loads such a run moves its log into its
/// history index ([`LoggedCall::entries`]) and drops the field; [`crate::Run`]'s deserialiser
/// refuses a run that still carries one, so a history is never silently lost.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
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

impl LoggedCall {
    /// The history entries the logged call stands for: its binding, then its key spent if its
    /// result was recorded.
    pub fn entries(&self) -> impl Iterator<Item = HistoryEntry> {
        let bound = HistoryEntry::Bound {
            call_id: self.call_id,
            key: self.key,
            args: self.args,
        };
        let settled = HistoryEntry::Settled { key: self.key };
        core::iter::once(bound).chain(self.committed.then_some(settled))
    }
}

#[cfg(feature = "serde")]
mod wire {
    //! Fingerprints travel as 16 hex digits.
    use super::Fingerprint;
    use serde::de::{Error, Visitor};
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
}
