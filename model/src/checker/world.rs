//! The world as a subject of the checker driver: how its steps read in traces, and its
//! configuration as the `config` object of a JSON report.

use super::Summarize;
use crate::config::Config;
use crate::world::{Action, World, WorldState};
use crate::Lifecycle;
use serde_json::{json, Value};

impl<L: Lifecycle> Summarize for World<L> {
    /// One line per run (phase, revision, audit records, checkpoints), then the workers and
    /// what is in flight.
    fn summary(&self, state: &WorldState<L::Run>) -> String {
        World::summary(self, state)
    }

    /// Who did what, then what the lifecycle made of it: "worker 1 resumes run 0 ...:
    /// refused: stale revision ...".
    fn describe(&self, last: &WorldState<L::Run>, action: &Action) -> String {
        format!("{action}: {}", self.explain(last, action))
    }
}

/// The configuration as the `config` object of a JSON report (spec/check-output.md): every
/// field of [`Config`] under its own name.
pub fn config_json(config: &Config) -> Value {
    json!({
        "runs": config.runs,
        "workers": config.workers,
        "crashes": config.crashes,
        "approvers": config.approvers,
        "self_approval": config.self_approval,
        "edited_approvals": config.edited_approvals,
        "cross_tenant": config.cross_tenant,
        "dedupes": config.dedupes,
        "query_fences": config.query_fences,
        "query_unknown": config.query_unknown,
        "operator": config.operator,
        "max_attempts": config.max_attempts,
        "losses": config.losses,
        "duplicates": config.duplicates,
        "cancels": config.cancels,
        "reuses": config.reuses,
        "outsider_moves": config.outsider_moves,
        "program": config.program.name(),
        "suspend_for": config.suspend_for,
        "approval_ttl": config.approval_ttl,
        "reconcile_window": config.reconcile_window,
        "max_time": config.max_time,
        "max_revision": config.max_revision,
        "depth_bound": config.depth_bound,
    })
}
