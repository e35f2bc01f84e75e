//! The lockstep check over the model's world (spec CONF-1): the world explores a [`Pair`] as
//! it explores any lifecycle, so every input it offers at every reachable state (decisions
//! late, duplicated, stale, expired, from the requester itself or for another tenant; tool
//! answers lost and delayed; recoveries, expiries, cancels) goes through both machines.
//!
//! [`LockstepWorld`] is the world with one more property, [`CONF_1`]: no state holds a
//! divergence, neither in a run the store holds nor in a step a worker has computed and not
//! yet written. The world's own properties are kept, judged only on states where the two
//! machines still agree: past a divergence the pair is neither machine, and what it does
//! there says nothing about either. A state that holds a divergence has no successors. With
//! [`Probes::On`], a second property, [`CONF_1_PROBES`], also offers both machines the
//! adversarial inputs of [`super::probe`] at every reachable state. Both are partnered by
//! [`CONF_1_TO_THE_END`]: the machines agreed along a whole run, to its end, and on a message
//! that reached it after, which a correct pair must refuse alike; a world in which no run
//! ends compared too little to call CONF-1 exercised.

use super::{probe, Agreed, Disagreement, Divergence, Observable, Pair, PairRun, Tally};
use resumable_kernel::{Checkpoint, EventKind, RejectionKind, SpecId, Time};
use resumable_model::checker::{
    self, CheckError, Checkable, ListError, Options, PropertyList, Report, Summarize, Trace,
    Verdict,
};
use resumable_model::config::{Config, ConfigError};
use resumable_model::world::{witness, Action, Worker, World, WorldState};
use resumable_model::Lifecycle;
use stateright::{Expectation, Model, Property};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// The name of the lockstep property.
pub const CONF_1: &str = "CONF-1 the kernel and the reference agree on every input";

/// The name of the lockstep property over probes (see [`super::probe`]), present when the
/// world probes.
pub const CONF_1_PROBES: &str =
    "CONF-1 the kernel and the reference agree on adversarial probes at every reachable state";

/// The partner of both CONF-1 properties: the machines agree on every input along a run to its
/// end, and on a decision or tool response that reaches the finished run.
pub const CONF_1_TO_THE_END: &str =
    "CONF-1 the machines agree on a run to its end and on a message that reaches it after";

/// Whether the lockstep world also offers both machines the adversarial probes of
/// [`super::probe`] at every reachable state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probes {
    /// Only the inputs the world's actors send.
    Off,
    /// Those, and at every reachable state the probes, judged by [`CONF_1_PROBES`]. Each
    /// state costs a few dozen more steps of each machine.
    On,
}

/// The world's state around a pair.
pub type PairState<A, B> = WorldState<PairRun<<A as Lifecycle>::Run, <B as Lifecycle>::Run>>;

type Condition<A, B> = fn(&World<Pair<A, B>>, &PairState<A, B>) -> bool;

/// The model's world around a [`Pair`], with the lockstep property [`CONF_1`].
#[derive(Clone)]
pub struct LockstepWorld<A: Observable, B: Observable> {
    world: World<Pair<A, B>>,
    probes: Probes,
    /// The world's own properties: spec ID, name, expectation, condition; or why the world's
    /// list was refused.
    inner: Result<Vec<Inner<A, B>>, ListError>,
}

/// One of the world's own properties, kept to be judged in lockstep.
type Inner<A, B> = (SpecId, &'static str, Expectation, Condition<A, B>);

impl<A: Observable, B: Observable> fmt::Debug for LockstepWorld<A, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockstepWorld")
            .field("world", &self.world)
            .field("probes", &self.probes)
            .field("properties", &self.inner.as_ref().map(Vec::len))
            .finish()
    }
}

impl<A: Observable, B: Observable> LockstepWorld<A, B> {
    /// The world of `config` around `pair`, or why the configuration cannot be explored.
    pub fn new(pair: Pair<A, B>, config: Config) -> Result<Self, ConfigError> {
        let world = World::new(pair, config)?;
        let inner = (world.property_list()).map(|list| {
            (list.iter())
                .map(|(id, p)| (id, p.name, p.expectation.clone(), p.condition))
                .collect()
        });
        Ok(LockstepWorld {
            world,
            probes: Probes::Off,
            inner,
        })
    }

