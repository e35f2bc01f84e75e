//! The checker driver: explores any stateright model and reports verdicts a CI pipeline can
//! trust, with the shortest counterexample to each violation written for people (and, on
//! request, for tools, in the Informal Trace Format).
//!
//! It uses stateright's `Model` trait (so the same model also runs in stateright's web
//! Explorer) but searches with its own breadth-first search ([`search`]), because what a CI
//! pipeline needs is not what stateright's checkers give:
//! - **Deterministic.** The search checks one whole depth before the next, on any number of
//!   threads, so verdicts, counts and the depth reached are the same on every run and for
//!   every thread count, and a depth bound means whole depths.
//! - **Stops at the first violation**, as TLC does: at the end of the depth at which the
//!   first counterexample was found, with every property violated at that depth found and
//!   the others reported [`Verdict::Unjudged`]; [`Options::keep_going`] explores on.
//! - **Honest verdicts.** A property without a counterexample is [`Verdict::Holds`] only
//!   when every reachable state was checked: a depth, state, time or memory bound, or the
//!   model's boundary, makes it [`Verdict::Incomplete`].
//! - **Never a vacuous pass.** A model gives its properties as a [`PropertyList`], each keyed
//!   by the rule it checks (the world's by spec ID), which refuses an `always` property
//!   without a `sometimes` partner of its key. A `sometimes` property never reached is
//!   [`Verdict::Unreached`], and an `always` property whose partners were not all reached is
//!   [`Verdict::Unexercised`]: it may hold only because the states it speaks about never
//!   occur. Either makes the outcome [`Outcome::Unexercised`], never a pass.
//! - **Bounded memory.** The resident set is read while the search runs; crossing the
//!   bound ends the search as incomplete, with a complete report, instead of an abort.
//! - **Shortest, readable counterexamples**, rebuilt after the search by a deterministic
//!   breadth-first search on one thread ([`shortest`]); each step is the model's description
//!   of the action and a summary of the state after it ([`Summarize`]).
//!
//! `eventually` properties are refused: a search cannot report their violations on cycles or
//! judge them where a bound cuts a path, so the driver could report neither a violation nor
//! a pass honestly. Express liveness as an `always` over a budgeted model.
//!
//! Under symmetry, states are identified by their representative, and the search keeps the
//! representative; counts are of representatives, the same for every thread count when the
//! representative is canonical (equal for every permutation of a state).

mod crew;
mod explore;
pub mod itf;
mod judge;
pub mod list;
pub mod memory;
pub mod merge;
mod render;
mod report;
mod search;
mod shortest;
pub mod subject;
mod visited;

pub use explore::explore;
pub use list::{ListError, PropertyList};
pub use report::{
    Cut, Ended, Exploration, Kind, Outcome, Progress, PropertyReport, Report, RunOptions, Stats,
    Trace, TraceStep, Verdict, SCHEMA,
};

use search::{Limits, Panicked};
use shortest::{IndexPath, Target};
use stateright::{Expectation, Model, Representative};
use std::fmt::{self, Debug};
use std::hash::Hash;
use std::time::{Duration, Instant};

/// How a model describes its states and steps in counterexample traces.
pub trait Summarize: Model {
    /// What matters in `state`, e.g. "run 0: suspended(pending_approval) r1; worker 1 staged
    /// r1->r2": one line, or a few short ones (one per run, say).
    fn summary(&self, state: &Self::State) -> String;

    /// One line saying what `action`, taken in `last`, did, e.g. "worker 2 resumes run 1
    /// from revision 3: rejected, stale revision, current 4". The default is the model's
    /// `format_action`.
    fn describe(&self, last: &Self::State, action: &Self::Action) -> String
    where
        Self::Action: Debug,
    {
        let _ = last;
        self.format_action(action)
    }

    /// The state as the variables of an ITF state (see [`itf`]): a JSON object from each
    /// variable's name to its value in ITF's encoding. The default is one variable,
    /// `summary`, holding [`Summarize::summary`].
    fn itf_state(&self, state: &Self::State) -> serde_json::Map<String, serde_json::Value> {
        let mut vars = serde_json::Map::new();
        vars.insert("summary".to_owned(), self.summary(state).into());
        vars
    }
}

