//! The reference lifecycle machine, driven on its own: the seed's verdicts and a few paths
//! per spec section. Where each broken variant parts from it is `variants.rs`.
//!
//! Nothing here runs the kernel: the two machines are compared by conformance.

use resumable_kernel::*;
use resumable_model::reference::Status;
use resumable_testkit::{self as kit};
use resumable_testkit::{approval, at, call, checkpoint_of, contract, first_dispatch, outcome};
use resumable_testkit::{resume, resume_with, suspend_for_approval};
use resumable_testkit::{APPROVER, OPERATOR, REQUESTER, WINDOW};

mod reference_support;

use reference_support::*;

// -------------------------------------------------------------------------------------------
// The seed's simulation: the same steps, the same verdicts (the testkit's scenario).
// -------------------------------------------------------------------------------------------

#[test]
fn seed_simulation_verdicts_are_reproduced() {
    kit::seed_simulation(&On(&REF));
}

// -------------------------------------------------------------------------------------------
// Every accepted input: REV-1, AUD-1, CKP-1, CLK-1, INV-1.
// -------------------------------------------------------------------------------------------

#[test]
fn suspend_emits_audit_then_a_sealed_checkpoint_at_the_new_revision() {
    let (run, fx) = accept(
        &new_run("r"),
        at(1, suspend_for_approval(call("c", "t", "k"), 50)),
    );
    assert_eq!(kinds(&fx), ["audit", "history", "checkpoint"]);
    let audit = fx.audit().unwrap();
    assert_eq!(
        *audit,
        AuditRecord {
            revision: Revision(1),
            at: Time(1),
            event: EventKind::Suspend,
            decision: None,
            phase: PhaseKind::Suspended,
            reason: Some(ReasonKind::PendingApproval),
        }
    );
    let cp = checkpoint_of(&fx);
    assert_eq!(cp.verify(), Ok(()));
    assert_eq!((cp.revision, cp.created_at), (run.revision, Time(1)));
    assert_eq!(cp.next_intent, Intent::Dispatch);
    assert_eq!(cp.requester, Some(REQUESTER));
}

#[test]
fn each_accepted_input_advances_the_revision_by_one_and_audits_it_once() {
    let c = call("c", "t", "k");
    let inputs = [
        at(1, first_dispatch(c)),
        at(2, tool_result(&c, 0, b"ok")),
        at(3, suspend_for_callback("cb", 9)),
    ];
    let mut run = new_run("r");
    for (i, input) in inputs.into_iter().enumerate() {
        let (next, fx) = accept(&run, input);
        assert_eq!(next.revision, Revision(i as u64 + 1));
        assert_eq!(next.clock, input.at);
        let audits = fx.iter().filter(|e| matches!(e, Effect::Audit(_))).count();
        assert_eq!(audits, 1);
        assert!(matches!(fx.iter().next(), Some(Effect::Audit(a)) if a.revision == next.revision));
        run = next;
    }
}

#[test]
fn an_input_from_the_past_is_rejected_with_both_times() {
    let (run, _) = accept(&new_run("r"), at(5, suspend_for_callback("cb", 9)));
    assert_eq!(
        reject(&run, at(4, Event::Expire)),
        Rejection::ClockRegressed {
            last: Time(5),
            got: Time(4)
        }
    );
}

#[test]
fn a_terminal_run_refuses_every_input() {
    let (done, _) = accept(
        &new_run("r"),
        at(
            1,
            Event::Complete {
                result: Digest::of(b"x"),
            },
        ),
    );
    let terminal = Rejection::Terminal {
        phase: PhaseKind::Completed,
    };
    for event in [
        Event::Complete {
            result: Digest::of(b"y"),
        },
        Event::Fail {
            code: Name::lit("e"),
        },
        Event::Cancel { by: OPERATOR },
        Event::Recover,
        Event::Expire,
        suspend_for_callback("cb", 9),
        first_dispatch(call("c", "t", "k")),
    ] {
        assert_eq!(reject(&done, at(2, event)), terminal);
    }
}

