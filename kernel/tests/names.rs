//! One spelling per name: what a message prints is what the wire format and spec/ write.

use resumable_kernel::*;
use serde::Serialize;

/// The serde spelling of a unit variant, which is a bare JSON string.
fn wire<T: Serialize>(value: T) -> String {
    match serde_json::to_value(value).unwrap() {
        serde_json::Value::String(s) => s,
        other => panic!("a name serialises as a string, got {other}"),
    }
}

fn assert_one_spelling<T: Serialize + Copy + core::fmt::Display>(all: &[T]) {
    assert!(!all.is_empty());
    for &value in all {
        assert_eq!(wire(value), value.to_string());
    }
}

#[test]
fn each_name_prints_as_it_is_written_on_the_wire() {
    assert_one_spelling(&RejectionKind::ALL);
    assert_one_spelling(&PhaseKind::ALL);
    assert_one_spelling(&ReasonKind::ALL);
    assert_one_spelling(&DecisionKind::ALL);
    assert_one_spelling(&IdentityField::ALL);
    assert_one_spelling(&CheckpointField::ALL);
    assert_one_spelling(&ApprovalField::ALL);
    assert_one_spelling(&Fault::ALL);
}

#[test]
fn messages_speak_the_same_words_as_the_wire() {
    let r = Rejection::DecisionMismatch {
        reason: ReasonKind::PendingApproval,
        decision: DecisionKind::Callback,
    };
    assert_eq!(
        r.to_string(),
        "decision callback does not answer reason pending_approval"
    );
    let r = Rejection::IdentityMismatch {
        field: IdentityField::Run,
    };
    assert_eq!(r.to_string(), "checkpoint is not for this run: run differs");
}

// Identifiers of real size: each width at its limit and one past it.

const UUID: &str = "6f1c2a9e-3b7d-4e8a-9c0f-2d5e7a1b3c4d";

#[test]
fn names_hold_uuids_provider_call_ids_and_64_byte_tool_names() {
    for id in [
        UUID,
        "call_Xq8Z3v0bVQ1nK2mD4rT7yU9w",
        "toolu_01A09q90qw90lq917835lq9",
        "mcp_github_enterprise__create_pull_request_review_comment_thread",
    ] {
        assert_eq!(Name::new(id).map(|n| n.to_string()), Ok(id.to_string()));
    }
    let at_limit = "t".repeat(NAME_CAPACITY);
    assert_eq!(Name::new(&at_limit).unwrap().as_str(), at_limit);
}

#[test]
fn a_name_one_byte_over_its_limit_is_refused_naming_the_limit() {
    let over = "t".repeat(NAME_CAPACITY + 1);
    let e = Name::new(&over).unwrap_err();
    assert_eq!(
        e,
        NameError::TooLong {
            len: 65,
            capacity: 64
        }
    );
    assert_eq!(
        e.to_string(),
        "an identifier here holds at most 64 bytes, got 65"
    );
}

#[test]
fn keys_hold_255_bytes_and_refuse_256() {
    let at_limit = "k".repeat(KEY_CAPACITY);
    assert_eq!(IdempotencyKey::new(&at_limit).unwrap().as_str(), at_limit);
    assert_eq!(
        IdempotencyKey::new(&"k".repeat(256)),
        Err(NameError::TooLong {
            len: 256,
            capacity: 255
        })
    );
    // A key too long for a name is still a key.
    assert!(Name::new(&at_limit).is_err());
}

#[test]
fn empty_and_unprintable_identifiers_are_refused_where_they_fail() {
    assert_eq!(Name::new(""), Err(NameError::Empty));
    assert_eq!(
        IdempotencyKey::new("idem 1"),
        Err(NameError::NotPrintable { at: 4 })
    );
    assert_eq!(Name::new("é"), Err(NameError::NotPrintable { at: 0 }));
}

#[test]
fn json_names_the_limit_of_the_field_it_refuses() {
    let key = format!("\"{}\"", "k".repeat(256));
    let e = serde_json::from_str::<IdempotencyKey>(&key).unwrap_err();
    assert!(e.to_string().contains("at most 255 bytes, got 256"), "{e}");
    let name = format!("\"{}\"", "n".repeat(65));
    let e = serde_json::from_str::<Name>(&name).unwrap_err();
    assert!(e.to_string().contains("at most 64 bytes, got 65"), "{e}");
}

