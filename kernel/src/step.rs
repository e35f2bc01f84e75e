//! The transition function: the guards every input meets (spec 4.1), then one handler per
//! event (spec 4.3 to 5.4), each short and citing the rule it implements, then one sealing
//! stage shared by all (revision, clock, audit record, checkpoint: spec 4 and 6).

mod batch;
mod checks;
mod resume;

use crate::batch::{List, SlotState, BATCH_CAPACITY};
use crate::calls::{HistoryEntry, Prior};
use crate::effect::{AuditRecord, Command, Effects};
use crate::ids::{Digest, Name, Time};
use crate::input::{Decision, Event, Input, Wait};
use crate::reject::Rejection;
use crate::run::{Call, FailCause, InFlight, Phase, Reason, Run, Suspension};
use checks::{
    bind, check_checkpoint, check_identity, dispatch_of, held_by_operator, idle, person, record,
    terminal, unknown,
};
use resume::resume;

/// An accepted input: the run's next state and the effects the driver must carry out, in
/// order, after storing `next` with compare-and-set on the revision.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Transition {
    /// The run after the input.
    pub next: Run,
    /// What the driver must do, in order. The first is always the audit record.
    pub effects: Effects,
}

/// Steps `run` by `input`: a transition, or the rejection that says why not. The run is
/// borrowed, so a rejection leaves it exactly as it was (spec REJ-2). In debug builds every
/// state invariant is asserted before the step, and every step invariant after it.
#[inline]
pub fn step(run: &Run, input: &Input) -> Result<Transition, Rejection> {
    debug_assert_eq!(crate::invariants::check_run(run), Ok(()));
    let mut result = Err(Rejection::RevisionExhausted);
    decide(run, input, &mut result);
    if let Ok(t) = &result {
        debug_assert_eq!(crate::invariants::check_run(&t.next), Ok(()));
        debug_assert_eq!(crate::invariants::check_step(run, input, t), Ok(()));
    }
    result
}

/// A handler's result. A handler writes the next run (before revision and clock move) into
/// `next`, which starts as a copy of the run, and pushes its commands for the driver onto
/// `commands`: at most one, but for a batch's dispatches (spec 5.5). Both live in the
/// transition the step returns and are written in place, so that a step copies the run once,
/// not once per stage; on a rejection they are dropped, and the run, borrowed, is unchanged.
pub(super) type Stepped = Result<(), Rejection>;

/// The commands of one transition, in order.
pub(super) type Commands = List<Command, BATCH_CAPACITY>;

/// Writes the step's result into `out`. The transition is made once, in place, and every
/// stage below writes into it: built aside and then returned, it would be copied whole (about
/// a run and a half of bytes); written through `out`, the compiler hands `step`'s own return
/// slot down as `out`, so the run is copied once per step.
#[inline(never)]
fn decide(run: &Run, input: &Input, out: &mut Result<Transition, Rejection>) {
    if let Err(rejection) = guard_every_input(run, input) {
        *out = Err(rejection);
        return;
    }
    *out = Ok(Transition {
        next: *run,
        effects: Effects::only(audit_record(run, input)),
    });
    if let Ok(t) = out {
        if let Err(rejection) = fill(run, input, t) {
            *out = Err(rejection);
        }
    }
}

/// The handler of the input's event, the batch's carry-on, then the sealing stage, each
/// writing into `t`.
fn fill(run: &Run, input: &Input, t: &mut Transition) -> Stepped {
    handle(run, input, &mut t.next, &mut t.effects.commands)?;
    batch::carry_on(run, input.at, &mut t.next, &mut t.effects.commands)?;
    seal(run, input, t)
}

