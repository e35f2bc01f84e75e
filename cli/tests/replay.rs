//! `resumable replay`, run as a user runs it: the built binary, on good and bad scenarios.

use resumable_testkit::process::{assert_fails, assert_fails_starting, dev_full, run};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const HEADER: &str = r#"{"scenario": "t", "format": 1, "shows": ["SUS-2"], "description": "A test scenario.", "run": {"tenant": "tenant-a", "session": "s-1", "run": "run-1", "definition": "demo@1", "operator": "ops", "reconcile_window": 100, "created_at": 0}}"#;

fn seed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/scenarios/seed.jsonl")
}

fn replay(args: &[&str], stdin: &[u8]) -> Output {
    let args: Vec<&str> = ["replay"].iter().chain(args).copied().collect();
    run(env!("CARGO_BIN_EXE_resumable"), &args, stdin)
}

/// Replays `bytes` from a temporary file named after the test; returns the output and the
/// file's path as the binary prints it.
fn replay_file(name: &str, bytes: &[u8]) -> (Output, String) {
    let dir = std::env::temp_dir().join(format!("resumable-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, bytes).expect("the scenario is written");
    let shown = path.display().to_string();
    let out = replay(&[&shown], b"");
    let _ = std::fs::remove_file(&path);
    (out, shown)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Asserts that a replay exited 0; returns its trace.
fn traced(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    stdout(out)
}

/// Asserts exit status 2, an empty stdout and exactly one line on stderr that starts with
/// `error: FILE:LINE` and contains `what`.
fn assert_malformed(name: &str, bytes: &[u8], line: &str, what: &str) {
    let (out, path) = replay_file(name, bytes);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let prefix = format!("error: {path}:{line}");
    assert!(err.starts_with(&prefix), "{err:?} starts with {prefix:?}");
    assert!(err.contains(what), "{err:?} contains {what:?}");
}

#[test]
fn replay_of_the_seed_prints_the_trace_and_exits_zero() {
    let out = replay(&[seed().to_str().expect("a UTF-8 path")], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("scenario seed (format 1)"), "{text}");
    assert!(text.contains("rejected already_suspended"));
    assert!(text.contains("dispatch publish:demo key idem-run-approval#0"));
    assert!(text.contains("9 inputs: 4 accepted, 5 rejected"));
    assert!(out.stderr.is_empty());
}

#[test]
fn replay_in_json_prints_one_object_per_step() {
    let out = replay(
        &[seed().to_str().expect("a UTF-8 path"), "--format", "json"],
        b"",
    );
    let text = traced(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 9);
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("{{\"scenario\":\"seed\",\"step\":{}", i + 1)),
            "{line}"
        );
    }
    assert!(lines[1].contains("\"verdict\":\"already_suspended\""));
}

#[test]
fn replay_reads_the_scenario_from_stdin_with_a_dash() {
    let bytes = std::fs::read(seed()).expect("the seed scenario");
    let text = traced(&replay(&["-"], &bytes));
    assert!(text.starts_with("scenario seed"), "{text}");
}

#[test]
fn replay_of_a_rejection_exits_zero_because_rejections_are_trace_content() {
    let text = format!("{HEADER}\n{{\"at\": 1, \"kind\": \"expire\"}}\n");
    let (out, _) = replay_file("rejection", text.as_bytes());
    let trace = traced(&out);
    assert!(trace.contains("rejected not_suspended"), "{trace}");
}

#[test]
fn replay_exits_one_when_a_verdict_differs_from_its_expect() {
    let text = format!("{HEADER}\n{{\"at\": 1, \"kind\": \"expire\", \"expect\": \"accepted\"}}\n");
    let (out, path) = replay_file("unmet", text.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("UNEXPECTED: the scenario expects accepted"));
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "unexpected: {path}:2: step 1 expected accepted, the kernel answered not_suspended"
        )
    );
}

#[test]
fn replay_of_a_line_that_is_not_json_names_line_and_column() {
    let text = format!("{HEADER}\n{{\"at\": 1, \"kind\": \n");
    assert_malformed("not-json", text.as_bytes(), "2:", "not JSON");
}

#[test]
fn replay_of_a_field_with_the_wrong_type_names_the_line() {
    let text = format!("{HEADER}\n{{\"at\": \"soon\", \"kind\": \"expire\"}}\n");
    assert_malformed(
        "wrong-type",
        text.as_bytes(),
        "2:13",
        "invalid type: string \"soon\"",
    );
}

