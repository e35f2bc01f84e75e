//! How each action but a worker's step (`step.rs`) changes the world: what feeding an input
//! uses up, the tool, the network, the approvers, the outsider, the framework and crashes.
//! The lifecycle decides every step; the world only delivers inputs, writes what was
//! accepted, and keeps the ledger the properties read (see `ledger`).

use super::{
    witness, Answer, Choice, DecisionMsg, Intent, RunView, ToolMsg, ToolOutcome, ToolSide, Verdict,
    Worker, World, WorldState,
};
use crate::Lifecycle;
use resumable_kernel::{ReasonKind, SpecId, Time};
use smallvec::{Array, SmallVec};

/// Inserts into a sorted vector, keeping it sorted: the multiset's canonical order.
pub(super) fn insert_sorted<A: Array>(v: &mut SmallVec<A>, x: A::Item)
where
    A::Item: Ord,
{
    let i = v.partition_point(|y| *y <= x);
    v.insert(i, x);
}

/// Removes one element equal to `x`, if any.
pub(super) fn remove_one<A: Array>(v: &mut SmallVec<A>, x: &A::Item) -> Option<A::Item>
where
    A::Item: PartialEq,
{
    let i = v.iter().position(|y| y == x)?;
    Some(v.remove(i))
}

impl<L: Lifecycle> World<L> {
    /// What consuming a choice does to the world before the lifecycle sees it: a message or
    /// a budget used up, a query's durable answer, the witnesses it shows. Returns whether
    /// anything was used up (a refused input that used nothing is no transition).
    pub(super) fn consume(
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
