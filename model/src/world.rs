//! The concurrent world around runs, as a stateright [`Model`]: workers that step runs and
//! crash, a durable store with compare-and-set on the revision, approvers whose decisions
//! arrive late, twice or aimed at a revision that has moved on, a tool that commits side
//! effects and whose responses get lost, a status query that reconciles, and a clock that
//! passes expiries.
//!
//! The world is generic over [`Lifecycle`]: the same exploration runs on the kernel, on the
//! reference machine and on broken variants. It offers inputs and writes what a lifecycle
//! accepts; it never decides a lifecycle rule itself.
//!
//! # The store contract the world assumes
//!
//! A worker reads a run, steps it locally, and writes the next run with compare-and-set on the
//! revision it read. The audit record and the checkpoint of a transition land in that same
//! write (a transactional outbox), so a crash can never separate a transition from its audit
//! record or its checkpoint. Only the dispatch is carried out after the write (spec WAL-1),
//! and a crash in between leaves a durable intent with no request sent.
//!
//! # Reductions that keep the exploration small and sound
//!
//! - Idle workers are indistinguishable, so only the first idle worker is offered new work.
//! - A refused input that consumed nothing (an agent request, an expiry, a recovery) changes
//!   nothing and is not a transition; a refused decision or response is, since it is used up.
//! - Approvers decide only on a run's current checkpoint; staleness comes from delays and
//!   duplicates in the network, as it does in practice.
//! - The clock ticks only while some run is suspended (see `someone_waits`).

mod describe;
mod intern;
mod state;
mod transition;

pub use intern::{Interner, Shared};
pub use state::*;

use crate::config::{Config, ConfigError, Program};
use crate::{Lifecycle, Snapshot};
use resumable_kernel::Checkpoint;
use resumable_kernel::{
    Call, Digest, Event, FailCause, Identity, InFlight, Input, Name, Phase, PhaseKind, Policy,
    Reason, ReasonKind, Time, ToolContract,
};
use stateright::{Model, Property};

/// The names, calls and digests of the world, fixed when the world is made.
#[derive(Clone, Copy, Debug)]
pub struct Cast {
    /// Each run's identity: distinct tenants, sessions and runs, one definition.
    pub identities: [Identity; 2],
    /// Every run's policy: the operator and the reconcile window.
    pub policy: Policy,
    /// The agent that asks for the gated call.
    pub requester: Name,
    /// The approver the suspension names as responsible.
    pub approver: Name,
    /// The run's owner, who may cancel it.
    pub owner: Name,
    /// The calls `c0` (ungated, before the pause) and `c1` (gated unless the program is direct).
    pub calls: [Call; 2],
    /// The argument digest of an edited `c1`.
    pub edited_args: Digest,
    /// The result each call commits with.
    pub results: [Digest; 2],
    /// The run's final result.
    pub final_result: Digest,
    /// The version of the resource the runs act on: constant, and the version a new run has
    /// observed (0), so that a resume without a suspend before it still sees it unchanged.
    pub resource_version: u64,
}

impl Cast {
    fn new(config: &Config) -> Cast {
        let identity = |tenant: &str, session: &str, run: &str| Identity {
            tenant: Name::lit(tenant),
            session: Name::lit(session),
            run: Name::lit(run),
            definition: Name::lit("agent@1"),
        };
        let contract = ToolContract {
            dedupes: config.dedupes,
            query_fences: config.query_fences,
            max_attempts: config.max_attempts,
        };
        // Both runs make the same calls under the same keys: only their identities differ,
        // so a checkpoint of one run fits the other in every field but identity (spec ID-1).
        let call = |id: &str, key: &str, args: &[u8]| Call {
            call_id: Name::lit(id),
            tool: Name::lit("tool"),
            args: Digest::of(args),
            key: Name::lit(key),
            contract,
        };
        Cast {
            identities: [
                identity("tenant-0", "session-0", "run-0"),
                identity("tenant-1", "session-1", "run-1"),
            ],
            policy: Policy {
                operator: Name::lit("ops"),
                reconcile_window: u64::from(config.reconcile_window),
            },
            requester: Name::lit("agent"),
            approver: Name::lit("alice"),
            owner: Name::lit("owner"),
            calls: [call("c0", "k0", b"c0 args"), call("c1", "k1", b"c1 args")],
            edited_args: Digest::of(b"c1 args, edited"),
            results: [Digest::of(b"c0 result"), Digest::of(b"c1 result")],
            final_result: Digest::of(b"final result"),
            resource_version: 0,
        }
    }

