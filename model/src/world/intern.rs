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

/// A set of interned values, sharded so that checker threads rarely wait on each other.
pub struct Interner<T: 'static> {
    shards: [Mutex<HashSet<&'static T>>; SHARDS],
    hasher: std::hash::RandomState,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            shards: std::array::from_fn(|_| Mutex::new(HashSet::new())),
            hasher: std::hash::RandomState::new(),
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
        let shard = usize::try_from(self.hasher.hash_one(&value) % SHARDS as u64).unwrap_or(0);
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
