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

/// The fixture's checkpoint changed by `edit` and sealed again, as a forger would.
fn forged(edit: impl FnOnce(&mut Checkpoint)) -> Checkpoint {
    let (_, cp, _) = fixture();
    resealed(cp, edit)
}

/// The fixture's checkpoint changed by `edit` and not sealed again.
fn unsealed(edit: impl FnOnce(&mut Checkpoint)) -> Checkpoint {
    let (_, mut cp, _) = fixture();
    edit(&mut cp);
    cp
}

/// The fixture's run's refusal at `t` of a resume from `cp` that approves its call, the
/// approval bound to `cp`'s revision, with facts that agree with `cp`.
fn refusal(t: u64, cp: Checkpoint) -> Rejection {
    let (run, _, c) = fixture();
    reject(&run, at(t, approving(cp, &c)))
}

/// A run whose unknown outcome of `publish()` (its checkpoint at r2, returned) was superseded
/// by a cancel at t3, r3.
fn cancelled_after_recovery() -> (Run, Checkpoint) {
    let (run, old) = outcome_unknown(publish());
    let (run, _) = accept(&run, at(3, Event::Cancel { by: CANCELLER }));
    (run, old)
}

fn unknown() -> Decision {
    Decision::Reconcile(QueryAnswer::Unknown)
}

/// The fixture's run after its approval won at t2 (r1 to r2), with the checkpoint it was
/// resumed from.
fn won() -> (Run, Checkpoint, Call) {
    let (run, cp, c) = fixture();
    let (run, _) = accept(&run, at(2, approving(cp, &c)));
    (run, cp, c)
}

#[test]
fn suspended_resume_from_another_tenant_session_run_or_definition_is_rejected_naming_it() {
    // ID-1: each identity field is checked, and the rejection names the field only.
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
        let rejection = refusal(2, forged(|cp| edit(&mut cp.identity)));
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
        let forged = forged(|cp| edit(&mut cp.identity));
        assert_eq!(refusal(2, forged), Rejection::IdentityMismatch { field });
    }
}

#[test]
fn suspended_resume_failing_identity_and_revision_or_clock_is_rejected_for_identity() {
    // ID-1 before RES-3 and CLK-1: a stranger learns nothing about the run's revision or time.
    let old_of_another_tenant = forged(|cp| {
        cp.identity.tenant = Name::lit("tenant-b");
        cp.revision = Revision(0);
    });
    let of_another_run = forged(|cp| cp.identity.run = Name::lit("run-other"));
    let cases = [
        (2, old_of_another_tenant, IdentityField::Tenant),
        (0, of_another_run, IdentityField::Run),
    ];
    for (t, forged, field) in cases {
        assert_eq!(
            refusal(t, forged),
            Rejection::IdentityMismatch { field },
            "t{t}"
        );
    }
}

#[test]
fn suspended_resume_from_the_past_is_rejected_after_the_schema() {
    // CLK-1: the run was suspended at t1. The checkpoint's schema, digest and revision come
    // before the clock (spec 4.1, guard 2).
    let (_, cp, _) = fixture();
    let regressed = Rejection::ClockRegressed {
        last: Time(1),
        got: Time(0),
    };
    assert_eq!(refusal(0, cp), regressed);
    assert_eq!(
        refusal(0, forged(|cp| cp.schema_version = 4)),
        Rejection::SchemaTooNew {
            supported: SCHEMA_VERSION,
            got: 4
        }
    );
}

#[test]
fn suspended_resume_from_another_schema_is_refused_naming_why_before_its_digest_is_checked() {
    // CKP-3: this kernel cannot know what a newer schema means; an older one requires an
    // explicit migration, never a silent coercion; and no kernel ever wrote version 0, nor
    // does a migration read it. The schema is checked before the digest: unsealed, with a
    // garbage digest, each checkpoint is refused for its schema all the same.
    let too_new = |got| Rejection::SchemaTooNew {
        supported: SCHEMA_VERSION,
        got,
    };
    let migrate = |got| Rejection::MigrationRequired {
        got,
        current: SCHEMA_VERSION,
    };
    let cases = [
        (4, too_new(4)),
        (u16::MAX, too_new(u16::MAX)),
        (SCHEMA_V1, migrate(SCHEMA_V1)),
        (SCHEMA_V2, migrate(SCHEMA_V2)),
        (0, Rejection::UnknownSchema { got: 0 }),
    ];
    for (schema, expected) in cases {
        let sealed = forged(|cp| cp.schema_version = schema);
        assert_eq!(refusal(2, sealed), expected, "{schema}");
        let garbage = unsealed(|cp| {
            cp.schema_version = schema;
            cp.digest = Digest([0xab; 32]);
        });
        assert_eq!(refusal(2, garbage), expected, "{schema}, unsealed");
    }
}

