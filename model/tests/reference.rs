//! The reference lifecycle machine, driven on its own: the seed's verdicts, a few paths per
//! spec section, and for each broken variant the input on which it parts from the reference.
//!
//! Nothing here runs the kernel: the two machines are compared by conformance.

use resumable_kernel::*;
use resumable_model::reference::{RefRun, Reference, Status};
use resumable_model::variant::Variant;
use resumable_model::Lifecycle;
use resumable_testkit::{self as kit, Machine};
use resumable_testkit::{
    approval, at, call, checkpoint_of, contract, first_dispatch, identity, outcome,
};
use resumable_testkit::{resume, resume_with, suspend_for_approval};
use resumable_testkit::{APPROVER, OPERATOR, REQUESTER, WINDOW};

// -------------------------------------------------------------------------------------------
// Fixtures: the testkit's, on the reference machine, and builders of its own.
// -------------------------------------------------------------------------------------------

const REF: Reference = Reference::new();

/// The reference machine, or one of its variants, as the testkit's scenarios drive it.
struct On<'a>(&'a Reference);

impl Machine for On<'_> {
    type Run = RefRun;

    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn create(&self, identity: Identity, policy: Policy, at: Time) -> Result<RefRun, PolicyError> {
        self.0.create(identity, policy, at)
    }

    fn step(&self, run: &RefRun, input: &Input) -> Result<(RefRun, Effects), Rejection> {
        self.0.step(run, input)
    }

    fn phase(&self, run: &RefRun) -> Phase {
        run.phase()
    }

    fn revision(&self, run: &RefRun) -> Revision {
        run.revision
    }
}

fn new_run(run: &str) -> RefRun {
    kit::new_run_on(&On(&REF), run)
}

fn accept_on(m: &Reference, run: &RefRun, input: Input) -> (RefRun, Effects) {
    kit::accept_on(&On(m), run, input)
}

fn reject_on(m: &Reference, run: &RefRun, input: Input) -> Rejection {
    kit::reject_on(&On(m), run, input)
}

fn accept(run: &RefRun, input: Input) -> (RefRun, Effects) {
    accept_on(&REF, run, input)
}

fn reject(run: &RefRun, input: Input) -> Rejection {
    reject_on(&REF, run, input)
}

/// A run suspended at t1 for approval of `c`, expiring at t50, with its checkpoint.
fn pending(c: Call) -> (RefRun, Checkpoint) {
    kit::pending_on(&On(&REF), c)
}

/// A run whose dispatch of `c` (at t1) was in flight when the worker restarted (at t2).
fn outcome_unknown(c: Call) -> (RefRun, Checkpoint) {
    kit::outcome_unknown_on(&On(&REF), c)
}

fn reason_of(run: &RefRun) -> Option<ReasonKind> {
    kit::reason_on(&On(&REF), run)
}

fn suspend_for_callback(callback: &str, expires_at: u64) -> Event {
    Event::Suspend {
        wait: Wait::Callback {
            callback: Name::new(callback).unwrap(),
        },
        expires_at: Time(expires_at),
        responsible: APPROVER,
        resource_version: 1,
    }
}

fn facts_for(cp: &Checkpoint) -> Facts {
    Facts {
        resource_version: cp.resource_version,
        permitted: true,
        within_budget: true,
    }
}

fn dispatches(fx: &Effects) -> Vec<Dispatch> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Dispatch(d) => Some(d),
            _ => None,
        })
        .collect()
}

fn kinds(fx: &Effects) -> Vec<&'static str> {
    fx.iter()
        .map(|e| match e {
            Effect::Audit(_) => "audit",
            Effect::History(_) => "history",
            Effect::PersistCheckpoint(_) => "checkpoint",
            Effect::Dispatch(_) => "dispatch",
            Effect::Query(_) => "query",
        })
        .collect()
}

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
        at(
            2,
            Event::ToolResult {
                call_id: c.call_id,
                attempt: 0,
                result: Digest::of(b"ok"),
            },
        ),
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let mut stranger = cp;
    stranger.identity.tenant = Name::lit("tenant-b");
    let stranger = stranger.seal();
    assert_eq!(
        reject(
            &run,
            at(
                0,
                resume(stranger, Decision::Approve(approval(&stranger, &c)))
            )
        ),
        Rejection::IdentityMismatch {
            field: IdentityField::Tenant
        }
    );
}

