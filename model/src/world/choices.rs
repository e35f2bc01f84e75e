//! What is on offer in a state: the actions of workers and of the environment, and the
//! inputs a worker may feed each run.

use super::cast::{Cast, Step};
use super::memo::{self, ExpiryKey};
use super::{
    Action, Answer, CallVerdict, Choice, DecisionMsg, Intent, Party, Picks, RunSlot, Settle,
    ToolMsg, ToolOutcome, ToolSide, Verdict, Worker, World, WorldState,
};
use crate::config::Program;
use crate::{Lifecycle, Snapshot};
use resumable_kernel::{Event, Identity, Input, Phase, PhaseKind, ReasonKind, RejectionKind};
use smallvec::SmallVec;

/// The inputs on offer to one run, inline: the most a state offers is a few agent requests,
/// the decisions and responses in flight, and a handful of others.
pub(super) type Choices = SmallVec<[Choice; 16]>;

/// What an honest operator may say, inline: at most two of the three settlements.
pub(super) type Settlements = SmallVec<[Settle; 3]>;

/// The call the agent asks approval for while its first approval is pending.
const SECOND_SUSPEND: u8 = 2;

/// The approvals alone, one call at a time or both at once: where the world is about what
/// happens to calls in flight, not about verdicts.
const BATCH_APPROVALS: [Picks; 3] = [
    [Some(CallVerdict::Approve), None],
    [None, Some(CallVerdict::Approve)],
    [Some(CallVerdict::Approve), Some(CallVerdict::Approve)],
];

/// The decisions an approver may send on a batch of `c1` and `c2` (by slot): on one call at
/// a time, every verdict on `c1` (the edit rebinds its fresh key), approve, reject or answer
/// in the tool's place on `c2`; or both calls approved at once.
const BATCH_OFFERS: [Picks; 8] = {
    use CallVerdict::*;
    [
        [Some(Approve), None],
        [Some(Edit), None],
        [Some(Reject), None],
        [Some(Deny), None],
        [None, Some(Approve)],
        [None, Some(Reject)],
        [None, Some(Respond)],
        [Some(Approve), Some(Approve)],
    ]
};

impl<L: Lifecycle> World<L> {
    /// Workers with work in hand finish it (write, or send the dispatch); the first idle
    /// worker reads a run and steps it with one of the inputs on offer.
    pub(super) fn worker_actions(&self, state: &WorldState<L::Run>, actions: &mut Vec<Action>) {
        for (i, w) in state.workers.iter().enumerate() {
            let worker = super::index(i);
            match w {
                Worker::Idle => {}
                Worker::Staged(st) => {
                    let store = state
                        .runs
                        .get(usize::from(st.run))
                        .map_or(0, |s| s.run.view.revision);
                    actions.push(if store == st.from {
                        Action::Commit {
                            worker,
                            run: st.run,
                            from: st.from,
                            to: st.next.view.revision,
                        }
                    } else {
                        Action::Conflict {
                            worker,
                            run: st.run,
                            staged: st.from,
                            store,
                        }
                    });
                }
                Worker::Dispatching { run, queue } => {
                    if let Some((call, attempt)) = queue[0] {
                        let msg = ToolMsg {
                            run: *run,
                            call,
                            attempt,
                        };
                        actions.push(Action::Dispatch { worker, msg });
                    }
                }
            }
        }
        let idle = state.workers.iter().position(|w| matches!(w, Worker::Idle));
        if let Some(i) = idle {
            let mut choices = Choices::new();
            for r in 0..state.runs.len() {
                choices.clear();
                self.choices(state, r, &mut choices);
                actions.extend(choices.iter().map(|&choice| Action::Step {
                    worker: super::index(i),
                    run: super::index(r),
                    choice,
                }));
            }
        }
        if state.budgets.crashes > 0 {
            // An idle worker that crashes loses nothing; it matters only as the death of the
            // worker waiting on a dispatch in flight, which a restart must then recover.
            let orphans = state.runs.iter().any(|slot| slot.run.view.in_flight);
            for (i, w) in state.workers.iter().enumerate() {
                if !matches!(w, Worker::Idle) || (Some(i) == idle && orphans) {
                    actions.push(Action::Crash {
                        worker: super::index(i),
                    });
                }
            }
        }
    }

