//! Replaying a scenario through the kernel, and rendering the trace.
//!
//! [`replay`] feeds each input of a [`Scenario`] to `resumable_kernel::step`, in order, and
//! keeps what a person needs to follow the run: the input, the verdict (accepted, or the
//! rejection with its evidence), the phase and revision after it, and the effects. A rejected
//! input changes nothing (spec REJ-2), so the trace shows the run unchanged.
//!
//! [`Trace::to_text`] is for people; [`Trace::to_json_lines`] prints one JSON object per step
//! (schema in `spec/scenario-format.md`). Both depend only on the scenario.

use crate::scenario::{Header, Scenario, ScenarioError, Source};
use resumable_kernel::{
    AuditRecord, Call, CallOutcome, Checkpoint, Decision, Digest, Dispatch, Effect, Effects, Event,
    EventKind, FailCause, Input, Phase, QueryAnswer, Reason, Rejection, Resolution, Run, Wait,
};
use serde::Serialize;
use std::collections::VecDeque;
use std::fmt::Write as _;

/// The replay of a whole scenario.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The scenario's header.
    pub header: Header,
    /// The run as created, before the first input.
    pub initial: Run,
    /// One entry per input, in order.
    pub steps: Vec<TraceStep>,
}

/// One input and what the kernel made of it.
#[derive(Clone, Debug)]
pub struct TraceStep {
    /// The step's number, from 1.
    pub number: usize,
    /// The scenario line it came from.
    pub line: usize,
    /// The scenario's remark, if any.
    pub note: Option<String>,
    /// The verdict the scenario claims, if any.
    pub expect: Option<String>,
    /// The input as fed to the kernel, every reference resolved.
    pub input: Input,
    /// The input in a short readable form.
    pub summary: String,
    /// The effects of an accepted input, or the rejection.
    pub verdict: Result<Effects, Rejection>,
    /// The run after the step (unchanged by a rejection).
    pub run: Run,
    /// A call result this step recorded, if it recorded one.
    pub recorded: Option<CallOutcome>,
}

impl TraceStep {
    /// `accepted`, or the rejection's name (its snake_case variant name, as serde writes it).
    pub fn verdict_name(&self) -> String {
        match &self.verdict {
            Ok(_) => "accepted".to_string(),
            Err(r) => rejection_name(r).to_string(),
        }
    }

    /// Whether the verdict is the one the scenario claims; `None` when it claims none.
    pub fn met(&self) -> Option<bool> {
        self.expect.as_ref().map(|e| *e == self.verdict_name())
    }
}

impl Trace {
    /// The steps whose verdict is not the one the scenario claims.
    pub fn unmet(&self) -> impl Iterator<Item = &TraceStep> {
        self.steps.iter().filter(|s| s.met() == Some(false))
    }

    /// The run after the last step.
    pub fn final_run(&self) -> &Run {
        self.steps.last().map_or(&self.initial, |s| &s.run)
    }
}

/// The snake_case name of a rejection, as its serde form tags it and spec/ names it: the
/// kernel's [`resumable_kernel::RejectionKind::name`].
pub fn rejection_name(r: &Rejection) -> &'static str {
    r.kind().name()
}

/// How many of the checkpoints a replay emitted it keeps for `"latest"` and `{"emitted": R}`
/// references: the most recent ones. A bound, so that replaying a long scenario holds a fixed
/// amount of memory; a reference to an older checkpoint is refused by name.
pub const EMITTED_KEPT: usize = 1024;

/// A replay under way: the run so far and the checkpoints it can still refer to. Feeding it
/// one step at a time keeps memory flat however long the scenario is.
#[derive(Clone, Debug)]
pub struct Replayer {
    run: Run,
    emitted: VecDeque<Checkpoint>,
    number: usize,
}

impl Replayer {
    /// A replay of a scenario with this header, before its first input, or why the run it
    /// describes cannot be created (a reconcile window of 0), naming the header's line.
    pub fn new(header: &Header) -> Result<Replayer, ScenarioError> {
        let run = (header.run.create())
            .map_err(|e| ScenarioError::at(1, format!("the run's policy: {e}")))?;
        Ok(Replayer {
            run,
            emitted: VecDeque::new(),
            number: 0,
        })
    }

