//! The reference lifecycle machine: the lifecycle written a second time, from the
//! specification, for clarity rather than speed.
//!
//! It shares the kernel's data vocabulary (inputs, rejections, effects, checkpoints and their
//! digest) but none of its logic: it never calls the kernel's step. Conformance runs the two
//! side by side and compares, at every reachable state, which inputs each accepts and which
//! rejection each gives.
//!
//! # How a step reads
//!
//! Every input goes through the same three stages, in this order:
//!
//! 1. **Guards**: named functions, each citing the spec ID it enforces, called in the order
//!    the specification checks them. The first that fails gives the rejection, with its
//!    evidence; a rejected input changes nothing (REJ-2), which holds by construction since
//!    the step only borrows the run.
//! 2. **Transition**: the next run, at the next revision (REV-1), with its clock moved to the
//!    input's time (CLK-1).
//! 3. **Effects**: one new audit record first (AUD-1); a sealed checkpoint whenever the new
//!    state is suspended (CKP-1); then the dispatch or query the driver must issue (WAL-1).
//!
//! A [`Reference`] may carry a [`Variant`]: one rule deliberately broken, so that the model's
//! properties can be shown to catch it. Every place a variant changes behaviour is marked
//! with `self.breaks(Variant::...)`.

use crate::variant::Variant;
use crate::{Lifecycle, Snapshot};
use resumable_kernel::checkpoint::key_digest;
use resumable_kernel::{
    Approval, AuditRecord, BoundCall, Call, CallOutcome, Checkpoint, CheckpointField, Decision,
    DecisionKind, Digest, Dispatch, Effect, Effects, Event, EventKind, Facts, FailCause, Identity,
    IdentityField, InFlight, Input, Intent, Name, PendingCall, Phase, PhaseKind, Policy,
    QueryAnswer, Reason, Rejection, Resolution, Resume, ResumeReceipt, Revision, Suspension, Time,
    Wait, SCHEMA_VERSION,
};

/// The reference machine, or one of its broken variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Reference {
    /// The rule deliberately broken, if any; `None` is the reference itself.
    pub variant: Option<Variant>,
}

/// Where a run is in its lifecycle, in the specification's words. Data that exists in one
/// status only lives in that status.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Status {
    /// Running, with nothing dispatched.
    Running,
    /// Running, with the intent to dispatch a call recorded and the dispatch commanded: the
    /// run waits for the tool's answer (WAL-2).
    AwaitingResult(InFlight),
    /// Suspended: waiting, resumable, with a reason, an expiry and a responsible party.
    Suspended(Suspension),
    /// Completed (terminal).
    Completed {
        /// The digest of the run's final result.
        result: Digest,
    },
    /// Failed (terminal).
    Failed(FailCause),
}

/// A call whose result the run recorded: reused, never executed again (REC-4).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RecordedCall {
    /// The call, with its key bound to its arguments.
    pub call: BoundCall,
    /// The attempt that committed.
    pub attempt: u8,
    /// The digest of the committed result.
    pub result: Digest,
}

/// The reference machine's run, in plain fields.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RefRun {
    /// Who the run belongs to and what it runs (ID-1).
    pub identity: Identity,
    /// Settings fixed at creation.
    pub policy: Policy,
    /// The state revision: 0 at creation, plus one per accepted input (REV-1).
    pub revision: Revision,
    /// The resource version recorded by the last suspend.
    pub resource_version: u64,
    /// The time of the last accepted input (CLK-1).
    pub clock: Time,
    /// Where the run is.
    pub status: Status,
    /// The last call result recorded.
    pub last_call: Option<RecordedCall>,
    /// The decision that won the last resume (RES-2).
    pub last_resume: Option<ResumeReceipt>,
}

impl RefRun {
    /// A new run, running at revision 0, created at `at`.
    pub fn new(identity: Identity, policy: Policy, at: Time) -> RefRun {
        RefRun {
            identity,
            policy,
            revision: Revision(0),
            resource_version: 0,
            clock: at,
            status: Status::Running,
            last_call: None,
            last_resume: None,
        }
    }

    /// The run's status as the kernel's phase vocabulary names it.
    pub fn phase(&self) -> Phase {
        match self.status {
            Status::Running => Phase::Running { in_flight: None },
            Status::AwaitingResult(f) => Phase::Running { in_flight: Some(f) },
            Status::Suspended(s) => Phase::Suspended(s),
            Status::Completed { result } => Phase::Completed { result },
            Status::Failed(cause) => Phase::Failed(cause),
        }
    }