    /// The index of a call by its id.
    pub fn call_index(&self, id: &Name) -> Option<u8> {
        self.calls
            .iter()
            .position(|c| c.call_id == *id)
            .and_then(|i| u8::try_from(i).ok())
    }
}

/// The world: a lifecycle under test and the configuration of its environment.
#[derive(Clone, Debug)]
pub struct World<L: Lifecycle> {
    lifecycle: L,
    config: Config,
    cast: Cast,
    runs: &'static Interner<Stored<L::Run>>,
    checkpoints: &'static Interner<Checkpoint>,
    logs: &'static Interner<Vec<Shared<Checkpoint>>>,
}

impl<L: Lifecycle> World<L> {
    /// A world around `lifecycle`, or why the configuration cannot be explored.
    pub fn new(lifecycle: L, config: Config) -> Result<World<L>, ConfigError> {
        config.validate()?;
        Ok(World {
            lifecycle,
            cast: Cast::new(&config),
            config,
            runs: Interner::global(),
            checkpoints: Interner::global(),
            logs: Interner::global(),
        })
    }

    /// The lifecycle under test.
    pub fn lifecycle(&self) -> &L {
        &self.lifecycle
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The names, calls and digests.
    pub fn cast(&self) -> &Cast {
        &self.cast
    }

    /// The stored run `r` as the properties see it.
    pub fn snapshot(&self, state: &WorldState<L::Run>, r: usize) -> Option<Snapshot> {
        state
            .runs
            .get(r)
            .map(|slot| self.lifecycle.snapshot(&slot.run.run))
    }

    /// The run as the store holds it: interned, with its view.
    fn store(&self, run: L::Run) -> Shared<Stored<L::Run>> {
        let view = view_of(&self.lifecycle.snapshot(&run));
        self.runs.intern(Stored { run, view })
    }

    /// A checkpoint log with one more checkpoint.
    fn append(
        &self,
        log: Shared<Vec<Shared<Checkpoint>>>,
        checkpoint: Checkpoint,
    ) -> Shared<Vec<Shared<Checkpoint>>> {
        let mut next = (*log).clone();
        next.push(self.checkpoints.intern(checkpoint));
        self.logs.intern(next)
    }

    fn time(state: &WorldState<L::Run>) -> Time {
        Time(u64::from(state.now))
    }

    /// The agent program's next request for a run, read from the run's own state.
    fn intent(&self, slot: &RunSlot<L::Run>, snap: &Snapshot) -> Option<Intent> {
        let recorded = snap
            .last_call
            .as_ref()
            .and_then(|c| self.cast.call_index(&c.call_id));
        let idle = matches!(snap.phase, Phase::Running { in_flight: None });
        match (self.config.program, recorded) {
            // Once `c1`'s result is recorded, every program completes.
            (_, Some(1)) => idle.then_some(Intent::Complete),
            (Program::Approval, None) | (Program::SideEffectFirst, Some(0)) => {
                self.suspend_intent(slot, snap)
            }
            (Program::Direct, None) => idle.then_some(Intent::Dispatch(1)),
            (Program::SideEffectFirst, None) => idle.then_some(Intent::Dispatch(0)),
            _ => None,
        }
    }

    /// Suspend for approval when running; and once more while suspended on the run's first
    /// approval checkpoint, as an agent does whose first request's reply was lost (spec SUS-2).
    fn suspend_intent(&self, slot: &RunSlot<L::Run>, snap: &Snapshot) -> Option<Intent> {
        match &snap.phase {
            Phase::Running { in_flight: None } => Some(Intent::Suspend),
            Phase::Suspended(s) if s.reason.kind() == ReasonKind::PendingApproval => {
                let asked = slot
                    .checkpoints
                    .iter()
                    .filter(|c| c.reason == ReasonKind::PendingApproval)
                    .count();
                (asked == 1).then_some(Intent::Suspend)
            }
            _ => None,
        }
    }

    /// The inputs the world offers run `r`, in a fixed order.
    fn choices(&self, state: &WorldState<L::Run>, r: usize, out: &mut Vec<Choice>) {
        let Some(slot) = state.runs.get(r) else {
            return;
        };
        if slot.run.view.revision >= u64::from(self.config.max_revision) {
            return;
        }
        let snap = self.lifecycle.snapshot(&slot.run.run);
        if let Some(intent) = self.intent(slot, &snap) {
            out.push(Choice::Agent(intent));
        }
        let target = u8::try_from(r).unwrap_or(u8::MAX);
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
        if slot.orphaned && matches!(snap.phase, Phase::Running { in_flight: Some(_) }) {
            out.push(Choice::Recover);
        }
        if let Phase::Suspended(s) = &snap.phase {
            if Self::time(state) > s.expires_at {
                out.push(Choice::Expire);
            }
            self.reconcile_choices(slot, &snap, out);
        }
        if state.budgets.cancels > 0 && !snap.phase.is_terminal() {
            out.push(Choice::Cancel);
        }
    }

    /// Reconciliation reads a checkpoint of the current suspension (usually the latest; an
    /// older one of the same suspension is what a slow reconciler still holds) and queries
    /// the tool, whose answer comes from its durable side. Intervention reads the latest.
    fn reconcile_choices(&self, slot: &RunSlot<L::Run>, snap: &Snapshot, out: &mut Vec<Choice>) {
        let Phase::Suspended(current) = &snap.phase else {
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
            let Ok(checkpoint) = u8::try_from(i) else {
                continue;
            };
            let pending = cp
                .pending
                .and_then(|p| self.cast.call_index(&p.call_id).map(|c| (c, p.attempt)));
            match (cp.reason, pending) {
                (ReasonKind::OutcomeUnknown, Some((call, attempt))) => {
                    let committed = slot.tool.committed & ToolSide::key(call, attempt) != 0;
                    let mut answers = vec![if committed {
                        Answer::Committed
                    } else {
                        Answer::NotCommitted
                    }];
                    if self.config.query_unknown {
                        answers.push(Answer::Unknown);
                    }
                    out.extend(answers.into_iter().map(|answer| Choice::Reconcile {
                        checkpoint,
                        call,
                        attempt,
                        answer,
                    }));
                }
                (ReasonKind::ManualIntervention, pending) if self.config.operator && is_current => {
                    let call = pending.map(|(c, _)| c);
                    let settle = match call {
                        Some(c) if slot.tool.committed_call(c) => Settle::Committed,
                        _ => Settle::Abandon,
                    };
                    out.push(Choice::Intervene { call, settle });
                }
                _ => {}
            }
        }
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
                state
                    .decisions
                    .iter()
                    .filter(|m| {
                        m.target == target
                            && m.source == source
                            && m.checkpoint == index
                            && m.party == party
                    })
                    .count()
            };
            if sent(source, Party::Approver) < usize::from(self.config.approvers) {
                let mut verdicts = vec![Verdict::Approve, Verdict::Deny];
                if self.config.edited_approvals {
                    verdicts.push(Verdict::ApproveEdited);
                }
                for verdict in verdicts {
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

    /// What the tool would do with a request now.
    fn tool_outcome(&self, state: &WorldState<L::Run>, msg: &ToolMsg) -> ToolOutcome {
        let key = ToolSide::key(msg.call, msg.attempt);
        let tool = state
            .runs
            .get(usize::from(msg.run))
            .map(|s| s.tool)
            .unwrap_or_default();
        if self.config.query_fences && tool.fenced & key != 0 {
            ToolOutcome::Refuses
        } else if self.config.dedupes && tool.committed & key != 0 {
            ToolOutcome::Dedupes
        } else {
            ToolOutcome::Commits
        }
    }

    /// Whether some run's expiry is due: the clock has passed it and the lifecycle would
    /// accept the expiry now. Time does not pass a due expiry until a worker has fed it, which
    /// is what bounds every suspension for a correct lifecycle (spec LIVE-1).
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
                    view.revision < u64::from(self.config.max_revision)
                        && self.lifecycle.step(&slot.run.run, &expire).is_ok()
                }
                _ => false,
            }
        })
    }

    /// Whether some run is suspended. Time passes only then: while no run waits, a tick
    /// would only shift every later time by the same amount, and no rule depends on absolute
    /// time, so leaving those ticks out loses no behaviour and saves a factor of the clock.
    fn someone_waits(&self, state: &WorldState<L::Run>) -> bool {
        state
            .runs
            .iter()
            .any(|slot| slot.run.view.phase == PhaseKind::Suspended)
    }

    /// Whether an identity is not run `r`'s.
    fn foreign(&self, identity: &Identity, r: usize) -> bool {
        self.cast.identities.get(r) != Some(identity)
    }
}

