//! `resumable validate`, run as a user runs it: the built binary, on the audit-log examples of
//! spec/audit-examples/ and on bad input, checking exit status and where the report points.

use resumable_testkit::process::{assert_fails, assert_fails_starting, dev_full, run};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../spec/audit-examples")
        .join(name)
}

fn validate(args: &[&str], stdin: &[u8]) -> Output {
    let args: Vec<&str> = ["validate"].iter().chain(args).copied().collect();
    run(env!("CARGO_BIN_EXE_resumable"), &args, stdin)
}

fn validate_example(name: &str, extra: &[&str]) -> (Output, String) {
    let path = example(name).display().to_string();
    let mut args = vec![path.as_str()];
    args.extend_from_slice(extra);
    (validate(&args, b""), path)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn key() -> String {
    example("example.key").display().to_string()
}

fn anchor() -> String {
    example("approval.anchor").display().to_string()
}

#[test]
fn a_conforming_log_with_its_key_and_anchor_exits_0_with_a_summary() {
    let (key, anchor) = (key(), anchor());
    let flags = ["--key-file", &key, "--anchor", &anchor];
    let (out, path) = validate_example("approval.jsonl", &flags);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{path}: conforming: 9 records (4 accepted, 5 refused); run \
             acme/session-1/run-approval at revision 4, completed; 1 dispatch, 1 commit\n\
             format 3, rules 6, chain hmac-sha256: every line's MAC verified under key \
             de3490493e18cac4; ends at the anchor (9 records)\n"
        )
    );
}

#[test]
fn a_conforming_log_without_a_key_says_what_it_could_not_prove() {
    let (out, _) = validate_example("approval.jsonl", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("(key de3490493e18cac4): MACs not verified"),
        "{text}"
    );
    assert!(
        text.contains("\nunproven: the log is keyed, but no key was given"),
        "{text}"
    );
    assert!(text.contains("\nunproven: no anchor was given"), "{text}");
}

#[test]
fn the_anchor_may_be_given_as_a_value() {
    let text = std::fs::read_to_string(anchor()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let value = format!("{}:{}", json["records"], json["mac"].as_str().unwrap());
    let key = key();
    let (out, _) = validate_example("approval.jsonl", &["--key-file", &key, "--anchor", &value]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let cut = value.replacen("9:", "8:", 1);
    let (out, _) = validate_example("approval.jsonl", &["--key-file", &key, "--anchor", &cut]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains(":10: divergence: a record past the anchor's 8"));
}

#[test]
fn a_conforming_log_read_from_stdin_exits_0() {
    let log = std::fs::read(example("reconcile.jsonl")).unwrap();
    let out = validate(&["-"], &log);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("<stdin>: conforming: 9 records"));
}

#[test]
fn a_forged_stale_resume_exits_1_naming_the_line_the_property_and_both_verdicts() {
    let (out, path) = validate_example("tampered-forged-stale-resume.jsonl", &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "{path}:8: divergence: RES-3 violated: a resume from stale checkpoint revision 1"
        )),
        "{text}"
    );
    assert!(
        text.contains("\n  expected (kernel): {\"rejected\":{\"rejection\":\"already_applied\"")
    );
    assert!(text.contains("\n  found (log):       {\"accepted\":"));
}

#[test]
fn an_edited_verdict_exits_1_on_its_line() {
    let (out, path) = validate_example("tampered-edited-verdict.jsonl", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).starts_with(&format!("{path}:6: divergence: ")));
}

#[test]
fn a_spliced_record_exits_1_with_a_broken_chain() {
    let key = key();
    let (out, path) = validate_example("tampered-spliced.jsonl", &["--key-file", &key]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).starts_with(&format!(
        "{path}:4: divergence: the line's MAC does not verify under the key"
    )));
}

#[test]
fn an_unknown_format_version_exits_2() {
    let (out, path) = validate_example("malformed-unknown-version.jsonl", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stdout(&out),
        format!(
            "{path}:1: malformed: unknown format version 4; this validator reads versions 1, \
             2 and 3\n"
        )
    );
}

#[test]
fn the_json_report_carries_status_exit_code_and_the_finding() {
    let (out, _) = validate_example("tampered-forged-stale-resume.jsonl", &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    for part in [
        "\"status\":\"divergence\"",
        "\"exit_code\":1",
        "\"line\":8",
        "\"id\":\"RES-3\"",
        "\"problem\":\"property\"",
    ] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
}

#[test]
fn the_json_report_of_a_conforming_log_carries_the_summary() {
    let (out, _) = validate_example("approval.jsonl", &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("\"status\":\"conforming\""), "{text}");
    assert!(text.contains("\"records\":9"), "{text}");
}

#[test]
fn malformed_input_exits_2_with_one_line_naming_line_and_column() {
    let log = std::fs::read(example("approval.jsonl")).unwrap();
    let mut long = log.clone();
    long.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
    long.push(b'\n');
    let text = String::from_utf8(log).unwrap();
    let repeated = text.replacen("{\"seq\":1,", "{\"seq\":1,\"seq\":1,", 1);
    let mut cases = vec![
        (
            "an empty stdin",
            "-",
            &b""[..],
            "<stdin>:1: malformed: the log is empty: line 1 must be the header\n",
        ),
        (
            "binary bytes",
            "-",
            b"{\"format\"\xff\xfe\n",
            "<stdin>:1:10: malformed: the line is not valid UTF-8\n",
        ),
        // Ten megabytes on a line, not read whole.
        (
            "a ten-megabyte line",
            "-",
            &long,
            "<stdin>:11:65537: malformed: line longer than 65536 bytes",
        ),
        (
            "a repeated key",
            "-",
            repeated.as_bytes(),
            "<stdin>:2:10: malformed: the key \"seq\" appears twice in one object; readers \
             disagree on which one counts, so the line is refused\n",
        ),
    ];
    // An endless line, refused at once.
    if Path::new("/dev/zero").exists() {
        let report = "/dev/zero:1:65537: malformed: line longer";
        cases.push(("an endless line", "/dev/zero", b"", report));
    }
    for (case, file, stdin, report) in cases {
        let out = validate(&[file], stdin);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(2), "{case}: {text}");
        assert!(text.starts_with(report), "{case}: {text}");
        assert_eq!(text.lines().count(), 1, "{case}: one line: {text}");
    }
}