    /// The run as the properties see it.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            revision: self.revision,
            updated_at: self.clock,
            phase: self.phase(),
            last_call: self.last_call.map(|r| CallOutcome {
                call_id: r.call.call.call_id,
                key: r.call.call.key,
                args: r.call.call.args,
                result: r.result,
            }),
        }
    }

    /// The checkpoint describing the run's suspension, unsealed (zero digest), or `None`
    /// when the run is not suspended. What a resume is compared with (RES-4), and, sealed,
    /// what a suspension persists (CKP-1).
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        let Status::Suspended(s) = self.status else {
            return None;
        };
        // Where a resume re-enters: an approved call is dispatched, an unknown outcome is
        // reconciled by query first, anything else continues the run's own steps.
        let (next_intent, requester, waiting_on, call) = match s.reason {
            Reason::PendingApproval { call, requester } => {
                (Intent::Dispatch, Some(requester), None, Some((call, 0)))
            }
            Reason::OutcomeUnknown { in_flight, .. } => (
                Intent::Reconcile,
                None,
                None,
                Some((in_flight.call, in_flight.attempt)),
            ),
            Reason::ManualIntervention { unresolved } => (
                Intent::Continue,
                None,
                None,
                unresolved.map(|f| (f.call, f.attempt)),
            ),
            Reason::ExternalCallback { callback } => (Intent::Continue, None, Some(callback), None),
            Reason::ResourceWait { resource } => (Intent::Continue, None, Some(resource), None),
        };
        Some(Checkpoint {
            schema_version: SCHEMA_VERSION,
            identity: self.identity,
            revision: self.revision,
            resource_version: self.resource_version,
            reason: s.reason.kind(),
            next_intent,
            pending: call.map(|(c, attempt)| PendingCall {
                call_id: c.call.call_id,
                tool: c.call.tool,
                args: c.call.args,
                attempt,
            }),
            key_digest: call.map(|(c, _)| c.key_digest),
            requester,
            waiting_on,
            expires_at: s.expires_at,
            responsible: s.responsible,
            created_at: s.since,
            digest: Digest::default(),
        })
    }
}

/// The part of a transition a handler decides: the new status, a call result to record, and
/// the commands for the driver. Revision, clock, audit and checkpoint are added uniformly.
struct Move {
    status: Status,
    record: Option<RecordedCall>,
    commands: [Option<Effect>; 2],
    /// Whether a resume making this move starts new work, and so re-checks current
    /// permission and budget first (RES-7).
    new_work: bool,
}

impl Move {
    fn to(status: Status) -> Move {
        Move {
            status,
            record: None,
            commands: [None, None],
            new_work: false,
        }
    }
    fn new_work(mut self) -> Move {
        self.new_work = true;
        self
    }
    fn recording(mut self, record: Option<RecordedCall>) -> Move {
        self.record = record;
        self
    }
    fn then(mut self, command: Effect) -> Move {
        if let Some(slot) = self.commands.iter_mut().find(|c| c.is_none()) {
            *slot = Some(command);
        }
        self
    }
}

type Stepped = Result<(RefRun, Effects), Rejection>;

impl Reference {
    /// The reference machine itself.
    pub const fn new() -> Reference {
        Reference { variant: None }
    }

    /// The reference with one rule broken.
    pub const fn broken(variant: Variant) -> Reference {
        Reference {
            variant: Some(variant),
        }
    }

    fn breaks(&self, variant: Variant) -> bool {
        self.variant == Some(variant)
    }

    /// One step: the guards of the input's kind in the specification's order, then the
    /// transition and its effects. Never panics.
    pub fn step(&self, run: &RefRun, input: &Input) -> Stepped {
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
            Event::Dispatch { call } => self.dispatch(run, at, call),
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

    // ---------------------------------------------------------------------------------------
    // Inputs other than resume (spec 4.2 to 4.8): the guards of the event and phase.
    // ---------------------------------------------------------------------------------------

    /// Suspend: only a running run with nothing in flight may suspend.
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
            Status::Running => {}
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
        guard_expiry_in_future(expires_at, at)?;
        let reason = match *wait {
            Wait::Approval { call, requester } => {
                guard_requester_is_not_responsible(requester, responsible)?;
                guard_new_call(run, &call)?;
                Reason::PendingApproval {
                    call: bind(&call),
                    requester,
                }
            }
            Wait::Callback { callback } => Reason::ExternalCallback { callback },
            Wait::Intervention => Reason::ManualIntervention { unresolved: None },
            Wait::Resource { resource } => Reason::ResourceWait { resource },
        };
        let mv = Move::to(Status::Suspended(Suspension {
            reason,
            since: at,
            expires_at,
            responsible,
        }));
        // The suspend records the resource version it saw; a resume must find it unchanged.
        let seen = RefRun {
            resource_version,
            ..*run
        };
        finish_step(&seen, at, EventKind::Suspend, None, mv)
    }

