//! Resuming a suspended run: the guards of RES-1 in their order (identity, clock, schema and
//! digest, revision, resource version, phase, checkpoint against run, expiry, decision), each
//! shown to fire, and to fire before the next one. Decision-specific checks live in the
//! `suspended_approval`, `suspended_wait` and `suspended_reconcile` files.

use resumable_kernel::*;
use resumable_testkit::*;

/// The approval fixture: a run suspended at t1 (r1, until t50) for approval of `publish()`.
fn fixture() -> (Run, Checkpoint, Call) {
    let c = publish();
    let (run, cp) = pending(c);
    (run, cp, c)
}

/// An edit of one identity field, with the field the rejection must name.
type IdentityEdit = (IdentityField, fn(&mut Identity));

/// An edit of a checkpoint, with the field the rejection must name.
type CheckpointEdit<'a> = (CheckpointField, &'a dyn Fn(&mut Checkpoint));

fn approve(cp: &Checkpoint, c: &Call) -> Decision {
    Decision::Approve(approval(cp, c))
}

fn resume_with(cp: Checkpoint, decision: Decision, resource_version: u64) -> Event {
    Event::Resume(Resume {
        checkpoint: cp,
        decision,
        facts: Facts {
            resource_version,
            ..facts()
        },
    })
}

#[test]
fn suspended_resume_from_another_tenant_session_run_or_definition_is_rejected_naming_it() {
    // ID-1: each identity field is checked, and the rejection names the field only.
    let (run, cp, c) = fixture();
    let edits: [IdentityEdit; 4] = [
        (IdentityField::Tenant, |i| i.tenant = Name::lit("tenant-b")),
        (IdentityField::Session, |i| {
            i.session = Name::lit("session-2")
        }),
        (IdentityField::Run, |i| i.run = Name::lit("run-other")),
        (IdentityField::Definition, |i| {
            i.definition = Name::lit("demo@2")
        }),
    ];
    for (field, edit) in edits {
        let forged = resealed(cp, |cp| edit(&mut cp.identity));
        let rejection = reject(&run, at(2, resume(forged, approve(&forged, &c))));
        assert_eq!(rejection, Rejection::IdentityMismatch { field });
        // Neither the run's values nor the offered ones are echoed back.
        let told = format!("{rejection} {rejection:?}");
        for value in [
            "tenant-a",
            "tenant-b",
            "session-1",
            "session-2",
            "run-approval",
        ] {
            assert!(!told.contains(value), "{told} echoes {value}");
        }
    }
}

#[test]
fn suspended_resume_checks_identity_fields_in_order_tenant_session_run_definition() {
    let (run, cp, c) = fixture();
    let cases: [IdentityEdit; 3] = [
        (IdentityField::Tenant, |i| {
            i.tenant = Name::lit("tenant-b");
            i.session = Name::lit("session-2");
        }),
        (IdentityField::Session, |i| {
            i.session = Name::lit("session-2");
            i.run = Name::lit("run-other");
        }),
        (IdentityField::Run, |i| {
            i.run = Name::lit("run-other");
            i.definition = Name::lit("demo@2");
        }),
    ];
    for (field, edit) in cases {
        let forged = resealed(cp, |cp| edit(&mut cp.identity));
        assert_eq!(
            reject(&run, at(2, resume(forged, approve(&forged, &c)))),
            Rejection::IdentityMismatch { field }
        );
    }
}

#[test]
fn suspended_resume_failing_identity_and_revision_is_rejected_for_identity() {
    // ID-1 before RES-3: a stranger learns nothing about the run's revision.
    let (run, cp, c) = fixture();
    let forged = resealed(cp, |cp| {
        cp.identity.tenant = Name::lit("tenant-b");
        cp.revision = Revision(0);
    });
    assert_eq!(
        reject(&run, at(2, resume(forged, approve(&forged, &c)))),
        Rejection::IdentityMismatch {
            field: IdentityField::Tenant
        }
    );
}