/// One handler per event (spec 4.3 to 5.4), each writing into `next` and `c`.
fn handle(run: &Run, input: &Input, n: &mut Run, c: &mut Commands) -> Stepped {
    let at = input.at;
    match &input.event {
        Event::Suspend {
            wait,
            expires_at,
            responsible,
            resource_version,
        } => suspend(
            run,
            n,
            at,
            wait,
            *expires_at,
            *responsible,
            *resource_version,
        ),
        Event::Dispatch {
            call,
            prior,
            resource_version,
        } => dispatch(run, n, c, call, prior, *resource_version),
        Event::ToolResult {
            call_id,
            attempt,
            result,
        } => tool_result(run, n, *call_id, *attempt, *result),
        Event::Recover => recover(run, n, c, at),
        Event::Expire => expire(run, n, at),
        Event::Cancel { by } => cancel(run, n, c, at, *by),
        Event::Complete { result } => finish(run, n, Phase::Completed { result: *result }),
        Event::Fail { code } => finish(run, n, Phase::Failed(FailCause::Error { code: *code })),
        Event::Resume(r) => resume(run, n, c, at, r),
    }
}

/// Spec 4.1, the guards every input meets, in this order.
fn guard_every_input(run: &Run, input: &Input) -> Result<(), Rejection> {
    if let Event::Resume(r) = &input.event {
        // ID-1, RES-1: identity first, before anything that would tell a stranger about the run.
        check_identity(&run.identity, &r.checkpoint.identity)?;
        // REJ-1: schema, digest and revision come before the terminal check, so a resumer
        // whose reply was lost learns whether it won even after the run ended.
        check_checkpoint(run, r)?;
    }
    // INV-1: terminal phases absorb every input.
    if run.phase.is_terminal() {
        return Err(terminal(run));
    }
    // CLK-1: time never runs backwards within a run.
    if input.at < run.updated_at {
        return Err(Rejection::ClockRegressed {
            last: run.updated_at,
            got: input.at,
        });
    }
    // REV-1: the revision counter has room for one more.
    run.revision.next().ok_or(Rejection::RevisionExhausted)?;
    Ok(())
}

/// AUD-1: the audit record of an accepted input, as far as the input tells it; [`seal`]
/// completes it with what the transition made (revision, phase, reason).
fn audit_record(run: &Run, input: &Input) -> AuditRecord {
    AuditRecord {
        revision: run.revision,
        at: input.at,
        event: input.event.kind(),
        decision: match &input.event {
            Event::Resume(r) => Some(r.decision.kind()),
            _ => None,
        },
        phase: run.phase.kind(),
        reason: None,
    }
}

/// REV-1, CLK-1, AUD-1, CKP-1: the next run one revision on at the input's time, and its
/// effects: one new audit record first, its history entries, a sealed checkpoint when it is
/// suspended, then the commands the handlers pushed.
fn seal(run: &Run, input: &Input, t: &mut Transition) -> Stepped {
    let next = &mut t.next;
    next.revision = run.revision.next().ok_or(Rejection::RevisionExhausted)?;
    t.effects.checkpoint = batch::seal(run, next);
    next.updated_at = input.at;
    let audit = &mut t.effects.audit;
    audit.revision = next.revision;
    audit.phase = next.phase.kind();
    audit.reason = next.suspension().map(|s| s.reason.kind());
    history(run, input, next, &mut t.effects.history);
    Ok(())
}

/// KEY-1, KEY-2, REC-4: what an accepted input adds to the run's history, for the driver to
/// store with the run: a call bound (a dispatch, or a suspension for its approval; each call
/// of a batch, and each call an approver edited), or a key spent (a result recorded: the last
/// recorded call changed, since call ids are never reused; each call a person answered).
fn history(run: &Run, input: &Input, next: &Run, entries: &mut List<HistoryEntry, BATCH_CAPACITY>) {
    match &input.event {
        Event::Dispatch { call, .. }
        | Event::Suspend {
            wait: Wait::Approval { call, .. },
            ..
        } => {
            let _ = entries.push(HistoryEntry::bound(call));
        }
        Event::Suspend {
            wait: Wait::Batch { calls },
            ..
        } => {
            for p in calls.iter() {
                let _ = entries.push(HistoryEntry::bound(&p.call));
            }
        }
        Event::Resume(r) if matches!(r.decision, Decision::Batch { .. }) => {
            let (Some(before), Some(after)) = (&run.batch, &next.batch) else {
                return;
            };
            for (was, now) in before.calls.slots.iter().zip(after.calls.slots.iter()) {
                if was.call.call.args != now.call.call.args {
                    let _ = entries.push(HistoryEntry::bound(&now.call.call));
                }
                if let (SlotState::Awaiting, SlotState::Responded { .. }) = (was.state, now.state) {
                    let _ = entries.push(HistoryEntry::settled(&now.call.call.key));
                }
            }
        }
        _ => {
            if let Some(done) = next.last_call.filter(|_| run.last_call != next.last_call) {
                let _ = entries.push(HistoryEntry::settled(&done.key));
            }
        }
    }
}

