//! Short, deterministic text for lockstep verdicts: inputs, runs, effects, divergences and
//! side-by-side tables. Digests are cut to eight hex digits, enough to tell them apart.

use super::{Divergence, Observation, Row, Said};
use resumable_kernel::{
    Decision, Digest, Effects, Event, Input, Phase, QueryAnswer, Resolution, Resume, Wait,
};
use std::fmt::Write as _;

pub use crate::trace::rejection_name;

fn short(d: &Digest) -> String {
    format!("{d:?}").trim_end_matches('.').to_owned()
}

fn decision(d: &Decision) -> String {
    match d {
        Decision::Batch { decisions } => {
            let each: Vec<String> = decisions
                .iter()
                .map(|d| {
                    let a = &d.approval;
                    format!(
                        "{} {} (args {}, requester {}) by {} on r{}, valid until {}",
                        d.verdict.kind(),
                        a.call_id,
                        short(&a.args),
                        a.requester,
                        a.approver,
                        a.revision.0,
                        a.expires_at
                    )
                })
                .collect();
            format!("batch [{}]", each.join("; "))
        }
        Decision::Approve(a) | Decision::Deny(a) => format!(
            "{} {} (args {}, requester {}) by {} on r{}, valid until {}",
            if matches!(d, Decision::Approve(_)) {
                "approve"
            } else {
                "deny"
            },
            a.call_id,
            short(&a.args),
            a.requester,
            a.approver,
            a.revision.0,
            a.expires_at
        ),
        Decision::Callback { callback, payload } => {
            format!("callback {callback} (payload {})", short(payload))
        }
        Decision::ResourceReady { resource } => format!("resource_ready {resource}"),
        Decision::Intervene { by, resolution } => format!(
            "intervene by {by}: {}",
            match resolution {
                Resolution::Committed { result } => format!("committed {}", short(result)),
                Resolution::Continue => "continue".to_owned(),
                Resolution::Abandon => "abandon".to_owned(),
            }
        ),
        Decision::Reconcile(answer) => format!(
            "reconcile: {}",
            match answer {
                QueryAnswer::Committed { result } => format!("committed {}", short(result)),
                QueryAnswer::NotCommitted => "not_committed".to_owned(),
                QueryAnswer::Unknown => "unknown".to_owned(),
            }
        ),
    }
}

/// An input in one line: its time, kind and what matters of its fields.
pub fn input(i: &Input) -> String {
    let what = match &i.event {
        Event::Suspend {
            wait: w,
            expires_at,
            responsible,
            resource_version,
        } => format!(
            "suspend for {}, responsible {responsible}, until {expires_at}, resource v{resource_version}",
            wait(w)
        ),
        Event::Dispatch { call, .. } => format!(
            "dispatch {} (key {}, args {}, max {} attempts)",
            call.call_id,
            call.key,
            short(&call.args),
            call.contract.max_attempts
        ),
        Event::ToolResult {
            call_id,
            attempt,
            result,
        } => format!("tool_result {call_id}#{attempt} = {}", short(result)),
        Event::Recover => "recover".to_owned(),
        Event::Resume(r) => resume(r),
        Event::Expire => "expire".to_owned(),
        Event::Cancel { by } => format!("cancel by {by}"),
        Event::Complete { result } => format!("complete = {}", short(result)),
        Event::Fail { code } => format!("fail {code}"),
    };
    format!("{} {what}", i.at)
}

/// What a suspension waits for, in the words of [`input`].
fn wait(w: &Wait) -> String {
    match w {
        Wait::Approval {
            call, requester, ..
        } => format!(
            "approval of {} (key {}, args {}) asked by {requester}",
            call.call_id,
            call.key,
            short(&call.args)
        ),
        Wait::Callback { callback } => format!("callback {callback}"),
        Wait::Intervention => "intervention".to_owned(),
        Wait::Resource { resource } => format!("resource {resource}"),
        Wait::Batch { calls } => {
            let each: Vec<String> = calls
                .iter()
                .map(|p| {
                    format!(
                        "{} (key {}, args {}) asked by {}",
                        p.call.call_id,
                        p.call.key,
                        short(&p.call.args),
                        p.requester
                    )
                })
                .collect();
            format!("batch [{}]", each.join("; "))
        }
    }
}

