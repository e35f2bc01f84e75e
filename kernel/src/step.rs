//! The transition function: the guards every input meets (spec 4.1), then one handler per
//! event (spec 4.3 to 5.4), each short and citing the rule it implements, then one sealing
//! stage shared by all (revision, clock, audit record, checkpoint: spec 4 and 6).

use crate::calls::CallLog;
use crate::checkpoint::{key_digest, tool_key, Checkpoint, SCHEMA_VERSION};
use crate::effect::{AuditRecord, Dispatch, Effect, Effects};
use crate::ids::{Digest, Name, Revision, Time};
use crate::input::{
    Approval, Decision, Event, Facts, Input, QueryAnswer, Resolution, Resume, Wait,
};
use crate::reject::{ApprovalField, CheckpointField, IdentityField, Rejection};
use crate::run::{
    BoundCall, Call, CallOutcome, FailCause, Identity, InFlight, Phase, Reason, ResumeReceipt, Run,
    Suspension,
};

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
pub fn step(run: &Run, input: &Input) -> Result<Transition, Rejection> {
    debug_assert_eq!(crate::invariants::check_run(run), Ok(()));
    let result = decide(run, input);
    if let Ok(t) = &result {
        debug_assert_eq!(crate::invariants::check_run(&t.next), Ok(()));
        debug_assert_eq!(crate::invariants::check_step(run, input, t), Ok(()));
    }
    result
}

/// A handler's result: the next run (before revision and clock move) and at most one
/// command for the driver.
type Stepped = Result<(Run, Option<Effect>), Rejection>;