#[test]
fn suspended_resume_from_a_checkpoint_edited_and_not_resealed_is_rejected_for_its_digest() {
    // CKP-2: the evidence is the digest of the fields and the digest carried. A field edited
    // without resealing (the expiry, pushed back; a stale revision, for the digest is checked
    // before the revision) fails as a garbage digest does.
    let (_, cp, _) = fixture();
    let garbage = unsealed(|cp| cp.digest = Digest([0x5a; 32]));
    let pushed_back = unsealed(|cp| cp.expires_at = Time(5_000));
    let old = unsealed(|cp| cp.revision = Revision(0));
    let cases = [
        ("a garbage digest", garbage, (cp.digest, garbage.digest)),
        (
            "a pushed back expiry",
            pushed_back,
            (pushed_back.compute_digest(), cp.digest),
        ),
        ("a stale revision", old, (old.compute_digest(), cp.digest)),
    ];
    for (case, tampered, (expected, found)) in cases {
        let mismatch = Rejection::DigestMismatch { expected, found };
        assert_eq!(refusal(2, tampered), mismatch, "{case}");
    }
}

#[test]
fn suspended_resume_with_a_stale_revision_is_rejected_before_the_clock_and_the_resource() {
    // RES-3: the unknown outcome's checkpoint at r2 was superseded by the cancel's at r3. The
    // revision comes before the clock, and before the resource version.
    let (run, old) = cancelled_after_recovery();
    assert_eq!(
        reject(&run, at(4, resume(old, unknown()))),
        stale_revision(3, 2)
    );
    assert_eq!(
        reject(&run, at(0, resume(old, unknown()))),
        stale_revision(3, 2)
    );
    let moved = resume_at_version(old, unknown(), 99);
    assert_eq!(reject(&run, at(4, moved)), stale_revision(3, 2));
}

#[test]
fn suspended_resume_with_a_revision_from_the_future_is_rejected() {
    let future = forged(|cp| cp.revision = Revision(2));
    assert_eq!(
        refusal(2, future),
        Rejection::FutureRevision {
            current: Revision(1),
            got: Revision(2)
        }
    );
}