#[test]
fn a_missing_file_exits_2_on_stderr() {
    let out = validate(&["/nonexistent/audit.jsonl"], b"");
    assert!(stdout(&out).is_empty());
    assert_fails_starting(&out, 2, "error: /nonexistent/audit.jsonl: cannot read");
}

#[test]
fn a_wrong_flag_is_misuse_and_exits_2() {
    let out = validate(&["--format", "yaml", "-"], b"");
    assert_eq!(out.status.code(), Some(2));
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_report_that_cannot_be_written_exits_2_in_text_and_in_json() {
    for format in ["text", "json"] {
        let Some(full) = dev_full() else { return };
        let path = example("approval.jsonl").display().to_string();
        let out = Command::new(env!("CARGO_BIN_EXE_resumable"))
            .args(["validate", &path, "--format", format])
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{format}");
        let err = stderr(&out);
        assert!(
            err.contains("cannot write the report: No space left on device"),
            "{err}"
        );
        if format == "json" {
            let error: serde_json::Value = serde_json::from_str(err.trim()).unwrap();
            assert_eq!(error["error"]["problem"], "cannot_write");
        }
    }
}

#[test]
fn a_closed_pipe_ends_quietly_with_the_verdicts_status() {
    let path = example("tampered-edited-verdict.jsonl")
        .display()
        .to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_resumable"))
        .args(["validate", &path])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

#[test]
fn every_error_in_json_mode_is_a_json_object_on_stdout() {
    let missing = validate(&["/nonexistent/audit.jsonl", "--format", "json"], b"");
    let bad_key = validate(
        &["-", "--format", "json", "--key-file", "/nonexistent/key"],
        b"",
    );
    let bad_anchor = validate(&["-", "--format", "json", "--anchor", "9:zz"], b"");
    for (out, problem) in [
        (missing, "cannot_read"),
        (bad_key, "cannot_read"),
        (bad_anchor, "misuse"),
    ] {
        assert_eq!(out.status.code(), Some(2));
        let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(report["error"]["problem"], problem, "{report}");
        assert_eq!(report["exit_code"], 2);
    }
}

#[test]
fn a_key_file_that_is_not_64_hex_digits_is_misuse() {
    let dir = std::env::temp_dir().join(format!("resumable-key-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("short.key");
    std::fs::write(&key, "0123\n").unwrap();
    let out = validate(&["-", "--key-file", key.to_str().unwrap()], b"");
    assert_fails(&out, 2, "a key file holds 64 hex digits");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn forgeries_exit_1_with_the_key_and_the_unkeyed_report_says_what_it_cannot_prove() {
    let key = key();
    let (out, path) =
        validate_example("forged-intervention-rewritten.jsonl", &["--key-file", &key]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).starts_with(&format!("{path}:9: divergence: the line's MAC")));
    let (out, path) = validate_example("forged-approval-erased.jsonl", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).starts_with(&format!("{path}:2: divergence: APR-1 violated")));
    let (out, _) = validate_example("forged-approval-erased.jsonl", &["--key-file", &key]);
    assert_eq!(out.status.code(), Some(1));
    let (anchor, cut) = (anchor(), "forged-truncated.jsonl");
    let (out, path) = validate_example(cut, &["--key-file", &key, "--anchor", &anchor]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).starts_with(&format!("{path}:9: divergence: the log ends after 7")));
    let (out, _) = validate_example(cut, &["--key-file", &key]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("\nunproven: no anchor was given"));
    let (out, _) = validate_example("approval-v1.jsonl", &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("\nunproven: the log is unkeyed"));
}

fn corpus(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../compat")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn a_log_of_an_earlier_release_exits_0_and_says_it_was_written_under_other_rules() {
    let path = corpus("717b2db/audit-examples/approval.jsonl");
    let out = validate(&[&path], b"");
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains(": conforming: 9 records"), "{text}");
    assert!(
        text.contains("format 1, names no rules, chain prev-sha256"),
        "{text}"
    );
    assert!(text.contains("unproven: the log was not written under this validator's rules"));
}

#[test]
fn a_log_of_rules_this_validator_does_not_judge_exits_3() {
    let log = std::fs::read(example("approval.jsonl")).unwrap();
    let future = String::from_utf8(log).unwrap().replacen(
        &format!("\"rules\":{},", resumable_kernel::RULES_VERSION),
        "\"rules\":99,",
        1,
    );
    let out = validate(&["-"], future.as_bytes());
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(stdout(&out).starts_with(&format!(
        "<stdin>: not judged: 9 records (4 accepted, 5 refused), 0 of them judged; run \
         acme/session-1/run-approval at revision 4\n\
         line 1: the log was written under rules 99, newer than this validator's rules {}",
        resumable_kernel::RULES_VERSION
    )));
    let out = validate(&["-", "--format", "json"], future.as_bytes());
    assert_eq!(out.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "not_judged");
    assert_eq!(report["exit_code"], 3);
    assert_eq!(report["summary"]["not_judged"]["reason"], "rules");
    // Its header no longer matches the MAC the key gave it: the key still refuses it.
    let key = key();
    let out = validate(&["-", "--key-file", &key], future.as_bytes());
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}
