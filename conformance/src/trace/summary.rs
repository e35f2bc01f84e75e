//! The short form of an input, as the first line of each step of a text trace shows it.

use crate::scenario::{Source, Step};
use resumable_kernel::{
    Call, Decision, Digest, Event, Input, QueryAnswer, Resolution, Resume, Verdict, Wait,
};

/// The first eight hex digits of a digest: enough to tell digests apart in a trace.
pub(super) fn short(d: &Digest) -> String {
    let mut s = d.to_string();
    s.truncate(8);
    s
}

fn contract(c: &Call) -> String {
    let k = c.contract;
    let promise = match (k.dedupes, k.query_fences) {
        (true, true) => "dedupes, query fences",
        (true, false) => "dedupes",
        (false, true) => "query fences",
        (false, false) => "neither dedupes nor fences",
    };
    let plural = if k.max_attempts == 1 { "" } else { "s" };
    format!("{promise}, max {} attempt{plural}", k.max_attempts)
}

fn call(c: &Call) -> String {
    format!(
        "{} {} args {} key {} ({})",
        c.call_id,
        c.tool,
        short(&c.args),
        c.key,
        contract(c)
    )
}

/// The input in a short readable form: its time, then what it says.
pub(super) fn summarise(input: &Input, step: &Step) -> String {
    let what = match &input.event {
        Event::Suspend {
            wait,
            expires_at,
            responsible,
            resource_version,
        } => {
            let (awaiting, party) = awaiting(wait);
            format!(
                "suspend for {awaiting}; {party} {responsible}, suspension expires at \
                 {expires_at}, resource v{resource_version}"
            )
        }
        Event::Dispatch { call: c, prior, .. } => format!("dispatch {}{}", call(c), known(prior)),
        Event::ToolResult {
            call_id,
            attempt,
            result,
        } => format!("tool result for {call_id}#{attempt}: {}", short(result)),
        Event::Recover => "recover (a worker restarted and lost its volatile state)".to_string(),
        Event::Resume(r) => format!(
            "resume from {}: {}{}",
            checkpoint_source(r, step),
            decision(&r.decision),
            facts(r)
        ),
        Event::Expire => "expire".to_string(),
        Event::Cancel { by } => format!("cancel by {by}"),
        Event::Complete { result } => format!("complete with result {}", short(result)),
        Event::Fail { code } => format!("fail with code {code}"),
    };
    format!("{} {what}", input.at)
}

/// What a suspension waits for, and the word for the party who answers it.
fn awaiting(wait: &Wait) -> (String, &'static str) {
    match wait {
        Wait::Approval {
            call: c,
            requester,
            prior,
        } => (
            format!(
                "approval of {}, requested by {requester}{}",
                call(c),
                known(prior)
            ),
            "approver",
        ),
        Wait::Callback { callback } => (format!("callback {callback}"), "responsible"),
        Wait::Intervention => ("intervention".to_string(), "responsible"),
        Wait::Resource { resource } => (format!("resource {resource}"), "responsible"),
        Wait::Batch { calls } => {
            let each: Vec<String> = calls
                .iter()
                .map(|p| {
                    format!(
                        "{}, requested by {}{}",
                        call(&p.call),
                        p.requester,
                        known(&p.prior)
                    )
                })
                .collect();
            (
                format!(
                    "approval of a batch of {}: {}",
                    calls.len(),
                    each.join("; ")
                ),
                "approver",
            )
        }
    }
}

/// The checkpoint a resume carries and how it was obtained, so a reader sees what was forged
/// or replayed: `checkpoint r1 (emitted at r1; changed revision=0, resealed)`.
fn checkpoint_source(r: &Resume, step: &Step) -> String {
    let mut how = Vec::new();
    match &step.fill.checkpoint {
        Some(reference) => {
            if let Source::Emitted(rev) = reference.source {
                how.push(format!("emitted at {rev}"));
            }
            if !reference.changes.is_empty() {
                let seal = if reference.reseal {
                    "resealed"
                } else {
                    "not resealed"
                };
                how.push(format!("changed {}, {seal}", reference.describe_changes()));
            }
        }
        None => how.push("written in full".to_string()),
    }
    let revision = r.checkpoint.revision;
    if how.is_empty() {
        format!("checkpoint {revision}")
    } else {
        format!("checkpoint {revision} ({})", how.join("; "))
    }
}

