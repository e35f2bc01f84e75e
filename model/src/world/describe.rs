//! Words for actions and states, so that a trace reads as who did what: "Worker(1) steps run 0
//! with resume approve c1@r1 from alice", then what the lifecycle said and where the world is.

use super::cast::BATCH;
use super::{
    Action, Answer, CallVerdict, Choice, DecisionMsg, Intent, Party, Picks, Settle, ToolMsg,
    ToolOutcome, Verdict, Worker, World, WorldState,
};
use crate::Lifecycle;
use core::fmt;
use resumable_kernel::{Effects, FailCause, Phase, Reason};

fn key(f: &mut fmt::Formatter<'_>, call: u8, attempt: u8) -> fmt::Result {
    match super::KEY_OF.get(usize::from(call)) {
        Some(k) => write!(f, "c{call} key k{k}#{attempt}"),
        None => write!(f, "c{call} attempt {attempt}"),
    }
}

fn tool_msg(f: &mut fmt::Formatter<'_>, m: &ToolMsg) -> fmt::Result {
    key(f, m.call, m.attempt)?;
    write!(f, " for run {}", m.run)
}

fn party(p: Party) -> &'static str {
    match p {
        Party::Approver => "alice",
        Party::Requester => "agent",
    }
}

/// A batch decision's verdicts: "approve c1, reject c2".
fn picks(f: &mut fmt::Formatter<'_>, picks: &Picks) -> fmt::Result {
    let mut first = true;
    for (pick, call) in picks.iter().zip(BATCH) {
        let Some(pick) = pick else {
            continue;
        };
        let verdict = match pick {
            CallVerdict::Approve => "approve",
            CallVerdict::Edit => "edit",
            CallVerdict::Reject => "reject",
            CallVerdict::Respond => "answer",
            CallVerdict::Deny => "deny",
        };
        if !first {
            f.write_str(", ")?;
        }
        first = false;
        write!(f, "{verdict} c{call}")?;
    }
    Ok(())
}

fn decision(f: &mut fmt::Formatter<'_>, m: &DecisionMsg) -> fmt::Result {
    let verdict = match m.verdict {
        Verdict::Approve => "approve",
        Verdict::Deny => "deny",
        Verdict::ApproveEdited => "approve edited",
        Verdict::Batch(p) => {
            f.write_str("batch: ")?;
            picks(f, &p)?;
            write!(f, " @r{} from {}", m.revision, party(m.party))?;
            if m.delivered > 0 {
                f.write_str(" again")?;
            }
            return Ok(());
        }
    };
    write!(f, "{verdict} c1@r{} from {}", m.revision, party(m.party))?;
    if m.source != m.target {
        write!(f, " (run {}'s checkpoint)", m.source)?;
    }
    if m.delivered > 0 {
        f.write_str(" again")?;
    }
    Ok(())
}

impl fmt::Display for ToolMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        tool_msg(f, self)
    }
}

impl fmt::Display for DecisionMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        decision(f, self)
    }
}

