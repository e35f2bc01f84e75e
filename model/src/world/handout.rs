//! What a worker hands the tool with each dispatch it carries out (spec APR-5): the kernel
//! binds a call by its argument digest alone, so which arguments go out is the driver's to
//! decide, and no step can see it. And how a worker answers a proposal from what is
//! recorded (spec REC-5).

use super::transition::Before;
use super::{witness, Dispatches, Violations, World, WorldState, GATED};
use crate::driving::Driving;
use crate::Lifecycle;
use resumable_kernel::{Decision, Digest, Dispatch, Effects, Event, Input, SpecId, Verdict};

impl<L: Lifecycle> World<L> {
    /// The arguments, by digest, the worker hands the tool with `d`, the step from `from`
    /// with `input` having commanded it. Honestly, the ones the driver's book kept for the
    /// call, and only if their digest is the dispatch's, by the core's own rule
    /// (`resumable_driver::book::released`); `None`: refused, nothing is sent. A
    /// [`Driving::ToolGetsNodeArguments`] worker hands out what the agent's state holds now.
    pub(super) fn handed(&self, from: &Before<'_>, input: &Input, d: &Dispatch) -> Option<Digest> {
        let call = self.cast.proposal_by_id(&d.call_id);
        let proposed = call
            .and_then(|c| self.cast.proposal(c))
            .map_or(d.args, |p| p.call.args);
        match self.config.driving {
            Driving::ToolGetsNodeArguments => Some(match call {
                Some(GATED) if from.changed => self.cast.changed_args,
                _ => proposed,
            }),
            Driving::Honest | Driving::DecisionTimeFromMessage | Driving::RecordedCallByIdOnly => {
                let kept = self.edit_of(from, input, d).unwrap_or(proposed);
                resumable_driver::book::released(d, kept)
                    .ok()
                    .map(|()| kept)
            }
        }
    }

    /// What the worker carries out of a step's `effects` once its write lands: the
    /// dispatches (proposal, attempt) it sends, those whose arguments it hands out, packed to
    /// the front; the rule handing them out breaks (APR-5: arguments other than the
    /// dispatch's); and the witness of a call dispatched after the framework changed its
    /// arguments. The dispatch is durable whatever is handed out.
    pub(super) fn carried_out(
        &self,
        from: &Before<'_>,
        input: &Input,
        effects: &Effects,
    ) -> (Dispatches, Violations, u16) {
        let mut to_send: Dispatches = [None; resumable_kernel::effect::MAX_EFFECTS];
        let mut sending = to_send.iter_mut();
        let mut raise = Violations::NONE;
        let mut seen = 0;
        for d in effects.dispatches() {
            let call = self.cast.proposal_by_id(&d.call_id).unwrap_or(GATED);
            if from.changed && call == GATED {
                seen |= witness::CHANGED_DISPATCHED;
            }
            match self.handed(from, input, d) {
                Some(args) if args != d.args => raise |= SpecId::Apr5,
                Some(_) => {}
                None => continue,
            }
            if let Some(send) = sending.next() {
                *send = Some((call, d.attempt));
            }
        }
        (to_send, raise, seen)
    }

    /// The arguments an approver's edit gave `d`'s call, as the book keeps them: from the
    /// decision the input carries, or from one the run recorded earlier (spec BAT-5).
    fn edit_of(&self, from: &Before<'_>, input: &Input, d: &Dispatch) -> Option<Digest> {
        let edit = |v: &Verdict| match v {
            Verdict::Edit { args } => Some(*args),
            _ => None,
        };
        let now = match &input.event {
            Event::Resume(res) => match &res.decision {
                Decision::Batch { decisions } => (decisions.iter())
                    .find(|c| c.approval.call_id == d.call_id)
                    .and_then(|c| edit(&c.verdict)),
                _ => None,
            },
            _ => None,
        };
        now.or_else(|| {
            let slot = from.batch.as_ref()?.slot(&d.call_id)?;
            slot.decided.and_then(|(c, _)| edit(&c.verdict))
        })
    }
}

impl<L: Lifecycle> World<L> {
    /// A worker plans the agent's new call under the gated call's id, once that call's result
    /// is recorded, against what is recorded (spec REC-5). Honestly, by the core's own rule
    /// (`resumable_driver::plan::same_call`): the recorded call answers only itself, so the
    /// new call is refused and nothing is fed or recorded. A
    /// [`Driving::RecordedCallByIdOnly`] worker finds the record by call id alone and answers
    /// the new call with the old call's result. The proposal is used up either way.
    pub(super) fn renew(&self, state: &WorldState<L::Run>) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        next.budgets.renewals = next.budgets.renewals.checked_sub(1)?;
        next.seen |= witness::RENEWED;
        let recorded = self.cast.proposal(GATED)?.call;
        let proposed = self.cast.renewed;
        let answered = match self.config.driving {
            Driving::RecordedCallByIdOnly => recorded.call_id == proposed.call_id,
            _ => resumable_driver::plan::same_call(&recorded, &proposed),
        };
        // The world's truth: the result handed back is the recorded call's, and the call
        // proposed is another.
        if answered && recorded != proposed {
            next.violated |= SpecId::Rec5;
        }
        Some(next)
    }

    /// Whether run `r`'s agent may propose a new call under the gated call's id now: the
    /// gated call's result is recorded, and the run is running with nothing in flight.
    pub(super) fn renewal_offered(&self, state: &WorldState<L::Run>, r: usize) -> bool {
        let (Some(slot), Some(gated)) = (state.runs.get(r), self.cast.proposal(GATED)) else {
            return false;
        };
        let view = &slot.run.view;
        state.budgets.renewals > 0
            && view.phase == resumable_kernel::PhaseKind::Running
            && !view.in_flight
            && slot
                .run
                .history
                .prior(&gated.call)
                .key
                .is_some_and(|k| k.committed)
    }
}
