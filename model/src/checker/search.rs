//! The search: breadth-first, one whole depth (level) at a time, on one or more threads.
//!
//! Why the driver has its own search rather than stateright's checkers: stateright's
//! breadth-first checker gives each thread its own queue, so with two threads a state can be
//! reached first along a longer path and its depth, the counts under a depth bound and the
//! verdicts depend on timing; it cannot stop at the end of the depth of the first violation;
//! it clones each state's whole path of action indices into its queue; and a model's
//! properties are looked up by name in a shared map for every state. Here the states of one
//! depth are all checked and expanded before any state of the next, so:
//! - every state is checked at its shortest distance from an initial state, and the counts,
//!   the depth reached and the verdicts are the same for every thread count and every run;
//! - a depth bound means whole depths: every state within it is checked, none beyond;
//! - stopping at the first violation means finishing its depth and no more, so every
//!   property violated at that depth is found, and its shortest counterexample has that
//!   length.
//!
//! Threads share the current depth's states in chunks claimed with one atomic counter, and a
//! visited set split into many shards behind their own locks. Nothing else is written by
//! more than one thread per chunk: counts are kept per thread and added once per chunk.

use super::crew::Crew;
use super::memory;
use super::report::{Cut, Ended, Progress};
use super::shortest::{fingerprint, Symmetry, Target};
use super::visited::Visited;
use stateright::Model;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// States per chunk: the unit of work a thread claims, and of the next depth's list.
const CHUNK: usize = 256;
/// How often, in states, a thread reads the clock.
const CLOCK_EVERY: usize = 64;
/// How often the memory held is read.
const MEMORY_EVERY: Duration = Duration::from_millis(50);
/// "Not decided" in [`Shared::decided`].
const NONE: usize = usize::MAX;

const STOP_TIME: u8 = 1;
const STOP_STATES: u8 = 2;
const STOP_MEMORY: u8 = 4;
const STOP_PANIC: u8 = 8;

/// The model's persistent subsets, under partial-order reduction.
pub(crate) type Persistent<M> =
    Option<fn(&M, &<M as Model>::State, &mut Vec<<M as Model>::Action>)>;

/// The bounds and settings of a search.
pub(crate) struct Limits {
    pub(crate) threads: usize,
    pub(crate) depth: Option<usize>,
    pub(crate) max_states: Option<usize>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) memory: memory::Bound,
    pub(crate) max_memory_bytes: Option<u64>,
    pub(crate) keep_going: bool,
    pub(crate) started: Instant,
    pub(crate) progress_every: Duration,
}

/// What a search found.
pub(crate) struct Found {
    /// Per target, the depth of the first state that decided it.
    pub(crate) decided: Vec<Option<usize>>,
    pub(crate) ended: Ended,
    pub(crate) cut_by: Vec<Cut>,
    pub(crate) generated: usize,
    pub(crate) unique: usize,
    pub(crate) checked: usize,
    pub(crate) max_depth: usize,
}

/// A worker thread panicked inside the model.
pub(crate) struct Panicked;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Check each state and generate its successors.
    Expand,
    /// The depth bound: check each state, and only look for a successor not yet visited.
    Probe,
}

/// One depth's states, one lane per thread.
pub(crate) struct Level<S> {
    lanes: Vec<Lane<S>>,
    depth: usize,
    mode: Mode,
}

