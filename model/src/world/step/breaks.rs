//! The rules an accepted step breaks, found when it is computed, against the world's own
//! truth (the cast's calls, the real requester and approver, the facts the world supplies),
//! never against the lifecycle's view of itself: raised when the step's write lands.

use super::Before;
use crate::world::{Violations, World};
use crate::{Lifecycle, Snapshot};
use resumable_kernel::{
    Decision, Dispatch, Effect, Effects, Event, FailCause, Input, Phase, Reason, Resolution,
    Resume, SpecId, Time, Wait,
};

impl<L: Lifecycle> World<L> {
    /// The rules an accepted step breaks, found when it is computed: INV-1, AUD-1 (with
    /// REV-1), SUS-2, APR-3 at suspend, and those of a resume.
    pub(super) fn step_violations(
        &self,
        r: usize,
        from: &Before<'_>,
        after: &Snapshot,
        input: &Input,
        effects: &Effects,
    ) -> Violations {
        let before = from.snap;
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
            Event::Resume(res) => raise |= self.resume_violations(r, from, after, input.at, res),
            Event::Suspend {
                wait, responsible, ..
            } => {
                if matches!(before.phase, Phase::Suspended(_)) {
                    raise |= SpecId::Sus2;
                }
                // APR-3: a suspension for approval never names its requester as approver.
                if matches!(wait, Wait::Approval { .. }) && *responsible == self.cast.requester {
                    raise |= SpecId::Apr3;
                }
                // APR-3 for a batch: no call of it names its approver as its requester.
                if let Wait::Batch { calls } = wait {
                    if calls.iter().any(|c| c.requester == *responsible) {
                        raise |= SpecId::Apr3;
                    }
                }
            }
            _ => {}
        }
        raise
    }

    /// The rules an accepted resume must have kept, checked against the world's own truth.
    fn resume_violations(
        &self,
        r: usize,
        from: &Before<'_>,
        after: &Snapshot,
        at: Time,
        res: &Resume,
    ) -> Violations {
        let before = from.snap;
        let mut raise = Violations::NONE;
        // RES-3: the checkpoint is at the run's revision; a batch's decisions, while it awaits
        // them, at the revision of the checkpoint it opened with (spec 5.5).
        let expected = match (&res.decision, from.opened) {
            (Decision::Batch { .. }, Some(opened)) => opened,
            _ => before.revision,
        };
        if res.checkpoint.revision != expected {
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
        raise |= clk_2(before, from.now, at, res);
        let mut approval = |a: &resumable_kernel::Approval| {
            // APR-2: the decision has not expired.
            if at > a.expires_at {
                raise |= SpecId::Apr2;
            }
            // APR-3: only the recorded approver decides, never the requester.
            if a.approver != self.cast.approver || a.approver == self.cast.requester {
                raise |= SpecId::Apr3;
            }
        };
        match &res.decision {
            Decision::Approve(a) | Decision::Deny(a) => approval(a),
            Decision::Batch { decisions } => decisions.iter().for_each(|d| approval(&d.approval)),
            _ => {}
        }
        // APR-4: a batch decision that denies a call fails the run.
        if let Decision::Batch { decisions } = &res.decision {
            let denies = decisions
                .iter()
                .any(|d| matches!(d.verdict, resumable_kernel::Verdict::Deny));
            if denies && !matches!(after.phase, Phase::Failed(FailCause::Denied { .. })) {
                raise |= SpecId::Apr4;
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
}

/// CLK-2 (spec/lifecycle.md 7): an accepted decision stamped `at`, another time than the
/// driver's clock `now` gives, although at `now` it or its suspension had expired: a late
/// decision judged in time. (A lifecycle that ignores an expiry at the driver's own time
/// breaks APR-2 or RES-5 instead.)
fn clk_2(before: &Snapshot, now: Time, at: Time, res: &Resume) -> Violations {
    if at == resumable_driver::clock::stamp_after(before.updated_at, now) {
        return Violations::NONE;
    }
    let suspension_expired = matches!(&before.phase, Phase::Suspended(s) if now > s.expires_at);
    let late = |a: &resumable_kernel::Approval| suspension_expired || now > a.expires_at;
    let judged_late = match &res.decision {
        Decision::Approve(a) | Decision::Deny(a) => late(a),
        Decision::Batch { decisions } => decisions.iter().any(|d| late(&d.approval)),
        _ => false,
    };
    if judged_late {
        Violations::of(SpecId::Clk2)
    } else {
        Violations::NONE
    }
}
