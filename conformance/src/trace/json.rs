//! The JSON trace, for programs: one object per step, fields in a fixed order (schema in
//! `spec/scenario-format.md`).

use super::{phase, Trace, TraceStep};
use resumable_kernel::{CallOutcome, Effect, Input, Rejection, Run};
use serde::Serialize;

impl TraceStep {
    /// The step as one JSON line of the trace of `scenario` (schema in
    /// `spec/scenario-format.md`), with its newline.
    pub fn to_json_line(&self, scenario: &str) -> Result<String, serde_json::Error> {
        let s = self;
        let (rejection, rule, message) = match &s.verdict {
            Ok(_) => (None, None, None),
            Err(r) => (
                Some(r),
                Some(crate::rule::rule(r.kind()).name()),
                Some(r.to_string()),
            ),
        };
        let effects: Vec<Effect> = match &s.verdict {
            Ok(e) => e.iter().collect(),
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
            rule,
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

impl Trace {
    /// The trace as JSON lines: one object per step (schema in `spec/scenario-format.md`).
    pub fn to_json_lines(&self) -> Result<String, serde_json::Error> {
        let mut out = String::new();
        for s in &self.steps {
            out.push_str(&s.to_json_line(&self.header.scenario)?);
        }
        Ok(out)
    }
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
    /// The spec ID of the rule the rejection enforces (`crate::rule`).
    rule: Option<&'static str>,
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