#[test]
fn a_terminal_run_is_refused_as_terminal_before_the_clock_is_checked() {
    let (done, _) = accept(
        &new_run("r"),
        at(
            5,
            Event::Fail {
                code: Name::lit("e"),
            },
        ),
    );
    assert_eq!(
        reject(&done, at(1, Event::Cancel { by: OPERATOR })),
        Rejection::Terminal {
            phase: PhaseKind::Failed
        }
    );
}

#[test]
fn denied_duplicate_denial_is_answered_already_applied_even_after_the_run_failed() {
    // Spec 4.1 guard 2 puts the revision rows of section 5 before the terminal check (REJ-1),
    // so the denier whose reply was lost learns that its denial won.
    let (c, run, cp) = pending_c();
    let deny = Decision::Deny(approval(&cp, &c));
    let (failed, _) = accept(&run, at(2, resume(cp, deny)));
    assert_eq!(
        reject(&failed, at(3, resume(cp, deny))),
        Rejection::AlreadyApplied {
            from: cp.revision,
            to: failed.revision
        }
    );
    // A different decision on the same checkpoint lost, and is told so.
    let approve = Decision::Approve(approval(&cp, &c));
    assert_eq!(
        reject(&failed, at(3, resume(cp, approve))),
        Rejection::AlreadyResumed {
            from: cp.revision,
            to: failed.revision
        }
    );
}

// -------------------------------------------------------------------------------------------
// Suspend: SUS-1, SUS-2, APR-3 at the source.
// -------------------------------------------------------------------------------------------

#[test]
fn running_suspend_with_expiry_not_after_now_is_rejected() {
    assert_eq!(
        reject(&new_run("r"), at(7, suspend_for_callback("cb", 7))),
        Rejection::ExpiryNotInFuture {
            expires_at: Time(7),
            now: Time(7)
        }
    );
}

#[test]
fn running_suspend_with_the_requester_as_approver_is_rejected() {
    let suspend = Event::Suspend {
        wait: Wait::Approval {
            call: call("c", "t", "k"),
            requester: REQUESTER,
            prior: Prior::NONE,
        },
        expires_at: Time(9),
        responsible: REQUESTER,
        resource_version: 1,
    };
    assert_eq!(
        reject(&new_run("r"), at(1, suspend)),
        Rejection::SelfApproval { party: REQUESTER }
    );
}

#[test]
fn running_suspend_refuses_self_approval_before_binding_the_call() {
    let no_attempts = Call {
        contract: ToolContract {
            max_attempts: 0,
            ..contract(true, false)
        },
        ..call("c", "t", "k")
    };
    let suspend = |responsible| Event::Suspend {
        wait: Wait::Approval {
            call: no_attempts,
            requester: REQUESTER,
            prior: Prior::NONE,
        },
        expires_at: Time(9),
        responsible,
        resource_version: 1,
    };
    assert_eq!(
        reject(&new_run("r"), at(1, suspend(REQUESTER))),
        Rejection::SelfApproval { party: REQUESTER }
    );
    assert_eq!(
        reject(&new_run("r"), at(1, suspend(APPROVER))),
        Rejection::NoAttemptsAllowed
    );
}

#[test]
fn dispatching_suspend_waits_for_the_call_in_flight() {
    let c = call("c", "t", "k");
    let (run, _) = accept(&new_run("r"), at(1, first_dispatch(c)));
    assert_eq!(
        reject(&run, at(2, suspend_for_callback("cb", 9))),
        Rejection::DispatchInFlight { call_id: c.call_id }
    );
}

// -------------------------------------------------------------------------------------------
// Resume: RES-1 to RES-7, CKP-2, CKP-3.
// -------------------------------------------------------------------------------------------

#[test]
fn suspended_resume_checks_identity_before_the_clock() {
    let (c, run, cp) = pending_c();
    let mut stranger = cp;
    stranger.identity.tenant = Name::lit("tenant-b");
    let stranger = stranger.seal();
    assert_eq!(
        reject(&run, at(0, approving(stranger, &c))),
        Rejection::IdentityMismatch {
            field: IdentityField::Tenant
        }
    );
}