// -------------------------------------------------------------------------------------------
// Events other than resume (spec 4.3 to 4.8).
// -------------------------------------------------------------------------------------------

/// SUS-2, SUS-1, APR-3: a running run with nothing in flight suspends, with an expiry after
/// now that can be passed; an approval's requester is never its approver.
fn suspend(
    run: &Run,
    next: &mut Run,
    at: Time,
    wait: &Wait,
    expires_at: Time,
    responsible: Name,
    resource_version: u64,
) -> Stepped {
    if let Phase::Suspended(s) = &run.phase {
        return Err(Rejection::AlreadySuspended {
            reason: s.reason.kind(),
        });
    }
    idle(run)?;
    if expires_at <= at {
        return Err(Rejection::ExpiryNotInFuture {
            expires_at,
            now: at,
        });
    }
    if expires_at > Time::LATEST_EXPIRY {
        return Err(Rejection::ExpiryUnreachable { expires_at });
    }
    let reason = match wait {
        Wait::Approval {
            call,
            requester,
            prior,
        } => {
            if requester == &responsible {
                return Err(Rejection::SelfApproval { party: *requester });
            }
            let call = bind(call, prior)?;
            resume::decidable(run, &call, resume::SINGLE_APPROVAL)?;
            Reason::PendingApproval {
                call,
                requester: *requester,
            }
        }
        Wait::Callback { callback } => Reason::ExternalCallback {
            callback: *callback,
        },
        Wait::Intervention => Reason::ManualIntervention {
            unresolved: None,
            cancelled_by: None,
        },
        Wait::Resource { resource } => Reason::ResourceWait {
            resource: *resource,
        },
        Wait::Batch { calls } => {
            next.batch = Some(batch::open(run, calls, responsible, resource_version)?);
            Reason::PendingBatch
        }
    };
    next.resource_version = resource_version;
    next.phase = Phase::Suspended(Suspension {
        reason,
        since: at,
        expires_at,
        responsible,
    });
    Ok(())
}

/// WAL-1, KEY-1, KEY-2, RES-3: an ungated call is bound, and the intent to dispatch it becomes
/// durable state together with the command to dispatch; the resource version the agent
/// observed, if stated, is the run's from now on.
fn dispatch(
    run: &Run,
    next: &mut Run,
    commands: &mut Commands,
    call: &Call,
    prior: &Prior,
    resource_version: Option<u64>,
) -> Stepped {
    idle(run)?;
    let call = bind(call, prior)?;
    let in_flight = InFlight {
        call,
        attempt: 0,
        dispatches: 1,
    };
    next.phase = Phase::Running {
        in_flight: Some(in_flight),
    };
    if let Some(version) = resource_version {
        next.resource_version = version;
    }
    let _ = commands.push(Command::Dispatch(dispatch_of(run, &in_flight)));
    Ok(())
}

/// WAL-2: the tool's answer for the call and attempt in flight; the result and the next
/// revision land together.
fn tool_result(run: &Run, next: &mut Run, call_id: Name, attempt: u8, result: Digest) -> Stepped {
    if let Some(stepped) = batch::tool_result(run, next, call_id, attempt, result) {
        return stepped;
    }
    let Phase::Running { in_flight: Some(f) } = &run.phase else {
        return Err(Rejection::NoDispatchInFlight {
            phase: run.phase.kind(),
        });
    };
    if call_id != f.call.call.call_id || attempt != f.attempt {
        return Err(Rejection::ResultMismatch {
            call_id: f.call.call.call_id,
            attempt: f.attempt,
            got_call: call_id,
            got_attempt: attempt,
        });
    }
    record(next, f, result);
    next.phase = Phase::Running { in_flight: None };
    Ok(())
}

