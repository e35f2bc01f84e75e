//! LIVE-2: the answers the responsible party of a suspension can honestly give now, and
//! whether the lifecycle accepts any of them. A run whose suspension has not expired and
//! accepts none of them is stuck with honest facts.

use super::memo::{self, AnswerKey};
use super::{CallVerdict, DecisionMsg, Party, Picks, RunSlot, Settle, Verdict, World, WorldState};
use crate::Lifecycle;
use resumable_kernel::{
    Approval, BoundCall, Checkpoint, Decision, Digest, Event, Input, Name, Phase, QueryAnswer,
    Reason, ReasonKind, Suspension,
};

impl<L: Lifecycle> World<L> {
    /// The first run stuck with honest facts, if any: suspended, not past its expiry, within
    /// the revision bound, and refusing every answer its responsible party can honestly
    /// give now (from the latest checkpoint, with the world's true facts).
    pub fn stuck_run(&self, state: &WorldState<L::Run>) -> Option<usize> {
        let at = Self::time(state);
        (0..state.runs.len()).find(|&r| {
            let Some(slot) = state.runs.get(r) else {
                return false;
            };
            let view = &slot.run.view;
            let waiting = view.expires_at.is_some_and(|e| at <= e);
            if !waiting || view.revision >= u64::from(self.config.max_revision) {
                return false;
            }
            // An intervention's honest answers also depend on the requests in flight and to
            // be sent, through what the operator may say: the key holds that instead.
            let settlements = if view.reason == Some(ReasonKind::ManualIntervention) {
                self.settlement_bits(state, r)
            } else {
                0
            };
            let key = AnswerKey {
                world: self.id,
                run: slot.run.addr(),
                checkpoints: slot.checkpoints.addr(),
                now: state.now,
                resource: slot.resource,
                tool: {
                    let ledger = self.ledger(state, r);
                    (ledger.committed, ledger.fenced, ledger.denied_commit)
                },
                settlements,
            };
            let answered = memo::answered(key, || {
                let answers = self.honest_answers(state, r);
                answers.into_iter().any(|event| {
                    let input = Input { at, event };
                    self.lifecycle.step(&slot.run.run, &input).is_ok()
                })
            });
            !answered
        })
    }

    /// What an honest operator may say of run `r`'s intervention, as bits of [`Settle`]: the
    /// part of its honest answers that depends on more than the run and its tool.
    fn settlement_bits(&self, state: &WorldState<L::Run>, r: usize) -> u8 {
        let snap = state.runs.get(r).map(|slot| slot.run.snapshot);
        let call = (snap.as_ref())
            .and_then(|snap| match &snap.phase {
                Phase::Suspended(s) => s.reason.call(),
                _ => None,
            })
            .and_then(|(c, _)| self.cast.proposal_by_id(&c.call.call_id));
        (self.honest_settlements(state, r, call).iter()).fold(0, |bits, settle| {
            bits | match settle {
                Settle::Committed => 1,
                Settle::Continue => 2,
                Settle::Abandon => 4,
            }
        })
    }

