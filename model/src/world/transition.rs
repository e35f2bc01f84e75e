//! How each action changes the world. The lifecycle decides every step; the world only
//! delivers inputs, writes what was accepted, and keeps the ledger the properties read
//! (see `ledger`).

use super::cast::{BATCH, GATED};
use super::memo::{self, StepKey, StepOutcome};
use super::{
    witness, Answer, CallVerdict, Choice, DecisionMsg, Dispatches, Intent, Interned, Party, Picks,
    Queue, RunSlot, RunView, Settle, StagedStep, ToolMsg, ToolOutcome, ToolSide, Verdict, Worker,
    World, WorldState,
};
use crate::{Lifecycle, Snapshot};
use resumable_kernel::{
    Approval, CallDecision, Checkpoint, Decision, Decisions, Effect, Effects, Event, Input, Phase,
    Proposal, Proposals, QueryAnswer, ReasonKind, Rejection, Resolution, Resume, SlotState, SpecId,
    Time, Verdict as BatchVerdict, Wait,
};
use smallvec::{Array, SmallVec};

/// What a step starts from: the run's snapshot and view, and, while its batch awaits
/// decisions, the revision of the batch's checkpoint.
pub(super) struct Before<'a> {
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

/// Inserts into a sorted vector, keeping it sorted: the multiset's canonical order.
pub(super) fn insert_sorted<A: Array>(v: &mut SmallVec<A>, x: A::Item)
where
    A::Item: Ord,
{
    let i = v.partition_point(|y| *y <= x);
    v.insert(i, x);
}

/// Removes one element equal to `x`, if any.
fn remove_one<A: Array>(v: &mut SmallVec<A>, x: &A::Item) -> Option<A::Item>
where
    A::Item: PartialEq,
{
    let i = v.iter().position(|y| y == x)?;
    Some(v.remove(i))
}

impl<L: Lifecycle> World<L> {
    /// The decision an approver's message carries, built from the checkpoint it was made on:
    /// an approval binds to that checkpoint's call, arguments, requester and revision.
    pub(super) fn decision_of(&self, m: &DecisionMsg, cp: &Checkpoint) -> Decision {
        if let Verdict::Batch(picks) = m.verdict {
            return self.batch_decision(m, cp, picks);
        }
        let gated = self.cast.proposals[usize::from(GATED)].call;
        let pending = cp.pending;
        let approval = Approval {
            call_id: pending.map_or(gated.call_id, |p| p.call_id),
            args: match m.verdict {
                Verdict::ApproveEdited => self.cast.edited_args,
                _ => pending.map_or(gated.args, |p| p.args),
            },
            requester: cp.requester.unwrap_or(self.cast.requester),
            approver: match m.party {
                Party::Approver => self.cast.approver,
                Party::Requester => self.cast.requester,
            },
            revision: cp.revision,
            expires_at: Time(u64::from(m.expires_at)),
        };
        match m.verdict {
            Verdict::Deny => Decision::Deny(approval),
            Verdict::Approve | Verdict::ApproveEdited | Verdict::Batch(_) => {
                Decision::Approve(approval)
            }
        }
    }

    /// A batch decision (spec 5.5): for each call it names, an approval bound to the batch's
    /// checkpoint and to the call as proposed, and the verdict.
    fn batch_decision(&self, m: &DecisionMsg, cp: &Checkpoint, picks: Picks) -> Decision {
        let mut decisions = Decisions::new();
        for (pick, p) in picks.iter().zip(BATCH) {
            let Some(pick) = pick else {
                continue;
            };
            let call = self.cast.proposals[usize::from(p)].call;
            let approval = Approval {
                call_id: call.call_id,
                args: call.args,
                requester: self.cast.requester,
                approver: match m.party {
                    Party::Approver => self.cast.approver,
                    Party::Requester => self.cast.requester,
                },
                revision: cp.revision,
                expires_at: Time(u64::from(m.expires_at)),
            };
            let verdict = match pick {
                CallVerdict::Approve => BatchVerdict::Approve,
                CallVerdict::Edit => BatchVerdict::Edit {
                    args: self.cast.edited_args,
                },
                CallVerdict::Reject => BatchVerdict::Reject {
                    reason: self.cast.rejection,
                },
                CallVerdict::Respond => BatchVerdict::Respond {
                    result: self.cast.answer,
                },
                CallVerdict::Deny => BatchVerdict::Deny,
            };
            // Two calls at most: the list holds eight.
            let _ = decisions.push(CallDecision { approval, verdict });
        }
        Decision::Batch { decisions }
    }

