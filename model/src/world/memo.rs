//! What a worker's step computes, remembered: the lifecycle's `step` and everything the world
//! derives from it (the stored run, the checkpoint, the dispatches, the rules the step
//! breaks) are a function of a few values the state holds by reference, so a step met again
//! in another state (the same run, the same input, at the same time, with the same resource
//! and checkpoints, whatever the other run, the workers or the messages are doing) is looked
//! up instead of computed. This is the kernel's step, with its copies and its checkpoint
//! digests, taken out of most transitions.
//!
//! A step's key (`step.rs`) holds the interned run and checkpoint logs, which compare by
//! address, the same as by value under interning, and the step is computed from its key
//! alone, so a remembered step is exactly the step that would be computed. Each
//! thread keeps its own memo, per world, so threads never wait on each other, and a memo
//! that grows past its bound is emptied and starts again: a bound on memory, never a change
//! in what is computed.

use super::intern::{FastHasher, Interned};
use resumable_kernel::Checkpoint;
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;

type FastBuild = std::hash::BuildHasherDefault<FastHasher>;

/// Steps remembered per thread and world before the memo is emptied.
const MAX_STEPS: usize = 1 << 18;
/// Worlds a thread keeps memos for before it drops them all.
const MAX_WORLDS: usize = 4;

/// Everything LIVE-2's question about one run depends on: whether the run, suspended and
/// not past its expiry, accepts some answer its responsible party can honestly give now.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct AnswerKey {
    /// The world, by id.
    pub(super) world: u64,
    /// The stored run, by address.
    pub(super) run: usize,
    /// The run's checkpoints, by address.
    pub(super) checkpoints: usize,
    /// The clock.
    pub(super) now: u8,
    /// The run's resource.
    pub(super) resource: u8,
    /// The tool's durable side for the run's calls.
    pub(super) tool: (u16, u16, u16),
    /// For a manual intervention, what an honest operator may say, as bits (0 otherwise).
    pub(super) settlements: u8,
}

/// Everything it depends on whether a run accepts its expiry now: the run, once the clock
/// has passed the suspension's expiry (see `World::expiry_due`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct ExpiryKey {
    /// The world, by id.
    pub(super) world: u64,
    /// The stored run, by address.
    pub(super) run: usize,
    /// The clock.
    pub(super) now: u8,
}

thread_local! {
    /// Per world (by id), this thread's remembered steps: a `Steps<K, V>` each.
    static STEPS: RefCell<HashMap<u64, Box<dyn Any>, FastBuild>> =
        RefCell::new(HashMap::default());
    /// This thread's remembered answers to LIVE-2's question, for every world.
    static ANSWERS: RefCell<HashMap<AnswerKey, bool, FastBuild>> =
        RefCell::new(HashMap::default());
    /// This thread's remembered appends to checkpoint logs, by the log's and the
    /// checkpoint's addresses: the same for every world, as the interners are.
    static APPENDS: RefCell<HashMap<(usize, usize), Log, FastBuild>> =
        RefCell::new(HashMap::default());
    /// This thread's remembered answers to whether a run accepts its expiry, for every world.
    static EXPIRIES: RefCell<HashMap<ExpiryKey, bool, FastBuild>> =
        RefCell::new(HashMap::default());
}

/// A run's checkpoint log, interned.
type Log = Interned<Vec<Interned<Checkpoint>>>;

/// `log` with `checkpoint` appended: remembered, or made by `compute` and remembered.
pub(super) fn appended(
    log: Log,
    checkpoint: Interned<Checkpoint>,
    compute: impl FnOnce() -> Log,
) -> Log {
    remembered(&APPENDS, (log.addr(), checkpoint.addr()), compute)
}

/// The value of `key` in `memo`: remembered, or computed by `compute` and remembered.
fn remembered<K: Eq + std::hash::Hash, V: Copy>(
    memo: &'static std::thread::LocalKey<RefCell<HashMap<K, V, FastBuild>>>,
    key: K,
    compute: impl FnOnce() -> V,
) -> V {
    // During a thread's teardown its memo may be gone: the value is then computed.
    let known = memo.try_with(|values| values.borrow().get(&key).copied());
    if let Ok(Some(value)) = known {
        return value;
    }
    let value = compute();
    let _ = memo.try_with(|values| {
        let mut values = values.borrow_mut();
        if values.len() >= MAX_STEPS {
            values.clear();
        }
        values.insert(key, value);
    });
    value
}

/// Whether the run of `key` accepts some honest answer: remembered, or computed by
/// `compute` and remembered.
pub(super) fn answered(key: AnswerKey, compute: impl FnOnce() -> bool) -> bool {
    remembered(&ANSWERS, key, compute)
}

/// Whether the run of `key` accepts its expiry: remembered, or computed by `compute` and
/// remembered.
pub(super) fn expires(key: ExpiryKey, compute: impl FnOnce() -> bool) -> bool {
    remembered(&EXPIRIES, key, compute)
}

/// The steps of one world, by key.
type Steps<K, V> = HashMap<K, V, FastBuild>;

/// The step of `key` in world `world`: remembered, or computed by `compute` and remembered.
/// Right only if `compute` is a function of `key` alone, which the step's type makes it
/// (`step.rs`).
pub(super) fn step<K, V>(world: u64, key: K, compute: impl FnOnce() -> V) -> V
where
    K: Eq + std::hash::Hash + 'static,
    V: Clone + 'static,
{
    // During a thread's teardown its memo may be gone: the step is then computed.
    let known = STEPS.try_with(|steps| {
        let steps = steps.borrow();
        let memo = steps.get(&world)?.downcast_ref::<Steps<K, V>>()?;
        memo.get(&key).cloned()
    });
    if let Ok(Some(stepped)) = known {
        return stepped;
    }
    let stepped = compute();
    let _ = STEPS.try_with(|steps| {
        let mut steps = steps.borrow_mut();
        if !steps.contains_key(&world) && steps.len() >= MAX_WORLDS {
            steps.clear();
        }
        let entry = (steps.entry(world)).or_insert_with(|| Box::new(Steps::<K, V>::default()));
        if let Some(memo) = entry.downcast_mut::<Steps<K, V>>() {
            if memo.len() >= MAX_STEPS {
                memo.clear();
            }
            memo.insert(key, stepped.clone());
        }
    });
    stepped
}
