//! Partial-order reduction: the actions the checker may take alone in a state, because every
//! other interleaving of them reaches the same states, or states that no property tells
//! apart from them. The argument is in `spec/check-output.md` ("Partial-order reduction");
//! this file is its code, and the agreement test (`model/tests/reduction.rs`) compares it
//! with the unreduced search on every world small enough for both.
//!
//! Both reductions apply only once no crash is left in the budget: a crash takes a queued
//! dispatch away and makes a run with a call in flight recoverable, so it races with
//! everything below. The budget never grows, so a state without it has no crash ahead.
//!
//! - **A worker's dispatch** (`Action::Dispatch`), by the worker of the highest index or one
//!   with more dispatches queued behind it, is taken alone. It changes only the worker and
//!   the requests in flight. No other action reads either in a way the send changes: the
//!   tool handles requests already sent (its outcome reads only its own durable side), and
//!   the operator's honest "continue" asks whether a request of the key is sent or still to
//!   be sent, which the send keeps true. Which worker is offered new work (the first idle
//!   one) does not change: the highest worker becoming idle leaves an idle worker below it
//!   first, and a worker with more queued stays busy.
//! - **The tool's handling of a quiet run's requests** (`Action::Tool`) is taken alone, every
//!   such request in one set. A run is quiet when it is running (not suspended, not ended),
//!   no worker holds a step of it or a dispatch for it, the world offers it no input, and no
//!   other run's approval can be sent to it (`cross_tenant` off), and its resource is its
//!   own (`shared_resource` off: a commit moves a shared resource under the other run's
//!   steps, which read it as their facts). Then nothing but the tool
//!   can touch it: an input needs a response (which only the tool makes), a decision (which
//!   needs it suspended), a crash (none left) or a cancel (none offered now, so none left);
//!   and the tool's handling reads and writes only the run's own requests, responses,
//!   resource and tool side, which nothing outside the run reads. The tool's ledger is one
//!   for the world, keyed by tool key (`world/tool.rs`), so the run's side is its own only
//!   while no other key of any run went out under one of its tool keys and no commit of a
//!   run left out can be made under one (`World::ledger_alone`); a quiet run without that is
//!   not reduced. A key another run sends later under one of the run's tool keys is not
//!   foreseen: whichever of the two requests the tool handles first, the second is answered
//!   from the first's record (a dedupe, a fence), or a query of it finds the first's commit,
//!   which breaks KEY-3 in either order, so the reduction can change which run's violation
//!   is found first, not whether one is.
//!
//! Neither undoes a property's interesting value once taken: the dispatch adds a request,
//! which keeps "EFF-2 a request is still on its way when its run ends" true and LIVE-2's
//! "sent or to be sent" unchanged; the tool removes a request of a run that has not ended,
//! and what it sets (committed keys, the late-request witness, violations) is only ever set.
//!
//! Each reduced step sends a queued dispatch or removes a request, so it lowers twice the
//! dispatches queued plus the requests in flight: no cycle is made of reduced steps alone.

use super::{Action, Worker, World, WorldState};
use crate::Lifecycle;
use resumable_kernel::PhaseKind;

impl<L: Lifecycle> World<L> {
    /// Narrows `actions` (those enabled in `state`, in the model's order) to a persistent
    /// subset, where the world has one: a dispatch, or the tool's handling of a quiet run's
    /// requests. Otherwise leaves them all.
    pub fn persistent(&self, state: &WorldState<L::Run>, actions: &mut Vec<Action>) {
        if state.budgets.crashes > 0 {
            return;
        }
        let last = state.workers.len().checked_sub(1);
        let alone = actions.iter().position(|action| match action {
            Action::Dispatch { worker, .. } => {
                let w = usize::from(*worker);
                let more_queued = matches!(
                    state.workers.get(w),
                    Some(Worker::Dispatching { queue, .. }) if queue.get(1).is_some_and(Option::is_some)
                );
                Some(w) == last || more_queued
            }
            _ => false,
        });
        if let Some(i) = alone {
            let action = actions.swap_remove(i);
            actions.clear();
            actions.push(action);
            return;
        }
        if self.config.cross_tenant || self.config.shared_resource || state.requests.is_empty() {
            return;
        }
        let mut runs = state.requests.iter().map(|m| m.run).collect::<Vec<u8>>();
        runs.dedup();
        if let Some(r) = runs
            .into_iter()
            .find(|&r| self.quiet(state, usize::from(r)))
        {
            actions.retain(|a| matches!(a, Action::Tool { msg, .. } if msg.run == r));
        }
    }

    /// Whether run `r` is quiet: running, no worker holds a step of it or a dispatch for it,
    /// and the world offers it no input (see the module's documentation).
    fn quiet(&self, state: &WorldState<L::Run>, r: usize) -> bool {
        let Some(slot) = state.runs.get(r) else {
            return false;
        };
        if slot.run.view.phase != PhaseKind::Running || !self.ledger_alone(state, r) {
            return false;
        }
        let busy = state.workers.iter().any(|w| match w {
            Worker::Idle => false,
            Worker::Staged(st) => usize::from(st.run) == r,
            Worker::Dispatching { run, .. } => usize::from(*run) == r,
        });
        if busy {
            return false;
        }
        let mut offered = super::choices::Choices::new();
        self.choices(state, r, &mut offered);
        offered.is_empty()
    }
}