#[test]
fn suspended_resume_failing_identity_and_clock_is_rejected_for_identity() {
    let (run, cp, c) = fixture();
    let forged = resealed(cp, |cp| cp.identity.run = Name::lit("run-other"));
    assert_eq!(
        reject(&run, at(0, resume(forged, approve(&forged, &c)))),
        Rejection::IdentityMismatch {
            field: IdentityField::Run
        }
    );
}

#[test]
fn suspended_resume_from_the_past_is_rejected() {
    // CLK-1: the run was suspended at t1.
    let (run, cp, c) = fixture();
    assert_eq!(
        reject(&run, at(0, resume(cp, approve(&cp, &c)))),
        Rejection::ClockRegressed {
            last: Time(1),
            got: Time(0)
        }
    );
}

#[test]
fn suspended_resume_from_the_past_with_a_newer_schema_is_rejected_for_the_schema() {
    // The checkpoint's schema, digest and revision come before the clock (spec 4.1, guard 2).
    let (run, cp, c) = fixture();
    let newer = resealed(cp, |cp| cp.schema_version = 4);
    assert_eq!(
        reject(&run, at(0, resume(newer, approve(&newer, &c)))),
        Rejection::SchemaTooNew {
            supported: SCHEMA_VERSION,
            got: 4
        }
    );
}

#[test]
fn suspended_resume_from_the_past_with_a_stale_revision_is_rejected_as_stale() {
    let c = publish();
    let (run, old) = outcome_unknown(c);
    let (run, _) = accept(&run, at(3, Event::Cancel { by: CANCELLER }));
    assert_eq!(
        reject(
            &run,
            at(0, resume(old, Decision::Reconcile(QueryAnswer::Unknown)))
        ),
        Rejection::StaleRevision {
            current: Revision(3),
            got: Revision(2)
        }
    );
}

#[test]
fn suspended_resume_from_a_newer_schema_is_rejected() {
    // CKP-3: this kernel cannot know what a newer schema means.
    let (run, cp, c) = fixture();
    for got in [4, u16::MAX] {
        let newer = resealed(cp, |cp| cp.schema_version = got);
        assert_eq!(
            reject(&run, at(2, resume(newer, approve(&newer, &c)))),
            Rejection::SchemaTooNew {
                supported: SCHEMA_VERSION,
                got
            }
        );
    }
}

#[test]
fn suspended_resume_from_an_older_schema_requires_an_explicit_migration() {
    // CKP-3: never a silent coercion.
    let (run, cp, c) = fixture();
    for got in [SCHEMA_V1, SCHEMA_V2] {
        let older = resealed(cp, |cp| cp.schema_version = got);
        assert_eq!(
            reject(&run, at(2, resume(older, approve(&older, &c)))),
            Rejection::MigrationRequired {
                got,
                current: SCHEMA_VERSION
            }
        );
    }
}

#[test]
fn suspended_resume_from_schema_0_is_refused_as_unknown_not_as_needing_migration() {
    // CKP-3: no kernel ever wrote version 0, and no migration reads it.
    let (run, cp, c) = fixture();
    let zero = resealed(cp, |cp| cp.schema_version = 0);
    assert_eq!(
        reject(&run, at(2, resume(zero, approve(&zero, &c)))),
        Rejection::UnknownSchema { got: 0 }
    );
}

#[test]
fn suspended_resume_checks_the_schema_before_the_digest() {
    let (run, cp, c) = fixture();
    let garbage = Digest([0xab; 32]);
    for (schema, expected) in [
        (
            4,
            Rejection::SchemaTooNew {
                supported: SCHEMA_VERSION,
                got: 4,
            },
        ),
        (0, Rejection::UnknownSchema { got: 0 }),
        (
            SCHEMA_V1,
            Rejection::MigrationRequired {
                got: SCHEMA_V1,
                current: SCHEMA_VERSION,
            },
        ),
    ] {
        let unsealed = Checkpoint {
            schema_version: schema,
            digest: garbage,
            ..cp
        };
        assert_eq!(
            reject(&run, at(2, resume(unsealed, approve(&unsealed, &c)))),
            expected
        );
    }
}