#[test]
fn suspended_resume_with_a_tampered_checkpoint_is_rejected_with_both_digests() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let v1 = kit::as_v1(&cp);
    let migrated = v1
        .migrate(cp.identity.definition, cp.resource_version)
        .and_then(|v2| v2.migrate(None))
        .unwrap();
    assert_eq!(migrated, cp);
    accept(
        &run,
        at(
            2,
            resume(migrated, Decision::Approve(approval(&migrated, &c))),
        ),
    );
}

#[test]
fn suspended_resume_from_a_future_revision_is_rejected() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let future = Checkpoint {
        revision: Revision(5),
        ..cp
    }
    .seal();
    assert_eq!(
        reject(
            &run,
            at(2, resume(future, Decision::Approve(approval(&future, &c))))
        ),
        Rejection::FutureRevision {
            current: Revision(1),
            got: Revision(5)
        }
    );
}

#[test]
fn resume_race_duplicate_is_applied_and_a_different_decision_conflicts() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let (running, _) = accept(
        &run,
        at(2, resume(cp, Decision::Approve(approval(&cp, &c)))),
    );
    let forged = Checkpoint {
        revision: running.revision,
        ..cp
    }
    .seal();
    assert_eq!(
        reject(
            &running,
            at(3, resume(forged, Decision::Approve(approval(&forged, &c))))
        ),
        Rejection::NotSuspended {
            phase: PhaseKind::Running
        }
    );
}

#[test]
fn suspended_resume_with_a_checkpoint_that_moved_the_expiry_is_rejected() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let later = Checkpoint {
        expires_at: Time(500),
        ..cp
    }
    .seal();
    assert_eq!(
        reject(
            &run,
            at(60, resume(later, Decision::Approve(approval(&later, &c))))
        ),
        Rejection::CheckpointMismatch {
            field: CheckpointField::ExpiresAt
        }
    );
}

#[test]
fn suspended_resume_after_the_suspension_expired_is_rejected() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    assert_eq!(
        reject(
            &run,
            at(51, resume(cp, Decision::Approve(approval(&cp, &c))))
        ),
        Rejection::Expired {
            expires_at: Time(50),
            now: Time(51)
        }
    );
    // At the expiry itself the decision is still on time.
    accept(
        &run,
        at(50, resume(cp, Decision::Approve(approval(&cp, &c)))),
    );
}

#[test]
fn suspended_resume_with_a_decision_for_another_reason_is_rejected() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
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

/// A run that dispatched `c` at t1 and recorded its result at t2.
fn after_result(c: Call) -> RefRun {
    let (run, _) = accept(&new_run("r"), at(1, first_dispatch(c)));
    let result = Event::ToolResult {
        call_id: c.call_id,
        attempt: 0,
        result: Digest::of(b"ok"),
    };
    accept(&run, at(2, result)).0
}