    /// The same world, probing every reachable state or not.
    pub fn with_probes(mut self, probes: Probes) -> Self {
        self.probes = probes;
        self
    }

    /// The first probe two machines disagree on in `state`, if the world probes.
    pub fn probe_divergence(&self, state: &PairState<A, B>) -> Option<Divergence> {
        if self.probes == Probes::Off || divergence(state).is_some() {
            return None;
        }
        let pair = self.pair();
        let now = Time(u64::from(state.now));
        state.runs.iter().find_map(|slot| {
            let run = &slot.run.run;
            let checkpoints: Vec<Checkpoint> = slot.checkpoints.iter().map(|c| **c).collect();
            let updated_at = pair.snapshot(run).updated_at;
            let inputs = probe::inputs(self.world.cast(), updated_at, &checkpoints, now);
            probe::disagreement(pair, run, &inputs)
        })
    }

    /// The world inside.
    pub fn world(&self) -> &World<Pair<A, B>> {
        &self.world
    }

    /// The pair under check.
    pub fn pair(&self) -> &Pair<A, B> {
        self.world.lifecycle()
    }
}

/// The first divergence a state holds: in a stored run, then in a worker's unwritten step.
pub fn divergence<RA, RB>(state: &WorldState<PairRun<RA, RB>>) -> Option<&Divergence> {
    let stored = state
        .runs
        .iter()
        .filter_map(|s| s.run.run.divergence.as_deref());
    let staged = state.workers.iter().filter_map(|w| match w {
        Worker::Staged(st) => st.next.run.divergence.as_deref(),
        _ => None,
    });
    stored.chain(staged).next()
}

fn agrees<A: Observable, B: Observable>(_: &LockstepWorld<A, B>, s: &PairState<A, B>) -> bool {
    divergence(s).is_none()
}

fn agree_to_the_end<A: Observable, B: Observable>(
    _: &LockstepWorld<A, B>,
    s: &PairState<A, B>,
) -> bool {
    divergence(s).is_none() && s.seen & witness::LATE_TO_TERMINAL != 0
}

fn probes_agree<A: Observable, B: Observable>(
    m: &LockstepWorld<A, B>,
    s: &PairState<A, B>,
) -> bool {
    m.probe_divergence(s).is_none()
}

/// The world's `I`-th `always` property, judged only where the machines agree. Property
/// conditions are plain `fn` pointers, so each position gets its own monomorphised function.
fn always_at<A: Observable, B: Observable, const I: usize>(
    m: &LockstepWorld<A, B>,
    s: &PairState<A, B>,
) -> bool {
    divergence(s).is_some() || inner(m, I).is_none_or(|(.., c)| c(&m.world, s))
}

/// The world's `I`-th `sometimes` property, reached only where the machines agree.
fn sometimes_at<A: Observable, B: Observable, const I: usize>(
    m: &LockstepWorld<A, B>,
    s: &PairState<A, B>,
) -> bool {
    divergence(s).is_none() && inner(m, I).is_some_and(|(.., c)| c(&m.world, s))
}

fn inner<A: Observable, B: Observable>(m: &LockstepWorld<A, B>, i: usize) -> Option<&Inner<A, B>> {
    m.inner.as_ref().ok().and_then(|inner| inner.get(i))
}

type LockstepCondition<A, B> = fn(&LockstepWorld<A, B>, &PairState<A, B>) -> bool;

macro_rules! condition_table {
    ($($i:literal)*) => {
        fn condition_at<A: Observable, B: Observable>(
            index: usize,
            expectation: &Expectation,
        ) -> Option<LockstepCondition<A, B>> {
            match (index, expectation) {
                $(
                    ($i, Expectation::Sometimes) => {
                        Some(sometimes_at::<A, B, $i> as LockstepCondition<A, B>)
                    }
                    ($i, _) => Some(always_at::<A, B, $i> as LockstepCondition<A, B>),
                )*
                _ => None,
            }
        }
    };
}

condition_table!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
    62 63
);

