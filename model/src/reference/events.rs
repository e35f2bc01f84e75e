//! Every input but resume (spec 4.2 to 4.8): the guards of the event and phase, then where the
//! run goes.

use super::guards::{
    guard_clock, guard_digest, guard_expiry, guard_not_terminal, guard_revision_counter,
    guard_running_idle, guard_schema, guard_some_decision, in_flight_rejection, terminal,
};
use super::moves::{bind, escalate, held_by_operator, Move, StepResult};
use super::{RecordedCall, RefRun, Reference, Rules, Status};
use resumable_kernel::{
    Call, Command, Digest, Event, EventKind, FailCause, InFlight, Input, Name, Prior, Reason,
    Rejection, Resume, Suspension, Time, VerdictKind, Wait,
};

impl Reference {
    /// One step: the guards of the input's kind in the specification's order, then the
    /// transition and its effects, by the machine's rules (the specification's, or the
    /// specification's with one broken). Never panics.
    pub fn step(&self, run: &RefRun, input: &Input) -> StepResult {
        self.rules().step(run, input)
    }
}

impl Rules {
    fn step(&self, run: &RefRun, input: &Input) -> StepResult {
        if let Some(stepped) = (self.input_to_finished_run)(self, run, input) {
            return stepped;
        }
        self.guard_every_input(run, input)?;
        let at = input.at;
        match &input.event {
            Event::Resume(resume) => self.resume(run, at, resume),
            Event::Suspend {
                wait,
                expires_at,
                responsible,
                resource_version,
            } => self.suspend(run, at, wait, *expires_at, *responsible, *resource_version),
            Event::Dispatch {
                call,
                prior,
                resource_version,
            } => self.dispatch(run, at, call, prior, *resource_version),
            Event::ToolResult {
                call_id,
                attempt,
                result,
            } => self.tool_result(run, at, *call_id, *attempt, *result),
            Event::Recover => self.recover(run, at),
            Event::Expire => self.expire(run, at),
            Event::Cancel { by } => self.cancel(run, at, *by),
            Event::Complete { result } => self.finish(
                run,
                at,
                EventKind::Complete,
                Status::Completed { result: *result },
            ),
            Event::Fail { code } => self.finish(
                run,
                at,
                EventKind::Fail,
                Status::Failed(FailCause::Error { code: *code }),
            ),
        }
    }

    /// Spec 4.1, the guards every input meets first, in this order: for a resume only, rows
    /// 1 to 5 of section 5 with the identity ([`Rules::first_rows`]); then terminal phase,
    /// clock, revision counter.
    fn guard_every_input(&self, run: &RefRun, input: &Input) -> Result<(), Rejection> {
        if let Event::Resume(resume) = &input.event {
            // Spec 5 rows 1 to 5 come before the terminal check (REJ-1): a resumer whose reply
            // was lost learns whether it won even after the run has ended.
            (self.first_rows)(self, run, resume)?;
        }
        guard_not_terminal(run)?;
        guard_clock(run, input.at)?;
        guard_revision_counter(run)
    }