    /// Dispatch an ungated call: write-ahead, the intent and the command together (WAL-1).
    fn dispatch(&self, run: &RefRun, at: Time, call: &Call) -> Stepped {
        guard_running_idle(run)?;
        guard_new_call(run, call)?;
        let in_flight = InFlight {
            call: bind(call),
            attempt: 0,
            dispatches: 1,
        };
        let mv = Move::to(Status::AwaitingResult(in_flight))
            .then(Effect::Dispatch(command(&in_flight.call, 0)));
        finish_step(run, at, EventKind::Dispatch, None, mv)
    }

    /// The tool answered: the result and the next revision land together (WAL-2).
    fn tool_result(
        &self,
        run: &RefRun,
        at: Time,
        call_id: Name,
        attempt: u8,
        result: Digest,
    ) -> Stepped {
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

    /// A worker restarted: a dispatch in flight has an unknown outcome, to be reconciled by
    /// query before anything else (REC-1).
    fn recover(&self, run: &RefRun, at: Time) -> Stepped {
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
                .then(Effect::Dispatch(command(&f.call, f.attempt)))
        } else {
            Move::to(Status::Suspended(Suspension {
                reason: Reason::OutcomeUnknown {
                    in_flight: f,
                    cancelled_by: None,
                },
                since: at,
                expires_at: at.after(run.policy.reconcile_window),
                responsible: run.policy.operator,
            }))
            .then(Effect::Query(command(&f.call, f.attempt)))
        };
        finish_step(run, at, EventKind::Recover, None, mv)
    }

