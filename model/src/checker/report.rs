//! What a check reports: verdicts, traces, how much was explored, figures, and the outcome
//! with its exit status. Serialises to the JSON schema of spec/check-output.md and reads it
//! back (for `check --merge`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The `schema` field of every JSON report; see spec/check-output.md.
pub const SCHEMA: &str = "resumable-check/2";

/// What the check found about one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// `always`: the search was complete, found no counterexample, and reached every one of
    /// its `sometimes` partners. `sometimes`: a witness was found.
    Holds,
    /// `always`: a counterexample was found.
    Violated,
    /// `always`: the search was complete and found no counterexample, but a `sometimes`
    /// partner was not reached, so the property may hold only because the states it speaks
    /// about never occur. Not a pass.
    Unexercised,
    /// `sometimes`: the search was complete and found no witness.
    Unreached,
    /// A bound cut the search short before deciding the property.
    Incomplete,
    /// The search stopped at the first violation (of another property, at the same or a
    /// smaller depth) before deciding this one; `--keep-going` decides every property.
    Unjudged,
}

/// The two kinds of property the driver checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Holds in every reachable state.
    Always,
    /// Holds in at least one reachable state.
    Sometimes,
}

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceStep {
    /// 0 for the initial state, then 1, 2, ...
    pub step: usize,
    /// What happened; `None` for the initial state.
    pub action: Option<String>,
    /// The state after the step, summarised.
    pub state: String,
}

/// A shortest path from an initial state to a discovery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// The number of actions.
    pub steps: usize,
    /// The initial state, then one entry per action.
    pub trace: Vec<TraceStep>,
    /// The same path in the Informal Trace Format (Apalache, Quint), when asked for with
    /// [`super::Options::itf`]; `None` otherwise.
    pub itf: Option<serde_json::Value>,
}

/// One property's line of the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PropertyReport {
    /// The property's name, as the model gives it.
    pub name: String,
    /// `always` or `sometimes`.
    pub kind: Kind,
    /// The verdict.
    pub verdict: Verdict,
    /// For an `always`: its `sometimes` partners, the properties of the same key (the world's:
    /// the same spec ID), never none. Empty for a `sometimes`.
    pub partners: Vec<String>,
    /// The depth, in steps, of the first counterexample (`always`) or witness (`sometimes`);
    /// `None` when there is none.
    pub depth: Option<usize>,
    /// For a violated `always`: a shortest counterexample (`None` only when the time or
    /// memory bound ran out while it was being rebuilt).
    pub counterexample: Option<Trace>,
    /// For a reached `sometimes`, when witnesses were asked for: a shortest witness.
    pub witness: Option<Trace>,
}

/// A reason the search did not cover every reachable state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cut {
    /// States beyond the depth bound exist and were not checked.
    Depth,
    /// The state bound stopped the search.
    States,
    /// The time bound stopped the search.
    Time,
    /// The memory bound stopped the search.
    Memory,
    /// The model's own boundary (`within_boundary`) refused states.
    Boundary,
}

/// How the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// Every reachable state was checked.
    Exhausted,
    /// Every property had a counterexample or a witness, so the search stopped early; every
    /// verdict is final, the figures cover part of the state space.
    Decided,
    /// The search stopped at the end of the depth at which it found the first violation
    /// (the default; `--keep-going` explores on). The properties it had not decided by then
    /// are [`Verdict::Unjudged`].
    Stopped,
    /// A bound cut the search short; see [`Exploration::cut_by`].
    Cut,
}

/// How much of the state space the search covered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exploration {
    /// Every reachable state was checked, or every property decided: no verdict is
    /// `incomplete` or `unjudged`.
    pub complete: bool,
    /// How the search ended.
    pub ended: Ended,
    /// Every bound that left states unexplored (possibly several; empty when none did).
    pub cut_by: Vec<Cut>,
}

/// Figures of the search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// States generated, duplicates included.
    pub generated: usize,
    /// Distinct states (representatives, under symmetry) within the depth covered.
    pub unique: usize,
    /// States whose properties were checked.
    pub checked: usize,
    /// The depth, in steps from an initial state, of the deepest state checked (breadth
    /// first, so its shortest path).
    pub max_depth: usize,
    /// Wall time of the whole check, in seconds.
    pub elapsed_secs: f64,
    /// Generated states per second of wall time.
    pub states_per_second: f64,
    /// The most memory the process held resident, in MiB (`None` where the platform does
    /// not say).
    pub peak_memory_mib: Option<f64>,
}

