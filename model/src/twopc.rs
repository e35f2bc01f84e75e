//! A small two-phase-commit model: the yardstick for the checker driver.
//!
//! It is not part of the lifecycle. It exists for two reasons: the checker driver is tested on
//! it (exact state counts, a known shortest counterexample), and its throughput is the
//! benchmark's reference point for how lean the world model's state is.
//!
//! One transaction manager (TM) and `n` resource managers (RMs), after Gray and Lamport's
//! specification: an RM prepares or chooses to abort; the TM collects "prepared" messages and
//! commits once every RM has prepared, or aborts at any time before deciding; RMs then
//! receive the decision. Messages are never lost and never delivered twice in effect, so each
//! is a flag.
//!
//! [`TwoPhaseCommit::broken`] switches on a deliberately wrong TM that commits as soon as one
//! RM has prepared, so that `"consistent"` has a counterexample.

use crate::checker::{Checkable, ListError, PropertyList, Summarize};
use stateright::{Model, Property, Representative};

/// What a resource manager has done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RmPhase {
    /// Has not decided yet.
    Working,
    /// Has voted to commit.
    Prepared,
    /// Has learned the commit.
    Committed,
    /// Has aborted, by its own choice or on the TM's word.
    Aborted,
}

/// What the transaction manager has decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TmPhase {
    /// Collecting votes.
    Init,
    /// Decided to commit.
    Committed,
    /// Decided to abort.
    Aborted,
}

/// Everything about one RM, including what the TM knows of it. Keeping all of an RM's data in
/// one value is what makes sorting the RMs a fully canonical symmetry representative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rm {
    /// The RM's own phase.
    pub phase: RmPhase,
    /// The RM has sent its "prepared" message.
    pub sent_prepared: bool,
    /// The TM has received that message.
    pub tm_has_prepared: bool,
}

/// A state of the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TpcState {
    /// One entry per RM, indexed by RM number.
    pub rms: Vec<Rm>,
    /// The TM's decision.
    pub tm: TmPhase,
    /// The TM has broadcast "commit".
    pub commit_sent: bool,
    /// The TM has broadcast "abort".
    pub abort_sent: bool,
}

impl Representative for TpcState {
    /// RMs are interchangeable, and each RM's data lives in its own [`Rm`], so the sorted
    /// order is the same for every permutation of the same state: fully canonical.
    fn representative(&self) -> Self {
        let mut canonical = self.clone();
        canonical.rms.sort_unstable();
        canonical
    }
}

/// An action, named actor-verb-object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TpcAction {
    /// The TM receives RM `i`'s "prepared" message.
    TmReceivePrepared(usize),
    /// The TM decides to commit and broadcasts it.
    TmCommit,
    /// The TM decides to abort and broadcasts it.
    TmAbort,
    /// RM `i` prepares and sends "prepared".
    RmPrepare(usize),
    /// RM `i` decides to abort on its own.
    RmChooseAbort(usize),
    /// RM `i` receives "commit".
    RmReceiveCommit(usize),
    /// RM `i` receives "abort".
    RmReceiveAbort(usize),
}

/// The model's configuration: the number of RMs and whether the TM is broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TwoPhaseCommit {
    /// The number of resource managers.
    pub rms: usize,
    /// When set, the TM commits once any one RM has prepared instead of all of them.
    pub broken: bool,
}

impl TwoPhaseCommit {
    /// The correct protocol with `rms` resource managers.
    pub fn new(rms: usize) -> Self {
        TwoPhaseCommit { rms, broken: false }
    }

    /// The same protocol with the deliberately wrong commit rule.
    pub fn broken(rms: usize) -> Self {
        TwoPhaseCommit { rms, broken: true }
    }

    fn may_commit(&self, state: &TpcState) -> bool {
        if self.broken {
            state.rms.iter().any(|rm| rm.tm_has_prepared)
        } else {
            state.rms.iter().all(|rm| rm.tm_has_prepared)
        }
    }
}

impl Model for TwoPhaseCommit {
    type State = TpcState;
    type Action = TpcAction;

    fn init_states(&self) -> Vec<TpcState> {
        let working = Rm {
            phase: RmPhase::Working,
            sent_prepared: false,
            tm_has_prepared: false,
        };
        vec![TpcState {
            rms: vec![working; self.rms],
            tm: TmPhase::Init,
            commit_sent: false,
            abort_sent: false,
        }]
    }