#[test]
fn suspended_resume_with_a_garbage_digest_is_rejected_with_both_digests() {
    // CKP-2: the evidence is the digest of the fields and the digest carried.
    let (run, cp, c) = fixture();
    let garbage = Digest([0x5a; 32]);
    let forged = Checkpoint {
        digest: garbage,
        ..cp
    };
    assert_eq!(
        reject(&run, at(2, resume(forged, approve(&forged, &c)))),
        Rejection::DigestMismatch {
            expected: cp.digest,
            found: garbage
        }
    );
}

#[test]
fn suspended_resume_from_a_tampered_checkpoint_is_rejected_for_its_digest() {
    // CKP-2: a field edited without resealing; here the expiry, pushed back.
    let (run, cp, c) = fixture();
    let tampered = Checkpoint {
        expires_at: Time(5_000),
        ..cp
    };
    assert_eq!(
        reject(&run, at(2, resume(tampered, approve(&tampered, &c)))),
        Rejection::DigestMismatch {
            expected: tampered.compute_digest(),
            found: cp.digest
        }
    );
}

#[test]
fn suspended_resume_with_a_stale_revision_not_resealed_is_rejected_for_its_digest() {
    // The digest is checked before the revision.
    let (run, cp, c) = fixture();
    let old = Checkpoint {
        revision: Revision(0),
        ..cp
    };
    assert_eq!(
        reject(&run, at(2, resume(old, approve(&old, &c)))),
        Rejection::DigestMismatch {
            expected: old.compute_digest(),
            found: cp.digest
        }
    );
}

#[test]
fn suspended_resume_with_a_stale_revision_is_rejected() {
    // RES-3: the unknown outcome's checkpoint at r2 was superseded by the cancel's at r3.
    let c = publish();
    let (run, old) = outcome_unknown(c);
    let (run, _) = accept(&run, at(3, Event::Cancel { by: CANCELLER }));
    assert_eq!(
        reject(
            &run,
            at(4, resume(old, Decision::Reconcile(QueryAnswer::Unknown)))
        ),
        Rejection::StaleRevision {
            current: Revision(3),
            got: Revision(2)
        }
    );
}

#[test]
fn suspended_resume_with_a_revision_from_the_future_is_rejected() {
    let (run, cp, c) = fixture();
    let future = resealed(cp, |cp| cp.revision = Revision(2));
    assert_eq!(
        reject(&run, at(2, resume(future, approve(&future, &c)))),
        Rejection::FutureRevision {
            current: Revision(1),
            got: Revision(2)
        }
    );
}

#[test]
fn suspended_resume_with_a_stale_revision_and_a_changed_resource_is_rejected_as_stale() {
    let c = publish();
    let (run, old) = outcome_unknown(c);
    let (run, _) = accept(&run, at(3, Event::Cancel { by: CANCELLER }));
    let decision = Decision::Reconcile(QueryAnswer::Unknown);
    assert_eq!(
        reject(&run, at(4, resume_with(old, decision, 99))),
        Rejection::StaleRevision {
            current: Revision(3),
            got: Revision(2)
        }
    );
}

#[test]
fn suspended_resume_after_the_resource_changed_is_rejected() {
    // RES-3: the driver's current resource version differs from the checkpoint's.
    let (run, cp, c) = fixture();
    assert_eq!(
        reject(&run, at(2, resume_with(cp, approve(&cp, &c), 2))),
        Rejection::ResourceChanged {
            checkpoint: 1,
            current: 2
        }
    );
}

#[test]
fn suspended_resume_with_a_changed_resource_on_a_running_run_is_rejected_for_the_phase() {
    // The resource is a re-check of the present, after the phase and the decision (5.3).
    let c = publish();
    let run = call_in_flight(c);
    let (_, fx) = accept(&run, at(2, Event::Recover));
    let forged = resealed(*fx.checkpoint().unwrap(), |cp| cp.revision = run.revision());
    let decision = Decision::Reconcile(QueryAnswer::Unknown);
    assert_eq!(
        reject(&run, at(2, resume_with(forged, decision, 9))),
        Rejection::NotSuspended {
            phase: PhaseKind::Running
        }
    );
}