#[test]
fn suspended_resume_after_the_resource_changed_is_rejected() {
    // RES-3: the driver's current resource version differs from the checkpoint's.
    let (run, cp, c) = fixture();
    assert_eq!(
        reject(&run, at(2, resume_at_version(cp, approve(&cp, &c), 2))),
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
    assert_eq!(
        reject(&run, at(2, resume_at_version(forged, unknown(), 9))),
        Rejection::NotSuspended {
            phase: PhaseKind::Running
        }
    );
}

#[test]
fn suspended_resume_from_a_checkpoint_differing_from_the_run_is_rejected_naming_the_field() {
    // RES-4: a sealed, current checkpoint that does not describe the run's suspension, e.g.
    // another action (the seed's case), is refused field by field.
    let other_tool = |cp: &mut Checkpoint| {
        cp.pending = cp.pending.map(|p| PendingCall {
            tool: Name::lit("delete:demo"),
            ..p
        })
    };
    let other_attempt =
        |cp: &mut Checkpoint| cp.pending = cp.pending.map(|p| PendingCall { attempt: 1, ..p });
    let edits: [CheckpointEdit; 12] = [
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
        // The driver's facts agree with the forged checkpoint, but the run recorded version 1.
        (CheckpointField::ResourceVersion, &|cp| {
            cp.resource_version = 2
        }),
    ];
    for (field, edit) in edits {
        let forged = forged(edit);
        let mismatch = Rejection::CheckpointMismatch { field };
        assert_eq!(refusal(2, forged), mismatch, "{field:?}");
    }
}

#[test]
fn suspended_resume_names_the_first_differing_checkpoint_field() {
    let forged = forged(|cp| {
        cp.expires_at = Time(5_000);
        cp.responsible = Name::lit("mallory");
        cp.created_at = Time(0);
    });
    assert_eq!(
        refusal(2, forged),
        Rejection::CheckpointMismatch {
            field: CheckpointField::ExpiresAt
        }
    );
}

#[test]
fn suspended_resume_after_the_expiry_is_rejected_after_the_checkpoint_and_before_the_decision() {
    // RES-5: the suspension expired at t50. RES-4 comes before it: a forged expiry cannot buy
    // time; the decision comes after it.
    let extended = forged(|cp| cp.expires_at = Time(5_000));
    let mismatch = Rejection::CheckpointMismatch {
        field: CheckpointField::ExpiresAt,
    };
    assert_eq!(refusal(60, extended), mismatch);
    let (run, cp, _) = fixture();
    let expired = Rejection::Expired {
        expires_at: Time(50),
        now: Time(51),
    };
    assert_eq!(refusal(51, cp), expired);
    assert_eq!(reject(&run, at(51, resume(cp, unknown()))), expired);
}

#[test]
fn suspended_resume_at_the_expiry_is_accepted() {
    let (run, cp, c) = fixture();
    let (next, _) = accept(&run, at(50, resume(cp, approve(&cp, &c))));
    assert_eq!(next.in_flight(), Some(&in_flight(c, 0, 1)));
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
    let (run, cp, c) = won();
    assert_eq!(
        reject(&run, at(3, approving(cp, &c))),
        already_applied(1, 2)
    );
    let (run, _) = accept(&run, at(3, tool_result(&c, 0, b"ok")));
    let (run, _) = accept(&run, at(4, first_dispatch(call("c-2", "t", "k-2"))));
    assert_eq!(run.revision(), Revision(4));
    assert_eq!(
        reject(&run, at(5, approving(cp, &c))),
        already_applied(1, 2)
    );
}

#[test]
fn suspended_resume_duplicate_with_other_facts_is_still_already_applied() {
    // The revision guard comes before the resource version: facts are not the decision.
    let (run, cp, c) = won();
    let other_facts = resume_at_version(cp, approve(&cp, &c), 42);
    assert_eq!(reject(&run, at(3, other_facts)), already_applied(1, 2));
}

#[test]
fn suspended_resume_with_another_decision_after_the_winner_is_already_resumed() {
    // RES-2: two approvers, two recovery workers: the loser learns it lost, and to what.
    let (run, cp, c) = won();
    let granted = approval(&cp, &c);
    let later_expiry = Approval {
        expires_at: Time(2_000),
        ..granted
    };
    for other in [Decision::Deny(granted), Decision::Approve(later_expiry)] {
        let lost = reject(&run, at(3, resume(cp, other)));
        assert_eq!(lost, already_resumed(1, 2), "{}", other.kind());
    }
}

#[test]
fn suspended_resume_from_another_checkpoint_of_the_winning_revision_learns_nothing() {
    // RES-2: only a caller holding the very checkpoint the winning resume was taken from is
    // told how its decision fared; one holding a resealed checkpoint of that revision (naming
    // another tool and another responsible party) is told only that it is stale.
    let (run, cp, c) = won();
    let forged = forged(|cp| {
        cp.responsible = Name::lit("mallory");
        cp.pending = cp.pending.map(|p| PendingCall {
            tool: Name::lit("delete:demo"),
            ..p
        });
    });
    for decision in [approve(&cp, &c), Decision::Deny(approval(&cp, &c))] {
        let refused = reject(&run, at(3, resume(forged, decision)));
        assert_eq!(refused, stale_revision(2, 1), "{}", decision.kind());
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
        already_applied(4, 5)
    );
    assert_eq!(reject(&run, at(6, resume(cp, first))), stale_revision(5, 2));
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