    /// The resume that feeds run `r` a decision taken from `checkpoint`, with the world's
    /// true facts in `state`.
    pub(super) fn resume_event(
        state: &WorldState<L::Run>,
        r: usize,
        checkpoint: Checkpoint,
        decision: Decision,
    ) -> Event {
        Event::Resume(Resume {
            checkpoint,
            decision,
            facts: Self::facts(state, r),
        })
    }

    /// What the tool's status query says of `call`, as the kernel reads it: "committed"
    /// carries the result the tool commits the call's key with. None if it has none.
    pub(super) fn query_answer(&self, call: u8, answer: Answer) -> Option<QueryAnswer> {
        Some(match answer {
            Answer::Committed => QueryAnswer::Committed {
                result: self.result_of(call)?,
            },
            Answer::NotCommitted => QueryAnswer::NotCommitted,
            Answer::Unknown => QueryAnswer::Unknown,
        })
    }

    /// The operator's settlement of a manual intervention on the unresolved `call`: a
    /// committed one carries the call's result. None if there is no call or no result.
    pub(super) fn intervention(&self, call: Option<u8>, settle: Settle) -> Option<Decision> {
        let resolution = match settle {
            Settle::Committed => Resolution::Committed {
                result: self.result_of(call?)?,
            },
            Settle::Continue => Resolution::Continue,
            Settle::Abandon => Resolution::Abandon,
        };
        Some(Decision::Intervene {
            by: self.cast.policy.operator,
            resolution,
        })
    }

    /// The event a choice feeds run `r`, as the world would build it in `state`.
    pub(super) fn event_of(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        choice: &Choice,
    ) -> Option<Event> {
        let slot = state.runs.get(r)?;
        let resume = |checkpoint, decision| Self::resume_event(state, r, checkpoint, decision);
        Some(match *choice {
            Choice::Agent(intent) => return self.agent_event(slot, Self::time(state), intent),
            Choice::Decision(m) => {
                let source = state.runs.get(usize::from(m.source))?;
                let cp = **source.checkpoints.get(usize::from(m.checkpoint))?;
                resume(cp, self.decision_of(&m, &cp))
            }
            Choice::Result { call, attempt } => Event::ToolResult {
                call_id: self.cast.proposal(call)?.call.call_id,
                attempt,
                result: self.result_of(call)?,
            },
            Choice::Recover => Event::Recover,
            Choice::Expire => Event::Expire,
            Choice::Reconcile {
                checkpoint,
                call,
                answer,
                ..
            } => {
                let answer = self.query_answer(call, answer)?;
                let cp = **slot.checkpoints.get(usize::from(checkpoint))?;
                resume(cp, Decision::Reconcile(answer))
            }
            Choice::Cancel => Event::Cancel {
                by: self.cast.owner,
            },
            Choice::Intervene { call, settle } => {
                let decision = self.intervention(call, settle)?;
                resume(**slot.checkpoints.last()?, decision)
            }
        })
    }

