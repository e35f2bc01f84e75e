//! What a worker hands the tool with each dispatch it carries out (spec APR-5): the kernel
//! binds a call by its argument digest alone, so which arguments go out is the driver's to
//! decide, and no step can see it. And how a worker answers a proposal from what is
//! recorded (spec REC-5).

use super::step::Before;
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
            _ => {
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
    ) -> (Dispatches, Violations, u32) {
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
        state.budgets.renewals > 0 && self.gated_recorded(state, r)
    }

    /// Whether the framework may resume run `r`'s node from an old config now: the gated
    /// call's result is recorded, and the framework kept the run as it was while the call
    /// waited.
    pub(super) fn old_config_offered(&self, state: &WorldState<L::Run>, r: usize) -> bool {
        state.budgets.old_configs > 0
            && state.runs.get(r).is_some_and(|slot| slot.config.is_some())
            && self.gated_recorded(state, r)
    }

    /// Whether run `r`'s node may ask its second question now: the gated call's result is
    /// recorded.
    pub(super) fn question_offered(&self, state: &WorldState<L::Run>, r: usize) -> bool {
        state.budgets.questions > 0 && self.gated_recorded(state, r)
    }

    /// Whether run `r` is running with nothing in flight and the gated call's result is
    /// recorded in its history.
    fn gated_recorded(&self, state: &WorldState<L::Run>, r: usize) -> bool {
        let (Some(slot), Some(gated)) = (state.runs.get(r), self.cast.proposal(GATED)) else {
            return false;
        };
        let view = &slot.run.view;
        view.phase == resumable_kernel::PhaseKind::Running
            && !view.in_flight
            && slot
                .run
                .history
                .prior(&gated.call)
                .key
                .is_some_and(|k| k.committed)
    }

    /// The framework resumes run `r`'s node from an old config, taken while the gated call
    /// waited for approval, with the approval given then; the node proposes the gated call
    /// again (spec REC-6). Honestly, the worker loads the run from the store and plans the
    /// proposal against the record, by the core's own rule: the very call recorded is
    /// answered with its result (`resumable_driver::plan::same_call`), and the approval it
    /// replays was counted against it, so nothing is fed, dispatched or written. A
    /// [`Driving::RunFromOldConfig`] worker resumes the run the config holds with that
    /// approval, at the driver's time, with the facts the config holds: if the lifecycle
    /// accepts it and dispatches the call again, a call whose result is recorded runs a
    /// second time. Used up either way.
    pub(super) fn resume_old_config(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
    ) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        next.budgets.old_configs = next.budgets.old_configs.checked_sub(1)?;
        next.seen |= witness::OLD_CONFIG;
        let slot = state.runs.get(r)?;
        let gated = self.cast.proposal(GATED)?.call;
        let dispatched = match self.config.driving {
            Driving::RunFromOldConfig => self.resumed_as_configured(state, r)?,
            // The store's run, planned against the record: the very call recorded is
            // answered with its result, anything else refused; nothing is fed.
            _ => false,
        };
        // The world's truth: the call's result is recorded in the store's history.
        let recorded = slot
            .run
            .history
            .prior(&gated)
            .key
            .is_some_and(|k| k.committed);
        if dispatched && recorded {
            next.violated |= SpecId::Rec6;
        }
        Some(next)
    }

    /// Whether the run the old config of run `r` holds, resumed with the approval that was
    /// delivered on its checkpoint, at the driver's time and with the facts the config holds,
    /// dispatches the gated call.
    fn resumed_as_configured(&self, state: &WorldState<L::Run>, r: usize) -> Option<bool> {
        let slot = state.runs.get(r)?;
        let config = slot.config?;
        let target = super::index(r);
        let gated = self.cast.proposal(GATED)?.call;
        let approval = state.decisions.iter().find(|m| {
            m.target == target
                && m.source == target
                && m.delivered > 0
                && m.party == super::Party::Approver
                && matches!(
                    m.verdict,
                    super::Verdict::Approve | super::Verdict::ApproveEdited
                )
                && slot
                    .checkpoints
                    .get(usize::from(m.checkpoint))
                    .is_some_and(|cp| cp.revision.0 == config.view.revision)
        })?;
        // The approval fed as a worker feeds one (`step/input.rs`), to the run the config
        // holds, with the facts the config holds: what the run had observed then.
        let key = super::step::StepKey {
            run: config,
            ..self.step_key(state, r, super::Choice::Decision(*approval))?
        };
        let mut input = self.input(&key)?;
        if let Event::Resume(resume) = &mut input.event {
            resume.facts.resource_version = resume.checkpoint.resource_version;
        }
        Some(match self.lifecycle.step(&config.run, &input) {
            Ok((_, effects)) => effects.dispatches().any(|d| d.call_id == gated.call_id),
            Err(_) => false,
        })
    }

    /// Run `r`'s node asks its second question, a plain interrupt after the gated call, once
    /// that call's result is recorded: the framework runs the node again from its start and
    /// hands its interrupts the values given so far, in order, the decisions fed while the
    /// gated call waited ([`super::RunSlot::fed`]) and then the question's own answer (spec
    /// RES-8). Honestly, the gated call's record consumes as many values as the core counted
    /// against it (`Todo::Done`'s `answers`: every answer fed while the call waited, accepted
    /// or refused), so the question gets its own. A [`Driving::RecordedCallSkipsItsInterrupt`]
    /// worker consumes none, and the question is handed the first decision. Used up either
    /// way.
    pub(super) fn ask(&self, state: &WorldState<L::Run>, r: usize) -> Option<WorldState<L::Run>> {
        let mut next = state.clone();
        next.budgets.questions = next.budgets.questions.checked_sub(1)?;
        let fed = state.runs.get(r)?.fed;
        if fed > 1 {
            next.seen |= witness::ASKED_AFTER_ANSWERS;
        }
        let consumed = match self.config.driving {
            Driving::RecordedCallSkipsItsInterrupt => 0,
            _ => fed,
        };
        // The world's truth: the values before the question's own are the gated call's.
        if consumed < fed {
            next.violated |= SpecId::Res8;
        }
        Some(next)
    }
}
