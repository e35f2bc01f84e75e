//! `check --grid`: the configurations the heavier checks cover, as a JSON matrix a CI system
//! runs one job per cell; and `check --merge`: the cells' JSON reports folded into one.
//!
//! A cell is an ordinary `check` with flags: each configuration is spelled out as the flags
//! that differ from the default world, so a cell can be run, and reproduced, by hand.

use crate::output::{self, Format};
use resumable_model::checker::merge;
use resumable_model::config::Config;
use resumable_model::driving::Driving;
use resumable_model::variant::Variant;
use serde_json::{json, Value};
use std::process::ExitCode;

/// The configurations of the grid: the worlds of the default check (`Config::suite`), a
/// fencing and deduping tool with an operator, and the world that exposes each
/// broken variant, so that each variant is caught for its flaw and not for something its
/// world does to every lifecycle. Worlds that are the same are listed once.
pub fn configurations() -> Vec<(String, Config)> {
    let mut grid: Vec<(String, Config)> = (Config::suite().into_iter())
        .map(|(name, config)| (name.to_owned(), config))
        .collect();
    grid.push((
        "fencing-deduping-operator".to_owned(),
        Config {
            losses: 0,
            duplicates: 0,
            query_unknown: false,
            max_time: 3,
            query_fences: true,
            max_attempts: 3,
            operator: true,
            ..Config::default()
        },
    ));
    for variant in Variant::ALL {
        let config = Config::exposing(variant);
        if grid.iter().all(|(_, c)| *c != config) {
            grid.push((format!("exposing-{}", variant.name()), config));
        }
    }
    // Where each broken driving is exposed, driven honestly: the kernel holds there.
    for driving in Driving::BROKEN {
        let config = Config {
            driving: Driving::Honest,
            ..Config::exposing_driving(driving)
        };
        if grid.iter().all(|(_, c)| *c != config) {
            grid.push((format!("exposing-{}", driving.name()), config));
        }
    }
    grid
}

/// The flags that turn the default world into `config`.
pub fn flags(config: &Config) -> Vec<String> {
    let d = Config::default();
    let mut flags = Vec::new();
    let mut count = |name: &str, value: u8, default: u8| {
        if value != default {
            flags.push(format!("--{name}={value}"));
        }
    };
    count("runs", config.runs, d.runs);
    count("workers", config.workers, d.workers);
    count("crashes", config.crashes, d.crashes);
    count("approvers", config.approvers, d.approvers);
    count("losses", config.losses, d.losses);
    count("duplicates", config.duplicates, d.duplicates);
    count("cancels", config.cancels, d.cancels);
    count("reuses", config.reuses, d.reuses);
    count("outsider-moves", config.outsider_moves, d.outsider_moves);
    count("arg-changes", config.arg_changes, d.arg_changes);
    count("renewals", config.renewals, d.renewals);
    count("old-configs", config.old_configs, d.old_configs);
    count("questions", config.questions, d.questions);
    count("resource-start", config.resource_start, d.resource_start);
    count("max-attempts", config.max_attempts, d.max_attempts);
    count("suspend-for", config.suspend_for, d.suspend_for);
    count("approval-ttl", config.approval_ttl, d.approval_ttl);
    count(
        "reconcile-window",
        config.reconcile_window,
        d.reconcile_window,
    );
    count("max-time", config.max_time, d.max_time);
    count("max-revision", config.max_revision, d.max_revision);
    let mut switch = |name: &str, value: bool, default: bool| {
        if value != default {
            flags.push(format!("--{name}={value}"));
        }
    };
    switch("self-approval", config.self_approval, d.self_approval);
    switch(
        "edited-approvals",
        config.edited_approvals,
        d.edited_approvals,
    );
    switch("cross-tenant", config.cross_tenant, d.cross_tenant);
    switch("shared-resource", config.shared_resource, d.shared_resource);
    switch("dedupes", config.dedupes, d.dedupes);
    switch("query-fences", config.query_fences, d.query_fences);
    switch("query-unknown", config.query_unknown, d.query_unknown);
    switch("operator", config.operator, d.operator);
    switch("batch-verdicts", config.batch_verdicts, d.batch_verdicts);
    if let Some(field) = config.differs_in {
        flags.push(format!("--differs-in={field}"));
    }
    if config.program != d.program {
        flags.push(format!("--program={}", config.program.name()));
    }
    flags
}

/// The cells: the kernel and the reference machine in every configuration of the grid.
pub fn cells() -> Vec<(String, Vec<String>)> {
    let mut cells = Vec::new();
    for subject in ["kernel", "reference"] {
        for (name, config) in configurations() {
            let mut args = vec!["--subject".to_owned(), subject.to_owned()];
            args.extend(flags(&config));
            args.extend(["--format".to_owned(), "json".to_owned()]);
            cells.push((format!("{subject}-{name}"), args));
        }
    }
    cells
}

