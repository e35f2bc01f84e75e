//! Every input but resume (spec 4.2 to 4.8): the guards of the event and phase, then where the
//! run goes.

use super::guards::{
    guard_clock, guard_digest, guard_expiry, guard_new_call, guard_new_call_against_last,
    guard_not_terminal, guard_requester_is_not_responsible, guard_revision_counter,
    guard_running_idle, guard_schema, guard_some_decision, in_flight_rejection, terminal,
};
use super::moves::{bind, command, escalate, finish_step, held_by_operator, Move, Stepped};
use super::{RecordedCall, RefRun, Reference, Status};
use crate::variant::Variant;
use resumable_kernel::{
    Call, Checkpoint, Command, Digest, Dispatch, Effects, Event, EventKind, FailCause, InFlight,
    Input, Name, Prior, Reason, Rejection, Suspension, Time, VerdictKind, Wait,
};

impl Reference {
    /// One step: the guards of the input's kind in the specification's order, then the
    /// transition and its effects. Never panics.
    pub fn step(&self, run: &RefRun, input: &Input) -> Stepped {
        let (next, effects) = self.step_unchecked(run, input)?;
        if self.breaks(Variant::CancelNotCheckpointed) {
            // The broken way: the checkpoint is built from the wait alone, without the cancel.
            return Ok((next, without_cancel(&effects)));
        }
        if self.breaks(Variant::DispatchUnderBareKey) {
            // The broken way: the tool is sent the key as the agent named it.
            return Ok((next, under_bare_key(&effects)));
        }
        Ok((next, effects))
    }

    fn step_unchecked(&self, run: &RefRun, input: &Input) -> Stepped {
        if self.breaks(Variant::LateResultRecorded) && terminal_result(run, input) {
            // The broken way: a response is written into the finished run's record.
            return late_result(run, input);
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
            Event::Complete { result } => finish(
                run,
                at,
                EventKind::Complete,
                Status::Completed { result: *result },
            ),
            Event::Fail { code } => finish(
                run,
                at,
                EventKind::Fail,
                Status::Failed(FailCause::Error { code: *code }),
            ),
        }
    }

    /// Spec 4.1, the guards every input meets first, in this order: for a resume only,
    /// identity then rows 1 to 5 of section 5; then terminal phase, clock, revision counter.
    fn guard_every_input(&self, run: &RefRun, input: &Input) -> Result<(), Rejection> {
        if let Event::Resume(resume) = &input.event {
            if !self.breaks(Variant::IdentityAfterRevision) {
                self.guard_identity(run, &resume.checkpoint)?;
            }
            // Spec 5 rows 1 to 5 come before the terminal check (REJ-1): a resumer whose reply
            // was lost learns whether it won even after the run has ended.
            let cp = &resume.checkpoint;
            guard_schema(cp)?; // rows 1 and 2, CKP-3
            guard_digest(cp)?; // row 3, CKP-2
            self.guard_revision(run, cp, &resume.decision)?; // rows 4 and 5, RES-3 and RES-2
            if self.breaks(Variant::IdentityAfterRevision) {
                self.guard_identity(run, cp)?;
            }
        }
        guard_not_terminal(run)?;
        guard_clock(run, input.at)?;
        guard_revision_counter(run)
    }

