//! `resumable check`, run as a user runs it: the built binary, checking exit status (0 pass,
//! 1 fail, 2 misuse, 3 incomplete), what the report says, and the JSON schema of
//! spec/check-output.md. The binary is a debug build, so every check here is a small world.

use std::process::{Command, Output};

fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resumable"))
        .arg("check")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_default_world_passes_on_a_complete_exploration() {
    let o = check(&[]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("exploration: complete"), "{out}");
    assert!(out.contains("result: pass"), "{out}");
    assert!(
        out.contains("configuration: the default configuration"),
        "{out}"
    );
    assert!(!out.contains("VIOLATED"), "{out}");
}

/// Checks a variant in its exposing configuration and returns the report's text, asserting
/// it fails on a violated property whose ID the variant targets.
fn variant_fails_on(name: &str, property: &str) -> String {
    let o = check(&["--variant", name]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(
        out.contains(&format!("the smallest configuration that exposes {name}")),
        "the header says which configuration was used and why: {out}"
    );
    let row = out
        .lines()
        .find(|line| line.starts_with(property))
        .unwrap_or_else(|| panic!("no row for {property}: {out}"));
    assert!(row.ends_with("VIOLATED"), "{row}");
    assert!(
        out.contains(&format!("counterexample to \"{property}")),
        "{out}"
    );
    out
}

#[test]
fn a_restart_that_redispatches_an_unknown_outcome_fails_rec_2() {
    variant_fails_on(
        "retry-unknown-without-reconcile",
        "REC-2 an unknown outcome is never dispatched again",
    );
}

#[test]
fn a_retry_on_a_tool_that_neither_dedupes_nor_fences_fails_eff_1_and_rec_3() {
    let out = variant_fails_on(
        "retry-without-contract",
        "EFF-1 the tool commits each key at most once",
    );
    assert!(
        out.contains("REC-3 a call goes again only under a key"),
        "{out}"
    );
    assert!(
        out.contains("a tool that does not dedupe and whose query does not fence"),
        "the exposing world turns dedupe off: {out}"
    );
}

#[test]
fn a_retry_under_a_fenced_key_fails_rec_3() {
    variant_fails_on(
        "retry-same-key-on-fence",
        "REC-3 a call goes again only under a key",
    );
}

#[test]
fn a_stale_checkpoint_is_caught_in_the_world_that_exposes_it_not_passed_in_the_default() {
    // The default world has one crash, so no stale checkpoint can match the run in every
    // field but its revision: checking this variant there would pass. `--variant` must
    // start from the exposing world, with a second crash.
    let out = variant_fails_on(
        "no-revision-check",
        "RES-3 a stale revision is never resumed",
    );
    assert!(out.contains("2 crashes"), "{out}");
}

#[test]
fn flags_given_with_a_variant_apply_on_top_of_its_exposing_configuration() {
    // The exposing world of retry-without-contract turns dedupe off; --dedupes turns it back
    // on, and everything else stays as the exposing world has it (program direct).
    let o = check(&["--variant", "retry-without-contract", "--dedupes"]);
    let out = stdout(&o);
    assert!(
        out.contains("a tool that dedupes and whose query does not fence; program direct"),
        "{out}"
    );
}

#[test]
fn list_variants_prints_every_variant_at_the_start_of_a_line() {
    let o = check(&["--list-variants"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0));
    for name in [
        "no-revision-check",
        "double-suspend",
        "approval-not-bound-to-args",
        "retry-unknown-without-reconcile",
        "retry-without-contract",
        "retry-fresh-key-on-dedupe",
        "retry-same-key-on-fence",
        "identity-after-revision",
        "no-identity-check",
        "approvals-never-expire",
        "self-approval-allowed",
        "rerun-step-on-resume",
        "deny-leaves-running",
        "no-expiry",
        "resource-blocks-answers",
        "approval-ignores-resource",
        "cancel-lost-on-escalation",
        "cancel-ends-unsettled",
        "last-call-only-key-check",
    ] {
        assert!(
            out.lines()
                .any(|line| line.starts_with(&format!("{name} "))),
            "{name} missing from: {out}"
        );
    }
    assert_eq!(out.lines().count(), 19, "one line per variant: {out}");
}

#[test]
fn an_unknown_variant_is_misuse() {
    let o = check(&["--variant", "no-such-variant"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-variant"), "{}", stderr(&o));
}

#[test]
fn a_value_out_of_range_is_misuse_naming_the_field() {
    let o = check(&["--workers", "9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("workers must be between 1 and 4"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_value_that_is_not_a_number_is_misuse() {
    let o = check(&["--runs", "two"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_variant_of_the_kernel_is_misuse() {
    let o = check(&["--subject", "kernel", "--variant", "no-expiry"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--subject kernel"), "{}", stderr(&o));
}

#[test]
fn a_depth_bound_that_cuts_the_exploration_is_incomplete_not_a_pass() {
    let o = check(&["--depth", "3"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(3), "{out}{}", stderr(&o));
    assert!(
        out.contains("INCOMPLETE: cut short by the depth bound"),
        "{out}"
    );
    assert!(out.contains("result: incomplete"), "{out}");
    assert!(!out.contains("result: pass"), "{out}");
}

#[test]
fn json_output_parses_with_the_documented_fields() {
    let o = check(&[
        "--variant",
        "retry-unknown-without-reconcile",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert_eq!(report["schema"], "resumable-check/1");
    assert_eq!(report["model"], "retry-unknown-without-reconcile");
    assert_eq!(report["outcome"], "fail");
    assert_eq!(report["exit_code"], 1);
    // The configuration reported is the exposing one, not the default.
    assert_eq!(report["config"]["program"], "direct");
    assert_eq!(report["config"]["approvers"], 0);
    for field in ["threads", "search", "symmetry", "depth", "max_states"] {
        assert!(report["options"].get(field).is_some(), "options.{field}");
    }
    for field in ["complete", "ended", "cut_by"] {
        assert!(
            report["exploration"].get(field).is_some(),
            "exploration.{field}"
        );
    }
    for field in [
        "generated",
        "unique",
        "checked",
        "max_depth",
        "elapsed_secs",
    ] {
        assert!(report["stats"][field].is_number(), "stats.{field}");
    }
    let properties = report["properties"]
        .as_array()
        .expect("properties is an array");
    let violated = properties
        .iter()
        .find(|p| p["verdict"] == "violated")
        .expect("a property is violated");
    assert!(violated["name"]
        .as_str()
        .is_some_and(|n| n.starts_with("REC-")));
    assert!(matches!(violated["kind"].as_str(), Some("always")));
    let trace = &violated["counterexample"];
    let steps = trace["steps"].as_u64().expect("steps is a number");
    assert_eq!(trace["shortest"], true);
    let entries = trace["trace"].as_array().expect("trace is an array");
    assert_eq!(entries.len() as u64, steps + 1);
    assert!(entries[0]["action"].is_null());
    assert!(entries[1]["action"].is_string());
    assert!(entries[1]["state"].is_string());
}