/// What the world reads of a run's snapshot (see [`RunView`]).
pub fn view_of(snap: &Snapshot) -> RunView {
    let suspension = match &snap.phase {
        Phase::Suspended(s) => Some(s),
        _ => None,
    };
    let well_formed = suspension.is_none_or(|s| {
        let party_ok = match &s.reason {
            Reason::PendingApproval { requester, .. } => *requester != s.responsible,
            _ => true,
        };
        s.expires_at >= s.since && s.since <= snap.updated_at && party_ok
    });
    RunView {
        revision: snap.revision.0,
        phase: snap.phase.kind(),
        reason: suspension.map(|s| s.reason.kind()),
        expires_at: suspension.map(|s| s.expires_at),
        ending: match &snap.phase {
            Phase::Completed { .. } => Some(Ending::Completed),
            Phase::Failed(cause) => Some(match cause {
                FailCause::Denied { .. } => Ending::Denied,
                FailCause::Expired { .. } => Ending::Expired,
                FailCause::Cancelled { .. } => Ending::Cancelled,
                FailCause::Error { .. } => Ending::Error,
                FailCause::Abandoned { .. } => Ending::Abandoned,
            }),
            _ => None,
        },
        in_flight: in_flight(&snap.phase).is_some(),
        well_formed,
    }
}