#[test]
fn suspended_resume_with_a_tampered_checkpoint_is_rejected_with_both_digests() {
    let (c, run, cp) = pending_c();
    let mut tampered = cp;
    tampered.expires_at = Time(10_000);
    let expected = tampered.compute_digest();
    assert_eq!(
        reject(
            &run,
            at(2, resume(tampered, Decision::Approve(approval(&cp, &c))))
        ),
        Rejection::DigestMismatch {
            expected,
            found: cp.digest
        }
    );
}

#[test]
fn suspended_resume_passes_the_schema_gate_only_at_the_current_version() {
    let (c, run, cp) = pending_c();
    let newer = Checkpoint {
        schema_version: SCHEMA_VERSION + 1,
        ..cp
    }
    .seal();
    assert_eq!(
        reject(
            &run,
            at(2, resume(newer, Decision::Approve(approval(&cp, &c))))
        ),
        Rejection::SchemaTooNew {
            supported: SCHEMA_VERSION,
            got: SCHEMA_VERSION + 1
        }
    );
    let older = Checkpoint {
        schema_version: SCHEMA_V1,
        ..cp
    }
    .seal();
    assert_eq!(
        reject(
            &run,
            at(2, resume(older, Decision::Approve(approval(&cp, &c))))
        ),
        Rejection::MigrationRequired {
            got: SCHEMA_V1,
            current: SCHEMA_VERSION
        }
    );
}

#[test]
fn suspended_resume_from_an_explicitly_migrated_v1_checkpoint_is_accepted() {
    let (c, run, cp) = pending_c();
    let v1 = kit::as_v1(&cp);
    let migrated = v1
        .migrate(cp.identity.definition, cp.resource_version)
        .and_then(|v2| v2.migrate(None))
        .unwrap();
    assert_eq!(migrated, cp);
    accept(&run, at(2, approving(migrated, &c)));
}

#[test]
fn suspended_resume_from_a_future_revision_is_rejected() {
    let (c, run, cp) = pending_c();
    let future = Checkpoint {
        revision: Revision(5),
        ..cp
    }
    .seal();
    assert_eq!(
        reject(&run, at(2, approving(future, &c))),
        Rejection::FutureRevision {
            current: Revision(1),
            got: Revision(5)
        }
    );
}

#[test]
fn resume_race_duplicate_is_applied_and_a_different_decision_conflicts() {
    let (c, run, cp) = pending_c();
    let approve = Decision::Approve(approval(&cp, &c));
    let (run, _) = accept(&run, at(2, resume(cp, approve)));
    let won = (Revision(1), Revision(2));
    assert_eq!(
        run.last_resume,
        Some(ResumeReceipt {
            from: won.0,
            to: won.1,
            checkpoint: cp.digest,
            decision: approve
        })
    );
    assert_eq!(
        reject(&run, at(3, resume(cp, approve))),
        Rejection::AlreadyApplied {
            from: won.0,
            to: won.1
        }
    );
    assert_eq!(
        reject(&run, at(3, resume(cp, Decision::Deny(approval(&cp, &c))))),
        Rejection::AlreadyResumed {
            from: won.0,
            to: won.1
        }
    );
}

#[test]
fn suspended_resume_after_the_resource_changed_is_rejected() {
    let (c, run, cp) = pending_c();
    let facts = Facts {
        resource_version: 2,
        ..facts_for(&cp)
    };
    assert_eq!(
        reject(
            &run,
            at(
                2,
                resume_with(cp, Decision::Approve(approval(&cp, &c)), facts)
            )
        ),
        Rejection::ResourceChanged {
            checkpoint: 1,
            current: 2
        }
    );
}

#[test]
fn running_resume_at_the_current_revision_is_rejected_as_not_suspended() {
    let (c, run, cp) = pending_c();
    let (running, _) = accept(&run, at(2, approving(cp, &c)));
    let forged = Checkpoint {
        revision: running.revision,
        ..cp
    }
    .seal();
    assert_eq!(
        reject(&running, at(3, approving(forged, &c))),
        Rejection::NotSuspended {
            phase: PhaseKind::Running
        }
    );
}

#[test]
fn suspended_resume_with_a_checkpoint_that_moved_the_expiry_is_rejected() {
    let (c, run, cp) = pending_c();
    let later = Checkpoint {
        expires_at: Time(500),
        ..cp
    }
    .seal();
    assert_eq!(
        reject(&run, at(60, approving(later, &c))),
        Rejection::CheckpointMismatch {
            field: CheckpointField::ExpiresAt
        }
    );
}

