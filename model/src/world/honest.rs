//! LIVE-2: the answers the responsible party of a suspension can honestly give now, and
//! whether the lifecycle accepts any of them. A run whose suspension has not expired and
//! accepts none of them is stuck with honest facts.

use super::memo::{self, AnswerKey};
use super::{
    Answer, CallVerdict, Choice, DecisionMsg, Party, Picks, Settle, Verdict, World, WorldState,
};
use crate::Lifecycle;
use resumable_kernel::{Digest, Phase, Reason, ReasonKind};

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
                // Each answer fed as a worker would feed it (`step/input.rs`).
                let mut inputs = (self.honest_answers(state, r).into_iter())
                    .filter_map(|choice| self.input(&self.step_key(state, r, choice)?));
                inputs.any(|input| self.lifecycle.step(&slot.run.run, &input).is_ok())
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

    /// The answers run `r`'s responsible party can honestly give now, cheapest first, as the
    /// choices that carry them, each on the run's latest checkpoint: for an approval, a
    /// denial and an approval by the responsible party; for an unknown outcome, "unknown" and
    /// the truth; for an intervention, what an honest operator may say; for a batch, every
    /// call still awaiting denied, rejected or approved at once. None when the run has no
    /// checkpoint of its current suspension (then nobody can answer).
    fn honest_answers(&self, state: &WorldState<L::Run>, r: usize) -> Vec<Choice> {
        let Some(slot) = state.runs.get(r) else {
            return Vec::new();
        };
        let snap = &slot.run.snapshot;
        let (Phase::Suspended(s), Some(cp)) = (&snap.phase, slot.checkpoints.last()) else {
            return Vec::new();
        };
        // A batch's checkpoint stays the one it opened with, whatever decisions were recorded.
        if cp.revision != snap.revision && cp.reason != ReasonKind::PendingBatch {
            return Vec::new();
        }
        let (Ok(latest), Ok(revision)) = (
            u8::try_from(slot.checkpoints.len() - 1),
            u8::try_from(cp.revision.0),
        ) else {
            return Vec::new();
        };
        // A decision sent now, on the latest checkpoint, by the party responsible.
        let party = match s.responsible == self.cast.requester {
            true => Party::Requester,
            false => Party::Approver,
        };
        let decision = |verdict| {
            Choice::Decision(DecisionMsg {
                target: super::index(r),
                source: super::index(r),
                checkpoint: latest,
                revision,
                party,
                verdict,
                expires_at: state.now.saturating_add(self.config.approval_ttl),
                delivered: 0,
            })
        };
        let pending = (s.reason.call())
            .and_then(|(c, a)| Some((self.cast.proposal_by_id(&c.call.call_id)?, a)));
        match (&s.reason, pending) {
            (Reason::PendingApproval { .. }, _) => {
                vec![decision(Verdict::Deny), decision(Verdict::Approve)]
            }
            (Reason::OutcomeUnknown { .. }, Some((call, attempt))) => {
                let truth = self.truthful(state, r, call, attempt);
                [Answer::Unknown, truth]
                    .map(|answer| Choice::Reconcile {
                        checkpoint: latest,
                        revision,
                        call,
                        attempt,
                        answer,
                    })
                    .to_vec()
            }
            (Reason::ManualIntervention { .. }, pending) => {
                let call = pending.map(|(c, _)| c);
                (self.honest_settlements(state, r, call).into_iter().rev())
                    .map(|settle| Choice::Intervene { call, settle })
                    .collect()
            }
            (Reason::PendingBatch, _) => {
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
                        decision(Verdict::Batch(picks))
                    })
                    .collect()
            }
            // No program waits for a callback or a resource, and every unknown outcome names
            // its call; were either to happen, no answer would be built and the run would be
            // reported stuck rather than passed over.
            _ => Vec::new(),
        }
    }

    /// The result the tool commits a proposal's key with.
    pub(super) fn result_of(&self, call: u8) -> Option<Digest> {
        (self.cast.key_of(call)).and_then(|k| self.cast.results.get(usize::from(k)).copied())
    }
}