impl<A: Observable, B: Observable> Model for LockstepWorld<A, B> {
    type State = PairState<A, B>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        self.world.init_states()
    }

    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
        // A state holding a divergence is where the check stops, as a test stops at its first
        // failure: nothing past it says anything about either machine, and exploring on from
        // every divergence would multiply the search for no verdict.
        if divergence(state).is_none() {
            self.world.actions(state, actions);
        }
    }

    fn next_state(&self, last: &Self::State, action: Self::Action) -> Option<Self::State> {
        self.world.next_state(last, action)
    }

    fn format_action(&self, action: &Self::Action) -> String {
        self.world.format_action(action)
    }

    fn format_step(&self, last: &Self::State, action: Self::Action) -> Option<String> {
        let next = self.world.next_state(last, action)?;
        Some(format!(
            "{}\n{}",
            self.describe(last, &action),
            self.summary(&next)
        ))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.property_list()
            .map(PropertyList::into_properties)
            .unwrap_or_default()
    }

    fn within_boundary(&self, state: &Self::State) -> bool {
        self.world.within_boundary(state)
    }
}

impl<A: Observable, B: Observable> Checkable for LockstepWorld<A, B> {
    type Key = SpecId;

    /// CONF-1 (and with probes, CONF-1 over probes), their partner, then the world's own
    /// properties under their spec IDs, judged in lockstep.
    fn property_list(&self) -> Result<PropertyList<Self, SpecId>, ListError> {
        let mut list = PropertyList::builder().always(SpecId::Conf1, CONF_1, agrees::<A, B>);
        if self.probes == Probes::On {
            list = list.always(SpecId::Conf1, CONF_1_PROBES, probes_agree::<A, B>);
        }
        list = list.sometimes(SpecId::Conf1, CONF_1_TO_THE_END, agree_to_the_end::<A, B>);
        // A world with more properties than the table holds would lose some silently; the
        // table is sized well above the world's count, and a test pins that count.
        let inner = self.inner.as_ref().map_err(Clone::clone)?;
        for (i, (id, name, expectation, _)) in inner.iter().enumerate() {
            if let Some(condition) = condition_at::<A, B>(i, expectation) {
                let property = Property {
                    expectation: expectation.clone(),
                    name,
                    condition,
                };
                list = list.property(*id, property);
            }
        }
        list.build()
    }
}

impl<A: Observable, B: Observable> Summarize for LockstepWorld<A, B> {
    fn summary(&self, state: &Self::State) -> String {
        let world = self.world.summary(state);
        if divergence(state).is_some() {
            return format!("{world}\nCONF-1: the machines disagree");
        }
        match self.probe_divergence(state) {
            Some(d) => format!("{world}\nprobe: {d}"),
            None => world,
        }
    }

    fn describe(&self, last: &Self::State, action: &Self::Action) -> String {
        let what = self.world.format_action(action);
        let fresh = divergence(last)
            .is_none()
            .then(|| self.world.next_state(last, *action))
            .flatten();
        match fresh.as_ref().and_then(divergence) {
            Some(d) => format!("{what}: {d}"),
            None => format!("{what}: {}", self.world.explain(last, action)),
        }
    }
}

/// What a lockstep check found.
#[derive(Clone, Debug)]
pub struct LockstepReport {
    /// The checker's report: CONF-1 first, then the world's properties.
    pub report: Report,
    /// The verdict on CONF-1.
    pub conf_1: Verdict,
    /// The shortest trace to the first divergence, if CONF-1 is violated.
    pub counterexample: Option<Trace>,
    /// What the two machines agreed on during the check, per input kind: the verdict both
    /// gave, with how many comparisons.
    pub agreements: BTreeMap<(EventKind, Agreed), u64>,
    /// The disagreements the search met, by kind: empty exactly when CONF-1 holds on a
    /// complete search.
    pub disagreements: BTreeMap<Disagreement, u64>,
}

impl LockstepReport {
    /// The counterexample as text: one line per step, the action then the state.
    pub fn counterexample_text(&self) -> Option<String> {
        self.counterexample.as_ref().map(render_trace)
    }