    /// The run so far.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// Feeds one input to the kernel. Fails only when a reference cannot be resolved (for
    /// example `"latest"` before any checkpoint was emitted), naming the line.
    pub fn step(&mut self, step: &crate::scenario::Step) -> Result<TraceStep, ScenarioError> {
        let emitted = self.emitted.make_contiguous();
        let input = step.resolve(emitted).map_err(|m| {
            let dropped = emitted.len() == EMITTED_KEPT;
            let m = if dropped {
                format!("{m} (a replay keeps the last {EMITTED_KEPT} checkpoints)")
            } else {
                m
            };
            ScenarioError::at(step.line, m)
        })?;
        let verdict = match resumable_kernel::step(&self.run, &input) {
            Ok(t) => {
                if let Some(cp) = t.effects.checkpoint() {
                    if self.emitted.len() == EMITTED_KEPT {
                        self.emitted.pop_front();
                    }
                    self.emitted.push_back(*cp);
                }
                let recorded = (t.next.last_call())
                    .filter(|c| Some(*c) != self.run.last_call())
                    .copied();
                self.run = t.next;
                (Ok(t.effects), recorded)
            }
            Err(r) => (Err(r), None),
        };
        self.number += 1;
        Ok(TraceStep {
            number: self.number,
            line: step.line,
            note: step.note.clone(),
            expect: step.expect.clone(),
            summary: summarise(&input, step),
            input,
            verdict: verdict.0,
            run: self.run,
            recorded: verdict.1,
        })
    }
}

/// Replays the scenario through the kernel. Fails only when a reference cannot be resolved
/// (for example `"latest"` before any checkpoint was emitted), naming the line.
pub fn replay(scenario: &Scenario) -> Result<Trace, ScenarioError> {
    let mut replayer = Replayer::new(&scenario.header)?;
    let initial = *replayer.run();
    let steps = (scenario.steps.iter())
        .map(|step| replayer.step(step))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Trace {
        header: scenario.header.clone(),
        initial,
        steps,
    })
}

