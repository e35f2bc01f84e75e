//! The model stateright actually runs: the user's model wrapped so that the driver can stop
//! it, count what it expanded, and see every state the boundary cut.
//!
//! stateright offers no way to stop a running checker from outside, and its own timeout is
//! only seen by a worker that runs out of local work or shares work with another thread, so
//! with one thread it never fires. The wrapper stops the search from the inside instead: once
//! a bound is reached, `actions` withholds every successor, the workers drain what is already
//! queued (checking the properties of those states, which is cheap) and finish.

use stateright::{Expectation, Model, Path, Property};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The time bound was reached.
pub(crate) const STOP_TIME: u8 = 1;
/// The state bound was reached.
pub(crate) const STOP_STATES: u8 = 2;

/// How often, in expanded states, the wrapper reads the clock: reading it for every state
/// would cost about a tenth of the throughput of a lean model.
const CLOCK_EVERY: usize = 64;

/// What the driver and the wrapped model share while a check runs.
#[derive(Debug)]
pub(crate) struct Control {
    /// States whose actions were computed: each state the checker popped and did not skip
    /// for depth. Compared with the number of states queued, it reveals a depth cut.
    pub(crate) expanded: AtomicUsize,
    /// Which bounds have fired (`STOP_*` bits).
    pub(crate) stop: AtomicU8,
    /// At least one successor was withheld because a bound had fired.
    pub(crate) withheld: AtomicBool,
    /// The model's own `within_boundary` refused at least one state.
    pub(crate) boundary: AtomicBool,
    /// While false the wrapper is transparent: used when stateright replays discovery paths
    /// after the run, which must not count or be cut.
    active: AtomicBool,
    deadline: Option<Instant>,
    max_states: Option<usize>,
}

impl Control {
    pub(crate) fn new(deadline: Option<Instant>, max_states: Option<usize>) -> Self {
        Control {
            expanded: AtomicUsize::new(0),
            stop: AtomicU8::new(0),
            withheld: AtomicBool::new(false),
            boundary: AtomicBool::new(false),
            active: AtomicBool::new(true),
            deadline,
            max_states,
        }
    }

    /// Fires a bound from outside the workers (the driver's own clock check).
    pub(crate) fn fire(&self, bound: u8) {
        self.stop.fetch_or(bound, Ordering::Relaxed);
    }

    /// Makes the wrapper transparent; called once every worker has finished.
    pub(crate) fn deactivate(&self) {
        self.active.store(false, Ordering::SeqCst);
    }

    fn should_stop(&self, expanded_before: usize) -> bool {
        if self.stop.load(Ordering::Relaxed) != 0 {
            return true;
        }
        if self.max_states.is_some_and(|max| expanded_before >= max) {
            self.fire(STOP_STATES);
            return true;
        }
        if expanded_before.is_multiple_of(CLOCK_EVERY)
            && self
                .deadline
                .is_some_and(|deadline| Instant::now() >= deadline)
        {
            self.fire(STOP_TIME);
            return true;
        }
        false
    }
}

/// A property condition of the user's model.
pub(crate) type Condition<M> = fn(&M, &<M as Model>::State) -> bool;

/// The user's model, guarded by the driver's bounds.
pub(crate) struct Guarded<M: Model> {
    pub(crate) inner: M,
    /// The user's properties, in order: expectation, condition. They are registered with
    /// stateright under the keys of [`key_at`], not under their own names.
    properties: Vec<(Expectation, Condition<M>)>,
    control: Arc<Control>,
    /// The `sometimes` properties are registered as the two stand-ins of [`Combined`] rather
    /// than one by one (see there).
    combined: Option<Combined>,
}

/// How the wrapper checks a model's `sometimes` properties when their paths are not wanted.
///
/// For every state it checks, stateright looks each property up in its map of discoveries,
/// and each time a `sometimes` holds it clones the path to the state into that map: for a
/// model with many `sometimes` properties true in many states, this bookkeeping cost more
/// than the model itself. In combined mode the wrapper registers, after the user's `always`
/// properties, two stand-ins instead, and keeps the verdicts itself: a `sometimes` is
/// evaluated until some state satisfies it, then marked reached and no longer evaluated.
///
/// The stand-ins give stateright exactly the answers that matter to its search, so that the
/// states explored, the counts and the `always` paths are those of registering every
/// property:
/// - stateright stops once every property has a discovery. [`FIRST`] is discovered at the
///   first state checked; [`ALL_REACHED`] at the state that reaches the last `sometimes`
///   (the state at which the separate properties would all be discovered).
/// - stateright stops expanding a block early at a state that decides every property by
///   itself: one violating every `always` and satisfying every `sometimes`. In such a state,
///   and only there, [`FIRST`] holds and [`ALL_REACHED`] fails.
///
/// Paths to `sometimes` properties are lost, so the mode is used only when no witness is
/// asked for.
struct Combined {
    /// Per user property: some checked state decided it (an `always` false, a `sometimes`
    /// true). Kept for `always` properties too, to know when all are violated.
    decided: Vec<AtomicBool>,
    /// `always` properties not yet violated.
    always_left: AtomicUsize,
    /// `sometimes` properties not yet reached.
    sometimes_left: AtomicUsize,
    /// [`FIRST`] has been discovered.
    first_done: AtomicBool,
    /// [`ALL_REACHED`] has been discovered.
    all_reached_done: AtomicBool,
}

