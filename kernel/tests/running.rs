//! The running phase with nothing in flight: every input kind, accepted with its exact
//! transition or refused with its exact rejection.

use resumable_kernel::*;
use resumable_testkit::*;

fn running() -> Run {
    new_run("run-a")
}

/// `run` after it dispatched `c` at `dispatched` and recorded its answer at `answered`.
fn answered(run: Run, c: Call, dispatched: u64, answered: u64) -> Run {
    let run = accept(&run, at(dispatched, first_dispatch(c))).0;
    accept(&run, at(answered, tool_result(&c, 0, b"ok"))).0
}

/// A run that has recorded the result of `c` (dispatched at t1, answered at t2): revision 2.
fn after_result_of(c: Call) -> Run {
    answered(running(), c, 1, 2)
}

fn suspend(wait: Wait, expires_at: u64, responsible: Name) -> Event {
    Event::Suspend {
        wait,
        expires_at: Time(expires_at),
        responsible,
        resource_version: 4,
    }
}

/// A wait for an approval of `c` for [`REQUESTER`], stating no earlier use of its id or key.
fn approval_of(c: Call) -> Wait {
    Wait::Approval {
        call: c,
        requester: REQUESTER,
        prior: Prior::NONE,
    }
}

/// `publish()` under a contract that allows it no attempt.
fn never() -> Call {
    with_contract(publish(), true, false, 0)
}

/// `c` edited: other arguments and another key, under the same call id.
fn edited(c: Call) -> Call {
    Call {
        args: Digest::of(b"edited"),
        key: IdempotencyKey::lit("idem-2"),
        ..c
    }
}

#[test]
fn running_suspend_for_approval_waits_for_the_approver_and_persists_a_checkpoint() {
    // SUS-1, CKP-1: a reason, an expiry, a responsible party; a sealed checkpoint at r1.
    let c = publish();
    let (next, fx) = accept(&running(), at(1, suspend(approval_of(c), 50, APPROVER)));
    let expected = Suspension {
        reason: Reason::PendingApproval {
            call: bound(c),
            requester: REQUESTER,
        },
        since: Time(1),
        expires_at: Time(50),
        responsible: APPROVER,
    };
    assert_eq!(next.phase(), &Phase::Suspended(expected));
    assert_eq!(next.revision(), Revision(1));
    assert_eq!(next.updated_at(), Time(1));
    assert_eq!(next.resource_version(), 4);
    let record = suspended_record(1, 1, EventKind::Suspend, ReasonKind::PendingApproval);
    assert_eq!(effects(&fx), vec![record, binds(&c), persisted(&next)]);
    let cp = fx.checkpoint().unwrap();
    assert_eq!((cp.revision, cp.verify()), (Revision(1), Ok(())));
}

#[test]
fn running_suspend_for_a_callback_a_resource_or_a_person_waits_for_its_party() {
    // SUS-1: each wait names what it waits on and who answers it, from the suspend's time to
    // its expiry; a person's has no unresolved effect. Each persists its checkpoint.
    let person = Reason::ManualIntervention {
        unresolved: None,
        cancelled_by: None,
    };
    let cases = [
        (
            Wait::Callback { callback: CALLBACK },
            (3, 9, OWNER),
            Reason::ExternalCallback { callback: CALLBACK },
            ReasonKind::ExternalCallback,
        ),
        (
            Wait::Resource { resource: RESOURCE },
            (1, 2, OPERATOR),
            Reason::ResourceWait { resource: RESOURCE },
            ReasonKind::ResourceWait,
        ),
        (
            Wait::Intervention,
            (1, 60, OPERATOR),
            person,
            ReasonKind::ManualIntervention,
        ),
    ];
    for (wait, (t, expires_at, responsible), reason, kind) in cases {
        let (next, fx) = accept(&running(), at(t, suspend(wait, expires_at, responsible)));
        let expected = Suspension {
            reason,
            since: Time(t),
            expires_at: Time(expires_at),
            responsible,
        };
        assert_eq!(next.phase(), &Phase::Suspended(expected), "{kind}");
        let record = suspended_record(1, t, EventKind::Suspend, kind);
        assert_eq!(effects(&fx), vec![record, persisted(&next)], "{kind}");
    }
}

