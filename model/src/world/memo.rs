//! What a worker's step computes, remembered: the lifecycle's `step` and everything the world
//! derives from it (the stored run, the checkpoint, the dispatches, the rules the step
//! breaks) are a function of a few values the state holds by reference, so a step met again
//! in another state (the same run, the same input, at the same time, with the same resource
//! and checkpoints, whatever the other run, the workers or the messages are doing) is looked
//! up instead of computed. This is the kernel's step, with its copies and its checkpoint
//! digests, taken out of most transitions.
//!
//! The key holds the interned run and checkpoint logs by address, which interning makes the
//! same as by value, so a remembered step is exactly the step that would be computed. Each
//! thread keeps its own memo, per world, so threads never wait on each other, and a memo
//! that grows past its bound is emptied and starts again: a bound on memory, never a change
//! in what is computed.

use super::intern::{FastHasher, Interned};
use super::{Choice, StagedStep};
use resumable_kernel::Checkpoint;
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;

type FastBuild = std::hash::BuildHasherDefault<FastHasher>;

/// Steps remembered per thread and world before the memo is emptied.
const MAX_STEPS: usize = 1 << 18;
/// Worlds a thread keeps memos for before it drops them all.
const MAX_WORLDS: usize = 4;

/// Everything a worker's step depends on.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct StepKey {
    /// The run's index.
    pub(super) r: u8,
    /// The stored run (with its call history), by address.
    pub(super) run: usize,
    /// The input as the world chose it.
    pub(super) choice: Choice,
    /// The clock.
    pub(super) now: u8,
    /// The run's resource, which resumes are fed as their facts.
    pub(super) resource: u8,
    /// The run's checkpoints, by address.
    pub(super) checkpoints: usize,
    /// For a decision, the checkpoints of the run it was made on, by address.
    pub(super) source: usize,
    /// The framework changed the gated call's arguments in the agent's state: what a worker
    /// that hands out the agent's arguments sends (spec APR-5).
    pub(super) changed: bool,
}

/// What a worker's step came to, before the world's messages and budgets are touched.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum StepOutcome<R: 'static> {
    /// No such step: the input cannot be built, or the step overflows the world's bounds.
    Impossible,
    /// The lifecycle refused the input.
    Refused {
        /// The input was a resume whose facts differ from its checkpoint's resource.
        moved: bool,
        /// ID-1 is broken: a foreign checkpoint was refused for something else first.
        id1: bool,
    },
    /// The lifecycle accepted it: the step the worker holds.
    Accepted {
        /// As above.
        moved: bool,
        /// The step, interned.
        staged: Interned<StagedStep<R>>,
    },
}

type Steps<R> = HashMap<StepKey, StepOutcome<R>, FastBuild>;

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

/// In debug builds, one remembered step in this many is computed again and compared.
const CHECK_EVERY: u64 = 8;

thread_local! {
    /// This thread's remembered steps handed out, for [`CHECK_EVERY`].
    static HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Per world (by id), this thread's remembered steps: a `Steps<R>` each.
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

/// The step of `key` in world `world`: remembered, or computed by `compute` and remembered.
///
/// The memo is right only if `compute` is a function of `key` alone. Debug builds check it
/// on one remembered step in [`CHECK_EVERY`] (counted per thread, so the same ones each
/// run): the step is computed afresh and must be the one remembered (interned, so the same
/// value is the same address), or a read of something the key does not hold has crept into
/// the step.
pub(super) fn step<R: Clone + PartialEq + std::fmt::Debug + 'static>(
    world: u64,
    key: StepKey,
    compute: impl Fn() -> StepOutcome<R>,
) -> StepOutcome<R> {
    // During a thread's teardown its memo may be gone: the step is then computed.
    let known = STEPS.try_with(|steps| {
        let steps = steps.borrow();
        let memo = steps.get(&world)?.downcast_ref::<Steps<R>>()?;
        memo.get(&key).cloned()
    });
    if let Ok(Some(stepped)) = known {
        if cfg!(debug_assertions)
            && HITS
                .with(|n| n.replace(n.get().wrapping_add(1)))
                .is_multiple_of(CHECK_EVERY)
        {
            assert_eq!(
                stepped,
                compute(),
                "a remembered step differs from the step computed afresh, under {key:?}"
            );
        }
        return stepped;
    }
    let stepped = compute();
    let _ = STEPS.try_with(|steps| {
        let mut steps = steps.borrow_mut();
        if !steps.contains_key(&world) && steps.len() >= MAX_WORLDS {
            steps.clear();
        }
        let entry = (steps.entry(world)).or_insert_with(|| Box::new(Steps::<R>::default()));
        if let Some(memo) = entry.downcast_mut::<Steps<R>>() {
            if memo.len() >= MAX_STEPS {
                memo.clear();
            }
            memo.insert(key, stepped.clone());
        }
    });
    stepped
}

#[cfg(test)]
mod tests {
    use super::{step, StepKey, StepOutcome, CHECK_EVERY};
    use crate::world::Choice;

    /// A step that is not a function of its key (here: a different answer the second time)
    /// is caught in debug builds within `CHECK_EVERY` remembered steps.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "differs from the step computed afresh")]
    fn a_step_that_reads_outside_its_key_is_caught() {
        let key = StepKey {
            r: 0,
            run: 1,
            choice: Choice::Cancel,
            now: 0,
            resource: 0,
            checkpoints: 2,
            source: 0,
            changed: false,
        };
        let refused = |moved| StepOutcome::<u8>::Refused { moved, id1: false };
        let world = u64::MAX;
        step(world, key, || refused(false));
        for _ in 0..CHECK_EVERY {
            step(world, key, || refused(true));
        }
    }

    /// The same step, remembered and checked again and again, passes.
    #[test]
    fn a_step_of_its_key_alone_passes_the_check() {
        let key = StepKey {
            r: 1,
            run: 3,
            choice: Choice::Cancel,
            now: 1,
            resource: 0,
            checkpoints: 4,
            source: 0,
            changed: false,
        };
        let world = u64::MAX - 1;
        let first = step(world, key, || StepOutcome::<u8>::Impossible);
        for _ in 0..2 * CHECK_EVERY {
            assert_eq!(step(world, key, || StepOutcome::<u8>::Impossible), first);
        }
    }
}