/// A thread's share of a depth: the chunks it kept at the depth before, which it checks
/// before it helps with the other lanes, and the chunks it keeps for the next depth. A state
/// is then most often dropped by the thread that allocated it, whose allocator takes it
/// back without the lock another thread's free would take.
struct Lane<S> {
    chunks: Vec<Mutex<Vec<S>>>,
    claimed: AtomicUsize,
    next: Mutex<Vec<Vec<S>>>,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Counts a thread keeps for one chunk and adds to the shared ones once.
#[derive(Default)]
struct Counts {
    generated: usize,
    unique: usize,
    checked: usize,
}

/// Flags every thread reads at every state and that are written at most a few times: on a
/// cache line of their own, so that the counters written at every chunk do not evict them.
#[repr(align(128))]
#[derive(Default)]
struct Flags {
    /// `STOP_*` bits: a bound fired, every thread stops at once.
    stop: AtomicU8,
    /// Stop expanding: a violation (unless `keep_going`), or every target decided. The
    /// current depth is still checked to its end.
    halt: AtomicBool,
    /// The model's boundary refused a state.
    boundary: AtomicBool,
    /// A state beyond the depth bound exists.
    deeper: AtomicBool,
}

/// Counters each thread adds to once per chunk, on a cache line of their own.
#[repr(align(128))]
#[derive(Default)]
struct Totals {
    /// States claimed for expansion, against `max_states`.
    claimed: AtomicUsize,
    generated: AtomicUsize,
    unique: AtomicUsize,
    checked: AtomicUsize,
}

/// What the threads share during a search.
struct Shared<'a, M: Model> {
    model: &'a M,
    targets: &'a [Target<M>],
    symmetry: Symmetry<M::State>,
    persistent: Persistent<M>,
    keep_going: bool,
    max_states: Option<usize>,
    deadline: Option<Instant>,
    /// Per target, the depth at which a state first decided it, or [`NONE`].
    decided: Vec<AtomicUsize>,
    undecided: AtomicUsize,
    flags: Flags,
    totals: Totals,
    visited: Visited,
}