    /// The tool, the network, the approvers, the outsider and the clock.
    pub(super) fn environment_actions(
        &self,
        state: &WorldState<L::Run>,
        actions: &mut Vec<Action>,
    ) {
        let mut last = None;
        for m in &state.requests {
            if last != Some(m) {
                let outcome = self.tool_outcome(state, m);
                actions.push(Action::Tool { msg: *m, outcome });
            }
            last = Some(m);
        }
        if state.budgets.losses > 0 {
            let mut last = None;
            for m in &state.responses {
                if last != Some(m) {
                    actions.push(Action::Lose { msg: *m });
                }
                last = Some(m);
            }
        }
        self.decision_actions(state, actions);
        if state.budgets.outsider_moves > 0 {
            // The resource matters to a run only through the checkpoint of a suspension, so
            // an outsider moves it while the run waits.
            for (r, slot) in state.runs.iter().enumerate() {
                if slot.run.view.phase == PhaseKind::Suspended {
                    actions.push(Action::Outsider {
                        run: super::index(r),
                    });
                }
            }
        }
        if state.budgets.arg_changes > 0 {
            // The arguments change between the suspension for approval and its resume.
            for (r, slot) in state.runs.iter().enumerate() {
                if slot.run.view.reason == Some(ReasonKind::PendingApproval) && !slot.changed {
                    actions.push(Action::Framework {
                        run: super::index(r),
                    });
                }
            }
        }
        for r in 0..state.runs.len() {
            for (key, attempt, fence) in self.foreign_records(state, r) {
                actions.push(Action::Foreign {
                    run: super::index(r),
                    key,
                    attempt,
                    fence,
                });
            }
        }
        let waits = self.config.free_clock || self.someone_waits(state);
        if state.now < self.config.max_time && waits && !self.expiry_due(state) {
            actions.push(Action::Tick { to: state.now + 1 });
        }
    }

    /// The agent program's next request for a run, read from the run's own state: the
    /// program's step at the position given by the calls the run has bound, then complete.
    fn intent(&self, slot: &RunSlot<L::Run>, snap: &Snapshot, out: &mut Choices) {
        let steps = self.config.program.steps();
        if self.config.program == Program::Batch {
            // One batch, then complete once every call of it is settled: nothing is asked
            // while calls of the batch are in flight (every request would be refused).
            if matches!(snap.phase, Phase::Running { in_flight: None }) && !slot.run.view.in_flight
            {
                out.push(Choice::Agent(match slot.run.history.is_empty() {
                    true => Intent::SuspendBatch,
                    false => Intent::Complete,
                }));
            }
            return;
        }
        match &snap.phase {
            Phase::Running { in_flight: None } => {}
            // While the first approval is pending, the agent asks to suspend again, for
            // another call (`c2`): an agent that lost its first request's reply and retries
            // with a fresh call id does (spec SUS-2).
            Phase::Suspended(s) if s.reason.kind() == ReasonKind::PendingApproval => {
                let asked = (slot.checkpoints.iter())
                    .filter(|c| c.reason == ReasonKind::PendingApproval)
                    .count();
                if asked == 1 {
                    out.push(Choice::Agent(Intent::Suspend(SECOND_SUSPEND)));
                }
                return;
            }
            _ => return,
        }
        let position = slot.run.history.len();
        out.push(Choice::Agent(match steps.get(position) {
            Some(Step::Gated(p)) => Intent::Suspend(*p),
            Some(Step::Ungated(p)) => Intent::Dispatch(*p),
            None => Intent::Complete,
        }));
        if let Some(p) = self.self_approved_suspend(slot) {
            out.push(Choice::Agent(Intent::SuspendSelfApproved(p)));
        }
        if self.config.program.reuse_at() == Some(position) {
            out.extend(
                Cast::REUSES
                    .iter()
                    .map(|p| Choice::Agent(Intent::Reuse(*p))),
            );
        }
    }

