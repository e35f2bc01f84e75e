//! Hash-consing for the large values a state holds (runs and checkpoints, hundreds of bytes
//! each): a state keeps an [`Interned`] reference, so cloning, hashing and comparing a state touch
//! a pointer instead of the value.
//!
//! Equal values are interned to the same reference, so pointer equality is value equality and
//! the checker sees exactly the states it would see with the values inline. There is one
//! interner per type for the whole process ([`Interner::global`]), so states built by two
//! worlds compare as they should. Interned values live for the rest of the process: a check
//! produces a few thousand distinct runs and checkpoints, far fewer than states, and never
//! frees one it might meet again.
//!
//! Each thread keeps its own index of the values it has interned, in front of the shared
//! one: the same few thousand values are interned again and again, and with the shared index
//! alone every lookup took a lock whose cache line the other checker thread had just written,
//! so two threads spent their time passing lines between cores. A thread takes the shared
//! lock only for a value it has not met yet.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::sync::OnceLock;

/// A reference to an interned value. Equality and hashing are by address, which interning
/// makes the same as by value.
pub struct Interned<T: 'static>(&'static T);

impl<T> Clone for Interned<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Interned<T> {}

impl<T> PartialEq for Interned<T> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl<T> Eq for Interned<T> {}

/// Ordered by address: an arbitrary but total order, consistent with equality, which is all
/// a canonical order of workers needs.
impl<T> PartialOrd for Interned<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Interned<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0 as *const T).cmp(&(other.0 as *const T))
    }
}

impl<T> Interned<T> {
    /// The value's address: its identity, since interning makes equal values one.
    pub fn addr(&self) -> usize {
        std::ptr::from_ref(self.0) as usize
    }

    /// The value, for as long as the process lives (interned values are never freed): a
    /// borrow of it does not hold the reference it was read through.
    pub fn value(self) -> &'static T {
        self.0
    }
}

impl<T> Hash for Interned<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.0, state);
    }
}

impl<T> Deref for Interned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for Interned<T> {
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

impl FastHasher {
    fn mix(&mut self, word: u64) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length keeps "ab" and "ab\0" apart.
            self.mix(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.mix(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hasher for keys that are already hashes.
#[derive(Default, Clone, Copy)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FastBuild = std::hash::BuildHasherDefault<FastHasher>;
type Buckets<T> = HashMap<u64, Vec<&'static T>, std::hash::BuildHasherDefault<PassThrough>>;

/// A set of interned values, sharded so that checker threads rarely wait on each other, and
/// keyed by the value's hash so that a lookup hashes the value once.
pub struct Interner<T: 'static> {
    shards: [Mutex<Buckets<T>>; SHARDS],
    /// Names this interner in the threads' own indexes.
    id: u64,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Interner {
            shards: std::array::from_fn(|_| Mutex::new(HashMap::default())),
            id: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }
}

thread_local! {
    /// Per interner (by id), the values this thread has interned: a `Buckets<T>` each.
    static LOCAL: RefCell<HashMap<u64, Box<dyn Any>, FastBuild>> =
        RefCell::new(HashMap::default());
}

impl<T> fmt::Debug for Interner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Interner")
    }
}

impl<T: Hash + Eq + Send + Sync + 'static> Interner<T> {
    /// The process's interner for `T`, made on first use.
    pub fn global() -> &'static Interner<T> {
        type Registry = Mutex<HashMap<TypeId, &'static (dyn Any + Send + Sync)>>;
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        let registry = REGISTRY.get_or_init(Registry::default);
        let mut map = match registry.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let entry = map.entry(TypeId::of::<T>()).or_insert_with(|| {
            let interner: &'static Interner<T> = Box::leak(Box::default());
            interner
        });
        // The entry for `TypeId::of::<T>()` is only ever an `Interner<T>`, so the downcast
        // cannot fail; a fresh interner keeps the function total rather than panicking.
        match entry.downcast_ref::<Interner<T>>() {
            Some(interner) => interner,
            None => Box::leak(Box::default()),
        }
    }

    /// The shared reference for `value`, interning it if it is new.
    pub fn intern(&self, value: T) -> Interned<T> {
        let hash = FastBuild::default().hash_one(&value);
        // During a thread's teardown its index may be gone: the shared one still answers.
        let known = LOCAL.try_with(|local| {
            let local = local.borrow();
            let buckets = local.get(&self.id)?.downcast_ref::<Buckets<T>>()?;
            buckets.get(&hash)?.iter().find(|e| ***e == value).copied()
        });
        if let Ok(Some(existing)) = known {
            return Interned(existing);
        }
        let shared = self.intern_shared(hash, value);
        let _ = LOCAL.try_with(|local| {
            let mut local = local.borrow_mut();
            let entry = (local.entry(self.id)).or_insert_with(|| Box::new(Buckets::<T>::default()));
            if let Some(buckets) = entry.downcast_mut::<Buckets<T>>() {
                buckets.entry(hash).or_default().push(shared.0);
            }
        });
        shared
    }

    /// [`Interner::intern`] through the shared index.
    fn intern_shared(&self, hash: u64, value: T) -> Interned<T> {
        let shard = usize::try_from(hash % SHARDS as u64).unwrap_or(0);
        // A poisoned shard only means another thread panicked while inserting; the map itself
        // is still consistent (insertion is the only mutation), so keep using it.
        let mut buckets = match self.shards[shard].lock() {
            Ok(b) => b,
            Err(poisoned) => poisoned.into_inner(),
        };
        let bucket = buckets.entry(hash).or_default();
        if let Some(&existing) = bucket.iter().find(|e| ***e == value) {
            return Interned(existing);
        }
        let leaked: &'static T = Box::leak(Box::new(value));
        bucket.push(leaked);
        Interned(leaked)
    }
}
