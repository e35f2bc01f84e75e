//! A worker's step, in one place: what it reads ([`StepKey`], which is also the key the memo
//! remembers the step by), the input it feeds the lifecycle (`step/input.rs`, the one
//! translation of the world's choices into kernel inputs), the lifecycle's verdict, the
//! rules an accepted step breaks (`step/breaks.rs`), and everything its write will do
//! ([`StagedStep`]).
//!
//! The memo is right only if a step is a function of its key. That is the key's type:
//! [`World::step_afresh`] takes the key and nothing of the world's state, so a step that read
//! another part of the state would not compile. (The world itself, its configuration, cast
//! and lifecycle, is fixed for its id, which names its memo.)

mod breaks;
mod input;

use super::cast::GATED;
use super::intern::Interned;
use super::memo;
use super::{
    witness, Answer, Choice, DecisionMsg, Dispatches, Intent, Queue, RunView, StagedStep,
    StoredRun, Verdict, Worker, World, WorldState,
};
use crate::{Lifecycle, Snapshot};
use resumable_kernel::{
    Checkpoint, Effect, Effects, Event, Input, Phase, ReasonKind, Rejection, SlotState, SpecId,
    Time,
};

/// A run's checkpoint log, interned.
type Log = Interned<Vec<Interned<Checkpoint>>>;

/// Everything a worker's step reads: the values it is computed from, held as the state holds
/// them (the large ones interned, so the key compares and hashes by address, which interning
/// makes the same as by value). The memo remembers a step by it.
#[derive(PartialEq, Eq, Hash, Debug)]
pub(in crate::world) struct StepKey<R: 'static> {
    /// The run's index.
    pub(super) r: u8,
    /// The stored run, with its call history.
    pub(super) run: Interned<StoredRun<R>>,
    /// The input as the world chose it.
    pub(super) choice: Choice,
    /// The clock.
    pub(super) now: u8,
    /// The run's resource, which resumes are fed as their facts.
    pub(super) resource: u8,
    /// The run's checkpoints.
    pub(super) checkpoints: Log,
    /// For a decision, the checkpoints of the run it was made on (`None` for any other
    /// input, or if that run does not exist).
    pub(super) source: Option<Log>,
    /// The framework changed the gated call's arguments in the agent's state: what a worker
    /// that hands out the agent's arguments sends (spec APR-5).
    pub(super) changed: bool,
}

// Written out because a derive would require `R: Clone`; every field is a copy.
impl<R> Clone for StepKey<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for StepKey<R> {}

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

/// What a step starts from, read off its key: the run's snapshot and view, and, while its
/// batch awaits decisions, the revision of the batch's checkpoint.
pub(in crate::world) struct Before<'a> {
    /// The run as the properties see it.
    pub(super) snap: &'a Snapshot,
    /// What the world reads of it.
    pub(super) view: &'a RunView,
    /// The revision of the open batch's checkpoint, if the run waits on one.
    pub(super) opened: Option<resumable_kernel::Revision>,
    /// The driver's clock when the worker stepped the run: the time a decision is judged at
    /// (spec CLK-2), whatever the input was stamped with.
    pub(super) now: Time,
    /// The framework had changed the gated call's arguments in the agent's state (APR-5).
    pub(super) changed: bool,
    /// The run's batch as the lifecycle lists it, in the batch program: the edits recorded
    /// on it, which the driver's book keeps (BAT-5).
    pub(super) batch: Option<resumable_kernel::Batch>,
}

impl<L: Lifecycle> World<L> {
    /// What a worker that feeds run `r` the input `choice` in `state` reads: the key of its
    /// step. `None` if there is no run `r`.
    pub(super) fn step_key(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        choice: Choice,
    ) -> Option<StepKey<L::Run>> {
        let slot = state.runs.get(r)?;
        let source = match choice {
            Choice::Decision(m) => state.runs.get(usize::from(m.source)),
            _ => None,
        };
        Some(StepKey {
            r: super::index(r),
            run: slot.run,
            choice,
            now: state.now,
            resource: slot.resource,
            checkpoints: slot.checkpoints,
            source: source.map(|s| s.checkpoints),
            changed: slot.changed,
        })
    }