#[test]
fn digests_of_names_within_the_old_width_are_unchanged() {
    // Tool keys and key digests of every name that fitted the old 31-byte width are what
    // earlier releases computed, so a run in flight across an upgrade keeps its tool key:
    // these are the values in the approval log the release before the widening wrote
    // (spec/audit-examples/approval.jsonl of that release: its first dispatch).
    let id = Identity {
        tenant: Name::lit("acme"),
        session: Name::lit("session-1"),
        run: Name::lit("run-approval"),
        definition: Name::lit("publisher@1"),
    };
    let key = IdempotencyKey::lit("idem-1");
    let args = Digest::from_hex("e5ad74e2b49cdf4bd517aa13ce6813dcbbfc692a8ea40c17fa0898dd425e8222")
        .unwrap();
    assert_eq!(
        checkpoint::tool_key(&id, &key).to_string(),
        "fbabd6e2220335b0d88d7f2d75cea18300654d565b9ea3ec2361f9a3fd9a6687"
    );
    assert_eq!(
        checkpoint::key_digest(&key, &args).to_string(),
        "f2558648bdb2fe418dd623ae01c634c620d1330652ae88d0c3b29380f85c4269"
    );
}

#[test]
fn a_name_longer_than_the_old_width_encodes_apart_from_every_padded_one() {
    // A 32-byte name is its length byte (32) and its bytes; a padded name's length byte is
    // at most 31, so the two encodings never coincide, and neither do their digests.
    let id = |run: &str| Identity {
        tenant: Name::lit("acme"),
        session: Name::lit("s"),
        run: Name::new(run).unwrap(),
        definition: Name::lit("d"),
    };
    let key = IdempotencyKey::lit("k");
    let long = "r".repeat(32);
    let short = "r".repeat(31);
    assert_ne!(
        checkpoint::tool_key(&id(&long), &key),
        checkpoint::tool_key(&id(&short), &key)
    );
}

#[test]
fn a_digest_not_in_hex_names_the_character_at_fault() {
    let good = "ab".repeat(32);
    for at in [0, 1, 10, 11, 62, 63] {
        let mut bad = good.clone().into_bytes();
        bad[at] = b'g';
        let bad = String::from_utf8(bad).unwrap();
        assert_eq!(
            Digest::from_hex(&bad),
            Err(ids::DigestError::NotHex { at }),
            "a bad character at {at}"
        );
    }
    let d = Digest::from_hex(&good).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(d.to_hex(&mut buf), good);
}

#[test]
fn a_name_debugs_as_its_quoted_text() {
    assert_eq!(format!("{:?}", Name::lit("call-1")), "\"call-1\"");
}

#[test]
fn a_digest_reads_in_either_case_and_prints_in_lowercase() {
    let lower = "0123456789abcdef".repeat(4);
    let upper = lower.to_uppercase();
    let d = Digest::from_hex(&upper).unwrap();
    assert_eq!(d, Digest::from_hex(&lower).unwrap());
    assert_eq!(d.to_string(), lower);
    assert_eq!(format!("{d:?}"), "01234567..");
}

#[test]
fn times_and_revisions_print_with_their_letter_and_an_expiry_stops_short_of_the_end() {
    assert_eq!(
        (Time(7).to_string(), Revision(3).to_string()),
        ("t7".into(), "r3".into())
    );
    assert_eq!(Time(5).expiry_after(10), Time(15));
    let last = Time::LATEST_EXPIRY;
    assert_eq!(Time(last.0 - 10).expiry_after(10), last);
    assert_eq!(Time(last.0 - 10).expiry_after(11), last);
    assert_eq!(Time::END.expiry_after(0), last);
}

#[test]
fn a_name_or_digest_of_the_wrong_json_type_says_what_it_expected() {
    let err = serde_json::from_str::<Name>("7").unwrap_err().to_string();
    assert!(err.contains("printable ASCII without spaces"), "{err}");
    let err = serde_json::from_str::<Digest>("7").unwrap_err().to_string();
    assert!(err.contains("a digest: 64 hex digits"), "{err}");
}