    /// The gated call a run would suspend for naming its requester as the approver (spec
    /// APR-3): offered where the requester tries to approve itself, whenever the run is
    /// running idle with a gated call next. A correct lifecycle refuses it, and a refused
    /// agent request is no transition, so the offer costs no state.
    pub(crate) fn self_approved_suspend(&self, slot: &RunSlot<L::Run>) -> Option<u8> {
        let view = &slot.run.view;
        if !self.config.self_approval || view.phase != PhaseKind::Running || view.in_flight {
            return None;
        }
        match self.config.program.steps().get(slot.run.history.len()) {
            Some(Step::Gated(p)) => Some(*p),
            _ => None,
        }
    }

    /// SUS-2's situation: a run waiting for approval is asked, by a worker free to take it,
    /// for a second suspend that nothing but the rule against suspending while suspended
    /// refuses.
    pub(crate) fn second_suspend_asked(&self, state: &WorldState<L::Run>) -> bool {
        (state.runs.iter().enumerate()).any(|(r, slot)| {
            slot.run.view.reason == Some(ReasonKind::PendingApproval)
                && self.asked_where_only(
                    state,
                    r,
                    Intent::Suspend(SECOND_SUSPEND),
                    RejectionKind::AlreadySuspended,
                )
        })
    }

    /// APR-3's situation at suspend time: the agent asks, by a worker free to take it, to
    /// suspend naming its requester the approver, and nothing but that rule refuses it.
    pub(crate) fn self_named_asked(&self, state: &WorldState<L::Run>) -> bool {
        (state.runs.iter().enumerate()).any(|(r, slot)| {
            self.self_approved_suspend(slot).is_some_and(|p| {
                self.asked_where_only(
                    state,
                    r,
                    Intent::SuspendSelfApproved(p),
                    RejectionKind::SelfApproval,
                )
            })
        })
    }

    /// Whether the lifecycle, asked for `intent` on run `r` by a worker free to take it now,
    /// would refuse it for nothing but `rule`: the input is offered in this state (an idle
    /// worker, the run below its revision bound) and its verdict is acceptance or a refusal
    /// of that kind. A `sometimes` partner built on it is reached only where the check that
    /// `rule` names is what stands between the run and the input (spec/check-output.md).
    pub(crate) fn asked_where_only(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        intent: Intent,
        rule: RejectionKind,
    ) -> bool {
        let Some(worker) = state.workers.iter().position(|w| matches!(w, Worker::Idle)) else {
            return false;
        };
        let mut offered = Choices::new();
        self.choices(state, r, &mut offered);
        let choice = Choice::Agent(intent);
        if !offered.contains(&choice) {
            return false;
        }
        let action = Action::Step {
            worker: super::index(worker),
            run: super::index(r),
            choice,
        };
        match self.verdict_of(state, &action) {
            Some(Ok(_)) => true,
            Some(Err(rejection)) => rejection.kind() == rule,
            None => false,
        }
    }

