//! Bad input to the validator: every unreadable log is refused as malformed (exit 2) with its
//! line and column, quickly, and never with a panic.

use resumable_audit::{self as audit, sample, Finding, Options, Problem, MAX_LINE_BYTES};
use std::io::{self, BufReader, Read};

fn finding(log: &[u8]) -> Finding {
    match audit::validate(log, &Options::default()) {
        Ok(s) => panic!("expected a finding, the log conforms: {s:?}"),
        Err(f) => f,
    }
}

fn approval() -> Vec<u8> {
    sample::approval_log().unwrap()
}

#[test]
fn an_empty_file_has_no_header() {
    let f = finding(b"");
    assert_eq!((f.line, f.exit_code(), &f.problem), (1, 2, &Problem::Empty));
    assert_eq!(
        f.to_string(),
        "line 1: the log is empty: line 1 must be the header"
    );
}

#[test]
fn a_truncated_last_line_is_cut_off_not_a_json_error() {
    let log = approval();
    // Cut in the middle of the last record.
    let cut = &log[..log.len() - 40];
    let f = finding(cut);
    let lines = cut.split(|&b| b == b'\n').count() as u64;
    assert_eq!((f.line, f.exit_code()), (lines, 2));
    assert_eq!(f.problem, Problem::Unterminated);
    assert!(f
        .to_string()
        .contains("the log was cut off while it was written"));
}

#[test]
fn a_complete_last_line_without_its_newline_is_still_cut_off() {
    let log = approval();
    let f = finding(&log[..log.len() - 1]);
    assert_eq!((f.line, &f.problem), (10, &Problem::Unterminated));
}

