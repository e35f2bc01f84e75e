//! `check` without any flag about the world: every world of the default check
//! (`Config::suite`), one after the other, folded into one verdict as `check --merge` folds a
//! grid's cells. Each `always` property must hold in every world and each `sometimes` partner
//! be reached in one, so no property passes for want of a world that can reach it.

use super::{check_world, describe, misuse, Args, Format, Setup};
use crate::output;
use resumable_model::checker::merge;
use resumable_model::config::Config;
use resumable_model::Kernel;
use serde_json::json;
use std::process::ExitCode;
use std::time::Duration;

/// The `schema` field of the default check's JSON report.
pub const SUITE_SCHEMA: &str = "resumable-check-suite/1";

/// Checks each world of the suite with the subject and the exploration flags given, prints
/// the merged verdict (and, in full, the report of each world that was violated or cut
/// short), and exits as a single check would.
pub fn run(args: &Args, timeout: Option<Duration>) -> ExitCode {
    let base = match args.model.setup(args.depth) {
        Ok(setup) => setup,
        Err(message) => return misuse(&message),
    };
    let worlds = Config::suite();
    let heading = format!(
        "checking {} in the {} worlds of the default check (each property must hold in \
         every world and be exercised in one; `--world NAME` checks one):\n",
        base.name,
        worlds.len()
    );
    let worlds = (worlds.into_iter())
        .map(|(name, config)| {
            let origin = format!("the world {name} of the default check");
            (name, config, origin)
        })
        .collect();
    check_worlds(args, timeout, &base, heading, worlds)
}

/// `check --runs 2 --reduction per-run`: the two-run world of `setup` checked as one world
/// per run (`Config::per_run`, spec/check-output.md, "The per-run reduction"), folded as the
/// default check's worlds are; the exploration flags apply to each world, as there.
pub fn per_run(args: &Args, timeout: Option<Duration>, setup: Setup) -> ExitCode {
    let worlds = match setup.config.per_run() {
        Ok(worlds) => worlds,
        Err(e) => return misuse(&e.to_string()),
    };
    let heading = format!(
        "checking {} in {}\nconfiguration: {}\nby the per-run reduction: each run alone in a \
         world of its own, with every worker and budget and a clock that may pass at any step \
         (each property must hold in both and be exercised in one; spec/check-output.md, \
         \"The per-run reduction\"):\n",
        setup.name,
        describe(&setup.config),
        setup.origin
    );
    let worlds = (worlds.into_iter())
        .map(|(name, config)| {
            let origin = format!("{name} of the per-run reduction of {}", setup.origin);
            (name, config, origin)
        })
        .collect();
    check_worlds(args, timeout, &setup, heading, worlds)
}

/// Checks each of `worlds` (name, configuration, where it comes from) with the subject of
/// `base`, folds the reports and prints the merged verdict.
fn check_worlds(
    args: &Args,
    timeout: Option<Duration>,
    base: &Setup,
    heading: String,
    worlds: Vec<(&str, Config, String)>,
) -> ExitCode {
    let text = args.format == Format::Text;
    if text {
        let mut heading = heading;
        for (name, config, _) in &worlds {
            heading.push_str(&format!("  {name}: {}\n", describe(config)));
        }
        heading.push('\n');
        if let Err(output::Ended::Failed(e)) = output::print(&heading) {
            return misuse(&format!("cannot write the output: {e}"));
        }
    }
    let mut reports = Vec::with_capacity(worlds.len());
    for (name, config, origin) in worlds {
        output::note(&format!("world {name}"));
        let setup = Setup {
            config: Config {
                depth_bound: args.depth,
                ..config
            },
            origin,
            ..base.clone()
        };
        let report = match setup.lifecycle {
            None => check_world(Kernel, &setup, args, timeout),
            Some(reference) => check_world(reference, &setup, args, timeout),
        };
        match report {
            Ok(report) => reports.push((name.to_owned(), report)),
            Err(message) => return misuse(&format!("world {name}: {message}")),
        }
    }
    let merged = match merge::merge(&reports) {
        Ok(merged) => merged,
        Err(e) => return misuse(&e.to_string()),
    };
    // A world's own report matters when it holds what the merge cannot show: a
    // counterexample, or the bound that cut it short.
    let telling = |r: &resumable_model::checker::Report| r.exit_code == 1 || r.exit_code == 3;
    let out = if text {
        let mut out = String::new();
        for (name, report) in reports.iter().filter(|(_, r)| telling(r)) {
            out.push_str(&format!("== world {name}\n{}\n", report.to_text()));
        }
        out + &merged.to_text()
    } else {
        let reports: Vec<serde_json::Value> = (reports.iter())
            .map(|(name, r)| json!({ "world": name, "report": r }))
            .collect();
        let doc = json!({ "schema": SUITE_SCHEMA, "merged": merged, "worlds": reports });
        format!("{doc:#}\n")
    };
    output::finish(args.format, &out, merged.exit_code)
}
