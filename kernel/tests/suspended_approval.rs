//! Suspended for approval: approve and deny, and every way an approval fails to bind to the
//! pending call (APR-1 to APR-4), with the checks in their order.

use resumable_kernel::*;
use resumable_testkit::*;

/// A run suspended at t1 (r1, until t50) for approval of `publish()` by [`APPROVER`].
fn fixture() -> (Run, Checkpoint, Call, Approval) {
    let c = publish();
    let (run, cp) = pending(c);
    let granted = approval(&cp, &c);
    (run, cp, c, granted)
}

#[test]
fn suspended_approval_approve_dispatches_the_call_once_under_its_original_key() {
    // APR-1, WAL-1: the approved call is in flight in `next` and dispatched, attempt 0.
    let (run, cp, c, granted) = fixture();
    let (next, fx) = accept(&run, at(2, resume(cp, Decision::Approve(granted))));
    assert_eq!(
        next.phase(),
        &Phase::Running {
            in_flight: Some(in_flight(c, 0, 1))
        }
    );
    assert_eq!(next.revision(), Revision(2));
    assert_eq!(
        effects(&fx),
        vec![
            audit(
                2,
                2,
                EventKind::Resume,
                Some(DecisionKind::Approve),
                PhaseKind::Running,
                None
            ),
            Effect::Dispatch(dispatch_of(&run, &c, 0)),
        ]
    );
}

#[test]
fn suspended_approval_deny_fails_the_run_and_advances_the_revision() {
    // APR-4: a denial fails the run; the denied call never runs.
    let (run, cp, c, granted) = fixture();
    let (next, fx) = accept(&run, at(2, resume(cp, Decision::Deny(granted))));
    assert_eq!(
        next.phase(),
        &Phase::Failed(FailCause::Denied { call_id: c.call_id })
    );
    assert_eq!(next.revision(), Revision(2));
    assert_eq!(
        effects(&fx),
        vec![audit(
            2,
            2,
            EventKind::Resume,
            Some(DecisionKind::Deny),
            PhaseKind::Failed,
            None
        )]
    );
}

#[test]
fn suspended_approval_deny_needs_no_permission_or_budget() {
    // RES-7 re-checks only resumes that lead to new work; a denial leads to none.
    let (run, cp, _, granted) = fixture();
    let (next, _) = accept(
        &run,
        at(2, with_facts(cp, Decision::Deny(granted), false, false)),
    );
    assert_eq!(next.phase().kind(), PhaseKind::Failed);
}

#[test]
fn suspended_approval_duplicate_of_a_winning_deny_is_already_applied_after_the_run_failed() {
    // RES-2, REJ-1: the checkpoint's revision is checked before the terminal phase, so an
    // approver whose reply was lost learns that its denial won, and a rival that it lost.
    let (run, cp, _, granted) = fixture();
    let (run, _) = accept(&run, at(2, resume(cp, Decision::Deny(granted))));
    let receipt = (Revision(1), Revision(2));
    assert_eq!(
        reject(&run, at(3, resume(cp, Decision::Deny(granted)))),
        Rejection::AlreadyApplied {
            from: receipt.0,
            to: receipt.1
        }
    );
    assert_eq!(
        reject(&run, at(3, resume(cp, Decision::Approve(granted)))),
        Rejection::AlreadyResumed {
            from: receipt.0,
            to: receipt.1
        }
    );
    // A resume at the failed run's own revision passes those checks and meets the phase.
    let current = resealed(cp, |cp| cp.revision = run.revision());
    assert_eq!(
        reject(&run, at(3, resume(current, Decision::Deny(granted)))),
        Rejection::Terminal {
            phase: PhaseKind::Failed
        }
    );
}

