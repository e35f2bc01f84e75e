//! `resumable check`, run as a user runs it: the built binary, checking exit status (0 pass,
//! 1 violated, 2 misuse, 3 incomplete, 4 unexercised), what the report says, and the JSON
//! schema of spec/check-output.md. The binary is a debug build, so every check here is a
//! small world, or stops at its first violation.

use std::process::{Command, Output};

fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resumable"))
        .arg("check")
        .args(args)
        .output()
        .expect("the binary runs")
}

/// `check` with `flags`, split at spaces.
fn checked(flags: &str) -> Output {
    check(&flags.split(' ').collect::<Vec<_>>())
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `check` with `flags` and asserts its exit status; returns its stdout.
fn exits(flags: &str, code: i32) -> String {
    let o = checked(flags);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(code), "{flags}: {out}{}", stderr(&o));
    out
}

/// Runs `check` with `flags` in JSON and asserts its exit status; returns the report.
fn json_exits(flags: &str, code: i32) -> serde_json::Value {
    let o = checked(&format!("{flags} --format json"));
    assert_eq!(o.status.code(), Some(code), "{flags}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("stdout is one JSON document")
}

/// Asserts that the report `out` says each of `parts`.
fn says(out: &str, parts: &[&str]) {
    for part in parts {
        assert!(out.contains(part), "{part:?} missing from: {out}");
    }
}

/// The line of the report `out` that starts with `start`.
fn row<'a>(out: &'a str, start: &str) -> &'a str {
    (out.lines().find(|line| line.starts_with(start)))
        .unwrap_or_else(|| panic!("no row for {start}: {out}"))
}

/// Checks a variant in its exposing configuration and returns the report's text, asserting
/// it fails on a violated property whose ID the variant targets.
fn variant_fails_on(name: &str, property: &str) -> String {
    variant_fails_with(name, property, "")
}

/// [`variant_fails_on`] with more flags.
fn variant_fails_with(name: &str, property: &str, flags: &str) -> String {
    let out = exits(format!("--variant {name} {flags}").trim_end(), 1);
    // The header says which configuration was used and why.
    says(
        &out,
        &[
            &format!("the smallest configuration that exposes {name}"),
            &format!("counterexample to \"{property}"),
        ],
    );
    let row = row(&out, property);
    assert!(row.ends_with("VIOLATED"), "{row}");
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
    // REC-3 breaks first (the retry itself); EFF-1 (the double commit) takes more steps, so
    // only a check that keeps going past the first violation sees both.
    let out = variant_fails_with(
        "retry-without-contract",
        "EFF-1 the tool commits each key at most once",
        "--keep-going",
    );
    // The exposing world turns dedupe off.
    says(
        &out,
        &[
            "REC-3 a call goes again only under a key",
            "a tool that does not dedupe and whose query does not fence",
        ],
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
    let out = stdout(&checked("--variant retry-without-contract --dedupes"));
    says(
        &out,
        &["a tool that dedupes and whose query does not fence; program direct"],
    );
}

#[test]
fn list_variants_prints_every_variant_at_the_start_of_a_line() {
    let out = exits("--list-variants", 0);
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
        "identity-ignores-tenant",
        "identity-ignores-session",
        "identity-ignores-run",
        "identity-ignores-definition",
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
        "self-named-approver",
        "cancel-not-checkpointed",
        "cancel-expiry-forgets-effect",
        "late-result-recorded",
        "resume-record-from-checkpoint",
        "escalation-keeps-deadline",
        "decision-time-from-message",
        "tool-gets-node-arguments",
        "recorded-call-by-id-only",
        "run-from-old-config",
        "recorded-call-skips-its-interrupt",
    ] {
        assert!(
            out.lines()
                .any(|line| line.starts_with(&format!("{name} "))),
            "{name} missing from: {out}"
        );
    }
    let drivings = resumable_model::driving::Driving::BROKEN.len();
    assert_eq!(
        out.lines().count(),
        resumable_model::variant::Variant::ALL.len() + drivings,
        "one line per variant and per broken driving: {out}"
    );
}

#[test]
fn a_broken_driving_checks_the_kernel_driven_so_and_is_caught() {
    let out = exits("--variant decision-time-from-message --depth 8", 1);
    says(
        &out,
        &[
            "the kernel driven by workers that break CLK-2",
            "counterexample to \"CLK-2 a decision is judged at the driver's time",
            "stamped t0, the driver's clock at t2",
        ],
    );
}