    /// The clock passed a suspension's expiry: it ends, except that an unknown outcome is
    /// first handed to a person (EXP-1).
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
            Reason::OutcomeUnknown { in_flight, .. } => escalate(run, in_flight, at),
            Reason::ManualIntervention { unresolved } => {
                Move::to(Status::Failed(FailCause::Expired { unresolved }))
            }
            Reason::PendingApproval { .. }
            | Reason::ExternalCallback { .. }
            | Reason::ResourceWait { .. } => {
                Move::to(Status::Failed(FailCause::Expired { unresolved: None }))
            }
        };
        finish_step(run, at, EventKind::Expire, None, mv)
    }

    /// Cancel: ends the run, unless an effect's outcome is unknown, which must be reconciled
    /// first; a cancel with a dispatch in flight waits for that reconciliation (CAN-1).
    fn cancel(&self, run: &RefRun, at: Time, by: Name) -> Stepped {
        let cancelled = Move::to(Status::Failed(FailCause::Cancelled { by }));
        let mv = match run.status {
            Status::Running => cancelled,
            Status::AwaitingResult(f) => Move::to(Status::Suspended(Suspension {
                reason: Reason::OutcomeUnknown {
                    in_flight: f,
                    cancelled_by: Some(by),
                },
                since: at,
                expires_at: at.after(run.policy.reconcile_window),
                responsible: run.policy.operator,
            }))
            .then(Effect::Query(command(&f.call, f.attempt))),
            Status::Suspended(s) => match s.reason {
                Reason::OutcomeUnknown {
                    cancelled_by: Some(_),
                    ..
                } => return Err(Rejection::CancelPending),
                Reason::OutcomeUnknown {
                    in_flight,
                    cancelled_by: None,
                } => {
                    // The same wait, now with the cancel recorded: it takes effect on reconcile.
                    Move::to(Status::Suspended(Suspension {
                        reason: Reason::OutcomeUnknown {
                            in_flight,
                            cancelled_by: Some(by),
                        },
                        ..s
                    }))
                }
                Reason::ManualIntervention {
                    unresolved: Some(_),
                } => return Err(Rejection::ReconcileFirst),
                Reason::ManualIntervention { unresolved: None }
                | Reason::PendingApproval { .. }
                | Reason::ExternalCallback { .. }
                | Reason::ResourceWait { .. } => cancelled,
            },
            Status::Completed { .. } | Status::Failed(_) => return Err(terminal(run)),
        };
        finish_step(run, at, EventKind::Cancel, None, mv)
    }

    /// Complete or fail on the run's own account: only from running with nothing in flight.
    fn finish(&self, run: &RefRun, at: Time, event: EventKind, status: Status) -> Stepped {
        guard_running_idle(run)?;
        finish_step(run, at, event, None, Move::to(status))
    }

    // ---------------------------------------------------------------------------------------
    // Resume (spec 5, RES-1): after the guards of every input (identity, terminal phase,
    // clock, revision counter), the rows of the spec's table in order.
    // ---------------------------------------------------------------------------------------

    fn resume(&self, run: &RefRun, at: Time, resume: &Resume) -> Stepped {
        let cp = &resume.checkpoint;
        let decision = &resume.decision;
        // Rows 1 to 5 (schema, digest, revision) were checked with the guards of every input.
        guard_resource_version(cp, &resume.facts)?; // row 6, RES-3
        let suspension = guard_suspended(run)?; // row 7
        guard_checkpoint_matches_run(run, cp)?; // row 8, RES-4
        self.guard_decision_in_time(&suspension, at)?; // row 9, RES-5
        self.guard_decision_answers(&suspension, decision, cp, at)?; // rows 10 and 11, RES-6
        let mv = self.decide(run, &suspension, decision, at)?; // row 13, decided before...
        if mv.new_work {
            guard_facts(&resume.facts)?; // ...row 12, RES-7, which depends on it
        }
        let (mut next, commands) = transition(run, at, mv)?;
        next.last_resume = Some(ResumeReceipt {
            from: run.revision,
            to: next.revision,
            decision: *decision,
        });
        Ok(with_effects(
            next,
            at,
            EventKind::Resume,
            Some(decision.kind()),
            commands,
        ))
    }

    /// ID-1: the checkpoint belongs to this tenant, session, run and definition. Checked
    /// first, so a stranger learns nothing else; the field is named, the value never echoed.
    fn guard_identity(&self, run: &RefRun, cp: &Checkpoint) -> Result<(), Rejection> {
        if self.breaks(Variant::NoIdentityCheck) {
            return Ok(());
        }
        let (mine, theirs) = (&run.identity, &cp.identity);
        let field = if theirs.tenant != mine.tenant {
            IdentityField::Tenant
        } else if theirs.session != mine.session {
            IdentityField::Session
        } else if theirs.run != mine.run {
            IdentityField::Run
        } else if theirs.definition != mine.definition {
            IdentityField::Definition
        } else {
            return Ok(());
        };
        Err(Rejection::IdentityMismatch { field })
    }

    /// RES-3 and RES-2: the checkpoint is at the run's revision. One from the future is
    /// refused; an older one is either the checkpoint the last resume was taken from (a
    /// duplicate of the winner, or a conflicting loser) or stale.
    fn guard_revision(
        &self,
        run: &RefRun,
        cp: &Checkpoint,
        decision: &Decision,
    ) -> Result<(), Rejection> {
        if self.breaks(Variant::NoRevisionCheck) {
            return Ok(());
        }
        let (current, got) = (run.revision, cp.revision);
        if got > current {
            return Err(Rejection::FutureRevision { current, got });
        }
        if got < current {
            return Err(match run.last_resume {
                Some(won) if won.from == got && won.decision == *decision => {
                    Rejection::AlreadyApplied {
                        from: won.from,
                        to: won.to,
                    }
                }
                Some(won) if won.from == got => Rejection::AlreadyResumed {
                    from: won.from,
                    to: won.to,
                },
                _ => Rejection::StaleRevision { current, got },
            });
        }
        Ok(())
    }

    /// RES-5: a decision after the suspension's expiry is refused.
    fn guard_decision_in_time(&self, s: &Suspension, at: Time) -> Result<(), Rejection> {
        let awaits_approval = matches!(s.reason, Reason::PendingApproval { .. });
        if awaits_approval && self.breaks(Variant::ApprovalsNeverExpire) {
            return Ok(());
        }
        if at > s.expires_at {
            return Err(Rejection::Expired {
                expires_at: s.expires_at,
                now: at,
            });
        }
        Ok(())
    }

    /// RES-6: the decision answers the suspension's reason, naming what is awaited, from the
    /// party the run recorded. Approvals are bound further by APR-1 to APR-3.
    fn guard_decision_answers(
        &self,
        s: &Suspension,
        decision: &Decision,
        cp: &Checkpoint,
        at: Time,
    ) -> Result<(), Rejection> {
        match (&s.reason, decision) {
            (
                Reason::PendingApproval { call, requester },
                Decision::Approve(approval) | Decision::Deny(approval),
            ) => self.guard_approval(call, *requester, s.responsible, cp.revision, approval, at),
            (Reason::ExternalCallback { callback }, Decision::Callback { callback: got, .. }) => {
                guard_awaited(*callback, *got)
            }
            (Reason::ResourceWait { resource }, Decision::ResourceReady { resource: got }) => {
                guard_awaited(*resource, *got)
            }
            (Reason::ManualIntervention { unresolved }, Decision::Intervene { by, resolution }) => {
                guard_party(s.responsible, *by)?;
                // REC-4: "committed" records the unresolved effect's result; with none, there
                // is nothing to record.
                if matches!(resolution, Resolution::Committed { .. }) && unresolved.is_none() {
                    return Err(Rejection::NothingInFlight {
                        phase: PhaseKind::Suspended,
                    });
                }
                Ok(())
            }
            (Reason::OutcomeUnknown { .. }, Decision::Reconcile(_)) => Ok(()),
            (reason, decision) => Err(Rejection::DecisionMismatch {
                reason: reason.kind(),
                decision: decision.kind(),
            }),
        }
    }

    /// Spec 5.2, for approve and deny alike: the approval binds to the checkpoint revision
    /// and the pending call's id, argument digest and requester (APR-1); it has not expired
    /// (APR-2); the approver is not the requester, and is the party the run recorded (APR-3).
    fn guard_approval(
        &self,
        call: &BoundCall,
        requester: Name,
        responsible: Name,
        revision: Revision,
        approval: &Approval,
        at: Time,
    ) -> Result<(), Rejection> {
        use resumable_kernel::ApprovalField as F;
        let unbound = if approval.revision != revision {
            Some(F::Revision)
        } else if approval.call_id != call.call.call_id {
            Some(F::CallId)
        } else if approval.args != call.call.args && !self.breaks(Variant::ApprovalNotBoundToArgs) {
            Some(F::Args)
        } else if approval.requester != requester {
            Some(F::Requester)
        } else {
            None
        };
        if let Some(field) = unbound {
            return Err(Rejection::ApprovalMismatch { field });
        }
        if at > approval.expires_at && !self.breaks(Variant::ApprovalsNeverExpire) {
            return Err(Rejection::ApprovalExpired {
                expires_at: approval.expires_at,
                now: at,
            });
        }
        if approval.approver == requester {
            // The broken variant takes the requester for an entitled approver of its own
            // call, skipping both this check and the party check below.
            if self.breaks(Variant::SelfApprovalAllowed) {
                return Ok(());
            }
            return Err(Rejection::SelfApproval {
                party: approval.approver,
            });
        }
        guard_party(responsible, approval.approver)
    }

    /// What the decision does, once every guard passed. Reconciliation (REC-2 to REC-4) is
    /// the last stage of a resume.
    fn decide(
        &self,
        run: &RefRun,
        s: &Suspension,
        decision: &Decision,
        at: Time,
    ) -> Result<Move, Rejection> {
        let mv = match (&s.reason, decision) {
            // APR-1, WAL-1: the approved call is dispatched once, under its original key.
            // New work, as are a callback, a ready resource, a person's "continue" and a retry
            // (spec 5.3); every other decision ends the run or only records a result.
            (Reason::PendingApproval { call, .. }, Decision::Approve(_)) => {
                let in_flight = InFlight {
                    call: *call,
                    attempt: 0,
                    dispatches: 1,
                };
                let mut mv = Move::to(Status::AwaitingResult(in_flight)).new_work();
                if self.breaks(Variant::RerunStepOnResume) {
                    // The interrupted step runs again from its start, and with it the side
                    // effect it issued before the pause.
                    if let Some(done) = run.last_call {
                        mv = mv.then(Effect::Dispatch(command(&done.call, done.attempt)));
                    }
                }
                mv.then(Effect::Dispatch(command(call, 0)))
            }
            // APR-4: a denial fails the run; the denied call never runs.
            (Reason::PendingApproval { call, .. }, Decision::Deny(_)) => {
                if self.breaks(Variant::DenyLeavesRunning) {
                    Move::to(Status::Running)
                } else {
                    Move::to(Status::Failed(FailCause::Denied {
                        call_id: call.call.call_id,
                    }))
                }
            }
            (Reason::ExternalCallback { .. }, Decision::Callback { .. })
            | (Reason::ResourceWait { .. }, Decision::ResourceReady { .. }) => {
                Move::to(Status::Running).new_work()
            }
            (Reason::ManualIntervention { unresolved }, Decision::Intervene { by, resolution }) => {
                match resolution {
                    // The person established the effect committed: record it (REC-4). The
                    // decision guard made sure there is an unresolved effect to record.
                    Resolution::Committed { result } => {
                        Move::to(Status::Running).recording(unresolved.map(|f| RecordedCall {
                            call: f.call,
                            attempt: f.attempt,
                            result: *result,
                        }))
                    }
                    // The unresolved effect, if any, is dropped: the person has made sure it
                    // did not and will not commit.
                    Resolution::Continue => Move::to(Status::Running).new_work(),
                    Resolution::Abandon => {
                        Move::to(Status::Failed(FailCause::Abandoned { by: *by }))
                    }
                }
            }
            (
                Reason::OutcomeUnknown {
                    in_flight,
                    cancelled_by,
                },
                Decision::Reconcile(answer),
            ) => self.reconcile(run, *in_flight, *cancelled_by, answer, at),
            // The decision guard refused every other pairing; kept total rather than trusted.
            (reason, decision) => {
                return Err(Rejection::DecisionMismatch {
                    reason: reason.kind(),
                    decision: decision.kind(),
                })
            }
        };
        Ok(mv)
    }

    /// REC-2 to REC-4 and CAN-1: the status query's answer for an unknown outcome.
    fn reconcile(
        &self,
        run: &RefRun,
        f: InFlight,
        cancelled_by: Option<Name>,
        answer: &QueryAnswer,
        at: Time,
    ) -> Move {
        let after = match cancelled_by {
            Some(by) => Status::Failed(FailCause::Cancelled { by }),
            None => Status::Running,
        };
        match (answer, cancelled_by) {
            // REC-4: the committed result is recorded and reused; a pending cancel now ends
            // the run.
            (QueryAnswer::Committed { result }, _) => {
                Move::to(after).recording(Some(RecordedCall {
                    call: f.call,
                    attempt: f.attempt,
                    result: *result,
                }))
            }
            // CAN-1: the effect did not happen; the cancel takes effect.
            (QueryAnswer::NotCommitted, Some(_)) => Move::to(after),
            // REC-3: retry only as the tool's contract allows.
            (QueryAnswer::NotCommitted, None) => self.retry(run, f, at),
            // REC-2: nobody can tell: a person decides; never retried blindly.
            (QueryAnswer::Unknown, _) => escalate(run, f, at),
        }
    }

    /// REC-3: after "not committed", a fencing query allows a retry under a fresh attempt
    /// key; a deduping tool allows one under the same key; with neither, a person decides.
    /// Either way at most `max_attempts` dispatches in all.
    fn retry(&self, run: &RefRun, f: InFlight, at: Time) -> Move {
        let contract = f.call.call.contract;
        if f.dispatches >= contract.max_attempts {
            return escalate(run, f, at);
        }
        let fresh = f.attempt.checked_add(1);
        let attempt = if contract.query_fences {
            // The old key is fenced and can never commit: only a fresh attempt can succeed.
            if self.breaks(Variant::RetrySameKeyOnFence) {
                Some(f.attempt)
            } else {
                fresh
            }
        } else if contract.dedupes {
            // The delayed original may still arrive: only the same key lets dedupe absorb it.
            if self.breaks(Variant::RetryFreshKeyOnDedupe) {
                fresh
            } else {
                Some(f.attempt)
            }
        } else if self.breaks(Variant::RetryWithoutContract) {
            Some(f.attempt)
        } else {
            // Neither fence nor dedupe: any retry may commit twice.
            None
        };
        let (Some(attempt), Some(dispatches)) = (attempt, f.dispatches.checked_add(1)) else {
            return escalate(run, f, at);
        };
        let again = InFlight {
            call: f.call,
            attempt,
            dispatches,
        };
        Move::to(Status::AwaitingResult(again))
            .then(Effect::Dispatch(command(&f.call, attempt)))
            .new_work()
    }
}

