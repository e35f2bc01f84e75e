//! Replaying a scenario through the kernel, and rendering the trace.
//!
//! [`replay`] feeds each input of a [`Scenario`] to `resumable_kernel::step`, in order, and
//! keeps what a person needs to follow the run: the input, the verdict (accepted, or the
//! rejection with its evidence), the phase and revision after it, and the effects. A rejected
//! input changes nothing (spec REJ-2), so the trace shows the run unchanged.
//!
//! [`Trace::to_text`] is for people; [`Trace::to_json_lines`] prints one JSON object per step
//! (schema in `spec/scenario-format.md`). Both depend only on the scenario.

mod json;
mod summary;
mod text;

pub use text::{effect, footer_text, header_text, phase, state, NOTATION};

use crate::scenario::{Header, Scenario, ScenarioError};
use resumable_audit::history::History;
use resumable_kernel::{CallOutcome, Checkpoint, Effects, Input, Rejection, Run};
use std::collections::VecDeque;

/// The replay of a whole scenario.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The scenario's header.
    pub header: Header,
    /// The run as created, before the first input.
    pub initial: Run,
    /// One entry per input, in order.
    pub steps: Vec<TraceStep>,
}

/// One input and what the kernel made of it.
#[derive(Clone, Debug)]
pub struct TraceStep {
    /// The step's number, from 1.
    pub number: usize,
    /// The scenario line it came from.
    pub line: usize,
    /// The scenario's remark, if any.
    pub note: Option<String>,
    /// The verdict the scenario claims, if any.
    pub expect: Option<String>,
    /// The input as fed to the kernel, every reference resolved.
    pub input: Input,
    /// The input in a short readable form.
    pub summary: String,
    /// The effects of an accepted input, or the rejection.
    pub verdict: Result<Effects, Rejection>,
    /// The run after the step (unchanged by a rejection).
    pub run: Run,
    /// A call result this step recorded, if it recorded one.
    pub recorded: Option<CallOutcome>,
}

impl TraceStep {
    /// `accepted`, or the rejection's name (its snake_case variant name, as serde writes it).
    pub fn verdict_name(&self) -> String {
        match &self.verdict {
            Ok(_) => "accepted".to_string(),
            Err(r) => rejection_name(r).to_string(),
        }
    }

    /// Whether the verdict is the one the scenario claims; `None` when it claims none.
    pub fn met(&self) -> Option<bool> {
        self.expect.as_ref().map(|e| *e == self.verdict_name())
    }
}

impl Trace {
    /// The steps whose verdict is not the one the scenario claims.
    pub fn unmet(&self) -> impl Iterator<Item = &TraceStep> {
        self.steps.iter().filter(|s| s.met() == Some(false))
    }

    /// The run after the last step.
    pub fn final_run(&self) -> &Run {
        self.steps.last().map_or(&self.initial, |s| &s.run)
    }
}

/// The snake_case name of a rejection, as its serde form tags it and spec/ names it: the
/// kernel's [`resumable_kernel::RejectionKind::name`].
pub fn rejection_name(r: &Rejection) -> &'static str {
    r.kind().name()
}

/// How many of the checkpoints a replay emitted it keeps for `"latest"` and `{"emitted": R}`
/// references: the most recent ones. A bound, so that replaying a long scenario holds a fixed
/// amount of memory; a reference to an older checkpoint is refused by name.
pub const EMITTED_KEPT: usize = 1024;

/// A replay under way: the run so far and the checkpoints it can still refer to. Feeding it
/// one step at a time keeps memory flat however long the scenario is.
#[derive(Clone, Debug)]
pub struct Replayer {
    run: Run,
    /// The run's call history, as a driver's store keeps it: the priors replay states.
    history: History,
    emitted: VecDeque<Checkpoint>,
    number: usize,
}

impl Replayer {
    /// A replay of a scenario with this header, before its first input, or why the run it
    /// describes cannot be created (a reconcile window of 0), naming the header's line.
    pub fn new(header: &Header) -> Result<Replayer, ScenarioError> {
        let run = (header.run.create())
            .map_err(|e| ScenarioError::at(1, format!("the run's policy: {e}")))?;
        Ok(Replayer {
            run,
            history: History::new(),
            emitted: VecDeque::new(),
            number: 0,
        })
    }

    /// The run so far.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// Feeds one input to the kernel. Fails only when a reference cannot be resolved (for
    /// example `"latest"` before any checkpoint was emitted), naming the line.
    pub fn step(&mut self, step: &crate::scenario::Step) -> Result<TraceStep, ScenarioError> {
        let emitted = self.emitted.make_contiguous();
        let input = step.resolve(emitted).map_err(|m| {
            let dropped = emitted.len() == EMITTED_KEPT;
            let m = if dropped {
                format!("{m} (a replay keeps the last {EMITTED_KEPT} checkpoints)")
            } else {
                m
            };
            ScenarioError::at(step.line, m)
        })?;
        let input = step.stating_prior(input, &self.history);
        let verdict = match resumable_kernel::step(&self.run, &input) {
            Ok(t) => {
                for entry in t.effects.histories() {
                    self.history.apply(entry);
                }
                if let Some(cp) = t.effects.checkpoint() {
                    if self.emitted.len() == EMITTED_KEPT {
                        self.emitted.pop_front();
                    }
                    self.emitted.push_back(*cp);
                }
                let recorded = (t.next.last_call())
                    .filter(|c| Some(*c) != self.run.last_call())
                    .copied();
                self.run = t.next;
                (Ok(t.effects), recorded)
            }
            Err(r) => (Err(r), None),
        };
        self.number += 1;
        Ok(TraceStep {
            number: self.number,
            line: step.line,
            note: step.note.clone(),
            expect: step.expect.clone(),
            summary: summary::summarise(&input, step),
            input,
            verdict: verdict.0,
            run: self.run,
            recorded: verdict.1,
        })
    }
}

/// Replays the scenario through the kernel. Fails only when a reference cannot be resolved
/// (for example `"latest"` before any checkpoint was emitted), naming the line.
pub fn replay(scenario: &Scenario) -> Result<Trace, ScenarioError> {
    let mut replayer = Replayer::new(&scenario.header)?;
    let initial = *replayer.run();
    let steps = (scenario.steps.iter())
        .map(|step| replayer.step(step))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Trace {
        header: scenario.header.clone(),
        initial,
        steps,
    })
}
