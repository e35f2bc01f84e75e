//! The validator's report, as the command line prints it: a line for people, or one JSON
//! object for programs. Kept here, beside the validator, so that both are tested together.

use crate::{Class, Finding, Summary, Unjudged};
use std::fmt::Write as _;

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A serde value's JSON text; every type reported here serialises infallibly.
fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// What the validation proved about who wrote the log, under which rules, and where it ends,
/// in one line.
fn sealing(s: &Summary) -> String {
    let rules = s
        .rules
        .map_or_else(|| "names no rules".into(), |r| format!("rules {r}"));
    let mut line = format!("format {}, {rules}, chain {}", s.version, s.chain);
    match (s.key_id, s.authenticated) {
        (Some(id), true) => line.push_str(&format!(": every line's MAC verified under key {id}")),
        (Some(id), false) => line.push_str(&format!(" (key {id}): MACs not verified")),
        (None, _) => line.push_str(": unkeyed"),
    }
    if s.anchored {
        line.push_str(&format!("; ends at the anchor ({} records)", s.records));
    }
    line
}

/// The records, in a line's words: `N records (A accepted, R refused)`.
fn counts(s: &Summary) -> String {
    format!(
        "{} ({} accepted, {} refused)",
        plural(s.records, "record", "records"),
        s.accepted,
        s.rejected
    )
}

/// The run and where it stands, as far as it is known: `; run T/S/R at revision V, PHASE`.
fn run(s: &Summary) -> String {
    let mut line = String::new();
    if let Some(id) = &s.identity {
        let _ = write!(
            line,
            "; run {}/{}/{} at revision {}",
            id.tenant, id.session, id.run, s.revision.0
        );
        if let Some(phase) = &s.phase {
            let _ = write!(line, ", {}", json(phase).trim_matches('"'));
        }
    }
    line
}

/// The text report for a validation of `file`:
///
/// - conforming: `FILE: conforming: N records (A accepted, R refused); run T/S/R at revision
///   V, PHASE; D dispatches, C commits`; then how the log is sealed, under which rules, and
///   what was verified; an `unproven:` line for each thing the validation could not prove (no
///   key, no anchor, no tool policy, not the log's own rules); and a note when the commit
///   window was exceeded;
/// - not judged: `FILE: not judged: N records (A accepted, R refused), J of them judged; run
///   T/S/R at revision V`, then
///   `line L: why`, with the kernel's verdict and the log's when they differ, then the lines
///   of a conforming log after its first;
/// - otherwise: `FILE:LINE[:COLUMN]: malformed|divergence: message`, then the kernel's and
///   the log's verdicts when the finding compares them.
pub fn report_text(file: &str, result: &Result<Summary, Finding>) -> String {
    let mut out = String::new();
    match result {
        Ok(s) => {
            match &s.not_judged {
                None => {
                    let _ = writeln!(
                        out,
                        "{file}: conforming: {}{}; {}, {}",
                        counts(s),
                        run(s),
                        plural(s.dispatches, "dispatch", "dispatches"),
                        plural(s.commits, "commit", "commits"),
                    );
                }
                Some(n) => {
                    let _ = writeln!(
                        out,
                        "{file}: not judged: {}, {} of them judged{}",
                        counts(s),
                        s.judged,
                        run(s)
                    );
                    let _ = writeln!(out, "line {}: {}", n.line, n.message());
                    if let Unjudged::Answer { expected, found } = &n.reason {
                        let _ = writeln!(out, "  expected (kernel): {expected}");
                        let _ = writeln!(out, "  found (log):       {found}");
                    }
                }
            }
            let _ = writeln!(out, "{}", sealing(s));
            for u in &s.unproven {
                let _ = writeln!(out, "unproven: {}", u.message());
            }
            if s.commit_window_exceeded {
                let _ = writeln!(
                    out,
                    "note: more than {w} commits: REC-4 was checked over every {w} consecutive \
                     commits; a key reused farther apart was not checked",
                    w = s.commit_window
                );
            }
        }
        Err(f) => {
            let class = match f.problem.class() {
                Class::Malformed => "malformed",
                Class::Divergence => "divergence",
            };
            let column = f.column.map(|c| format!(":{c}")).unwrap_or_default();
            let _ = writeln!(out, "{file}:{}{column}: {class}: {}", f.line, f.message());
            if let Some((expected, found)) = f.verdicts() {
                let _ = writeln!(out, "  expected (kernel): {expected}");
                let _ = writeln!(out, "  found (log):       {found}");
            }
        }
    }
    out
}

/// The JSON report for a validation of `file`, one object on one line: `file`, `status`
/// (`conforming`, `not_judged`, `divergence` or `malformed`), `exit_code`, and `summary` or
/// `finding`.
pub fn report_json(file: &str, result: &Result<Summary, Finding>) -> String {
    let report = match result {
        Ok(s) => serde_json::json!({
            "file": file,
            "status": if s.conforming() { "conforming" } else { "not_judged" },
            "exit_code": s.exit_code(),
            "summary": s,
        }),
        Err(f) => serde_json::json!({
            "file": file,
            "status": f.problem.class(),
            "exit_code": f.exit_code(),
            "finding": f.to_json(),
        }),
    };
    format!("{report}\n")
}