    /// Suspend: only a running run with nothing in flight may suspend (SUS-2), with an
    /// expiry after now that can be passed (SUS-1, EXP-1).
    fn suspend(
        &self,
        run: &RefRun,
        at: Time,
        wait: &Wait,
        expires_at: Time,
        responsible: Name,
        resource_version: u64,
    ) -> StepResult {
        match run.status {
            // BAT-4: the batch's calls in flight together keep the run busy.
            Status::Running => {
                if let Some(f) = run.batch_in_flight() {
                    return Err(in_flight_rejection(&f));
                }
            }
            Status::AwaitingResult(f) => return Err(in_flight_rejection(&f)),
            Status::Suspended(s) => (self.suspend_while_suspended)(&s)?,
            // Terminal phases were refused above.
            Status::Completed { .. } | Status::Failed(_) => return Err(terminal(run)),
        }
        guard_expiry(expires_at, at)?;
        let mut binds = None;
        let reason = match *wait {
            Wait::Approval {
                call,
                requester,
                prior,
            } => {
                (self.approver_named)(requester, responsible)?;
                (self.admit)(run, &call, &prior)?;
                // POL-1: a single approval is answered by an approval or a denial.
                guard_some_decision(run, &call, &[VerdictKind::Approve, VerdictKind::Deny])?;
                binds = Some(call);
                Reason::PendingApproval {
                    call: bind(&call),
                    requester,
                }
            }
            Wait::Callback { callback } => Reason::ExternalCallback { callback },
            Wait::Intervention => Reason::ManualIntervention {
                unresolved: None,
                cancelled_by: None,
            },
            Wait::Resource { resource } => Reason::ResourceWait { resource },
            // BAT-1: one suspension for the calls of a batch.
            Wait::Batch { calls } => {
                let mv =
                    self.suspend_batch(run, at, &calls, expires_at, responsible, resource_version)?;
                return self.finish_step(run, at, EventKind::Suspend, None, mv);
            }
        };
        let mut mv = Move::to(Status::Suspended(Suspension {
            reason,
            since: at,
            expires_at,
            responsible,
        }))
        // The suspend records the resource version it saw (RES-3).
        .observing(resource_version);
        if let Some(call) = binds {
            mv = mv.binding(call);
        }
        self.finish_step(run, at, EventKind::Suspend, None, mv)
    }

    /// Dispatch an ungated call: write-ahead, the intent and the command together (WAL-1).
    /// The resource version the agent observed, if stated, is the run's from now on (RES-3).
    fn dispatch(
        &self,
        run: &RefRun,
        at: Time,
        call: &Call,
        prior: &Prior,
        resource_version: Option<u64>,
    ) -> StepResult {
        guard_running_idle(run)?;
        (self.admit)(run, call, prior)?;
        let in_flight = InFlight {
            call: bind(call),
            attempt: 0,
            dispatches: 1,
        };
        let mut mv = Move::to(Status::AwaitingResult(in_flight))
            .binding(*call)
            .then(Command::Dispatch(self.command(run, &in_flight.call, 0)));
        if let Some(version) = resource_version {
            mv = mv.observing(version);
        }
        self.finish_step(run, at, EventKind::Dispatch, None, mv)
    }

    /// The tool answered: the result and the next revision land together (WAL-2); with the
    /// batch's calls in flight together, the answer of any one of them (BAT-4).
    fn tool_result(
        &self,
        run: &RefRun,
        at: Time,
        call_id: Name,
        attempt: u8,
        result: Digest,
    ) -> StepResult {
        let mv = if run.batch_in_flight().is_some() {
            self.batch_result(run, call_id, attempt, result)?
        } else {
            tool_result(run, call_id, attempt, result)?
        };
        self.finish_step(run, at, EventKind::ToolResult, None, mv)
    }

    /// A worker restarted: a dispatch in flight has an unknown outcome ([`Rules::recover`]).
    fn recover(&self, run: &RefRun, at: Time) -> StepResult {
        if run.batch_in_flight().is_some() {
            // BAT-4: every call of the batch in flight becomes unknown, reconciled in turn.
            let mv = self.batch_unknown(run, at, None)?;
            return self.finish_step(run, at, EventKind::Recover, None, mv);
        }
        let Status::AwaitingResult(f) = run.status else {
            return Err(Rejection::NothingInFlight {
                phase: run.phase().kind(),
            });
        };
        let mv = (self.recover)(self, run, at, f)?;
        self.finish_step(run, at, EventKind::Recover, None, mv)
    }

