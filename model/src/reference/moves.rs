//! The transition and its effects (spec 4 and 6): what every accepted input does alike once
//! its handler has decided where the run goes.

use super::{RecordedCall, RefRun, Rules, Status};
use resumable_kernel::checkpoint::key_digest;
use resumable_kernel::{
    AuditRecord, Batch, BoundCall, Call, Command, DecisionKind, Dispatch, Effects, EventKind,
    HistoryEntry, InFlight, List, Phase, Reason, Rejection, Suspension, Time, BATCH_CAPACITY,
};

/// The part of a transition a handler decides: the new status, the calls bound and results
/// recorded, and the commands for the driver. Revision, clock, audit record and checkpoint are
/// added uniformly by [`Rules::finish_step`].
pub(crate) struct Move {
    pub(crate) status: Status,
    /// What the store adds to the run's history in the same commit, in order: a call newly
    /// bound (KEY-1, KEY-2), a key spent by a recorded result (REC-4). A batch's transition
    /// may carry one per call (spec 5.5).
    pub(super) history: List<HistoryEntry, BATCH_CAPACITY>,
    /// A committed result to record (REC-4).
    pub(super) record: Option<RecordedCall>,
    /// The resource version to record (a suspend's, or a resume's facts: RES-3).
    pub(super) resource_version: Option<u64>,
    /// The commands, in order: at most one, but for a batch's dispatches (spec 5.5).
    pub(super) commands: List<Command, BATCH_CAPACITY>,
    /// The run's batch after the move, if the move changes it.
    pub(super) batch: Option<Batch>,
}

impl Move {
    pub(crate) fn to(status: Status) -> Move {
        Move {
            status,
            history: List::new(),
            record: None,
            resource_version: None,
            commands: List::new(),
            batch: None,
        }
    }
    pub(super) fn binding(mut self, call: Call) -> Move {
        let _ = self.history.push(HistoryEntry::bound(&call));
        self
    }
    /// The move recording a result: the result becomes the run's last call and its key is
    /// spent.
    pub(crate) fn recording(mut self, record: Option<RecordedCall>) -> Move {
        if let Some(done) = record {
            let _ = self
                .history
                .push(HistoryEntry::settled(&done.call.call.key));
        }
        self.record = record;
        self
    }
    pub(super) fn observing(mut self, resource_version: u64) -> Move {
        self.resource_version = Some(resource_version);
        self
    }
    /// The move with a command for the driver, after any it already carries.
    pub(crate) fn then(mut self, command: Command) -> Move {
        let _ = self.commands.push(command);
        self
    }
    /// The move with the run's batch as it stands after it.
    pub(super) fn with_batch(mut self, batch: Batch) -> Move {
        self.batch = Some(batch);
        self
    }
}

/// What a step of the machine comes to: the next run and its effects, or the rejection.
pub(crate) type StepResult = Result<(RefRun, Effects), Rejection>;

/// KEY-1: a call's key bound to its argument digest.
pub(super) fn bind(call: &Call) -> BoundCall {
    BoundCall {
        call: *call,
        key_digest: key_digest(&call.key, &call.args),
    }
}

/// SUS-1, EXP-1: a suspension the kernel itself opens is held by the run's operator for the
/// reconcile window, with an expiry before the end of time; at the end of time none opens.
pub(crate) fn held_by_operator(
    run: &RefRun,
    at: Time,
    reason: Reason,
) -> Result<Status, Rejection> {
    if at == Time::END {
        return Err(Rejection::ClockExhausted { at });
    }
    let end = at.0.saturating_add(run.policy.reconcile_window);
    Ok(Status::Suspended(Suspension {
        reason,
        since: at,
        expires_at: Time(end.min(Time::LATEST_EXPIRY.0)),
        responsible: run.policy.operator,
    }))
}

/// REC-2, EXP-1: an effect nobody can settle goes to the operator, with any waiting cancel.
pub(crate) fn escalate(
    run: &RefRun,
    f: InFlight,
    cancelled_by: Option<resumable_kernel::Name>,
    at: Time,
) -> Result<Move, Rejection> {
    let reason = Reason::ManualIntervention {
        unresolved: Some(f),
        cancelled_by,
    };
    Ok(Move::to(held_by_operator(run, at, reason)?))
}

/// REV-1 and CLK-1: the next run, one revision on, its clock at the input's time, with the
/// result, resource version and batch the move carries; and what the store adds to the run's
/// history in the same commit, with the commands.
fn transition(run: &RefRun, at: Time, mv: Move) -> Result<(RefRun, Move), Rejection> {
    let revision = run.revision.next().ok_or(Rejection::RevisionExhausted)?;
    let next = RefRun {
        revision,
        clock: at,
        status: mv.status,
        last_call: mv.record.or(run.last_call),
        resource_version: mv.resource_version.unwrap_or(run.resource_version),
        batch: mv.batch.or(run.batch),
        ..*run
    };
    Ok((next, mv))
}

impl Rules {
    /// WAL-1, KEY-3: the command to dispatch (or query) a call under this attempt, with the
    /// key the tool must see ([`Rules::tool_key`]).
    pub(crate) fn command(&self, run: &RefRun, call: &BoundCall, attempt: u8) -> Dispatch {
        Dispatch {
            call_id: call.call.call_id,
            tool: call.call.tool,
            args: call.call.args,
            key: call.call.key,
            tool_key: (self.tool_key)(&run.identity, &call.call.key),
            attempt,
        }
    }

    /// The transition of a move, with its effects. A call of a batch that the run's phase
    /// held is let go of first, and the next one waiting to be reconciled taken up (BAT-4).
    pub(crate) fn finish_step(
        &self,
        run: &RefRun,
        at: Time,
        event: EventKind,
        decision: Option<DecisionKind>,
        mv: Move,
    ) -> StepResult {
        let mv = self.let_go(run, at, mv)?;
        let (next, mv) = transition(run, at, mv)?;
        let effects = self.effects_of(
            &next,
            at,
            event,
            decision,
            mv.history.iter().copied(),
            mv.commands.iter().copied(),
        );
        Ok((next, effects))
    }

    /// AUD-1, CKP-1, WAL-1: the audit record first, describing the new state; the history
    /// entries; a sealed checkpoint of the new state when it is suspended, as
    /// [`Rules::persisted`] keeps it; then the commands.
    fn effects_of(
        &self,
        next: &RefRun,
        at: Time,
        event: EventKind,
        decision: Option<DecisionKind>,
        history: impl IntoIterator<Item = HistoryEntry>,
        commands: impl IntoIterator<Item = Command>,
    ) -> Effects {
        let phase = next.phase();
        let reason = match phase {
            Phase::Suspended(s) => Some(s.reason.kind()),
            _ => None,
        };
        let audit = AuditRecord {
            revision: next.revision,
            at,
            event,
            decision,
            phase: phase.kind(),
            reason,
        };
        let checkpoint = next.checkpoint().map(|cp| (self.persisted)(cp).seal());
        Effects::of_batch(audit, history, checkpoint, commands)
    }
}