impl<M: Model> Shared<'_, M>
where
    M::State: std::hash::Hash,
{
    fn fire(&self, bits: u8) {
        self.flags.stop.fetch_or(bits, Relaxed);
    }

    fn stopped(&self) -> bool {
        self.flags.stop.load(Relaxed) != 0
    }

    fn late(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Evaluates every undecided target on `state`, found at `depth`.
    fn judge(&self, state: &M::State, depth: usize) {
        for (target, slot) in self.targets.iter().zip(&self.decided) {
            if slot.load(Relaxed) != NONE || !target.found(self.model, state) {
                continue;
            }
            if slot.fetch_min(depth, Relaxed) == NONE {
                let left = self.undecided.fetch_sub(1, Relaxed).saturating_sub(1);
                if left == 0 || (!target.hit && !self.keep_going) {
                    self.flags.halt.store(true, Relaxed);
                }
            }
        }
    }

    /// The state as the search keeps it: its representative under symmetry.
    fn canonical(&self, state: M::State) -> M::State {
        match self.symmetry {
            Some(representative) => representative(&state),
            None => state,
        }
    }

    /// The actions the search takes in `state`: every enabled one, or under partial-order
    /// reduction the model's persistent subset of them.
    fn actions(&self, state: &M::State, actions: &mut Vec<M::Action>) {
        self.model.actions(state, actions);
        if let Some(persistent) = self.persistent {
            persistent(self.model, state, actions);
        }
    }

    /// Generates the successors of `state` and keeps the new ones. Without `may`, the state
    /// bound is reached: a state with successors fires it instead.
    fn expand(&self, state: &M::State, may: bool, out: &mut Output<'_, M>) {
        let mut actions = std::mem::take(&mut out.actions);
        self.actions(state, &mut actions);
        if !actions.is_empty() && !may {
            actions.clear();
            self.fire(STOP_STATES);
        }
        for action in actions.drain(..) {
            let Some(next) = self.model.next_state(state, action) else {
                continue;
            };
            if !self.model.within_boundary(&next) {
                // Written once: every thread reads this line at every state.
                if !self.flags.boundary.load(Relaxed) {
                    self.flags.boundary.store(true, Relaxed);
                }
                continue;
            }
            out.counts.generated += 1;
            let next = self.canonical(next);
            if self.visited.insert(fingerprint(&next, None)) {
                out.counts.unique += 1;
                out.keep(next);
            }
        }
        out.actions = actions;
    }

    /// Looks for a successor of `state` not yet visited: a state past the depth bound.
    fn probe(&self, state: &M::State, actions: &mut Vec<M::Action>) {
        self.actions(state, actions);
        for action in actions.drain(..) {
            let Some(next) = self.model.next_state(state, action) else {
                continue;
            };
            // A refused state is outside the model; one past the bound is not explored
            // either way.
            if self.model.within_boundary(&next)
                && !self
                    .visited
                    .contains(fingerprint(&self.canonical(next), None))
            {
                self.flags.deeper.store(true, Relaxed);
                break;
            }
        }
    }

    /// Checks (and expands, or probes) one chunk of `level`.
    fn chunk(&self, states: Vec<M::State>, level: &Level<M::State>, out: &mut Output<'_, M>) {
        let allowed = match (self.max_states, level.mode) {
            (Some(max), Mode::Expand) => {
                let before = self.totals.claimed.fetch_add(states.len(), Relaxed);
                max.saturating_sub(before).min(states.len())
            }
            _ => states.len(),
        };
        for (k, state) in states.into_iter().enumerate() {
            if k % CLOCK_EVERY == 0 && self.late() {
                self.fire(STOP_TIME);
            }
            if self.stopped() {
                break;
            }
            self.judge(&state, level.depth);
            out.counts.checked += 1;
            match level.mode {
                Mode::Expand if !self.flags.halt.load(Relaxed) => {
                    self.expand(&state, k < allowed, out)
                }
                Mode::Probe if !self.flags.deeper.load(Relaxed) => {
                    self.probe(&state, &mut out.actions)
                }
                _ => {}
            }
        }
        let counts = std::mem::take(&mut out.counts);
        self.totals.generated.fetch_add(counts.generated, Relaxed);
        self.totals.unique.fetch_add(counts.unique, Relaxed);
        self.totals.checked.fetch_add(counts.checked, Relaxed);
    }

    /// Claims chunks of `level`, from lane `me` first, until none is left, calling
    /// `between` after each.
    fn work(&self, level: &Level<M::State>, me: usize, between: &mut dyn FnMut()) {
        let lanes = level.lanes.len();
        let Some(own) = level.lanes.get(me % lanes.max(1)) else {
            return;
        };
        let mut out = Output {
            next: &own.next,
            buffer: Vec::new(),
            actions: Vec::new(),
            counts: Counts::default(),
        };
        for k in 0..lanes {
            let lane = &level.lanes[(me + k) % lanes];
            while !self.stopped() {
                let index = lane.claimed.fetch_add(1, Relaxed);
                let Some(slot) = lane.chunks.get(index) else {
                    break;
                };
                let states = std::mem::take(&mut *lock(slot));
                self.chunk(states, level, &mut out);
                between();
            }
        }
        out.flush();
    }
}

/// Where a thread puts the states it keeps for the next depth.
struct Output<'a, M: Model> {
    next: &'a Mutex<Vec<Vec<M::State>>>,
    buffer: Vec<M::State>,
    actions: Vec<M::Action>,
    counts: Counts,
}

impl<M: Model> Output<'_, M> {
    fn keep(&mut self, state: M::State) {
        if self.buffer.capacity() == 0 {
            self.buffer.reserve_exact(CHUNK);
        }
        self.buffer.push(state);
        if self.buffer.len() >= CHUNK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.buffer.is_empty() {
            lock(self.next).push(std::mem::take(&mut self.buffer));
        }
    }
}

/// What the calling thread does between chunks: fire the time and memory bounds, report
/// progress. Only it calls the caller's progress function, which need not be `Send`.
struct Monitor<'p> {
    progress: &'p mut dyn FnMut(&Progress),
    every: Duration,
    next_progress: Instant,
    next_memory: Instant,
    started: Instant,
    memory: memory::Bound,
    max_memory_bytes: Option<u64>,
}

