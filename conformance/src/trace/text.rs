//! The text trace, for people: a heading with a legend of the notation, one paragraph per
//! step, a closing count.

use super::summary::short;
use super::{rejection_name, Trace, TraceStep};
use crate::scenario::Header;
use resumable_kernel::{
    AuditRecord, Dispatch, Effect, EventKind, FailCause, HistoryEntry, Phase, Reason, Run,
};
use std::fmt::Write as _;

/// The phase with its reason, e.g. `suspended(pending_approval call-1)` or
/// `running(dispatching call-1#0)`.
pub fn phase(p: &Phase) -> String {
    match p {
        Phase::Running { in_flight: None } => "running".to_string(),
        Phase::Running { in_flight: Some(f) } => {
            format!("running(dispatching {}#{})", f.call.call.call_id, f.attempt)
        }
        Phase::Suspended(s) => {
            let reason = match &s.reason {
                Reason::PendingApproval { call, requester } => format!(
                    "pending_approval {} requested by {requester}",
                    call.call.call_id
                ),
                Reason::ExternalCallback { callback } => format!("external_callback {callback}"),
                Reason::PendingBatch => "pending_batch".to_string(),
                Reason::ResourceWait { resource } => format!("resource_wait {resource}"),
                Reason::ManualIntervention {
                    unresolved,
                    cancelled_by,
                } => {
                    let mut s = "manual_intervention".to_string();
                    if let Some(f) = unresolved {
                        let _ = write!(s, ", unresolved {}#{}", f.call.call.call_id, f.attempt);
                    }
                    if let Some(by) = cancelled_by {
                        let _ = write!(s, ", cancel by {by} pending");
                    }
                    s
                }
                Reason::OutcomeUnknown {
                    in_flight,
                    cancelled_by,
                } => {
                    let mut s = format!(
                        "outcome_unknown {}#{}",
                        in_flight.call.call.call_id, in_flight.attempt
                    );
                    if let Some(by) = cancelled_by {
                        let _ = write!(s, ", cancel by {by} pending");
                    }
                    s
                }
            };
            format!(
                "suspended({reason}), expires at {}, responsible {}",
                s.expires_at, s.responsible
            )
        }
        Phase::Completed { result } => format!("completed(result {})", short(result)),
        Phase::Failed(cause) => format!(
            "failed({})",
            match cause {
                FailCause::Denied { call_id } => format!("denied {call_id}"),
                FailCause::Expired { unresolved: None } => "expired".to_string(),
                FailCause::Expired {
                    unresolved: Some(f),
                } => format!("expired, unresolved {}#{}", f.call.call.call_id, f.attempt),
                FailCause::Cancelled { by } => format!("cancelled by {by}"),
                FailCause::Error { code } => format!("error {code}"),
                FailCause::Abandoned { by } => format!("abandoned by {by}"),
            }
        ),
    }
}

/// The run's revision and phase, e.g. `r1 suspended(pending_approval call-1 ...)`.
pub fn state(run: &Run) -> String {
    format!("{} {}", run.revision(), phase(run.phase()))
}

fn audit(a: &AuditRecord) -> String {
    let mut what = event_name(a.event);
    if let Some(d) = &a.decision {
        let _ = write!(what, " {d}");
    }
    let mut after = a.phase.name().to_string();
    if let Some(r) = &a.reason {
        let _ = write!(after, "({r})");
    }
    format!("audit {} at {}: {what} -> {after}", a.revision, a.at)
}

/// An event kind's name as its serde form writes it (snake_case), so the trace uses the same
/// words as the JSON form and spec/. The kernel gives decisions, phases and reasons a `name`;
/// event kinds only their serde form, which for a unit variant is always a string.
fn event_name(kind: EventKind) -> String {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::String(name)) => name,
        other => unreachable!("an event kind serialises as its name, not {other:?}"),
    }
}

/// The call a dispatch or query names: the tool, the key with its attempt, the call id, and
/// the tool key the tool is sent (spec KEY-3), shortened.
fn call_target(d: &Dispatch) -> String {
    format!(
        "{} key {}#{} ({}), tool key {}",
        d.tool,
        d.key,
        d.attempt,
        d.call_id,
        short(&d.tool_key)
    )
}

/// An effect in a short readable form.
pub fn effect(e: &Effect) -> String {
    match e {
        Effect::Audit(a) => audit(a),
        Effect::History(HistoryEntry::Bound { call_id, key, args }) => format!(
            "history: call {} bound, key {} to args {}",
            fingerprint(call_id),
            fingerprint(key),
            short(args)
        ),
        Effect::History(HistoryEntry::Settled { key }) => {
            format!("history: key {} spent", fingerprint(key))
        }
        Effect::PersistCheckpoint(c) => format!(
            "checkpoint {} digest {} (schema {})",
            c.revision,
            short(&c.digest),
            c.schema_version
        ),
        Effect::Dispatch(d) => format!("dispatch {}", call_target(d)),
        Effect::Query(d) => format!("query {}", call_target(d)),
    }
}

