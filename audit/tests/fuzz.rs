//! Reliability: random bytes, random JSON lines and random mutations of valid logs and
//! checkpoints never make the validator or the checkpoint decoder panic, in at least 10,000
//! cases each; and with the key, a single changed byte anywhere in a log is always caught.

use proptest::prelude::*;
use proptest::test_runner::Config;
use resumable_audit::{self as audit, sample, Options};
use resumable_kernel::checkpoint::{decode_json, Decoded};
use resumable_kernel::*;
use serde_json::Value;
use std::sync::OnceLock;

const CASES: u32 = 10_000;

fn config() -> Config {
    Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    }
}

fn validate(bytes: &[u8]) -> Result<audit::Summary, audit::Finding> {
    audit::validate(bytes, &Options::default())
}

/// A valid log, made once: the seed's approval lifecycle.
fn approval_log() -> &'static [u8] {
    static LOG: OnceLock<Vec<u8>> = OnceLock::new();
    LOG.get_or_init(|| sample::approval_log().expect("the sample log"))
}

/// A valid log's header line, with its newline.
fn header_line() -> &'static [u8] {
    let log = approval_log();
    let end = log
        .iter()
        .position(|&b| b == b'\n')
        .map_or(log.len(), |i| i + 1);
    &log[..end]
}

/// A valid sealed checkpoint in JSON, and the checkpoint itself.
fn checkpoint() -> &'static (Vec<u8>, Checkpoint) {
    static CP: OnceLock<(Vec<u8>, Checkpoint)> = OnceLock::new();
    CP.get_or_init(|| {
        let header = sample::header(Name::lit("run-fuzz"));
        let call = Call {
            call_id: Name::lit("call-1"),
            tool: Name::lit("publish"),
            args: Digest::of(b"{}"),
            key: IdempotencyKey::lit("idem-1"),
            contract: ToolContract {
                dedupes: true,
                query_fences: false,
                max_attempts: 3,
                ..ToolContract::default()
            },
        };
        let suspend = Input {
            at: Time(1),
            event: Event::Suspend {
                wait: Wait::Approval {
                    call,
                    requester: sample::REQUESTER,
                    prior: Prior::NONE,
                },
                expires_at: Time(50),
                responsible: sample::APPROVER,
                resource_version: 7,
            },
        };
        let run = header.run.run().expect("a valid policy");
        let t = step(&run, &suspend).expect("the suspend is accepted");
        let cp = *t
            .effects
            .checkpoint()
            .expect("a suspension persists a checkpoint");
        (serde_json::to_vec(&cp).expect("serialise"), cp)
    })
}

/// Field names and tags of the log and checkpoint formats, so random JSON reaches past the
/// first "missing field" into the deeper parsers.
const WORDS: &[&str] = &[
    "format",
    "version",
    "run",
    "identity",
    "policy",
    "created_at",
    "tenant",
    "session",
    "definition",
    "operator",
    "reconcile_window",
    "seq",
    "revision",
    "input",
    "verdict",
    "prev",
    "at",
    "kind",
    "accepted",
    "rejected",
    "rejection",
    "event",
    "phase",
    "reason",
    "checkpoint",
    "dispatch",
    "query",
    "committed",
    "call_id",
    "key",
    "attempt",
    "result",
    "suspend",
    "resume",
    "tool_result",
    "recover",
    "expire",
    "cancel",
    "complete",
    "fail",
    "wait",
    "approval",
    "decision",
    "approve",
    "deny",
    "facts",
    "schema_version",
    "digest",
    "resource-audit",
    "resumable-audit",
    "running",
    "suspended",
    "pending_approval",
    "stale_revision",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(WORDS).prop_map(String::from),
        1 => "[a-z0-9_-]{0,12}",
        1 => "[0-9a-f]{64}",
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(|n| Value::from(n % 4)),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        word().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec((word(), inner), 0..5)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

fn lines_of(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes_never_panic_the_validator(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = validate(&bytes);
        // After a valid header, the same bytes reach the record parser.
        let mut log = header_line().to_vec();
        log.extend_from_slice(&bytes);
        let _ = validate(&log);
    }

    #[test]
    fn random_json_lines_never_panic_the_validator(
        values in prop::collection::vec(json(), 1..3),
        after_header in any::<bool>(),
    ) {
        let mut log = if after_header { header_line().to_vec() } else { Vec::new() };
        log.extend_from_slice(&lines_of(&values));
        let result = validate(&log);
        // Random JSON is never a conforming record.
        if after_header {
            prop_assert!(result.is_err());
        }
    }

    #[test]
    fn a_changed_byte_anywhere_is_always_caught_with_the_key(
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let log = approval_log();
        let i = at.index(log.len());
        // The finding must come on the changed line (its MAC covers its bytes, the last
        // line's included), or on the next when the byte was an LF; so the log is cut after
        // the next line: the same verdict, for less work in a debug build.
        let ends: Vec<usize> = log.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(j, _)| j).collect();
        let cut = ends.iter().filter(|&&e| e >= i).nth(1).map_or(log.len(), |e| e + 1);
        let mut bad = log[..cut].to_vec();
        prop_assume!(bad[i] != byte);
        bad[i] = byte;
        let keyed = Options { key: Some(sample::key()), ..Options::default() };
        prop_assert!(audit::validate(&bad[..], &keyed).is_err());
    }

    #[test]
    fn random_edits_of_a_valid_log_never_panic_the_validator(
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<u8>()), 1..4),
        keep in any::<prop::sample::Index>(),
    ) {
        // A prefix of the log, cut at a random line end (a cut log is a case worth having).
        let log = approval_log();
        let ends: Vec<usize> = log.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(j, _)| j + 1).collect();
        let mut log = log[..*keep.get(&ends)].to_vec();
        for (at, op, byte) in edits {
            if log.is_empty() {
                break;
            }
            let i = at.index(log.len());
            match op {
                0 => log[i] = byte,
                1 => { log.remove(i); }
                2 => log.insert(i, byte),
                // Digits are where the kernel's inputs live: times, revisions, attempts.
                _ => log[i] = b'0' + byte % 10,
            }
        }
        let _ = validate(&log);
    }

    #[test]
    fn random_bytes_never_panic_the_checkpoint_decoder(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_json(&bytes);
    }

    #[test]
    fn random_json_never_panics_the_checkpoint_decoder(value in json()) {
        let _ = decode_json(value.to_string().as_bytes());
    }

    #[test]
    fn a_changed_byte_in_a_checkpoint_never_decodes_as_another_checkpoint(
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let (json, original) = checkpoint();
        let mut bad = json.clone();
        let i = at.index(bad.len());
        bad[i] = byte;
        // Either refused, or the same checkpoint (a hex digit's case, say): the digest covers
        // every field, so nothing else verifies.
        if let Ok(Decoded::Current(cp)) = decode_json(&bad) {
            prop_assert_eq!(cp, *original);
        }
    }
}
