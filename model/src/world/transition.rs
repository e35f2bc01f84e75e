//! How each action changes the world. The lifecycle decides every step; the world only
//! delivers inputs, writes what was accepted, and keeps the ledger the properties read.

use super::{
    book, in_flight, violation, witness, Action, Answer, Choice, DecisionMsg, Intent, Party,
    RunSlot, Settle, Staged, ToolMsg, ToolOutcome, ToolSide, Verdict, Worker, World, WorldState,
};
use crate::{Lifecycle, Snapshot};
use resumable_kernel::{
    Approval, Checkpoint, Decision, Effect, Effects, Event, Facts, Input, Phase, QueryAnswer,
    Reason, Rejection, Resolution, Resume, Time, Wait,
};

/// Inserts into a sorted vector, keeping it sorted: the multiset's canonical order.
fn insert_sorted<T: Ord>(v: &mut Vec<T>, x: T) {
    let i = v.partition_point(|y| *y <= x);
    v.insert(i, x);
}

/// Removes one element equal to `x`, if any.
fn remove_one<T: PartialEq>(v: &mut Vec<T>, x: &T) -> Option<T> {
    let i = v.iter().position(|y| y == x)?;
    Some(v.remove(i))
}

impl<L: Lifecycle> World<L> {
    /// The facts a resumer establishes under current policy (spec RES-7): the resource is
    /// unchanged, the step is permitted and within budget.
    fn facts(&self) -> Facts {
        Facts {
            resource_version: self.cast.resource_version,
            permitted: true,
            within_budget: true,
        }
    }

