//! The report as text for people: the property table, how much was explored, the figures,
//! then a numbered trace for each counterexample (and witness, when asked for).

use super::{Cut, Ended, Kind, Outcome, Report, Trace, Verdict};
use std::fmt::Write;

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Always => "always",
        Kind::Sometimes => "sometimes",
    }
}

fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Holds => "holds",
        Verdict::Violated => "VIOLATED",
        Verdict::Unreached => "UNREACHED",
        Verdict::Incomplete => "incomplete",
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
        Cut::Boundary => "the model's boundary".to_owned(),
    }
}

/// The whole report as text, ending with a newline.
pub(crate) fn text(report: &Report) -> String {
    let mut out = String::new();
    let width = (report.properties.iter())
        .map(|p| p.name.chars().count())
        .chain([8])
        .max()
        .unwrap_or(8);
    // `write!` to a String cannot fail, hence the ignored results.
    let _ = writeln!(out, "{:<width$}  {:<9}  verdict", "property", "kind");
    for p in &report.properties {
        let _ = writeln!(
            out,
            "{:<width$}  {:<9}  {}",
            p.name,
            kind_word(p.kind),
            verdict_word(p.verdict)
        );
    }
    out.push('\n');

    let exploration = &report.exploration;
    let ended = match exploration.ended {
        Ended::Exhausted => "complete: every reachable state checked".to_owned(),
        Ended::Decided => {
            "complete: stopped once every property had a counterexample or witness".to_owned()
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
    };
    let stats = &report.stats;
    let options = &report.options;
    let _ = writeln!(out, "exploration: {ended}");
    let _ = writeln!(
        out,
        "states: {} generated, {} unique, {} checked; maximum depth {} steps",
        stats.generated, stats.unique, stats.checked, stats.max_depth
    );
    let _ = writeln!(
        out,
        "time: {:.3} s, {:.0} states/s ({} thread{}, {}, symmetry {})",
        stats.elapsed_secs,
        stats.states_per_second,
        options.threads,
        if options.threads == 1 { "" } else { "s" },
        match options.search {
            super::Search::Bfs => "breadth-first",
            super::Search::Dfs => "depth-first",
        },
        if options.symmetry { "on" } else { "off" }
    );

    for p in &report.properties {
        if let Some(trace) = &p.counterexample {
            out.push('\n');
            trace_text(&mut out, "counterexample to", &p.name, trace);
        }
    }
    for p in &report.properties {
        if let Some(trace) = &p.witness {
            out.push('\n');
            trace_text(&mut out, "witness for", &p.name, trace);
        }
    }

    let failed: Vec<&str> = (report.properties.iter())
        .filter(|p| matches!(p.verdict, Verdict::Violated | Verdict::Unreached))
        .map(|p| p.name.as_str())
        .collect();
    out.push('\n');
    let _ = match report.outcome {
        Outcome::Pass => writeln!(
            out,
            "result: pass: all {} properties hold",
            report.properties.len()
        ),
        Outcome::Fail => writeln!(out, "result: FAIL: {}", failed.join("; ")),
        Outcome::Incomplete => writeln!(
            out,
            "result: incomplete: no violation found, but the search was cut short"
        ),
    };
    out
}

/// One trace as the text report prints it: a heading, then numbered steps, each with the
/// state after it. Public through [`super::PropertyReport::counterexample_text`].
pub(super) fn trace_text(out: &mut String, what: &str, name: &str, trace: &Trace) {
    let length = if trace.shortest {
        "shortest".to_owned()
    } else {
        format!(
            "not shortened: the time bound ran out; {} steps as found",
            trace.unminimised_steps
        )
    };
    let _ = writeln!(
        out,
        "{what} \"{name}\": {} step{} ({length})",
        trace.steps,
        if trace.steps == 1 { "" } else { "s" }
    );
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