#[test]
fn suspended_resume_after_the_suspension_expired_is_rejected() {
    let (c, run, cp) = pending_c();
    assert_eq!(
        reject(&run, at(51, approving(cp, &c))),
        Rejection::Expired {
            expires_at: Time(50),
            now: Time(51)
        }
    );
    // At the expiry itself the decision is still on time.
    accept(&run, at(50, approving(cp, &c)));
}

#[test]
fn suspended_resume_with_a_decision_for_another_reason_is_rejected() {
    let (_, run, cp) = pending_c();
    assert_eq!(
        reject(
            &run,
            at(
                2,
                resume(cp, Decision::Reconcile(QueryAnswer::NotCommitted))
            )
        ),
        Rejection::DecisionMismatch {
            reason: ReasonKind::PendingApproval,
            decision: DecisionKind::Reconcile
        }
    );
}

#[test]
fn callback_resume_for_another_callback_is_rejected() {
    let (run, fx) = accept(&new_run("r"), at(1, suspend_for_callback("cb", 9)));
    let cp = checkpoint_of(&fx);
    let other = Decision::Callback {
        callback: Name::lit("other"),
        payload: Digest::of(b"p"),
    };
    assert_eq!(
        reject(&run, at(2, resume(cp, other))),
        Rejection::WaitMismatch {
            expected: Name::lit("cb"),
            got: Name::lit("other")
        }
    );
    let arrived = Decision::Callback {
        callback: Name::lit("cb"),
        payload: Digest::of(b"p"),
    };
    let (run, fx) = accept(&run, at(2, resume(cp, arrived)));
    assert_eq!(run.status, Status::Running);
    assert_eq!(kinds(&fx), ["audit"]);
}

#[test]
fn suspended_resume_into_new_work_rechecks_permission_then_budget() {
    let (c, run, cp) = pending_c();
    let approve = Decision::Approve(approval(&cp, &c));
    let neither = Facts {
        permitted: false,
        within_budget: false,
        ..facts_for(&cp)
    };
    assert_eq!(
        reject(&run, at(2, resume_with(cp, approve, neither))),
        Rejection::PermissionRevoked
    );
    let broke = Facts {
        within_budget: false,
        ..facts_for(&cp)
    };
    assert_eq!(
        reject(&run, at(2, resume_with(cp, approve, broke))),
        Rejection::BudgetExhausted
    );
    // A denial starts no work, so it needs neither.
    let (run, _) = accept(
        &run,
        at(
            2,
            resume_with(cp, Decision::Deny(approval(&cp, &c)), neither),
        ),
    );
    assert_eq!(run.phase().kind(), PhaseKind::Failed);
}

#[test]
fn outcome_unknown_committed_answer_needs_no_recheck_but_a_retry_does() {
    let revoked = |cp: &Checkpoint| Facts {
        permitted: false,
        ..facts_for(cp)
    };
    let (run, cp) = outcome_unknown(call("c", "t", "k"));
    let committed = Decision::Reconcile(QueryAnswer::Committed {
        result: Digest::of(b"done"),
    });
    accept(&run, at(3, resume_with(cp, committed, revoked(&cp))));
    // A retry the present no longer allows is not refused: the answer is a fact, and a
    // person decides instead (RES-3, RES-7).
    let retry = Decision::Reconcile(QueryAnswer::NotCommitted);
    let (next, fx) = accept(&run, at(3, resume_with(cp, retry, revoked(&cp))));
    assert_eq!(reason_of(&next), Some(ReasonKind::ManualIntervention));
    assert!(dispatches(&fx).is_empty());
    // Without a contract that allows a retry the run goes to a person: no new work.
    let neither = Call {
        contract: contract(false, false),
        ..call("c", "t", "k")
    };
    let (run, cp) = outcome_unknown(neither);
    let (run, _) = accept(&run, at(3, resume_with(cp, retry, revoked(&cp))));
    assert_eq!(reason_of(&run), Some(ReasonKind::ManualIntervention));
}

