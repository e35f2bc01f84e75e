//! The world as a learner reads it in the Explorer (`resumable explore`): each run with its
//! phase, what it waits on and who must act, and what the store holds of it; then the clock,
//! the workers, every message in flight and what may still go wrong. The words are the
//! traces' own (`describe`): a state read here reads as the same state in a trace.

use super::cast::BATCH;
use super::describe::{phase_words, worker_words};
use super::{RunSlot, World, WorldState};
use crate::Lifecycle;
use core::fmt::Write;
use resumable_kernel::{Phase, Reason, SlotState, Suspension};

/// What a suspension waits on, and from whom.
fn waits_on(s: &Suspension) -> String {
    let who = s.responsible;
    let what = match &s.reason {
        Reason::PendingApproval { call, requester } => format!(
            "a decision from {who} on {} (requested by {requester}), bound to this revision",
            call.call.call_id
        ),
        Reason::ExternalCallback { callback } => format!("callback {callback} from {who}"),
        Reason::ManualIntervention {
            unresolved: Some(f),
            ..
        } => format!(
            "{who} to settle {} attempt {}, whose outcome nobody knows",
            f.call.call.call_id, f.attempt
        ),
        Reason::ManualIntervention { .. } => format!("an intervention by {who}"),
        Reason::ResourceWait { resource } => format!("resource {resource}, for {who}"),
        Reason::PendingBatch => format!("a decision from {who} on each call of the batch"),
        Reason::OutcomeUnknown { in_flight, .. } => format!(
            "a status answer: did {} attempt {} commit? (reconcile)",
            in_flight.call.call.call_id, in_flight.attempt
        ),
    };
    format!("{what}; until t{}", s.expires_at.0)
}

/// What a run in this phase waits on.
fn phase_waits_on(phase: &Phase) -> String {
    match phase {
        Phase::Running { in_flight: None } => "the agent's next move".into(),
        Phase::Running { in_flight: Some(f) } => format!(
            "the tool's result of {} attempt {}",
            f.call.call.call_id, f.attempt
        ),
        Phase::Suspended(s) => waits_on(s),
        Phase::Completed { .. } | Phase::Failed(_) => "nothing: the run is over".into(),
    }
}

fn slot_words(state: Option<SlotState>) -> &'static str {
    match state {
        None => "not in the batch",
        Some(SlotState::Awaiting) => "awaiting its decision",
        Some(SlotState::Approved) => "approved, not yet dispatched",
        Some(SlotState::InFlight { .. }) => "in flight",
        Some(SlotState::Unknown { .. }) => "outcome unknown",
        Some(SlotState::Held) => "held",
        Some(SlotState::Committed { .. }) => "committed",
        Some(SlotState::Rejected { .. }) => "rejected",
        Some(SlotState::Responded { .. }) => "answered by a person",
        Some(SlotState::Dropped) => "dropped",
        Some(SlotState::Denied) => "denied",
    }
}

impl<L: Lifecycle> World<L> {
    /// The state in the traces' words, a few lines per run and one per message in flight:
    /// what the Explorer shows as the current state.
    pub fn view(&self, state: &WorldState<L::Run>) -> String {
        let mut out = String::new();
        for (r, slot) in state.runs.iter().enumerate() {
            self.run_view(&mut out, r, slot);
        }
        let workers: Vec<String> = state.workers.iter().map(worker_words).collect();
        let _ = writeln!(out, "clock: t{}", state.now);
        let _ = writeln!(out, "workers: {}", workers.join(", "));
        let mut messages = Vec::new();
        for m in &state.requests {
            messages.push(format!("request to the tool: {m}"));
        }
        for m in &state.responses {
            messages.push(format!("response from the tool: {m}"));
        }
        for m in state.decisions.iter().filter(|m| m.delivered == 0) {
            messages.push(format!("decision to run {}: {m}", m.target));
        }
        let _ = writeln!(out, "in flight: {}", messages.len());
        for m in messages {
            let _ = writeln!(out, "  {m}");
        }
        let b = &state.budgets;
        let _ = write!(
            out,
            "still possible: {} crashes, {} lost responses, {} duplicated decisions, {} cancels",
            b.crashes, b.losses, b.duplicates, b.cancels
        );
        out
    }

    fn run_view(&self, out: &mut String, r: usize, slot: &RunSlot<L::Run>) {
        let snap = &slot.run.snapshot;
        let _ = writeln!(
            out,
            "run {r}: {} at r{}",
            phase_words(&snap.phase),
            snap.revision.0
        );
        let _ = writeln!(out, "  waits on: {}", phase_waits_on(&snap.phase));
        if let Phase::Suspended(s) = &snap.phase {
            if let Some(by) = s.reason.cancelled_by() {
                let _ = writeln!(out, "  cancel requested by {by}, waiting for the call");
            }
        }
        let states = self.batch_states(&slot.run.run);
        if states.iter().any(Option::is_some) {
            let calls: Vec<String> = (states.iter().zip(BATCH))
                .map(|(s, c)| format!("c{c} {}", slot_words(*s)))
                .collect();
            let _ = writeln!(out, "  batch: {}", calls.join(", "));
        }
        let _ = writeln!(
            out,
            "  store: r{}, {} audit records, {} checkpoints; resource v{}",
            snap.revision.0,
            slot.audited,
            slot.checkpoints.len(),
            slot.resource
        );
    }
}