    /// A worker reads run `r`, feeds it the chosen input and keeps the step it computed. Inputs
    /// from the network, and budgeted requests, are used up whether accepted or refused.
    pub(super) fn stage(
        &self,
        state: &WorldState<L::Run>,
        w: usize,
        r: usize,
        choice: Choice,
    ) -> Option<WorldState<L::Run>> {
        if !matches!(state.workers.get(w)?, Worker::Idle) {
            return None;
        }
        match choice {
            Choice::Agent(Intent::Renew) => return self.renew(state),
            Choice::Agent(Intent::OldConfig) => return self.resume_old_config(state, r),
            Choice::Agent(Intent::Ask) => return self.ask(state, r),
            _ => {}
        }
        let key = self.step_key(state, r, choice)?;
        let outcome = memo::step(self.id, key, || self.step_afresh(&key));
        let moved = match &outcome {
            StepOutcome::Impossible => return None,
            StepOutcome::Refused { moved, .. } | StepOutcome::Accepted { moved, .. } => *moved,
        };
        let mut next = state.clone();
        let at = Self::time(state);
        let mut used = self.consume(&mut next, r, &key.run.view, at, moved, choice)?;
        match outcome {
            StepOutcome::Impossible => None,
            StepOutcome::Refused { id1, .. } => {
                if id1 {
                    next.violated |= SpecId::Id1;
                    used = true;
                }
                used.then_some(next)
            }
            StepOutcome::Accepted { staged, .. } => {
                *next.workers.get_mut(w)? = Worker::Staged(staged);
                Some(next)
            }
        }
    }

    /// What the step of `key` comes to, computed from the key alone (which is why
    /// [`memo::step`] may remember it by the key).
    fn step_afresh(&self, key: &StepKey<L::Run>) -> StepOutcome<L::Run> {
        let Some(input) = self.input(key) else {
            return StepOutcome::Impossible;
        };
        let r = usize::from(key.r);
        let stored = key.run;
        let moved = matches!(&input.event, Event::Resume(res)
            if res.facts.resource_version != res.checkpoint.resource_version);
        match self.lifecycle.step(&stored.run, &input) {
            Err(rejection) => {
                // ID-1: a foreign checkpoint must be refused for its identity, first.
                let id1 = matches!(&input.event, Event::Resume(res)
                    if self.foreign(&res.checkpoint.identity, r)
                        && !matches!(rejection, Rejection::IdentityMismatch { .. }));
                StepOutcome::Refused { moved, id1 }
            }
            Ok((run, effects)) => {
                // The history entries are written with the run, in the same commit.
                let mut history = stored.history;
                for entry in effects.histories() {
                    let Some(next) = history.with(Some(entry)) else {
                        return StepOutcome::Impossible;
                    };
                    history = next;
                }
                let next = self.store(run, history);
                let from = self.before(key);
                match self.staged(r, &from, &input, key.choice, next, &effects) {
                    Some(staged) => StepOutcome::Accepted {
                        moved,
                        staged: self.steps.intern(staged),
                    },
                    None => StepOutcome::Impossible,
                }
            }
        }
    }