fn decide(run: &Run, input: &Input) -> Result<Transition, Rejection> {
    guard_every_input(run, input)?;
    let at = input.at;
    let (next, command) = match &input.event {
        Event::Suspend {
            wait,
            expires_at,
            responsible,
            resource_version,
        } => suspend(run, at, wait, *expires_at, *responsible, *resource_version)?,
        Event::Dispatch { call } => dispatch(run, call)?,
        Event::ToolResult {
            call_id,
            attempt,
            result,
        } => tool_result(run, *call_id, *attempt, *result)?,
        Event::Recover => recover(run, at)?,
        Event::Expire => expire(run, at)?,
        Event::Cancel { by } => cancel(run, at, *by)?,
        Event::Complete { result } => finish(run, Phase::Completed { result: *result })?,
        Event::Fail { code } => finish(run, Phase::Failed(FailCause::Error { code: *code }))?,
        Event::Resume(r) => resume(run, at, r)?,
    };
    seal(run, input, next, command)
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

/// REV-1, CLK-1, AUD-1, CKP-1: the next run one revision on at the input's time, with one
/// new audit record first, a sealed checkpoint when it is suspended, then the command.
fn seal(
    run: &Run,
    input: &Input,
    mut next: Run,
    command: Option<Effect>,
) -> Result<Transition, Rejection> {
    next.revision = run.revision.next().ok_or(Rejection::RevisionExhausted)?;
    next.updated_at = input.at;
    let record = AuditRecord {
        revision: next.revision,
        at: input.at,
        event: input.event.kind(),
        decision: match &input.event {
            Event::Resume(r) => Some(r.decision.kind()),
            _ => None,
        },
        phase: next.phase.kind(),
        reason: next.suspension().map(|s| s.reason.kind()),
    };
    let effects = Effects::of(record, Checkpoint::of(&next), command);
    Ok(Transition { next, effects })
}

// -------------------------------------------------------------------------------------------
// Events other than resume (spec 4.3 to 4.8).
// -------------------------------------------------------------------------------------------

/// SUS-2, SUS-1, APR-3: a running run with nothing in flight suspends, with an expiry after
/// now that can be passed; an approval's requester is never its approver.
fn suspend(
    run: &Run,
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
    let mut next = *run;
    let reason = match wait {
        Wait::Approval { call, requester } => {
            if requester == &responsible {
                return Err(Rejection::SelfApproval { party: *requester });
            }
            let (calls, call) = bind(run, call)?;
            next.calls = calls;
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
    };
    next.resource_version = resource_version;
    next.phase = Phase::Suspended(Suspension {
        reason,
        since: at,
        expires_at,
        responsible,
    });
    Ok((next, None))
}

/// WAL-1, KEY-1, KEY-2: an ungated call is bound, and the intent to dispatch it becomes
/// durable state together with the command to dispatch.
fn dispatch(run: &Run, call: &Call) -> Stepped {
    idle(run)?;
    let (calls, call) = bind(run, call)?;
    let in_flight = InFlight {
        call,
        attempt: 0,
        dispatches: 1,
    };
    let mut next = *run;
    next.calls = calls;
    next.phase = Phase::Running {
        in_flight: Some(in_flight),
    };
    Ok((next, Some(Effect::Dispatch(dispatch_of(run, &in_flight)))))
}

/// WAL-2: the tool's answer for the call and attempt in flight; the result and the next
/// revision land together.
fn tool_result(run: &Run, call_id: Name, attempt: u8, result: Digest) -> Stepped {
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
    let mut next = *run;
    record(&mut next, f, result);
    next.phase = Phase::Running { in_flight: None };
    Ok((next, None))
}

/// REC-1: a restart turns the dispatch in flight into an unknown outcome, reconciled by
/// query, never dispatched again.
fn recover(run: &Run, at: Time) -> Stepped {
    let Phase::Running { in_flight: Some(f) } = &run.phase else {
        return Err(Rejection::NothingInFlight {
            phase: run.phase.kind(),
        });
    };
    let mut next = *run;
    next.phase = held_by_operator(run, at, unknown(*f, None))?;
    Ok((next, Some(Effect::Query(dispatch_of(run, f)))))
}

/// EXP-1: a suspension past its expiry ends, except that an unknown outcome first goes to a
/// person, carrying any pending cancel with it (CAN-2).
fn expire(run: &Run, at: Time) -> Stepped {
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
    let mut next = *run;
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
    Ok((next, None))
}

/// CAN-1, CAN-2: a cancel ends the run at once, unless an effect may have committed: then it
/// is recorded in the suspension and takes effect once the effect is settled.
fn cancel(run: &Run, at: Time, by: Name) -> Stepped {
    let mut next = *run;
    let cancelled = Phase::Failed(FailCause::Cancelled { by });
    let command = match &run.phase {
        // CAN-1: the effect in flight may already have committed: reconcile it first.
        Phase::Running { in_flight: Some(f) } => {
            next.phase = held_by_operator(run, at, unknown(*f, Some(by)))?;
            Some(Effect::Query(dispatch_of(run, f)))
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
    Ok((next, command))
}

/// The run completes or fails on its own account: only when running with nothing in flight.
fn finish(run: &Run, phase: Phase) -> Stepped {
    idle(run)?;
    let mut next = *run;
    next.phase = phase;
    Ok((next, None))
}

// -------------------------------------------------------------------------------------------
// Resume (spec 5).
// -------------------------------------------------------------------------------------------

/// RES-1: a resume is a new, fully re-validated transition. Identity, schema, digest and
/// revision were checked with the guards of every input; the rows that follow are checked
/// here, in order, then the decision's own handler runs.
fn resume(run: &Run, at: Time, r: &Resume) -> Stepped {
    // RES-4: the run must be suspended, exactly as the checkpoint says.
    let Phase::Suspended(s) = &run.phase else {
        return Err(Rejection::NotSuspended {
            phase: run.phase.kind(),
        });
    };
    if let Some(field) = Checkpoint::unsealed(run).and_then(|cp| mismatch(&cp, &r.checkpoint)) {
        return Err(Rejection::CheckpointMismatch { field });
    }
    // RES-5: no decision after the suspension's expiry.
    if at > s.expires_at {
        return Err(Rejection::Expired {
            expires_at: s.expires_at,
            now: at,
        });
    }
    let resumed = answer(run, at, s, r)?;
    let mut next = *run;
    if let Some((f, result)) = resumed.settles {
        record(&mut next, &f, result);
    }
    next.phase = resumed.phase;
    // RES-3: the resource version the driver observed is the run's from now on.
    next.resource_version = r.facts.resource_version;
    // RES-2: the receipt that tells a late or duplicate resumer how it fared.
    next.last_resume = Some(ResumeReceipt {
        from: run.revision,
        to: run.revision.next().ok_or(Rejection::RevisionExhausted)?,
        checkpoint: r.checkpoint.digest,
        decision: r.decision,
    });
    Ok((next, resumed.command))
}

/// What an accepted decision leads to.
struct Resumed {
    phase: Phase,
    /// A call whose committed result the decision records (REC-4).
    settles: Option<(InFlight, Digest)>,
    command: Option<Effect>,
}

impl From<Phase> for Resumed {
    fn from(phase: Phase) -> Resumed {
        Resumed {
            phase,
            settles: None,
            command: None,
        }
    }
}

/// RES-6: the decision must answer the suspension's reason; each pairing has its handler.
fn answer(run: &Run, at: Time, s: &Suspension, r: &Resume) -> Result<Resumed, Rejection> {
    let cp = &r.checkpoint;
    match (&s.reason, &r.decision) {
        (Reason::PendingApproval { call, requester }, Decision::Approve(a)) => {
            check_approval(a, call, requester, cp.revision, at, &s.responsible)?;
            approve(run, call, cp, &r.facts)
        }
        // APR-4: a denial, under the same checks, fails the run; the call never runs.
        (Reason::PendingApproval { call, requester }, Decision::Deny(a)) => {
            check_approval(a, call, requester, cp.revision, at, &s.responsible)?;
            Ok(Phase::Failed(FailCause::Denied {
                call_id: call.call.call_id,
            })
            .into())
        }
        (Reason::ExternalCallback { callback }, Decision::Callback { callback: got, .. })
        | (
            Reason::ResourceWait { resource: callback },
            Decision::ResourceReady { resource: got },
        ) => awaited(callback, got, &r.facts),
        (
            Reason::ManualIntervention {
                unresolved,
                cancelled_by,
            },
            Decision::Intervene { by, resolution },
        ) => intervene(s, *unresolved, *cancelled_by, *by, resolution, r),
        (
            Reason::OutcomeUnknown {
                in_flight,
                cancelled_by,
            },
            Decision::Reconcile(answer),
        ) => reconcile(run, at, in_flight, *cancelled_by, answer, r),
        (reason, decision) => Err(Rejection::DecisionMismatch {
            reason: reason.kind(),
            decision: decision.kind(),
        }),
    }
}

/// APR-1, WAL-1: the approved call is dispatched once, under its original key, after the
/// re-checks of the present (RES-3, RES-7).
fn approve(
    run: &Run,
    call: &BoundCall,
    cp: &Checkpoint,
    facts: &Facts,
) -> Result<Resumed, Rejection> {
    recheck(cp, facts)?;
    let in_flight = InFlight {
        call: *call,
        attempt: 0,
        dispatches: 1,
    };
    Ok(Resumed {
        phase: Phase::Running {
            in_flight: Some(in_flight),
        },
        settles: None,
        command: Some(Effect::Dispatch(dispatch_of(run, &in_flight))),
    })
}

/// RES-6, RES-7: the awaited callback or resource, by name; the run continues its own steps
/// after the re-checks of permission and budget. The resource version it reports is recorded,
/// not compared: a resource that moved is what a wait for it is about.
fn awaited(expected: &Name, got: &Name, facts: &Facts) -> Result<Resumed, Rejection> {
    if got != expected {
        return Err(Rejection::WaitMismatch {
            expected: *expected,
            got: *got,
        });
    }
    recheck_policy(facts)?;
    Ok(Phase::Running { in_flight: None }.into())
}

/// RES-6, REC-4, CAN-2: the operator settles a manual intervention. "Committed" records the
/// unsettled effect's result; "continue" drops it, after the re-checks of the present; either
/// ends the run cancelled if a cancel waits. "Abandon" gives the run up.
fn intervene(
    s: &Suspension,
    unresolved: Option<InFlight>,
    cancelled_by: Option<Name>,
    by: Name,
    resolution: &Resolution,
    r: &Resume,
) -> Result<Resumed, Rejection> {
    if by != s.responsible {
        return Err(Rejection::Unauthorised {
            expected: s.responsible,
            got: by,
        });
    }
    match (resolution, cancelled_by) {
        (Resolution::Abandon, _) => Ok(Phase::Failed(FailCause::Abandoned { by }).into()),
        (Resolution::Committed { result }, _) => {
            let f = unresolved.ok_or(Rejection::NothingUnresolved)?;
            Ok(Resumed {
                phase: settled(cancelled_by),
                settles: Some((f, *result)),
                command: None,
            })
        }
        (Resolution::Continue, Some(_)) => Ok(settled(cancelled_by).into()),
        (Resolution::Continue, None) => {
            recheck(&r.checkpoint, &r.facts)?;
            Ok(Phase::Running { in_flight: None }.into())
        }
    }
}

/// REC-2, REC-3, REC-4, CAN-2: the status query's answer for an unknown outcome. An answer
/// is a fact about the past: it is never refused for the present's sake.
fn reconcile(
    run: &Run,
    at: Time,
    f: &InFlight,
    cancelled_by: Option<Name>,
    answer: &QueryAnswer,
    r: &Resume,
) -> Result<Resumed, Rejection> {
    let contract = f.call.call.contract;
    let to_person = || held_by_operator(run, at, person(*f, cancelled_by)).map(Resumed::from);
    match (answer, cancelled_by) {
        // REC-4: the result is recorded and reused, never executed again.
        (QueryAnswer::Committed { result }, _) => Ok(Resumed {
            phase: settled(cancelled_by),
            settles: Some((*f, *result)),
            command: None,
        }),
        // REC-2: nobody can tell: a person decides; never retried blindly.
        (QueryAnswer::Unknown, _) => to_person(),
        // A fencing query settles the attempt: it can never commit now, so a waiting cancel
        // takes effect. One that does not fence leaves the late original free to commit.
        (QueryAnswer::NotCommitted, Some(_)) if contract.query_fences => {
            Ok(settled(cancelled_by).into())
        }
        (QueryAnswer::NotCommitted, Some(_)) => to_person(),
        (QueryAnswer::NotCommitted, None) => match retry(run, f, r) {
            Some(resumed) => Ok(resumed),
            None => to_person(),
        },
    }
}

/// REC-3: the retry the tool's contract makes safe after "not committed": a fencing query
/// allows a fresh attempt key, a deduping tool the same key; never more than `max_attempts`
/// dispatches. `None` when no retry is safe, or the re-checks of the present fail: then a
/// person decides.
fn retry(run: &Run, f: &InFlight, r: &Resume) -> Option<Resumed> {
    let contract = f.call.call.contract;
    let attempt = if contract.query_fences {
        // The old attempt is fenced and can never commit: only a fresh one can.
        f.attempt.checked_add(1)?
    } else if contract.dedupes {
        // The late original may still arrive: only the same key lets dedupe absorb it.
        f.attempt
    } else {
        // Neither: the late original and a retry could both commit.
        return None;
    };
    if f.dispatches >= contract.max_attempts {
        return None;
    }
    recheck(&r.checkpoint, &r.facts).ok()?;
    let again = InFlight {
        call: f.call,
        attempt,
        dispatches: f.dispatches.checked_add(1)?,
    };
    Some(Resumed {
        phase: Phase::Running {
            in_flight: Some(again),
        },
        settles: None,
        command: Some(Effect::Dispatch(dispatch_of(run, &again))),
    })
}

// -------------------------------------------------------------------------------------------
// Checks shared by several handlers.
// -------------------------------------------------------------------------------------------

fn terminal(run: &Run) -> Rejection {
    Rejection::Terminal {
        phase: run.phase.kind(),
    }
}

/// WAL-2: dispatch, complete and fail need a running run with nothing in flight.
fn idle(run: &Run) -> Result<(), Rejection> {
    match &run.phase {
        Phase::Running { in_flight: None } => Ok(()),
        Phase::Running { in_flight: Some(f) } => Err(Rejection::DispatchInFlight {
            call_id: f.call.call.call_id,
        }),
        Phase::Suspended(_) => Err(Rejection::NotRunning {
            phase: run.phase.kind(),
        }),
        Phase::Completed { .. } | Phase::Failed(_) => Err(terminal(run)),
    }
}

fn check_identity(run: &Identity, offered: &Identity) -> Result<(), Rejection> {
    let field = if offered.tenant != run.tenant {
        IdentityField::Tenant
    } else if offered.session != run.session {
        IdentityField::Session
    } else if offered.run != run.run {
        IdentityField::Run
    } else if offered.definition != run.definition {
        IdentityField::Definition
    } else {
        return Ok(());
    };
    Err(Rejection::IdentityMismatch { field })
}

/// CKP-3, CKP-2, then RES-3 and RES-2: the checkpoint is of the schema this kernel resumes,
/// intact, and of the run's current revision (or the evidence of who won it).
fn check_checkpoint(run: &Run, r: &Resume) -> Result<(), Rejection> {
    let cp = &r.checkpoint;
    let got = cp.schema_version;
    if got > SCHEMA_VERSION {
        return Err(Rejection::SchemaTooNew {
            supported: SCHEMA_VERSION,
            got,
        });
    }
    if got == 0 {
        return Err(Rejection::UnknownSchema { got });
    }
    if got < SCHEMA_VERSION {
        return Err(Rejection::MigrationRequired {
            got,
            current: SCHEMA_VERSION,
        });
    }
    cp.verify()
        .map_err(|(expected, found)| Rejection::DigestMismatch { expected, found })?;
    check_revision(run, cp.revision, &cp.digest, &r.decision)
}

/// RES-3, RES-2: the checkpoint's revision must be the run's. An older one is the checkpoint
/// the last resume was taken from (its caller is told whether its decision won) or stale.
fn check_revision(
    run: &Run,
    got: Revision,
    checkpoint: &Digest,
    decision: &Decision,
) -> Result<(), Rejection> {
    let current = run.revision;
    if got > current {
        return Err(Rejection::FutureRevision { current, got });
    }
    if got < current {
        return Err(match &run.last_resume {
            Some(rc) if rc.from == got && rc.checkpoint == *checkpoint => {
                if rc.decision == *decision {
                    Rejection::AlreadyApplied {
                        from: rc.from,
                        to: rc.to,
                    }
                } else {
                    Rejection::AlreadyResumed {
                        from: rc.from,
                        to: rc.to,
                    }
                }
            }
            _ => Rejection::StaleRevision { current, got },
        });
    }
    Ok(())
}

/// RES-4: the first field in which a checkpoint differs from the one the run would write.
fn mismatch(expected: &Checkpoint, got: &Checkpoint) -> Option<CheckpointField> {
    use CheckpointField::*;
    [
        (
            expected.reason == got.reason && expected.next_intent == got.next_intent,
            Reason,
        ),
        (expected.pending == got.pending, PendingCall),
        (expected.key_digest == got.key_digest, KeyDigest),
        (expected.requester == got.requester, Requester),
        (expected.waiting_on == got.waiting_on, WaitingOn),
        (
            expected.cancel_requested_by == got.cancel_requested_by,
            CancelRequestedBy,
        ),
        (expected.expires_at == got.expires_at, ExpiresAt),
        (expected.responsible == got.responsible, Responsible),
        (expected.created_at == got.created_at, CreatedAt),
        (
            expected.resource_version == got.resource_version,
            ResourceVersion,
        ),
    ]
    .into_iter()
    .find(|(same, _)| !same)
    .map(|(_, field)| field)
}

/// APR-1 to APR-3: an approval binds to the call, its arguments, its requester and the
/// checkpoint revision; it expires; only the recorded approver, never the requester, decides.
fn check_approval(
    a: &Approval,
    call: &BoundCall,
    requester: &Name,
    revision: Revision,
    at: Time,
    responsible: &Name,
) -> Result<(), Rejection> {
    let field = if a.revision != revision {
        Some(ApprovalField::Revision)
    } else if a.call_id != call.call.call_id {
        Some(ApprovalField::CallId)
    } else if a.args != call.call.args {
        Some(ApprovalField::Args)
    } else if a.requester != *requester {
        Some(ApprovalField::Requester)
    } else {
        None
    };
    if let Some(field) = field {
        return Err(Rejection::ApprovalMismatch { field });
    }
    if at > a.expires_at {
        return Err(Rejection::ApprovalExpired {
            expires_at: a.expires_at,
            now: at,
        });
    }
    if a.approver == *requester {
        return Err(Rejection::SelfApproval { party: a.approver });
    }
    if a.approver != *responsible {
        return Err(Rejection::Unauthorised {
            expected: *responsible,
            got: a.approver,
        });
    }
    Ok(())
}

/// RES-3, RES-7: new work that acts on the resource the checkpoint was decided on (an
/// approved dispatch, a person's go-ahead, a retry) re-checks that the resource has not moved
/// since, then current permission and budget.
fn recheck(cp: &Checkpoint, facts: &Facts) -> Result<(), Rejection> {
    if facts.resource_version != cp.resource_version {
        return Err(Rejection::ResourceChanged {
            checkpoint: cp.resource_version,
            current: facts.resource_version,
        });
    }
    recheck_policy(facts)
}

/// RES-7: current policy, supplied by the driver as facts, re-checked for new work.
fn recheck_policy(facts: &Facts) -> Result<(), Rejection> {
    if !facts.permitted {
        return Err(Rejection::PermissionRevoked);
    }
    if !facts.within_budget {
        return Err(Rejection::BudgetExhausted);
    }
    Ok(())
}

/// KEY-1, KEY-2, REC-4: accepts a new call into the run's call log, binding its key to its
/// arguments.
fn bind(run: &Run, call: &Call) -> Result<(CallLog, BoundCall), Rejection> {
    if call.contract.max_attempts == 0 {
        return Err(Rejection::NoAttemptsAllowed);
    }
    let calls = run.calls.admit(call)?;
    let bound = BoundCall {
        call: *call,
        key_digest: key_digest(&call.key, &call.args),
    };
    Ok((calls, bound))
}

/// REC-4: records a call's committed result, to be reused, and spends its key.
fn record(next: &mut Run, f: &InFlight, result: Digest) {
    let call = &f.call.call;
    next.last_call = Some(CallOutcome {
        call_id: call.call_id,
        key: call.key,
        args: call.args,
        result,
    });
    next.calls.settle(&call.call_id);
}

/// KEY-3: the command for a call and attempt, under the key the tool must see.
fn dispatch_of(run: &Run, f: &InFlight) -> Dispatch {
    let call = &f.call.call;
    Dispatch {
        call_id: call.call_id,
        tool: call.tool,
        args: call.args,
        key: call.key,
        tool_key: tool_key(&run.identity, &call.key),
        attempt: f.attempt,
    }
}

fn unknown(in_flight: InFlight, cancelled_by: Option<Name>) -> Reason {
    Reason::OutcomeUnknown {
        in_flight,
        cancelled_by,
    }
}

fn person(unresolved: InFlight, cancelled_by: Option<Name>) -> Reason {
    Reason::ManualIntervention {
        unresolved: Some(unresolved),
        cancelled_by,
    }
}

/// CAN-2: once an unsettled effect is settled, a waiting cancel ends the run; otherwise it
/// runs on.
fn settled(cancelled_by: Option<Name>) -> Phase {
    match cancelled_by {
        Some(by) => Phase::Failed(FailCause::Cancelled { by }),
        None => Phase::Running { in_flight: None },
    }
}

/// SUS-1, EXP-1: a suspension the kernel opens (reconciliation, escalation), owned by the
/// run's operator for the reconcile window, with an expiry that can be passed. At the end of
/// time no such expiry exists, and none is opened.
fn held_by_operator(run: &Run, at: Time, reason: Reason) -> Result<Phase, Rejection> {
    if at == Time::END {
        return Err(Rejection::ClockExhausted { at });
    }
    Ok(Phase::Suspended(Suspension {
        reason,
        since: at,
        expires_at: at.expiry_after(run.policy.reconcile_window),
        responsible: run.policy.operator,
    }))
}