    fn actions(&self, state: &TpcState, actions: &mut Vec<TpcAction>) {
        // Every guard excludes its own no-op, so no action leaves a state unchanged and the
        // order of pushes is fixed: paths replay deterministically.
        if state.tm == TmPhase::Init {
            if self.may_commit(state) {
                actions.push(TpcAction::TmCommit);
            }
            actions.push(TpcAction::TmAbort);
        }
        for (i, rm) in state.rms.iter().enumerate() {
            if state.tm == TmPhase::Init && rm.sent_prepared && !rm.tm_has_prepared {
                actions.push(TpcAction::TmReceivePrepared(i));
            }
            if rm.phase == RmPhase::Working {
                actions.push(TpcAction::RmPrepare(i));
                actions.push(TpcAction::RmChooseAbort(i));
            }
            if state.commit_sent && rm.phase != RmPhase::Committed {
                actions.push(TpcAction::RmReceiveCommit(i));
            }
            if state.abort_sent && rm.phase != RmPhase::Aborted {
                actions.push(TpcAction::RmReceiveAbort(i));
            }
        }
    }

    fn next_state(&self, last: &TpcState, action: TpcAction) -> Option<TpcState> {
        let mut next = last.clone();
        match action {
            TpcAction::TmReceivePrepared(i) => next.rms.get_mut(i)?.tm_has_prepared = true,
            TpcAction::TmCommit => {
                next.tm = TmPhase::Committed;
                next.commit_sent = true;
            }
            TpcAction::TmAbort => {
                next.tm = TmPhase::Aborted;
                next.abort_sent = true;
            }
            TpcAction::RmPrepare(i) => {
                let rm = next.rms.get_mut(i)?;
                rm.phase = RmPhase::Prepared;
                rm.sent_prepared = true;
            }
            TpcAction::RmChooseAbort(i) => next.rms.get_mut(i)?.phase = RmPhase::Aborted,
            TpcAction::RmReceiveCommit(i) => next.rms.get_mut(i)?.phase = RmPhase::Committed,
            TpcAction::RmReceiveAbort(i) => next.rms.get_mut(i)?.phase = RmPhase::Aborted,
        }
        Some(next)
    }

    fn format_action(&self, action: &TpcAction) -> String {
        match action {
            TpcAction::TmReceivePrepared(i) => format!("tm receives prepared from rm {i}"),
            TpcAction::TmCommit => "tm commits".to_owned(),
            TpcAction::TmAbort => "tm aborts".to_owned(),
            TpcAction::RmPrepare(i) => format!("rm {i} prepares"),
            TpcAction::RmChooseAbort(i) => format!("rm {i} chooses to abort"),
            TpcAction::RmReceiveCommit(i) => format!("rm {i} receives commit"),
            TpcAction::RmReceiveAbort(i) => format!("rm {i} receives abort"),
        }
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::<Self>::always("consistent", |_, state| {
                let committed = state.rms.iter().any(|rm| rm.phase == RmPhase::Committed);
                let aborted = state.rms.iter().any(|rm| rm.phase == RmPhase::Aborted);
                !(committed && aborted)
            }),
            Property::<Self>::sometimes("all committed", |_, state| {
                state.rms.iter().all(|rm| rm.phase == RmPhase::Committed)
            }),
            Property::<Self>::sometimes("all aborted", |_, state| {
                state.rms.iter().all(|rm| rm.phase == RmPhase::Aborted)
            }),
        ]
    }
}

impl Summarize for TwoPhaseCommit {
    fn summary(&self, state: &TpcState) -> String {
        let tm = match state.tm {
            TmPhase::Init => "init",
            TmPhase::Committed => "committed",
            TmPhase::Aborted => "aborted",
        };
        let known: Vec<String> = (state.rms.iter().enumerate())
            .filter(|(_, rm)| rm.tm_has_prepared)
            .map(|(i, _)| i.to_string())
            .collect();
        let rms: Vec<String> = (state.rms.iter().enumerate())
            .map(|(i, rm)| {
                let phase = match rm.phase {
                    RmPhase::Working => "working",
                    RmPhase::Prepared => "prepared",
                    RmPhase::Committed => "committed",
                    RmPhase::Aborted => "aborted",
                };
                format!("rm {i} {phase}")
            })
            .collect();
        format!(
            "tm {tm} (prepared seen: {}); {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            },
            rms.join(", ")
        )
    }
}

impl Checkable for TwoPhaseCommit {
    /// The protocol has one rule, consistency, so every property is keyed by it: both
    /// `sometimes` properties (every RM commits, every RM aborts) partner `"consistent"`.
    type Key = ();

    fn property_list(&self) -> Result<PropertyList<Self, ()>, ListError> {
        (self.properties().into_iter())
            .fold(PropertyList::builder(), |list, p| list.property((), p))
            .build()
    }
}
