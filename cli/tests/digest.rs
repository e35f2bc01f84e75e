//! `resumable digest`, run as a user runs it: the built binary on a file and on stdin, with
//! RFC 8785's own example, and on what it must refuse.

use resumable_testkit::process::{assert_fails, run, text};
use std::process::Output;

fn digest(args: &[&str], stdin: &[u8]) -> Output {
    let args: Vec<&str> = ["digest"].iter().chain(args).copied().collect();
    run(env!("CARGO_BIN_EXE_resumable"), &args, stdin)
}

/// SHA-256 of `{"post":42,"ratio":0.5,"tags":["a","b"]}`, computed apart from this project
/// (`printf %s '...' | sha256sum`).
const POST_42: &str = "e4e4c8f81d8c56b2a5aa0bb5abebb2b28fd668d75428aa2849f88bad516fea5d";

#[test]
fn the_digest_of_a_document_read_from_stdin_is_sha256_of_its_canonical_form() {
    let out = digest(
        &["-"],
        b"{\"tags\": [\"a\", \"b\"],\n \"ratio\": 5e-1, \"post\": 42.0}\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let hex = text(&out.stdout);
    let canonical = digest(
        &["-", "--format", "json"],
        b"{\"post\":42,\"ratio\":0.5,\"tags\":[\"a\",\"b\"]}",
    );
    let report: serde_json::Value = serde_json::from_slice(&canonical.stdout).unwrap();
    assert_eq!(
        report["canonical"],
        r#"{"post":42,"ratio":0.5,"tags":["a","b"]}"#
    );
    assert_eq!(hex, format!("{}\n", report["digest"].as_str().unwrap()));
    assert_eq!(hex.trim(), POST_42);
}

#[test]
fn a_file_is_read_whole() {
    let dir = std::env::temp_dir().join(format!("resumable-digest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("args.json");
    std::fs::write(
        &path,
        "{\n  \"post\": 42,\n  \"ratio\": 0.5,\n  \"tags\": [\"a\", \"b\"]\n}\n",
    )
    .unwrap();
    let out = digest(&[path.to_str().unwrap()], b"");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), POST_42);
}

#[test]
fn what_has_no_canonical_form_exits_2_with_the_offset() {
    for (input, what) in [
        (
            &b"{\"a\": 1, \"a\": 2}"[..],
            "at byte 9: the name \"a\" appears twice",
        ),
        (b"NaN", "at byte 0: not a JSON value"),
        (
            b"[1e400]",
            "at byte 1: the number 1e400 is beyond what a double holds",
        ),
        (b"9007199254740993", "outside I-JSON's exact range"),
        (b"\"\\udead\"", "lone low surrogate"),
        (b"\xff", "at byte 0: not UTF-8 text"),
        (b"{} {}", "more than one JSON value"),
    ] {
        let out = digest(&["-"], input);
        assert_eq!(out.status.code(), Some(2), "{}", text(input));
        assert!(out.stdout.is_empty());
        let err = text(&out.stderr);
        assert!(
            err.starts_with("error: <stdin>: ") && err.contains(what),
            "{err}"
        );
    }
    let out = digest(&["-", "--format", "json"], b"NaN");
    let report: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(report["error"]["problem"], "malformed");
    assert_eq!(report["error"]["offset"], 0);
    assert_eq!(report["exit_code"], 2);
}

#[test]
fn a_missing_file_exits_2() {
    let out = digest(&["/nonexistent/args.json"], b"");
    assert_fails(&out, 2, "cannot read");
}