#[test]
fn running_dispatch_reusing_a_call_id_or_a_key_with_other_arguments_is_rejected() {
    let c = call("c", "t", "k");
    let run = after_result(c);
    assert_eq!(
        reject(
            &run,
            at(
                3,
                Event::Dispatch {
                    call: c,
                    prior: spent(&c),
                    resource_version: None
                }
            )
        ),
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
                Event::Dispatch {
                    call: edited,
                    prior: Prior {
                        call_id_used: false,
                        ..spent(&c)
                    },
                    resource_version: None,
                }
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
    let wrong = Event::ToolResult {
        call_id: c.call_id,
        attempt: 1,
        result: Digest::of(b"ok"),
    };
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
        reject(
            &run,
            at(
                4,
                Event::Dispatch {
                    call: c,
                    prior: spent(&c),
                    resource_version: None
                }
            )
        ),
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

// -------------------------------------------------------------------------------------------
// Broken variants: each parts from the reference on the input it is meant to break.
// -------------------------------------------------------------------------------------------

fn variant(v: Variant) -> Reference {
    Reference::broken(v)
}

#[test]
fn variant_names_round_trip_and_each_names_its_targets() {
    let mut names: Vec<_> = Variant::ALL.iter().map(|v| v.name()).collect();
    for v in Variant::ALL {
        assert_eq!(Variant::from_name(v.name()), Some(v));
        assert!(!v.targets().is_empty() && !v.description().is_empty());
        assert_eq!(variant(v).name(), v.name());
    }
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Variant::ALL.len());
    assert_eq!(Variant::from_name("no-such-variant"), None);
    assert_eq!(REF.name(), "reference");
}

#[test]
fn no_revision_check_accepts_a_stale_checkpoint() {
    // Suspend for callback cb at t1, resume it, suspend again identically: the first
    // checkpoint matches the new suspension in every field but the revision.
    let (run, fx) = accept(&new_run("r"), at(1, suspend_for_callback("cb", 9)));
    let stale = checkpoint_of(&fx);
    let arrived = Decision::Callback {
        callback: Name::lit("cb"),
        payload: Digest::of(b"p"),
    };
    let (run, _) = accept(&run, at(1, resume(stale, arrived)));
    let (run, _) = accept(&run, at(1, suspend_for_callback("cb", 9)));
    let again = Decision::Callback {
        callback: Name::lit("cb"),
        payload: Digest::of(b"q"),
    };
    assert_eq!(
        reject(&run, at(1, resume(stale, again))),
        Rejection::AlreadyResumed {
            from: Revision(1),
            to: Revision(2)
        }
    );
    let (resumed, _) = accept_on(
        &variant(Variant::NoRevisionCheck),
        &run,
        at(1, resume(stale, again)),
    );
    assert_eq!(resumed.status, Status::Running);
}

#[test]
fn double_suspend_replaces_the_pending_approval() {
    let (run, _) = pending(call("c", "t", "k"));
    let input = at(2, suspend_for_callback("cb", 9));
    assert_eq!(
        reject(&run, input),
        Rejection::AlreadySuspended {
            reason: ReasonKind::PendingApproval
        }
    );
    let (next, _) = accept_on(&variant(Variant::DoubleSuspend), &run, input);
    assert_eq!(reason_of(&next), Some(ReasonKind::ExternalCallback));
}

#[test]
fn approval_not_bound_to_args_releases_a_call_whose_arguments_were_not_approved() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let other_args = Approval {
        args: Digest::of(b"what the approver saw"),
        ..approval(&cp, &c)
    };
    let input = at(2, resume(cp, Decision::Approve(other_args)));
    assert_eq!(
        reject(&run, input),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Args
        }
    );
    let (_, fx) = accept_on(&variant(Variant::ApprovalNotBoundToArgs), &run, input);
    assert_eq!(dispatches(&fx)[0].args, c.args);
}

#[test]
fn retry_unknown_without_reconcile_dispatches_again_on_recover() {
    let c = call("c", "t", "k");
    let (run, _) = accept(&new_run("r"), at(1, first_dispatch(c)));
    let (safe, fx) = accept(&run, at(2, Event::Recover));
    assert_eq!(reason_of(&safe), Some(ReasonKind::OutcomeUnknown));
    assert!(dispatches(&fx).is_empty());
    let (blind, fx) = accept_on(
        &variant(Variant::RetryUnknownWithoutReconcile),
        &run,
        at(2, Event::Recover),
    );
    assert_eq!(dispatches(&fx).len(), 1);
    assert!(matches!(blind.status, Status::AwaitingResult(f) if f.dispatches == 2));
}