    /// The clock passed a suspension's expiry: it ends, except that an unknown outcome is
    /// first handed to a person, with any cancel that waits on it (EXP-1, CAN-2).
    fn expire(&self, run: &RefRun, at: Time) -> StepResult {
        let Status::Suspended(s) = run.status else {
            return Err(Rejection::NotSuspended {
                phase: run.phase().kind(),
            });
        };
        if !(self.expiry_passed)(s.expires_at, at) {
            return Err(Rejection::NotExpired {
                expires_at: s.expires_at,
                now: at,
            });
        }
        let mv = match s.reason {
            // At the end of time no person could be given a passable expiry: the run ends as
            // the intervention would have, the effect unresolved.
            Reason::OutcomeUnknown { in_flight, .. } if at == Time::END => {
                Move::to(Status::Failed(FailCause::Expired {
                    unresolved: Some(in_flight),
                }))
            }
            Reason::OutcomeUnknown {
                in_flight,
                cancelled_by,
            } => (self.unknown_expired)(self, run, &s, in_flight, cancelled_by, at)?,
            Reason::ManualIntervention { unresolved, .. } => {
                Move::to(Status::Failed(FailCause::Expired { unresolved }))
            }
            Reason::PendingApproval { .. }
            | Reason::PendingBatch
            | Reason::ExternalCallback { .. }
            | Reason::ResourceWait { .. } => {
                Move::to(Status::Failed(FailCause::Expired { unresolved: None }))
            }
        };
        self.finish_step(run, at, EventKind::Expire, None, mv)
    }

    /// Cancel: ends the run, unless an effect may have committed: then the cancel is
    /// recorded and waits for the effect to be settled (CAN-1, CAN-2).
    fn cancel(&self, run: &RefRun, at: Time, by: Name) -> StepResult {
        let cancelled = Move::to(Status::Failed(FailCause::Cancelled { by }));
        let mv = match run.status {
            // BAT-4, CAN-1: any of the batch's calls in flight may have committed.
            Status::Running if run.batch_in_flight().is_some() => {
                self.batch_unknown(run, at, Some(by))?
            }
            Status::Running => cancelled,
            Status::AwaitingResult(f) => {
                let reason = Reason::OutcomeUnknown {
                    in_flight: f,
                    cancelled_by: Some(by),
                };
                Move::to(held_by_operator(run, at, reason)?)
                    .then(Command::Query(self.command(run, &f.call, f.attempt)))
            }
            Status::Suspended(s) => self.cancel_suspended(s, by)?.unwrap_or(cancelled),
            Status::Completed { .. } | Status::Failed(_) => return Err(terminal(run)),
        };
        self.finish_step(run, at, EventKind::Cancel, None, mv)
    }

    /// CAN-2: a cancel of a suspension with an unsettled effect is recorded in it (the same
    /// wait, carrying the cancel, as far as a person's suspension keeps it), or refused if
    /// one already waits; `None`: the run ends.
    fn cancel_suspended(&self, s: Suspension, by: Name) -> Result<Option<Move>, Rejection> {
        let carrying = |reason| Some(Move::to(Status::Suspended(Suspension { reason, ..s })));
        Ok(match s.reason {
            Reason::OutcomeUnknown {
                cancelled_by: Some(_),
                ..
            }
            | Reason::ManualIntervention {
                cancelled_by: Some(_),
                ..
            } => return Err(Rejection::CancelPending),
            Reason::OutcomeUnknown { in_flight, .. } => carrying(Reason::OutcomeUnknown {
                in_flight,
                cancelled_by: Some(by),
            }),
            Reason::ManualIntervention {
                unresolved: Some(f),
                ..
            } => match (self.person_keeps_cancel)(Some(by)) {
                Some(by) => carrying(Reason::ManualIntervention {
                    unresolved: Some(f),
                    cancelled_by: Some(by),
                }),
                // A suspension that keeps no cancel can record none.
                None => return Err(Rejection::CancelPending),
            },
            Reason::ManualIntervention {
                unresolved: None, ..
            }
            | Reason::PendingApproval { .. }
            | Reason::PendingBatch
            | Reason::ExternalCallback { .. }
            | Reason::ResourceWait { .. } => None,
        })
    }