    /// The inputs the world offers run `r`, in a fixed order.
    pub(super) fn choices(&self, state: &WorldState<L::Run>, r: usize, out: &mut Choices) {
        let Some(slot) = state.runs.get(r) else {
            return;
        };
        if slot.run.view.revision >= u64::from(self.config.max_revision) {
            return;
        }
        let snap = &slot.run.snapshot;
        let before = out.len();
        self.intent(slot, snap, out);
        if state.budgets.reuses == 0 {
            let mut i = before;
            while i < out.len() {
                if matches!(out[i], Choice::Agent(Intent::Reuse(_))) {
                    out.remove(i);
                } else {
                    i += 1;
                }
            }
        }
        if self.renewal_offered(state, r) {
            out.push(Choice::Agent(Intent::Renew));
        }
        if self.old_config_offered(state, r) {
            out.push(Choice::Agent(Intent::OldConfig));
        }
        if self.question_offered(state, r) {
            out.push(Choice::Agent(Intent::Ask));
        }
        let target = super::index(r);
        let mut last = None;
        for m in &state.decisions {
            if m.target == target
                && (m.delivered == 0 || state.budgets.duplicates > 0)
                && last != Some(m)
            {
                out.push(Choice::Decision(*m));
            }
            last = Some(m);
        }
        let mut last = None;
        for m in &state.responses {
            if m.run == target && last != Some(m) {
                out.push(Choice::Result {
                    call: m.call,
                    attempt: m.attempt,
                });
            }
            last = Some(m);
        }
        if slot.orphaned && slot.run.view.in_flight && matches!(snap.phase, Phase::Running { .. }) {
            out.push(Choice::Recover);
        }
        if let Phase::Suspended(s) = &snap.phase {
            if Self::time(state) > s.expires_at {
                out.push(Choice::Expire);
            }
            self.reconcile_choices(state, r, snap, out);
        }
        // The batch world's owner cancels while the batch awaits decisions or has calls in
        // flight (spec 5.5, BAT-4): the single-call worlds cancel in every other phase.
        let batch_phase = slot.run.view.awaiting != 0 || slot.run.view.batch_in_flight > 0;
        let cancel_offered = self.config.program != Program::Batch || batch_phase;
        if state.budgets.cancels > 0 && !snap.phase.is_terminal() && cancel_offered {
            out.push(Choice::Cancel);
        }
    }

    /// Reconciliation reads a checkpoint of the current suspension (usually the latest; an
    /// older one of the same suspension is what a slow reconciler still holds) and queries
    /// the tool, whose answer comes from its durable side. Intervention reads the latest.
    fn reconcile_choices(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        snap: &Snapshot,
        out: &mut Choices,
    ) {
        let (Phase::Suspended(current), Some(slot)) = (&snap.phase, state.runs.get(r)) else {
            return;
        };
        let latest = slot.checkpoints.len().checked_sub(1);
        for (i, cp) in slot.checkpoints.iter().enumerate() {
            let is_current = Some(i) == latest && cp.revision == snap.revision;
            let same_suspension =
                cp.created_at == current.since && cp.reason == current.reason.kind();
            if !(is_current || same_suspension) {
                continue;
            }
            let (Ok(checkpoint), Ok(revision)) = (u8::try_from(i), u8::try_from(cp.revision.0))
            else {
                continue;
            };
            let pending =
                (cp.pending).and_then(|p| Some((self.cast.proposal_by_id(&p.call_id)?, p.attempt)));
            match (cp.reason, pending) {
                (ReasonKind::OutcomeUnknown, Some((call, attempt))) => {
                    let answers = [Some(self.truthful(state, r, call, attempt)), self.unknown()];
                    out.extend(
                        answers
                            .into_iter()
                            .flatten()
                            .map(|answer| Choice::Reconcile {
                                checkpoint,
                                revision,
                                call,
                                attempt,
                                answer,
                            }),
                    );
                }
                (ReasonKind::ManualIntervention, pending) if self.config.operator && is_current => {
                    let call = pending.map(|(c, _)| c);
                    for settle in self.honest_settlements(state, r, call) {
                        out.push(Choice::Intervene { call, settle });
                    }
                }
                _ => {}
            }
        }
    }

    /// The status query's true answer for a proposal's key and attempt of run `r`, as the
    /// tool's ledger holds it (the run's tool key's records: `world/tool.rs`).
    pub(super) fn truthful(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        call: u8,
        attempt: u8,
    ) -> Answer {
        let ledger = self.ledger(state, r);
        let committed = self
            .cast
            .key_of(call)
            .is_some_and(|k| ledger.committed & ToolSide::bit(k, attempt) != 0);
        if committed {
            Answer::Committed
        } else {
            Answer::NotCommitted
        }
    }