    /// The decision an approver's message carries, built from the checkpoint it was made on:
    /// an approval binds to that checkpoint's call, arguments, requester and revision.
    fn decision_of(&self, m: &DecisionMsg, cp: &Checkpoint) -> Decision {
        let pending = cp.pending;
        let approval = Approval {
            call_id: pending.map_or(self.cast.calls[1].call_id, |p| p.call_id),
            args: match m.verdict {
                Verdict::ApproveEdited => self.cast.edited_args,
                _ => pending.map_or(self.cast.calls[1].args, |p| p.args),
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
            Verdict::Approve | Verdict::ApproveEdited => Decision::Approve(approval),
        }
    }

    /// The event a choice feeds run `r`, as the world would build it in `state`.
    pub(super) fn event_of(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        choice: &Choice,
    ) -> Option<Event> {
        let at = Self::time(state);
        let latest = || {
            state
                .runs
                .get(r)
                .and_then(|s| s.checkpoints.last().map(|c| **c))
        };
        let resume = |checkpoint: Checkpoint, decision: Decision| {
            Event::Resume(Resume {
                checkpoint,
                decision,
                facts: self.facts(),
            })
        };
        Some(match *choice {
            Choice::Agent(Intent::Suspend) => Event::Suspend {
                wait: Wait::Approval {
                    call: self.cast.calls[1],
                    requester: self.cast.requester,
                },
                expires_at: at.after(u64::from(self.config.suspend_for)),
                responsible: self.cast.approver,
                resource_version: self.cast.resource_version,
            },
            Choice::Agent(Intent::Dispatch(c)) => Event::Dispatch {
                call: *self.cast.calls.get(usize::from(c))?,
            },
            Choice::Agent(Intent::Complete) => Event::Complete {
                result: self.cast.final_result,
            },
            Choice::Decision(m) => {
                let cp = **state
                    .runs
                    .get(usize::from(m.source))?
                    .checkpoints
                    .get(usize::from(m.checkpoint))?;
                resume(cp, self.decision_of(&m, &cp))
            }
            Choice::Result { call, attempt } => Event::ToolResult {
                call_id: self.cast.calls.get(usize::from(call))?.call_id,
                attempt,
                result: *self.cast.results.get(usize::from(call))?,
            },
            Choice::Recover => Event::Recover,
            Choice::Expire => Event::Expire,
            Choice::Reconcile {
                checkpoint,
                call,
                answer,
                ..
            } => {
                let answer = match answer {
                    Answer::Committed => QueryAnswer::Committed {
                        result: *self.cast.results.get(usize::from(call))?,
                    },
                    Answer::NotCommitted => QueryAnswer::NotCommitted,
                    Answer::Unknown => QueryAnswer::Unknown,
                };
                let cp = **state
                    .runs
                    .get(r)?
                    .checkpoints
                    .get(usize::from(checkpoint))?;
                resume(cp, Decision::Reconcile(answer))
            }
            Choice::Cancel => Event::Cancel {
                by: self.cast.owner,
            },
            Choice::Intervene { call, settle } => {
                let resolution = match settle {
                    Settle::Committed => Resolution::Committed {
                        result: *self.cast.results.get(usize::from(call.unwrap_or(1)))?,
                    },
                    Settle::Abandon => Resolution::Abandon,
                };
                resume(
                    latest()?,
                    Decision::Intervene {
                        by: self.cast.policy.operator,
                        resolution,
                    },
                )
            }
        })
    }

    /// The input a step action feeds, for traces.
    pub fn input_of(&self, state: &WorldState<L::Run>, action: &Action) -> Option<Input> {
        match action {
            Action::Step { run, choice, .. } => Some(Input {
                at: Self::time(state),
                event: self.event_of(state, usize::from(*run), choice)?,
            }),
            _ => None,
        }
    }

    /// What the lifecycle says to a step action: its effects, or its rejection.
    pub fn verdict_of(
        &self,
        state: &WorldState<L::Run>,
        action: &Action,
    ) -> Option<Result<(L::Run, Effects), Rejection>> {
        let Action::Step { run, .. } = action else {
            return None;
        };
        let input = self.input_of(state, action)?;
        let slot = state.runs.get(usize::from(*run))?;
        Some(self.lifecycle.step(&slot.run.run, &input))
    }

    /// A worker reads run `r`, feeds it the chosen input and keeps the step it computed. Inputs
    /// from the network are used up whether accepted or refused.
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
        let slot = state.runs.get(r)?;
        let before = self.lifecycle.snapshot(&slot.run.run);
        let input = Input {
            at: Self::time(state),
            event: self.event_of(state, r, &choice)?,
        };
        let mut next = state.clone();
        let mut used = false;
        if before.phase.is_terminal()
            && matches!(choice, Choice::Decision(_) | Choice::Result { .. })
        {
            next.seen |= witness::LATE_TO_TERMINAL;
        }
        match choice {
            Choice::Decision(m) => {
                let mut taken = remove_one(&mut next.decisions, &m)?;
                if taken.delivered > 0 {
                    next.budgets.duplicates = next.budgets.duplicates.checked_sub(1)?;
                }
                taken.delivered = taken.delivered.saturating_add(1);
                insert_sorted(&mut next.decisions, taken);
                if m.target == m.source && u64::from(m.revision) < before.revision.0 {
                    next.seen |= witness::STALE_ARRIVED;
                }
                if input.at > Time(u64::from(m.expires_at)) {
                    next.seen |= witness::EXPIRED_APPROVAL;
                }
                if matches!(&before.phase, Phase::Suspended(s) if input.at > s.expires_at) {
                    next.seen |= witness::AFTER_EXPIRY;
                }
                used = true;
            }
            Choice::Result { call, attempt } => {
                let msg = ToolMsg {
                    run: u8::try_from(r).ok()?,
                    call,
                    attempt,
                };
                remove_one(&mut next.responses, &msg)?;
                used = true;
            }
            Choice::Reconcile {
                call,
                attempt,
                answer: Answer::NotCommitted,
                ..
            } => {
                // The query itself is a durable act at the tool: it records its answer and, if
                // the tool fences, the key can no longer commit.
                let key = ToolSide::key(call, attempt);
                let tool = &mut next.runs.get_mut(r)?.tool;
                tool.denied_commit |= key;
                if self.config.query_fences {
                    tool.fenced |= key;
                }
                used = next.runs[r].tool != slot.tool;
            }
            Choice::Cancel => {
                next.budgets.cancels = next.budgets.cancels.checked_sub(1)?;
                used = true;
            }
            _ => {}
        }
        match self.lifecycle.step(&slot.run.run, &input) {
            Err(rejection) => {
                if let Event::Resume(res) = &input.event {
                    // ID-1: a foreign checkpoint must be refused for its identity, first.
                    if self.foreign(&res.checkpoint.identity, r)
                        && !matches!(rejection, Rejection::IdentityMismatch { .. })
                    {
                        next.violated |= violation::ID_1;
                        used = true;
                    }
                }
                used.then_some(next)
            }
            Ok((run, effects)) => {
                let staged = self.staged(r, &before, &input, choice, run, &effects)?;
                *next.workers.get_mut(w)? = Worker::Staged(staged);
                Some(next)
            }
        }
    }