/// The matrix as GitHub Actions' `strategy.matrix` takes it (other CI systems take the same
/// list): one object per cell with its name and its arguments to `check`, on one line.
pub fn matrix() -> Value {
    let include: Vec<Value> = (cells().into_iter())
        .map(|(cell, args)| json!({ "cell": cell, "args": args.join(" ") }))
        .collect();
    json!({ "include": include })
}

/// `check --grid`.
pub fn print() -> ExitCode {
    output::finish(
        Format::Json,
        &format!("{}\n", matrix()),
        output::status::PASS,
    )
}

/// `check --merge FILES...`: reads each report (a default check's report counts as its
/// worlds' reports), folds them, prints the merge as text or
/// JSON, and exits by the rules of a single check.
pub fn merge_files(files: &[String], json: bool) -> ExitCode {
    let mut reports = Vec::with_capacity(files.len());
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) => return super::misuse(&format!("cannot read {file}: {e}")),
        };
        // The default check's report holds one report per world: each is a cell.
        let worlds = (serde_json::from_str::<Value>(&text).ok())
            .filter(|doc| doc["schema"] == super::suite::SUITE_SCHEMA)
            .and_then(|doc| doc["worlds"].as_array().cloned());
        let cells = match worlds {
            Some(worlds) => (worlds.iter())
                .map(|w| {
                    (
                        format!("{file}#{}", w["world"].as_str().unwrap_or("")),
                        w["report"].to_string(),
                    )
                })
                .collect(),
            None => vec![(file.clone(), text)],
        };
        for (source, text) in cells {
            match merge::parse(&source, &text) {
                Ok(report) => reports.push((source, report)),
                Err(e) => return super::misuse(&e.to_string()),
            }
        }
    }
    let merged = match merge::merge(&reports) {
        Ok(merged) => merged,
        Err(e) => return super::misuse(&e.to_string()),
    };
    let text = match json {
        true => format!("{}\n", merged.to_json()),
        false => merged.to_text(),
    };
    output::finish(
        if json { Format::Json } else { Format::Text },
        &text,
        merged.exit_code,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `check`'s arguments, as the command line parses them.
    #[derive(Parser)]
    struct Check {
        #[command(flatten)]
        args: super::super::Args,
    }

    fn parse(args: &[String]) -> super::super::Args {
        let argv = std::iter::once("check".to_owned()).chain(args.iter().cloned());
        match Check::try_parse_from(argv) {
            Ok(check) => check.args,
            Err(e) => panic!("{args:?}: {e}"),
        }
    }

    #[test]
    fn each_cell_s_flags_give_back_its_configuration() {
        let configurations = configurations();
        let cells = cells();
        assert_eq!(cells.len(), 2 * configurations.len());
        for ((name, args), (_, config)) in cells.iter().zip(configurations.iter().cycle()) {
            let parsed = parse(args);
            let setup = match parsed.model.setup(None) {
                Ok(setup) => setup,
                Err(e) => panic!("{name}: {e}"),
            };
            assert_eq!(setup.config, *config, "{name}: {args:?}");
        }
    }

    #[test]
    fn a_configuration_differing_in_every_field_is_spelled_out_in_full() {
        let d = Config::default();
        let every = Config {
            runs: 2,
            workers: 3,
            crashes: 2,
            approvers: 2,
            self_approval: true,
            edited_approvals: true,
            cross_tenant: true,
            differs_in: Some(resumable_kernel::IdentityField::Definition),
            dedupes: false,
            query_fences: true,
            query_unknown: false,
            operator: true,
            max_attempts: 3,
            losses: 2,
            duplicates: 2,
            cancels: 1,
            reuses: 1,
            outsider_moves: 1,
            arg_changes: 1,
            renewals: 1,
            old_configs: 1,
            questions: 1,
            program: resumable_model::config::Program::ThreeCalls,
            batch_verdicts: false,
            shared_resource: true,
            resource_start: 3,
            suspend_for: d.suspend_for + 1,
            approval_ttl: d.approval_ttl + 1,
            reconcile_window: d.reconcile_window + 1,
            max_time: d.max_time + 1,
            max_revision: d.max_revision + 1,
            depth_bound: None,
            // Not flags: only the per-run reduction sets them, in the worlds it makes.
            identity: 0,
            free_clock: false,
            foreign_commits: 0,
            driving: resumable_model::driving::Driving::Honest,
        };
        let parsed = parse(&flags(&every));
        assert_eq!(parsed.model.setup(None).map(|s| s.config).ok(), Some(every));
    }

    #[test]
    fn the_grid_holds_the_default_the_larger_worlds_and_each_exposing_one() {
        let names: Vec<String> = configurations().into_iter().map(|(n, _)| n).collect();
        for name in ["default", "two-tenants", "self-approval", "cancel", "reuse"] {
            assert!(names.iter().any(|n| n == name), "{name}: {names:?}");
        }
        for variant in Variant::ALL {
            let config = Config::exposing(variant);
            assert!(
                configurations().iter().any(|(_, c)| *c == config),
                "{variant}"
            );
        }
    }
}
