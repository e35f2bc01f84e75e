//! Hash-consing for the large values a state holds (runs and checkpoints, hundreds of bytes
//! each): a state keeps a [`Shared`] reference, so cloning, hashing and comparing a state touch
//! a pointer instead of the value.
//!
//! Equal values are interned to the same reference, so pointer equality is value equality and
//! the checker sees exactly the states it would see with the values inline. Interned values
//! live for the rest of the process: a check produces a few thousand distinct runs and
//! checkpoints, far fewer than states, and never frees one it might meet again.

use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Deref;
use std::sync::Mutex;

/// A reference to an interned value. Equality and hashing are by address, which interning
/// makes the same as by value.
pub struct Shared<T: 'static>(&'static T);

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Shared<T> {}

impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl<T> Eq for Shared<T> {}

/// Ordered by address: an arbitrary but total order, consistent with equality, which is all
/// a canonical order of workers needs.
impl<T> PartialOrd for Shared<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Shared<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0 as *const T).cmp(&(other.0 as *const T))
    }
}

impl<T> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.0, state);
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

const SHARDS: usize = 16;

/// A multiply-rotate hasher in the manner of rustc's `FxHasher`: not resistant to chosen
/// inputs, which interning the model's own values does not need, and several times faster
/// than the standard SipHash on values of hundreds of bytes.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FastBuild = std::hash::BuildHasherDefault<FastHasher>;

/// A set of interned values, sharded so that checker threads rarely wait on each other.
pub struct Interner<T: 'static> {
    shards: [Mutex<HashSet<&'static T, FastBuild>>; SHARDS],
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            shards: std::array::from_fn(|_| Mutex::new(HashSet::default())),
        }
    }
}

impl<T> fmt::Debug for Interner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Interner")
    }
}

impl<T: Hash + Eq + Send + Sync + 'static> Interner<T> {
    /// The shared reference for `value`, interning it if it is new.
    pub fn intern(&self, value: T) -> Shared<T> {
        let hash = FastBuild::default().hash_one(&value);
        // The low bits pick the shard; the set rehashes with the same function, which is
        // cheap next to a lookup's comparisons.
        let shard = usize::try_from(hash % SHARDS as u64).unwrap_or(0);
        // A poisoned shard only means another thread panicked while inserting; the set itself
        // is still consistent (insertion is the only mutation), so keep using it.
        let mut set = match self.shards[shard].lock() {
            Ok(set) => set,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(&existing) = set.get(&value) {
            return Shared(existing);
        }
        let leaked: &'static T = Box::leak(Box::new(value));
        set.insert(leaked);
        Shared(leaked)
    }
}