#[test]
fn suspended_resume_from_a_checkpoint_differing_from_the_run_is_rejected_naming_the_field() {
    // RES-4: a sealed, current checkpoint that does not describe the run's suspension, e.g.
    // another action (the seed's case), is refused field by field.
    let (run, cp, c) = fixture();
    let other_tool = |cp: &mut Checkpoint| {
        cp.pending = cp.pending.map(|p| PendingCall {
            tool: Name::lit("delete:demo"),
            ..p
        })
    };
    let other_attempt =
        |cp: &mut Checkpoint| cp.pending = cp.pending.map(|p| PendingCall { attempt: 1, ..p });
    let edits: [CheckpointEdit; 11] = [
        (CheckpointField::Reason, &|cp| {
            cp.reason = ReasonKind::ExternalCallback
        }),
        (CheckpointField::Reason, &|cp| {
            cp.next_intent = Intent::Continue
        }),
        (CheckpointField::PendingCall, &other_tool),
        (CheckpointField::PendingCall, &other_attempt),
        (CheckpointField::KeyDigest, &|cp| {
            cp.key_digest = Some(Digest::of(b"another key"))
        }),
        (CheckpointField::Requester, &|cp| {
            cp.requester = Some(APPROVER)
        }),
        (CheckpointField::WaitingOn, &|cp| {
            cp.waiting_on = Some(CALLBACK)
        }),
        (CheckpointField::CancelRequestedBy, &|cp| {
            cp.cancel_requested_by = Some(CANCELLER)
        }),
        (CheckpointField::ExpiresAt, &|cp| {
            cp.expires_at = Time(5_000)
        }),
        (CheckpointField::Responsible, &|cp| {
            cp.responsible = Name::lit("mallory")
        }),
        (CheckpointField::CreatedAt, &|cp| cp.created_at = Time(0)),
    ];
    for (field, edit) in edits {
        let forged = resealed(cp, |cp| edit(cp));
        assert_eq!(
            reject(&run, at(2, resume(forged, approve(&forged, &c)))),
            Rejection::CheckpointMismatch { field },
            "{field:?}"
        );
    }
}

#[test]
fn suspended_resume_from_a_checkpoint_with_another_resource_version_is_rejected() {
    // The driver's facts agree with the forged checkpoint, but the run recorded version 1.
    let (run, cp, c) = fixture();
    let forged = resealed(cp, |cp| cp.resource_version = 2);
    assert_eq!(
        reject(&run, at(2, resume(forged, approve(&forged, &c)))),
        Rejection::CheckpointMismatch {
            field: CheckpointField::ResourceVersion
        }
    );
}

#[test]
fn suspended_resume_names_the_first_differing_checkpoint_field() {
    let (run, cp, c) = fixture();
    let forged = resealed(cp, |cp| {
        cp.expires_at = Time(5_000);
        cp.responsible = Name::lit("mallory");
        cp.created_at = Time(0);
    });
    assert_eq!(
        reject(&run, at(2, resume(forged, approve(&forged, &c)))),
        Rejection::CheckpointMismatch {
            field: CheckpointField::ExpiresAt
        }
    );
}

#[test]
fn suspended_resume_with_an_extended_expiry_after_the_expiry_is_rejected_as_a_mismatch() {
    // RES-4 before RES-5: a forged expiry cannot buy time.
    let (run, cp, c) = fixture();
    let forged = resealed(cp, |cp| cp.expires_at = Time(5_000));
    assert_eq!(
        reject(&run, at(60, resume(forged, approve(&forged, &c)))),
        Rejection::CheckpointMismatch {
            field: CheckpointField::ExpiresAt
        }
    );
}

#[test]
fn suspended_resume_after_the_expiry_is_rejected() {
    // RES-5: the suspension expired at t50.
    let (run, cp, c) = fixture();
    assert_eq!(
        reject(&run, at(51, resume(cp, approve(&cp, &c)))),
        Rejection::Expired {
            expires_at: Time(50),
            now: Time(51)
        }
    );
}