    /// The event the agent program's request feeds the run in `slot` at `at`: a suspend, a
    /// dispatch or the final result. None for a request the driver plans before any step.
    fn agent_event(&self, slot: &RunSlot<L::Run>, at: Time, intent: Intent) -> Option<Event> {
        Some(match intent {
            Intent::Suspend(p) | Intent::SuspendSelfApproved(p) => Event::Suspend {
                wait: Wait::Approval {
                    call: self.cast.proposal(p)?.call,
                    requester: self.cast.requester,
                    // The worker looks the call up in the run's history, in the store.
                    prior: slot.run.history.prior(&self.cast.proposal(p)?.call),
                },
                expires_at: at.after(u64::from(self.config.suspend_for)),
                responsible: match intent {
                    Intent::SuspendSelfApproved(_) => self.cast.requester,
                    _ => self.cast.approver,
                },
                resource_version: u64::from(slot.resource),
            },
            Intent::SuspendBatch => self.batch_suspend(slot, at)?,
            // The worker states the resource version the agent observed when it decided to
            // call (spec 4.4), so a retry after "not committed" re-checks against it.
            Intent::Dispatch(p) | Intent::Reuse(p) => Event::Dispatch {
                call: self.cast.proposal(p)?.call,
                prior: slot.run.history.prior(&self.cast.proposal(p)?.call),
                resource_version: Some(u64::from(slot.resource)),
            },
            // Planned against the record before any step (`handout.rs`).
            Intent::Renew | Intent::OldConfig | Intent::Ask => return None,
            Intent::Complete => Event::Complete {
                result: self.cast.final_result,
            },
        })
    }

    /// The suspend for the batch of [`BATCH`] (spec 5.5): every call proposed by the
    /// requester, each looked up in the run's history, for the approver to decide.
    fn batch_suspend(&self, slot: &RunSlot<L::Run>, at: Time) -> Option<Event> {
        let mut calls = Proposals::new();
        for p in BATCH {
            let call = self.cast.proposal(p)?.call;
            calls
                .push(Proposal {
                    call,
                    requester: self.cast.requester,
                    prior: slot.run.history.prior(&call),
                })
                .ok()?;
        }
        Some(Event::Suspend {
            wait: Wait::Batch { calls },
            expires_at: at.after(u64::from(self.config.suspend_for)),
            responsible: self.cast.approver,
            resource_version: u64::from(slot.resource),
        })
    }

    /// The input a step action feeds, for traces.
    pub fn input_of(&self, state: &WorldState<L::Run>, action: &super::Action) -> Option<Input> {
        match action {
            super::Action::Step { run, choice, .. } => Some(Input {
                at: self.stamp(state, usize::from(*run), choice),
                event: self.event_of(state, usize::from(*run), choice)?,
            }),
            _ => None,
        }
    }

    /// What the lifecycle says to a step action: its effects, or its rejection.
    pub fn verdict_of(
        &self,
        state: &WorldState<L::Run>,
        action: &super::Action,
    ) -> Option<Result<(L::Run, Effects), Rejection>> {
        let super::Action::Step { run, .. } = action else {
            return None;
        };
        let input = self.input_of(state, action)?;
        let slot = state.runs.get(usize::from(*run))?;
        Some(self.lifecycle.step(&slot.run.run, &input))
    }

    /// What consuming a choice does to the world before the lifecycle sees it: a message or
    /// a budget used up, a query's durable answer, the witnesses it shows. Returns whether
    /// anything was used up (a refused input that used nothing is no transition).
    fn consume(
        &self,
        next: &mut WorldState<L::Run>,
        r: usize,
        before: &RunView,
        at: Time,
        moved: bool,
        choice: Choice,
    ) -> Option<bool> {
        if before.ending.is_some() && matches!(choice, Choice::Decision(_) | Choice::Result { .. })
        {
            next.seen |= witness::LATE_TO_TERMINAL;
        }
        if moved {
            next.seen |= witness::RESOURCE_MOVED;
        }
        // A slow reconciler's answer, read from a checkpoint the run has moved past, is as
        // stale as an old approval (spec RES-3).
        if let Choice::Reconcile { revision, .. } = choice {
            if u64::from(revision) < before.revision {
                next.seen |= witness::STALE_ARRIVED;
            }
        }
        Some(match choice {
            Choice::Decision(m) => {
                self.deliver_decision(next, r, before, at, m)?;
                true
            }
            Choice::Result { call, attempt } => {
                let msg = ToolMsg {
                    run: super::index(r),
                    call,
                    attempt,
                };
                remove_one(&mut next.responses, &msg)?;
                true
            }
            Choice::Reconcile {
                call,
                attempt,
                answer: Answer::NotCommitted,
                ..
            } => self.record_query(next, r, call, attempt)?,
            Choice::Cancel => {
                next.budgets.cancels = next.budgets.cancels.checked_sub(1)?;
                true
            }
            Choice::Agent(Intent::Reuse(_)) => {
                next.budgets.reuses = next.budgets.reuses.checked_sub(1)?;
                next.seen |= witness::REUSE_PROPOSED;
                true
            }
            _ => false,
        })
    }