    /// Everything the write of an accepted step must know, found when it was computed.
    fn staged(
        &self,
        r: usize,
        before: &Snapshot,
        input: &Input,
        choice: Choice,
        run: L::Run,
        effects: &Effects,
    ) -> Option<Staged<L::Run>> {
        let next = self.store(run);
        let after = self.lifecycle.snapshot(&next.run);
        let mut raise = 0;
        if before.phase.is_terminal() {
            raise |= violation::INV_1;
        }
        // AUD-1 (with REV-1): exactly one audit record, first, describing the next revision.
        let audits = effects
            .iter()
            .filter(|e| matches!(e, Effect::Audit(_)))
            .count();
        let first_ok = matches!(
            effects.iter().next(),
            Some(Effect::Audit(rec)) if rec.revision == after.revision && rec.phase == after.phase.kind()
        );
        if audits != 1 || !first_ok || before.revision.next() != Some(after.revision) {
            raise |= violation::AUD_1;
        }
        match &input.event {
            Event::Resume(res) => raise |= self.resume_violations(r, before, input.at, res),
            Event::Suspend { .. } if matches!(before.phase, Phase::Suspended(_)) => {
                raise |= violation::SUS_2;
            }
            _ => {}
        }
        let mut dispatches = [None; 3];
        let mut approval_binds = false;
        let sent = effects.iter().filter_map(|e| match e {
            Effect::Dispatch(d) => Some(d),
            _ => None,
        });
        for (slot, d) in dispatches.iter_mut().zip(sent) {
            // A dispatch of a call the world does not know is counted against `c1`, the only
            // call any program gates: the world's ledger must never lose a dispatch.
            let call = self.cast.call_index(&d.call_id).unwrap_or(1);
            *slot = Some((call, d.attempt));
            approval_binds |=
                self.config.program.gated(call) && self.approval_binds(before, input, d);
        }
        let mut witness = 0;
        match (choice, &before.phase) {
            (
                Choice::Result { .. },
                Phase::Running {
                    in_flight: Some(f), ..
                },
            ) if f.dispatches >= 2 => witness |= witness::RETRY_SUCCEEDED,
            (
                Choice::Reconcile {
                    answer: Answer::Committed,
                    ..
                },
                _,
            ) => witness |= witness::REUSED,
            _ => {}
        }
        Some(Staged {
            run: u8::try_from(r).ok()?,
            from: before.revision.0,
            choice,
            next,
            checkpoint: effects.checkpoint().map(|c| self.checkpoints.intern(*c)),
            dispatches,
            resumed_from: match &input.event {
                Event::Resume(res) => u8::try_from(res.checkpoint.revision.0.min(31)).ok(),
                _ => None,
            },
            audits: u8::try_from(audits).unwrap_or(u8::MAX),
            approval_binds,
            raise,
            witness,
        })
    }

    /// The rules an accepted resume must have kept, checked against the world's own truth.
    fn resume_violations(&self, r: usize, before: &Snapshot, at: Time, res: &Resume) -> u16 {
        let mut raise = 0;
        // RES-3: the checkpoint is at the run's revision.
        if res.checkpoint.revision != before.revision {
            raise |= violation::RES_3;
        }
        // ID-1: the checkpoint is this run's.
        if self.foreign(&res.checkpoint.identity, r) {
            raise |= violation::ID_1;
        }
        // RES-5: the suspension has not expired.
        if let Phase::Suspended(s) = &before.phase {
            if at > s.expires_at {
                raise |= violation::RES_5;
            }
        }
        if let Decision::Approve(a) | Decision::Deny(a) = &res.decision {
            // APR-2: the decision has not expired.
            if at > a.expires_at {
                raise |= violation::APR_2;
            }
            // APR-3: only the recorded approver decides, never the requester.
            if a.approver != self.cast.approver || a.approver == self.cast.requester {
                raise |= violation::APR_3;
            }
        }
        raise
    }