// -------------------------------------------------------------------------------------------
// Guards shared by several inputs, each citing the spec ID it enforces.
// -------------------------------------------------------------------------------------------

/// CLK-1: time never runs backwards within a run.
fn guard_clock(run: &RefRun, at: Time) -> Result<(), Rejection> {
    if at < run.clock {
        return Err(Rejection::ClockRegressed {
            last: run.clock,
            got: at,
        });
    }
    Ok(())
}

/// REV-1: a run whose revision counter is exhausted accepts nothing more.
fn guard_revision_counter(run: &RefRun) -> Result<(), Rejection> {
    match run.revision.next() {
        Some(_) => Ok(()),
        None => Err(Rejection::RevisionExhausted),
    }
}

/// INV-1: completed and failed are absorbing.
fn guard_not_terminal(run: &RefRun) -> Result<(), Rejection> {
    match run.status {
        Status::Completed { .. } | Status::Failed(_) => Err(terminal(run)),
        _ => Ok(()),
    }
}

fn terminal(run: &RefRun) -> Rejection {
    Rejection::Terminal {
        phase: run.phase().kind(),
    }
}

/// WAL-2: while a dispatch is in flight the run waits for it.
fn in_flight_rejection(f: &InFlight) -> Rejection {
    Rejection::DispatchInFlight {
        call_id: f.call.call.call_id,
    }
}