/// REC-1: a restart turns the dispatch in flight into an unknown outcome, reconciled by
/// query, never dispatched again.
fn recover(run: &Run, next: &mut Run, commands: &mut Commands, at: Time) -> Stepped {
    if batch::all_unknown(run, next, Phase::Running { in_flight: None }) {
        return Ok(());
    }
    let Phase::Running { in_flight: Some(f) } = &run.phase else {
        return Err(Rejection::NothingInFlight {
            phase: run.phase.kind(),
        });
    };
    next.phase = held_by_operator(run, at, unknown(*f, None))?;
    let _ = commands.push(Command::Query(dispatch_of(run, f)));
    Ok(())
}

/// EXP-1: a suspension past its expiry ends, except that an unknown outcome first goes to a
/// person, carrying any pending cancel with it (CAN-2).
fn expire(run: &Run, next: &mut Run, at: Time) -> Stepped {
    let Phase::Suspended(s) = &run.phase else {
        return Err(Rejection::NotSuspended {
            phase: run.phase.kind(),
        });
    };
    if at <= s.expires_at {
        return Err(Rejection::NotExpired {
            expires_at: s.expires_at,
            now: at,
        });
    }
    next.phase = match s.reason {
        // At the end of time the intervention would expire the instant it opened: the run
        // ends as that intervention would, naming the unsettled effect.
        Reason::OutcomeUnknown { in_flight, .. } if at == Time::END => {
            Phase::Failed(FailCause::Expired {
                unresolved: Some(in_flight),
            })
        }
        Reason::OutcomeUnknown {
            in_flight,
            cancelled_by,
        } => held_by_operator(run, at, person(in_flight, cancelled_by))?,
        Reason::ManualIntervention { unresolved, .. } => {
            Phase::Failed(FailCause::Expired { unresolved })
        }
        _ => Phase::Failed(FailCause::Expired { unresolved: None }),
    };
    Ok(())
}

/// CAN-1, CAN-2: a cancel ends the run at once, unless an effect may have committed: then it
/// is recorded in the suspension and takes effect once the effect is settled.
fn cancel(run: &Run, next: &mut Run, commands: &mut Commands, at: Time, by: Name) -> Stepped {
    let cancelled = Phase::Failed(FailCause::Cancelled { by });
    // CAN-1 for a batch's calls in flight: each may have committed; each is reconciled.
    if batch::all_unknown(run, next, cancelled) {
        return Ok(());
    }
    let command = match &run.phase {
        // CAN-1: the effect in flight may already have committed: reconcile it first.
        Phase::Running { in_flight: Some(f) } => {
            next.phase = held_by_operator(run, at, unknown(*f, Some(by)))?;
            Some(Command::Query(dispatch_of(run, f)))
        }
        Phase::Suspended(s) => {
            next.phase = match s.reason {
                // CAN-2: a cancel already waits on the unsettled effect.
                Reason::OutcomeUnknown {
                    cancelled_by: Some(_),
                    ..
                }
                | Reason::ManualIntervention {
                    cancelled_by: Some(_),
                    ..
                } => return Err(Rejection::CancelPending),
                // CAN-2: the same wait, now carrying the cancel; no new query is needed.
                Reason::OutcomeUnknown { in_flight, .. } => Phase::Suspended(Suspension {
                    reason: unknown(in_flight, Some(by)),
                    ..*s
                }),
                Reason::ManualIntervention {
                    unresolved: Some(f),
                    ..
                } => Phase::Suspended(Suspension {
                    reason: person(f, Some(by)),
                    ..*s
                }),
                _ => cancelled,
            };
            None
        }
        _ => {
            next.phase = cancelled;
            None
        }
    };
    if let Some(c) = command {
        let _ = commands.push(c);
    }
    Ok(())
}

/// The run completes or fails on its own account: only when running with nothing in flight.
fn finish(run: &Run, next: &mut Run, phase: Phase) -> Stepped {
    idle(run)?;
    next.phase = phase;
    Ok(())
}