#[test]
fn running_suspend_expiring_now_or_earlier_is_rejected() {
    // SUS-1: no suspension is born expired.
    for expires_at in [5, 4, 0] {
        let wait = Wait::Callback { callback: CALLBACK };
        assert_eq!(
            reject(&running(), at(5, suspend(wait, expires_at, OWNER))),
            Rejection::ExpiryNotInFuture {
                expires_at: Time(expires_at),
                now: Time(5)
            }
        );
    }
}

#[test]
fn running_suspend_for_approval_is_refused_for_its_expiry_then_its_party_then_its_call() {
    // SUS-1: no suspension is born expired; APR-3: the requester is never recorded as its
    // approver; and a call that allows no attempt could never run. The expiry is checked
    // first, and the party before the call is bound.
    let cases = [
        (
            "by its own requester",
            (publish(), 1, 50, REQUESTER),
            Rejection::SelfApproval { party: REQUESTER },
        ),
        (
            "with a past expiry and self approval",
            (never(), 7, 7, REQUESTER),
            Rejection::ExpiryNotInFuture {
                expires_at: Time(7),
                now: Time(7),
            },
        ),
        (
            "by its own requester for a call allowing no attempt",
            (never(), 1, 50, REQUESTER),
            Rejection::SelfApproval { party: REQUESTER },
        ),
        (
            "for a call allowing no attempt",
            (never(), 1, 50, APPROVER),
            Rejection::NoAttemptsAllowed,
        ),
    ];
    for (case, (c, t, expires_at, party), expected) in cases {
        let suspend = suspend(approval_of(c), expires_at, party);
        assert_eq!(reject(&running(), at(t, suspend)), expected, "{case}");
    }
}

#[test]
fn running_suspend_for_approval_of_a_reused_call_id_is_rejected() {
    // KEY-2: an edited call is a new call; the old id cannot be approved again.
    let c = publish();
    let edited = edited(c);
    let wait = Wait::Approval {
        call: edited,
        requester: REQUESTER,
        prior: spent(&c).prior(&edited),
    };
    assert_eq!(
        reject(&after_result_of(c), at(3, suspend(wait, 50, APPROVER))),
        Rejection::CallIdReused { call_id: c.call_id }
    );
}

#[test]
fn running_dispatch_records_the_intent_and_commands_the_dispatch() {
    // WAL-1: the in-flight intent is in `next`, stored before the driver dispatches.
    let c = publish();
    let run = running();
    let (next, fx) = accept(&run, at(1, first_dispatch(c)));
    assert_eq!(next.phase(), &running_with(c, 0, 1));
    assert_eq!(next.revision(), Revision(1));
    let dispatched = record(1, 1, EventKind::Dispatch, PhaseKind::Running);
    let sent = Effect::Dispatch(dispatch_of(&run, &c, 0));
    assert_eq!(effects(&fx), vec![dispatched, binds(&c), sent]);
}

#[test]
fn running_dispatch_of_a_call_allowing_no_attempt_is_rejected() {
    let c = with_contract(publish(), true, true, 0);
    assert_eq!(
        reject(&running(), at(1, first_dispatch(c))),
        Rejection::NoAttemptsAllowed
    );
}