#[test]
fn replay_of_an_unknown_field_names_it() {
    let text = format!(
        "{HEADER}\n{{\"at\": 1, \"kind\": \"cancel\", \"by\": \"alice\", \"reason\": \"x\"}}\n"
    );
    assert_malformed(
        "unknown-field",
        text.as_bytes(),
        "2",
        "unknown field `reason`",
    );
}

#[test]
fn replay_of_an_unknown_kind_lists_the_known_ones() {
    let text = format!("{HEADER}\n{{\"at\": 1, \"kind\": \"pause\"}}\n");
    assert_malformed(
        "unknown-kind",
        text.as_bytes(),
        "2",
        "unknown variant `pause`",
    );
}

#[test]
fn replay_of_an_empty_file_says_it_is_empty() {
    assert_malformed("empty", b"", "1", "empty scenario");
}

#[test]
fn replay_of_binary_bytes_says_they_are_not_utf8() {
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(&[0x7b, 0xff, 0x00, 0xfe, 0x7d]);
    assert_malformed("binary", &bytes, "2:2", "not UTF-8");
}

#[test]
fn replay_without_a_header_says_the_header_is_missing() {
    assert_malformed(
        "no-header",
        b"{\"at\": 1, \"kind\": \"expire\"}\n",
        "1",
        "missing header",
    );
}

#[test]
fn replay_of_a_header_without_inputs_is_malformed() {
    assert_malformed(
        "header-only",
        format!("{HEADER}\n").as_bytes(),
        "1",
        "no inputs",
    );
}

#[test]
fn replay_of_a_reference_to_no_checkpoint_names_the_line() {
    let text = format!(
        "{HEADER}\n{{\"at\": 1, \"kind\": \"resume\", \"checkpoint\": \"latest\", \"decision\": {{\"decision\": \"reconcile\", \"answer\": \"unknown\"}}}}\n"
    );
    assert_malformed(
        "no-checkpoint",
        text.as_bytes(),
        "2",
        "no checkpoint has been emitted yet",
    );
}

#[test]
fn unreadable_input_and_misuse_exit_2_saying_so_on_stderr() {
    let seed = seed();
    let seed = seed.to_str().expect("a UTF-8 path");
    for (case, args, stdin, start) in [
        // Errors on stdin name it.
        (
            "stdin",
            &["-"][..],
            &b"{\"at\": 1"[..],
            "error: <stdin>:1:8: not JSON",
        ),
        (
            "a missing file",
            &["/nonexistent/scenario.jsonl"],
            b"",
            "error: /nonexistent/scenario.jsonl: cannot read",
        ),
        (
            "an unknown format",
            &[seed, "--format", "yaml"],
            b"",
            "error: invalid value 'yaml'",
        ),
    ] {
        let out = replay(args, stdin);
        assert_eq!(out.status.code(), Some(2), "{case}: {}", stderr(&out));
        assert!(stderr(&out).starts_with(start), "{case}: {}", stderr(&out));
    }
}

