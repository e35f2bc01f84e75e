//! `resumable check` and where its output goes: a reader that closes the pipe early, a full
//! disk, the grid of configurations for a CI matrix and the merge of its cells' reports, and
//! traces in the Informal Trace Format.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn resumable() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_resumable"));
    command.arg("check");
    command
}

fn check(args: &[&str]) -> Output {
    resumable().args(args).output().expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `check` with stdout a pipe whose reading end is already closed.
fn into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    resumable()
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("the binary runs")
}

#[test]
fn a_closed_pipe_ends_the_output_quietly_with_the_verdict_s_status() {
    for (args, status) in [
        (&["--list-variants"][..], 0),
        (&["--grid"][..], 0),
        (&["--variant", "retry-unknown-without-reconcile"][..], 1),
        (
            &[
                "--variant",
                "retry-unknown-without-reconcile",
                "--format",
                "json",
            ][..],
            1,
        ),
    ] {
        let o = into_closed_pipe(args);
        assert_eq!(o.status.code(), Some(status), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.is_empty(),
            "{args:?}: nothing to say about a closed pipe: {err}"
        );
    }
}

#[test]
#[cfg(target_os = "linux")]
fn a_full_disk_is_an_error_with_status_2() {
    for args in [
        &["--list-variants"][..],
        &["--grid"][..],
        &[
            "--variant",
            "retry-unknown-without-reconcile",
            "--format",
            "json",
        ][..],
    ] {
        let full = std::fs::File::create("/dev/full").expect("/dev/full opens");
        let o = resumable()
            .args(args)
            .stdout(full)
            .output()
            .expect("the binary runs");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
    }
}

// --- The grid and the merge -----------------------------------------------------------------

#[test]
fn the_grid_is_a_json_matrix_of_ordinary_checks() {
    let o = check(&["--grid"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        out.lines().count(),
        1,
        "one line, for a CI step's output: {out}"
    );
    let matrix: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let cells = matrix["include"].as_array().expect("an include list");
    assert!(cells.len() >= 10, "{}", cells.len());
    let mut names = std::collections::HashSet::new();
    for cell in cells {
        let name = cell["cell"].as_str().expect("a name");
        assert!(names.insert(name), "{name} twice");
        let args = cell["args"].as_str().expect("arguments");
        assert!(args.contains("--format json"), "{args}");
    }
    for name in ["kernel-default", "reference-default", "kernel-two-tenants"] {
        assert!(names.contains(name), "{name} missing");
    }
}

/// A scratch directory for this test binary's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resumable-check-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// Runs a check with `flags` (split at spaces) in JSON into `dir/name.json` and returns the
/// path.
fn cell(dir: &std::path::Path, name: &str, flags: &str) -> String {
    let args: Vec<&str> = flags.split(' ').chain(["--format", "json"]).collect();
    let o = check(&args);
    assert!(
        matches!(o.status.code(), Some(0..=4)),
        "{name}: {}",
        stderr(&o)
    );
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, &o.stdout).expect("the report is written");
    path.to_string_lossy().into_owned()
}

/// Small worlds that together exercise every property of the kernel, though none does alone:
/// each world's name and its flags, split at spaces.
const SMALL: [(&str, &str); 9] = [
    (
        "approval",
        "--losses 0 --duplicates 0 --query-unknown=false --max-time 3 --arg-changes 1 --renewals 1 --old-configs 1",
    ),
    (
        "direct-dedupe",
        "--program direct --approvers 0 --duplicates 0",
    ),
    (
        "direct-fence",
        "--program direct --approvers 0 --duplicates 0 --dedupes=false",
    ),
    (
        "side-effect-first",
        "--program side-effect-first --workers 1 --losses 0 --duplicates 0 --query-unknown=false --max-time 3",
    ),
    (
        "self-approval",
        "--self-approval --questions 1 --workers 1 --losses 0 --duplicates 0 --query-unknown=false --max-time 3",
    ),
    (
        "two-runs",
        "--runs 2 --cross-tenant --workers 1 --crashes 0 --losses 0 --duplicates 0 --query-unknown=false --max-time 0 --suspend-for 1",
    ),
    (
        "cancel",
        "--program direct --approvers 0 --crashes 0 --duplicates 0 --cancels 1 --operator",
    ),
    (
        "reuse",
        "--program three-calls --reuses 1 --crashes 0 --losses 0 --duplicates 0 --query-unknown=false",
    ),
    (
        "batch",
        "--program batch --workers 1 --losses 0 --duplicates 0 --query-unknown=false --max-time 0 --suspend-for 1",
    ),
];