/// The retry the machine commands after "not committed" for a tool with this contract: the
/// attempt dispatched, or `None` when it hands the run to a person.
fn retry_attempt(m: &Reference, dedupes: bool, fences: bool) -> Option<u8> {
    let c = Call {
        contract: contract(dedupes, fences),
        ..call("c", "t", "k")
    };
    let (run, cp) = outcome_unknown(c);
    let (_, fx) = accept_on(
        m,
        &run,
        at(
            3,
            resume(cp, Decision::Reconcile(QueryAnswer::NotCommitted)),
        ),
    );
    dispatches(&fx).first().map(|d| d.attempt)
}

#[test]
fn retry_without_contract_retries_a_tool_that_neither_dedupes_nor_fences() {
    assert_eq!(retry_attempt(&REF, false, false), None);
    assert_eq!(
        retry_attempt(&variant(Variant::RetryWithoutContract), false, false),
        Some(0)
    );
}

#[test]
fn retry_fresh_key_on_dedupe_escapes_the_tools_dedupe() {
    assert_eq!(retry_attempt(&REF, true, false), Some(0));
    assert_eq!(
        retry_attempt(&variant(Variant::RetryFreshKeyOnDedupe), true, false),
        Some(1)
    );
}

#[test]
fn retry_same_key_on_fence_retries_under_the_dead_key() {
    assert_eq!(retry_attempt(&REF, false, true), Some(1));
    assert_eq!(
        retry_attempt(&variant(Variant::RetrySameKeyOnFence), false, true),
        Some(0)
    );
}

#[test]
fn identity_after_revision_tells_a_stranger_the_revision_is_stale() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let probe = Checkpoint {
        identity: identity("someone-elses"),
        revision: Revision(0),
        ..cp
    }
    .seal();
    let input = at(2, resume(probe, Decision::Approve(approval(&probe, &c))));
    assert_eq!(
        reject(&run, input),
        Rejection::IdentityMismatch {
            field: IdentityField::Run
        }
    );
    assert_eq!(
        reject_on(&variant(Variant::IdentityAfterRevision), &run, input),
        Rejection::StaleRevision {
            current: Revision(1),
            got: Revision(0)
        }
    );
}

#[test]
fn no_identity_check_resumes_from_another_tenants_checkpoint() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let mut foreign = cp;
    foreign.identity.tenant = Name::lit("tenant-b");
    let foreign = foreign.seal();
    let input = at(
        2,
        resume(foreign, Decision::Approve(approval(&foreign, &c))),
    );
    assert_eq!(
        reject(&run, input),
        Rejection::IdentityMismatch {
            field: IdentityField::Tenant
        }
    );
    accept_on(&variant(Variant::NoIdentityCheck), &run, input);
}

/// ID-1, one field at a time: a checkpoint that differs from the run in that field alone is
/// refused naming it, by the reference and by every variant but the one that ignores it,
/// which accepts it.
#[test]
fn identity_ignores_each_field_resumes_from_a_checkpoint_differing_in_it_alone() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let ignoring = [
        (IdentityField::Tenant, Variant::IdentityIgnoresTenant),
        (IdentityField::Session, Variant::IdentityIgnoresSession),
        (IdentityField::Run, Variant::IdentityIgnoresRun),
        (
            IdentityField::Definition,
            Variant::IdentityIgnoresDefinition,
        ),
    ];
    for (field, ignores) in ignoring {
        let mut foreign = cp;
        let other = Name::lit("other");
        match field {
            IdentityField::Tenant => foreign.identity.tenant = other,
            IdentityField::Session => foreign.identity.session = other,
            IdentityField::Run => foreign.identity.run = other,
            IdentityField::Definition => foreign.identity.definition = other,
        }
        let foreign = foreign.seal();
        let input = at(
            2,
            resume(foreign, Decision::Approve(approval(&foreign, &c))),
        );
        assert_eq!(reject(&run, input), Rejection::IdentityMismatch { field });
        for (_, v) in ignoring.into_iter().filter(|(_, v)| *v != ignores) {
            assert_eq!(
                reject_on(&variant(v), &run, input),
                Rejection::IdentityMismatch { field },
                "{v}"
            );
        }
        accept_on(&variant(ignores), &run, input);
    }
}