#[test]
fn replay_writes_an_audit_log_that_validate_accepts_and_a_tampered_copy_that_it_refuses() {
    let dir = std::env::temp_dir().join(format!("resumable-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let log = dir.join("seed-audit.jsonl");
    let shown = log.display().to_string();
    let scenario = seed().display().to_string();
    let out = replay(&[&scenario, "--audit-log", &shown], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let written = std::fs::read_to_string(&log).expect("the audit log is written");
    let lines: Vec<&str> = written.lines().collect();
    // A header, then one record per scenario input, refused attempts included.
    let inputs = std::fs::read_to_string(seed())
        .expect("the seed scenario")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
        - 1;
    assert_eq!(lines.len(), 1 + inputs);
    assert!(lines[0].contains("\"resumable-audit\""));
    assert!(
        written.contains("\"rejected\""),
        "refused attempts are recorded"
    );

    let validate = |path: &str| {
        Command::new(env!("CARGO_BIN_EXE_resumable"))
            .args(["validate", path])
            .output()
            .expect("the binary runs")
    };
    let ok = validate(&shown);
    assert_eq!(ok.status.code(), Some(0), "{}{}", stdout(&ok), stderr(&ok));

    // Dropping a record in the middle breaks the digest chain: validate says where.
    let mut tampered: Vec<&str> = lines.clone();
    tampered.remove(3);
    let bad = dir.join("seed-audit-tampered.jsonl");
    std::fs::write(&bad, tampered.join("\n") + "\n").expect("the tampered copy is written");
    let refused = validate(&bad.display().to_string());
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    let report = stdout(&refused);
    assert!(
        report.contains(":4: divergence") && report.contains("removed"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every teaching scenario, written as an audit log by `replay`, is a log `validate` calls
/// conforming: the validator's whole-log properties hold on every shape the kernel accepts
/// (batches included), so an honest runtime's log never reads as forged.
#[test]
fn every_scenarios_audit_log_validates_as_conforming() {
    let dir = std::env::temp_dir().join(format!("resumable-audit-all-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/scenarios");
    let mut checked = 0;
    for entry in std::fs::read_dir(&scenarios).expect("spec/scenarios is readable") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let log = dir.join(format!("{stem}.audit.jsonl"));
        let out = replay(
            &[path.to_str().unwrap(), "--audit-log", log.to_str().unwrap()],
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{stem}: {}", stderr(&out));
        let checked_out = Command::new(env!("CARGO_BIN_EXE_resumable"))
            .args(["validate", log.to_str().unwrap()])
            .output()
            .expect("the binary runs");
        assert_eq!(
            checked_out.status.code(),
            Some(0),
            "{stem}: {}",
            stdout(&checked_out)
        );
        assert!(stdout(&checked_out).contains(": conforming: "), "{stem}");
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} scenarios found");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scenario of `n` dispatches and results of fresh calls: long enough to outgrow a pipe.
fn long_scenario(n: usize) -> Vec<u8> {
    let mut text = format!("{HEADER}\n");
    let contract = r#"{"dedupes": true, "query_fences": false, "max_attempts": 3}"#;
    for i in 0..n {
        let c = format!(
            r#"{{"call_id": "c{i}", "tool": "store", "args": {{"text": "{i}"}}, "key": "k{i}", "contract": {contract}}}"#
        );
        text.push_str(&format!(
            "{{\"at\": {}, \"kind\": \"dispatch\", \"call\": {c}}}\n",
            2 * i + 1
        ));
        text.push_str(&format!(
            "{{\"at\": {}, \"kind\": \"tool_result\", \"call_id\": \"c{i}\", \"attempt\": 0, \"result\": {{\"text\": \"ok\"}}}}\n",
            2 * i + 2
        ));
    }
    text.into_bytes()
}

#[test]
fn replay_of_an_endless_line_exits_2_at_once_without_reading_it_whole() {
    if !Path::new("/dev/zero").exists() {
        return;
    }
    let started = std::time::Instant::now();
    let out = replay(&["/dev/zero"], b"");
    assert_fails_starting(
        &out,
        2,
        "error: /dev/zero:1:65537: line longer than 65536 bytes",
    );
    // A hang guard, not a benchmark: reading 64 KiB takes microseconds.
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn replay_refuses_a_repeated_key_naming_it_and_its_column() {
    let text = format!("{HEADER}\n{{\"at\": 1, \"kind\": \"expire\", \"at\": 2}}\n");
    assert_malformed(
        "repeated-key",
        text.as_bytes(),
        "2:29",
        "the key \"at\" appears twice in one object",
    );
    // Nested, and escaped to look different.
    let text = concat!(
        r#"{"scenario": "t", "format": 1, "shows": ["SUS-2"], "description": "d", "run": "#,
        r#"{"tenant": "a", "ten\u0061nt": "b", "session": "s", "run": "r", "definition": "d", "#,
        r#""operator": "o", "reconcile_window": 1, "created_at": 0}}"#,
        "\n"
    );
    assert_malformed("repeated-nested", text.as_bytes(), "1:", "appears twice");
}

#[test]
fn replay_to_a_full_disk_exits_2_with_a_message() {
    let Some(full) = dev_full() else { return };
    let out = Command::new(env!("CARGO_BIN_EXE_resumable"))
        .args(["replay", seed().to_str().unwrap()])
        .stdout(full)
        .output()
        .unwrap();
    assert_fails_starting(
        &out,
        2,
        "error: cannot write the trace: No space left on device",
    );
    let full = dev_full().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_resumable"))
        .args(["replay", seed().to_str().unwrap(), "--format", "json"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let error: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(error["error"]["problem"], "cannot_write");
    assert_eq!(error["exit_code"], 2);
}

#[test]
fn replay_into_a_closed_pipe_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_resumable"))
        .args(["replay", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let _ = child.stdin.take().unwrap().write_all(&long_scenario(2_000));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

#[test]
fn replay_writing_its_audit_log_to_a_full_disk_exits_2() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let out = replay(&[seed().to_str().unwrap(), "--audit-log", "/dev/full"], b"");
    assert_fails(
        &out,
        2,
        "/dev/full: cannot write the audit log: No space left on device",
    );
}

#[test]
fn replay_errors_in_json_mode_are_json() {
    let out = replay(&["/nonexistent/scenario.jsonl", "--format", "json"], b"");
    assert_eq!(out.status.code(), Some(2));
    let error: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(error["error"]["problem"], "cannot_read");
    let out = replay(&["-", "--format", "json"], b"{\"at\": 1");
    assert_eq!(out.status.code(), Some(2));
    let error: serde_json::Value = serde_json::from_str(stderr(&out).trim()).unwrap();
    assert_eq!(error["error"]["problem"], "malformed");
    assert_eq!(error["error"]["line"], 1);
    assert_eq!(error["error"]["column"], 8);
}

#[test]
fn replay_prints_the_steps_before_a_malformed_line_then_the_error() {
    let mut text = long_scenario(2);
    text.extend_from_slice(b"{\"at\": 9, \"kind\": \"pause\"}\n");
    let (out, _) = replay_file("late-error", &text);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("\n4. "), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(":6:26: unknown variant `pause`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn replay_writes_a_keyed_audit_log_and_its_anchor_that_validate_accepts() {
    let dir = std::env::temp_dir().join(format!("resumable-keyed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (log, anchor, key) = (dir.join("a.jsonl"), dir.join("a.anchor"), dir.join("k"));
    std::fs::write(&key, format!("{}\n", "ab".repeat(32))).unwrap();
    let s = |p: &PathBuf| p.display().to_string();
    let out = replay(
        &[
            seed().to_str().unwrap(),
            "--audit-log",
            &s(&log),
            "--key-file",
            &s(&key),
            "--audit-anchor",
            &s(&anchor),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let validate = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_resumable"))
            .args(["validate", &s(&log)])
            .args(extra)
            .output()
            .unwrap()
    };
    let ok = validate(&["--key-file", &s(&key), "--anchor", &s(&anchor)]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert!(
        stdout(&ok).contains("every line's MAC verified under key"),
        "{}",
        stdout(&ok)
    );
    assert!(stdout(&ok).contains("unproven: the header declares no tool policy"));
    std::fs::write(&key, format!("{}\n", "cd".repeat(32))).unwrap();
    let wrong = validate(&["--key-file", &s(&key)]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(stdout(&wrong).contains(":1: divergence: the header names key"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A scenario whose run id is `run` and whose one dispatch carries `key`.
fn with_ids(run: &str, key: &str) -> Vec<u8> {
    let header = HEADER.replace("\"run\": \"run-1\"", &format!("\"run\": \"{run}\""));
    let input = format!(
        r#"{{"at": 1, "kind": "dispatch", "call": {{"call_id": "call_Xq8Z3v0bVQ1nK2mD4rT7yU9w", "tool": "{tool}", "args": {{"text": "x"}}, "key": "{key}", "contract": {{"dedupes": true, "query_fences": false, "max_attempts": 3}}}}}}"#,
        tool = "t".repeat(64)
    );
    format!("{header}\n{input}\n").into_bytes()
}

#[test]
fn replay_takes_a_uuid_run_id_a_64_byte_tool_and_a_255_byte_key() {
    let (out, _) = replay_file(
        "ids-at-limit",
        &with_ids("6f1c2a9e-3b7d-4e8a-9c0f-2d5e7a1b3c4d", &"k".repeat(255)),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("6f1c2a9e-3b7d-4e8a-9c0f-2d5e7a1b3c4d"));
    assert!(stdout(&out).contains(&"k".repeat(255)));
}

#[test]
fn replay_refuses_a_name_or_key_over_its_limit_naming_the_field_and_the_limit() {
    let (out, _) = replay_file("run-over-limit", &with_ids(&"r".repeat(65), "k"));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`run.run`: an identifier here holds at most 64 bytes, got 65"),
        "{}",
        stderr(&out)
    );
    let (out, _) = replay_file("key-over-limit", &with_ids("run-1", &"k".repeat(256)));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`call.key`: an identifier here holds at most 255 bytes, got 256"),
        "{}",
        stderr(&out)
    );
}
