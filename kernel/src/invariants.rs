//! One checking function per invariant of spec/, named by its ID. [`crate::step`] asserts
//! them before and after every step in debug builds; `invariants/tests.rs` shows each
//! detects the violation it is named for.

use crate::batch::SlotState;
use crate::checkpoint::{key_digest, tool_key};
use crate::effect::Effect;
use crate::input::Input;
use crate::run::{BoundCall, InFlight, Phase, Reason, Run};
use crate::spec::SpecId;
use crate::step::Transition;
use core::fmt;

/// A broken invariant: a kernel bug, never a caller's fault.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Violation {
    /// The spec ID of the invariant.
    pub id: SpecId,
    /// What was found.
    pub what: &'static str,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} violated: {}", self.id, self.what)
    }
}

fn require(ok: bool, id: SpecId, what: &'static str) -> Result<(), Violation> {
    if ok {
        Ok(())
    } else {
        Err(Violation { id, what })
    }
}

/// Every state invariant of a run.
pub fn check_run(run: &Run) -> Result<(), Violation> {
    sus_1(run)?;
    apr_3(run)?;
    key_1(run)?;
    res_2(run)?;
    bat_1(run)?;
    Ok(())
}

/// BAT-1, BAT-4: a batch awaits decisions exactly while the run is suspended for it; every
/// call of it has its key bound to its arguments; its calls are in flight together only while
/// the run is running with nothing else in flight; and one is held only while the phase holds
/// it.
pub fn bat_1(run: &Run) -> Result<(), Violation> {
    let pending = matches!(
        run.suspension().map(|s| s.reason),
        Some(Reason::PendingBatch)
    );
    let Some(b) = run.batch() else {
        return require(
            !pending,
            SpecId::Bat1,
            "suspended for a batch the run does not hold",
        );
    };
    require(
        pending == b.is_open(),
        SpecId::Bat1,
        "a batch is open exactly while the run is suspended for it",
    )?;
    require(!b.slots.is_empty(), SpecId::Bat1, "an empty batch")?;
    let phase_call = match &run.phase {
        Phase::Running { in_flight: Some(f) } => Some(f.call.call.call_id),
        Phase::Suspended(s) => s.reason.call().map(|(c, _)| c.call.call_id),
        _ => None,
    };
    let running_idle = matches!(run.phase, Phase::Running { in_flight: None });
    for slot in b.slots.iter() {
        bound(&slot.call)?;
        match slot.state {
            SlotState::InFlight { .. } => require(
                running_idle,
                SpecId::Bat4,
                "a batch's call is in flight while the run is not running idle",
            )?,
            SlotState::Held => require(
                phase_call == Some(slot.call.call.call_id) || run.phase().is_terminal(),
                SpecId::Bat4,
                "a batch's call is held while the phase holds another",
            )?,
            // A batch left undecided ends the run (denied, expired, cancelled).
            SlotState::Awaiting => require(
                b.is_open() || run.phase().is_terminal(),
                SpecId::Bat1,
                "a call awaits a decision on a batch that left its suspension",
            )?,
            _ => {}
        }
    }
    Ok(())
}

/// SUS-1: a suspension has a reason, an expiry not before its start and early enough to be
/// passed, a responsible party, and began no later than the run's last input.
pub fn sus_1(run: &Run) -> Result<(), Violation> {
    match run.suspension() {
        Some(s) => {
            require(
                s.expires_at >= s.since,
                SpecId::Sus1,
                "suspension expires before it began",
            )?;
            require(
                s.expires_at <= crate::ids::Time::LATEST_EXPIRY,
                SpecId::Sus1,
                "suspension expires at the end of time and can never be passed",
            )?;
            require(
                s.since <= run.updated_at,
                SpecId::Sus1,
                "suspension begins in the future",
            )
        }
        None => Ok(()),
    }
}

/// APR-3: the party recorded to decide a pending approval is not its requester.
pub fn apr_3(run: &Run) -> Result<(), Violation> {
    match run.suspension().map(|s| (&s.reason, s.responsible)) {
        Some((Reason::PendingApproval { requester, .. }, responsible)) => require(
            *requester != responsible,
            SpecId::Apr3,
            "the requester is recorded as its own approver",
        ),
        _ => Ok(()),
    }
}

fn bound(call: &BoundCall) -> Result<(), Violation> {
    require(
        call.key_digest == key_digest(&call.call.key, &call.call.args),
        SpecId::Key1,
        "a call's key digest is not bound to its arguments",
    )?;
    require(
        call.call.contract.max_attempts >= 1,
        SpecId::Key1,
        "a call allows no attempt",
    )
}

fn in_flight(f: &InFlight) -> Result<(), Violation> {
    bound(&f.call)?;
    require(
        f.dispatches >= 1 && f.dispatches <= f.call.call.contract.max_attempts,
        SpecId::Rec3,
        "a call was dispatched more often than its contract allows",
    )?;
    require(
        f.attempt < f.dispatches,
        SpecId::Rec3,
        "an attempt number exceeds the dispatches made",
    )
}

/// KEY-1 and REC-3: every call the run holds has its key bound to its arguments, and every
/// in-flight call stays within its attempt budget. (KEY-2 and the rest of KEY-1 are over the
/// run's whole history, which the driver's store holds: the kernel checks them on each
/// binding, against the driver's [`crate::Prior`].)
pub fn key_1(run: &Run) -> Result<(), Violation> {
    let held = match &run.phase {
        Phase::Running { in_flight: Some(f) } => Some((f.call, Some(f))),
        Phase::Suspended(s) => match &s.reason {
            Reason::PendingApproval { call, .. } => Some((*call, None)),
            Reason::OutcomeUnknown { in_flight: f, .. }
            | Reason::ManualIntervention {
                unresolved: Some(f),
                ..
            } => Some((f.call, Some(f))),
            _ => None,
        },
        _ => None,
    };
    match held {
        Some((_, Some(f))) => in_flight(f),
        Some((call, None)) => bound(&call),
        None => Ok(()),
    }
}