/// The key of the stand-in discovered at the first state checked.
const FIRST: &str = "sometimes: first";
/// The key of the stand-in discovered once every `sometimes` is reached.
const ALL_REACHED: &str = "sometimes: all reached";

impl<M: Model> Guarded<M> {
    /// Wraps `inner`, or returns `None` when it has more properties than [`LIMIT`]. With
    /// `combine`, its `sometimes` properties are checked in combined mode (see [`Combined`]).
    pub(crate) fn new(inner: M, control: Arc<Control>, combine: bool) -> Option<Self> {
        let properties: Vec<_> = (inner.properties().into_iter())
            .map(|p| (p.expectation, p.condition))
            .collect();
        if properties.len() > LIMIT {
            return None;
        }
        let count = |kind: Expectation| properties.iter().filter(|(e, _)| *e == kind).count();
        let sometimes = count(Expectation::Sometimes);
        let combined = (combine && sometimes > 0).then(|| Combined {
            decided: properties.iter().map(|_| AtomicBool::new(false)).collect(),
            always_left: AtomicUsize::new(count(Expectation::Always)),
            sometimes_left: AtomicUsize::new(sometimes),
            first_done: AtomicBool::new(false),
            all_reached_done: AtomicBool::new(false),
        });
        Some(Guarded {
            inner,
            properties,
            control,
            combined,
        })
    }

    /// In combined mode, whether some checked state satisfied the user's `sometimes`
    /// property `index`; `None` when stateright's discoveries say it.
    pub(crate) fn reached(&self, index: usize) -> Option<bool> {
        let combined = self.combined.as_ref()?;
        let decided = combined.decided.get(index)?;
        Some(decided.load(Ordering::SeqCst))
    }

    /// Marks user property `index` decided; counts it down the first time.
    fn decide(combined: &Combined, index: usize, left: &AtomicUsize) {
        if (combined.decided.get(index)).is_some_and(|d| !d.swap(true, Ordering::Relaxed)) {
            left.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether this state violates every `always` property and satisfies every `sometimes`:
    /// the one case in which the stand-ins must tell stateright to stop expanding its block.
    /// Costs nothing until every `always` has been violated somewhere, which a correct model
    /// never reaches.
    fn decides_everything(&self, combined: &Combined, state: &M::State) -> bool {
        if combined.always_left.load(Ordering::Relaxed) != 0 {
            return false;
        }
        (self.properties.iter()).all(|(expectation, condition)| {
            condition(&self.inner, state) == (*expectation == Expectation::Sometimes)
        })
    }
}

/// Property conditions are plain `fn` pointers that receive the model, so the wrapper cannot
/// hand stateright a closure over the user's condition. Instead each position `I` gets its
/// own monomorphised function that calls the user's `I`-th condition.
fn condition<M: Model, const I: usize>(guarded: &Guarded<M>, state: &M::State) -> bool {
    // `Guarded::properties` only builds entry `I` when the user's property `I` exists, so the
    // `None` arm cannot be taken; "holds" is the answer that cannot invent a discovery.
    let Some((expectation, condition)) = guarded.properties.get(I) else {
        return true;
    };
    let holds = condition(&guarded.inner, state);
    if let Some(combined) = &guarded.combined {
        if !holds && *expectation == Expectation::Always {
            Guarded::<M>::decide(combined, I, &combined.always_left);
        }
    }
    holds
}

/// The stand-in [`FIRST`] (a `sometimes`): evaluates every `sometimes` not yet reached on
/// this state, then holds at the first state checked and wherever
/// [`Guarded::decides_everything`].
fn first<M: Model>(guarded: &Guarded<M>, state: &M::State) -> bool {
    let Some(combined) = &guarded.combined else {
        return false;
    };
    for (i, (expectation, condition)) in guarded.properties.iter().enumerate() {
        if *expectation == Expectation::Sometimes
            && (combined.decided.get(i)).is_some_and(|d| !d.load(Ordering::Relaxed))
            && condition(&guarded.inner, state)
        {
            Guarded::<M>::decide(combined, i, &combined.sometimes_left);
        }
    }
    (!combined.first_done.load(Ordering::Relaxed)
        && !combined.first_done.swap(true, Ordering::Relaxed))
        || guarded.decides_everything(combined, state)
}

/// The stand-in [`ALL_REACHED`] (an `always`): fails once, when every `sometimes` has been
/// reached, and wherever [`Guarded::decides_everything`]. Registered after [`FIRST`], which
/// evaluates the `sometimes` properties on the state first.
fn all_reached<M: Model>(guarded: &Guarded<M>, state: &M::State) -> bool {
    let Some(combined) = &guarded.combined else {
        return true;
    };
    let announce = combined.sometimes_left.load(Ordering::Relaxed) == 0
        && !combined.all_reached_done.load(Ordering::Relaxed)
        && !combined.all_reached_done.swap(true, Ordering::Relaxed);
    !(announce || guarded.decides_everything(combined, state))
}

type GuardedCondition<M> = fn(&Guarded<M>, &<M as Model>::State) -> bool;

macro_rules! condition_table {
    ($($i:literal)*) => {
        fn condition_at<M: Model>(index: usize) -> Option<GuardedCondition<M>> {
            match index {
                $($i => Some(condition::<M, $i> as GuardedCondition<M>),)*
                _ => None,
            }
        }

        /// The name under which the wrapper registers the user's property `index` with
        /// stateright: its position, e.g. "7". stateright looks every property up by name in
        /// a map of discoveries for every state it checks, hashing the name each time; a
        /// model's own names are whole sentences, and hashing them was a large part of the
        /// time per state. The driver maps the keys back to the user's properties.
        pub(crate) fn key_at(index: usize) -> Option<&'static str> {
            match index {
                $($i => Some(stringify!($i)),)*
                _ => None,
            }
        }

        /// The most properties a model may have.
        pub(crate) const LIMIT: usize = [$($i),*].len();
    };
}

condition_table!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
    62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91
    92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115
    116 117 118 119 120 121 122 123 124 125 126 127
);