    /// "Unknown", if the configuration's query may give it.
    fn unknown(&self) -> Option<Answer> {
        self.config.query_unknown.then_some(Answer::Unknown)
    }

    /// What an honest operator may say of a manual intervention: "committed" if the
    /// unresolved call's key committed; "continue" if nothing unresolved can commit any more
    /// (no request of its key is still on its way, nor still to be sent by a worker whose
    /// write landed, or every one is fenced); "abandon" always.
    pub(super) fn honest_settlements(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        call: Option<u8>,
    ) -> Settlements {
        if state.runs.get(r).is_none() {
            return Settlements::new();
        }
        let ledger = self.ledger(state, r);
        let key = call.and_then(|c| self.cast.key_of(c));
        let committed = key.is_some_and(|k| ledger.committed_key(k));
        let live = |call: u8, attempt: u8| {
            key.is_some_and(|k| {
                self.cast.key_of(call) == Some(k) && ledger.fenced & ToolSide::bit(k, attempt) == 0
            })
        };
        let sent =
            (state.requests.iter()).any(|m| usize::from(m.run) == r && live(m.call, m.attempt));
        let to_send = state.workers.iter().any(|w| match w {
            Worker::Dispatching { run, queue } => {
                usize::from(*run) == r && queue.iter().flatten().any(|&(c, a)| live(c, a))
            }
            _ => false,
        });
        let can_commit_later = sent || to_send;
        let mut out = Settlements::new();
        if committed {
            out.push(Settle::Committed);
        } else if !can_commit_later {
            out.push(Settle::Continue);
        }
        out.push(Settle::Abandon);
        out
    }

    /// Decisions the approvers (and the requester) can send now, on each run's current
    /// approval checkpoint.
    fn decision_actions(&self, state: &WorldState<L::Run>, out: &mut Vec<Action>) {
        let expires_at = state.now.saturating_add(self.config.approval_ttl);
        for (r, slot) in state.runs.iter().enumerate() {
            let view = &slot.run.view;
            let Some(cp) = slot.checkpoints.last() else {
                continue;
            };
            if cp.reason == ReasonKind::PendingBatch {
                self.batch_decisions(state, r, expires_at, out);
                continue;
            }
            if cp.reason != ReasonKind::PendingApproval
                || cp.revision.0 != view.revision
                || view.phase != PhaseKind::Suspended
            {
                continue;
            }
            let (Ok(source), Ok(index), Ok(revision)) = (
                u8::try_from(r),
                u8::try_from(slot.checkpoints.len() - 1),
                u8::try_from(cp.revision.0),
            ) else {
                continue;
            };
            let msg = |target, party, verdict| DecisionMsg {
                target,
                source,
                checkpoint: index,
                revision,
                party,
                verdict,
                expires_at,
                delivered: 0,
            };
            let sent = |target: u8, party: Party| {
                (state.decisions.iter())
                    .filter(|m| {
                        m.target == target
                            && m.source == source
                            && m.checkpoint == index
                            && m.party == party
                    })
                    .count()
            };
            if sent(source, Party::Approver) < usize::from(self.config.approvers) {
                let verdicts: &[Verdict] = match self.config.edited_approvals {
                    true => &[Verdict::Approve, Verdict::Deny, Verdict::ApproveEdited],
                    false => &[Verdict::Approve, Verdict::Deny],
                };
                for &verdict in verdicts {
                    out.push(Action::Decide {
                        msg: msg(source, Party::Approver, verdict),
                    });
                }
            }
            if self.config.self_approval && sent(source, Party::Requester) == 0 {
                out.push(Action::Decide {
                    msg: msg(source, Party::Requester, Verdict::Approve),
                });
            }
            // The approval of run 1, misaddressed to run 0: a resume across tenants.
            if self.config.cross_tenant && source == 1 && sent(0, Party::Approver) == 0 {
                out.push(Action::Decide {
                    msg: msg(0, Party::Approver, Verdict::Approve),
                });
            }
        }
    }