#[test]
fn suspended_approval_for_an_older_revision_is_rejected_as_stale() {
    // APR-1: approving is approving an action on a snapshot, not a standing pass.
    let (run, cp, _, granted) = fixture();
    let stale = Approval {
        revision: Revision(0),
        ..granted
    };
    for decision in [Decision::Approve(stale), Decision::Deny(stale)] {
        assert_eq!(
            reject(&run, at(2, resume(cp, decision))),
            Rejection::ApprovalMismatch {
                field: ApprovalField::Revision
            }
        );
    }
}

#[test]
fn suspended_approval_from_an_earlier_suspension_of_the_same_call_id_is_rejected_as_stale() {
    // The call was approved and answered, then a second call suspended for approval. The
    // old approval, replayed on the new checkpoint, binds to neither its revision nor, once
    // the revision is edited, its call (brief 3.14: replaying never reuses old decisions).
    let (run, cp, c, granted) = fixture();
    let (run, _) = accept(&run, at(2, resume(cp, Decision::Approve(granted))));
    let answer = Event::ToolResult {
        call_id: c.call_id,
        attempt: 0,
        result: Digest::of(b"ok"),
    };
    let (run, _) = accept(&run, at(3, answer));
    let second = call("call-2", "publish:demo", "idem-2");
    let (run, fx) = accept(&run, at(4, suspend_for_approval(second, 50)));
    let cp4 = *fx.checkpoint().unwrap();
    assert_eq!(
        reject(&run, at(5, resume(cp4, Decision::Approve(granted)))),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Revision
        }
    );
    let replayed_for_new_revision = Approval {
        revision: Revision(4),
        ..granted
    };
    assert_eq!(
        reject(
            &run,
            at(5, resume(cp4, Decision::Approve(replayed_for_new_revision)))
        ),
        Rejection::ApprovalMismatch {
            field: ApprovalField::CallId
        }
    );
}

#[test]
fn suspended_approval_for_another_call_is_rejected() {
    // KEY-2: an edited call is a new call that needs its own approval.
    let (run, cp, _, granted) = fixture();
    let other = Approval {
        call_id: Name::lit("call-2"),
        ..granted
    };
    assert_eq!(
        reject(&run, at(2, resume(cp, Decision::Approve(other)))),
        Rejection::ApprovalMismatch {
            field: ApprovalField::CallId
        }
    );
}

#[test]
fn suspended_approval_for_other_arguments_is_rejected() {
    let (run, cp, _, granted) = fixture();
    let other = Approval {
        args: Digest::of(b"edited arguments"),
        ..granted
    };
    assert_eq!(
        reject(&run, at(2, resume(cp, Decision::Approve(other)))),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Args
        }
    );
}

#[test]
fn suspended_approval_for_another_requester_is_rejected() {
    let (run, cp, _, granted) = fixture();
    let other = Approval {
        requester: Name::lit("other-agent"),
        ..granted
    };
    assert_eq!(
        reject(&run, at(2, resume(cp, Decision::Approve(other)))),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Requester
        }
    );
}

#[test]
fn suspended_approval_binding_is_checked_revision_call_arguments_requester_in_order() {
    let (run, cp, _, granted) = fixture();
    let all_wrong = Approval {
        revision: Revision(0),
        call_id: Name::lit("call-2"),
        args: Digest::of(b"edited"),
        requester: Name::lit("other-agent"),
        ..granted
    };
    let expectations = [
        (all_wrong, ApprovalField::Revision),
        (
            Approval {
                revision: granted.revision,
                ..all_wrong
            },
            ApprovalField::CallId,
        ),
        (
            Approval {
                revision: granted.revision,
                call_id: granted.call_id,
                ..all_wrong
            },
            ApprovalField::Args,
        ),
        (
            Approval {
                requester: Name::lit("other-agent"),
                ..granted
            },
            ApprovalField::Requester,
        ),
    ];
    for (a, field) in expectations {
        assert_eq!(
            reject(&run, at(2, resume(cp, Decision::Approve(a)))),
            Rejection::ApprovalMismatch { field }
        );
    }
}