#[test]
fn manual_intervention_committed_without_an_unresolved_effect_is_rejected() {
    let suspend = Event::Suspend {
        wait: Wait::Intervention,
        expires_at: Time(9),
        responsible: OPERATOR,
        resource_version: 1,
    };
    let (run, fx) = accept(&new_run("r"), at(1, suspend));
    let cp = checkpoint_of(&fx);
    let committed = Decision::Intervene {
        by: OPERATOR,
        resolution: Resolution::Committed {
            result: Digest::of(b"x"),
        },
    };
    assert_eq!(
        reject(&run, at(2, resume(cp, committed))),
        Rejection::NothingUnresolved
    );
    let revoked = Facts {
        permitted: false,
        ..facts_for(&cp)
    };
    let go_on = Decision::Intervene {
        by: OPERATOR,
        resolution: Resolution::Continue,
    };
    assert_eq!(
        reject(&run, at(2, resume_with(cp, go_on, revoked))),
        Rejection::PermissionRevoked
    );
}

// -------------------------------------------------------------------------------------------
// Approvals: APR-1 to APR-4.
// -------------------------------------------------------------------------------------------

#[test]
fn approval_checks_binding_then_expiry_then_self_then_party() {
    let (c, run, cp) = pending_c();
    let good = approval(&cp, &c);
    let decide = |a: Approval| reject(&run, at(4, resume(cp, Decision::Approve(a))));
    // Every check fails: the revision binding is named first.
    let all_wrong = Approval {
        revision: Revision(0),
        call_id: Name::lit("other"),
        approver: REQUESTER,
        expires_at: Time(3),
        ..good
    };
    assert_eq!(
        decide(all_wrong),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Revision
        }
    );
    assert_eq!(
        decide(Approval {
            revision: cp.revision,
            ..all_wrong
        }),
        Rejection::ApprovalMismatch {
            field: ApprovalField::CallId
        }
    );
    let bound_but_late_and_own = Approval {
        approver: REQUESTER,
        expires_at: Time(3),
        ..good
    };
    assert_eq!(
        decide(bound_but_late_and_own),
        Rejection::ApprovalExpired {
            expires_at: Time(3),
            now: Time(4)
        }
    );
}

#[test]
fn approval_for_other_arguments_or_revision_is_rejected_naming_the_field() {
    let (c, run, cp) = pending_c();
    let cases = [
        (
            Approval {
                call_id: Name::lit("c-edited"),
                ..approval(&cp, &c)
            },
            ApprovalField::CallId,
        ),
        (
            Approval {
                args: Digest::of(b"edited"),
                ..approval(&cp, &c)
            },
            ApprovalField::Args,
        ),
        (
            Approval {
                requester: Name::lit("someone"),
                ..approval(&cp, &c)
            },
            ApprovalField::Requester,
        ),
        (
            Approval {
                revision: Revision(0),
                ..approval(&cp, &c)
            },
            ApprovalField::Revision,
        ),
    ];
    for (a, field) in cases {
        assert_eq!(
            reject(&run, at(2, resume(cp, Decision::Approve(a)))),
            Rejection::ApprovalMismatch { field }
        );
    }
}

#[test]
fn approval_past_its_own_expiry_is_rejected() {
    let (c, run, cp) = pending_c();
    let short = Approval {
        expires_at: Time(3),
        ..approval(&cp, &c)
    };
    assert_eq!(
        reject(&run, at(4, resume(cp, Decision::Approve(short)))),
        Rejection::ApprovalExpired {
            expires_at: Time(3),
            now: Time(4)
        }
    );
}

#[test]
fn approval_by_the_requester_or_a_stranger_is_rejected() {
    let (c, run, cp) = pending_c();
    let own = Approval {
        approver: REQUESTER,
        ..approval(&cp, &c)
    };
    assert_eq!(
        reject(&run, at(2, resume(cp, Decision::Approve(own)))),
        Rejection::SelfApproval { party: REQUESTER }
    );
    let stranger = Approval {
        approver: Name::lit("mallory"),
        ..approval(&cp, &c)
    };
    assert_eq!(
        reject(&run, at(2, resume(cp, Decision::Approve(stranger)))),
        Rejection::Unauthorised {
            expected: APPROVER,
            got: Name::lit("mallory")
        }
    );
}