#[test]
fn a_merge_passes_when_the_cells_together_exercise_every_property() {
    let dir = scratch("merge-pass");
    let files: Vec<String> = (SMALL.iter())
        .map(|(name, args)| cell(&dir, name, args))
        .collect();
    // Each cell alone leaves some property unexercised.
    for file in &files {
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        assert_eq!(report["exit_code"], 4, "{file}");
    }
    let mut args = vec!["--merge"];
    args.extend(files.iter().map(String::as_str));
    let o = check(&args);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("merged 9 checks"), "{out}");
    assert!(out.contains("result: pass"), "{out}");

    args.extend(["--format", "json"]);
    let o = check(&args);
    let merged: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(merged["schema"], "resumable-check-merge/1");
    assert_eq!(merged["cells"].as_array().map(Vec::len), Some(9));
    assert_eq!(merged["exit_code"], 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_merge_fails_on_a_violation_in_any_cell_and_is_unexercised_when_the_cells_fall_short() {
    let dir = scratch("merge-fail");
    let direct = cell(&dir, SMALL[1].0, SMALL[1].1);
    let o = check(&["--merge", &direct]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let broken = cell(&dir, "broken", "--variant retry-unknown-without-reconcile");
    let o = check(&["--merge", &direct, &broken]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    // Two subjects: each row says whose property it is.
    assert!(
        out.contains("retry-unknown-without-reconcile: REC-2"),
        "{out}"
    );
    assert!(out.contains("result: FAIL"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn merging_something_that_is_not_a_report_is_misuse() {
    let dir = scratch("merge-misuse");
    let text = dir.join("not-a-report.json");
    std::fs::write(&text, "{\"schema\": \"something-else/1\"}").unwrap();
    let o = check(&["--merge", &text.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("resumable-check/2"), "{}", stderr(&o));
    let o = check(&["--merge", &dir.join("missing.json").to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(dir);
}

// --- ITF --------------------------------------------------------------------------------------

#[test]
fn itf_traces_come_with_the_json_report_and_instead_of_the_numbered_steps() {
    let variant = ["--variant", "retry-unknown-without-reconcile"];
    let o = check(&[&variant[..], &["--format", "json", "--trace-format", "itf"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let violated = (report["properties"].as_array().expect("an array").iter())
        .find(|p| p["verdict"] == "violated")
        .expect("a violation");
    let itf = &violated["counterexample"]["itf"];
    assert_eq!(itf["#meta"]["format"], "ITF");
    let states = itf["states"].as_array().expect("states");
    let steps = violated["counterexample"]["steps"].as_u64().expect("steps");
    assert_eq!(states.len() as u64, steps + 1);
    assert_eq!(states[0]["#meta"]["index"], 0);
    assert_eq!(states[0]["action"], "init");
    assert!(states[0]["runs"][0]["revision"]["#bigint"].is_string());

    let o = check(&[&variant[..], &["--trace-format", "itf"]].concat());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("\"#meta\""), "{out}");
    assert!(out.contains("\"format\": \"ITF\""), "{out}");
}

#[test]
fn listing_the_grid_or_the_variants_takes_no_other_flag_and_a_merge_only_format() {
    for args in [
        &["--grid", "--runs", "2"][..],
        &["--list-variants", "--variant", "no-expiry"][..],
        &["--merge", "report.json", "--threads", "2"][..],
        &["--merge", "report.json", "--variant", "no-expiry"][..],
        &["--merge"][..],
    ] {
        let o = check(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!stderr(&o).is_empty(), "{args:?}: the misuse is explained");
    }
}
