//! The concurrent world around runs, as a stateright [`Model`]: workers that step runs and
//! crash, a durable store with compare-and-set on the revision, approvers whose decisions
//! arrive late, twice or aimed at a revision that has moved on, a tool that commits side
//! effects (moving the resource the run acts on) and whose responses get lost, a status query
//! that reconciles, an operator who settles what nobody else can, an owner who cancels in any
//! phase, an agent that may propose an earlier call id or key again, an outsider who moves the
//! resource, a hostile framework (which changes a pending call's arguments in the agent's
//! state before the resume, runs a node again with a new call under a recorded call's id,
//! resumes a node from an old config, and hands a node's second question the resume values
//! given so far), and a clock that passes expiries. How the workers drive is the configuration's
//! `Driving` (`model/src/driving.rs`).
//!
//! The world is generic over [`Lifecycle`]: the same exploration runs on the kernel, on the
//! reference machine and on broken variants. It offers inputs and writes what a lifecycle
//! accepts; it never decides a lifecycle rule itself. Every party in it is honest: facts are
//! the world's truth, the operator says only what is so.
//!
//! # A run, stage by stage
//!
//! The lifecycle's own run (`L::Run`) reaches the world in these forms: its [`Snapshot`] (the
//! run in the kernel's words, as every lifecycle shows it), the [`RunView`] read off that
//! snapshot (what the world's guards and properties ask of it), a [`StoredRun`] (the run as
//! the store holds it: the run, its call history, its snapshot and view, interned once), a
//! [`StagedStep`] (a step a worker computed from a stored run and holds until its
//! compare-and-set: the stored run it would write and everything the write does), and a step's
//! outcome (what computing it came to: impossible, refused, or accepted with its staged step).
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
//!   nothing and is not a transition; a refused decision or response is, since it is used up,
//!   and so is a refused re-proposal or cancel, which spends its budget.
//! - Approvers decide only on a run's current checkpoint; staleness comes from delays and
//!   duplicates in the network, as it does in practice.
//! - The clock ticks only while some run is suspended (see `someone_waits`).
//!
//! The world's rooms: `state` (the runs as stored, the workers, the budgets), `messages` (the
//! tool's requests and responses, the decisions), `actions` (the agent's requests, a worker's
//! inputs, every action), `marks` (the rules broken and the events seen along a path), `cast`
//! (names, calls, programs), `choices` (what is on offer in a state), `step` (a worker's
//! step, whole: what it reads, the input it feeds, the rules it breaks, what its write will
//! do), `transition` (how every other action changes the world), `ledger` (the books a write
//! keeps, which the properties read), `tool` (the tool's one ledger), `honest` (the answers
//! LIVE-2 asks for), `handout` (what a worker hands the tool, and how it answers a proposal
//! from the record, by its driving), `describe` (words for traces), `view` (the state as the
//! Explorer shows it), `intern` (interned runs and checkpoints), `memo` (what workers compute,
//! remembered), `reduce` (the actions the checker may take alone, under partial-order
//! reduction).

mod actions;
mod cast;
mod choices;
mod describe;
mod handout;
mod honest;
mod intern;
mod ledger;
mod marks;
mod memo;
mod messages;
mod reduce;
mod state;
mod step;
mod tool;
mod transition;
mod view;

pub use actions::*;
pub use cast::{Cast, Proposal, Step, BATCH, GATED, KEY_OF, PROPOSALS};
pub use intern::{Interned, Interner};
pub use marks::*;
pub use messages::*;
pub use state::*;

use crate::config::{Config, ConfigError};
use crate::{Lifecycle, Snapshot};
use resumable_kernel::{
    Checkpoint, Digest, FailCause, InFlight, Phase, Reason, ReasonKind, SlotState, Time,
};
use stateright::{Model, Property};