/// A model the driver can check: its properties as a [`PropertyList`], each keyed by the
/// rule it checks and each `always` with its `sometimes` partners.
pub trait Checkable: Summarize {
    /// What the model names its rules with: the world's are the kernel's spec IDs.
    type Key: Copy + Eq + Debug;

    /// The properties, or why they cannot be judged honestly (see [`list`]).
    fn property_list(&self) -> Result<PropertyList<Self, Self::Key>, ListError>;

    /// Under [`Reduction::PartialOrder`], narrows `actions`, the actions enabled in `state`
    /// in the model's order, to a persistent subset: one such that no sequence of actions
    /// outside it, taken from `state`, contains an action that disables or does not commute
    /// with one inside it. The search then expands only that subset. The model must also
    /// keep the subset's actions from changing any property's interesting value (a
    /// violating state stays violating, a witness stays a witness, once the action is
    /// taken) and make each action it singles out strictly decrease a measure of the state,
    /// so that no cycle is made of reduced steps alone (see `spec/check-output.md`). The
    /// default keeps every action: no reduction.
    fn persistent(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
        let _ = (state, actions);
    }

    /// Whether `state` may witness a `sometimes` property: a model whose exploration
    /// over-approximates what it stands for marks the states only the over-approximation
    /// reaches, and no `sometimes` is credited there (an `always` is judged in every state).
    /// The default: every state.
    fn may_witness(&self, state: &Self::State) -> bool {
        let _ = state;
        true
    }
}

/// Which reduction of the interleavings the search applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reduction {
    /// Every enabled action is expanded in every state.
    #[default]
    None,
    /// Partial-order reduction: in each state only the persistent subset the model gives
    /// ([`Checkable::persistent`]) is expanded.
    #[serde(rename = "por")]
    PartialOrder,
}

impl Reduction {
    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Reduction::None => "none",
            Reduction::PartialOrder => "por",
        }
    }
}

/// How to run a check. [`Options::default`] is one thread, no bounds but the default memory
/// bound, stopping at the first violation.
#[derive(Debug)]
pub struct Options<S> {
    /// Worker threads, at least 1.
    pub threads: usize,
    /// Check every state at most this many steps from an initial state, and no further.
    pub depth: Option<usize>,
    /// Expand at most this many states.
    pub max_states: Option<usize>,
    /// Stop after this long. The bound covers the whole check, rebuilding counterexamples
    /// included; a counterexample not rebuilt in time is reported missing.
    pub timeout: Option<Duration>,
    /// Stop when the process's resident memory passes this many bytes. The default is
    /// [`memory::default_bound`], half the machine's memory.
    pub max_memory_bytes: Option<u64>,
    /// Explore on past the first violation, to judge every property.
    pub keep_going: bool,
    /// Identify states by this representative (symmetry reduction).
    pub symmetry: Option<fn(&S) -> S>,
    /// Expand only a persistent subset of each state's actions ([`Reduction`]).
    pub reduction: Reduction,
    /// Also find and report a shortest witness for each `sometimes` property reached.
    pub witnesses: bool,
    /// Also give each trace in the Informal Trace Format ([`Trace::itf`]).
    pub itf: bool,
    /// How often the progress callback of [`check_with_progress`] is called; it is first
    /// called after one interval, so a quick check reports no progress at all.
    pub progress_every: Duration,
}

// Written out because a derive would require `S: Copy`; every field is `Copy` for any `S`.
impl<S> Clone for Options<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Options<S> {}

impl<S> Default for Options<S> {
    fn default() -> Self {
        Options {
            threads: 1,
            depth: None,
            max_states: None,
            timeout: None,
            max_memory_bytes: memory::default_bound(),
            keep_going: false,
            symmetry: None,
            reduction: Reduction::None,
            witnesses: false,
            itf: false,
            progress_every: Duration::from_millis(2500),
        }
    }
}

impl<S: Representative> Options<S> {
    /// Turns on symmetry reduction with the state's [`Representative`].
    pub fn with_symmetry(mut self) -> Self {
        self.symmetry = Some(S::representative);
        self
    }
}