    /// The rejections both machines gave alike at least once, sorted.
    pub fn agreed_rejections(&self) -> Vec<RejectionKind> {
        super::agreed_rejections(&self.agreements)
    }
}

/// A trace as text: the initial state, then each action and the state after it.
pub fn render_trace(trace: &Trace) -> String {
    let mut out = String::new();
    for step in &trace.trace {
        match &step.action {
            None => out.push_str(&format!("{}. initial\n", step.step)),
            Some(a) => out.push_str(&format!("{}. {a}\n", step.step)),
        }
        for line in step.state.lines() {
            out.push_str(&format!("   | {line}\n"));
        }
    }
    out
}

/// Why a lockstep check could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockstepError {
    /// The world's configuration is out of range.
    Config(ConfigError),
    /// The checker could not run.
    Check(CheckError),
}

impl fmt::Display for LockstepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockstepError::Config(e) => write!(f, "configuration: {e}"),
            LockstepError::Check(e) => write!(f, "checker: {e}"),
        }
    }
}

impl std::error::Error for LockstepError {}

/// Explores the world of `config` around `pair` with the checker driver and reports CONF-1,
/// with its shortest counterexample, and the world's properties judged in lockstep.
pub fn check<A: Observable, B: Observable>(
    pair: Pair<A, B>,
    config: Config,
    options: &Options<PairState<A, B>>,
) -> Result<LockstepReport, LockstepError> {
    check_with(pair, config, Probes::Off, options)
}

/// [`check`], probing every reachable state or not. With probes, [`LockstepReport::conf_1`]
/// is the verdict on both CONF-1 properties (violated if either is), and the counterexample
/// the first found of the two.
pub fn check_with<A: Observable, B: Observable>(
    pair: Pair<A, B>,
    config: Config,
    probes: Probes,
    options: &Options<PairState<A, B>>,
) -> Result<LockstepReport, LockstepError> {
    let tally = Arc::new(Tally::default());
    let model = LockstepWorld::new(pair.counting(Arc::clone(&tally)), config)
        .map_err(LockstepError::Config)?
        .with_probes(probes);
    let report = checker::check(model, options).map_err(LockstepError::Check)?;
    let conf = |name| {
        report
            .property(name)
            .map(|p| (p.verdict, &p.counterexample))
    };
    let judged = [conf(CONF_1), conf(CONF_1_PROBES)];
    let violated = judged
        .iter()
        .flatten()
        .find(|(v, _)| *v == Verdict::Violated);
    let (conf_1, counterexample) = match (violated, &judged) {
        (Some((_, trace)), _) => (Verdict::Violated, (*trace).clone()),
        // Holds only if every CONF-1 property the model has holds; CONF-1 itself is always
        // there, so its absence would be a bug here, answered with the verdict that claims
        // nothing.
        (None, [Some((Verdict::Holds, _)), None | Some((Verdict::Holds, _))]) => {
            (Verdict::Holds, None)
        }
        (None, _) => (Verdict::Incomplete, None),
    };
    Ok(LockstepReport {
        report,
        conf_1,
        counterexample,
        agreements: tally.counts(),
        disagreements: tally.disagreements(),
    })
}

/// The small default world for the whole-world lockstep check, explored in seconds in a
/// debug build: one run through an approval; one worker that may crash once, so outcomes
/// become unknown and are reconciled; one approver tab, and the requester approving its own
/// call; one duplicated decision; a deduping tool; a clock long enough for approvals and
/// suspensions to expire. The model's default world is far larger (a second worker racing,
/// lost responses, an "unknown" query answer) and is for release builds.
pub fn default_config() -> Config {
    Config {
        workers: 1,
        crashes: 1,
        approvers: 1,
        self_approval: true,
        duplicates: 1,
        losses: 0,
        query_unknown: false,
        max_time: 3,
        ..Config::default()
    }
}

/// The whole-world lockstep check of the kernel against the reference on [`default_config`],
/// breadth-first on one thread.
pub fn check_kernel_and_reference() -> Result<LockstepReport, LockstepError> {
    check(
        super::kernel_and_reference(),
        default_config(),
        &Options::default(),
    )
}