/// The world: a lifecycle under test and the configuration of its environment.
#[derive(Clone, Debug)]
pub struct World<L: Lifecycle> {
    lifecycle: L,
    config: Config,
    cast: Cast,
    runs: &'static Interner<StoredRun<L::Run>>,
    checkpoints: &'static Interner<Checkpoint>,
    logs: &'static Interner<Vec<Interned<Checkpoint>>>,
    steps: &'static Interner<StagedStep<L::Run>>,
    queues: &'static Interner<Queue>,
    digests: &'static Interner<Digest>,
    /// Names this world in each thread's memo of steps (`memo.rs`); a clone keeps it, since
    /// it steps alike.
    id: u64,
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
            steps: Interner::global(),
            queues: Interner::global(),
            digests: Interner::global(),
            id: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
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
        state.runs.get(r).map(|slot| slot.run.snapshot)
    }

    /// The run as the store holds it: interned, with its view.
    fn store(&self, run: L::Run, history: StoreHistory) -> Interned<StoredRun<L::Run>> {
        let snapshot = self.lifecycle.snapshot(&run);
        let mut view = view_of(&snapshot);
        for (i, state) in self.batch_states(&run).iter().enumerate() {
            match state {
                Some(SlotState::Awaiting) if view.reason == Some(ReasonKind::PendingBatch) => {
                    view.awaiting |= 1 << i;
                }
                Some(SlotState::InFlight { .. }) => {
                    view.batch_in_flight += 1;
                    view.in_flight = true;
                }
                _ => {}
            }
        }
        self.runs.intern(StoredRun {
            run,
            history,
            view,
            snapshot,
        })
    }

    /// Where each call of [`BATCH`] stands in the run's batch, as the lifecycle lists it.
    pub fn batch_states(&self, run: &L::Run) -> [Option<SlotState>; 2] {
        let mut states = [None; 2];
        if self.config.program != crate::config::Program::Batch {
            return states;
        }
        let Some(batch) = self.lifecycle.batch(run) else {
            return states;
        };
        for (state, p) in states.iter_mut().zip(BATCH) {
            let call_id = self.cast.proposals[usize::from(p)].call.call_id;
            *state = batch.slot(&call_id).map(|s| s.state);
        }
        states
    }

    /// A checkpoint log with one more (interned) checkpoint: remembered by both addresses
    /// (`memo.rs`), so a log is copied and interned once per distinct append.
    fn append(
        &self,
        log: Interned<Vec<Interned<Checkpoint>>>,
        checkpoint: Interned<Checkpoint>,
    ) -> Interned<Vec<Interned<Checkpoint>>> {
        memo::appended(log, checkpoint, || {
            let mut next = (*log).clone();
            next.push(checkpoint);
            self.logs.intern(next)
        })
    }

    /// Whether `state` may witness a `sometimes` property: not if the path to it took a tick
    /// only a free clock allows (`Config::free_clock`), which stands for another run's
    /// suspension and so may show what no two-run world reaches.
    pub fn may_witness(&self, state: &WorldState<L::Run>) -> bool {
        state.seen & witness::BORROWED_TIME == 0
    }

    fn time(state: &WorldState<L::Run>) -> Time {
        Time(u64::from(state.now))
    }

    /// The first run of the configuration, for each identity in use: one the lifecycle made.
    fn first_runs(&self) -> Vec<RunSlot<L::Run>> {
        let identities = self
            .cast
            .identities
            .iter()
            .skip(usize::from(self.config.identity))
            .take(usize::from(self.config.runs));
        identities
            // The configuration's reconcile window is at least 1, so every lifecycle
            // accepts the policy (`Config::validate`).
            .filter_map(|id| self.lifecycle.create(*id, self.cast.policy, Time(0)).ok())
            .map(|run| RunSlot {
                run: self.store(run, StoreHistory::default()),
                checkpoints: self.logs.intern(Vec::new()),
                audited: 0,
                waiting_since: None,
                orphaned: false,
                won: 0,
                books: [0; KEYS],
                payloads: [0; KEYS],
                dispatched: 0,
                tool: ToolSide::default(),
                tool_keys: [None; KEYS],
                foreign: ToolSide::default(),
                resource: self.config.resource_start,
                cancelled: false,
                decided: [None; 2],
                changed: false,
                config: None,
                fed: 0,
            })
            .collect()
    }
}

