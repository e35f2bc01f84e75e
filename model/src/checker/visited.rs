//! The visited set: the fingerprint of every state the search has kept, shared by its
//! threads.

use super::search::lock;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, MutexGuard};

/// Shards: many more than threads, so that two threads rarely want the same lock at once.
const SHARDS: usize = 1024;

/// Passes a fingerprint through: it is already a hash.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One shard of the visited set, on cache lines of its own: a shard's lock is written at
/// every insert, and two shards on one line would make two threads that never share a shard
/// fight over the line.
#[repr(align(128))]
#[derive(Default)]
struct Shard(Mutex<HashSet<u64, BuildHasherDefault<Identity>>>);

/// The fingerprints of every state generated, in shards chosen by middle bits of the
/// fingerprint (the set itself uses the low bits for its buckets and the top ones for tags).
pub(crate) struct Visited {
    shards: Vec<Shard>,
}

impl Visited {
    pub(crate) fn new() -> Self {
        Visited {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        }
    }

    fn shard(&self, fp: u64) -> MutexGuard<'_, HashSet<u64, BuildHasherDefault<Identity>>> {
        let index = usize::try_from((fp >> 32) % SHARDS as u64).unwrap_or(0);
        // Every shard exists; a poisoned one only means a thread panicked inside `insert`,
        // which leaves the set consistent.
        lock(&self.shards[index].0)
    }

    pub(crate) fn insert(&self, fp: u64) -> bool {
        self.shard(fp).insert(fp)
    }

    pub(crate) fn contains(&self, fp: u64) -> bool {
        self.shard(fp).contains(&fp)
    }
}