/// A worker in a few words: `idle`, `holds run 0 from r1`, `to dispatch c1#0 of run 0`.
pub(super) fn worker_words<R>(w: &Worker<R>) -> String {
    match w {
        Worker::Idle => "idle".to_string(),
        Worker::Staged(st) => format!("holds run {} from r{}", st.run, st.from),
        Worker::Dispatching { run, queue } => {
            let keys: Vec<String> = queue
                .iter()
                .flatten()
                .map(|(c, a)| format!("c{c}#{a}"))
                .collect();
            format!("to dispatch {} of run {run}", keys.join(" then "))
        }
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Agent(Intent::Suspend(c)) => write!(f, "suspend for approval of c{c}"),
            Choice::Agent(Intent::SuspendSelfApproved(c)) => {
                write!(
                    f,
                    "suspend for approval of c{c}, naming itself the approver"
                )
            }
            Choice::Agent(Intent::SuspendBatch) => f.write_str("suspend for a batch of c1 and c2"),
            Choice::Agent(Intent::Dispatch(c)) => write!(f, "dispatch c{c}"),
            Choice::Agent(Intent::Reuse(c)) => {
                f.write_str("propose again: ")?;
                key(f, *c, 0)
            }
            Choice::Agent(Intent::Complete) => f.write_str("complete"),
            Choice::Agent(Intent::Renew) => {
                f.write_str("propose a new call under c1's call id, other arguments")
            }
            Choice::Agent(Intent::OldConfig) => f.write_str(
                "resume the node from an old config (c1 awaiting approval): c1 proposed again, \
                 with the approval given then",
            ),
            Choice::Agent(Intent::Ask) => f.write_str(
                "ask the node's second question: the node runs again, handed the resume values \
                 given so far",
            ),
            Choice::Decision(m) => {
                f.write_str("resume ")?;
                decision(f, m)
            }
            Choice::Result { call, attempt } => {
                f.write_str("result of ")?;
                key(f, *call, *attempt)
            }
            Choice::Recover => f.write_str("recover"),
            Choice::Expire => f.write_str("expire"),
            Choice::Reconcile {
                call,
                attempt,
                answer,
                revision,
                ..
            } => {
                f.write_str("reconcile ")?;
                key(f, *call, *attempt)?;
                write!(f, " from r{revision}")?;
                f.write_str(match answer {
                    Answer::Committed => ": committed",
                    Answer::NotCommitted => ": not committed",
                    Answer::Unknown => ": unknown",
                })
            }
            Choice::Cancel => f.write_str("cancel by owner"),
            Choice::Intervene { call, settle } => {
                f.write_str("intervention by ops: ")?;
                match (settle, call) {
                    (Settle::Committed, Some(c)) => write!(f, "c{c} committed"),
                    (Settle::Committed, None) => f.write_str("committed"),
                    (Settle::Continue, _) => f.write_str("continue"),
                    (Settle::Abandon, _) => f.write_str("abandon"),
                }
            }
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Step {
                worker,
                run,
                choice,
            } => write!(f, "Worker({worker}) steps run {run} with {choice}"),
            Action::Commit {
                worker,
                run,
                from,
                to,
            } => write!(f, "Worker({worker}) commits run {run} r{from}->r{to}"),
            Action::Conflict {
                worker,
                run,
                staged,
                store,
            } => write!(
                f,
                "Worker({worker}) fails to commit run {run}: read r{staged}, store at r{store}"
            ),
            Action::Dispatch { worker, msg } => {
                write!(f, "Worker({worker}) dispatches ")?;
                tool_msg(f, msg)
            }
            Action::Crash { worker } => write!(f, "Worker({worker}) crashes"),
            Action::Tool { msg, outcome } => {
                f.write_str(match outcome {
                    ToolOutcome::Commits => "Tool commits ",
                    ToolOutcome::Dedupes => "Tool dedupes ",
                    ToolOutcome::Refuses => "Tool refuses fenced ",
                })?;
                tool_msg(f, msg)
            }
            Action::Lose { msg } => {
                f.write_str("Tool response lost: ")?;
                tool_msg(f, msg)
            }
            Action::Decide { msg } => decide(f, msg),
            Action::Tick { to } => write!(f, "Clock ticks to {to}"),
            Action::Outsider { run } => write!(f, "Outsider moves run {run}'s resource"),
            Action::Framework { run } => write!(
                f,
                "Framework changes the arguments of run {run}'s pending call in the agent's state"
            ),
            Action::Foreign {
                run,
                key,
                attempt,
                fence,
            } => write!(
                f,
                "The run left out {} under run {run}'s tool key of k{key}, attempt {attempt}",
                if *fence {
                    "fences its query"
                } else {
                    "commits"
                }
            ),
        }
    }
}

