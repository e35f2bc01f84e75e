//! The world's books: what each write, dispatch and commit teaches the world about a run's
//! keys, and which safety rules it breaks (the [`Violations`] it raises, by spec ID). Each
//! rule is checked here against the world's own truth, never against the lifecycle's view of
//! itself.

use super::cast::BATCH;
use super::{
    book, in_flight, Answer, CallVerdict, Choice, DecisionMsg, Ending, RunSlot, Settle, StagedStep,
    Verdict, Violations, Worker, World, WorldState,
};
use crate::config::Program;
use crate::{Lifecycle, Snapshot};
use resumable_kernel::{Checkpoint, Phase, ReasonKind, SlotState, SpecId};

impl<L: Lifecycle> World<L> {
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
        let before = &slot.run.value().snapshot;
        if before.revision.0 != st.from {
            return Some(next);
        }
        let after = &st.next.value().snapshot;
        let mut raise = st.raise;
        raise |= self.book_step(state, slot, &st, after);
        if let Some(queue) = st.queue {
            next.workers[w] = Worker::Dispatching { run: st.run, queue };
        }
        raise |= Self::book_resume(slot, &st);
        raise |= self.persist(slot, &st);
        self.follow_phase(slot, before, &st, now);
        slot.run = st.next;
        next.violated |= raise;
        next.seen |= st.witness;
        Some(next)
    }

    /// Enters what a landing step settled, decided and dispatched in the ledger, and returns
    /// the rules it breaks (see [`Self::book_dispatch`], [`Self::batch_dispatch`] and
    /// [`Self::batch_settled`]).
    fn book_step(
        &self,
        state: &WorldState<L::Run>,
        slot: &mut RunSlot<L::Run>,
        st: &StagedStep<L::Run>,
        after: &Snapshot,
    ) -> Violations {
        let mut raise = Violations::NONE;
        let was = self.batch_states(&slot.run.run);
        self.settle_books(state, slot, &st.choice, after);
        if let Choice::Decision(m) = st.choice {
            if let Verdict::Batch(picks) = m.verdict {
                for (decided, pick) in slot.decided.iter_mut().zip(picks) {
                    *decided = decided.or(pick);
                }
            }
        }
        raise |= Self::settled_from_elsewhere(slot, &st.choice, &self.cast);
        let sent = st.dispatches.iter().zip(&st.tool_keys);
        for (i, (call, attempt, tool_key)) in sent
            .filter_map(|(d, t)| d.map(|(c, a)| (c, a, *t)))
            .enumerate()
        {
            if let Some(k) = self.cast.key_of(call) {
                if let Some(first) = slot.tool_keys.get_mut(usize::from(k)) {
                    *first = first.or(tool_key);
                }
            }
            raise |= self.book_dispatch(slot, call, attempt, st.approval_binds);
            raise |= self.batch_dispatch(slot, call, st.edited & (1 << i) != 0);
        }
        raise |= self.batch_settled(slot, &was, &self.batch_states(&st.next.run), &st.next.view);
        raise
    }

    /// KEY-3 when a write lands: the run records a commit its own requests never made, which
    /// the tool's answer (a query's "committed", read by the reconciler or the operator) took
    /// from another run's record under the same tool key (`world/tool.rs`).
    fn settled_from_elsewhere(
        slot: &RunSlot<L::Run>,
        choice: &Choice,
        cast: &super::Cast,
    ) -> Violations {
        let borrowed = match *choice {
            Choice::Reconcile {
                call,
                attempt,
                answer: Answer::Committed,
                ..
            } => cast
                .key_of(call)
                .is_some_and(|k| slot.tool.committed & super::ToolSide::bit(k, attempt) == 0),
            Choice::Intervene {
                call: Some(call),
                settle: Settle::Committed,
            } => cast
                .key_of(call)
                .is_some_and(|k| !slot.tool.committed_key(k)),
            _ => false,
        };
        if borrowed {
            Violations::of(SpecId::Key3)
        } else {
            Violations::NONE
        }
    }

    /// Enters a landing resume in the ledger by the checkpoint revision it was taken from,
    /// and returns RES-2 if a resume already won from it.
    fn book_resume(slot: &mut RunSlot<L::Run>, st: &StagedStep<L::Run>) -> Violations {
        let mut raise = Violations::NONE;
        // A decision that leaves a batch awaiting others has not resumed it: every decision
        // of a batch binds to its one checkpoint, and only the last resumes (spec 5.5).
        let partial = matches!(st.choice, Choice::Decision(m) if matches!(m.verdict, Verdict::Batch(_)))
            && st.next.view.reason == Some(ReasonKind::PendingBatch);
        if let Some(revision) = st.resumed_from.filter(|_| !partial) {
            let bit = 1u32.checked_shl(u32::from(revision)).unwrap_or(0);
            if slot.won & bit != 0 {
                raise |= SpecId::Res2;
            }
            slot.won |= bit;
        }
        raise
    }

    /// Persists what lands with the run: an accepted cancel, the step's audit records and its
    /// checkpoint. Returns CAN-2 if an accepted cancel is lost.
    fn persist(&self, slot: &mut RunSlot<L::Run>, st: &StagedStep<L::Run>) -> Violations {
        slot.cancelled |= st.choice == Choice::Cancel;
        let persisted = st
            .checkpoint
            .as_deref()
            .or(slot.checkpoints.last().map(|c| &**c));
        let raise = can_2(slot.cancelled, &st.next.view, persisted);
        slot.audited = slot.audited.saturating_add(st.audits);
        // A batch's checkpoint, emitted again with each decision recorded, is persisted once.
        if let Some(cp) = st
            .checkpoint
            .filter(|cp| slot.checkpoints.last() != Some(cp))
        {
            slot.checkpoints = self.append(slot.checkpoints, cp);
        }
        raise
    }

    /// What the slot keeps of the run across a landing step from `before`: when its
    /// suspension began (LIVE-1), whether a crash still leaves it orphaned (REC-1), and the
    /// framework's old config of it (REC-6).
    fn follow_phase(
        &self,
        slot: &mut RunSlot<L::Run>,
        before: &Snapshot,
        st: &StagedStep<L::Run>,
        now: u8,
    ) {
        let after = &st.next.value().snapshot;
        slot.waiting_since = match (&before.phase, &after.phase) {
            (Phase::Suspended(b), Phase::Suspended(a))
                if b.since == a.since && b.reason.kind() == a.reason.kind() =>
            {
                slot.waiting_since
            }
            (_, Phase::Suspended(_)) => Some(now),
            _ => None,
        };
        slot.orphaned = slot.orphaned
            && st.next.view.in_flight
            && in_flight(&before.phase) == in_flight(&after.phase);
        // The framework's own checkpoint of the run while the gated call first waits for
        // approval: what a resume from that old config holds (spec REC-6).
        if self.config.old_configs > 0
            && slot.config.is_none()
            && st.next.view.reason == Some(ReasonKind::PendingApproval)
        {
            slot.config = Some(st.next);
        }
    }

    /// Enters a durable dispatch in the ledger and returns the rules it breaks: a key whose
    /// outcome is still unknown (REC-2), whose result is known (REC-4), that was denied
    /// (APR-4), that is gated and was never validly approved (APR-1), that goes again under
    /// an attempt the tool's contract does not make safe and live (REC-3), or that carries
    /// other arguments than the key's first dispatch (KEY-1).
    fn book_dispatch(
        &self,
        slot: &mut RunSlot<L::Run>,
        call: u8,
        attempt: u8,
        approved: bool,
    ) -> Violations {
        let (Some(key), Some(proposal)) = (self.cast.key_of(call), self.cast.proposal(call)) else {
            return Violations::NONE;
        };
        let k = usize::from(key);
        let b = slot.books[k];
        let mut raise = Violations::NONE;
        if b & book::OPEN != 0 {
            raise |= SpecId::Rec2;
        }
        if b & book::SETTLED != 0 {
            raise |= SpecId::Rec4;
        }
        if b & book::DENIED != 0 {
            raise |= SpecId::Apr4;
        }
        if self.config.program.gated(call) {
            if approved {
                slot.books[k] |= book::APPROVED;
            } else if b & book::APPROVED == 0 {
                raise |= SpecId::Apr1;
            }
        }
        match slot.payloads[k]
            .checked_sub(1)
            .and_then(|p| self.cast.proposal(p))
        {
            Some(first) if first.call.args != proposal.call.args => raise |= SpecId::Key1,
            Some(_) => {}
            None => slot.payloads[k] = call.saturating_add(1),
        }
        let bit = super::ToolSide::bit(key, attempt);
        let earlier = slot.dispatched & super::ToolSide::every_attempt(key);
        if earlier != 0 {
            // An earlier attempt is safe only if fenced, or if it is this very attempt on a
            // tool that dedupes; this attempt is live only if not fenced (spec REC-3).
            let fenced = if self.config.query_fences {
                slot.tool.fenced
            } else {
                0
            };
            let deduped = if self.config.dedupes { bit } else { 0 };
            if earlier & !fenced & !deduped != 0 || fenced & bit != 0 {
                raise |= SpecId::Rec3;
            }
        }
        slot.dispatched |= bit;
        slot.books[k] |= book::OPEN;
        raise
    }

    /// The batch rules a durable dispatch breaks, against the world's ledger of the
    /// decisions accepted: a call of the batch runs only if a decision naming it approved or
    /// edited it (BAT-2), never if one rejected, answered or denied it (BAT-3), and with the
    /// approver's arguments: the edited ones after an edit, the proposed ones otherwise
    /// (BAT-5).
    fn batch_dispatch(&self, slot: &RunSlot<L::Run>, call: u8, edited: bool) -> Violations {
        if self.config.program != Program::Batch {
            return Violations::NONE;
        }
        let Some(i) = BATCH.iter().position(|&p| p == call) else {
            return Violations::NONE;
        };
        match slot.decided.get(i).copied().flatten() {
            Some(v) if v.runs() => {
                if (v == CallVerdict::Edit) != edited {
                    Violations::of(SpecId::Bat5)
                } else {
                    Violations::NONE
                }
            }
            Some(_) => Violations::of(SpecId::Bat2) | Violations::of(SpecId::Bat3),
            None => Violations::of(SpecId::Bat2),
        }
    }

    /// BAT-4 when a write lands: a call of the batch once settled (committed, rejected,
    /// answered, dropped) stays so; a call newly settled is so in the world's truth (the tool
    /// committed its key and the result is the tool's; the approver rejected it, or answered
    /// it; dropped with nothing committed under its key); and a run that completes has every
    /// call of its batch settled.
    fn batch_settled(
        &self,
        slot: &RunSlot<L::Run>,
        was: &[Option<SlotState>; 2],
        now: &[Option<SlotState>; 2],
        after: &super::RunView,
    ) -> Violations {
        let settled = |s: &Option<SlotState>| {
            matches!(
                s,
                Some(
                    SlotState::Committed { .. }
                        | SlotState::Rejected { .. }
                        | SlotState::Responded { .. }
                        | SlotState::Dropped
                )
            )
        };
        let mut broken = false;
        for (i, ((b, a), call)) in was.iter().zip(now).zip(BATCH).enumerate() {
            if settled(b) {
                broken |= a != b;
                continue;
            }
            let key = self.cast.key_of(call).unwrap_or(0);
            let decided = slot.decided.get(i).copied().flatten();
            broken |= match a {
                Some(SlotState::Committed { result }) => {
                    !slot.tool.committed_key(key) || Some(*result) != self.result_of(call)
                }
                Some(SlotState::Rejected { .. }) => decided != Some(CallVerdict::Reject),
                Some(SlotState::Responded { .. }) => decided != Some(CallVerdict::Respond),
                Some(SlotState::Dropped) => slot.tool.committed_key(key),
                _ => false,
            };
            if after.ending == Some(Ending::Completed) && a.is_some() && !settled(a) {
                broken = true;
            }
        }
        if broken {
            Violations::of(SpecId::Bat4)
        } else {
            Violations::NONE
        }
    }

    /// What an accepted input teaches the world's ledger about the run's keys.
    fn settle_books(
        &self,
        state: &WorldState<L::Run>,
        slot: &mut RunSlot<L::Run>,
        choice: &Choice,
        after: &Snapshot,
    ) {
        let key = |call: u8| self.cast.key_of(call).map(usize::from);
        let settle = |books: &mut [u8; super::KEYS], k: Option<usize>| {
            if let Some(b) = k.and_then(|k| books.get_mut(k)) {
                *b = (*b & !book::OPEN) | book::SETTLED;
            }
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
            } => settle(&mut slot.books, key(call)),
            Choice::Reconcile {
                call,
                answer: Answer::NotCommitted,
                ..
            }
            | Choice::Intervene {
                call: Some(call),
                settle: Settle::Continue,
            } => {
                if let Some(b) = key(call).and_then(|k| slot.books.get_mut(k)) {
                    *b &= !book::OPEN;
                }
            }
            Choice::Decision(DecisionMsg {
                verdict: Verdict::Batch(picks),
                ..
            }) => {
                for (pick, call) in picks.iter().zip(BATCH) {
                    if *pick == Some(CallVerdict::Deny) {
                        if let Some(b) = key(call).and_then(|k| slot.books.get_mut(k)) {
                            *b |= book::DENIED;
                        }
                    }
                }
            }
            Choice::Decision(m) if m.verdict == Verdict::Deny => {
                let denied = (state.runs.get(usize::from(m.source)))
                    .and_then(|s| s.checkpoints.get(usize::from(m.checkpoint)))
                    .and_then(|cp| cp.pending)
                    .and_then(|p| self.cast.proposal_by_id(&p.call_id))
                    .unwrap_or(super::GATED);
                if let Some(b) = key(denied).and_then(|k| slot.books.get_mut(k)) {
                    *b |= book::DENIED;
                }
            }
            _ => {}
        }
        let recorded =
            (after.last_call.as_ref()).and_then(|c| self.cast.proposal_by_id(&c.call_id));
        if let Some(call) = recorded {
            settle(&mut slot.books, key(call));
        }
    }

    /// The rules a commit at the tool breaks: a key committed twice (EFF-1), or anything
    /// committed for a run that ended as if nothing more would (EFF-2): every end but one
    /// that names the unsettled effect (expired with it unresolved) or that a person chose
    /// (abandoned).
    pub(super) fn commit_violations(&self, slot: &RunSlot<L::Run>, key: u8) -> Violations {
        let mut raise = Violations::NONE;
        if slot.tool.committed_key(key) {
            raise |= SpecId::Eff1;
        }
        let ended_believing_done = matches!(
            slot.run.view.ending,
            Some(
                Ending::Completed
                    | Ending::Denied
                    | Ending::Cancelled
                    | Ending::Error
                    | Ending::Expired { unresolved: false }
            )
        );
        if ended_believing_done {
            raise |= SpecId::Eff2;
        }
        raise
    }
}

/// CAN-2 (spec/lifecycle.md 10): once a cancel was accepted, the run never runs or completes
/// again. It waits with the cancel visible in its suspension and in the checkpoint a
/// restarted worker, an operator or an approver reads (`persisted`, the latest the write
/// leaves, which must be of the run's revision); or it has ended cancelled, abandoned by a
/// person, or expired with the effect unresolved.
fn can_2(cancelled: bool, after: &super::RunView, persisted: Option<&Checkpoint>) -> Violations {
    let checkpointed = persisted
        .is_some_and(|cp| cp.revision.0 == after.revision && cp.cancel_requested_by.is_some());
    let kept = (after.cancel_pending && checkpointed)
        || matches!(
            after.ending,
            Some(Ending::Cancelled | Ending::Abandoned | Ending::Expired { unresolved: true })
        );
    if cancelled && !kept {
        Violations::of(SpecId::Can2)
    } else {
        Violations::NONE
    }
}