    /// Delivers decision `m` to run `r`: counts it delivered once more (a second delivery
    /// uses a duplicate), notes what it arrives too late for, and counts a resume value fed
    /// to the gated call's interrupt (RES-8). None if it is not on its way.
    fn deliver_decision(
        &self,
        next: &mut WorldState<L::Run>,
        r: usize,
        before: &RunView,
        at: Time,
        m: DecisionMsg,
    ) -> Option<()> {
        let mut taken = remove_one(&mut next.decisions, &m)?;
        if taken.delivered > 0 {
            next.budgets.duplicates = next.budgets.duplicates.checked_sub(1)?;
        }
        taken.delivered = taken.delivered.saturating_add(1);
        insert_sorted(&mut next.decisions, taken);
        // A batch's decisions all bind to the checkpoint it opened with, so one is
        // stale only once the batch has left its suspension.
        let open_batch = matches!(m.verdict, Verdict::Batch(_))
            && before.reason == Some(ReasonKind::PendingBatch);
        if m.target == m.source && u64::from(m.revision) < before.revision && !open_batch {
            next.seen |= witness::STALE_ARRIVED;
        }
        if at > Time(u64::from(m.expires_at)) {
            next.seen |= witness::EXPIRED_APPROVAL;
        }
        // Only a suspended run has an expiry.
        if before.expires_at.is_some_and(|expires_at| at > expires_at) {
            next.seen |= witness::AFTER_EXPIRY;
        }
        // A resume value handed to the node's interrupt for the gated call, and fed
        // by the core, accepted or refused (spec RES-8).
        if self.config.questions > 0 && before.reason == Some(ReasonKind::PendingApproval) {
            let slot = next.runs.get_mut(r)?;
            slot.fed = slot.fed.saturating_add(1).min(3);
        }
        Some(())
    }