    /// KEY-1, KEY-2, REC-4: the call bound against the run's whole history (or, in the broken
    /// variant, against its last recorded call only).
    pub(super) fn admit(&self, run: &RefRun, call: &Call, prior: &Prior) -> Result<(), Rejection> {
        if self.breaks(Variant::LastCallOnlyKeyCheck) {
            guard_new_call_against_last(run, call)
        } else {
            guard_new_call(call, prior)
        }
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
    ) -> Stepped {
        match run.status {
            // BAT-4: the batch's calls in flight together keep the run busy.
            Status::Running => {
                if let Some(f) = run.batch_in_flight() {
                    return Err(in_flight_rejection(&f));
                }
            }
            Status::AwaitingResult(f) => return Err(in_flight_rejection(&f)),
            Status::Suspended(s) => {
                if !self.breaks(Variant::DoubleSuspend) {
                    return Err(Rejection::AlreadySuspended {
                        reason: s.reason.kind(),
                    });
                }
            }
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
                if !self.breaks(Variant::SelfNamedApprover) {
                    guard_requester_is_not_responsible(requester, responsible)?;
                }
                self.admit(run, &call, &prior)?;
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
                return finish_step(run, at, EventKind::Suspend, None, mv);
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
        finish_step(run, at, EventKind::Suspend, None, mv)
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
    ) -> Stepped {
        guard_running_idle(run)?;
        self.admit(run, call, prior)?;
        let in_flight = InFlight {
            call: bind(call),
            attempt: 0,
            dispatches: 1,
        };
        let mut mv = Move::to(Status::AwaitingResult(in_flight))
            .binding(*call)
            .then(Command::Dispatch(command(run, &in_flight.call, 0)));
        if let Some(version) = resource_version {
            mv = mv.observing(version);
        }
        finish_step(run, at, EventKind::Dispatch, None, mv)
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
    ) -> Stepped {
        if run.batch_in_flight().is_some() {
            let mv = self.batch_result(run, call_id, attempt, result)?;
            return finish_step(run, at, EventKind::ToolResult, None, mv);
        }
        tool_result(run, at, call_id, attempt, result)
    }

    /// A worker restarted: a dispatch in flight has an unknown outcome, to be reconciled by
    /// query before anything else (REC-1).
    fn recover(&self, run: &RefRun, at: Time) -> Stepped {
        if run.batch_in_flight().is_some() {
            // BAT-4: every call of the batch in flight becomes unknown, reconciled in turn.
            let mv = self.batch_unknown(run, at, None)?;
            return finish_step(run, at, EventKind::Recover, None, mv);
        }
        let Status::AwaitingResult(f) = run.status else {
            return Err(Rejection::NothingInFlight {
                phase: run.phase().kind(),
            });
        };
        let mv = if self.breaks(Variant::RetryUnknownWithoutReconcile) {
            // The broken way: "no answer" is taken for "not done" and the call goes out again.
            let again = InFlight {
                dispatches: f.dispatches.saturating_add(1),
                ..f
            };
            Move::to(Status::AwaitingResult(again))
                .then(Command::Dispatch(command(run, &f.call, f.attempt)))
        } else {
            let reason = Reason::OutcomeUnknown {
                in_flight: f,
                cancelled_by: None,
            };
            Move::to(held_by_operator(run, at, reason)?)
                .then(Command::Query(command(run, &f.call, f.attempt)))
        };
        finish_step(run, at, EventKind::Recover, None, mv)
    }

    /// The clock passed a suspension's expiry: it ends, except that an unknown outcome is
    /// first handed to a person, with any cancel that waits on it (EXP-1, CAN-2).
    fn expire(&self, run: &RefRun, at: Time) -> Stepped {
        let Status::Suspended(s) = run.status else {
            return Err(Rejection::NotSuspended {
                phase: run.phase().kind(),
            });
        };
        if self.breaks(Variant::NoExpiry) || at <= s.expires_at {
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
                cancelled_by: Some(_),
                ..
            } if self.breaks(Variant::CancelExpiryForgetsEffect) => {
                // The broken way: cancelled and out of time is taken for nothing left to do.
                Move::to(Status::Failed(FailCause::Expired { unresolved: None }))
            }
            Reason::OutcomeUnknown {
                in_flight,
                cancelled_by,
            } => {
                let carried = if self.breaks(Variant::CancelLostOnEscalation) {
                    None
                } else {
                    cancelled_by
                };
                let mut mv = escalate(run, in_flight, carried, at)?;
                if let (true, Status::Suspended(person)) = (
                    self.breaks(Variant::EscalationKeepsDeadline),
                    &mut mv.status,
                ) {
                    // The broken way: the reason changes in place, the passed deadline stays.
                    person.expires_at = s.expires_at;
                }
                mv
            }
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
        finish_step(run, at, EventKind::Expire, None, mv)
    }

    /// Cancel: ends the run, unless an effect may have committed: then the cancel is
    /// recorded and waits for the effect to be settled (CAN-1, CAN-2).
    fn cancel(&self, run: &RefRun, at: Time, by: Name) -> Stepped {
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
                    .then(Command::Query(command(run, &f.call, f.attempt)))
            }
            Status::Suspended(s) => self.cancel_suspended(s, by)?.unwrap_or(cancelled),
            Status::Completed { .. } | Status::Failed(_) => return Err(terminal(run)),
        };
        finish_step(run, at, EventKind::Cancel, None, mv)
    }

    /// CAN-2: a cancel of a suspension with an unsettled effect is recorded in it (the same
    /// wait, carrying the cancel), or refused if one already waits; `None`: the run ends.
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
                unresolved: Some(_),
                ..
            } if self.breaks(Variant::CancelLostOnEscalation) => {
                // The broken way: a person's intervention refuses the cancel outright.
                return Err(Rejection::CancelPending);
            }
            Reason::ManualIntervention {
                unresolved: Some(f),
                ..
            } => carrying(Reason::ManualIntervention {
                unresolved: Some(f),
                cancelled_by: Some(by),
            }),
            Reason::ManualIntervention {
                unresolved: None, ..
            }
            | Reason::PendingApproval { .. }
            | Reason::PendingBatch
            | Reason::ExternalCallback { .. }
            | Reason::ResourceWait { .. } => None,
        })
    }
}