#[test]
fn approvals_never_expire_accepts_a_late_approval() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let late = Approval {
        expires_at: Time(10),
        ..approval(&cp, &c)
    };
    let input = at(60, resume(cp, Decision::Approve(late)));
    assert_eq!(
        reject(&run, input),
        Rejection::Expired {
            expires_at: Time(50),
            now: Time(60)
        }
    );
    let (_, fx) = accept_on(&variant(Variant::ApprovalsNeverExpire), &run, input);
    assert_eq!(dispatches(&fx).len(), 1);
}

#[test]
fn self_approval_allowed_lets_the_requester_release_its_own_call() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let own = Approval {
        approver: REQUESTER,
        ..approval(&cp, &c)
    };
    let input = at(2, resume(cp, Decision::Approve(own)));
    assert_eq!(
        reject(&run, input),
        Rejection::SelfApproval { party: REQUESTER }
    );
    let (_, fx) = accept_on(&variant(Variant::SelfApprovalAllowed), &run, input);
    assert_eq!(dispatches(&fx).len(), 1);
}

#[test]
fn rerun_step_on_resume_dispatches_the_committed_call_again() {
    // The step dispatched c1 (committed, recorded), then paused for approval of c2.
    let c1 = call("c1", "charge", "k1");
    let c2 = call("c2", "publish", "k2");
    let run = after_result(c1);
    let (run, fx) = accept(&run, at(3, suspend_for_approval(c2, 50)));
    let cp = checkpoint_of(&fx);
    let input = at(4, resume(cp, Decision::Approve(approval(&cp, &c2))));
    let (_, fx) = accept(&run, input);
    assert_eq!(
        dispatches(&fx)
            .iter()
            .map(|d| d.call_id)
            .collect::<Vec<_>>(),
        [c2.call_id]
    );
    let (rerun, fx) = accept_on(&variant(Variant::RerunStepOnResume), &run, input);
    // The re-run step's dispatch goes out where the approved one should (a transition carries
    // one command).
    let sent: Vec<_> = dispatches(&fx).iter().map(|d| (d.call_id, d.key)).collect();
    assert_eq!(sent, [(c1.call_id, c1.key)]);
    // The re-executed call is the one whose result the run already recorded (REC-4).
    assert_eq!(
        rerun.snapshot().last_call.map(|o| o.call_id),
        Some(c1.call_id)
    );
}

#[test]
fn deny_leaves_running_keeps_the_run_alive_after_a_denial() {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    let input = at(2, resume(cp, Decision::Deny(approval(&cp, &c))));
    assert_eq!(accept(&run, input).0.phase().kind(), PhaseKind::Failed);
    let (alive, fx) = accept_on(&variant(Variant::DenyLeavesRunning), &run, input);
    assert_eq!(alive.status, Status::Running);
    assert_eq!(alive.revision, Revision(2));
    assert!(dispatches(&fx).is_empty());
}

#[test]
fn no_expiry_refuses_expire_after_the_deadline() {
    let (run, _) = pending(call("c", "t", "k"));
    let input = at(51, Event::Expire);
    accept(&run, input);
    assert_eq!(
        reject_on(&variant(Variant::NoExpiry), &run, input),
        Rejection::NotExpired {
            expires_at: Time(50),
            now: Time(51)
        }
    );
}

/// What the driver's history holds of `c` once it was bound and its result recorded.
fn spent(c: &Call) -> Prior {
    Prior {
        call_id_used: true,
        key: Some(KeyUse {
            args: c.args,
            committed: true,
        }),
    }
}