impl Monitor<'_> {
    fn tick<M: Model>(&mut self, shared: &Shared<'_, M>, depth: usize)
    where
        M::State: std::hash::Hash,
    {
        let now = Instant::now();
        if shared.late() {
            shared.fire(STOP_TIME);
        }
        if now >= self.next_memory {
            self.next_memory = now + MEMORY_EVERY;
            if self.memory.crossed() {
                shared.fire(STOP_MEMORY);
            }
        }
        if now >= self.next_progress {
            self.next_progress = now + self.every;
            (self.progress)(&Progress {
                generated: shared.totals.generated.load(Relaxed),
                unique: shared.totals.unique.load(Relaxed),
                depth,
                elapsed: now - self.started,
                resident_bytes: memory::resident_bytes(),
                max_memory_bytes: self.max_memory_bytes,
            });
        }
    }
}

impl<M> Shared<'_, M>
where
    M: Model + Sync,
    M::State: std::hash::Hash + Send + Sync,
    M::Action: Send,
{
    /// Helper `me`'s part in one depth.
    fn help(&self, level: &Level<M::State>, me: usize) {
        if catch_unwind(AssertUnwindSafe(|| self.work(level, me, &mut || {}))).is_err() {
            self.fire(STOP_PANIC);
        }
    }

    /// Checks and expands one depth with the crew (the calling thread among them), then
    /// returns the next depth's states.
    fn level(
        &self,
        level: Arc<Level<M::State>>,
        crew: &Crew<M::State>,
        monitor: &mut Monitor<'_>,
    ) -> Result<Vec<Vec<Vec<M::State>>>, Panicked> {
        let depth = level.depth;
        crew.start(Arc::clone(&level));
        let mine = catch_unwind(AssertUnwindSafe(|| {
            self.work(&level, 0, &mut || monitor.tick(self, depth));
        }));
        if mine.is_err() {
            self.fire(STOP_PANIC);
        }
        crew.wait(&mut || monitor.tick(self, depth));
        if self.flags.stop.load(Relaxed) & STOP_PANIC != 0 {
            return Err(Panicked);
        }
        let next = (level.lanes.iter())
            .map(|lane| std::mem::take(&mut *lock(&lane.next)))
            .collect();
        Ok(next)
    }
}

/// The level of `depth` whose lanes hold `chunks` (one list per thread).
fn level_of<S>(chunks: Vec<Vec<Vec<S>>>, depth: usize, bound: Option<usize>) -> Arc<Level<S>> {
    let lanes = (chunks.into_iter())
        .map(|chunks| Lane {
            chunks: chunks.into_iter().map(Mutex::new).collect(),
            claimed: AtomicUsize::new(0),
            next: Mutex::new(Vec::new()),
        })
        .collect();
    Arc::new(Level {
        lanes,
        depth,
        mode: if bound == Some(depth) {
            Mode::Probe
        } else {
            Mode::Expand
        },
    })
}

