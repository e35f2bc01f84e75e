//! A run's call history as a driver or a reader keeps it in memory: the index the kernel's
//! [`HistoryEntry`] effects build, and the [`Prior`] a driver states before it binds a call.
//!
//! The validator keeps one per log to check every prior a record claims; replay keeps one to
//! supply priors, as a driver would; a runtime keeps the same index in its store. It holds one
//! entry per call id and per key the run bound: memory grows with the run's calls, not with
//! its log's length.

use resumable_kernel::{Call, Digest, Fingerprint, HistoryEntry, KeyUse, Prior};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One run's call history, indexed by the kernel's fingerprints of call ids and keys. Its
/// JSON form (sorted, so one history always writes the same text) is what a driver that
/// keeps it in a row stores: `{"call_ids": [FP...], "keys": {FP: {"args", "committed"}}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History {
    call_ids: BTreeSet<Fingerprint>,
    keys: BTreeMap<Fingerprint, KeyUse>,
}

impl History {
    /// An empty history: a new run's.
    pub fn new() -> History {
        History::default()
    }

    /// What the history holds about `call`'s id and key: the prior a driver states.
    pub fn prior(&self, call: &Call) -> Prior {
        Prior {
            call_id_used: self.call_ids.contains(&Fingerprint::call_id(&call.call_id)),
            key: self.keys.get(&Fingerprint::key(&call.key)).copied(),
        }
    }

    /// Writes an entry a transition emitted. A key bound again keeps its first argument
    /// digest (the kernel binds a key only to the digest it already has) and its spent mark.
    pub fn apply(&mut self, entry: &HistoryEntry) {
        match *entry {
            HistoryEntry::Bound { call_id, key, args } => {
                self.call_ids.insert(call_id);
                self.keys.entry(key).or_insert(KeyUse {
                    args,
                    committed: false,
                });
            }
            HistoryEntry::Settled { key } => {
                // A key is spent only after it was bound; an entry for an unknown key still
                // marks it, so that nothing the log says was spent can be bound again.
                self.keys
                    .entry(key)
                    .or_insert(KeyUse {
                        args: Digest::default(),
                        committed: true,
                    })
                    .committed = true;
            }
        }
    }

    /// The index's two parts: the fingerprints of the call ids bound, and each key's use.
    pub fn parts(&self) -> (&BTreeSet<Fingerprint>, &BTreeMap<Fingerprint, KeyUse>) {
        (&self.call_ids, &self.keys)
    }

    /// An index of these parts, as [`History::parts`] gave them.
    pub fn of_parts(
        call_ids: BTreeSet<Fingerprint>,
        keys: BTreeMap<Fingerprint, KeyUse>,
    ) -> History {
        History { call_ids, keys }
    }

    /// How many distinct call ids the run has bound.
    pub fn calls(&self) -> usize {
        self.call_ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resumable_kernel::{IdempotencyKey, Name, ToolContract};

    fn call(id: &str, key: &str, args: &[u8]) -> Call {
        Call {
            call_id: Name::new(id).unwrap(),
            tool: Name::lit("t"),
            args: Digest::of(args),
            key: IdempotencyKey::new(key).unwrap(),
            contract: ToolContract {
                dedupes: true,
                query_fences: false,
                max_attempts: 1,
                ..ToolContract::default()
            },
        }
    }

    #[test]
    fn a_new_history_knows_nothing() {
        assert_eq!(History::new().prior(&call("c1", "k1", b"a")), Prior::NONE);
    }

    #[test]
    fn a_bound_call_is_known_by_its_id_and_its_key_by_its_arguments() {
        let mut h = History::new();
        let c1 = call("c1", "k1", b"a");
        h.apply(&HistoryEntry::bound(&c1));
        assert_eq!(
            h.prior(&c1),
            Prior {
                call_id_used: true,
                key: Some(KeyUse {
                    args: c1.args,
                    committed: false
                })
            }
        );
        // Another call under the same key sees the key's first binding.
        let c2 = call("c2", "k1", b"b");
        assert_eq!(
            h.prior(&c2),
            Prior {
                call_id_used: false,
                key: Some(KeyUse {
                    args: c1.args,
                    committed: false
                })
            }
        );
        assert_eq!(h.calls(), 1);
    }

    #[test]
    fn a_settled_key_is_spent_for_every_later_call() {
        let mut h = History::new();
        let c1 = call("c1", "k1", b"a");
        h.apply(&HistoryEntry::bound(&c1));
        h.apply(&HistoryEntry::settled(&c1.key));
        let again = call("c9", "k1", b"a");
        assert_eq!(h.prior(&again).key.map(|k| k.committed), Some(true));
        // Binding the key again does not unspend it.
        h.apply(&HistoryEntry::bound(&again));
        assert_eq!(h.prior(&again).key.map(|k| k.committed), Some(true));
    }
}