    /// A "not committed" answer to the status query of `call`'s `attempt`, a durable act at
    /// the tool: it records its answer and, if the tool fences, the attempt can no longer
    /// commit. Returns whether the tool's side changed.
    fn record_query(
        &self,
        next: &mut WorldState<L::Run>,
        r: usize,
        call: u8,
        attempt: u8,
    ) -> Option<bool> {
        let bit = ToolSide::bit(self.cast.key_of(call)?, attempt);
        let tool = &mut next.runs.get_mut(r)?.tool;
        let was = *tool;
        tool.denied_commit |= bit;
        if self.config.query_fences {
            tool.fenced |= bit;
        }
        Some(*tool != was)
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
        let slot = state.runs.get(r)?;
        let source = match choice {
            Choice::Decision(m) => (state.runs.get(usize::from(m.source)))
                .map_or(0, |source| source.checkpoints.addr()),
            _ => 0,
        };
        let key = StepKey {
            r: super::index(r),
            run: slot.run.addr(),
            choice,
            now: state.now,
            resource: slot.resource,
            checkpoints: slot.checkpoints.addr(),
            source,
            changed: slot.changed,
        };
        let stepped = memo::step(self.id, key, || self.step_afresh(state, r, choice));
        let moved = match &stepped {
            StepOutcome::Impossible => return None,
            StepOutcome::Refused { moved, .. } | StepOutcome::Accepted { moved, .. } => *moved,
        };
        let mut next = state.clone();
        let at = Self::time(state);
        let mut used = self.consume(&mut next, r, &slot.run.view, at, moved, choice)?;
        match stepped {
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

    /// What a worker's step of run `r` with `choice` comes to in `state`, computed: a function
    /// of the values [`StepKey`] names, which [`memo::step`] remembers it by.
    fn step_afresh(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        choice: Choice,
    ) -> StepOutcome<L::Run> {
        let Some(slot) = state.runs.get(r) else {
            return StepOutcome::Impossible;
        };
        let Some(event) = self.event_of(state, r, &choice) else {
            return StepOutcome::Impossible;
        };
        let input = Input {
            at: self.stamp(state, r, &choice),
            event,
        };
        let moved = matches!(&input.event, Event::Resume(res)
            if res.facts.resource_version != res.checkpoint.resource_version);
        match self.lifecycle.step(&slot.run.run, &input) {
            Err(rejection) => {
                // ID-1: a foreign checkpoint must be refused for its identity, first.
                let id1 = matches!(&input.event, Event::Resume(res)
                    if self.foreign(&res.checkpoint.identity, r)
                        && !matches!(rejection, Rejection::IdentityMismatch { .. }));
                StepOutcome::Refused { moved, id1 }
            }
            Ok((run, effects)) => {
                let before = self.lifecycle.snapshot(&slot.run.run);
                // The history entries are written with the run, in the same commit.
                let mut history = slot.run.history;
                for entry in effects.histories() {
                    let Some(next) = history.with(Some(entry)) else {
                        return StepOutcome::Impossible;
                    };
                    history = next;
                }
                let stored = self.store(run, history);
                // A batch's decisions bind to the checkpoint persisted when it opened: the
                // latest of the run's log while the batch awaits them (spec 5.5).
                let opened = (slot.run.view.reason == Some(ReasonKind::PendingBatch))
                    .then(|| slot.checkpoints.last().map(|cp| cp.revision))
                    .flatten();
                let from = Before {
                    snap: &before,
                    view: &slot.run.view,
                    opened,
                    now: Self::time(state),
                    changed: slot.changed,
                    batch: (self.config.program == crate::config::Program::Batch)
                        .then(|| self.lifecycle.batch(&slot.run.run))
                        .flatten(),
                };
                match self.staged(r, &from, &input, choice, stored, &effects) {
                    Some(staged) => StepOutcome::Accepted {
                        moved,
                        staged: self.steps.intern(staged),
                    },
                    None => StepOutcome::Impossible,
                }
            }
        }
    }

    /// Everything the write of an accepted step must know, found when it was computed.
    fn staged(
        &self,
        r: usize,
        from: &Before<'_>,
        input: &Input,
        choice: Choice,
        next: super::Interned<super::StoredRun<L::Run>>,
        effects: &Effects,
    ) -> Option<StagedStep<L::Run>> {
        let before = from.snap;
        let after = self.lifecycle.snapshot(&next.run);
        let mut raise = self.step_violations(r, from, &after, input, effects);
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
        next: &super::StoredRun<L::Run>,
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

    /// The worker sends its next dispatch to the tool.
    pub(super) fn dispatch(
        &self,
        state: &WorldState<L::Run>,
        w: usize,
        msg: ToolMsg,
    ) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        let worker = next.workers.get_mut(w)?;
        let Worker::Dispatching { run, queue } = *worker else {
            return None;
        };
        *worker = match queue.rest {
            Some(rest) => Worker::Dispatching { run, queue: rest },
            None => Worker::Idle,
        };
        insert_sorted(&mut next.requests, msg);
        Some(next)
    }

    /// A worker crashes and loses everything volatile. Every run with a dispatch in flight
    /// may have lost the worker waiting for its answer, so a restarted worker may recover it.
    pub(super) fn crash(&self, state: &WorldState<L::Run>, w: usize) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        next.budgets.crashes = next.budgets.crashes.checked_sub(1)?;
        *next.workers.get_mut(w)? = Worker::Idle;
        for slot in &mut next.runs {
            if slot.run.view.in_flight {
                slot.orphaned = true;
            }
        }
        Some(next)
    }

    /// The tool handles a request by its ledger's records under the request's tool key:
    /// commits it (which moves the run's resource), answers a duplicate from the record, or
    /// refuses a fenced attempt. An answer the run's own records would not give came from
    /// another run's record (spec KEY-3).
    pub(super) fn handle(
        &self,
        state: &WorldState<L::Run>,
        msg: ToolMsg,
    ) -> Option<WorldState<L::Run>> {
        let r = usize::from(msg.run);
        let outcome = self.tool_outcome(state, &msg);
        let own = self.outcome_on(state.runs.get(r)?.tool, &msg);
        let key = self.cast.key_of(msg.call)?;
        let met = self.met_at_tool(state, r, key);
        let mut next = state.clone();
        remove_one(&mut next.requests, &msg)?;
        if outcome != own {
            next.violated |= SpecId::Key3;
        }
        if met {
            next.seen |= witness::SHARED_KEY;
        }
        let bit = ToolSide::bit(key, msg.attempt);
        let slot = next.runs.get_mut(r)?;
        if slot.tool.denied_commit & bit != 0 {
            next.seen |= witness::LATE_REQUEST;
        }
        match outcome {
            ToolOutcome::Refuses => {}
            ToolOutcome::Dedupes => insert_sorted(&mut next.responses, msg),
            ToolOutcome::Commits => {
                next.violated |= self.commit_violations(slot, key);
                slot.tool.committed |= bit;
                insert_sorted(&mut next.responses, msg);
                self.move_resource(&mut next, r);
            }
        }
        Some(next)
    }

    /// In a per-run reduction's world, the run left out makes a record under run `r`'s tool
    /// key of `key`, at `attempt`: a commit, or a fence (`Config::foreign_commits`).
    pub(super) fn foreign_record(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        key: u8,
        attempt: u8,
        fence: bool,
    ) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        next.budgets.foreign = next.budgets.foreign.checked_sub(1)?;
        let bit = ToolSide::bit(key, attempt);
        let foreign = &mut next.runs.get_mut(r)?.foreign;
        if fence {
            foreign.fenced |= bit;
            foreign.denied_commit |= bit;
        } else {
            foreign.committed |= bit;
        }
        // Like a borrowed tick, a stand-in for the run left out: no `sometimes` is credited
        // in a state reached through one (spec/check-output.md, "The per-run reduction").
        next.seen |= witness::BORROWED_TIME;
        Some(next)
    }