/// An approver's (or the requester's) decision, as its action reads.
fn decide(f: &mut fmt::Formatter<'_>, msg: &DecisionMsg) -> fmt::Result {
    if let Verdict::Batch(p) = msg.verdict {
        f.write_str("Approver alice decides on the batch: ")?;
        picks(f, &p)?;
        return write!(f, " at r{} of run {}", msg.revision, msg.source);
    }
    let (who, what) = match (msg.party, msg.verdict) {
        (Party::Requester, _) => ("Requester agent", "approves its own"),
        (Party::Approver, Verdict::Approve) => ("Approver alice", "approves"),
        (Party::Approver, Verdict::Deny) => ("Approver alice", "denies"),
        (Party::Approver, Verdict::ApproveEdited) => ("Approver alice", "approves an edited"),
        (Party::Approver, Verdict::Batch(_)) => ("Approver alice", "decides on"),
    };
    write!(
        f,
        "{who} {what} c1 at r{} of run {}",
        msg.revision, msg.source
    )?;
    if msg.target != msg.source {
        write!(f, ", sent to run {}", msg.target)?;
    }
    Ok(())
}

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A phase in a few words: `suspended (pending_approval)`, `failed (denied)`.
pub fn phase_words(phase: &Phase) -> String {
    match phase {
        Phase::Running { in_flight: None } => "running".into(),
        Phase::Running { in_flight: Some(f) } => format!(
            "running, {} attempt {} in flight",
            f.call.call.call_id, f.attempt
        ),
        Phase::Suspended(s) => {
            let reason = match &s.reason {
                Reason::PendingApproval { .. } => "pending approval",
                Reason::ExternalCallback { .. } => "external callback",
                Reason::ManualIntervention { .. } => "manual intervention",
                Reason::ResourceWait { .. } => "resource wait",
                Reason::OutcomeUnknown { .. } => "outcome unknown",
                Reason::PendingBatch => "pending batch",
            };
            let cancel = match s.reason.cancelled_by() {
                Some(_) => ", cancel waiting",
                None => "",
            };
            format!("suspended ({reason}{cancel}, expires {})", s.expires_at)
        }
        Phase::Completed { .. } => "completed".into(),
        Phase::Failed(FailCause::Expired {
            unresolved: Some(f),
        }) => format!("failed (expired, {} unresolved)", f.call.call.call_id),
        Phase::Failed(cause) => {
            let cause = match cause {
                FailCause::Denied { .. } => "denied",
                FailCause::Expired { .. } => "expired",
                FailCause::Cancelled { .. } => "cancelled",
                FailCause::Error { .. } => "error",
                FailCause::Abandoned { .. } => "abandoned",
            };
            format!("failed ({cause})")
        }
    }
}

/// What a step's effects say that its new phase does not, when they do not describe it: an
/// audit record of another revision or phase (AUD-1), a checkpoint without the cancel the
/// suspension carries (CAN-2). Empty for every step a correct lifecycle takes.
fn effects_words(after: &crate::Snapshot, effects: &Effects) -> String {
    let mut out = String::new();
    if let Some(audit) = effects.audit() {
        if audit.revision != after.revision || audit.phase != after.phase.kind() {
            out.push_str(&format!(
                ", audited as r{} ({})",
                audit.revision.0,
                audit.phase.name()
            ));
        }
    }
    if let Phase::Suspended(s) = &after.phase {
        let shown = effects.checkpoint().map(|cp| cp.cancel_requested_by);
        if s.reason.cancelled_by().is_some() && shown == Some(None) {
            out.push_str(", its checkpoint without the cancel");
        }
    }
    out
}

/// What a worker's commit writes, read off the step it holds: the run with its audit
/// records, and the checkpoint when the step made a new one (a batch's, made again with each
/// decision, is stored once), so that a trace never claims a checkpoint the next state does
/// not show.
fn commit_words<R>(state: &WorldState<R>, worker: u8, run: u8) -> String {
    let Some(Worker::Staged(staged)) = state.workers.get(usize::from(worker)) else {
        return "written".into();
    };
    let audits = match staged.audits {
        0 => "no audit record".to_string(),
        1 => "its audit record".to_string(),
        n => format!("{n} audit records"),
    };
    let stored = (state.runs.get(usize::from(run))).and_then(|slot| slot.checkpoints.last());
    match staged.checkpoint {
        Some(cp) if stored == Some(&cp) => {
            format!("written with {audits}; its checkpoint is the one already stored")
        }
        Some(_) => format!("written with {audits} and its checkpoint"),
        None => format!("written with {audits}"),
    }
}

impl<L: Lifecycle> World<L> {
    /// What happened in a step, in words: for a worker's step, whether the lifecycle accepted
    /// the input (and into which phase) or refused it (and why).
    pub fn explain(&self, state: &WorldState<L::Run>, action: &Action) -> String {
        // An input stamped with another time than the driver's clock says so first (CLK-2).
        let stamped = match self.input_of(state, action) {
            Some(input) if input.at != Self::time(state) => format!(
                "stamped t{}, the driver's clock at t{}: ",
                input.at.0, state.now
            ),
            _ => String::new(),
        };
        if let Action::Step {
            choice: Choice::Agent(intent),
            run,
            ..
        } = action
        {
            if let Some(words) = self.planned_words(state, usize::from(*run), *intent) {
                return words;
            }
        }
        stamped + &self.verdict_words(state, action)
    }