/// Explores `model` breadth-first within `limits`, deciding each target.
pub(crate) fn search<M>(
    model: &M,
    targets: &[Target<M>],
    (symmetry, persistent): (Symmetry<M::State>, Persistent<M>),
    limits: &Limits,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Found, Panicked>
where
    M: Model + Sync,
    M::State: std::hash::Hash + Send + Sync,
    M::Action: Send,
{
    let shared = Shared {
        model,
        targets,
        symmetry,
        persistent,
        keep_going: limits.keep_going,
        decided: targets.iter().map(|_| AtomicUsize::new(NONE)).collect(),
        undecided: AtomicUsize::new(targets.len()),
        visited: Visited::new(),
        flags: Flags::default(),
        totals: Totals::default(),
        max_states: limits.max_states,
        deadline: limits.deadline,
    };
    let mut monitor = Monitor {
        progress,
        every: limits.progress_every,
        next_progress: limits.started + limits.progress_every,
        next_memory: Instant::now(),
        started: limits.started,
        memory: limits.memory,
        max_memory_bytes: limits.max_memory_bytes,
    };
    let mut first = Vec::new();
    for state in model.init_states() {
        if !model.within_boundary(&state) {
            shared.flags.boundary.store(true, Relaxed);
            continue;
        }
        shared.totals.generated.fetch_add(1, Relaxed);
        let state = shared.canonical(state);
        if shared.visited.insert(fingerprint(&state, None)) {
            shared.totals.unique.fetch_add(1, Relaxed);
            first.push(state);
        }
    }
    let mut chunks = Vec::new();
    while first.len() > CHUNK {
        let rest = first.split_off(CHUNK);
        chunks.push(std::mem::replace(&mut first, rest));
    }
    chunks.push(first);
    // The initial states go to the calling thread's lane; the others help with it.
    let threads = limits.threads.max(1);
    let mut lanes: Vec<Vec<Vec<M::State>>> = (0..threads).map(|_| Vec::new()).collect();
    lanes[0] = chunks;
    let level = level_of(lanes, 0, limits.depth);
    let crew = Crew::new();
    let (ended, max_depth) = std::thread::scope(|scope| {
        let helping = &shared;
        for n in 1..threads {
            crew.hire(scope, n, move |level| helping.help(level, n));
        }
        let _dismissal = crew.dismissal();
        levels(&shared, level, &crew, limits, &mut monitor)
    })?;
    Ok(finish(shared, ended, max_depth))
}

/// Checks depth after depth until the search ends; returns how, and the deepest depth
/// checked.
fn levels<M>(
    shared: &Shared<'_, M>,
    mut level: Arc<Level<M::State>>,
    crew: &Crew<M::State>,
    limits: &Limits,
    monitor: &mut Monitor<'_>,
) -> Result<(Ended, usize), Panicked>
where
    M: Model + Sync,
    M::State: std::hash::Hash + Send + Sync,
    M::Action: Send,
{
    let mut max_depth = 0;
    let ended = loop {
        monitor.tick(shared, level.depth);
        // The figures of a depth cut short by a stop are those at its start, so that they
        // do not depend on how far each thread got.
        let before = (
            shared.totals.generated.load(Relaxed),
            shared.totals.unique.load(Relaxed),
        );
        let next = shared.level(Arc::clone(&level), crew, monitor)?;
        if shared.totals.checked.load(Relaxed) > 0 {
            max_depth = level.depth;
        }
        if shared.stopped() {
            break Ended::Cut;
        }
        if shared.flags.halt.load(Relaxed) {
            shared.totals.generated.store(before.0, Relaxed);
            shared.totals.unique.store(before.1, Relaxed);
            break match shared.undecided.load(Relaxed) {
                0 => Ended::Decided,
                _ => Ended::Stopped,
            };
        }
        if level.mode == Mode::Probe || next.iter().all(Vec::is_empty) {
            break Ended::Exhausted;
        }
        level = level_of(next, level.depth + 1, limits.depth);
    };
    Ok((ended, max_depth))
}

/// The figures and verdict inputs once the threads are done.
fn finish<M: Model>(shared: Shared<'_, M>, ended: Ended, max_depth: usize) -> Found {
    let stop = shared.flags.stop.load(Relaxed);
    let mut cut_by = Vec::new();
    if shared.flags.deeper.load(Relaxed) {
        cut_by.push(Cut::Depth);
    }
    for (bit, cut) in [
        (STOP_STATES, Cut::States),
        (STOP_TIME, Cut::Time),
        (STOP_MEMORY, Cut::Memory),
    ] {
        if stop & bit != 0 {
            cut_by.push(cut);
        }
    }
    if shared.flags.boundary.load(Relaxed) {
        cut_by.push(Cut::Boundary);
    }
    // A stop or a decision ends the search with final verdicts only for what was decided;
    // an exhausted search is cut by whatever refused or withheld states.
    let ended = match ended {
        Ended::Exhausted if !cut_by.is_empty() => Ended::Cut,
        other => other,
    };
    Found {
        decided: (shared.decided.iter())
            .map(|d| Some(d.load(Relaxed)).filter(|&d| d != NONE))
            .collect(),
        ended,
        cut_by,
        generated: shared.totals.generated.load(Relaxed),
        unique: shared.totals.unique.load(Relaxed),
        checked: shared.totals.checked.load(Relaxed),
        max_depth,
    }
}
