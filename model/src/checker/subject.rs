//! The world as a subject of the checker driver: how its steps read in traces, its states
//! as ITF variables, and its configuration as the `config` object of a JSON report.

use super::itf::{bigint, option, variant};
use super::{Checkable, ListError, PropertyList, Summarize};
use crate::config::Config;
use crate::world::{Action, RunSlot, ToolMsg, Worker, World, WorldState};
use crate::Lifecycle;
use resumable_kernel::SpecId;
use serde_json::{json, Map, Value};

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

    /// The clock, the budgets, each run as the store holds it, the workers, the messages in
    /// flight, and the bits of history the properties read. Revisions and times are 64-bit
    /// in the kernel, hence `#bigint`.
    fn itf_state(&self, s: &WorldState<L::Run>) -> Map<String, Value> {
        let tool_msgs = |msgs: &[ToolMsg]| -> Value {
            (msgs.iter())
                .map(|m| json!({ "run": m.run, "call": m.call, "attempt": m.attempt }))
                .collect()
        };
        let decisions: Value = (s.decisions.iter())
            .map(|m| {
                json!({
                    "target": m.target,
                    "source": m.source,
                    "checkpoint": m.checkpoint,
                    "revision": bigint(m.revision),
                    "party": format!("{:?}", m.party),
                    "verdict": format!("{:?}", m.verdict),
                    "expires_at": bigint(m.expires_at),
                    "delivered": m.delivered,
                })
            })
            .collect();
        let b = &s.budgets;
        let vars = json!({
            "now": bigint(s.now),
            "budgets": {
                "crashes": b.crashes,
                "losses": b.losses,
                "duplicates": b.duplicates,
                "cancels": b.cancels,
            },
            "runs": s.runs.iter().map(run_itf).collect::<Value>(),
            "workers": s.workers.iter().map(worker_itf).collect::<Value>(),
            "requests": tool_msgs(&s.requests),
            "responses": tool_msgs(&s.responses),
            "decisions": decisions,
            "violated": s.violated.bits(),
            "seen": s.seen,
        });
        match vars {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

impl<L: Lifecycle> Checkable for World<L> {
    /// Every property is keyed by the spec ID of the rule it checks.
    type Key = SpecId;

    fn property_list(&self) -> Result<PropertyList<Self, SpecId>, ListError> {
        crate::properties::properties(self)
    }

    /// A dispatch sent alone where nothing else can interfere with it (`world/reduce.rs`).
    fn persistent(&self, state: &WorldState<L::Run>, actions: &mut Vec<Action>) {
        World::persistent(self, state, actions);
    }

    /// Not a state reached through a borrowed tick of a free clock (`Config::free_clock`).
    fn may_witness(&self, state: &WorldState<L::Run>) -> bool {
        World::may_witness(self, state)
    }
}

/// A run's durable side as an ITF record.
fn run_itf<R>(slot: &RunSlot<R>) -> Value {
    let view = &slot.run.view;
    let name = |value: Value| match value {
        Value::String(s) => Value::String(s),
        other => Value::String(other.to_string()),
    };
    json!({
        "phase": name(serde_json::to_value(view.phase).unwrap_or_default()),
        "revision": bigint(view.revision),
        "reason": option(view.reason.map(|r| name(serde_json::to_value(r).unwrap_or_default()))),
        "expires_at": option(view.expires_at.map(|t| bigint(t.0))),
        "ending": option(view.ending.map(|e| Value::String(format!("{e:?}")))),
        "in_flight": view.in_flight,
        "checkpoints": slot.checkpoints.len(),
        "audited": slot.audited,
        "waiting_since": option(slot.waiting_since.map(bigint)),
        "orphaned": slot.orphaned,
    })
}

/// A worker as a variant: idle, holding a staged step (what it read and what it feeds), or
/// dispatching.
fn worker_itf<R>(worker: &Worker<R>) -> Value {
    match worker {
        Worker::Idle => variant("Idle", json!({ "#tup": [] })),
        Worker::Staged(st) => variant(
            "Staged",
            json!({ "run": st.run, "from": bigint(st.from), "input": st.choice.to_string() }),
        ),
        Worker::Dispatching { run, queue } => variant(
            "Dispatching",
            json!({
                "run": run,
                "queue": (queue.iter().flatten())
                    .map(|(call, attempt)| json!({ "call": call, "attempt": attempt }))
                    .collect::<Value>(),
            }),
        ),
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
        "differs_in": config.differs_in.map(|f| f.name()),
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
        "arg_changes": config.arg_changes,
        "renewals": config.renewals,
        "old_configs": config.old_configs,
        "questions": config.questions,
        "shared_resource": config.shared_resource,
        "resource_start": config.resource_start,
        "program": config.program.name(),
        "batch_verdicts": config.batch_verdicts,
        "suspend_for": config.suspend_for,
        "approval_ttl": config.approval_ttl,
        "reconcile_window": config.reconcile_window,
        "max_time": config.max_time,
        "max_revision": config.max_revision,
        "depth_bound": config.depth_bound,
        "identity": config.identity,
        "free_clock": config.free_clock,
        "foreign_commits": config.foreign_commits,
        "driving": config.driving.name(),
    })
}