#[test]
fn suspended_resume_at_the_expiry_is_accepted() {
    let (run, cp, c) = fixture();
    let (next, _) = accept(&run, at(50, resume(cp, approve(&cp, &c))));
    assert_eq!(next.in_flight(), Some(&in_flight(c, 0, 1)));
}

#[test]
fn suspended_resume_after_the_expiry_with_a_wrong_decision_is_rejected_as_expired() {
    let (run, cp, _) = fixture();
    let wrong = Decision::Reconcile(QueryAnswer::Unknown);
    assert_eq!(
        reject(&run, at(51, resume(cp, wrong))),
        Rejection::Expired {
            expires_at: Time(50),
            now: Time(51)
        }
    );
}

#[test]
fn suspended_resume_with_a_decision_for_another_reason_is_rejected() {
    // RES-6: each decision answers one reason; every other pairing is refused by name.
    let c = publish();
    let (approval_run, approval_cp) = pending(c);
    let granted = approval(&approval_cp, &c);
    let decisions = [
        Decision::Approve(granted),
        Decision::Deny(granted),
        Decision::Callback {
            callback: CALLBACK,
            payload: Digest::of(b"p"),
        },
        Decision::ResourceReady { resource: RESOURCE },
        Decision::Intervene {
            by: OPERATOR,
            resolution: Resolution::Continue,
        },
        Decision::Reconcile(QueryAnswer::Unknown),
    ];
    let fixtures = [
        (approval_run, approval_cp, ReasonKind::PendingApproval),
        {
            let (r, cp) = awaiting_callback();
            (r, cp, ReasonKind::ExternalCallback)
        },
        {
            let (r, cp) = awaiting_resource();
            (r, cp, ReasonKind::ResourceWait)
        },
        {
            let (r, cp) = awaiting_person();
            (r, cp, ReasonKind::ManualIntervention)
        },
        {
            let (r, cp) = outcome_unknown(c);
            (r, cp, ReasonKind::OutcomeUnknown)
        },
    ];
    let answers = |reason: ReasonKind, d: &Decision| {
        matches!(
            (reason, d.kind()),
            (
                ReasonKind::PendingApproval,
                DecisionKind::Approve | DecisionKind::Deny
            ) | (ReasonKind::ExternalCallback, DecisionKind::Callback)
                | (ReasonKind::ResourceWait, DecisionKind::ResourceReady)
                | (ReasonKind::ManualIntervention, DecisionKind::Intervene)
                | (ReasonKind::OutcomeUnknown, DecisionKind::Reconcile)
        )
    };
    let mut refused = 0;
    for (run, cp, reason) in fixtures {
        for decision in decisions.iter().filter(|d| !answers(reason, d)) {
            assert_eq!(
                reject(&run, at(10, resume(cp, *decision))),
                Rejection::DecisionMismatch {
                    reason,
                    decision: decision.kind()
                }
            );
            refused += 1;
        }
    }
    // Five reasons, six decisions; each reason is answered by one or two of them.
    assert_eq!(refused, 5 * 6 - 6);
}

#[test]
fn suspended_resume_duplicate_of_the_winning_decision_is_already_applied() {
    // RES-2: a caller whose reply was lost learns that it won, and what it produced, even
    // after the run moved on (here: the tool answered and the run suspended again).
    let (run, cp, c) = fixture();
    let (run, _) = accept(&run, at(2, resume(cp, approve(&cp, &c))));
    let duplicate = at(3, resume(cp, approve(&cp, &c)));
    let won = Rejection::AlreadyApplied {
        from: Revision(1),
        to: Revision(2),
    };
    assert_eq!(reject(&run, duplicate), won);
    let answer = Event::ToolResult {
        call_id: c.call_id,
        attempt: 0,
        result: Digest::of(b"ok"),
    };
    let (run, _) = accept(&run, at(3, answer));
    let (run, _) = accept(&run, at(4, first_dispatch(call("c-2", "t", "k-2"))));
    assert_eq!(run.revision(), Revision(4));
    assert_eq!(reject(&run, at(5, resume(cp, approve(&cp, &c)))), won);
}