/// The effects with the checkpoint's cancel left out, resealed (the cancel-not-checkpointed
/// variant).
fn without_cancel(effects: &Effects) -> Effects {
    let Some(audit) = effects.audit() else {
        return *effects;
    };
    let checkpoint = (effects.checkpoint()).map(|cp| {
        Checkpoint {
            cancel_requested_by: None,
            ..*cp
        }
        .seal()
    });
    Effects::of_batch(
        *audit,
        effects.histories().copied(),
        checkpoint,
        effects.commands().copied(),
    )
}

/// The effects with every dispatch and query sent under its bare key: the key's own bytes,
/// the same for every run that uses it (the variant `dispatch-under-bare-key`).
fn under_bare_key(effects: &Effects) -> Effects {
    let Some(audit) = effects.audit() else {
        return *effects;
    };
    let bare = |d: &Dispatch| Dispatch {
        tool_key: Digest::of(d.key.as_bytes()),
        ..*d
    };
    let commands = effects.commands().map(|c| match c {
        Command::Dispatch(d) => Command::Dispatch(bare(d)),
        Command::Query(d) => Command::Query(bare(d)),
    });
    Effects::of_batch(
        *audit,
        effects.histories().copied(),
        effects.checkpoint().copied(),
        commands,
    )
}

/// Whether the input is a tool response to a finished run whose recorded call it names.
fn terminal_result(run: &RefRun, input: &Input) -> bool {
    let Event::ToolResult { call_id, .. } = input.event else {
        return false;
    };
    let finished = matches!(run.status, Status::Completed { .. } | Status::Failed(_));
    finished
        && run
            .last_call
            .is_some_and(|c| c.call.call.call_id == call_id)
}

/// The late-result-recorded variant: the response is recorded on the finished run, which
/// stays as it was but for the record and the revision.
fn late_result(run: &RefRun, input: &Input) -> Stepped {
    let Event::ToolResult {
        attempt, result, ..
    } = input.event
    else {
        return Err(terminal(run));
    };
    let recorded = run.last_call.map(|c| RecordedCall {
        attempt,
        result,
        ..c
    });
    let mv = Move::to(run.status).recording(recorded);
    finish_step(run, input.at, EventKind::ToolResult, None, mv)
}

/// The tool answered: the result and the next revision land together (WAL-2).
fn tool_result(run: &RefRun, at: Time, call_id: Name, attempt: u8, result: Digest) -> Stepped {
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
    let mv = Move::to(Status::Running).recording(Some(RecordedCall {
        call: f.call,
        attempt: f.attempt,
        result,
    }));
    finish_step(run, at, EventKind::ToolResult, None, mv)
}

/// Complete or fail on the run's own account: only from running with nothing in flight.
fn finish(run: &RefRun, at: Time, event: EventKind, status: Status) -> Stepped {
    guard_running_idle(run)?;
    finish_step(run, at, event, None, Move::to(status))
}