#[test]
fn denial_fails_the_run_advances_the_revision_and_dispatches_nothing() {
    let (c, run, cp) = pending_c();
    let (run, fx) = accept(&run, at(2, resume(cp, Decision::Deny(approval(&cp, &c)))));
    assert_eq!(
        run.status,
        Status::Failed(FailCause::Denied { call_id: c.call_id })
    );
    assert_eq!(run.revision, Revision(2));
    assert_eq!(kinds(&fx), ["audit"]);
}

// -------------------------------------------------------------------------------------------
// Keys and write-ahead: KEY-1, KEY-2, WAL-1, WAL-2.
// -------------------------------------------------------------------------------------------

#[test]
fn running_dispatch_reusing_a_call_id_or_a_key_with_other_arguments_is_rejected() {
    let c = call("c", "t", "k");
    let run = after_result(c);
    assert_eq!(
        reject(&run, at(3, dispatch_stating(c, spent(&c)))),
        Rejection::CallIdReused { call_id: c.call_id }
    );
    let edited = Call {
        call_id: Name::lit("c2"),
        args: Digest::of(b"other"),
        ..c
    };
    assert_eq!(
        reject(
            &run,
            at(
                3,
                dispatch_stating(
                    edited,
                    Prior {
                        call_id_used: false,
                        ..spent(&c)
                    }
                )
            )
        ),
        Rejection::KeyConflict { key: c.key }
    );
    let zero = Call {
        call_id: Name::lit("c3"),
        key: IdempotencyKey::lit("k3"),
        contract: ToolContract {
            max_attempts: 0,
            ..c.contract
        },
        ..c
    };
    assert_eq!(
        reject(&run, at(3, first_dispatch(zero))),
        Rejection::NoAttemptsAllowed
    );
}

#[test]
fn running_dispatch_records_the_intent_and_commands_the_call_in_one_step() {
    let c = call("c", "t", "k");
    let (run, fx) = accept(&new_run("r"), at(1, first_dispatch(c)));
    assert_eq!(kinds(&fx), ["audit", "history", "dispatch"]);
    let Status::AwaitingResult(f) = run.status else {
        panic!("expected a dispatch in flight, got {:?}", run.status);
    };
    assert_eq!((f.attempt, f.dispatches), (0, 1));
    assert_eq!(f.call.key_digest, checkpoint::key_digest(&c.key, &c.args));
}

#[test]
fn dispatching_result_for_another_attempt_is_rejected_and_the_right_one_is_recorded() {
    let c = call("c", "t", "k");
    let (run, _) = accept(&new_run("r"), at(1, first_dispatch(c)));
    let wrong = tool_result(&c, 1, b"ok");
    assert_eq!(
        reject(&run, at(2, wrong)),
        Rejection::ResultMismatch {
            call_id: c.call_id,
            attempt: 0,
            got_call: c.call_id,
            got_attempt: 1
        }
    );
    let run = after_result(c);
    assert_eq!(run.status, Status::Running);
    let snap = run.snapshot();
    assert_eq!(snap.last_call, Some(outcome(&c, Digest::of(b"ok"))));
}

#[test]
fn dispatching_complete_waits_for_the_answer() {
    let c = call("c", "t", "k");
    let (run, _) = accept(&new_run("r"), at(1, first_dispatch(c)));
    assert_eq!(
        reject(
            &run,
            at(
                2,
                Event::Complete {
                    result: Digest::of(b"x")
                }
            )
        ),
        Rejection::DispatchInFlight { call_id: c.call_id }
    );
}

// -------------------------------------------------------------------------------------------
// Recovery and reconciliation: REC-1 to REC-4.
// -------------------------------------------------------------------------------------------

#[test]
fn dispatching_recover_suspends_for_reconcile_and_queries() {
    let c = call("c", "t", "k");
    let (run, cp) = outcome_unknown(c);
    assert_eq!(reason_of(&run), Some(ReasonKind::OutcomeUnknown));
    assert_eq!(cp.next_intent, Intent::Reconcile);
    assert_eq!(cp.responsible, OPERATOR);
    assert_eq!(cp.expires_at, Time(2 + WINDOW));
    let (_, fx) = accept(
        &accept(&new_run("r"), at(1, first_dispatch(c))).0,
        at(2, Event::Recover),
    );
    assert_eq!(kinds(&fx), ["audit", "checkpoint", "query"]);
}