#[test]
fn suspended_resume_duplicate_with_other_facts_is_still_already_applied() {
    // The revision guard comes before the resource version: facts are not the decision.
    let (run, cp, c) = fixture();
    let (run, _) = accept(&run, at(2, resume(cp, approve(&cp, &c))));
    assert_eq!(
        reject(&run, at(3, resume_with(cp, approve(&cp, &c), 42))),
        Rejection::AlreadyApplied {
            from: Revision(1),
            to: Revision(2)
        }
    );
}

#[test]
fn suspended_resume_with_another_decision_after_the_winner_is_already_resumed() {
    // RES-2: two approvers, two recovery workers: the loser learns it lost, and to what.
    let (run, cp, c) = fixture();
    let (run, _) = accept(&run, at(2, resume(cp, approve(&cp, &c))));
    let later_expiry = Approval {
        expires_at: Time(2_000),
        ..approval(&cp, &c)
    };
    for other in [
        Decision::Deny(approval(&cp, &c)),
        Decision::Approve(later_expiry),
    ] {
        assert_eq!(
            reject(&run, at(3, resume(cp, other))),
            Rejection::AlreadyResumed {
                from: Revision(1),
                to: Revision(2)
            }
        );
    }
}

#[test]
fn suspended_resume_from_another_checkpoint_of_the_winning_revision_learns_nothing() {
    // RES-2: only a caller holding the very checkpoint the winning resume was taken from is
    // told how its decision fared; one holding a resealed checkpoint of that revision (naming
    // another tool and another responsible party) is told only that it is stale.
    let (run, cp, c) = fixture();
    let (run, _) = accept(&run, at(2, resume(cp, approve(&cp, &c))));
    let forged = resealed(cp, |cp| {
        cp.responsible = Name::lit("mallory");
        cp.pending = cp.pending.map(|p| PendingCall {
            tool: Name::lit("delete:demo"),
            ..p
        });
    });
    for decision in [approve(&cp, &c), Decision::Deny(approval(&cp, &c))] {
        assert_eq!(
            reject(&run, at(3, resume(forged, decision))),
            Rejection::StaleRevision {
                current: Revision(2),
                got: Revision(1)
            }
        );
    }
}

#[test]
fn suspended_resume_duplicate_of_a_superseded_winner_is_only_stale() {
    // The run keeps the receipt of its last resume only: once a second resume wins, a
    // duplicate of the first is answered as stale.
    let c = with_contract(publish(), false, true, 3);
    let (run, cp, cp2) = unknown_after_a_retry(c);
    let first = Decision::Reconcile(QueryAnswer::NotCommitted);
    let (run, _) = accept(&run, at(5, resume(cp2, first)));
    assert_eq!(
        reject(&run, at(6, resume(cp2, first))),
        Rejection::AlreadyApplied {
            from: Revision(4),
            to: Revision(5)
        }
    );
    assert_eq!(
        reject(&run, at(6, resume(cp, first))),
        Rejection::StaleRevision {
            current: Revision(5),
            got: Revision(2)
        }
    );
}

#[test]
fn suspended_resume_accepted_records_a_new_audit_record_never_the_suspension_s() {
    // AUD-1: the resume's record is new: new revision, new time, the resume's kind.
    let (run, cp, c) = fixture();
    let (next, fx) = accept(&run, at(9, resume(cp, approve(&cp, &c))));
    assert_eq!(
        next.last_resume(),
        Some(&ResumeReceipt {
            from: Revision(1),
            to: Revision(2),
            checkpoint: cp.digest,
            decision: approve(&cp, &c)
        })
    );
    assert_eq!(
        fx.audit(),
        Some(&AuditRecord {
            revision: Revision(2),
            at: Time(9),
            event: EventKind::Resume,
            decision: Some(DecisionKind::Approve),
            phase: PhaseKind::Running,
            reason: None,
        })
    );
}