impl<M: Model> Model for Guarded<M> {
    type State = M::State;
    type Action = M::Action;

    fn init_states(&self) -> Vec<M::State> {
        self.inner.init_states()
    }

    fn actions(&self, state: &M::State, actions: &mut Vec<M::Action>) {
        let control = &self.control;
        if !control.active.load(Ordering::Relaxed) {
            self.inner.actions(state, actions);
            return;
        }
        let expanded_before = control.expanded.fetch_add(1, Ordering::Relaxed);
        // Once a successor has been withheld the run is cut anyway: the workers only drain
        // their queues, so computing actions that would be withheld too is wasted work.
        if control.withheld.load(Ordering::Relaxed) {
            return;
        }
        let before = actions.len();
        self.inner.actions(state, actions);
        // A terminal state loses nothing to a bound, so it does not make the run incomplete.
        if actions.len() > before && control.should_stop(expanded_before) {
            actions.truncate(before);
            control.withheld.store(true, Ordering::Relaxed);
        }
    }

    fn next_state(&self, last: &M::State, action: M::Action) -> Option<M::State> {
        self.inner.next_state(last, action)
    }

    fn format_action(&self, action: &M::Action) -> String
    where
        M::Action: std::fmt::Debug,
    {
        self.inner.format_action(action)
    }

    fn format_step(&self, last: &M::State, action: M::Action) -> Option<String>
    where
        M::State: std::fmt::Debug,
    {
        self.inner.format_step(last, action)
    }

    fn as_svg(&self, path: Path<M::State, M::Action>) -> Option<String> {
        self.inner.as_svg(path)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let combined = self.combined.is_some();
        let mut registered: Vec<Property<Self>> = (self.properties.iter().enumerate())
            .filter(|(_, (expectation, _))| !combined || *expectation != Expectation::Sometimes)
            .filter_map(|(i, (expectation, _))| {
                let name = key_at(i)?;
                condition_at::<M>(i).map(|condition| Property {
                    expectation: expectation.clone(),
                    name,
                    condition,
                })
            })
            .collect();
        if combined {
            // After the user's `always` properties, whose wrappers count this state's
            // violations before the stand-ins ask whether it violates them all.
            registered.push(Property::sometimes(FIRST, first::<M>));
            registered.push(Property::always(ALL_REACHED, all_reached::<M>));
        }
        registered
    }

    fn within_boundary(&self, state: &M::State) -> bool {
        let within = self.inner.within_boundary(state);
        if !within && self.control.active.load(Ordering::Relaxed) {
            self.control.boundary.store(true, Ordering::Relaxed);
        }
        within
    }
}
