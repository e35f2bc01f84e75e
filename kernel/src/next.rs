//! What a run needs from its driver next, and when its next timer input falls due: read off
//! the run alone, so that no driver has to re-derive a kernel rule to know what to do.

use crate::batch::{List, SlotState, BATCH_CAPACITY};
use crate::effect::Dispatch;
use crate::ids::{Name, Time};
use crate::run::{InFlight, Phase, PhaseKind, Reason, ReasonKind, Run};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

#[expect(
    clippy::large_enum_variant,
    reason = "no heap in the kernel: a batch's dispatches are held inline"
)]
/// What a run waits on, as its driver must act on it. Each variant names the inputs that can
/// move the run; any other input is refused by [`crate::step`] with its reason.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "next", rename_all = "snake_case"))]
pub enum Next {
    /// Running with nothing in flight: the agent's next step (`dispatch`, `suspend`,
    /// `complete`, `fail`), or a `cancel`.
    Agent,
    /// A dispatch is in flight (spec WAL-1): feed the tool's answer as `tool_result`. A driver
    /// that restarted, or that lost the dispatch's answer, feeds `recover` instead: the
    /// outcome becomes unknown and is reconciled by query, never dispatched again (REC-1).
    Result {
        /// The call and attempt in flight, as the tool sees them.
        dispatch: Dispatch,
    },
    /// A batch's calls are in flight together (spec BAT-4): feed each tool's answer as a
    /// `tool_result`, in any order, or `recover` after a restart: every one becomes unknown
    /// and each is reconciled in turn.
    Results {
        /// The calls and attempts in flight, in the batch's order.
        dispatches: List<Dispatch, BATCH_CAPACITY>,
    },
    /// An outcome is unknown (spec REC-1, REC-2): ask the tool's status query about this call
    /// and attempt, and feed its answer as a `reconcile` resume from the latest checkpoint.
    /// This is the pending command after a recovery.
    Query {
        /// The call and attempt to ask about.
        dispatch: Dispatch,
        /// After this time the wait ends: `expire` hands the outcome to a person (EXP-1).
        expires_at: Time,
    },
    /// Suspended, waiting for a decision from `responsible` (an approval, a callback, a
    /// resource, a person), or `expire` once the suspension has passed `expires_at`.
    Decision {
        /// Why the run waits.
        reason: ReasonKind,
        /// The party who must act.
        responsible: Name,
        /// After this time decisions are refused and `expire` is accepted (EXP-1).
        expires_at: Time,
    },
    /// The run has ended; every input is refused (INV-1).
    Nothing {
        /// How it ended: completed or failed.
        phase: PhaseKind,
    },
}

impl Run {
    /// What the run needs from its driver next (see [`Next`]).
    pub fn next(&self) -> Next {
        match &self.phase {
            Phase::Running { in_flight: None } => match self.batch_in_flight() {
                Some(dispatches) => Next::Results { dispatches },
                None => Next::Agent,
            },
            Phase::Running { in_flight: Some(f) } => Next::Result {
                dispatch: self.dispatch_of(f),
            },
            Phase::Suspended(s) => match &s.reason {
                Reason::OutcomeUnknown { in_flight, .. } => Next::Query {
                    dispatch: self.dispatch_of(in_flight),
                    expires_at: s.expires_at,
                },
                reason => Next::Decision {
                    reason: reason.kind(),
                    responsible: s.responsible,
                    expires_at: s.expires_at,
                },
            },
            Phase::Completed { .. } | Phase::Failed(_) => Next::Nothing {
                phase: self.phase.kind(),
            },
        }
    }

    /// The first instant at which a timer input falls due: `expire` is accepted at any time
    /// after the suspension's expiry (EXP-1), so this is the expiry plus one. Every wait the
    /// kernel bounds (an approval, a callback, a resource, a reconciliation window, an
    /// escalation) is a suspension's expiry; a running or ended run has no deadline. An
    /// approval's own `expires_at` belongs to the decision, which the kernel refuses after it
    /// (APR-2); it needs no timer.
    pub fn deadline(&self) -> Option<Time> {
        // A suspension never expires at the end of time (SUS-1), so the sum cannot overflow;
        // `after` saturates regardless.
        self.suspension().map(|s| s.expires_at.after(1))
    }

    /// The dispatches of the batch's calls in flight together, if any.
    fn batch_in_flight(&self) -> Option<List<Dispatch, BATCH_CAPACITY>> {
        let mut dispatches = List::new();
        for slot in self.batch.as_ref()?.calls.slots.iter() {
            if let SlotState::InFlight {
                attempt,
                dispatches: n,
            } = slot.state
            {
                let f = InFlight {
                    call: slot.call,
                    attempt,
                    dispatches: n,
                };
                let _ = dispatches.push(self.dispatch_of(&f));
            }
        }
        (!dispatches.is_empty()).then_some(dispatches)
    }

    /// The command for a call and attempt of this run, under the key the tool must see (spec
    /// KEY-3): what the kernel emits for a dispatch or a query, for a driver that needs to
    /// name the call again (a query after a restart, a result to match).
    pub fn dispatch_of(&self, f: &InFlight) -> Dispatch {
        let call = &f.call.call;
        Dispatch {
            call_id: call.call_id,
            tool: call.tool,
            args: call.args,
            key: call.key,
            tool_key: crate::checkpoint::tool_key(&self.identity, &call.key),
            attempt: f.attempt,
        }
    }
}