#[test]
fn running_dispatch_reusing_the_last_call_id_or_its_key_is_refused() {
    // KEY-2: even with other arguments and another key, the id is spent. KEY-1: a key is
    // bound to its payload digest. REC-4: the key's committed result is recorded; it is
    // reused, never executed again, whatever call id the same request comes back under.
    let c = publish();
    let other = Call {
        call_id: Name::lit("call-2"),
        args: Digest::of(b"other payload"),
        ..c
    };
    let again = Call {
        call_id: Name::lit("call-2"),
        ..c
    };
    let cases = [
        (
            "the last call id",
            edited(c),
            Rejection::CallIdReused { call_id: c.call_id },
        ),
        (
            "its key, with other arguments",
            other,
            Rejection::KeyConflict { key: c.key },
        ),
        (
            "its committed key",
            again,
            Rejection::KeyCommitted { key: c.key },
        ),
    ];
    for (case, call, expected) in cases {
        let dispatch = spent(&c).dispatch(call);
        assert_eq!(
            reject(&after_result_of(c), at(3, dispatch)),
            expected,
            "{case}"
        );
    }
}

#[test]
fn running_dispatch_reusing_a_key_a_person_dropped_with_the_same_arguments_is_accepted() {
    // KEY-1 binds the key to its payload, and the key never committed: a person made sure
    // of it and went ahead ("continue"), so the same request may go out again.
    let c = publish();
    let (run, cp) = unresolved_effect(c);
    let go_ahead = Decision::Intervene {
        by: OPERATOR,
        resolution: Resolution::Continue,
    };
    let run = accept(&run, at(4, resume(cp, go_ahead))).0;
    let again = Call {
        call_id: Name::lit("call-2"),
        ..c
    };
    let bound = Index(vec![HistoryEntry::bound(&c)]);
    let (next, fx) = accept(&run, at(5, bound.dispatch(again)));
    assert_eq!(next.in_flight(), Some(&in_flight(again, 0, 1)));
    assert_eq!(fx.dispatch(), Some(&dispatch_of(&run, &again, 0)));
}

#[test]
fn running_dispatch_checks_attempts_then_call_id_then_key() {
    let c = publish();
    let run = after_result_of(c);
    let reused_conflicting = Call {
        args: Digest::of(b"other payload"),
        ..c
    };
    assert_eq!(
        reject(&run, at(3, spent(&c).dispatch(reused_conflicting))),
        Rejection::CallIdReused { call_id: c.call_id }
    );
    let no_attempt = with_contract(reused_conflicting, true, false, 0);
    assert_eq!(
        reject(&run, at(3, spent(&c).dispatch(no_attempt))),
        Rejection::NoAttemptsAllowed
    );
}

#[test]
fn running_resume_is_rejected_as_not_suspended() {
    // RES-4: a checkpoint that passes identity, digest, revision and resource version still
    // needs a suspended run. It is forged here at the current revision.
    let c = publish();
    let (run, cp) = pending(c);
    let (run, _) = accept(&run, at(2, approving(cp, &c)));
    let (run, _) = accept(&run, at(3, tool_result(&c, 0, b"ok")));
    assert_eq!(run.phase(), &Phase::Running { in_flight: None });
    let forged = resealed(cp, |cp| cp.revision = run.revision());
    assert_eq!(
        reject(&run, at(4, approving(forged, &c))),
        Rejection::NotSuspended {
            phase: PhaseKind::Running
        }
    );
}

#[test]
fn running_tool_result_recover_and_expire_are_rejected_for_what_the_run_is_not_waiting_on() {
    // With nothing in flight there is no answer to take and nothing to recover; a running
    // run has no suspension to expire.
    let phase = PhaseKind::Running;
    let cases = [
        (
            at(1, tool_result(&publish(), 0, b"late")),
            Rejection::NoDispatchInFlight { phase },
        ),
        (at(1, Event::Recover), Rejection::NothingInFlight { phase }),
        (at(1_000, Event::Expire), Rejection::NotSuspended { phase }),
    ];
    for (input, expected) in cases {
        let kind = input.event.kind();
        assert_eq!(reject(&running(), input), expected, "{kind:?}");
    }
}

#[test]
fn running_cancel_fails_the_run_as_cancelled() {
    let (next, fx) = accept(&running(), at(1, Event::Cancel { by: CANCELLER }));
    assert_cancelled(&next, &fx, 1, 1);
}