    /// The answers run `r`'s responsible party can honestly give now, cheapest first: for an
    /// approval, a denial and an approval by the approver; for an unknown outcome, "unknown"
    /// and the truth; for an intervention, what an honest operator may say. None when the
    /// run has no checkpoint of its current suspension (then nobody can answer).
    fn honest_answers(&self, state: &WorldState<L::Run>, r: usize) -> Vec<Event> {
        let Some(slot) = state.runs.get(r) else {
            return Vec::new();
        };
        let snap = self.lifecycle.snapshot(&slot.run.run);
        let (Phase::Suspended(s), Some(cp)) = (&snap.phase, slot.checkpoints.last()) else {
            return Vec::new();
        };
        // A batch's checkpoint stays the one it opened with, whatever decisions were recorded.
        if cp.revision != snap.revision && cp.reason != ReasonKind::PendingBatch {
            return Vec::new();
        }
        let pending = (s.reason.call())
            .and_then(|(c, a)| Some((self.cast.proposal_by_id(&c.call.call_id)?, a)));
        let decisions = match (&s.reason, pending) {
            (Reason::PendingApproval { call, requester }, _) => {
                self.honest_approvals(state, s, call, *requester, cp)
            }
            (Reason::OutcomeUnknown { .. }, Some((call, attempt))) => {
                self.honest_reconciles(state, r, call, attempt)
            }
            (Reason::ManualIntervention { .. }, pending) => {
                self.honest_interventions(state, r, pending.map(|(c, _)| c))
            }
            (Reason::PendingBatch, _) => self.honest_batch(state, slot, cp),
            // No program waits for a callback or a resource, and every unknown outcome names
            // its call; were either to happen, no answer would be built and the run would be
            // reported stuck rather than passed over.
            _ => Vec::new(),
        };
        (decisions.into_iter())
            .map(|decision| Self::resume_event(state, r, **cp, decision))
            .collect()
    }

    /// The approver's honest decisions on `call`, awaiting approval in suspension `s`: a
    /// denial, then an approval, each bound to the call, its arguments, its requester and
    /// the checkpoint's revision.
    fn honest_approvals(
        &self,
        state: &WorldState<L::Run>,
        s: &Suspension,
        call: &BoundCall,
        requester: Name,
        cp: &Checkpoint,
    ) -> Vec<Decision> {
        let approval = Approval {
            call_id: call.call.call_id,
            args: call.call.args,
            requester,
            approver: s.responsible,
            revision: cp.revision,
            expires_at: Self::time(state).after(u64::from(self.config.approval_ttl)),
        };
        vec![Decision::Deny(approval), Decision::Approve(approval)]
    }

    /// The reconciler's honest answers for `call`'s `attempt`, whose outcome is unknown:
    /// "unknown", then the truth as the tool holds it.
    fn honest_reconciles(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        call: u8,
        attempt: u8,
    ) -> Vec<Decision> {
        let truth = self.query_answer(call, self.truthful(state, r, call, attempt));
        [Some(QueryAnswer::Unknown), truth]
            .into_iter()
            .flatten()
            .map(Decision::Reconcile)
            .collect()
    }

    /// What an honest operator may say of run `r`'s intervention on the unresolved `call`,
    /// "abandon" first.
    fn honest_interventions(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        call: Option<u8>,
    ) -> Vec<Decision> {
        (self.honest_settlements(state, r, call).into_iter().rev())
            .filter_map(|settle| self.intervention(call, settle))
            .collect()
    }

    /// A batch: the approver decides every call still awaiting, all at once: deny, reject
    /// or approve each (spec 5.5), bound to the batch's checkpoint `cp`.
    fn honest_batch(
        &self,
        state: &WorldState<L::Run>,
        slot: &RunSlot<L::Run>,
        cp: &Checkpoint,
    ) -> Vec<Decision> {
        let m = DecisionMsg {
            target: 0,
            source: 0,
            checkpoint: 0,
            revision: 0,
            party: Party::Approver,
            verdict: Verdict::Approve,
            expires_at: state.now.saturating_add(self.config.approval_ttl),
            delivered: 0,
        };
        let awaiting = slot.run.view.awaiting;
        [CallVerdict::Deny, CallVerdict::Reject, CallVerdict::Approve]
            .into_iter()
            .map(|v| {
                let mut picks: Picks = [None; 2];
                for (i, pick) in picks.iter_mut().enumerate() {
                    if awaiting & (1 << i) != 0 {
                        *pick = Some(v);
                    }
                }
                let verdict = Verdict::Batch(picks);
                self.decision_of(&DecisionMsg { verdict, ..m }, cp)
            })
            .collect()
    }

    /// The result the tool commits a proposal's key with.
    pub(super) fn result_of(&self, call: u8) -> Option<Digest> {
        (self.cast.key_of(call)).and_then(|k| self.cast.results.get(usize::from(k)).copied())
    }
}
