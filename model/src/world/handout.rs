//! What a worker hands the tool with each dispatch it carries out (spec APR-5): the kernel
//! binds a call by its argument digest alone, so which arguments go out is the driver's to
//! decide, and no step can see it.

use super::transition::Before;
use super::{World, GATED};
use crate::driving::Driving;
use crate::Lifecycle;
use resumable_kernel::{Decision, Digest, Dispatch, Event, Input, Verdict};

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
            Driving::Honest | Driving::DecisionTimeFromMessage => {
                let kept = self.edit_of(from, input, d).unwrap_or(proposed);
                resumable_driver::book::released(d, kept)
                    .ok()
                    .map(|()| kept)
            }
        }
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
