//! The world's books: what each write, dispatch and commit teaches the world about a run's
//! keys, and which safety rules it breaks (the [`Violations`] it raises, by spec ID). Each
//! rule is checked here against the world's own truth, never against the lifecycle's view of
//! itself.

use super::{
    book, in_flight, Answer, Choice, Ending, RunSlot, Settle, Verdict, Violations, Worker, World,
    WorldState,
};
use crate::{Lifecycle, Snapshot};
use resumable_kernel::{
    Decision, Dispatch, Effect, Effects, Event, FailCause, Input, Phase, Reason, Resolution,
    Resume, SpecId, Time,
};

impl<L: Lifecycle> World<L> {
    /// The rules an accepted step breaks, found when it is computed: INV-1, AUD-1 (with
    /// REV-1), SUS-2, and those of a resume.
    pub(super) fn step_violations(
        &self,
        r: usize,
        before: &Snapshot,
        after: &Snapshot,
        input: &Input,
        effects: &Effects,
    ) -> Violations {
        let mut raise = Violations::NONE;
        if before.phase.is_terminal() {
            raise |= SpecId::Inv1;
        }
        let audits = effects
            .iter()
            .filter(|e| matches!(e, Effect::Audit(_)))
            .count();
        let first_ok = matches!(
            effects.iter().next(),
            Some(Effect::Audit(rec)) if rec.revision == after.revision && rec.phase == after.phase.kind()
        );
        if audits != 1 || !first_ok || before.revision.next() != Some(after.revision) {
            raise |= SpecId::Aud1;
        }
        match &input.event {
            Event::Resume(res) => raise |= self.resume_violations(r, before, after, input.at, res),
            Event::Suspend { .. } if matches!(before.phase, Phase::Suspended(_)) => {
                raise |= SpecId::Sus2;
            }
            _ => {}
        }
        raise
    }

    /// The rules an accepted resume must have kept, checked against the world's own truth.
    fn resume_violations(
        &self,
        r: usize,
        before: &Snapshot,
        after: &Snapshot,
        at: Time,
        res: &Resume,
    ) -> Violations {
        let mut raise = Violations::NONE;
        // RES-3: the checkpoint is at the run's revision.
        if res.checkpoint.revision != before.revision {
            raise |= SpecId::Res3;
        }
        // RES-3: a person's go-ahead acts on the resource the checkpoint showed.
        let goes_ahead = matches!(
            res.decision,
            Decision::Intervene {
                resolution: Resolution::Continue,
                ..
            }
        ) && matches!(after.phase, Phase::Running { .. });
        if goes_ahead {
            raise |= self.acts_on_moved_resource(&Input {
                at,
                event: Event::Resume(*res),
            });
        }
        // ID-1: the checkpoint is this run's.
        if self.foreign(&res.checkpoint.identity, r) {
            raise |= SpecId::Id1;
        }
        // RES-5: the suspension has not expired.
        if let Phase::Suspended(s) = &before.phase {
            if at > s.expires_at {
                raise |= SpecId::Res5;
            }
        }
        // APR-4: a denial fails the run.
        if matches!(res.decision, Decision::Deny(_))
            && !matches!(after.phase, Phase::Failed(FailCause::Denied { .. }))
        {
            raise |= SpecId::Apr4;
        }
        if let Decision::Approve(a) | Decision::Deny(a) = &res.decision {
            // APR-2: the decision has not expired.
            if at > a.expires_at {
                raise |= SpecId::Apr2;
            }
            // APR-3: only the recorded approver decides, never the requester.
            if a.approver != self.cast.approver || a.approver == self.cast.requester {
                raise |= SpecId::Apr3;
            }
        }
        raise
    }

    /// RES-3: a resume that acts on the present (dispatches a call, or lets a person's
    /// go-ahead through) while the resource is no longer the version its checkpoint showed.
    /// The facts the world supplies are its truth, so they tell.
    pub(super) fn acts_on_moved_resource(&self, input: &Input) -> Violations {
        match &input.event {
            Event::Resume(res) if res.facts.resource_version != res.checkpoint.resource_version => {
                Violations::of(SpecId::Res3)
            }
            _ => Violations::NONE,
        }
    }

    /// APR-1: the step is a resume by an approval that binds to the pending call, its
    /// arguments, its requester and the run's revision, and the dispatch it makes is exactly
    /// that call. The world checks against its own truth (the call's real arguments, the real
    /// requester), not the lifecycle's view. Expiry and the approver are APR-2 and APR-3.
    pub(super) fn approval_binds(&self, before: &Snapshot, input: &Input, d: &Dispatch) -> bool {
        let Event::Resume(res) = &input.event else {
            return false;
        };
        let Decision::Approve(a) = &res.decision else {
            return false;
        };
        let Phase::Suspended(s) = &before.phase else {
            return false;
        };
        let Some(call) = (self.cast.proposal_by_id(&d.call_id))
            .and_then(|c| self.cast.proposal(c))
            .map(|p| p.call)
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
            let bit = 1u32.checked_shl(u32::from(revision)).unwrap_or(0);
            if slot.won & bit != 0 {
                raise |= SpecId::Res2;
            }
            slot.won |= bit;
        }
        slot.cancelled |= st.choice == Choice::Cancel;
        raise |= can_2(slot.cancelled, &st.next.view);
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
    /// committed for a run that ended as if nothing more would (EFF-2).
    pub(super) fn commit_violations(&self, slot: &RunSlot<L::Run>, key: u8) -> Violations {
        let mut raise = Violations::NONE;
        if slot.tool.committed_key(key) {
            raise |= SpecId::Eff1;
        }
        let ended_believing_done = matches!(
            slot.run.view.ending,
            Some(Ending::Completed | Ending::Denied | Ending::Cancelled | Ending::Error)
        );
        if ended_believing_done {
            raise |= SpecId::Eff2;
        }
        raise
    }
}

/// CAN-2: once a cancel was accepted, the run never runs or completes again: it waits with
/// the cancel visible, or it has failed (cancelled, abandoned by a person, or expired).
fn can_2(cancelled: bool, after: &super::RunView) -> Violations {
    let kept = after.cancel_pending
        || matches!(
            after.ending,
            Some(Ending::Cancelled | Ending::Abandoned | Ending::Expired)
        );
    if cancelled && !kept {
        Violations::of(SpecId::Can2)
    } else {
        Violations::NONE
    }
}