/// Dispatch, complete and fail need a running run with nothing in flight (WAL-2).
fn guard_running_idle(run: &RefRun) -> Result<(), Rejection> {
    match run.status {
        Status::Running => Ok(()),
        Status::AwaitingResult(f) => Err(in_flight_rejection(&f)),
        Status::Suspended(_) | Status::Completed { .. } | Status::Failed(_) => {
            Err(Rejection::NotRunning {
                phase: run.phase().kind(),
            })
        }
    }
}

/// SUS-1: a suspension expires after it begins.
fn guard_expiry_in_future(expires_at: Time, at: Time) -> Result<(), Rejection> {
    if expires_at <= at {
        return Err(Rejection::ExpiryNotInFuture {
            expires_at,
            now: at,
        });
    }
    Ok(())
}

/// REC-3, KEY-2, KEY-1: a call allows at least one attempt; its id was not used by the last
/// recorded call (an edited call is a new call); its key is not bound to other arguments.
fn guard_new_call(run: &RefRun, call: &Call) -> Result<(), Rejection> {
    if call.contract.max_attempts == 0 {
        return Err(Rejection::NoAttemptsAllowed);
    }
    if let Some(done) = run.last_call {
        if done.call.call.call_id == call.call_id {
            return Err(Rejection::CallIdReused {
                call_id: call.call_id,
            });
        }
        if done.call.call.key == call.key && done.call.call.args != call.args {
            return Err(Rejection::KeyConflict { key: call.key });
        }
    }
    Ok(())
}

