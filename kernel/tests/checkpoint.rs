//! Checkpoints: what they hold for each reason, the digest over every field, sealing and
//! verifying (CKP-2), the schema gate and the explicit migrations from versions 1 and 2
//! (CKP-3), and decoding from JSON bytes.

use resumable_kernel::checkpoint::{self, decode_json, DecodeError, Decoded, MigrationError};
use resumable_kernel::*;
use resumable_testkit::*;

/// The approval fixture's checkpoint: run-approval suspended at t1 (r1) until t50.
fn approval_checkpoint() -> (Run, Checkpoint, Call) {
    let c = publish();
    let (run, cp) = pending(c);
    (run, cp, c)
}

fn json(value: &serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

#[test]
fn checkpoint_of_a_pending_approval_holds_the_call_its_key_and_who_decides() {
    let (run, cp, c) = approval_checkpoint();
    let expected = Checkpoint {
        revision: Revision(1),
        resource_version: 1,
        reason: ReasonKind::PendingApproval,
        next_intent: Intent::Dispatch,
        requester: Some(REQUESTER),
        expires_at: Time(50),
        responsible: APPROVER,
        created_at: Time(1),
        ..checkpoint_holding(*run.identity(), Some((&c, 0)))
    }
    .seal();
    assert_eq!(cp, expected);
    assert_eq!(Checkpoint::of(&run), Some(cp));
}

#[test]
fn checkpoint_of_each_wait_names_what_it_waits_on_and_where_it_re_enters() {
    let cases = [
        (
            awaiting_callback(),
            ReasonKind::ExternalCallback,
            Some(CALLBACK),
            OWNER,
        ),
        (
            awaiting_resource(),
            ReasonKind::ResourceWait,
            Some(RESOURCE),
            OPERATOR,
        ),
        (
            awaiting_person(),
            ReasonKind::ManualIntervention,
            None,
            OPERATOR,
        ),
    ];
    for ((run, cp), reason, waiting_on, responsible) in cases {
        let expected = Checkpoint {
            revision: Revision(1),
            resource_version: 1,
            reason,
            next_intent: Intent::Continue,
            waiting_on,
            expires_at: Time(50),
            responsible,
            created_at: Time(1),
            ..checkpoint_holding(*run.identity(), None)
        }
        .seal();
        assert_eq!(cp, expected);
    }
}

#[test]
fn checkpoint_of_an_unknown_outcome_holds_the_call_and_attempt_to_reconcile() {
    // A fencing retry moved the call to attempt 1 before the second restart.
    let c = with_contract(publish(), false, true, 3);
    let (run, _, cp) = unknown_after_a_retry(c);
    let expected = Checkpoint {
        revision: Revision(4),
        resource_version: 0,
        reason: ReasonKind::OutcomeUnknown,
        next_intent: Intent::Reconcile,
        expires_at: Time(4 + WINDOW),
        responsible: OPERATOR,
        created_at: Time(4),
        ..checkpoint_holding(*run.identity(), Some((&c, 1)))
    }
    .seal();
    assert_eq!(cp, expected);
}

#[test]
fn checkpoint_of_an_unknown_outcome_with_a_waiting_cancel_names_who_cancelled() {
    // CAN-2: the cancel is part of what the operator is handed.
    let (_, cp) = cancelled_in_flight(publish());
    assert_eq!(cp.cancel_requested_by, Some(CANCELLER));
    let (_, cp) = unresolved_effect(publish());
    assert_eq!(cp.cancel_requested_by, None);
}

#[test]
fn checkpoint_of_an_unresolved_intervention_holds_the_unsettled_call() {
    let c = publish();
    let (_, cp) = unresolved_effect(c);
    assert_eq!(
        (cp.reason, cp.next_intent, cp.revision),
        (
            ReasonKind::ManualIntervention,
            Intent::Continue,
            Revision(3)
        )
    );
    assert_eq!(cp.pending, Some(pending_call(&c, 0)));
    assert_eq!(cp.key_digest, Some(checkpoint::key_digest(&c.key, &c.args)));
}

#[test]
fn checkpoint_of_a_run_that_is_not_suspended_does_not_exist() {
    assert_eq!(Checkpoint::of(&new_run("run-a")), None);
    assert_eq!(Checkpoint::of(&call_in_flight(publish())), None);
    assert_eq!(Checkpoint::of(&completed_run()), None);
    assert_eq!(Checkpoint::of(&failed_run()), None);
}

#[test]
fn checkpoint_sealed_verifies_and_sealing_again_changes_nothing() {
    let (_, cp, _) = approval_checkpoint();
    assert_eq!(cp.verify(), Ok(()));
    assert_eq!(cp.seal(), cp);
    assert_eq!(cp.compute_digest(), cp.digest);
}

#[test]
fn checkpoint_digest_covers_every_field() {
    // CKP-2: an edit to any single field, not resealed, fails verification with the digest
    // of the edited fields and the digest carried; and every edit gives a distinct digest.
    let (_, cp, _) = approval_checkpoint();
    type Edit = (&'static str, Box<dyn Fn(&mut Checkpoint)>);
    let edits: Vec<Edit> = vec![
        ("schema_version", Box::new(|c| c.schema_version = 4)),
        ("tenant", Box::new(|c| c.identity.tenant = Name::lit("t-b"))),
        (
            "session",
            Box::new(|c| c.identity.session = Name::lit("s-2")),
        ),
        ("run", Box::new(|c| c.identity.run = Name::lit("r-2"))),
        (
            "definition",
            Box::new(|c| c.identity.definition = Name::lit("d@2")),
        ),
        ("revision", Box::new(|c| c.revision = Revision(2))),
        ("resource_version", Box::new(|c| c.resource_version = 2)),
        ("reason", Box::new(|c| c.reason = ReasonKind::ResourceWait)),
        (
            "next_intent",
            Box::new(|c| c.next_intent = Intent::Reconcile),
        ),
        ("pending", Box::new(|c| c.pending = None)),
        (
            "pending.attempt",
            Box::new(|c| c.pending = c.pending.map(|p| PendingCall { attempt: 1, ..p })),
        ),
        ("key_digest", Box::new(|c| c.key_digest = None)),
        ("requester", Box::new(|c| c.requester = Some(APPROVER))),
        ("waiting_on", Box::new(|c| c.waiting_on = Some(CALLBACK))),
        ("expires_at", Box::new(|c| c.expires_at = Time(51))),
        ("responsible", Box::new(|c| c.responsible = REQUESTER)),
        ("created_at", Box::new(|c| c.created_at = Time(2))),
        (
            "cancel_requested_by",
            Box::new(|c| c.cancel_requested_by = Some(CANCELLER)),
        ),
    ];
    let mut seen = vec![cp.digest];
    for (field, edit) in &edits {
        let mut tampered = cp;
        edit(&mut tampered);
        let expected = tampered.compute_digest();
        assert_eq!(tampered.verify(), Err((expected, cp.digest)), "{field}");
        assert!(!seen.contains(&expected), "{field} collides");
        seen.push(expected);
    }
}

#[test]
fn checkpoint_digest_encoding_is_self_delimiting() {
    // Moving a byte from one name to the next must change the digest.
    let (_, cp, _) = approval_checkpoint();
    let split_one = resealed(cp, |c| {
        c.identity.tenant = Name::lit("ab");
        c.identity.session = Name::lit("c");
    });
    let split_two = resealed(cp, |c| {
        c.identity.tenant = Name::lit("a");
        c.identity.session = Name::lit("bc");
    });
    assert_ne!(split_one.digest, split_two.digest);
}

#[test]
fn checkpoint_digest_of_a_known_checkpoint_is_stable() {
    // The digest is part of the stored format: changing the encoding invalidates every
    // stored checkpoint, so it must come with a new schema version (CKP-3). If this fails,
    // the encoding changed. The checkpoint is spelled out here, independent of fixtures, and
    // the expected values were computed outside the kernel from the encoding: SHA-256 over
    // "resumable/checkpoint/3\0", then each field in order, integers as big-endian u64,
    // enums and lengths as one byte, names as a length byte and 31 zero-padded bytes, and
    // options as a 0/1 tag before the value; the pending cancel last. Version 2, under its
    // own domain and without the pending cancel, keeps the value it always had.
    let known = Checkpoint {
        schema_version: 3,
        identity: Identity {
            tenant: Name::lit("acme"),
            session: Name::lit("s-1"),
            run: Name::lit("run-approval"),
            definition: Name::lit("publisher@1"),
        },
        revision: Revision(1),
        resource_version: 7,
        reason: ReasonKind::PendingApproval,
        next_intent: Intent::Dispatch,
        pending: Some(PendingCall {
            call_id: Name::lit("call-1"),
            tool: Name::lit("publish:demo"),
            args: Digest([0x11; 32]),
            attempt: 0,
        }),
        key_digest: Some(Digest([0x22; 32])),
        requester: Some(Name::lit("agent")),
        waiting_on: None,
        expires_at: Time(50),
        responsible: Name::lit("alice"),
        created_at: Time(1),
        batch: None,
        cancel_requested_by: None,
        digest: Digest::default(),
    };
    assert_eq!(
        known.compute_digest().to_string(),
        "f4aa099b5ed0108adb271b45ba4514280d379a94f1fe1060affca756d9ea5a86"
    );
    let cancelled = Checkpoint {
        cancel_requested_by: Some(Name::lit("bob")),
        ..known
    };
    assert_eq!(
        cancelled.compute_digest().to_string(),
        "85f9eda18092dbc2b0f8ba837e0afb21a19a0f0e9d40ebcbb773a26d3d21aeae"
    );
    let v2 = CheckpointV2 {
        schema_version: 2,
        identity: known.identity,
        revision: known.revision,
        resource_version: known.resource_version,
        reason: known.reason,
        next_intent: known.next_intent,
        pending: known.pending,
        key_digest: known.key_digest,
        requester: known.requester,
        waiting_on: known.waiting_on,
        expires_at: known.expires_at,
        responsible: known.responsible,
        created_at: known.created_at,
        digest: Digest::default(),
    };
    assert_eq!(
        v2.compute_digest().to_string(),
        "65bb47b2d59f0f237e6193a8b288e42bf0f67477d214c1c936d6440769a7c302"
    );
}

#[test]
fn checkpoint_key_digest_binds_the_key_to_the_arguments() {
    // KEY-1: the same key with other arguments is another digest.
    let key = IdempotencyKey::lit("idem-1");
    let args = Digest::of(b"a");
    assert_eq!(
        checkpoint::key_digest(&key, &args),
        checkpoint::key_digest(&key, &args)
    );
    assert_ne!(
        checkpoint::key_digest(&key, &args),
        checkpoint::key_digest(&key, &Digest::of(b"b"))
    );
    assert_ne!(
        checkpoint::key_digest(&key, &args),
        checkpoint::key_digest(&IdempotencyKey::lit("idem-2"), &args)
    );
}

/// Asserts that `older`, the digest of a checkpoint of an earlier version over `cp`'s facts,
/// is its own: it differs from `cp`'s, and `cp` carrying it does not verify.
fn domain_separated(cp: Checkpoint, older: Digest) {
    assert_ne!(older, cp.digest);
    let relabelled = Checkpoint {
        digest: older,
        ..cp
    };
    assert!(relabelled.verify().is_err());
}

#[test]
fn checkpoint_version_1_digest_differs_from_version_2_over_the_same_facts() {
    // Domain separation: a version 1 digest never verifies as a version 2 one.
    let (_, cp, _) = approval_checkpoint();
    domain_separated(cp, as_v1(&cp).digest);
}

#[test]
fn checkpoint_version_2_digest_differs_from_version_3_over_the_same_facts() {
    let (_, cp, _) = approval_checkpoint();
    domain_separated(cp, as_v2(&cp).digest);
}

#[test]
fn checkpoint_migrated_from_version_2_supplies_the_pending_cancel_and_resumes_the_run() {
    // CKP-3: version 2 did not record a pending cancel; the caller supplies it, nothing is
    // guessed, and a wrong value is refused on resume by the field-by-field comparison.
    let (run, cp, c) = approval_checkpoint();
    let migrated = as_v2(&cp).migrate(None).unwrap();
    assert_eq!(migrated, cp);
    let (next, _) = accept(&run, at(2, approving(migrated, &c)));
    assert_eq!(next.in_flight(), Some(&in_flight(c, 0, 1)));
    let wrong = as_v2(&cp).migrate(Some(CANCELLER)).unwrap();
    assert_eq!(
        reject(&run, at(2, approving(wrong, &c))),
        Rejection::CheckpointMismatch {
            field: CheckpointField::CancelRequestedBy
        }
    );
    let tampered = CheckpointV2 {
        revision: Revision(9),
        ..as_v2(&cp)
    };
    assert!(matches!(
        tampered.migrate(None),
        Err(MigrationError::DigestMismatch { .. })
    ));
}

#[test]
fn checkpoint_migrated_from_version_1_is_sealed_and_resumes_the_run() {
    // CKP-3: the explicit migrations supply the facts versions 1 and 2 lacked, nothing
    // guessed: version 1 to 2, then 2 to 3.
    let (run, cp, c) = approval_checkpoint();
    let v1 = as_v1(&cp);
    let migrated = v1
        .migrate(cp.identity.definition, cp.resource_version)
        .unwrap()
        .migrate(None)
        .unwrap();
    assert_eq!(migrated, cp);
    assert_eq!(migrated.verify(), Ok(()));
    let (next, _) = accept(&run, at(2, approving(migrated, &c)));
    assert_eq!(next.in_flight(), Some(&in_flight(c, 0, 1)));
}

#[test]
fn checkpoint_migrated_with_the_wrong_definition_or_resource_version_is_refused_on_resume() {
    let (run, cp, c) = approval_checkpoint();
    let v1 = as_v1(&cp);
    let migrated = |definition, version| {
        (v1.migrate(definition, version))
            .and_then(|v2| v2.migrate(None))
            .unwrap()
    };
    let wrong_definition = migrated(Name::lit("demo@0"), 1);
    let wrong_version = migrated(cp.identity.definition, 7);
    let cases = [
        (
            wrong_definition,
            Rejection::IdentityMismatch {
                field: IdentityField::Definition,
            },
        ),
        (
            wrong_version,
            Rejection::CheckpointMismatch {
                field: CheckpointField::ResourceVersion,
            },
        ),
    ];
    for (wrong, expected) in cases {
        assert_eq!(reject(&run, at(2, approving(wrong, &c))), expected);
    }
}

#[test]
fn checkpoint_migration_refuses_a_checkpoint_that_is_not_version_1() {
    let (_, cp, _) = approval_checkpoint();
    let mislabelled = CheckpointV1 {
        schema_version: SCHEMA_VERSION,
        ..as_v1(&cp)
    }
    .seal();
    assert_eq!(
        mislabelled.migrate(cp.identity.definition, 1),
        Err(MigrationError::NotVersion {
            expected: SCHEMA_V1,
            got: SCHEMA_VERSION
        })
    );
}

#[test]
fn checkpoint_migration_refuses_a_version_1_checkpoint_whose_digest_does_not_match() {
    let (_, cp, _) = approval_checkpoint();
    let sealed = as_v1(&cp);
    let tampered = CheckpointV1 {
        revision: Revision(9),
        ..sealed
    };
    assert_eq!(
        tampered.migrate(cp.identity.definition, 1),
        Err(MigrationError::DigestMismatch {
            expected: tampered.compute_digest(),
            found: sealed.digest
        })
    );
}

#[test]
fn checkpoint_decoded_from_its_json_is_current_and_verified() {
    let (_, cp, _) = approval_checkpoint();
    let bytes = serde_json::to_vec(&cp).unwrap();
    assert_eq!(decode_json(&bytes), Ok(Decoded::Current(cp)));
}

#[test]
fn checkpoint_decoded_from_a_newer_schema_is_refused_before_reading_the_rest() {
    // CKP-3: a newer schema may mean anything; only its version is read.
    for bytes in [
        br#"{"schema_version":4}"#.to_vec(),
        br#"{"schema_version":65535,"future_field":[1,2,3]}"#.to_vec(),
    ] {
        let got = serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()["schema_version"]
            .as_u64()
            .unwrap() as u16;
        assert_eq!(
            decode_json(&bytes),
            Err(DecodeError::SchemaTooNew {
                supported: SCHEMA_VERSION,
                got
            })
        );
    }
}

#[test]
fn checkpoint_decoded_from_version_1_or_2_is_returned_for_explicit_migration() {
    let (_, cp, _) = approval_checkpoint();
    let v1 = as_v1(&cp);
    let bytes = serde_json::to_vec(&v1).unwrap();
    assert_eq!(decode_json(&bytes), Ok(Decoded::Version1(v1)));
    let v2 = as_v2(&cp);
    let bytes = serde_json::to_vec(&v2).unwrap();
    assert_eq!(decode_json(&bytes), Ok(Decoded::Version2(v2)));
}

#[test]
fn checkpoint_decoded_from_a_tampered_version_1_is_refused_at_migration() {
    // Decoding a version 1 checkpoint does not verify it; the migration does, before use.
    let (_, cp, _) = approval_checkpoint();
    let mut value = serde_json::to_value(as_v1(&cp)).unwrap();
    value["revision"] = serde_json::Value::from(9);
    let Ok(Decoded::Version1(v1)) = decode_json(&json(&value)) else {
        panic!("a version 1 checkpoint decodes for migration");
    };
    assert!(matches!(
        v1.migrate(cp.identity.definition, 1),
        Err(MigrationError::DigestMismatch { .. })
    ));
}

#[test]
fn checkpoint_decoded_with_a_digest_that_does_not_match_is_refused() {
    // CKP-2: an edited revision in the stored bytes.
    let (_, cp, _) = approval_checkpoint();
    let mut value = serde_json::to_value(cp).unwrap();
    value["revision"] = serde_json::Value::from(0);
    let edited = Checkpoint {
        revision: Revision(0),
        ..cp
    };
    assert_eq!(
        decode_json(&json(&value)),
        Err(DecodeError::DigestMismatch {
            expected: edited.compute_digest(),
            found: cp.digest
        })
    );
}

#[test]
fn checkpoint_decoded_from_an_unknown_schema_is_refused() {
    assert_eq!(
        decode_json(br#"{"schema_version":0}"#),
        Err(DecodeError::UnknownSchema { got: 0 })
    );
}

#[test]
fn checkpoint_decoded_from_malformed_bytes_is_refused_with_where_it_broke() {
    let (_, cp, _) = approval_checkpoint();
    let mut missing_identity = serde_json::to_value(cp).unwrap();
    missing_identity.as_object_mut().unwrap().remove("identity");
    let mut bad_name = serde_json::to_value(cp).unwrap();
    bad_name["responsible"] = serde_json::Value::from("has space");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"".to_vec(), "eof"),
        (b"{\"schema_version\":2".to_vec(), "eof"),
        (b"not json".to_vec(), "syntax"),
        (vec![0xff, 0xfe, 0x00, 0x01], "syntax"),
        (b"{\"schema_version\":2} trailing".to_vec(), "syntax"),
        (b"{}".to_vec(), "data"),
        (b"[]".to_vec(), "data"),
        (b"{\"schema_version\":\"2\"}".to_vec(), "data"),
        (b"{\"schema_version\":70000}".to_vec(), "data"),
        (b"{\"schema_version\":-1}".to_vec(), "data"),
        (json(&missing_identity), "data"),
        (json(&bad_name), "data"),
    ];
    for (bytes, expected) in cases {
        match decode_json(&bytes) {
            Err(DecodeError::Malformed { category, line, .. }) => {
                assert_eq!(category, expected, "{:?}", String::from_utf8_lossy(&bytes));
                assert_eq!(line, 1);
            }
            other => panic!("{:?} decoded as {other:?}", String::from_utf8_lossy(&bytes)),
        }
    }
}

#[test]
fn checkpoint_decoded_malformed_reports_line_and_column() {
    match decode_json(b"{\n  \"schema_version\": 2,\n  oops\n}") {
        Err(DecodeError::Malformed {
            category,
            line,
            column,
        }) => assert_eq!((category, line, column), ("syntax", 3, 3)),
        other => panic!("decoded as {other:?}"),
    }
}

#[test]
fn checkpoint_decoded_with_an_unknown_extra_field_ignores_it() {
    // What the kernel does today: fields outside the schema are ignored, not refused. They
    // are not covered by the digest, so they cannot change what is resumed.
    let (_, cp, _) = approval_checkpoint();
    let mut value = serde_json::to_value(cp).unwrap();
    value["cancelled_by"] = serde_json::Value::from("mallory");
    assert_eq!(decode_json(&json(&value)), Ok(Decoded::Current(cp)));
}

#[test]
fn a_fingerprint_is_exactly_16_hex_digits_on_the_wire() {
    use resumable_kernel::Fingerprint;
    let read = |text: &str| serde_json::from_str::<Fingerprint>(&format!("\"{text}\""));
    let print = Fingerprint([0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
    assert_eq!(read("0123456789abcdef").unwrap(), print);
    assert_eq!(
        serde_json::to_string(&print).unwrap(),
        "\"0123456789abcdef\""
    );
    // A sign would be a second spelling of one fingerprint; a wide character must not panic.
    assert!(read("+123456789abcdef").is_err());
    assert!(read("0123456789abcd\u{e9}").is_err());
    assert!(read("0123456789abcde").is_err());
    // A refusal says what a fingerprint is; a debug print is the same hex as the wire's.
    let short = read("0123456789abcde").unwrap_err().to_string();
    assert!(short.contains("16 hex digits"), "{short}");
    assert_eq!(format!("{print:?}"), "0123456789abcdef");
}