    /// What the driver made of an intent it plans against its record before any step
    /// (spec REC-5, REC-6, RES-8); `None` for any other intent.
    fn planned_words(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
        intent: Intent,
    ) -> Option<String> {
        use crate::driving::Driving;
        let driving = self.config.driving;
        let fed = state.runs.get(r).map_or(0, |slot| slot.fed);
        Some(match intent {
            Intent::Renew if driving == Driving::RecordedCallByIdOnly => {
                "answered from the record by call id: c1's result, never run, never asked".into()
            }
            Intent::Renew => {
                "refused by the driver: another call is recorded under c1, nothing is fed".into()
            }
            Intent::OldConfig if driving == Driving::RunFromOldConfig => {
                "the run the old config holds is resumed with that approval and the resource \
                 version it held: c1 is approved and dispatched again, its result already recorded"
                    .into()
            }
            Intent::OldConfig => "answered from the record: c1's result, the approval it replays \
                 counted against c1; nothing is fed, nothing dispatched"
                .into(),
            Intent::Ask if driving == Driving::RecordedCallSkipsItsInterrupt => format!(
                "c1 is recorded, so the gate skips its interrupt and consumes none of the {fed} \
                 value(s) fed to c1: the question is handed c1's first decision as its answer"
            ),
            Intent::Ask => format!(
                "c1's record consumes the {fed} value(s) the core counted against it: the \
                 question gets its own answer"
            ),
            _ => return None,
        })
    }

    fn verdict_words(&self, state: &WorldState<L::Run>, action: &Action) -> String {
        match self.verdict_of(state, action) {
            Some(Ok((run, effects))) => {
                let snap = self.lifecycle.snapshot(&run);
                format!(
                    "accepted: {} at r{}{}",
                    phase_words(&snap.phase),
                    snap.revision.0,
                    effects_words(&snap, &effects)
                )
            }
            Some(Err(rejection)) => format!("refused: {rejection}"),
            None => match action {
                Action::Step { .. } => "no such input".into(),
                Action::Commit { worker, run, .. } => commit_words(state, *worker, *run),
                Action::Conflict { .. } => "its step is dropped".into(),
                Action::Dispatch { .. } => "sent to the tool".into(),
                Action::Crash { .. } => "volatile state lost".into(),
                Action::Tool { outcome, .. } => match outcome {
                    ToolOutcome::Commits => "committed, response sent".into(),
                    ToolOutcome::Dedupes => "stored response sent again".into(),
                    ToolOutcome::Refuses => "nothing committed, no response".into(),
                },
                Action::Lose { .. } => "gone".into(),
                Action::Decide { .. } => "sent".into(),
                Action::Tick { .. } => "time passes".into(),
                Action::Outsider { .. } => "the resource is at a new version".into(),
                Action::Framework { .. } => "same call id, other arguments".into(),
                Action::Foreign { .. } => "the tool holds another run's record there".into(),
            },
        }
    }

    /// The world in one line per run and one for the rest: each run's phase and revision,
    /// then the workers and what is in flight.
    pub fn summary(&self, state: &WorldState<L::Run>) -> String {
        let mut out = String::new();
        for (r, slot) in state.runs.iter().enumerate() {
            let snap = self.lifecycle.snapshot(&slot.run.run);
            out.push_str(&format!(
                "run {r}: {} at r{}, {} audit records, {} checkpoints, resource v{}\n",
                phase_words(&snap.phase),
                snap.revision.0,
                slot.audited,
                slot.checkpoints.len(),
                slot.resource
            ));
        }
        let workers: Vec<String> = state.workers.iter().map(worker_words).collect();
        out.push_str(&format!(
            "t{}, workers [{}], {} requests, {} responses, {} decisions in flight",
            state.now,
            workers.join(", "),
            state.requests.len(),
            state.responses.len(),
            state.decisions.iter().filter(|m| m.delivered == 0).count()
        ));
        out
    }
}