    /// APR-1: the step is a resume by an approval that binds to the pending call, its
    /// arguments, its requester and the run's revision, and the dispatch it makes is exactly
    /// that call. The world checks against its own truth (the call's real arguments, the real
    /// requester), not the lifecycle's view. Expiry and the approver are APR-2 and APR-3.
    fn approval_binds(
        &self,
        before: &Snapshot,
        input: &Input,
        d: &resumable_kernel::Dispatch,
    ) -> bool {
        let Event::Resume(res) = &input.event else {
            return false;
        };
        let Decision::Approve(a) = &res.decision else {
            return false;
        };
        let Phase::Suspended(s) = &before.phase else {
            return false;
        };
        let Some(call) = self
            .cast
            .call_index(&d.call_id)
            .and_then(|c| self.cast.calls.get(usize::from(c)))
        else {
            return false;
        };
        let pending = matches!(
            &s.reason,
            Reason::PendingApproval { call: p, .. } if p.call.call_id == call.call_id
        );
        pending
            && a.call_id == call.call_id
            && a.args == call.args
            && d.args == call.args
            && a.revision == before.revision
            && res.checkpoint.revision == before.revision
            && a.requester == self.cast.requester
    }

    /// The worker's compare-and-set: if the store still holds the revision it read, the run,
    /// its audit record and its checkpoint land together; otherwise the worker drops its step.
    pub(super) fn commit(
        &self,
        state: &WorldState<L::Run>,
        w: usize,
    ) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        let Worker::Staged(st) = std::mem::replace(next.workers.get_mut(w)?, Worker::Idle) else {
            return None;
        };
        let r = usize::from(st.run);
        let now = next.now;
        let slot = next.runs.get_mut(r)?;
        let before = self.lifecycle.snapshot(&slot.run.run);
        if before.revision.0 != st.from {
            return Some(next);
        }
        let after = self.lifecycle.snapshot(&st.next.run);
        let mut raise = st.raise;
        self.settle_books(state, slot, &st.choice, &after);
        for (call, attempt) in st.dispatches.iter().flatten().copied() {
            raise |= self.book_dispatch(slot, call, attempt, st.approval_binds);
        }
        if st.dispatches[0].is_some() {
            next.workers[w] = Worker::Dispatching {
                run: st.run,
                queue: st.dispatches,
            };
        }
        if let Some(revision) = st.resumed_from {
            let bit = 1u32 << revision.min(31);
            if slot.won & bit != 0 {
                raise |= violation::RES_2;
            }
            slot.won |= bit;
        }
        slot.audited = slot.audited.saturating_add(st.audits);
        if let Some(cp) = st.checkpoint {
            slot.checkpoints = self.append(slot.checkpoints, *cp);
        }
        slot.waiting_since = match (&before.phase, &after.phase) {
            (Phase::Suspended(b), Phase::Suspended(a))
                if b.since == a.since && b.reason.kind() == a.reason.kind() =>
            {
                slot.waiting_since
            }
            (_, Phase::Suspended(_)) => Some(now),
            _ => None,
        };
        slot.orphaned = slot.orphaned && in_flight(&before.phase) == in_flight(&after.phase);
        slot.run = st.next;
        next.violated |= raise;
        next.seen |= st.witness;
        Some(next)
    }

    /// Enters a durable dispatch in the ledger and returns the rules it breaks: a call whose
    /// outcome is still unknown (REC-2), whose result is known (REC-4), that was denied
    /// (APR-4), that is gated and was never validly approved (APR-1), or that goes again under
    /// a key the tool's contract does not make safe and live (REC-3).
    fn book_dispatch(
        &self,
        slot: &mut RunSlot<L::Run>,
        call: u8,
        attempt: u8,
        approved: bool,
    ) -> u16 {
        let c = usize::from(call.min(1));
        let b = slot.books[c];
        let mut raise = 0;
        if b & book::OPEN != 0 {
            raise |= violation::REC_2;
        }
        if b & book::SETTLED != 0 {
            raise |= violation::REC_4;
        }
        if b & book::DENIED != 0 {
            raise |= violation::APR_4;
        }
        if self.config.program.gated(call) {
            if approved {
                slot.books[c] |= book::APPROVED;
            } else if b & book::APPROVED == 0 {
                raise |= violation::APR_1;
            }
        }
        let key = ToolSide::key(call, attempt);
        let earlier = slot.dispatched & ToolSide::call(call);
        if earlier != 0 {
            // An earlier key is safe only if fenced, or if it is this very key on a tool that
            // dedupes; this key is live only if not fenced (spec REC-3, the tool table).
            let fenced = if self.config.query_fences {
                slot.tool.fenced
            } else {
                0
            };
            let deduped = if self.config.dedupes { key } else { 0 };
            if earlier & !fenced & !deduped != 0 || fenced & key != 0 {
                raise |= violation::REC_3;
            }
        }
        slot.dispatched |= key;
        slot.books[c] |= book::OPEN;
        raise
    }

    /// What an accepted input teaches the world's ledger about the run's calls.
    fn settle_books(
        &self,
        state: &WorldState<L::Run>,
        slot: &mut RunSlot<L::Run>,
        choice: &Choice,
        after: &Snapshot,
    ) {
        let settle = |books: &mut [u8; 2], call: u8| {
            let c = usize::from(call.min(1));
            books[c] = (books[c] & !book::OPEN) | book::SETTLED;
        };
        match *choice {
            Choice::Result { call, .. }
            | Choice::Reconcile {
                call,
                answer: Answer::Committed,
                ..
            }
            | Choice::Intervene {
                call: Some(call),
                settle: Settle::Committed,
            } => settle(&mut slot.books, call),
            Choice::Reconcile {
                call,
                answer: Answer::NotCommitted,
                ..
            } => slot.books[usize::from(call.min(1))] &= !book::OPEN,
            Choice::Decision(m) if m.verdict == Verdict::Deny => {
                let call = state
                    .runs
                    .get(usize::from(m.source))
                    .and_then(|s| s.checkpoints.get(usize::from(m.checkpoint)))
                    .and_then(|cp| cp.pending)
                    .and_then(|p| self.cast.call_index(&p.call_id))
                    .unwrap_or(1);
                slot.books[usize::from(call.min(1))] |= book::DENIED;
            }
            _ => {}
        }
        if let Some(call) = after
            .last_call
            .as_ref()
            .and_then(|c| self.cast.call_index(&c.call_id))
        {
            settle(&mut slot.books, call);
        }
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
        let Worker::Dispatching { run, queue } = worker else {
            return None;
        };
        let rest = [queue[1], queue[2], None];
        *worker = if rest[0].is_some() {
            Worker::Dispatching {
                run: *run,
                queue: rest,
            }
        } else {
            Worker::Idle
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

    /// The tool handles a request: commits it, answers a duplicate key from its record, or
    /// refuses a fenced key.
    pub(super) fn handle(
        &self,
        state: &WorldState<L::Run>,
        msg: ToolMsg,
    ) -> Option<WorldState<L::Run>> {
        let outcome = self.tool_outcome(state, &msg);
        let mut next = state.clone();
        remove_one(&mut next.requests, &msg)?;
        let key = ToolSide::key(msg.call, msg.attempt);
        let tool = &mut next.runs.get_mut(usize::from(msg.run))?.tool;
        if tool.denied_commit & key != 0 {
            next.seen |= witness::LATE_REQUEST;
        }
        match outcome {
            ToolOutcome::Refuses => {}
            ToolOutcome::Dedupes => insert_sorted(&mut next.responses, msg),
            ToolOutcome::Commits => {
                // EFF-1: a second commit of the same call, under any key.
                if tool.committed_call(msg.call) {
                    next.violated |= violation::EFF_1;
                }
                tool.committed |= key;
                insert_sorted(&mut next.responses, msg);
            }
        }
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
}