/// Why a check could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckError {
    /// `threads` was 0.
    NoThreads,
    /// The model's property list was refused: empty, with an `eventually` property, two
    /// properties of one name, or an `always` without a partner.
    Properties(ListError),
    /// The model panicked in a worker thread (the panic message went to stderr).
    ModelPanicked,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::NoThreads => write!(f, "at least one thread is needed"),
            CheckError::Properties(e) => fmt::Display::fmt(e, f),
            CheckError::ModelPanicked => write!(f, "the model panicked during the check"),
        }
    }
}

impl std::error::Error for CheckError {}

/// Checks `model` exhaustively (within the bounds of `options`) and reports.
pub fn check<M>(model: M, options: &Options<M::State>) -> Result<Report, CheckError>
where
    M: Checkable + Sync,
    M::State: Clone + Debug + Hash + Send + Sync,
    M::Action: Clone + Debug + Send,
{
    check_with_progress(model, options, |_| {})
}

/// [`check`], calling `progress` every `options.progress_every` while the search runs.
pub fn check_with_progress<M>(
    model: M,
    options: &Options<M::State>,
    mut progress: impl FnMut(&Progress),
) -> Result<Report, CheckError>
where
    M: Checkable + Sync,
    M::State: Clone + Debug + Hash + Send + Sync,
    M::Action: Clone + Debug + Send,
{
    if options.threads == 0 {
        return Err(CheckError::NoThreads);
    }
    let list = model.property_list().map_err(CheckError::Properties)?;
    let properties = list.properties();
    let started = Instant::now();
    let deadline = options.timeout.map(|t| started + t);
    let bound = memory::Bound::new(options.max_memory_bytes);
    let targets: Vec<Target<M>> = (properties.iter())
        .map(|p| Target {
            condition: p.condition,
            hit: p.expectation == Expectation::Sometimes,
            may_witness: M::may_witness,
        })
        .collect();
    let limits = Limits {
        threads: options.threads,
        depth: options.depth,
        max_states: options.max_states,
        deadline,
        memory: bound,
        max_memory_bytes: options.max_memory_bytes,
        keep_going: options.keep_going,
        started,
        progress_every: options.progress_every,
    };
    let persistent: search::Persistent<M> = match options.reduction {
        Reduction::None => None,
        Reduction::PartialOrder => Some(M::persistent),
    };
    let found = search::search(
        &model,
        &targets,
        (options.symmetry, persistent),
        &limits,
        &mut progress,
    )
    .map_err(|Panicked| CheckError::ModelPanicked)?;

    let names: Vec<&str> = properties.iter().map(|p| p.name).collect();
    let kinds: Vec<Kind> = (targets.iter())
        .map(|t| if t.hit { Kind::Sometimes } else { Kind::Always })
        .collect();
    let judged = judge::judge(&names, &kinds, list.partners(), &found);
    let bounds = (deadline, bound);
    let traces = traces(&model, &targets, &names, &found.decided, options, bounds);
    let reports: Vec<PropertyReport> = (judged.into_iter().zip(traces).enumerate())
        .map(|(i, ((verdict, partners), trace))| {
            let (counterexample, witness) = match kinds[i] {
                Kind::Always => (trace, None),
                Kind::Sometimes => (None, trace),
            };
            PropertyReport {
                name: names[i].to_owned(),
                kind: kinds[i],
                verdict,
                partners,
                depth: found.decided[i],
                counterexample,
                witness,
            }
        })
        .collect();
    let mut report = report::<M>(reports, &found, options, started);
    report.options.max_address_space_mib = bound.reserved_bytes().map(mib);
    Ok(report)
}