/// What the world reads of a run's snapshot (see [`RunView`]).
pub fn view_of(snap: &Snapshot) -> RunView {
    let suspension = match &snap.phase {
        Phase::Suspended(s) => Some(s),
        _ => None,
    };
    let well_formed = suspension.is_none_or(|s| {
        s.expires_at >= s.since && s.expires_at <= Time::LATEST_EXPIRY && s.since <= snap.updated_at
    });
    let self_approved = suspension.is_some_and(|s| {
        matches!(&s.reason, Reason::PendingApproval { requester, .. } if *requester == s.responsible)
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
                FailCause::Expired { unresolved } => Ending::Expired {
                    unresolved: unresolved.is_some(),
                },
                FailCause::Cancelled { .. } => Ending::Cancelled,
                FailCause::Error { .. } => Ending::Error,
                FailCause::Abandoned { .. } => Ending::Abandoned,
            }),
            _ => None,
        },
        in_flight: in_flight(&snap.phase).is_some(),
        cancel_pending: suspension.is_some_and(|s| s.reason.cancelled_by().is_some()),
        well_formed,
        self_approved,
        awaiting: 0,
        batch_in_flight: 0,
    }
}

/// The in-flight call of a phase, if running with one.
fn in_flight(phase: &Phase) -> Option<&InFlight> {
    match phase {
        Phase::Running { in_flight } => in_flight.as_ref(),
        _ => None,
    }
}

fn index(i: usize) -> u8 {
    // Runs, workers and messages are counted in `u8` by construction: the configuration
    // allows at most 2 runs and 4 workers.
    u8::try_from(i).unwrap_or(u8::MAX)
}

impl<L: Lifecycle> Model for World<L> {
    type State = WorldState<L::Run>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        vec![WorldState {
            now: 0,
            budgets: Budgets {
                crashes: self.config.crashes,
                losses: self.config.losses,
                duplicates: self.config.duplicates,
                cancels: self.config.cancels,
                reuses: self.config.reuses,
                outsider_moves: self.config.outsider_moves,
                arg_changes: self.config.arg_changes,
                renewals: self.config.renewals,
                old_configs: self.config.old_configs,
                questions: self.config.questions,
                foreign: self.config.foreign_commits,
            },
            runs: Runs::from_vec(self.first_runs()),
            workers: Workers::from_elem(Worker::Idle, usize::from(self.config.workers)),
            requests: ToolMsgs::new(),
            responses: ToolMsgs::new(),
            decisions: DecisionMsgs::new(),
            violated: Violations::NONE,
            seen: 0,
        }]
    }

    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
        self.worker_actions(state, actions);
        self.environment_actions(state, actions);
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
                // Only a free clock ticks while no run waits (`Config::free_clock`).
                if !self.someone_waits(last) {
                    next.seen |= witness::BORROWED_TIME;
                }
                Some(next)
            }
            Action::Outsider { run } => self.outsider(last, usize::from(run)),
            Action::Framework { run } => self.change_args(last, usize::from(run)),
            Action::Foreign {
                run,
                key,
                attempt,
                fence,
            } => self.foreign_record(last, usize::from(run), key, attempt, fence),
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

    /// The properties as stateright's web Explorer shows them. The checker reads them with
    /// their spec IDs and partners (`Checkable::property_list`), and refuses a list with an
    /// `always` left unpartnered, which a test shows this one is not; the Explorer, given no
    /// list, shows no property rather than a vacuous one.
    fn properties(&self) -> Vec<Property<Self>> {
        crate::properties::properties(self)
            .map(crate::checker::PropertyList::into_properties)
            .unwrap_or_default()
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