#[test]
fn running_recover_with_nothing_in_flight_is_rejected() {
    assert_eq!(
        reject(&new_run("r"), at(1, Event::Recover)),
        Rejection::NothingInFlight {
            phase: PhaseKind::Running
        }
    );
}

#[test]
fn outcome_unknown_committed_answer_is_recorded_and_never_dispatched_again() {
    let c = call("c", "t", "k");
    let (run, cp) = outcome_unknown(c);
    let answer = Decision::Reconcile(QueryAnswer::Committed {
        result: Digest::of(b"done"),
    });
    let (run, fx) = accept(&run, at(3, resume(cp, answer)));
    assert_eq!(run.status, Status::Running);
    assert!(dispatches(&fx).is_empty());
    assert_eq!(run.last_call.map(|r| r.result), Some(Digest::of(b"done")));
    // The recorded call cannot be dispatched again.
    assert_eq!(
        reject(&run, at(4, dispatch_stating(c, spent(&c)))),
        Rejection::CallIdReused { call_id: c.call_id }
    );
}

#[test]
fn outcome_unknown_not_committed_retries_only_as_the_contract_allows() {
    // (dedupes, fences) -> the attempt of the retry, or None for a person.
    let table = [
        ((false, false), None),
        ((true, false), Some(0)),
        ((false, true), Some(1)),
        ((true, true), Some(1)),
    ];
    for ((dedupes, fences), expected) in table {
        let c = Call {
            contract: contract(dedupes, fences),
            ..call("c", "t", "k")
        };
        let (run, cp) = outcome_unknown(c);
        let (run, fx) = accept(
            &run,
            at(
                3,
                resume(cp, Decision::Reconcile(QueryAnswer::NotCommitted)),
            ),
        );
        let sent = dispatches(&fx);
        match expected {
            Some(attempt) => {
                assert_eq!(sent.len(), 1, "{dedupes} {fences}");
                assert_eq!((sent[0].key, sent[0].attempt), (c.key, attempt));
                assert!(matches!(run.status, Status::AwaitingResult(f) if f.dispatches == 2));
            }
            None => {
                assert!(sent.is_empty());
                assert_eq!(reason_of(&run), Some(ReasonKind::ManualIntervention));
            }
        }
    }
}

#[test]
fn outcome_unknown_not_committed_after_the_last_attempt_goes_to_a_person() {
    let c = Call {
        contract: ToolContract {
            max_attempts: 1,
            ..contract(true, true)
        },
        ..call("c", "t", "k")
    };
    let (run, cp) = outcome_unknown(c);
    let (run, fx) = accept(
        &run,
        at(
            3,
            resume(cp, Decision::Reconcile(QueryAnswer::NotCommitted)),
        ),
    );
    assert!(dispatches(&fx).is_empty());
    assert_eq!(reason_of(&run), Some(ReasonKind::ManualIntervention));
}

#[test]
fn manual_intervention_by_the_operator_records_a_committed_effect() {
    let c = call("c", "t", "k");
    let (run, cp) = outcome_unknown(c);
    let (run, fx) = accept(
        &run,
        at(3, resume(cp, Decision::Reconcile(QueryAnswer::Unknown))),
    );
    let cp = checkpoint_of(&fx);
    assert_eq!(cp.pending.map(|p| p.call_id), Some(c.call_id));
    let stranger = Decision::Intervene {
        by: APPROVER,
        resolution: Resolution::Continue,
    };
    assert_eq!(
        reject(&run, at(4, resume(cp, stranger))),
        Rejection::Unauthorised {
            expected: OPERATOR,
            got: APPROVER
        }
    );
    let settled = Decision::Intervene {
        by: OPERATOR,
        resolution: Resolution::Committed {
            result: Digest::of(b"seen"),
        },
    };
    let (run, _) = accept(&run, at(4, resume(cp, settled)));
    assert_eq!(run.status, Status::Running);
    assert_eq!(run.last_call.map(|r| r.call.call.call_id), Some(c.call_id));
}

