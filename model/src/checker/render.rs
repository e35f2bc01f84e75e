//! The report as text for people: the property table, how much was explored, the figures,
//! then a numbered trace for each counterexample (and witness, when asked for), and the
//! result with what it rests on.

use super::report::{Cut, Ended, Kind, Outcome, Report, Trace, Verdict};
use super::Reduction;
use std::fmt::Write;

pub(crate) fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Always => "always",
        Kind::Sometimes => "sometimes",
    }
}

/// Failures in capitals, so they stand out in a long table.
pub(crate) fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Holds => "holds",
        Verdict::Violated => "VIOLATED",
        Verdict::Unexercised => "UNEXERCISED",
        Verdict::Unreached => "UNREACHED",
        Verdict::Incomplete => "incomplete",
        Verdict::Unjudged => "unjudged",
    }
}

fn cut_words(report: &Report, cut: Cut) -> String {
    let options = &report.options;
    match cut {
        Cut::Depth => match options.depth {
            Some(depth) => format!("the depth bound ({depth} steps)"),
            None => "the depth bound".to_owned(),
        },
        Cut::States => match options.max_states {
            Some(max) => format!("the state bound ({max} states)"),
            None => "the state bound".to_owned(),
        },
        Cut::Time => match options.timeout_secs {
            Some(secs) => format!("the time bound ({secs} s)"),
            None => "the time bound".to_owned(),
        },
        Cut::Memory => {
            let mut bounds = Vec::new();
            if let Some(mib) = options.max_memory_mib {
                bounds.push(format!("{mib:.0} MiB resident"));
            }
            if let Some(mib) = options.max_address_space_mib {
                bounds.push(format!("{mib:.0} MiB of address space, under ulimit -v"));
            }
            match bounds.is_empty() {
                true => "the memory bound".to_owned(),
                false => format!("the memory bound ({})", bounds.join(" or ")),
            }
        }
        Cut::Boundary => "the model's boundary".to_owned(),
    }
}

/// The property table: one line per property, names padded to one column.
pub(crate) fn table(out: &mut String, rows: &[(&str, Kind, Verdict)]) {
    let width = (rows.iter())
        .map(|(name, _, _)| name.chars().count())
        .chain([8])
        .max()
        .unwrap_or(8);
    // `write!` to a String cannot fail, hence the ignored results.
    let _ = writeln!(out, "{:<width$}  {:<9}  verdict", "property", "kind");
    for (name, kind, verdict) in rows {
        let _ = writeln!(
            out,
            "{name:<width$}  {:<9}  {}",
            kind_word(*kind),
            verdict_word(*verdict)
        );
    }
}

fn exploration_line(report: &Report) -> String {
    let exploration = &report.exploration;
    match exploration.ended {
        Ended::Exhausted => "complete: every reachable state checked".to_owned(),
        Ended::Decided => {
            "complete: stopped once every property had a counterexample or witness".to_owned()
        }
        Ended::Stopped => {
            let judged = (report.properties.iter())
                .filter(|p| p.verdict != Verdict::Unjudged)
                .count();
            format!(
                "stopped at the first violation, after every state at depth {} was checked: \
                 {judged} of {} properties judged, the rest unjudged (--keep-going explores on \
                 to judge every property)",
                report.stats.max_depth,
                report.properties.len()
            )
        }
        Ended::Cut => {
            let causes: Vec<String> = (exploration.cut_by.iter())
                .map(|cut| cut_words(report, *cut))
                .collect();
            format!(
                "INCOMPLETE: cut short by {}; no verdict of \"holds\" for an always \
                 property",
                causes.join(" and ")
            )
        }
    }
}

/// The whole report as text, ending with a newline.
pub(crate) fn text(report: &Report) -> String {
    let mut out = String::new();
    let rows: Vec<(&str, Kind, Verdict)> = (report.properties.iter())
        .map(|p| (p.name.as_str(), p.kind, p.verdict))
        .collect();
    table(&mut out, &rows);
    out.push('\n');
    figures(&mut out, report);
    traces(&mut out, report);
    out.push('\n');
    result(&mut out, report);
    out
}

/// The report with its counterexamples first, for a broken variant, where they are what a
/// reader came for: the traces, then the properties that were judged (those not judged are
/// counted, not listed), the figures and the result.
pub(crate) fn text_counterexample_first(report: &Report) -> String {
    let mut out = String::new();
    traces(&mut out, report);
    let mut out = out.trim_start_matches('\n').to_string();
    out.push('\n');
    let rows: Vec<(&str, Kind, Verdict)> = (report.properties.iter())
        .filter(|p| p.verdict != Verdict::Unjudged)
        .map(|p| (p.name.as_str(), p.kind, p.verdict))
        .collect();
    table(&mut out, &rows);
    let unjudged = report.properties.len() - rows.len();
    if unjudged > 0 {
        let _ = writeln!(
            out,
            "and {unjudged} more not judged: the search stopped at the depth of the first \
             violation (--keep-going judges every property)"
        );
    }
    out.push('\n');
    figures(&mut out, report);
    out.push('\n');
    result(&mut out, report);
    out
}