    /// The network loses a response.
    pub(super) fn lose(
        &self,
        state: &WorldState<L::Run>,
        msg: ToolMsg,
    ) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        next.budgets.losses = next.budgets.losses.checked_sub(1)?;
        remove_one(&mut next.responses, &msg)?;
        Some(next)
    }

    /// An approver sends a decision.
    pub(super) fn decide(
        &self,
        state: &WorldState<L::Run>,
        msg: DecisionMsg,
    ) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        insert_sorted(&mut next.decisions, msg);
        Some(next)
    }

    /// The framework changes the arguments of run `r`'s pending call in the agent's state.
    pub(super) fn change_args(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
    ) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        next.budgets.arg_changes = next.budgets.arg_changes.checked_sub(1)?;
        let slot = next.runs.get_mut(r)?;
        slot.changed = true;
        Some(next)
    }

    /// An outsider moves run `r`'s resource.
    pub(super) fn outsider(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
    ) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        next.budgets.outsider_moves = next.budgets.outsider_moves.checked_sub(1)?;
        next.runs.get(r)?;
        self.move_resource(&mut next, r);
        Some(next)
    }

    /// Moves the resource run `r` acts on: its own, or, where the runs share one
    /// (`Config::shared_resource`), every run's.
    fn move_resource(&self, next: &mut WorldState<L::Run>, r: usize) {
        for (i, slot) in next.runs.iter_mut().enumerate() {
            if i == r || self.config.shared_resource {
                slot.resource = slot.resource.saturating_add(1);
            }
        }
    }
}