// -------------------------------------------------------------------------------------------
// Expiry and cancel: EXP-1, CAN-1.
// -------------------------------------------------------------------------------------------

#[test]
fn suspended_expire_before_the_expiry_is_rejected_and_after_it_fails_the_run() {
    let (run, _) = pending(call("c", "t", "k"));
    assert_eq!(
        reject(&run, at(50, Event::Expire)),
        Rejection::NotExpired {
            expires_at: Time(50),
            now: Time(50)
        }
    );
    let (run, fx) = accept(&run, at(51, Event::Expire));
    assert_eq!(
        run.status,
        Status::Failed(FailCause::Expired { unresolved: None })
    );
    assert_eq!(kinds(&fx), ["audit"]);
}

#[test]
fn outcome_unknown_expire_escalates_to_a_person_before_failing() {
    let c = call("c", "t", "k");
    let (run, cp) = outcome_unknown(c);
    let (run, fx) = accept(&run, at(cp.expires_at.0 + 1, Event::Expire));
    assert_eq!(reason_of(&run), Some(ReasonKind::ManualIntervention));
    assert_eq!(kinds(&fx), ["audit", "checkpoint"]);
    let Status::Suspended(s) = run.status else {
        unreachable!()
    };
    let (run, _) = accept(&run, at(s.expires_at.0 + 1, Event::Expire));
    assert!(matches!(
        run.status,
        Status::Failed(FailCause::Expired { unresolved: Some(f) }) if f.call.call.call_id == c.call_id
    ));
}

#[test]
fn dispatching_cancel_waits_for_reconciliation_then_takes_effect() {
    // A fencing query settles the attempt, so its "not committed" lets the cancel take effect.
    let c = Call {
        contract: contract(false, true),
        ..call("c", "t", "k")
    };
    let (run, _) = accept(&new_run("r"), at(1, first_dispatch(c)));
    let (run, fx) = accept(&run, at(2, Event::Cancel { by: OPERATOR }));
    assert_eq!(kinds(&fx), ["audit", "checkpoint", "query"]);
    assert!(matches!(
        run.status,
        Status::Suspended(Suspension { reason: Reason::OutcomeUnknown { cancelled_by: Some(by), .. }, .. }) if by == OPERATOR
    ));
    assert_eq!(
        reject(&run, at(3, Event::Cancel { by: OPERATOR })),
        Rejection::CancelPending
    );
    let cp = checkpoint_of(&fx);
    let (run, fx) = accept(
        &run,
        at(
            3,
            resume(cp, Decision::Reconcile(QueryAnswer::NotCommitted)),
        ),
    );
    assert_eq!(
        run.status,
        Status::Failed(FailCause::Cancelled { by: OPERATOR })
    );
    assert!(dispatches(&fx).is_empty());
}

#[test]
fn outcome_unknown_cancel_is_recorded_within_the_suspension() {
    let (run, cp) = outcome_unknown(call("c", "t", "k"));
    let (next, fx) = accept(&run, at(3, Event::Cancel { by: OPERATOR }));
    assert_eq!(kinds(&fx), ["audit", "checkpoint"]);
    let moved = checkpoint_of(&fx);
    assert_eq!(moved.revision, Revision(3));
    assert_eq!(
        (moved.created_at, moved.expires_at),
        (cp.created_at, cp.expires_at)
    );
    assert_eq!(reason_of(&next), Some(ReasonKind::OutcomeUnknown));
}

#[test]
fn manual_intervention_with_an_unresolved_effect_records_a_cancel_once() {
    // CAN-2: the cancel waits in the person's suspension; a second one is pending.
    let (run, cp) = outcome_unknown(call("c", "t", "k"));
    let (run, _) = accept(
        &run,
        at(3, resume(cp, Decision::Reconcile(QueryAnswer::Unknown))),
    );
    let (next, fx) = accept(&run, at(4, Event::Cancel { by: OPERATOR }));
    assert_eq!(checkpoint_of(&fx).cancel_requested_by, Some(OPERATOR));
    assert_eq!(
        reject(&next, at(5, Event::Cancel { by: OPERATOR })),
        Rejection::CancelPending
    );
}