    /// Complete or fail on the run's own account: only from running with nothing in flight.
    fn finish(&self, run: &RefRun, at: Time, event: EventKind, status: Status) -> StepResult {
        guard_running_idle(run)?;
        self.finish_step(run, at, event, None, Move::to(status))
    }
}

/// INV-1: an input to a finished run meets the guards like any other, and the terminal
/// guard refuses it (after a resume's rows 1 to 5: REJ-1); nothing is done before them.
pub(super) fn nothing_before_the_guards(_: &Rules, _: &RefRun, _: &Input) -> Option<StepResult> {
    None
}

/// Spec 4.1 with 5 rows 1 to 5: identity first (ID-1), so a stranger learns nothing else;
/// then rows 1 to 5.
pub(super) fn identity_first(
    rules: &Rules,
    run: &RefRun,
    resume: &Resume,
) -> Result<(), Rejection> {
    (rules.identity)(&run.identity, &resume.checkpoint.identity)?;
    rows_1_to_5(rules, run, resume)
}

/// Spec 5 rows 1 to 5: the schema (rows 1 and 2, CKP-3), the digest (row 3, CKP-2) and the
/// revision (rows 4 and 5, RES-3 and RES-2).
pub(crate) fn rows_1_to_5(rules: &Rules, run: &RefRun, resume: &Resume) -> Result<(), Rejection> {
    let cp = &resume.checkpoint;
    guard_schema(cp)?;
    guard_digest(cp)?;
    (rules.revision)(run, cp, &resume.decision)
}

/// SUS-2: a suspended run refuses another suspension; the one pending stays.
pub(super) fn refuse_second_suspension(s: &Suspension) -> Result<(), Rejection> {
    Err(Rejection::AlreadySuspended {
        reason: s.reason.kind(),
    })
}

/// REC-1: the call's outcome is unknown, to be reconciled by query before anything else,
/// held by the operator.
pub(super) fn reconcile_first(
    rules: &Rules,
    run: &RefRun,
    at: Time,
    f: InFlight,
) -> Result<Move, Rejection> {
    let reason = Reason::OutcomeUnknown {
        in_flight: f,
        cancelled_by: None,
    };
    Ok(Move::to(held_by_operator(run, at, reason)?)
        .then(Command::Query(rules.command(run, &f.call, f.attempt))))
}

/// REC-2, CAN-2, SUS-1: an unknown outcome whose reconciliation expired goes to a person,
/// with the cancel that waits on it as the person's suspension keeps it
/// ([`Rules::person_keeps_cancel`]), expiring as [`Rules::escalation_expiry`] says.
pub(crate) fn to_a_person(
    rules: &Rules,
    run: &RefRun,
    expired: &Suspension,
    in_flight: InFlight,
    cancelled_by: Option<Name>,
    at: Time,
) -> Result<Move, Rejection> {
    let carried = (rules.person_keeps_cancel)(cancelled_by);
    let mut mv = escalate(run, in_flight, carried, at)?;
    if let Status::Suspended(person) = &mut mv.status {
        person.expires_at = (rules.escalation_expiry)(person.expires_at, expired.expires_at);
    }
    Ok(mv)
}

/// The tool answered: the result and the next revision land together (WAL-2).
fn tool_result(
    run: &RefRun,
    call_id: Name,
    attempt: u8,
    result: Digest,
) -> Result<Move, Rejection> {
    let Status::AwaitingResult(f) = run.status else {
        return Err(Rejection::NoDispatchInFlight {
            phase: run.phase().kind(),
        });
    };
    if f.call.call.call_id != call_id || f.attempt != attempt {
        return Err(Rejection::ResultMismatch {
            call_id: f.call.call.call_id,
            attempt: f.attempt,
            got_call: call_id,
            got_attempt: attempt,
        });
    }
    Ok(Move::to(Status::Running).recording(Some(RecordedCall {
        call: f.call,
        attempt: f.attempt,
        result,
    })))
}