#[test]
fn running_complete_or_fail_ends_the_run_with_its_result_or_error() {
    let result = Digest::of(b"final");
    let code = Name::lit("E500");
    let cases = [
        (
            Event::Complete { result },
            Phase::Completed { result },
            (EventKind::Complete, PhaseKind::Completed),
        ),
        (
            Event::Fail { code },
            Phase::Failed(FailCause::Error { code }),
            (EventKind::Fail, PhaseKind::Failed),
        ),
    ];
    for (event, phase, (event_kind, kind)) in cases {
        let (next, fx) = accept(&running(), at(1, event));
        assert_eq!(next.phase(), &phase);
        let ended = record(1, 1, event_kind, kind);
        assert_eq!(effects(&fx), vec![ended], "{kind}");
    }
}

#[test]
fn running_input_of_any_kind_from_the_past_is_rejected() {
    // CLK-1: a run at t5 refuses every kind of input dated t4.
    let c = publish();
    let (_, cp) = pending(c);
    let run = answered(new_run("run-approval"), c, 5, 5);
    // The resume's checkpoint is sealed at the run's revision, so that it passes the
    // checkpoint guards that come before the clock (spec 4.1, guard 2).
    let current = resealed(cp, |cp| cp.revision = run.revision());
    let regressed = Rejection::ClockRegressed {
        last: Time(5),
        got: Time(4),
    };
    refuses_every_kind(&run, current, 4, regressed);
}

#[test]
fn running_input_at_the_same_time_as_the_last_is_accepted() {
    // CLK-1 forbids going backwards, not standing still: several inputs may share a tick.
    let next = answered(running(), publish(), 5, 5);
    assert_eq!(next.updated_at(), Time(5));
    assert_eq!(next.revision(), Revision(2));
}

#[test]
fn running_input_at_the_end_of_the_revision_counter_is_rejected() {
    // REV-1: a revision that cannot advance refuses every input rather than wrap.
    let run = with_revision(&new_run("run-approval"), u64::MAX);
    let (_, cp) = pending(publish());
    let current = resealed(cp, |cp| cp.revision = run.revision());
    refuses_every_kind(&run, current, 1, Rejection::RevisionExhausted);
}

#[test]
fn running_input_from_the_past_at_the_end_of_the_revision_counter_reports_the_clock_first() {
    let run = with_revision(&answered(running(), publish(), 5, 5), u64::MAX);
    assert_eq!(
        reject(&run, at(4, Event::Cancel { by: CANCELLER })),
        Rejection::ClockRegressed {
            last: Time(5),
            got: Time(4)
        }
    );
}

#[test]
fn running_run_stepped_in_place_is_unchanged_by_a_rejection() {
    // REJ-2 through the owning wrapper: `apply` replaces the run only on acceptance.
    let mut run = running();
    let before = run;
    assert_eq!(
        run.apply(&at(1, Event::Recover)),
        Err(Rejection::NothingInFlight {
            phase: PhaseKind::Running
        })
    );
    assert_eq!(run, before);
    let fx = run.apply(&at(1, first_dispatch(publish())));
    assert!(fx.is_ok());
    assert_eq!(run.revision(), Revision(1));
}