/// The first eight hex digits of a digest: enough to tell digests apart in a trace.
fn short(d: &Digest) -> String {
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

fn summarise(input: &Input, step: &crate::scenario::Step) -> String {
    let at = input.at;
    let what = match &input.event {
        Event::Suspend {
            wait,
            expires_at,
            responsible,
            resource_version,
        } => {
            let (awaiting, party) = match wait {
                Wait::Approval { call: c, requester } => (
                    format!("approval of {}, requested by {requester}", call(c)),
                    "approver",
                ),
                Wait::Callback { callback } => (format!("callback {callback}"), "responsible"),
                Wait::Intervention => ("intervention".to_string(), "responsible"),
                Wait::Resource { resource } => (format!("resource {resource}"), "responsible"),
            };
            format!(
                "suspend for {awaiting}; {party} {responsible}, suspension expires at {expires_at}, resource v{resource_version}"
            )
        }
        Event::Dispatch { call: c } => format!("dispatch {}", call(c)),
        Event::ToolResult {
            call_id,
            attempt,
            result,
        } => format!("tool result for {call_id}#{attempt}: {}", short(result)),
        Event::Recover => "recover (a worker restarted and lost its volatile state)".to_string(),
        Event::Resume(r) => {
            let cp = &r.checkpoint;
            // How the checkpoint was obtained, so a reader sees what was forged or replayed.
            let mut how = Vec::new();
            match &step.fill.checkpoint {
                Some(reference) => {
                    if let Source::Emitted(rev) = reference.source {
                        how.push(format!("emitted at {rev}"));
                    }
                    if !reference.changes.is_empty() {
                        how.push(format!(
                            "changed {}, {}",
                            reference.describe_changes(),
                            if reference.reseal {
                                "resealed"
                            } else {
                                "not resealed"
                            }
                        ));
                    }
                }
                None => how.push("written in full".to_string()),
            }
            let source = if how.is_empty() {
                format!("checkpoint {}", cp.revision)
            } else {
                format!("checkpoint {} ({})", cp.revision, how.join("; "))
            };
            let (verb, noun) = match r.decision {
                Decision::Approve(_) => ("approve", "approval"),
                _ => ("deny", "denial"),
            };
            let decision = match &r.decision {
                Decision::Approve(a) | Decision::Deny(a) => format!(
                    "{} {} args {} requested by {}, decided by {} on {}, {} valid until {}",
                    verb,
                    a.call_id,
                    short(&a.args),
                    a.requester,
                    a.approver,
                    a.revision,
                    noun,
                    a.expires_at
                ),
                Decision::Callback { callback, payload } => {
                    format!("callback {callback} arrived, payload {}", short(payload))
                }
                Decision::ResourceReady { resource } => format!("resource {resource} ready"),
                Decision::Intervene { by, resolution } => format!(
                    "intervention by {by}: {}",
                    match resolution {
                        Resolution::Committed { result } =>
                            format!("it committed, result {}", short(result)),
                        Resolution::Continue => "continue without it".to_string(),
                        Resolution::Abandon => "abandon the run".to_string(),
                    }
                ),
                Decision::Reconcile(answer) => format!(
                    "reconcile: the query answers {}",
                    match answer {
                        QueryAnswer::Committed { result } =>
                            format!("committed, result {}", short(result)),
                        QueryAnswer::NotCommitted => "not committed".to_string(),
                        QueryAnswer::Unknown => "unknown".to_string(),
                    }
                ),
            };
            // Facts are shown only where they differ from "nothing changed": the resource is
            // at the checkpoint's version, policy permits, the budget covers.
            let mut facts = Vec::new();
            if r.facts.resource_version != cp.resource_version {
                facts.push(format!("resource now v{}", r.facts.resource_version));
            }
            if !r.facts.permitted {
                facts.push("permission revoked".to_string());
            }
            if !r.facts.within_budget {
                facts.push("budget exhausted".to_string());
            }
            let facts = if facts.is_empty() {
                String::new()
            } else {
                format!(" [facts: {}]", facts.join(", "))
            };
            format!("resume from {source}: {decision}{facts}")
        }
        Event::Expire => "expire".to_string(),
        Event::Cancel { by } => format!("cancel by {by}"),
        Event::Complete { result } => format!("complete with result {}", short(result)),
        Event::Fail { code } => format!("fail with code {code}"),
    };
    format!("{at} {what}")
}

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

/// The notation of the text trace, explained once at its top.
const NOTATION: &str = "\
reading this trace: t25 is a time, r3 the run's revision, call-1#0 attempt 0 of call-1,
  v1 a resource's version; a digest (arguments, result, checkpoint, tool key) shows its
  first 8 hex digits. A suspension expires at a time; an approval is valid until a time.
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
                    let _ = writeln!(out, "{pad}- {}", effect(e));
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
                let _ = writeln!(out, "{pad}rejected {}: {message}", rejection_name(rej));
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

    /// The step as one JSON line of the trace of `scenario` (schema in
    /// `spec/scenario-format.md`), with its newline.
    pub fn to_json_line(&self, scenario: &str) -> Result<String, serde_json::Error> {
        let s = self;
        let (rejection, message) = match &s.verdict {
            Ok(_) => (None, None),
            Err(r) => (Some(r), Some(r.to_string())),
        };
        let effects: Vec<Effect> = match &s.verdict {
            Ok(e) => e.iter().copied().collect(),
            Err(_) => Vec::new(),
        };
        let line = JsonStep {
            scenario,
            step: s.number,
            line: s.line,
            note: s.note.as_deref(),
            summary: &s.summary,
            input: &s.input,
            verdict: s.verdict_name(),
            rejection,
            message,
            expect: s.expect.as_deref(),
            met: s.met(),
            revision: s.run.revision().0,
            phase: s.run.phase().kind(),
            state: phase(s.run.phase()),
            effects,
            recorded: s.recorded.as_ref(),
            run: &s.run,
        };
        let mut out = serde_json::to_string(&line)?;
        out.push('\n');
        Ok(out)
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

    /// The trace as JSON lines: one object per step (schema in `spec/scenario-format.md`).
    pub fn to_json_lines(&self) -> Result<String, serde_json::Error> {
        let mut out = String::new();
        for s in &self.steps {
            out.push_str(&s.to_json_line(&self.header.scenario)?);
        }
        Ok(out)
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

/// One line of the JSON form. Field order is fixed by this struct, so output is stable.
#[derive(Serialize)]
struct JsonStep<'a> {
    scenario: &'a str,
    step: usize,
    line: usize,
    note: Option<&'a str>,
    summary: &'a str,
    input: &'a Input,
    verdict: String,
    rejection: Option<&'a Rejection>,
    message: Option<String>,
    expect: Option<&'a str>,
    met: Option<bool>,
    revision: u64,
    phase: resumable_kernel::PhaseKind,
    state: String,
    effects: Vec<Effect>,
    recorded: Option<&'a CallOutcome>,
    run: &'a Run,
}