    /// What the step of `key` starts from.
    fn before<'a>(&self, key: &'a StepKey<L::Run>) -> Before<'a> {
        let stored = key.run.value();
        // A batch's decisions bind to the checkpoint persisted when it opened: the latest of
        // the run's log while the batch awaits them (spec 5.5).
        let opened = (stored.view.reason == Some(ReasonKind::PendingBatch))
            .then(|| key.checkpoints.last().map(|cp| cp.revision))
            .flatten();
        Before {
            snap: &stored.snapshot,
            view: &stored.view,
            opened,
            now: Time(u64::from(key.now)),
            changed: key.changed,
            batch: (self.config.program == crate::config::Program::Batch)
                .then(|| self.lifecycle.batch(&stored.run))
                .flatten(),
        }
    }

    /// Everything the write of an accepted step must know, found when it was computed.
    fn staged(
        &self,
        r: usize,
        from: &Before<'_>,
        input: &Input,
        choice: Choice,
        next: Interned<StoredRun<L::Run>>,
        effects: &Effects,
    ) -> Option<StagedStep<L::Run>> {
        let before = from.snap;
        let mut raise = self.step_violations(r, from, &next.snapshot, input, effects);
        let mut dispatches = [None; resumable_kernel::effect::MAX_EFFECTS];
        let mut tool_keys = [None; resumable_kernel::effect::MAX_EFFECTS];
        let mut approval_binds = false;
        let mut edited = 0u32;
        // What the worker sends after the write, and what handing it out breaks (APR-5).
        let (to_send, handed_raise, mut witness) = self.carried_out(from, input, effects);
        raise |= handed_raise;
        let sent = effects.iter().filter_map(|e| match e {
            Effect::Dispatch(d) => Some(d),
            _ => None,
        });
        for (i, ((slot, tool_key), d)) in
            (dispatches.iter_mut().zip(&mut tool_keys).zip(sent)).enumerate()
        {
            // A dispatch of a call the world does not know is counted against the gated
            // call: the world's ledger must never lose a dispatch.
            let call = self.cast.proposal_by_id(&d.call_id).unwrap_or(GATED);
            *slot = Some((call, d.attempt));
            *tool_key = Some(self.digests.intern(d.tool_key));
            approval_binds |=
                self.config.program.gated(call) && self.approval_binds(before, input, &d);
            if d.args == self.cast.edited_args {
                edited |= 1 << i;
            }
        }
        if dispatches[0].is_some() {
            raise |= self.acts_on_moved_resource(input);
        }
        match (choice, &before.phase) {
            (Choice::Result { .. }, Phase::Running { in_flight: Some(f) }) if f.dispatches >= 2 => {
                witness |= witness::RETRY_SUCCEEDED
            }
            (
                Choice::Reconcile {
                    answer: Answer::Committed,
                    ..
                },
                _,
            ) => witness |= witness::REUSED,
            _ => {}
        }
        witness |= self.batch_witness(from, choice, &next, edited);
        Some(StagedStep {
            run: super::index(r),
            from: before.revision.0,
            choice,
            next,
            checkpoint: effects.checkpoint().map(|c| self.checkpoints.intern(*c)),
            dispatches,
            tool_keys,
            queue: self.queue(to_send),
            resumed_from: match &input.event {
                Event::Resume(res) => u8::try_from(res.checkpoint.revision.0).ok(),
                _ => None,
            },
            audits: u8::try_from(
                effects
                    .iter()
                    .filter(|e| matches!(e, Effect::Audit(_)))
                    .count(),
            )
            .unwrap_or(u8::MAX),
            approval_binds,
            raise,
            witness,
            edited,
        })
    }

    /// The queue a worker carries to send `dispatches` (packed to the front), with every
    /// queue left after each send, interned; `None` if there is nothing to send.
    fn queue(&self, dispatches: Dispatches) -> Option<Interned<Queue>> {
        dispatches[0]?;
        let mut rest = [None; resumable_kernel::effect::MAX_EFFECTS];
        rest[..dispatches.len() - 1].copy_from_slice(&dispatches[1..]);
        Some(self.queues.intern(Queue {
            dispatches,
            rest: self.queue(rest),
        }))
    }

    /// The rare batch events a step shows (see [`witness`]).
    fn batch_witness(
        &self,
        from: &Before<'_>,
        choice: Choice,
        next: &StoredRun<L::Run>,
        edited: u32,
    ) -> u32 {
        let after = &next.view;
        let mut seen = 0;
        let batch_decision = matches!(
            choice,
            Choice::Decision(DecisionMsg {
                verdict: Verdict::Batch(_),
                ..
            })
        );
        if batch_decision && after.reason == Some(ReasonKind::PendingBatch) && after.awaiting != 0 {
            seen |= witness::BATCH_SPLIT;
        }
        if batch_decision && after.batch_in_flight > 0 {
            let declined = self.batch_states(&next.run).iter().any(|s| {
                matches!(
                    s,
                    Some(SlotState::Rejected { .. } | SlotState::Responded { .. })
                )
            });
            if declined {
                seen |= witness::BATCH_RUNS_ON;
            }
        }
        if matches!(choice, Choice::Recover | Choice::Cancel) && from.view.batch_in_flight >= 2 {
            seen |= witness::BATCH_TWO_UNKNOWN;
        }
        if edited != 0 {
            seen |= witness::EDITED_DISPATCHED;
        }
        seen
    }
}