/// Per property, its trace: a shortest counterexample for each `always` decided, and a
/// shortest witness for each `sometimes` decided when witnesses are asked for. Their depths,
/// known from the search, bound the search that rebuilds them.
fn traces<M>(
    model: &M,
    targets: &[Target<M>],
    names: &[&str],
    decided: &[Option<usize>],
    options: &Options<M::State>,
    (deadline, bound): (Option<Instant>, memory::Bound),
) -> Vec<Option<Trace>>
where
    M: Summarize,
    M::State: Clone + Hash,
    M::Action: Clone + Debug,
{
    let wanted: Vec<usize> = (0..targets.len())
        .filter(|&i| decided[i].is_some() && (!targets[i].hit || options.witnesses))
        .collect();
    let max_steps = wanted.iter().filter_map(|&i| decided[i]).max().unwrap_or(0);
    let chosen: Vec<Target<M>> = (wanted.iter())
        .map(|&i| Target {
            condition: targets[i].condition,
            hit: targets[i].hit,
            may_witness: targets[i].may_witness,
        })
        .collect();
    let paths = shortest::shortest_paths(
        model,
        &chosen,
        max_steps,
        options.symmetry,
        deadline,
        bound.relaxed(),
    );
    let mut traces: Vec<Option<Trace>> = targets.iter().map(|_| None).collect();
    for (&i, path) in wanted.iter().zip(paths) {
        let kind = if targets[i].hit {
            Kind::Sometimes
        } else {
            Kind::Always
        };
        traces[i] = path.and_then(|path| trace_for(model, &path, names[i], kind, options.itf));
    }
    traces
}

/// The whole report, from the verdicts and the search's figures.
fn report<M: Model>(
    properties: Vec<PropertyReport>,
    found: &search::Found,
    options: &Options<M::State>,
    started: Instant,
) -> Report {
    let elapsed = started.elapsed().as_secs_f64();
    let outcome = Outcome::of(properties.iter().map(|p| p.verdict));
    Report {
        schema: SCHEMA.to_owned(),
        model: short_type_name::<M>(),
        config: serde_json::Value::Null,
        options: RunOptions {
            threads: options.threads,
            symmetry: options.symmetry.is_some(),
            reduction: options.reduction,
            keep_going: options.keep_going,
            depth: options.depth,
            max_states: options.max_states,
            timeout_secs: options.timeout.map(|t| t.as_secs_f64()),
            max_memory_mib: options.max_memory_bytes.map(mib),
            max_address_space_mib: None,
        },
        properties,
        exploration: Exploration {
            complete: matches!(found.ended, Ended::Exhausted | Ended::Decided),
            ended: found.ended,
            cut_by: found.cut_by.clone(),
        },
        stats: Stats {
            generated: found.generated,
            unique: found.unique,
            checked: found.checked,
            max_depth: found.max_depth,
            elapsed_secs: elapsed,
            states_per_second: if elapsed > 0.0 {
                found.generated as f64 / elapsed
            } else {
                0.0
            },
            peak_memory_mib: memory::peak_resident_bytes().map(mib),
        },
        outcome,
        exit_code: outcome.exit_code(),
    }
}

/// The trace of a path the shortest search found: each step described, each state
/// summarised, and in ITF when asked for. `None` if the path does not replay, which only a
/// model whose initial states or actions vary between calls can cause.
fn trace_for<M>(model: &M, path: &IndexPath, name: &str, kind: Kind, itf: bool) -> Option<Trace>
where
    M: Summarize,
    M::State: Clone,
    M::Action: Clone + Debug,
{
    let (first, steps) = shortest::replay(model, path)?;
    let mut trace = Vec::with_capacity(steps.len() + 1);
    trace.push(TraceStep {
        step: 0,
        action: None,
        state: model.summary(&first),
    });
    let mut last = &first;
    for (n, (action, next)) in steps.iter().enumerate() {
        trace.push(TraceStep {
            step: n + 1,
            action: Some(model.describe(last, action)),
            state: model.summary(next),
        });
        last = next;
    }
    let what = match kind {
        Kind::Always => "counterexample to",
        Kind::Sometimes => "witness for",
    };
    let itf = itf.then(|| {
        let states = std::iter::once(&first).chain(steps.iter().map(|(_, s)| s));
        itf::document(model, &format!("{what} \"{name}\""), &trace, states)
    });
    Some(Trace {
        steps: trace.len() - 1,
        trace,
        itf,
    })
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 20)
}

fn short_type_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}