#[test]
fn a_depth_bound_that_cuts_the_exploration_is_incomplete_not_a_pass() {
    let out = exits("--world default --depth 3", 3);
    says(
        &out,
        &[
            "INCOMPLETE: cut short by the depth bound",
            "result: incomplete",
        ],
    );
    assert!(!out.contains("result: pass"), "{out}");
}

#[test]
fn json_output_parses_with_the_documented_fields() {
    let report = json_exits("--variant retry-unknown-without-reconcile", 1);
    assert_eq!(report["schema"], "resumable-check/2");
    assert_eq!(report["model"], "retry-unknown-without-reconcile");
    assert_eq!(report["outcome"], "fail");
    assert_eq!(report["exit_code"], 1);
    // The configuration reported is the exposing one, not the default.
    assert_eq!(report["config"]["program"], "direct");
    assert_eq!(report["config"]["approvers"], 0);
    for field in [
        "threads",
        "symmetry",
        "reduction",
        "keep_going",
        "depth",
        "max_states",
        "timeout_secs",
        "max_memory_mib",
    ] {
        assert!(report["options"].get(field).is_some(), "options.{field}");
    }
    for field in ["complete", "ended", "cut_by"] {
        assert!(
            report["exploration"].get(field).is_some(),
            "exploration.{field}"
        );
    }
    for field in "generated unique checked max_depth elapsed_secs".split(' ') {
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
    assert_eq!(violated["depth"].as_u64(), Some(steps));
    assert!(trace["itf"].is_null());
    let entries = trace["trace"].as_array().expect("trace is an array");
    assert_eq!(entries.len() as u64, steps + 1);
    assert!(entries[0]["action"].is_null());
    assert!(entries[1]["action"].is_string());
    assert!(entries[1]["state"].is_string());
}

#[test]
fn misuse_exits_2_and_says_what_is_wrong() {
    for (flags, says) in [
        ("--variant no-such-variant", "no-such-variant"),
        ("--workers 9", "workers must be between 1 and 4"),
        ("--runs two", "invalid value 'two'"),
        ("--subject kernel --variant no-expiry", "--subject kernel"),
        ("--max-memory plenty", "not a size"),
        // The per-run reduction where it does not apply.
        ("--reduction per-run", "give --runs 2"),
        ("--runs 1 --reduction per-run", "needs two runs"),
        (
            "--runs 2 --cross-tenant true --reduction per-run",
            "across tenants",
        ),
    ] {
        let o = checked(flags);
        assert_eq!(o.status.code(), Some(2), "{flags}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{flags}: {}", stderr(&o));
    }
}

// --- Never a vacuous pass -------------------------------------------------------------------

#[test]
fn a_world_whose_clock_never_moves_exits_4_naming_what_it_did_not_exercise() {
    // No time passes, so nothing expires: the clock's properties are never exercised, and
    // a lifecycle that never expires anything cannot be told from one that does.
    for variant in ["no-expiry", "approvals-never-expire"] {
        let out = exits(&format!("--variant {variant} --max-time 0"), 4);
        says(
            &out,
            &[
                "result: UNEXERCISED",
                "never exercised: \"LIVE-1 a suspension expires\" was not reached",
            ],
        );
        for start in [
            "LIVE-1 every suspension is left within its bound",
            "RES-5 no resume is accepted after the suspension expired",
            "APR-2 an expired decision is never accepted",
        ] {
            let line = row(&out, start);
            assert!(line.ends_with("UNEXERCISED"), "{variant}: {line}");
        }
        assert!(!out.contains("result: pass"), "{out}");
    }
}

#[test]
fn unexercised_properties_are_named_in_the_json_report() {
    let report = json_exits("--variant no-expiry --max-time 0", 4);
    assert_eq!(report["outcome"], "unexercised");
    assert_eq!(report["exit_code"], 4);
    let live = (report["properties"].as_array().expect("an array").iter())
        .find(|p| p["name"] == "LIVE-1 every suspension is left within its bound")
        .expect("LIVE-1 is reported");
    assert_eq!(live["verdict"], "unexercised");
    assert_eq!(live["partners"][0], "LIVE-1 a suspension expires");
}

// --- Stop at the first violation, or keep going ---------------------------------------------

#[test]
fn a_violation_stops_the_check_at_its_depth_and_says_what_was_not_judged() {
    let out = exits("--variant double-suspend", 1);
    says(
        &out,
        &[
            "exploration: stopped at the first violation",
            "--keep-going",
            // The report points to the variant's story.
            "spec/counterexamples.md#double-suspend",
        ],
    );
    let sus_2 = row(&out, "SUS-2 a suspend while suspended is refused");
    assert!(sus_2.ends_with("VIOLATED"), "{sus_2}");
    // The properties not judged are counted after the counterexample, not listed one by one.
    assert!(!out.lines().any(|l| l.ends_with("  unjudged")), "{out}");
    assert!(out.contains("more not judged"), "{out}");
    // The counterexample comes first.
    let trace = out
        .find("counterexample to \"SUS-2")
        .expect("its counterexample");
    assert!(
        trace < out.find("exploration:").expect("the figures"),
        "{out}"
    );
}

#[test]
fn keep_going_judges_every_property_past_the_first_violation() {
    let judged = |extra: &str| {
        let report = json_exits(
            &format!("--variant retry-unknown-without-reconcile{extra}"),
            1,
        );
        let unjudged = (report["properties"].as_array().expect("an array").iter())
            .filter(|p| p["verdict"] == "unjudged")
            .count();
        (report["exploration"]["ended"].clone(), unjudged)
    };
    let (ended, unjudged) = judged("");
    assert_eq!(ended, "stopped");
    assert!(unjudged > 0);
    let (ended, unjudged) = judged(" --keep-going");
    assert_ne!(ended, "stopped");
    assert_eq!(unjudged, 0);
}

#[test]
fn partial_order_reduction_judges_alike_and_is_reported() {
    // A cancel while the call is in flight, no crash: the reduction applies, the variant is
    // caught either way, with the same verdict for every property and as short a trace.
    let report = |reduction: &str| {
        let flags = format!("--variant cancel-ends-unsettled --keep-going --reduction {reduction}");
        json_exits(&flags, 1)
    };
    let (none, por) = (report("none"), report("por"));
    assert_eq!(none["options"]["reduction"], "none");
    assert_eq!(por["options"]["reduction"], "por");
    let properties = |r: &serde_json::Value| r["properties"].as_array().expect("an array").clone();
    for (a, b) in properties(&none).iter().zip(&properties(&por)) {
        assert_eq!(a["name"], b["name"]);
        assert_eq!(a["verdict"], b["verdict"], "{}", a["name"]);
        if let Some(before) = a["counterexample"]["steps"].as_u64() {
            let after = b["counterexample"]["steps"]
                .as_u64()
                .expect("a counterexample");
            assert!(after <= before, "{}", a["name"]);
        }
    }
    let unique = |r: &serde_json::Value| r["stats"]["unique"].as_u64().expect("a count");
    assert!(unique(&por) < unique(&none));
}

#[test]
fn the_per_run_reduction_checks_each_run_alone_and_judges_as_the_whole() {
    // Two runs of the direct program, no crash: the whole world and its two one-run worlds
    // (each run under its own identity, a free clock) give every property the same verdict.
    let flags = "--runs 2 --program direct --crashes 0 --keep-going";
    let json = |extra: &str| {
        let o = checked(&format!("{flags}{extra} --format json"));
        let doc = serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("JSON");
        (o.status.code(), doc)
    };
    let (whole_code, whole) = json("");
    let (code, reduced) = json(" --reduction per-run");
    assert_eq!(code, whole_code);
    assert_eq!(reduced["schema"], "resumable-check-suite/1");
    let worlds = reduced["worlds"].as_array().expect("worlds");
    let names: Vec<&str> = worlds.iter().filter_map(|w| w["world"].as_str()).collect();
    assert_eq!(names, ["run-0", "run-1"]);
    for (i, w) in worlds.iter().enumerate() {
        let config = &w["report"]["config"];
        assert_eq!(config["runs"], 1);
        assert_eq!(config["identity"], i);
        assert_eq!(config["free_clock"], true);
    }
    let verdicts = |props: &serde_json::Value| -> Vec<(String, String)> {
        (props.as_array().expect("properties").iter())
            .map(|p| (p["name"].to_string(), p["verdict"].to_string()))
            .collect()
    };
    assert_eq!(
        verdicts(&reduced["merged"]["properties"]),
        verdicts(&whole["properties"])
    );
    let text = stdout(&checked(&format!("{flags} --reduction per-run")));
    says(
        &text,
        &["by the per-run reduction", "run-1: a world of 1 run"],
    );
}

#[test]
fn a_two_run_check_cut_short_points_to_the_per_run_reduction() {
    let o = checked("--runs 2 --max-states 50");
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(stderr(&o).contains("--reduction per-run"), "{}", stderr(&o));
    // One run, or a pass, says nothing of it.
    let o = checked("--runs 1 --max-states 50");
    assert_eq!(o.status.code(), Some(3));
    assert!(!stderr(&o).contains("per-run"), "{}", stderr(&o));
}

// --- The default check -------------------------------------------------------------------------

#[test]
fn the_default_check_runs_its_seventeen_worlds_and_merges_them() {
    // Bounded by depth so it stays short in debug; every world is still checked. The full
    // default check, which must pass with every property exercised, is CI's main job
    // (`cargo run --release -- check`, about four seconds).
    let o = checked("--depth 8 --format json");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(doc["schema"], "resumable-check-suite/1");
    let worlds: Vec<&str> = (doc["worlds"].as_array().expect("worlds").iter())
        .map(|w| w["world"].as_str().expect("a name"))
        .collect();
    assert_eq!(
        worlds,
        [
            "default",
            "self-approval",
            "two-tenants",
            "cross-tenant",
            "cross-session",
            "cross-run",
            "cross-definition",
            "two-runs-crash",
            "shared-resource",
            "cancel",
            "reuse",
            "batch",
            "batch-crash",
            "stale-checkpoint",
            "no-dedupe",
            "fencing",
            "edited-and-moved"
        ]
    );
    // Cut by the depth bound, the merge says incomplete, never pass.
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(doc["merged"]["outcome"], "incomplete");
    // Its report merges with other checks: each world is a cell.
    let dir = std::env::temp_dir().join(format!("resumable-suite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let file = dir.join("suite.json");
    std::fs::write(&file, &o.stdout).expect("written");
    let o = check(&["--merge", &file.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    says(&stdout(&o), &["merged 17 checks", "suite.json#reuse"]);
}

#[test]
fn one_world_of_the_default_check_is_checked_alone_with_world() {
    let out = stdout(&checked("--world reuse --depth 6"));
    says(
        &out,
        &[
            "the world reuse of the default check",
            "program three-calls",
        ],
    );
    let o = checked("--world nowhere");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_variant_is_caught_in_the_world_of_the_default_check_named() {
    // The five variants no world of the default check reached before the tool's contracts,
    // the stale checkpoint, the edited approval and the moved resource had worlds of their own.
    for (variant, world, rule) in [
        ("no-revision-check", "stale-checkpoint", "RES-"),
        ("retry-without-contract", "no-dedupe", "REC-3"),
        ("retry-same-key-on-fence", "fencing", "REC-3"),
        ("approval-not-bound-to-args", "edited-and-moved", "APR-1"),
        ("approval-ignores-resource", "edited-and-moved", "RES-3"),
    ] {
        let out = exits(&format!("--variant {variant} --world {world}"), 1);
        says(
            &out,
            &[
                &format!("the world {world} of the default check"),
                &format!("counterexample to \"{rule}"),
            ],
        );
    }
}

// --- Bounds -----------------------------------------------------------------------------------

#[test]
fn a_memory_bound_crossed_exits_3_with_a_complete_json_report() {
    let o = checked("--world default --max-memory 1M --format json");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one complete JSON document");
    assert_eq!(report["outcome"], "incomplete");
    assert_eq!(
        report["exploration"]["cut_by"],
        serde_json::json!(["memory"])
    );
    assert_eq!(report["options"]["max_memory_mib"], 1.0);
    assert!(report["stats"]["peak_memory_mib"].is_number());
    let properties = report["properties"].as_array().expect("an array");
    assert!(properties
        .iter()
        .all(|p| p["verdict"] != "holds" || p["kind"] == "sometimes"));
}

#[test]
fn a_depth_bound_gives_the_same_figures_on_two_threads_every_time() {
    let figures = |threads: &str| {
        let report = json_exits(
            &format!("--world default --depth 12 --threads {threads}"),
            3,
        );
        let stats = &report["stats"];
        (
            stats["unique"].clone(),
            stats["generated"].clone(),
            stats["max_depth"].clone(),
        )
    };
    let one = figures("1");
    assert_eq!(one.2, 12);
    for _ in 0..3 {
        assert_eq!(figures("2"), one);
    }
}
