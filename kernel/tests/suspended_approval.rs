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

/// The fixture's approval, changed by `edit`.
fn granted_but(edit: impl FnOnce(&mut Approval)) -> Approval {
    let (_, _, _, mut granted) = fixture();
    edit(&mut granted);
    granted
}

/// Asserts that the fixture's run refuses `a` at `t` with `expected`, as an approval and as a
/// denial alike; `case` names the case on failure.
#[track_caller]
fn refuses_both(case: &str, t: u64, a: Approval, expected: Rejection) {
    let (run, cp, _, _) = fixture();
    for decision in [Decision::Approve(a), Decision::Deny(a)] {
        let got = reject(&run, at(t, resume(cp, decision)));
        assert_eq!(got, expected, "{case}, {}", decision.kind());
    }
}

/// The fixture's run's refusal of an approval of its call at t2 under facts that say whether
/// policy still permits it and whether it is within budget.
fn refused_under(a: Approval, permitted: bool, within_budget: bool) -> Rejection {
    let (run, cp, _, _) = fixture();
    let decision = Decision::Approve(a);
    reject(
        &run,
        at(2, with_facts(cp, decision, permitted, within_budget)),
    )
}

#[test]
fn suspended_approval_approve_dispatches_the_call_once_under_its_original_key() {
    // APR-1, WAL-1: the approved call is in flight in `next` and dispatched, attempt 0.
    let (run, cp, c, granted) = fixture();
    let (next, fx) = accept(&run, at(2, resume(cp, Decision::Approve(granted))));
    assert_eq!(next.phase(), &running_with(c, 0, 1));
    assert_eq!(next.revision(), Revision(2));
    let approved = resume_record(2, 2, DecisionKind::Approve, PhaseKind::Running);
    let sent = Effect::Dispatch(dispatch_of(&run, &c, 0));
    assert_eq!(effects(&fx), vec![approved, sent]);
}

#[test]
fn suspended_approval_deny_fails_the_run_and_advances_the_revision() {
    // APR-4: a denial fails the run; the denied call never runs.
    let (run, cp, c, granted) = fixture();
    let (next, fx) = accept(&run, at(2, resume(cp, Decision::Deny(granted))));
    let denied = FailCause::Denied { call_id: c.call_id };
    assert_eq!(next.phase(), &Phase::Failed(denied));
    assert_eq!(next.revision(), Revision(2));
    let record = resume_record(2, 2, DecisionKind::Deny, PhaseKind::Failed);
    assert_eq!(effects(&fx), vec![record]);
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
fn suspended_approval_bound_to_another_revision_call_arguments_or_requester_is_rejected() {
    // APR-1: approving is approving an action on a snapshot, not a standing pass; KEY-2: an
    // edited call is a new call that needs its own approval. A denial is bound alike, and an
    // approval that binds to nothing is refused for that even once it has expired too.
    for field in BINDING {
        let expected = Rejection::ApprovalMismatch { field };
        refuses_both(field.name(), 2, granted_but(|a| unbind(a, field)), expected);
    }
    let expired_too = granted_but(|a| {
        unbind(a, ApprovalField::Args);
        a.expires_at = Time(1);
    });
    let not_binding = Rejection::ApprovalMismatch {
        field: ApprovalField::Args,
    };
    refuses_both("other arguments, expired", 4, expired_too, not_binding);
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
fn suspended_approval_binding_is_checked_revision_call_arguments_requester_in_order() {
    // Each approval binds to nothing from one field on; that first field is named.
    let (run, cp, _, granted) = fixture();
    for (i, first) in BINDING.into_iter().enumerate() {
        let mut a = granted;
        for field in &BINDING[i..] {
            unbind(&mut a, *field);
        }
        assert_eq!(
            reject(&run, at(2, resume(cp, Decision::Approve(a)))),
            Rejection::ApprovalMismatch { field: first },
            "{first}"
        );
    }
}

#[test]
fn suspended_approval_that_expired_is_rejected() {
    // APR-2: the approval expired at t3, although the suspension runs until t50.
    let short = granted_but(|a| a.expires_at = Time(3));
    let expired = Rejection::ApprovalExpired {
        expires_at: Time(3),
        now: Time(4),
    };
    refuses_both("expired at t3", 4, short, expired);
    let (run, cp, _, _) = fixture();
    let (next, _) = accept(&run, at(3, resume(cp, Decision::Approve(short))));
    assert_eq!(next.phase().kind(), PhaseKind::Running);
}

#[test]
fn suspended_approval_by_a_party_that_may_not_decide_is_rejected() {
    // APR-3: a client cannot approve its own gated call, nor deny it in the approver's name;
    // RES-6: only the party the kernel recorded decides. The approval's expiry is checked
    // first: its own requester's, expired, is refused as expired.
    let mallory = Name::lit("mallory");
    let own_late = granted_but(|a| {
        a.approver = REQUESTER;
        a.expires_at = Time(1);
    });
    let cases = [
        (
            "its own requester",
            granted_but(|a| a.approver = REQUESTER),
            Rejection::SelfApproval { party: REQUESTER },
        ),
        (
            "a party other than the recorded approver",
            granted_but(|a| a.approver = mallory),
            Rejection::Unauthorised {
                expected: APPROVER,
                got: mallory,
            },
        ),
        (
            "its own requester, after the approval expired",
            own_late,
            Rejection::ApprovalExpired {
                expires_at: Time(1),
                now: Time(2),
            },
        ),
    ];
    for (case, a, expected) in cases {
        refuses_both(case, 2, a, expected);
    }
}

#[test]
fn suspended_approval_approve_is_rechecked_against_the_party_then_permission_then_budget() {
    // RES-7: the approval is re-checked against current policy and budget, after the party
    // (APR-3, RES-6): an unauthorised party is told so, whatever the policy says.
    let (_, _, _, granted) = fixture();
    let mallory = granted_but(|a| a.approver = Name::lit("mallory"));
    assert_eq!(
        refused_under(mallory, false, false),
        Rejection::Unauthorised {
            expected: APPROVER,
            got: Name::lit("mallory")
        }
    );
    assert_eq!(
        refused_under(granted, false, false),
        Rejection::PermissionRevoked
    );
    assert_eq!(
        refused_under(granted, true, false),
        Rejection::BudgetExhausted
    );
}