    /// Decisions the approver can send on run `r`'s open batch: each of [`BATCH_OFFERS`]
    /// whose calls all still await a decision, as the run lists them, and that no more than
    /// `approvers` decisions sent on the batch's checkpoint named already (spec 5.5).
    fn batch_decisions(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        expires_at: u8,
        out: &mut Vec<Action>,
    ) {
        let Some(slot) = state.runs.get(r) else {
            return;
        };
        let view = &slot.run.view;
        if view.reason != Some(ReasonKind::PendingBatch) || view.awaiting == 0 {
            return;
        }
        let (Ok(source), Some(index)) = (
            u8::try_from(r),
            (slot.checkpoints.len().checked_sub(1)).and_then(|i| u8::try_from(i).ok()),
        ) else {
            return;
        };
        let Some(revision) =
            (slot.checkpoints.last()).and_then(|cp| u8::try_from(cp.revision.0).ok())
        else {
            return;
        };
        let sent = |i: usize| {
            (state.decisions.iter())
                .filter(|m| {
                    m.source == source
                        && m.checkpoint == index
                        && matches!(m.verdict, Verdict::Batch(p) if p[i].is_some())
                })
                .count()
        };
        let offers = match self.config.batch_verdicts {
            true => &BATCH_OFFERS[..],
            false => &BATCH_APPROVALS[..],
        };
        for &picks in offers {
            let open = (0..picks.len()).all(|i| {
                picks[i].is_none()
                    || (view.awaiting & (1 << i) != 0
                        && sent(i) < usize::from(self.config.approvers))
            });
            if open {
                out.push(Action::Decide {
                    msg: DecisionMsg {
                        target: source,
                        source,
                        checkpoint: index,
                        revision,
                        party: Party::Approver,
                        verdict: Verdict::Batch(picks),
                        expires_at,
                        delivered: 0,
                    },
                });
            }
        }
    }

    /// What the tool would do with a request now, by the records its ledger holds under the
    /// request's tool key.
    pub(super) fn tool_outcome(&self, state: &WorldState<L::Run>, msg: &ToolMsg) -> ToolOutcome {
        self.outcome_on(self.ledger(state, usize::from(msg.run)), msg)
    }

    /// Whether some run's expiry is due: the clock has passed it and the lifecycle would
    /// accept the expiry now. Time does not pass a due expiry until a worker has fed it, which
    /// is what bounds every suspension for a correct lifecycle (spec LIVE-1). The answer is a
    /// function of the interned run and the clock, so it is remembered (`memo.rs`).
    fn expiry_due(&self, state: &WorldState<L::Run>) -> bool {
        let at = Self::time(state);
        state.runs.iter().any(|slot| {
            let view = &slot.run.view;
            match view.expires_at {
                Some(expires_at) if at > expires_at => {
                    let expire = Input {
                        at,
                        event: Event::Expire,
                    };
                    let key = ExpiryKey {
                        world: self.id,
                        run: slot.run.addr(),
                        now: state.now,
                    };
                    view.revision < u64::from(self.config.max_revision)
                        && memo::expires(key, || {
                            self.lifecycle.step(&slot.run.run, &expire).is_ok()
                        })
                }
                _ => false,
            }
        })
    }

    /// Whether some run is suspended. Time passes only then: while no run waits, a tick
    /// would only shift every later time by the same amount, and no rule depends on absolute
    /// time, so leaving those ticks out loses no behaviour and saves a factor of the clock.
    /// A free clock (`Config::free_clock`, the per-run reduction's) ticks at any step: in a
    /// world of one run it stands for another run's suspensions, which that world leaves out.
    pub(super) fn someone_waits(&self, state: &WorldState<L::Run>) -> bool {
        state
            .runs
            .iter()
            .any(|slot| slot.run.view.phase == PhaseKind::Suspended)
    }

    /// Whether an identity is not run `r`'s.
    pub(super) fn foreign(&self, identity: &Identity, r: usize) -> bool {
        let index = r.saturating_add(usize::from(self.config.identity));
        self.cast.identities.get(index) != Some(identity)
    }
}
