//! The one translation of the world's choices into kernel inputs: the input a worker feeds a
//! run, read off its step's key. The worker's steps, the honest answers LIVE-2 asks for, a
//! resume from an old config and the traces all build their inputs here.

use super::StepKey;
use crate::driving::Driving;
use crate::world::cast::{BATCH, GATED};
use crate::world::{
    Action, Answer, CallVerdict, Choice, DecisionMsg, Intent, Party, Picks, Settle, Verdict, World,
    WorldState,
};
use crate::Lifecycle;
use resumable_kernel::{
    Approval, CallDecision, Checkpoint, Decision, Decisions, Effects, Event, Facts, Input,
    Proposal, Proposals, QueryAnswer, Rejection, Resolution, Resume, Time, Verdict as BatchVerdict,
    Wait,
};

impl<L: Lifecycle> World<L> {
    /// The input the step of `key` feeds its run: the event its choice stands for, stamped
    /// with the worker's time. `None` if the choice names what does not exist (a message's
    /// checkpoint, a call's result), or is planned before any step (`handout.rs`).
    pub(in crate::world) fn input(&self, key: &StepKey<L::Run>) -> Option<Input> {
        Some(Input {
            at: self.stamp(key),
            event: self.event(key)?,
        })
    }

    /// The time a worker stamps on the input of `key` (spec CLK-1, CLK-2): the driver's
    /// clock, by the core's own rule (`resumable_driver::clock::stamp_after`, the generic
    /// form of `clock::stamp`, since the world's run may be the reference machine's own
    /// type). A [`Driving::DecisionTimeFromMessage`] worker stamps a decision with the time
    /// its message says it was written instead.
    fn stamp(&self, key: &StepKey<L::Run>) -> Time {
        let now = match (self.config.driving, key.choice) {
            (Driving::DecisionTimeFromMessage, Choice::Decision(m)) => self.written_at(&m),
            _ => Time(u64::from(key.now)),
        };
        resumable_driver::clock::stamp_after(key.run.snapshot.updated_at, now)
    }

    /// The time a decision's message says it was written: an approver gives every decision
    /// the same validity from the moment it decides (`Config::approval_ttl`), so the message
    /// carries it without a field of its own.
    fn written_at(&self, m: &DecisionMsg) -> Time {
        Time(u64::from(
            m.expires_at.saturating_sub(self.config.approval_ttl),
        ))
    }

    /// The event the choice of `key` feeds its run.
    fn event(&self, key: &StepKey<L::Run>) -> Option<Event> {
        let resume = |checkpoint: Checkpoint, decision| {
            Event::Resume(Resume {
                checkpoint,
                decision,
                facts: Self::facts(key),
            })
        };
        Some(match key.choice {
            Choice::Agent(intent) => return self.agent_event(key, intent),
            Choice::Decision(m) => {
                let cp = **key.source?.get(usize::from(m.checkpoint))?;
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
                let cp = **key.checkpoints.get(usize::from(checkpoint))?;
                resume(cp, Decision::Reconcile(answer))
            }
            Choice::Cancel => Event::Cancel {
                by: self.cast.owner,
            },
            Choice::Intervene { call, settle } => {
                let decision = self.intervention(call, settle)?;
                resume(**key.checkpoints.last()?, decision)
            }
        })
    }

    /// The facts a resumer of the run establishes under current policy (spec RES-3, RES-7):
    /// the resource as it is now, the step permitted and within budget. Honest, always.
    fn facts(key: &StepKey<L::Run>) -> Facts {
        Facts {
            resource_version: u64::from(key.resource),
            permitted: true,
            within_budget: true,
        }
    }

    /// The event the agent program's request feeds the run: a suspend, a dispatch or the
    /// final result. None for a request the driver plans before any step.
    fn agent_event(&self, key: &StepKey<L::Run>, intent: Intent) -> Option<Event> {
        let at = Time(u64::from(key.now));
        // The worker looks a call up in the run's history, in the store.
        let history = &key.run.history;
        Some(match intent {
            Intent::Suspend(p) | Intent::SuspendSelfApproved(p) => Event::Suspend {
                wait: Wait::Approval {
                    call: self.cast.proposal(p)?.call,
                    requester: self.cast.requester,
                    prior: history.prior(&self.cast.proposal(p)?.call),
                },
                expires_at: at.after(u64::from(self.config.suspend_for)),
                responsible: match intent {
                    Intent::SuspendSelfApproved(_) => self.cast.requester,
                    _ => self.cast.approver,
                },
                resource_version: u64::from(key.resource),
            },
            Intent::SuspendBatch => self.batch_suspend(key, at)?,
            // The worker states the resource version the agent observed when it decided to
            // call (spec 4.4), so a retry after "not committed" re-checks against it.
            Intent::Dispatch(p) | Intent::Reuse(p) => Event::Dispatch {
                call: self.cast.proposal(p)?.call,
                prior: history.prior(&self.cast.proposal(p)?.call),
                resource_version: Some(u64::from(key.resource)),
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
    fn batch_suspend(&self, key: &StepKey<L::Run>, at: Time) -> Option<Event> {
        let mut calls = Proposals::new();
        for p in BATCH {
            let call = self.cast.proposal(p)?.call;
            calls
                .push(Proposal {
                    call,
                    requester: self.cast.requester,
                    prior: key.run.history.prior(&call),
                })
                .ok()?;
        }
        Some(Event::Suspend {
            wait: Wait::Batch { calls },
            expires_at: at.after(u64::from(self.config.suspend_for)),
            responsible: self.cast.approver,
            resource_version: u64::from(key.resource),
        })
    }

    /// The decision an approver's message carries, built from the checkpoint it was made on:
    /// an approval binds to that checkpoint's call, arguments, requester and revision.
    fn decision_of(&self, m: &DecisionMsg, cp: &Checkpoint) -> Decision {
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
            approver: self.party(m.party),
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

    /// The name a party decides under.
    fn party(&self, party: Party) -> resumable_kernel::Name {
        match party {
            Party::Approver => self.cast.approver,
            Party::Requester => self.cast.requester,
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
                approver: self.party(m.party),
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

    /// What the tool's status query says of `call`, as the kernel reads it: "committed"
    /// carries the result the tool commits the call's key with. None if it has none.
    fn query_answer(&self, call: u8, answer: Answer) -> Option<QueryAnswer> {
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
    fn intervention(&self, call: Option<u8>, settle: Settle) -> Option<Decision> {
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

    /// The input a step action feeds, for traces.
    pub fn input_of(&self, state: &WorldState<L::Run>, action: &Action) -> Option<Input> {
        match action {
            Action::Step { run, choice, .. } => {
                self.input(&self.step_key(state, usize::from(*run), *choice)?)
            }
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
}
