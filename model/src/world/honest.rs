//! LIVE-2: the answers the responsible party of a suspension can honestly give now, and
//! whether the lifecycle accepts any of them. A run whose suspension has not expired and
//! accepts none of them is stuck with honest facts.

use super::memo::{self, AnswerKey};
use super::{Answer, CallVerdict, DecisionMsg, Party, Picks, Settle, Verdict, World, WorldState};
use crate::Lifecycle;
use resumable_kernel::{
    Approval, Decision, Digest, Event, Input, Phase, QueryAnswer, Reason, ReasonKind, Resolution,
    Resume,
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
                tool: (
                    slot.tool.committed,
                    slot.tool.fenced,
                    slot.tool.denied_commit,
                ),
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
        let resume = |decision| {
            Event::Resume(Resume {
                checkpoint: **cp,
                decision,
                facts: Self::facts(state, r),
            })
        };
        let now = Self::time(state);
        let pending = (s.reason.call())
            .and_then(|(c, a)| Some((self.cast.proposal_by_id(&c.call.call_id)?, a)));
        match (&s.reason, pending) {
            (Reason::PendingApproval { call, requester }, _) => {
                let approval = Approval {
                    call_id: call.call.call_id,
                    args: call.call.args,
                    requester: *requester,
                    approver: s.responsible,
                    revision: cp.revision,
                    expires_at: now.after(u64::from(self.config.approval_ttl)),
                };
                vec![
                    resume(Decision::Deny(approval)),
                    resume(Decision::Approve(approval)),
                ]
            }
            (Reason::OutcomeUnknown { .. }, Some((call, attempt))) => {
                let truth = match self.truthful(slot, call, attempt) {
                    Answer::Committed => self
                        .result_of(call)
                        .map(|result| QueryAnswer::Committed { result }),
                    _ => Some(QueryAnswer::NotCommitted),
                };
                [Some(QueryAnswer::Unknown), truth]
                    .into_iter()
                    .flatten()
                    .map(|answer| resume(Decision::Reconcile(answer)))
                    .collect()
            }
            (Reason::ManualIntervention { .. }, pending) => {
                let call = pending.map(|(c, _)| c);
                let settlements = self.honest_settlements(state, r, call);
                settlements
                    .into_iter()
                    .rev()
                    .filter_map(|settle| {
                        let resolution = match settle {
                            Settle::Committed => Resolution::Committed {
                                result: self.result_of(call?)?,
                            },
                            Settle::Continue => Resolution::Continue,
                            Settle::Abandon => Resolution::Abandon,
                        };
                        Some(resume(Decision::Intervene {
                            by: self.cast.policy.operator,
                            resolution,
                        }))
                    })
                    .collect()
            }
            // A batch: the approver decides every call still awaiting, all at once: deny,
            // reject or approve each (spec 5.5).
            (Reason::PendingBatch, _) => {
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
                        resume(self.decision_of(
                            &DecisionMsg {
                                verdict: Verdict::Batch(picks),
                                ..m
                            },
                            cp,
                        ))
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