/// The options a report was produced with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    /// Worker threads.
    pub threads: usize,
    /// Symmetry reduction was on.
    pub symmetry: bool,
    /// The reduction of interleavings applied (`none` in reports written before it existed).
    #[serde(default)]
    pub reduction: super::Reduction,
    /// The search went on past the first violation.
    pub keep_going: bool,
    /// The depth bound, in steps.
    pub depth: Option<usize>,
    /// The state bound.
    pub max_states: Option<usize>,
    /// The time bound, in seconds.
    pub timeout_secs: Option<f64>,
    /// The memory bound on the resident set, in MiB.
    pub max_memory_mib: Option<f64>,
    /// Where the process runs under an address-space limit (`ulimit -v`): nine tenths of it,
    /// in MiB, the bound on the address space the process reserves.
    pub max_address_space_mib: Option<f64>,
}

/// The overall result, and the process exit status it maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every property holds on a complete exploration: exit 0.
    Pass,
    /// A property is violated: exit 1.
    Fail,
    /// A bound cut the search short without a violation: exit 3.
    Incomplete,
    /// No violation, but a property was not exercised (an `always` unexercised, a
    /// `sometimes` unreached): exit 4.
    Unexercised,
}

impl Outcome {
    /// The exit status: 0 pass, 1 fail, 3 incomplete, 4 unexercised (2 is the command
    /// line's, for misuse).
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Pass => 0,
            Outcome::Fail => 1,
            Outcome::Incomplete => 3,
            Outcome::Unexercised => 4,
        }
    }

    /// The outcome of a set of verdicts: a violation wins over anything unexercised, which
    /// wins over anything incomplete.
    pub fn of(verdicts: impl IntoIterator<Item = Verdict>) -> Outcome {
        let mut outcome = Outcome::Pass;
        for verdict in verdicts {
            let this = match verdict {
                Verdict::Violated => return Outcome::Fail,
                Verdict::Unexercised | Verdict::Unreached => Outcome::Unexercised,
                Verdict::Incomplete | Verdict::Unjudged => Outcome::Incomplete,
                Verdict::Holds => Outcome::Pass,
            };
            if this.rank() > outcome.rank() {
                outcome = this;
            }
        }
        outcome
    }

    fn rank(self) -> u8 {
        match self {
            Outcome::Pass => 0,
            Outcome::Incomplete => 1,
            Outcome::Unexercised => 2,
            Outcome::Fail => 3,
        }
    }
}

/// Everything a check found. Serialises to the JSON schema of spec/check-output.md.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// What was checked, in one line; the driver puts the model's type name, a caller may
    /// put something better.
    pub model: String,
    /// The model's configuration, as the caller describes it (`null` unless set).
    pub config: serde_json::Value,
    /// The options the check ran with.
    pub options: RunOptions,
    /// One entry per property, in the model's order.
    pub properties: Vec<PropertyReport>,
    /// How much of the state space was covered.
    pub exploration: Exploration,
    /// Figures.
    pub stats: Stats,
    /// The overall result.
    pub outcome: Outcome,
    /// The exit status for the outcome.
    pub exit_code: u8,
}

impl PropertyReport {
    /// The counterexample, if any, as the numbered trace the text report prints for it.
    pub fn counterexample_text(&self) -> Option<String> {
        let trace = self.counterexample.as_ref()?;
        let mut out = String::new();
        super::render::trace_text(&mut out, "counterexample to", &self.name, trace);
        Some(out)
    }
}

impl Report {
    /// The report of one property, by name.
    pub fn property(&self, name: &str) -> Option<&PropertyReport> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// The report as text for people.
    pub fn to_text(&self) -> String {
        super::render::text(self)
    }

    /// The report as text for people, its counterexamples first: what `check --variant`
    /// prints, where the counterexample is what the reader came for.
    pub fn to_text_counterexample_first(&self) -> String {
        super::render::text_counterexample_first(self)
    }

    /// The report as one JSON document (pretty-printed).
    pub fn to_json(&self) -> String {
        // Serialising plain data with string keys cannot fail; the fallback keeps the
        // library free of panics all the same.
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"schema\":\"{SCHEMA}\",\"error\":\"{e}\"}}"))
    }
}

/// Progress of a running check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// States generated so far, duplicates included.
    pub generated: usize,
    /// Distinct states so far.
    pub unique: usize,
    /// The depth being checked, in steps.
    pub depth: usize,
    /// Time since the check started.
    pub elapsed: Duration,
    /// The process's resident memory, in bytes, where the platform says.
    pub resident_bytes: Option<u64>,
    /// The memory bound, in bytes.
    pub max_memory_bytes: Option<u64>,
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            self.generated as f64 / secs
        } else {
            0.0
        };
        write!(
            f,
            "checking: depth {}, {} unique states, {:.0} states/s, {:.0} s",
            self.depth, self.unique, rate, secs
        )?;
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        match (self.resident_bytes, self.max_memory_bytes) {
            (Some(held), Some(bound)) => {
                write!(f, ", memory {:.2} GiB of {:.2} GiB", gib(held), gib(bound))
            }
            (Some(held), None) => write!(f, ", memory {:.2} GiB", gib(held)),
            _ => Ok(()),
        }
    }
}