/// A history fingerprint, as short as a digest is shown.
fn fingerprint(f: &resumable_kernel::Fingerprint) -> String {
    let mut text = f.to_string();
    text.truncate(8);
    text
}

/// The notation of the text trace, explained once at its top (and shown, generated from this
/// constant, in spec/scenario-format.md).
pub const NOTATION: &str = "\
reading this trace: t25 is a time, r3 the run's revision, call-1#0 attempt 0 of call-1,
  v1 a resource's version; a digest (arguments, result, checkpoint, tool key) shows its
  first 8 hex digits. A suspension expires at a time; an approval is valid until a time.
  The run's history (calls bound, keys spent) lives in the driver's store, by fingerprint.
  A rejection names the rule it enforces: [RES-2] is rule RES-2 of the specification.
";

/// Spec IDs as spec/ writes them, comma-separated.
fn names(ids: &[resumable_kernel::SpecId]) -> String {
    let names: Vec<&str> = ids.iter().map(|id| id.name()).collect();
    names.join(", ")
}

/// The text a trace starts with: the scenario's header and the run as created.
pub fn header_text(h: &Header, initial: &Run) -> String {
    let r = &h.run;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {} (format {})",
        printable(&h.scenario),
        h.format
    );
    let _ = writeln!(out, "shows: {}", printable(&names(&h.shows)));
    let _ = writeln!(out, "{}", printable(&h.description));
    if let Some(note) = &h.note {
        let _ = writeln!(out, "note: {}", printable(note));
    }
    out.push_str(NOTATION);
    let _ = writeln!(
        out,
        "run {} of tenant {}, session {}, definition {}; operator {}, reconcile window {}",
        r.run, r.tenant, r.session, r.definition, r.operator, r.reconcile_window
    );
    let _ = writeln!(out, "created at {}: {}", r.created_at, state(initial));
    out
}

impl TraceStep {
    /// The step as text for people: a blank line, the numbered summary, then its details.
    pub fn to_text(&self) -> String {
        let s = self;
        let mut out = String::new();
        // Detail lines align under the summary, whatever the width of the step number.
        let pad = " ".repeat(s.number.to_string().len() + 2);
        let _ = writeln!(out);
        let _ = writeln!(out, "{}. {}", s.number, s.summary);
        if let Some(note) = &s.note {
            let _ = writeln!(out, "{pad}note: {}", printable(note));
        }
        match &s.verdict {
            Ok(effects) => {
                let _ = writeln!(out, "{pad}accepted: {}", state(&s.run));
                for e in effects.iter() {
                    let _ = writeln!(out, "{pad}- {}", effect(&e));
                }
                if let Some(c) = &s.recorded {
                    let _ = writeln!(
                        out,
                        "{pad}recorded: {} result {}",
                        c.call_id,
                        short(&c.result)
                    );
                }
            }
            Err(rej) => {
                let message = shorten_digests(&rej.to_string());
                let rule = crate::rule::rule(rej.kind()).name();
                let _ = writeln!(
                    out,
                    "{pad}rejected {} [{rule}]: {message}",
                    rejection_name(rej)
                );
                let _ = writeln!(out, "{pad}unchanged: {}", state(&s.run));
            }
        }
        if let (Some(expect), Some(false)) = (&s.expect, s.met()) {
            let _ = writeln!(
                out,
                "{pad}UNEXPECTED: the scenario expects {}",
                printable(expect)
            );
        }
        out
    }
}

/// The text a trace ends with: the counts, the final state, and how many verdicts differ
/// from what the scenario expects.
pub fn footer_text(steps: usize, accepted: usize, unmet: usize, last: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} inputs: {} accepted, {} rejected; final {}",
        steps,
        accepted,
        steps - accepted,
        state(last)
    );
    if unmet > 0 {
        let _ = writeln!(
            out,
            "{unmet} verdicts differ from what the scenario expects"
        );
    }
    out
}

impl Trace {
    /// The trace as text for people.
    pub fn to_text(&self) -> String {
        let mut out = header_text(&self.header, &self.initial);
        for s in &self.steps {
            out.push_str(&s.to_text());
        }
        let accepted = self.steps.iter().filter(|s| s.verdict.is_ok()).count();
        let unmet = self.unmet().count();
        out.push_str(&footer_text(
            self.steps.len(),
            accepted,
            unmet,
            self.final_run(),
        ));
        out
    }
}

/// A message with every full digest (64 hex digits) cut to its first eight, as the rest of
/// the text trace shows digests.
fn shorten_digests(message: &str) -> String {
    const FULL: usize = 64;
    let mut out = String::with_capacity(message.len());
    let mut run = String::new();
    for c in message.chars().chain(core::iter::once(' ')) {
        if c.is_ascii_hexdigit() {
            run.push(c);
            continue;
        }
        if run.len() == FULL {
            run.truncate(8);
        }
        out.push_str(&run);
        run.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// Free text from the scenario with control characters escaped, so a note cannot break the
/// one-paragraph-per-step layout or send escape sequences to a terminal.
fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