/// How the exploration ended, its states and its time.
fn figures(out: &mut String, report: &Report) {
    let stats = &report.stats;
    let options = &report.options;
    let _ = writeln!(out, "exploration: {}", exploration_line(report));
    let _ = writeln!(
        out,
        "states: {} generated, {} unique, {} checked; maximum depth {} steps",
        stats.generated, stats.unique, stats.checked, stats.max_depth
    );
    let memory = match stats.peak_memory_mib {
        Some(mib) => format!(", peak memory {mib:.0} MiB"),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "time: {:.3} s, {:.0} states/s ({} thread{}, symmetry {}{reduction}){memory}",
        stats.elapsed_secs,
        stats.states_per_second,
        options.threads,
        if options.threads == 1 { "" } else { "s" },
        if options.symmetry { "on" } else { "off" },
        reduction = match options.reduction {
            Reduction::None => String::new(),
            other => format!(", reduction {}", other.name()),
        },
    );
}

/// Every counterexample, then every witness, each after a blank line.
fn traces(out: &mut String, report: &Report) {
    for p in &report.properties {
        if let Some(trace) = &p.counterexample {
            out.push('\n');
            trace_text(out, "counterexample to", &p.name, trace);
        } else if p.verdict == Verdict::Violated {
            let _ = writeln!(
                out,
                "\ncounterexample to \"{}\": found at depth {}, not rebuilt: the time or \
                 memory bound ran out first",
                p.name,
                p.depth.unwrap_or(0)
            );
        }
    }
    for p in &report.properties {
        if let Some(trace) = &p.witness {
            out.push('\n');
            trace_text(out, "witness for", &p.name, trace);
        }
    }
}

fn result(out: &mut String, report: &Report) {
    let with = |verdict: Verdict| -> Vec<&str> {
        (report.properties.iter())
            .filter(|p| p.verdict == verdict)
            .map(|p| p.name.as_str())
            .collect()
    };
    let _ = match report.outcome {
        Outcome::Pass => writeln!(
            out,
            "result: pass: all {} properties hold",
            report.properties.len()
        ),
        Outcome::Fail => writeln!(
            out,
            "result: FAIL: violated: {}",
            with(Verdict::Violated).join("; ")
        ),
        Outcome::Unexercised => {
            let mut lines = Vec::new();
            for p in (report.properties.iter()).filter(|p| p.verdict == Verdict::Unexercised) {
                let missing: Vec<&str> = (p.partners.iter())
                    .filter(|name| {
                        report
                            .property(name)
                            .is_none_or(|q| q.verdict != Verdict::Holds)
                    })
                    .map(String::as_str)
                    .collect();
                lines.push(format!(
                    "  {}\n    never exercised: \"{}\" was not reached",
                    p.name,
                    missing.join("\", \"")
                ));
            }
            let lonely: Vec<&str> = (report.properties.iter())
                .filter(|q| q.verdict == Verdict::Unreached)
                .filter(|q| (report.properties.iter()).all(|p| !p.partners.contains(&q.name)))
                .map(|q| q.name.as_str())
                .collect();
            if !lonely.is_empty() {
                lines.push(format!("  unreached: {}", lonely.join("; ")));
            }
            writeln!(
                out,
                "result: UNEXERCISED: no violation, but not every property was exercised in \
                 this configuration, so not every property was checked:\n{}",
                lines.join("\n")
            )
        }
        Outcome::Incomplete => writeln!(
            out,
            "result: incomplete: no violation found, but the search was cut short"
        ),
    };
}

/// One trace as the text report prints it: a heading, then numbered steps, each with the
/// state after it; in ITF instead, when the trace carries it.
pub(super) fn trace_text(out: &mut String, what: &str, name: &str, trace: &Trace) {
    let _ = writeln!(
        out,
        "{what} \"{name}\": {} step{} (shortest)",
        trace.steps,
        if trace.steps == 1 { "" } else { "s" }
    );
    if let Some(itf) = &trace.itf {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(itf).unwrap_or_default()
        );
        return;
    }
    let number_width = trace.steps.to_string().len();
    for step in &trace.trace {
        let action = step.action.as_deref().unwrap_or("initial state");
        let _ = writeln!(out, "  {:>number_width$}. {action}", step.step);
        // A summary may take several lines (one per run, say): indent each alike.
        for line in step.state.lines() {
            let _ = writeln!(out, "  {:>number_width$}  {line}", "");
        }
    }
}