#[test]
fn a_wrong_type_is_a_data_error_with_its_column() {
    let log = String::from_utf8(approval()).unwrap();
    let bad = log.replacen(
        "{\"seq\":1,\"revision\":1",
        "{\"seq\":1,\"revision\":\"one\"",
        1,
    );
    let f = finding(bad.as_bytes());
    assert_eq!((f.line, f.exit_code()), (2, 2));
    // serde_json points at the last byte of the offending value.
    assert_eq!(f.column, Some(25));
    match &f.problem {
        Problem::Json { category, message } => {
            assert_eq!(*category, "data");
            assert!(
                message.contains("invalid type: string \"one\""),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(f
        .to_string()
        .starts_with("line 2, column 25: not a valid record (data error)"));
}

#[test]
fn a_syntax_error_names_its_column() {
    let log = String::from_utf8(approval()).unwrap();
    let bad = log.replacen("{\"seq\":2,", "{\"seq\":2,,", 1);
    let f = finding(bad.as_bytes());
    assert_eq!((f.line, f.column), (3, Some(10)));
    assert!(
        matches!(
            f.problem,
            Problem::Json {
                category: "syntax",
                ..
            }
        ),
        "{f}"
    );
}

#[test]
fn an_unknown_field_in_a_record_is_refused() {
    let log = String::from_utf8(approval()).unwrap();
    let bad = log.replacen("{\"seq\":2,", "{\"seq\":2,\"note\":1,", 1);
    let f = finding(bad.as_bytes());
    assert_eq!(f.line, 3);
    assert!(f.message().contains("unknown field `note`"), "{f}");
}

#[test]
fn an_unknown_format_version_is_malformed() {
    let log = String::from_utf8(approval())
        .unwrap()
        .replacen("\"version\":3", "\"version\":4", 1);
    let f = finding(log.as_bytes());
    assert_eq!((f.line, f.exit_code()), (1, 2));
    assert_eq!(
        f.problem,
        Problem::UnknownVersion {
            found: 4,
            supported: [1, 2, 3]
        }
    );
}

#[test]
fn a_header_names_its_rules_exactly_in_format_3() {
    let log = String::from_utf8(approval()).unwrap();
    let rules = format!("\"rules\":{},", resumable_kernel::RULES_VERSION);
    for (from, to, what) in [
        (rules.as_str(), "", "a format 3 header names its rules"),
        (
            rules.as_str(),
            "\"rules\":0,",
            "a format 3 header names its rules",
        ),
        (
            "\"version\":3,",
            "\"version\":2,",
            "a format 1 or 2 header names no rules",
        ),
    ] {
        let bad = log.replacen(from, to, 1);
        let f = finding(bad.as_bytes());
        assert_eq!((f.line, f.exit_code()), (1, 2), "{f}");
        assert!(f.message().contains(what), "{f}");
    }
}

#[test]
fn a_record_of_a_log_not_judged_must_still_be_a_record() {
    // A log of rules this validator does not read: its records' envelope is still read.
    let log = String::from_utf8(approval())
        .unwrap()
        .replacen("\"rules\":3,", "\"rules\":99,", 1);
    let bad = log.replacen("{\"seq\":2,", "{\"seq\":2,\"note\":1,", 1);
    let f = finding(bad.as_bytes());
    assert_eq!((f.line, f.exit_code()), (3, 2), "{f}");
    assert!(f.message().contains("unknown field `note`"), "{f}");
    let bad = log.replacen(
        "\"revision\":1,\"input\"",
        "\"revision\":\"one\",\"input\"",
        1,
    );
    assert_eq!(finding(bad.as_bytes()).exit_code(), 2);
}

#[test]
fn another_format_is_not_an_audit_log() {
    let f = finding(b"{\"format\":\"scenario\",\"version\":1}\n");
    assert_eq!(
        f.problem,
        Problem::NotAnAuditLog {
            format: "scenario".into()
        }
    );
}

#[test]
fn a_log_that_starts_with_a_record_has_no_header() {
    let log = approval();
    let start = log.iter().position(|&b| b == b'\n').unwrap() + 1;
    let f = finding(&log[start..]);
    assert_eq!((f.line, f.exit_code()), (1, 2));
    assert!(f.message().contains("not a valid header"), "{f}");
    assert!(f.message().contains("missing field `format`"), "{f}");
}

#[test]
fn binary_bytes_are_not_utf8_and_the_column_is_the_first_bad_byte() {
    let mut log = approval();
    let second = log.iter().position(|&b| b == b'\n').unwrap() + 1;
    log[second + 4] = 0xff;
    let f = finding(&log);
    assert_eq!(
        (f.line, f.column, &f.problem),
        (2, Some(5), &Problem::NotUtf8)
    );
}

#[test]
fn crlf_line_ends_are_refused_by_name() {
    let log = String::from_utf8(approval()).unwrap().replace('\n', "\r\n");
    let f = finding(log.as_bytes());
    assert_eq!((f.line, &f.problem), (1, &Problem::CarriageReturn));
}

#[test]
fn a_blank_line_is_refused() {
    let mut log = approval();
    log.push(b'\n');
    let f = finding(&log);
    assert_eq!((f.line, &f.problem), (11, &Problem::BlankLine));
}

/// An endless line of one byte, counting what the validator pulled from it.
struct Endless {
    byte: u8,
    read: u64,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        buf.fill(self.byte);
        self.read += buf.len() as u64;
        Ok(buf.len())
    }
}

#[test]
fn an_endless_line_is_refused_after_reading_only_the_limit() {
    let mut source = Endless {
        byte: b'x',
        read: 0,
    };
    let result = audit::validate(BufReader::new(&mut source), &Options::default());
    let f = result.unwrap_err();
    assert_eq!((f.line, f.exit_code()), (1, 2));
    assert_eq!(
        f.problem,
        Problem::LineTooLong {
            limit: MAX_LINE_BYTES as u64
        }
    );
    assert_eq!(f.column, Some(MAX_LINE_BYTES as u64 + 1));
    // Read no more than the limit and one buffer's worth past it.
    assert!(
        source.read <= (MAX_LINE_BYTES + 8 * 1024) as u64,
        "{}",
        source.read
    );
}

#[test]
fn a_ten_megabyte_record_line_is_refused_on_its_line() {
    let mut log = approval();
    log.extend_from_slice(b"{\"seq\":10,\"pad\":\"");
    log.extend(std::iter::repeat_n(b'a', 10 * 1024 * 1024));
    log.extend_from_slice(b"\"}\n");
    let f = finding(&log);
    assert_eq!((f.line, f.exit_code()), (11, 2));
    assert!(matches!(f.problem, Problem::LineTooLong { .. }));
}

#[test]
fn the_longest_record_the_kernel_types_allow_is_far_below_the_line_limit() {
    use resumable_audit::{Accepted, Commit, Record, Verdict};
    use resumable_kernel::*;
    // Every name at its capacity, every number at its widest, every option present.
    let n = Name::new(&"n".repeat(NAME_CAPACITY)).unwrap();
    let k = IdempotencyKey::new(&"k".repeat(KEY_CAPACITY)).unwrap();
    let d = Digest([0xff; 32]);
    let t = Time(u64::MAX);
    let call = PendingCall {
        call_id: n,
        tool: n,
        args: d,
        attempt: u8::MAX,
    };
    let checkpoint = Checkpoint {
        schema_version: u16::MAX,
        identity: Identity {
            tenant: n,
            session: n,
            run: n,
            definition: n,
        },
        revision: Revision(u64::MAX),
        resource_version: u64::MAX,
        reason: ReasonKind::ManualIntervention,
        next_intent: Intent::Reconcile,
        pending: Some(call),
        key_digest: Some(d),
        requester: Some(n),
        waiting_on: Some(n),
        expires_at: t,
        responsible: n,
        created_at: t,
        batch: None,
        cancel_requested_by: Some(n),
        digest: d,
    };
    let approval = Approval {
        call_id: n,
        args: d,
        requester: n,
        approver: n,
        revision: Revision(u64::MAX),
        expires_at: t,
    };
    let dispatch = Dispatch {
        call_id: n,
        tool: n,
        args: d,
        key: k,
        tool_key: d,
        attempt: u8::MAX,
    };
    let record = Record {
        seq: u64::MAX,
        revision: Revision(u64::MAX),
        input: Input {
            at: t,
            event: Event::Resume(Resume {
                checkpoint,
                decision: Decision::Deny(approval),
                facts: Facts {
                    resource_version: u64::MAX,
                    permitted: false,
                    within_budget: false,
                },
            }),
        },
        verdict: Verdict::Accepted(Accepted {
            event: EventKind::ToolResult,
            decision: Some(DecisionKind::ResourceReady),
            phase: PhaseKind::Suspended,
            reason: Some(ReasonKind::ManualIntervention),
            checkpoint: Some(d),
            dispatch: Some(dispatch),
            query: Some(dispatch),
            committed: Some(Commit {
                call_id: n,
                key: k,
                attempt: u8::MAX,
                result: d,
            }),
            history: Some(HistoryEntry::Bound {
                call_id: Fingerprint([0xff; 8]),
                key: Fingerprint([0xff; 8]),
                args: d,
            }),
            dispatch_more: Default::default(),
            history_more: Default::default(),
        }),
    };
    // The record's JSON, less its closing brace, then its MAC field.
    let len = serde_json::to_vec(&record).unwrap().len() - 1 + audit::chain::SEAL_LEN;
    assert!(len < 5_000, "{len}");
    assert!(len * 16 < MAX_LINE_BYTES, "{len}");
}