/// A resumption: its decision, the checkpoint it names (and whether its seal holds), the
/// facts the caller observed.
fn resume(r: &Resume) -> String {
    let cp = &r.checkpoint;
    let sealed = if cp.verify().is_ok() {
        "sealed"
    } else {
        "digest broken"
    };
    format!(
        "resume {} from checkpoint r{} of {}/{}/{} (schema {}, {sealed}), facts v{}{}{}",
        decision(&r.decision),
        cp.revision.0,
        cp.identity.tenant,
        cp.identity.session,
        cp.identity.run,
        cp.schema_version,
        r.facts.resource_version,
        if r.facts.permitted {
            ""
        } else {
            ", not permitted"
        },
        if r.facts.within_budget {
            ""
        } else {
            ", over budget"
        },
    )
}

/// A phase in one line: the same words the scenario traces use.
pub fn phase(p: &Phase) -> String {
    crate::trace::phase(p)
}

/// A run in the common vocabulary, in one line.
pub fn observation(o: &Observation) -> String {
    let s = &o.snapshot;
    let mut out = format!("r{} {} {}", s.revision.0, s.updated_at, phase(&s.phase));
    if let Some(c) = &s.last_call {
        let _ = write!(out, "; last call {} = {}", c.call_id, short(&c.result));
    }
    if let Some(r) = &o.last_resume {
        let _ = write!(
            out,
            "; last resume r{}->r{} by {:?}",
            r.from.0,
            r.to.0,
            r.decision.kind()
        );
    }
    let _ = write!(out, "; resource v{}", o.resource_version);
    if let Some(b) = &o.batch {
        let slots: Vec<String> = (b.slots.iter())
            .map(|slot| {
                let decided = match &slot.decided {
                    Some((d, at)) => format!(" ({} at r{})", d.verdict.kind(), at.0),
                    None => String::new(),
                };
                format!(
                    "{} args {} {:?}{decided}",
                    slot.call.call.call_id,
                    short(&slot.call.call.args),
                    slot.state
                )
            })
            .collect();
        let closed = b
            .closed
            .map_or(String::from("open"), |r| format!("closed r{}", r.0));
        let _ = write!(
            out,
            "; batch r{} {closed} [{}]",
            b.opened.0,
            slots.join("; ")
        );
    }
    out
}

/// Effects in one line, in order.
pub fn effects(e: &Effects) -> String {
    let items: Vec<String> = e.iter().map(|e| crate::trace::effect(&e)).collect();
    items.join(", ")
}

/// What a machine said, in one line.
pub fn said(s: &Said) -> String {
    match s {
        Said::Created(o) => format!("created {}", observation(o)),
        Said::Accepted { run, effects: e } => {
            format!("accepted -> {} [{}]", observation(run), effects(e))
        }
        Said::Refused(r) => format!("refused {}: {r}", rejection_name(r)),
        Said::NotAsked => "not asked: the pair had already diverged".to_string(),
    }
}

/// A divergence over a few lines: the input, how the verdicts disagree, each verdict.
pub fn divergence(d: &Divergence) -> String {
    let [a, b] = d.names;
    let width = a.len().max(b.len());
    let on = d
        .input
        .as_ref()
        .map_or_else(|| "creation".to_owned(), input);
    format!(
        "CONF-1 divergence on {on}\n  {}\n  {a:width$}: {}\n  {b:width$}: {}",
        match d.disagreement() {
            super::Disagreement::OnlyAAccepted => format!("only {a} accepted"),
            super::Disagreement::OnlyBAccepted => format!("only {b} accepted"),
            other => other.to_string(),
        },
        said(&d.a),
        said(&d.b),
    )
}

/// Rows side by side: each input, then each machine's verdict, then whether they agree.
pub fn rows(names: [&'static str; 2], rows: &[Row]) -> String {
    let [a, b] = names;
    let width = a.len().max(b.len());
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        let _ = writeln!(out, "{:>2}. {}", n + 1, input(&row.input));
        let _ = writeln!(out, "    {a:width$}: {}", said(&row.a));
        let _ = writeln!(out, "    {b:width$}: {}", said(&row.b));
        let _ = writeln!(out, "    {}", if row.agreed { "agree" } else { "DISAGREE" });
    }
    out
}