#[test]
fn suspended_approval_that_expired_is_rejected() {
    // APR-2: the approval expired at t3, although the suspension runs until t50.
    let (run, cp, _, granted) = fixture();
    let short = Approval {
        expires_at: Time(3),
        ..granted
    };
    for decision in [Decision::Approve(short), Decision::Deny(short)] {
        assert_eq!(
            reject(&run, at(4, resume(cp, decision))),
            Rejection::ApprovalExpired {
                expires_at: Time(3),
                now: Time(4)
            }
        );
    }
    let (next, _) = accept(&run, at(3, resume(cp, Decision::Approve(short))));
    assert_eq!(next.phase().kind(), PhaseKind::Running);
}

#[test]
fn suspended_approval_not_binding_and_expired_is_rejected_as_not_binding() {
    let (run, cp, _, granted) = fixture();
    let both = Approval {
        args: Digest::of(b"edited"),
        expires_at: Time(1),
        ..granted
    };
    assert_eq!(
        reject(&run, at(4, resume(cp, Decision::Approve(both)))),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Args
        }
    );
}

#[test]
fn suspended_approval_by_its_own_requester_is_rejected() {
    // APR-3: a client cannot approve its own gated call, nor deny it in the approver's name.
    let (run, cp, _, granted) = fixture();
    let own = Approval {
        approver: REQUESTER,
        ..granted
    };
    for decision in [Decision::Approve(own), Decision::Deny(own)] {
        assert_eq!(
            reject(&run, at(2, resume(cp, decision))),
            Rejection::SelfApproval { party: REQUESTER }
        );
    }
}

#[test]
fn suspended_approval_by_its_own_requester_after_it_expired_is_rejected_as_expired() {
    let (run, cp, _, granted) = fixture();
    let own_late = Approval {
        approver: REQUESTER,
        expires_at: Time(1),
        ..granted
    };
    assert_eq!(
        reject(&run, at(2, resume(cp, Decision::Approve(own_late)))),
        Rejection::ApprovalExpired {
            expires_at: Time(1),
            now: Time(2)
        }
    );
}

#[test]
fn suspended_approval_by_a_party_other_than_the_recorded_approver_is_rejected() {
    // APR-3, RES-6: only the party the kernel recorded decides.
    let (run, cp, _, granted) = fixture();
    let mallory = Approval {
        approver: Name::lit("mallory"),
        ..granted
    };
    for decision in [Decision::Approve(mallory), Decision::Deny(mallory)] {
        assert_eq!(
            reject(&run, at(2, resume(cp, decision))),
            Rejection::Unauthorised {
                expected: APPROVER,
                got: Name::lit("mallory")
            }
        );
    }
}

#[test]
fn suspended_approval_by_an_unauthorised_party_without_permission_is_rejected_as_unauthorised() {
    let (run, cp, _, granted) = fixture();
    let mallory = Approval {
        approver: Name::lit("mallory"),
        ..granted
    };
    assert_eq!(
        reject(
            &run,
            at(2, with_facts(cp, Decision::Approve(mallory), false, false))
        ),
        Rejection::Unauthorised {
            expected: APPROVER,
            got: Name::lit("mallory")
        }
    );
}

#[test]
fn suspended_approval_approve_after_permission_was_revoked_is_rejected() {
    // RES-7: the approval is re-checked against current policy.
    let (run, cp, _, granted) = fixture();
    assert_eq!(
        reject(
            &run,
            at(2, with_facts(cp, Decision::Approve(granted), false, false))
        ),
        Rejection::PermissionRevoked
    );
}

#[test]
fn suspended_approval_approve_beyond_the_budget_is_rejected() {
    let (run, cp, _, granted) = fixture();
    assert_eq!(
        reject(
            &run,
            at(2, with_facts(cp, Decision::Approve(granted), true, false))
        ),
        Rejection::BudgetExhausted
    );
}