/// The in-flight call of a phase, if running with one.
fn in_flight(phase: &Phase) -> Option<&InFlight> {
    match phase {
        Phase::Running { in_flight } => in_flight.as_ref(),
        _ => None,
    }
}

impl<L: Lifecycle> Model for World<L> {
    type State = WorldState<L::Run>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        let runs = self
            .cast
            .identities
            .iter()
            .take(usize::from(self.config.runs))
            .map(|identity| RunSlot {
                run: self.store(self.lifecycle.create(*identity, self.cast.policy, Time(0))),
                checkpoints: self.logs.intern(Vec::new()),
                audited: 0,
                waiting_since: None,
                orphaned: false,
                won: 0,
                books: [0; 2],
                dispatched: 0,
                tool: ToolSide::default(),
            })
            .collect();
        vec![WorldState {
            now: 0,
            budgets: Budgets {
                crashes: self.config.crashes,
                losses: self.config.losses,
                duplicates: self.config.duplicates,
                cancels: self.config.cancels,
            },
            runs,
            workers: vec![Worker::Idle; usize::from(self.config.workers)],
            requests: Vec::new(),
            responses: Vec::new(),
            decisions: Vec::new(),
            violated: 0,
            seen: 0,
        }]
    }

    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
        // Workers with work in hand finish it: write, or send the dispatch.
        for (i, w) in state.workers.iter().enumerate() {
            let worker = u8::try_from(i).unwrap_or(u8::MAX);
            match w {
                Worker::Idle => {}
                Worker::Staged(st) => {
                    let store = state
                        .runs
                        .get(usize::from(st.run))
                        .map_or(0, |s| s.run.view.revision);
                    if store == st.from {
                        let to = st.next.view.revision;
                        actions.push(Action::Commit {
                            worker,
                            run: st.run,
                            from: st.from,
                            to,
                        });
                    } else {
                        actions.push(Action::Conflict {
                            worker,
                            run: st.run,
                            staged: st.from,
                            store,
                        });
                    }
                }
                Worker::Dispatching { run, queue } => {
                    if let Some((call, attempt)) = queue[0] {
                        actions.push(Action::Dispatch {
                            worker,
                            msg: ToolMsg {
                                run: *run,
                                call,
                                attempt,
                            },
                        });
                    }
                }
            }
        }
        // The first idle worker reads a run and steps it with one of the inputs on offer.
        let idle = state.workers.iter().position(|w| matches!(w, Worker::Idle));
        if let Some(i) = idle {
            let worker = u8::try_from(i).unwrap_or(u8::MAX);
            let mut choices = Vec::new();
            for r in 0..state.runs.len() {
                choices.clear();
                self.choices(state, r, &mut choices);
                let run = u8::try_from(r).unwrap_or(u8::MAX);
                actions.extend(choices.iter().map(|&choice| Action::Step {
                    worker,
                    run,
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
                        worker: u8::try_from(i).unwrap_or(u8::MAX),
                    });
                }
            }
        }
        let mut last = None;
        for m in &state.requests {
            if last != Some(m) {
                actions.push(Action::Tool {
                    msg: *m,
                    outcome: self.tool_outcome(state, m),
                });
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
        if state.now < self.config.max_time && self.someone_waits(state) && !self.expiry_due(state)
        {
            actions.push(Action::Tick { to: state.now + 1 });
        }
    }

    fn next_state(&self, last: &Self::State, action: Self::Action) -> Option<Self::State> {
        match action {
            Action::Step {
                worker,
                run,
                choice,
            } => self.stage(last, usize::from(worker), usize::from(run), choice),
            Action::Commit { worker, .. } | Action::Conflict { worker, .. } => {
                self.commit(last, usize::from(worker))
            }
            Action::Dispatch { worker, msg } => self.dispatch(last, usize::from(worker), msg),
            Action::Crash { worker } => self.crash(last, usize::from(worker)),
            Action::Tool { msg, .. } => self.handle(last, msg),
            Action::Lose { msg } => self.lose(last, msg),
            Action::Decide { msg } => self.decide(last, msg),
            Action::Tick { to } => {
                let mut next = last.clone();
                next.now = to;
                Some(next)
            }
        }
    }

    fn format_action(&self, action: &Self::Action) -> String {
        action.to_string()
    }

    fn format_step(&self, last: &Self::State, action: Self::Action) -> Option<String> {
        let next = self.next_state(last, action)?;
        Some(format!(
            "{}\n{}",
            self.explain(last, &action),
            self.summary(&next)
        ))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::properties::properties(self)
    }
}

impl<R: Clone + Eq + 'static> stateright::Representative for WorldState<R> {
    /// Workers are interchangeable and named nowhere else in the state, so sorting them by
    /// their whole content (a total order) gives one representative per class of states that
    /// differ only in which worker is which: a fully canonical one. Approver instances need no
    /// reduction: the state counts their decisions per checkpoint and never names them.
    fn representative(&self) -> Self {
        let mut next = self.clone();
        next.workers.sort();
        next
    }
}