/// A decision in words. An approval's own deadline is worded `valid until`, apart from the
/// suspension's `expires at`.
fn decision(d: &Decision) -> String {
    match d {
        Decision::Batch { decisions } => {
            let each: Vec<String> = decisions
                .iter()
                .map(|d| {
                    let a = &d.approval;
                    let verb = match d.verdict {
                        Verdict::Approve => "approve".to_string(),
                        Verdict::Edit { args } => format!("edit to args {}", short(&args)),
                        Verdict::Reject { reason } => format!("reject, reason {}", short(&reason)),
                        Verdict::Respond { result } => {
                            format!("respond in the tool's place, result {}", short(&result))
                        }
                        Verdict::Deny => "deny".to_string(),
                    };
                    format!(
                        "{verb} {} args {} requested by {}, decided by {} on {}, valid until {}",
                        a.call_id,
                        short(&a.args),
                        a.requester,
                        a.approver,
                        a.revision,
                        a.expires_at
                    )
                })
                .collect();
            format!("batch decisions: {}", each.join("; "))
        }
        Decision::Approve(a) | Decision::Deny(a) => {
            let (verb, noun) = match d {
                Decision::Approve(_) => ("approve", "approval"),
                _ => ("deny", "denial"),
            };
            format!(
                "{verb} {} args {} requested by {}, decided by {} on {}, {noun} valid until {}",
                a.call_id,
                short(&a.args),
                a.requester,
                a.approver,
                a.revision,
                a.expires_at
            )
        }
        Decision::Callback { callback, payload } => {
            format!("callback {callback} arrived, payload {}", short(payload))
        }
        Decision::ResourceReady { resource } => format!("resource {resource} ready"),
        Decision::Intervene { by, resolution } => {
            let what = match resolution {
                Resolution::Committed { result } => {
                    format!("it committed, result {}", short(result))
                }
                Resolution::Continue => "continue without it".to_string(),
                Resolution::Abandon => "abandon the run".to_string(),
            };
            format!("intervention by {by}: {what}")
        }
        Decision::Reconcile(answer) => {
            let what = match answer {
                QueryAnswer::Committed { result } => {
                    format!("committed, result {}", short(result))
                }
                QueryAnswer::NotCommitted => "not committed".to_string(),
                QueryAnswer::Unknown => "unknown".to_string(),
            };
            format!("reconcile: the query answers {what}")
        }
    }
}

/// The facts of a resume, shown only where they differ from "nothing changed": the resource
/// at the checkpoint's version, policy permits, the budget covers.
fn facts(r: &Resume) -> String {
    let mut facts = Vec::new();
    if r.facts.resource_version != r.checkpoint.resource_version {
        facts.push(format!("resource now v{}", r.facts.resource_version));
    }
    if !r.facts.permitted {
        facts.push("permission revoked".to_string());
    }
    if !r.facts.within_budget {
        facts.push("budget exhausted".to_string());
    }
    if facts.is_empty() {
        String::new()
    } else {
        format!(" [facts: {}]", facts.join(", "))
    }
}

/// What the driver stated the run's history holds about a call it proposes, when it holds
/// anything (a first use says nothing).
fn known(prior: &resumable_kernel::Prior) -> String {
    let mut parts = Vec::new();
    if prior.call_id_used {
        parts.push("call id used before".to_string());
    }
    if let Some(k) = &prior.key {
        parts.push(format!(
            "key bound before to args {}{}",
            short(&k.args),
            if k.committed { ", spent" } else { "" }
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" [history: {}]", parts.join("; "))
    }
}