/// RES-2: the receipt of the winning resume points into the run's past.
pub fn res_2(run: &Run) -> Result<(), Violation> {
    match run.last_resume() {
        Some(rc) => require(
            rc.from < rc.to && rc.to <= run.revision(),
            SpecId::Res2,
            "the last resume receipt is not in the run's past",
        ),
        None => Ok(()),
    }
}

/// Every invariant of an accepted step.
pub fn check_step(before: &Run, input: &Input, t: &Transition) -> Result<(), Violation> {
    inv_1(before)?;
    rev_1(before, t)?;
    aud_1(t)?;
    clk_1(before, input, t)?;
    id_1(before, t)?;
    wal_1(t)?;
    ckp_1(t)
}

/// INV-1: nothing is accepted from a terminal phase.
pub fn inv_1(before: &Run) -> Result<(), Violation> {
    require(
        !before.phase().is_terminal(),
        SpecId::Inv1,
        "an input was accepted from a terminal phase",
    )
}

/// REV-1: an accepted input advances the revision by exactly one.
pub fn rev_1(before: &Run, t: &Transition) -> Result<(), Violation> {
    require(
        before.revision().next() == Some(t.next.revision()),
        SpecId::Rev1,
        "the revision did not advance by exactly one",
    )
}

/// AUD-1: an accepted input emits exactly one audit record, first, at the new revision.
pub fn aud_1(t: &Transition) -> Result<(), Violation> {
    let audits = t
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::Audit(_)))
        .count();
    require(audits == 1, SpecId::Aud1, "not exactly one audit record")?;
    match t.effects.iter().next() {
        Some(Effect::Audit(r)) => require(
            r.revision == t.next.revision() && r.phase == t.next.phase().kind(),
            SpecId::Aud1,
            "the audit record does not describe the new state",
        ),
        _ => Err(Violation {
            id: SpecId::Aud1,
            what: "the audit record is not the first effect",
        }),
    }
}

/// CLK-1: the run's time is the input's, and never moves backwards.
pub fn clk_1(before: &Run, input: &Input, t: &Transition) -> Result<(), Violation> {
    require(
        t.next.updated_at() == input.at && input.at >= before.updated_at(),
        SpecId::Clk1,
        "the run's time moved backwards or is not the input's",
    )
}

/// ID-1: a transition never changes who the run belongs to, nor its policy.
pub fn id_1(before: &Run, t: &Transition) -> Result<(), Violation> {
    require(
        before.identity() == t.next.identity() && before.policy() == t.next.policy(),
        SpecId::Id1,
        "a transition changed the run's identity or policy",
    )
}

/// WAL-1: a dispatch is commanded only together with the durable intent to make it.
pub fn wal_1(t: &Transition) -> Result<(), Violation> {
    if t.effects.dispatches().count() > 1
        || t.next.batch().is_some_and(|b| {
            t.effects.dispatches().any(|d| {
                b.slot(&d.call_id)
                    .is_some_and(|s| matches!(s.state, SlotState::InFlight { .. }))
            })
        })
    {
        // BAT-3: a batch's dispatches, each matching one of its calls recorded in flight.
        let b = t.next.batch();
        let ok =
            t.effects.dispatches().all(|d| {
                b.as_ref().and_then(|b| b.slot(&d.call_id)).is_some_and(|s| {
                matches!(s.state, SlotState::InFlight { attempt, .. } if attempt == d.attempt)
                    && d.key == s.call.call.key
                    && d.args == s.call.call.args
                    && d.tool_key == tool_key(t.next.identity(), &d.key)
            })
            });
        return require(
            ok,
            SpecId::Wal1,
            "a batch's dispatch differs from the recorded intent",
        );
    }
    match (t.effects.dispatch(), t.next.phase()) {
        (None, _) => Ok(()),
        (
            Some(d),
            Phase::Running {
                in_flight: Some(in_flight),
            },
        ) => require(
            d.call_id == in_flight.call.call.call_id
                && d.key == in_flight.call.call.key
                && d.tool_key == tool_key(t.next.identity(), &d.key)
                && d.attempt == in_flight.attempt,
            SpecId::Wal1,
            "the dispatch differs from the recorded intent",
        ),
        (Some(_), _) => Err(Violation {
            id: SpecId::Wal1,
            what: "a dispatch without a recorded intent",
        }),
    }
}

/// CKP-1: a transition into or within a suspension persists a sealed checkpoint of it, and
/// no other transition does.
pub fn ckp_1(t: &Transition) -> Result<(), Violation> {
    match (t.effects.checkpoint(), t.next.suspension()) {
        (Some(cp), Some(s)) => {
            // A batch's checkpoint is the one it opened with (spec BAT-2).
            let revision = match (s.reason, t.next.batch()) {
                (Reason::PendingBatch, Some(b)) => b.opened,
                _ => t.next.revision(),
            };
            require(
                cp.verify().is_ok() && cp.revision == revision,
                SpecId::Ckp1,
                "the checkpoint is not sealed at the new revision",
            )
        }
        (None, None) => Ok(()),
        _ => Err(Violation {
            id: SpecId::Ckp1,
            what: "a checkpoint without a suspension, or a suspension without one",
        }),
    }
}

#[cfg(test)]
mod tests;