/// APR-3: the party responsible for an approval is never its requester.
fn guard_requester_is_not_responsible(requester: Name, responsible: Name) -> Result<(), Rejection> {
    if requester == responsible {
        return Err(Rejection::SelfApproval { party: requester });
    }
    Ok(())
}

/// CKP-3: the current schema only; an older one must be migrated explicitly first.
fn guard_schema(cp: &Checkpoint) -> Result<(), Rejection> {
    if cp.schema_version > SCHEMA_VERSION {
        return Err(Rejection::SchemaTooNew {
            supported: SCHEMA_VERSION,
            got: cp.schema_version,
        });
    }
    if cp.schema_version < SCHEMA_VERSION {
        return Err(Rejection::MigrationRequired {
            got: cp.schema_version,
            current: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// CKP-2: the digest carried is the digest of the fields.
fn guard_digest(cp: &Checkpoint) -> Result<(), Rejection> {
    cp.verify()
        .map_err(|(expected, found)| Rejection::DigestMismatch { expected, found })
}

/// RES-3: the resource has not changed since the checkpoint.
fn guard_resource_version(cp: &Checkpoint, facts: &Facts) -> Result<(), Rejection> {
    if facts.resource_version != cp.resource_version {
        return Err(Rejection::ResourceChanged {
            checkpoint: cp.resource_version,
            current: facts.resource_version,
        });
    }
    Ok(())
}

/// Spec 5 row 7: only a suspended run can be resumed (terminal phases were refused first).
fn guard_suspended(run: &RefRun) -> Result<Suspension, Rejection> {
    match run.status {
        Status::Suspended(s) => Ok(s),
        _ => Err(Rejection::NotSuspended {
            phase: run.phase().kind(),
        }),
    }
}

/// RES-4: the checkpoint describes the run's suspension field by field; the first field
/// that differs is named.
fn guard_checkpoint_matches_run(run: &RefRun, cp: &Checkpoint) -> Result<(), Rejection> {
    let Some(expected) = run.checkpoint() else {
        return Err(Rejection::NotSuspended {
            phase: run.phase().kind(),
        });
    };
    let field = if cp.reason != expected.reason || cp.next_intent != expected.next_intent {
        CheckpointField::Reason
    } else if cp.pending != expected.pending {
        CheckpointField::PendingCall
    } else if cp.key_digest != expected.key_digest {
        CheckpointField::KeyDigest
    } else if cp.requester != expected.requester {
        CheckpointField::Requester
    } else if cp.waiting_on != expected.waiting_on {
        CheckpointField::WaitingOn
    } else if cp.expires_at != expected.expires_at {
        CheckpointField::ExpiresAt
    } else if cp.responsible != expected.responsible {
        CheckpointField::Responsible
    } else if cp.created_at != expected.created_at {
        CheckpointField::CreatedAt
    } else if cp.resource_version != expected.resource_version {
        CheckpointField::ResourceVersion
    } else {
        return Ok(());
    };
    Err(Rejection::CheckpointMismatch { field })
}

/// RES-6: a callback or resource decision names what the suspension awaits.
fn guard_awaited(expected: Name, got: Name) -> Result<(), Rejection> {
    if expected != got {
        return Err(Rejection::WaitMismatch { expected, got });
    }
    Ok(())
}

/// RES-6, APR-3: only the party the run recorded decides.
fn guard_party(expected: Name, got: Name) -> Result<(), Rejection> {
    if expected != got {
        return Err(Rejection::Unauthorised { expected, got });
    }
    Ok(())
}

/// RES-7: a resume that leads to new work re-checks current permission, then budget.
fn guard_facts(facts: &Facts) -> Result<(), Rejection> {
    if !facts.permitted {
        return Err(Rejection::PermissionRevoked);
    }
    if !facts.within_budget {
        return Err(Rejection::BudgetExhausted);
    }
    Ok(())
}

// -------------------------------------------------------------------------------------------
// Transition and effects.
// -------------------------------------------------------------------------------------------

/// Binds a call's key to its argument digest (KEY-1).
fn bind(call: &Call) -> BoundCall {
    BoundCall {
        call: *call,
        key_digest: key_digest(&call.key, &call.args),
    }
}

/// The command to dispatch (or query) a call under its key and this attempt.
fn command(call: &BoundCall, attempt: u8) -> Dispatch {
    Dispatch {
        call_id: call.call.call_id,
        tool: call.call.tool,
        args: call.call.args,
        key: call.call.key,
        attempt,
    }
}

/// REC-2, EXP-1: an effect nobody can settle goes to the operator, with the reconcile window
/// as its deadline.
fn escalate(run: &RefRun, f: InFlight, at: Time) -> Move {
    Move::to(Status::Suspended(Suspension {
        reason: Reason::ManualIntervention {
            unresolved: Some(f),
        },
        since: at,
        expires_at: at.after(run.policy.reconcile_window),
        responsible: run.policy.operator,
    }))
}

/// REV-1 and CLK-1: the next run, one revision on, its clock at the input's time. The
/// revision counter was checked first (spec 4.1); it is checked again here so the step stays
/// total without trusting that.
fn transition(
    run: &RefRun,
    at: Time,
    mv: Move,
) -> Result<(RefRun, [Option<Effect>; 2]), Rejection> {
    let revision = run.revision.next().ok_or(Rejection::RevisionExhausted)?;
    let next = RefRun {
        revision,
        clock: at,
        status: mv.status,
        last_call: mv.record.or(run.last_call),
        ..*run
    };
    Ok((next, mv.commands))
}

fn finish_step(
    run: &RefRun,
    at: Time,
    event: EventKind,
    decision: Option<DecisionKind>,
    mv: Move,
) -> Stepped {
    let (next, commands) = transition(run, at, mv)?;
    Ok(with_effects(next, at, event, decision, commands))
}

/// AUD-1, CKP-1, WAL-1: the audit record first, describing the new state; a sealed
/// checkpoint at the new revision when the new state is suspended; then the commands.
fn with_effects(
    next: RefRun,
    at: Time,
    event: EventKind,
    decision: Option<DecisionKind>,
    commands: [Option<Effect>; 2],
) -> (RefRun, Effects) {
    let phase = next.phase();
    let reason = match phase {
        Phase::Suspended(s) => Some(s.reason.kind()),
        _ => None,
    };
    let mut effects = Effects::new(Effect::Audit(AuditRecord {
        revision: next.revision,
        at,
        event,
        decision,
        phase: phase.kind(),
        reason,
    }));
    if let Some(cp) = next.checkpoint() {
        effects = effects.with(Effect::PersistCheckpoint(cp.seal()));
    }
    for command in commands.into_iter().flatten() {
        effects = effects.with(command);
    }
    (next, effects)
}

impl Lifecycle for Reference {
    type Run = RefRun;

    fn name(&self) -> &'static str {
        match self.variant {
            Some(v) => v.name(),
            None => "reference",
        }
    }

    fn create(&self, identity: Identity, policy: Policy, at: Time) -> RefRun {
        RefRun::new(identity, policy, at)
    }

    fn step(&self, run: &RefRun, input: &Input) -> Result<(RefRun, Effects), Rejection> {
        Reference::step(self, run, input)
    }

    fn snapshot(&self, run: &RefRun) -> Snapshot {
        run.snapshot()
    }
}