#[test]
fn running_dispatch_reusing_an_older_call_id_or_key_is_refused_over_the_whole_history() {
    // Spec 4.9: the history the driver's store keeps holds every call the run bound, not just
    // the last: call A, then B, then A again is a reused call id (KEY-2); an older key with
    // other arguments is a conflict (KEY-1); with its own arguments, a spent key (REC-4).
    let mut index = Index::default();
    let first = publish();
    let second = call("call-2", "notify:demo", "idem-2");
    let mut run = running();
    for (t, c) in [(1, first), (3, second)] {
        run = index.accept(&run, at(t, index.dispatch(c)));
        let answer = tool_result(&c, 0, b"ok");
        run = index.accept(&run, at(t + 1, answer));
    }
    assert_eq!(
        reject(&run, at(5, index.dispatch(first))),
        Rejection::CallIdReused {
            call_id: first.call_id
        }
    );
    let other_args = Call {
        call_id: Name::lit("call-3"),
        args: Digest::of(b"other"),
        ..first
    };
    assert_eq!(
        reject(&run, at(5, index.dispatch(other_args))),
        Rejection::KeyConflict { key: first.key }
    );
    let same_args = Call {
        call_id: Name::lit("call-3"),
        ..first
    };
    assert_eq!(
        reject(&run, at(5, index.dispatch(same_args))),
        Rejection::KeyCommitted { key: first.key }
    );
    assert_eq!(index.bound(), 2);
}

#[test]
fn running_run_of_ten_thousand_calls_stays_the_same_size_and_still_refuses_a_reused_key() {
    // KEY-1, REC-4 over a history far longer than anything a run could hold: the run's own
    // JSON is the same length at call 10,000 as at call 1 (less the digits of its numbers),
    // and a key reused with other arguments at call 9,999 is still refused.
    let mut index = Index::default();
    let mut run = running();
    let mut t = 0;
    let mut sizes = Vec::new();
    for i in 0..10_000u32 {
        let c = call(&format!("call-{i:05}"), "tool", &format!("key-{i:05}"));
        t += 1;
        run = index.accept(&run, at(t, index.dispatch(c)));
        t += 1;
        let answer = tool_result(&c, 0, b"ok");
        run = index.accept(&run, at(t, answer));
        if i == 0 || i == 9_998 {
            sizes.push(serde_json::to_string(&run).unwrap().len());
        }
    }
    // Five-digit call numbers throughout, so only the times and revisions grow in digits.
    assert!(sizes[1] - sizes[0] <= 16, "{sizes:?}");
    let reused = Call {
        call_id: Name::lit("call-x"),
        args: Digest::of(b"other arguments"),
        ..call("call-x", "tool", "key-00042")
    };
    assert_eq!(
        reject(&run, at(t + 1, index.dispatch(reused))),
        Rejection::KeyConflict { key: reused.key }
    );
    assert_eq!(index.bound(), 10_000);
}

#[test]
fn running_dispatch_trusts_the_prior_it_is_given() {
    // The kernel holds no history: what the driver states is what it applies. A driver that
    // lost a binding gets the call accepted; the audit log records the claim with the input,
    // and the validator, which sees the whole history, refutes it there.
    let first = publish();
    let run = after_result_of(first);
    assert!(step(&run, &at(3, first_dispatch(first))).is_ok());
}

#[test]
fn running_suspend_that_could_never_expire_is_refused() {
    // EXP-1: an expiry at the end of time could never be passed.
    assert_eq!(
        reject(
            &running(),
            at(1, suspend(Wait::Intervention, u64::MAX, OPERATOR))
        ),
        Rejection::ExpiryUnreachable {
            expires_at: Time::END
        }
    );
    let (next, _) = accept(
        &running(),
        at(1, suspend(Wait::Intervention, u64::MAX - 1, OPERATOR)),
    );
    assert_eq!(
        next.suspension().map(|s| s.expires_at),
        Some(Time::LATEST_EXPIRY)
    );
}

#[test]
fn running_run_with_a_zero_reconcile_window_cannot_be_created() {
    // A reconciliation would expire the instant it began.
    let policy = Policy {
        operator: OPERATOR,
        reconcile_window: 0,
        allowed: resumable_kernel::Allowed::ALL,
    };
    assert_eq!(
        Run::new(identity("run-z"), policy, Time(0)),
        Err(PolicyError::ReconcileWindowZero)
    );
    let mut value = serde_json::to_value(running()).unwrap();
    value["policy"]["reconcile_window"] = serde_json::Value::from(0);
    assert!(serde_json::from_value::<Run>(value).is_err());
}
