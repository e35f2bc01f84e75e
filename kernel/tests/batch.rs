//! Batches of calls (spec 5.5): BAT-1 to BAT-5 and POL-1, rule by rule.

use resumable_kernel::*;
use resumable_testkit::*;

fn proposal(c: Call) -> Proposal {
    Proposal {
        call: c,
        requester: REQUESTER,
        prior: Prior::NONE,
    }
}

fn suspend_batch(calls: &[Proposal]) -> Event {
    Event::Suspend {
        wait: Wait::Batch {
            calls: Proposals::of(calls).expect("at most eight"),
        },
        expires_at: Time(50),
        responsible: APPROVER,
        resource_version: 1,
    }
}

fn two() -> (Call, Call) {
    (
        call("call-a", "publish", "idem-a"),
        with_contract(call("call-b", "email", "idem-b"), false, true, 3),
    )
}

/// A run suspended for a batch of `calls`, with the batch's checkpoint.
fn batch_of(calls: &[Call]) -> (Run, Checkpoint) {
    let proposals: Vec<Proposal> = calls.iter().copied().map(proposal).collect();
    let (run, fx) = accept(&new_run("run-batch"), at(1, suspend_batch(&proposals)));
    (
        run,
        *fx.checkpoint()
            .expect("a batch suspension persists its checkpoint"),
    )
}

fn decide(cp: &Checkpoint, c: &Call, verdict: Verdict) -> CallDecision {
    CallDecision {
        approval: approval(cp, c),
        verdict,
    }
}

fn decisions(cp: Checkpoint, ds: &[CallDecision]) -> Event {
    resume(
        cp,
        Decision::Batch {
            decisions: Decisions::of(ds).expect("at most eight"),
        },
    )
}

/// A resume from `cp` carrying `verdict` on `c` alone.
fn decide_one(cp: Checkpoint, c: &Call, verdict: Verdict) -> Event {
    decisions(cp, &[decide(&cp, c, verdict)])
}

/// A resume from `cp` answering its reconcile query with `answer`.
fn reconcile(cp: Checkpoint, answer: QueryAnswer) -> Event {
    resume(cp, Decision::Reconcile(answer))
}

/// The calls of [`two`] approved together at t2: both in flight, the run running.
fn both_in_flight() -> (Run, Call, Call) {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let both = [
        decide(&cp, &a, Verdict::Approve),
        decide(&cp, &b, Verdict::Approve),
    ];
    (accept(&run, at(2, decisions(cp, &both))).0, a, b)
}

/// The batch of [`two`] after call-a alone was approved at t2, with the batch's checkpoint
/// and that decision.
fn a_approved() -> (Run, Checkpoint, CallDecision) {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let first = decide(&cp, &a, Verdict::Approve);
    (accept(&run, at(2, decisions(cp, &[first]))).0, cp, first)
}

/// The agent's proposal of `c`, stating that its key was bound before, to its arguments, by
/// a call that did not commit.
fn key_bound_before(c: Call) -> Proposal {
    Proposal {
        prior: Prior {
            call_id_used: false,
            key: Some(KeyUse {
                args: c.args,
                committed: false,
            }),
        },
        ..proposal(c)
    }
}

fn state(run: &Run, c: &Call) -> SlotState {
    run.batch()
        .and_then(|b| b.slot(&c.call_id).map(|s| s.state))
        .expect("the call is in the batch")
}

#[test]
fn bat_1_a_batch_binds_each_call_and_persists_one_checkpoint_with_the_listing() {
    let (a, b) = two();
    let (run, fx) = accept(
        &new_run("run-batch"),
        at(1, suspend_batch(&[proposal(a), proposal(b)])),
    );
    assert_eq!(
        run.suspension().map(|s| s.reason),
        Some(Reason::PendingBatch)
    );
    let bound: Vec<HistoryEntry> = fx.histories().copied().collect();
    assert_eq!(bound, [HistoryEntry::bound(&a), HistoryEntry::bound(&b)]);
    let cp = fx.checkpoint().unwrap();
    assert_eq!(cp.revision, Revision(1));
    assert_eq!(
        cp.batch,
        Some(checkpoint::batch_digest(&run.batch().unwrap()))
    );
    assert_eq!((cp.pending, cp.requester), (None, None));
    assert!(cp.verify().is_ok());
    assert_eq!(run.batch().unwrap().checkpoint, cp.digest);
}

#[test]
fn bat_1_empty_duplicate_and_self_requested_batches_are_refused() {
    let run = new_run("run-batch");
    let (a, b) = two();
    assert_eq!(
        reject(&run, at(1, suspend_batch(&[]))),
        Rejection::EmptyBatch
    );
    let same_key = Call {
        call_id: Name::lit("call-a2"),
        ..a
    };
    assert_eq!(
        reject(
            &run,
            at(1, suspend_batch(&[proposal(a), proposal(same_key)]))
        ),
        Rejection::DuplicateInBatch {
            call_id: same_key.call_id
        }
    );
    let own = Proposal {
        requester: APPROVER,
        ..proposal(b)
    };
    assert_eq!(
        reject(&run, at(1, suspend_batch(&[proposal(a), own]))),
        Rejection::SelfApproval { party: APPROVER }
    );
    let reused = Proposal {
        prior: Prior {
            call_id_used: true,
            key: None,
        },
        ..proposal(b)
    };
    assert_eq!(
        reject(&run, at(1, suspend_batch(&[proposal(a), reused]))),
        Rejection::CallIdReused { call_id: b.call_id }
    );
}

#[test]
fn bat_2_decisions_arrive_one_at_a_time_on_the_same_checkpoint_and_duplicates_get_res_2() {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let first = decide(&cp, &a, Verdict::Approve);
    let (run, fx) = accept(&run, at(2, decisions(cp, &[first])));
    // Still waiting on call-b, and the checkpoint handed out is the same one.
    assert_eq!(fx.checkpoint(), Some(&cp));
    assert_eq!(fx.dispatch(), None);
    assert_eq!(state(&run, &a), SlotState::Approved);
    assert_eq!(
        reject(&run, at(3, decisions(cp, &[first]))),
        already_applied(1, 2)
    );
    let other = decide(
        &cp,
        &a,
        Verdict::Reject {
            reason: Digest::of(b"no"),
        },
    );
    assert_eq!(
        reject(&run, at(3, decisions(cp, &[other]))),
        already_resumed(1, 2)
    );
    // A decision bound to any other revision binds to nothing.
    let mut stale = decide(&cp, &b, Verdict::Approve);
    stale.approval.revision = Revision(2);
    assert_eq!(
        reject(&run, at(3, decisions(cp, &[stale]))),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Revision
        }
    );
    let (run, fx) = accept(&run, at(4, decide_one(cp, &b, Verdict::Approve)));
    let sent: Vec<Name> = fx.dispatches().map(|d| d.call_id).collect();
    assert_eq!(sent, [a.call_id, b.call_id]);
    assert_eq!(run.phase(), &Phase::Running { in_flight: None });
    assert_eq!(run.batch().unwrap().closed, Some(Revision(3)));
}

#[test]
fn bat_2_a_decision_names_a_call_of_the_batch_once_and_binds_to_its_arguments() {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    assert_eq!(
        reject(&run, at(2, decisions(cp, &[]))),
        Rejection::NoDecision
    );
    let twice = [
        decide(&cp, &a, Verdict::Approve),
        decide(&cp, &a, Verdict::Deny),
    ];
    assert_eq!(
        reject(&run, at(2, decisions(cp, &twice))),
        Rejection::DuplicateDecision { call_id: a.call_id }
    );
    let stranger = call("call-z", "publish", "idem-z");
    assert_eq!(
        reject(&run, at(2, decide_one(cp, &stranger, Verdict::Approve))),
        Rejection::ApprovalMismatch {
            field: ApprovalField::CallId
        }
    );
    let mut wrong_args = decide(&cp, &a, Verdict::Approve);
    wrong_args.approval.args = b.args;
    assert_eq!(
        reject(&run, at(2, decisions(cp, &[wrong_args]))),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Args
        }
    );
    let mut own = decide(&cp, &a, Verdict::Approve);
    own.approval.approver = Name::lit("mallory");
    assert_eq!(
        reject(&run, at(2, decisions(cp, &[own]))),
        Rejection::Unauthorised {
            expected: APPROVER,
            got: Name::lit("mallory")
        }
    );
}

#[test]
fn bat_3_rejected_and_responded_calls_never_run_and_their_outcomes_are_kept() {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let reason = Digest::of(b"not this one");
    let answer = Digest::of(b"Tuesday");
    let both = [
        decide(&cp, &a, Verdict::Reject { reason }),
        decide(&cp, &b, Verdict::Respond { result: answer }),
    ];
    // The default tool contract does not allow respond: only an ask-the-user tool does.
    assert_eq!(
        reject(&run, at(2, decisions(cp, &both))),
        Rejection::DecisionNotAllowed {
            decision: VerdictKind::Respond
        }
    );
    let ask = ask(b);
    let (run, cp) = batch_of(&[a, ask]);
    let both = [
        decide(&cp, &a, Verdict::Reject { reason }),
        decide(&cp, &ask, Verdict::Respond { result: answer }),
    ];
    let (run, fx) = accept(&run, at(2, decisions(cp, &both)));
    assert_eq!(fx.dispatch(), None);
    assert_eq!(run.next(), Next::Agent);
    assert_eq!(state(&run, &a), SlotState::Rejected { reason });
    assert_eq!(state(&run, &ask), SlotState::Responded { result: answer });
    assert_eq!(run.last_call().map(|c| c.result), Some(answer));
    let spent: Vec<HistoryEntry> = fx.histories().copied().collect();
    assert_eq!(spent, [HistoryEntry::settled(&ask.key)]);
}

#[test]
fn bat_3_a_denial_fails_the_run_at_once_and_an_open_batch_that_expires_runs_nothing() {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let (approved, _) = accept(&run, at(2, decide_one(cp, &a, Verdict::Approve)));
    let (denied, fx) = accept(&approved, at(3, decide_one(cp, &b, Verdict::Deny)));
    assert_eq!(fx.dispatch(), None);
    assert_eq!(
        denied.phase(),
        &Phase::Failed(FailCause::Denied { call_id: b.call_id })
    );
    let (expired, fx) = accept(&approved, at(51, Event::Expire));
    assert_eq!(fx.dispatch(), None);
    assert_eq!(
        expired.phase(),
        &Phase::Failed(FailCause::Expired { unresolved: None })
    );
    // A late decision learns the batch was resumed by another input.
    assert_eq!(
        reject(&expired, at(52, decide_one(cp, &b, Verdict::Approve))),
        already_resumed(1, 3)
    );
}

#[test]
fn bat_3_the_decision_that_resumes_the_batch_rechecks_the_present() {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let both = [
        decide(&cp, &a, Verdict::Approve),
        decide(&cp, &b, Verdict::Approve),
    ];
    let moved = resume_at_version(
        cp,
        Decision::Batch {
            decisions: Decisions::of(&both).unwrap(),
        },
        2,
    );
    assert_eq!(
        reject(&run, at(2, moved)),
        Rejection::ResourceChanged {
            checkpoint: 1,
            current: 2
        }
    );
}

#[test]
fn bat_5_an_edited_call_runs_with_the_approvers_arguments_under_a_fresh_key_only() {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let edited = Digest::of(b"shorter");
    let ds = [
        decide(&cp, &a, Verdict::Edit { args: edited }),
        decide(&cp, &b, Verdict::Approve),
    ];
    let (run, fx) = accept(&run, at(2, decisions(cp, &ds)));
    let sent = fx.dispatch().unwrap();
    assert_eq!(
        (sent.call_id, sent.args, sent.key),
        (a.call_id, edited, a.key)
    );
    let rebound = Call { args: edited, ..a };
    assert_eq!(fx.history(), Some(&HistoryEntry::bound(&rebound)));
    assert_eq!(
        run.batch()
            .unwrap()
            .slot(&a.call_id)
            .unwrap()
            .call
            .key_digest,
        checkpoint::key_digest(&a.key, &edited)
    );
    // A key an earlier call bound cannot be rebound by an edit.
    let known = key_bound_before(a);
    let (run, fx) = accept(&new_run("run-batch"), at(1, suspend_batch(&[known])));
    let cp = *fx.checkpoint().unwrap();
    assert_eq!(
        reject(
            &run,
            at(2, decide_one(cp, &a, Verdict::Edit { args: edited }))
        ),
        Rejection::EditKeyBound { key: a.key }
    );
    // Approved as proposed, it runs under the key as bound.
    let (_, fx) = accept(&run, at(2, decide_one(cp, &a, Verdict::Approve)));
    assert_eq!(
        fx.dispatch().map(|d| (d.key, d.args)),
        Some((a.key, a.args))
    );
}

#[test]
fn bat_4_results_arrive_in_any_order_and_the_run_waits_for_all() {
    let (run, a, b) = both_in_flight();
    assert!(matches!(run.next(), Next::Results { dispatches } if dispatches.len() == 2));
    assert_eq!(
        reject(&run, at(3, complete(b"done"))),
        Rejection::DispatchInFlight { call_id: a.call_id }
    );
    let result = |c: &Call, attempt| Event::ToolResult {
        call_id: c.call_id,
        attempt,
        result: Digest::of(c.tool.as_str().as_bytes()),
    };
    assert!(matches!(
        reject(&run, at(3, result(&b, 1))),
        Rejection::ResultMismatch { .. }
    ));
    let (run, fx) = accept(&run, at(3, result(&b, 0)));
    assert_eq!(fx.history(), Some(&HistoryEntry::settled(&b.key)));
    let (run, _) = accept(&run, at(4, result(&a, 0)));
    assert_eq!(run.next(), Next::Agent);
    assert!(matches!(state(&run, &a), SlotState::Committed { .. }));
    assert!(matches!(state(&run, &b), SlotState::Committed { .. }));
}

#[test]
fn bat_4_a_restart_makes_each_call_unknown_and_each_is_reconciled_in_turn() {
    let (run, a, b) = both_in_flight();
    let (run, fx) = accept(&run, at(3, Event::Recover));
    assert_eq!(fx.query().map(|q| q.call_id), Some(a.call_id));
    assert_eq!(state(&run, &a), SlotState::Held);
    assert!(matches!(state(&run, &b), SlotState::Unknown { .. }));
    let cp = *fx.checkpoint().unwrap();
    let committed = Decision::Reconcile(QueryAnswer::Committed {
        result: Digest::of(b"posted"),
    });
    let (run, fx) = accept(&run, at(4, resume(cp, committed)));
    assert!(matches!(state(&run, &a), SlotState::Committed { .. }));
    assert_eq!(fx.query().map(|q| q.call_id), Some(b.call_id));
    let cp = *fx.checkpoint().unwrap();
    // call-b's query fences: a fresh attempt is dispatched, and its answer settles it.
    let (run, fx) = accept(&run, at(5, reconcile(cp, QueryAnswer::NotCommitted)));
    assert_eq!(
        fx.dispatch().map(|d| (d.call_id, d.attempt)),
        Some((b.call_id, 1))
    );
    let (run, _) = accept(&run, at(6, tool_result(&b, 1, b"sent")));
    assert_eq!(run.next(), Next::Agent);
    assert!(matches!(state(&run, &b), SlotState::Committed { .. }));
}

#[test]
fn bat_4_a_cancel_while_calls_are_in_flight_waits_for_every_one_to_be_settled() {
    let (run, _, b) = both_in_flight();
    let (run, fx) = accept(&run, at(3, Event::Cancel { by: CANCELLER }));
    assert_eq!(
        run.suspension().unwrap().reason.cancelled_by(),
        Some(CANCELLER)
    );
    let cp = *fx.checkpoint().unwrap();
    let done = Decision::Reconcile(QueryAnswer::Committed {
        result: Digest::of(b"posted"),
    });
    let (run, fx) = accept(&run, at(4, resume(cp, done)));
    // call-b still unsettled: the cancel is carried to its reconciliation.
    assert_eq!(
        run.suspension().unwrap().reason.cancelled_by(),
        Some(CANCELLER)
    );
    let cp = *fx.checkpoint().unwrap();
    let (run, _) = accept(&run, at(5, reconcile(cp, QueryAnswer::NotCommitted)));
    assert_eq!(
        run.phase(),
        &Phase::Failed(FailCause::Cancelled { by: CANCELLER })
    );
    assert_eq!(state(&run, &b), SlotState::Dropped);
}

#[test]
fn pol_1_a_policy_without_deny_refuses_denials_and_the_seed_default_allows_them() {
    let c = publish();
    let mut run = new_run("run-policy");
    let no_deny = Policy {
        allowed: Allowed::of(&[VerdictKind::Approve, VerdictKind::Reject]),
        ..*run.policy()
    };
    run = Run::new(*run.identity(), no_deny, Time(0)).unwrap();
    let (run, fx) = accept(&run, at(1, suspend_for_approval(c, 50)));
    let cp = *fx.checkpoint().unwrap();
    assert_eq!(
        reject(&run, at(2, denying(cp, &c))),
        Rejection::DecisionNotAllowed {
            decision: VerdictKind::Deny
        }
    );
    let (seed_like, cp) = pending(c);
    let (denied, _) = accept(&seed_like, at(2, denying(cp, &c)));
    assert_eq!(
        denied.phase(),
        &Phase::Failed(FailCause::Denied { call_id: c.call_id })
    );
}

#[test]
fn a_batch_of_one_with_the_default_policy_gives_the_single_approvals_verdicts() {
    let c = publish();
    let (single, cp) = pending(c);
    let (batch, bcp) = batch_of(&[c]);
    let (s, sfx) = accept(&single, at(2, approving(cp, &c)));
    let (b, bfx) = accept(&batch, at(2, decide_one(bcp, &c, Verdict::Approve)));
    let sent = |d: Option<&Dispatch>| d.map(|d| (d.call_id, d.tool, d.args, d.key, d.attempt));
    assert_eq!(sent(sfx.dispatch()), sent(bfx.dispatch()));
    assert_eq!(s.phase().kind(), b.phase().kind());
    let (s, _) = accept(&single, at(2, denying(cp, &c)));
    let (b, _) = accept(&batch, at(2, decide_one(bcp, &c, Verdict::Deny)));
    assert_eq!(s.phase(), b.phase());
}

#[test]
fn a_dispatch_records_the_resource_version_the_agent_observed() {
    let c = with_contract(publish(), false, true, 3);
    let run = new_run("run-version");
    let dispatch = Event::Dispatch {
        call: c,
        prior: Prior::NONE,
        resource_version: Some(7),
    };
    let (run, _) = accept(&run, at(1, dispatch));
    assert_eq!(run.resource_version(), 7);
    let (run, fx) = accept(&run, at(2, Event::Recover));
    let cp = *fx.checkpoint().unwrap();
    assert_eq!(cp.resource_version, 7);
    // The resource has not moved since the agent saw it: the fenced retry goes ahead.
    let (_, fx) = accept(&run, at(3, reconcile(cp, QueryAnswer::NotCommitted)));
    assert_eq!(fx.dispatch().map(|d| d.attempt), Some(1));
}

#[test]
fn a_run_holding_a_batch_reads_back_and_one_without_writes_no_new_field() {
    let (run, _, _) = a_approved();
    let json = serde_json::to_string(&run).unwrap();
    let back: Run = serde_json::from_str(&json).unwrap();
    assert_eq!(back, run);
    let plain = serde_json::to_value(new_run("run-plain")).unwrap();
    assert!(plain.get("batch").is_none());
    assert!(plain["policy"].get("allowed").is_none());
    let contract = serde_json::to_value(publish().contract).unwrap();
    assert!(contract.get("allowed").is_none());
}

#[test]
fn a_decided_slot_reads_back_its_whole_decision_though_the_run_keeps_only_what_it_adds() {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let first = decide(&cp, &a, Verdict::Approve);
    let second = decide(
        &cp,
        &b,
        Verdict::Reject {
            reason: Digest::of(b"no"),
        },
    );
    let (run, _) = accept(&run, at(2, decisions(cp, &[first])));
    let (run, _) = accept(&run, at(3, decisions(cp, &[second])));
    let batch = run.batch().unwrap();
    assert_eq!(
        batch.slot(&a.call_id).unwrap().decided,
        Some((first, Revision(2)))
    );
    assert_eq!(
        batch.slot(&b.call_id).unwrap().decided,
        Some((second, Revision(3)))
    );
    // The wire form is the whole batch, each decision with its approval, as before, and it
    // reads back as the run.
    let json = serde_json::to_value(run).unwrap();
    assert_eq!(serde_json::from_value::<Run>(json.clone()).unwrap(), run);
    assert_eq!(json["batch"], serde_json::to_value(batch).unwrap());
    assert_eq!(
        json["batch"]["slots"][0]["decided"],
        serde_json::json!([serde_json::to_value(first).unwrap(), 2])
    );
    // A decision that the run could not have recorded in that slot is refused on reading:
    // the run keeps only what a decision adds, so what it drops must be the slot's own.
    let edits: [(&str, &str, serde_json::Value); 5] = [
        ("call_id", "another call", serde_json::json!("call-x")),
        (
            "args",
            "other arguments",
            serde_json::to_value(Digest::of(b"{}")).unwrap(),
        ),
        (
            "requester",
            "another requester",
            serde_json::json!("someone"),
        ),
        ("revision", "another revision", serde_json::json!(7)),
        (
            "approver",
            "a second approver",
            serde_json::json!("mallory"),
        ),
    ];
    for (field, what, value) in edits {
        let mut bad = json.clone();
        bad["batch"]["slots"][1]["decided"][0]["approval"][field] = value;
        let err = serde_json::from_value::<Run>(bad).unwrap_err().to_string();
        assert!(err.contains("binds to another"), "{what}: {err}");
    }
}

#[test]
fn res_2_evidence_on_a_batch_goes_only_to_a_holder_of_its_very_checkpoint() {
    let (run, cp, first) = a_approved();
    let second = decide(&cp, &two().1, Verdict::Approve);
    // Another checkpoint of the batch's revision (resealed with another expiry): no evidence;
    // and a checkpoint of the run's current revision is not the batch's either.
    let other = resealed(cp, |c| c.expires_at = Time(49));
    let current = resealed(cp, |c| c.revision = Revision(2));
    let cases = [
        (
            "the winner, on another checkpoint",
            other,
            first,
            stale_revision(2, 1),
        ),
        (
            "another call, on another checkpoint",
            other,
            second,
            stale_revision(2, 1),
        ),
        (
            "another call, at the current revision",
            current,
            second,
            stale_revision(2, 2),
        ),
    ];
    for (case, held, decision, expected) in cases {
        let refused = reject(&run, at(3, decisions(held, &[decision])));
        assert_eq!(refused, expected, "{case}");
    }
}

#[test]
fn res_4_a_checkpoint_that_differs_from_the_batchs_is_refused_field_by_field() {
    let (a, b) = two();
    let (run, cp) = batch_of(&[a, b]);
    let longer = resealed(cp, |c| c.expires_at = Time(49));
    assert_eq!(
        reject(
            &run,
            at(2, decisions(longer, &[decide(&cp, &a, Verdict::Approve)]))
        ),
        Rejection::CheckpointMismatch {
            field: CheckpointField::ExpiresAt
        }
    );
    let other_listing = resealed(cp, |c| c.batch = Some(Digest::of(b"another listing")));
    assert_eq!(
        reject(
            &run,
            at(
                2,
                decisions(other_listing, &[decide(&cp, &a, Verdict::Approve)])
            )
        ),
        Rejection::CheckpointMismatch {
            field: CheckpointField::Batch
        }
    );
}

fn ask(c: Call) -> Call {
    Call {
        contract: ToolContract {
            allowed: Allowed::ALL,
            ..c.contract
        },
        ..c
    }
}

/// A run whose policy allows `allowed`, and nothing else.
fn run_allowing(allowed: &[VerdictKind]) -> Run {
    let run = new_run("run-policy");
    let policy = Policy {
        allowed: Allowed::of(allowed),
        ..*run.policy()
    };
    Run::new(*run.identity(), policy, Time(0)).unwrap()
}

fn with_allowed(c: Call, allowed: &[VerdictKind]) -> Call {
    Call {
        contract: ToolContract {
            allowed: Allowed::of(allowed),
            ..c.contract
        },
        ..c
    }
}

/// APR-4 (spec 5.5): an input that denies a call records the denial alone. An approval, an
/// edit and an answer in the tool's place beside it are not recorded: their calls stay
/// awaiting, the edit rebinds nothing, the answer spends no key, and the transition carries
/// the audit record alone.
#[test]
fn apr_4_a_denial_beside_an_approval_an_edit_and_an_answer_records_the_denial_alone() {
    let (a, b) = two();
    let (c, d) = (
        ask(call("call-c", "ask", "idem-c")),
        call("call-d", "pay", "idem-d"),
    );
    let (run, cp) = batch_of(&[a, b, c, d]);
    let denial = decide(&cp, &d, Verdict::Deny);
    let ds = [
        decide(&cp, &a, Verdict::Approve),
        decide(
            &cp,
            &b,
            Verdict::Edit {
                args: Digest::of(b"edited"),
            },
        ),
        denial,
        decide(
            &cp,
            &c,
            Verdict::Respond {
                result: Digest::of(b"Tuesday"),
            },
        ),
    ];
    let (next, fx) = accept(&run, at(2, decisions(cp, &ds)));
    let record = resume_record(2, 2, DecisionKind::Batch, PhaseKind::Failed);
    assert_eq!(effects(&fx), [record]);
    assert_eq!(
        next.phase(),
        &Phase::Failed(FailCause::Denied { call_id: d.call_id })
    );
    assert_eq!(next.last_call(), None);
    let before = run.batch().unwrap();
    let after = next.batch().unwrap();
    for (was, now) in before.slots.iter().zip(after.slots.iter()).take(3) {
        assert_eq!(now, was, "{} is left as it was", was.call.call.call_id);
    }
    let last = after.slot(&d.call_id).unwrap();
    assert_eq!(last.state, SlotState::Denied);
    assert_eq!(last.decided, Some((denial, Revision(2))));
    assert_eq!(after.closed, Some(Revision(2)));
    // Re-sent on the batch's checkpoint, each is answered from the batch (spec 5.5,
    // "Duplicates and late decisions"): the denial won; the others were never recorded and
    // learn that the batch was resumed by another decision.
    assert_eq!(
        reject(&next, at(3, decisions(cp, &[denial]))),
        already_applied(1, 2)
    );
    for other in [ds[0], ds[1], ds[3]] {
        assert_eq!(
            reject(&next, at(3, decisions(cp, &[other]))),
            already_resumed(1, 2)
        );
    }
}

/// APR-4 with the calls decided before: what earlier inputs recorded stays recorded, and the
/// input with the denial adds the denial only.
#[test]
fn apr_4_decisions_recorded_before_a_denial_stay_and_the_denials_input_adds_only_it() {
    let (a, b) = two();
    let c = call("call-c", "pay", "idem-c");
    let (run, cp) = batch_of(&[a, b, c]);
    let first = decide(&cp, &a, Verdict::Approve);
    let (run, _) = accept(&run, at(2, decisions(cp, &[first])));
    let ds = [
        decide(&cp, &c, Verdict::Deny),
        decide(&cp, &b, Verdict::Approve),
    ];
    let (run, fx) = accept(&run, at(3, decisions(cp, &ds)));
    assert_eq!(fx.histories().count(), 0);
    assert_eq!(
        (state(&run, &a), state(&run, &b), state(&run, &c)),
        (SlotState::Approved, SlotState::Awaiting, SlotState::Denied)
    );
    let batch = run.batch().unwrap();
    assert_eq!(
        batch.slot(&a.call_id).unwrap().decided,
        Some((first, Revision(2)))
    );
    assert_eq!(batch.slot(&b.call_id).unwrap().decided, None);
}

/// POL-1 at suspend time (spec 4.3): a single approval takes approve or deny; a suspension
/// for one that the run's policy and the call's tool leave neither is refused, since no
/// decision could ever answer it. One of the two is enough.
#[test]
fn pol_1_a_single_approval_no_decision_could_answer_is_refused_at_suspend() {
    use VerdictKind::*;
    let c = publish();
    let refused = Rejection::NoDecisionAllowed { call_id: c.call_id };
    let neither = run_allowing(&[Edit, Reject, Respond]);
    assert_eq!(
        reject(&neither, at(1, suspend_for_approval(c, 50))),
        refused
    );
    // Each set alone leaves one, but not the same one.
    let approve_only = run_allowing(&[Approve, Reject]);
    let deny_only = with_allowed(c, &[Reject, Deny]);
    assert_eq!(
        reject(&approve_only, at(1, suspend_for_approval(deny_only, 50))),
        refused
    );
    // The tool's set alone leaves neither.
    let answers_only = with_allowed(c, &[Reject, Respond]);
    assert_eq!(
        reject(
            &new_run("run-policy"),
            at(1, suspend_for_approval(answers_only, 50))
        ),
        refused
    );
    // Either one left is enough: a denial is an answer.
    let (run, fx) = accept(&run_allowing(&[Deny]), at(1, suspend_for_approval(c, 50)));
    let cp = *fx.checkpoint().unwrap();
    let (run, _) = accept(&run, at(2, denying(cp, &c)));
    assert!(run.phase().is_terminal());
    accept(&approve_only, at(1, suspend_for_approval(c, 50)));
}

/// POL-1 comes after the call's own checks: a self-approval and a call that cannot be bound
/// are refused for that first.
#[test]
fn pol_1_the_suspensions_other_checks_come_first() {
    let neither = run_allowing(&[VerdictKind::Reject]);
    let c = publish();
    let own = Event::Suspend {
        wait: Wait::Approval {
            call: c,
            requester: APPROVER,
            prior: Prior::NONE,
        },
        expires_at: Time(50),
        responsible: APPROVER,
        resource_version: 1,
    };
    assert_eq!(
        reject(&neither, at(1, own)),
        Rejection::SelfApproval { party: APPROVER }
    );
    let never = with_contract(c, true, false, 0);
    assert_eq!(
        reject(&neither, at(1, suspend_for_approval(never, 50))),
        Rejection::NoAttemptsAllowed
    );
    assert_eq!(
        reject(&neither, at(1, suspend_batch(&[proposal(never)]))),
        Rejection::NoAttemptsAllowed
    );
}

/// POL-1 for a batch (spec 5.5, BAT-1): a call of a batch takes every verdict, but an edit
/// only if its key is fresh (BAT-5); a call that none of those the run and its tool allow
/// could answer refuses the suspension, calls checked in order.
#[test]
fn pol_1_a_batch_call_no_decision_could_answer_is_refused_at_suspend() {
    use VerdictKind::*;
    let (a, b) = two();
    let answers = run_allowing(&[Respond]);
    // The default tool takes no answer in its place; an ask-the-user tool does.
    assert_eq!(
        reject(
            &answers,
            at(1, suspend_batch(&[proposal(ask(a)), proposal(b)]))
        ),
        Rejection::NoDecisionAllowed { call_id: b.call_id }
    );
    accept(
        &answers,
        at(1, suspend_batch(&[proposal(ask(a)), proposal(ask(b))])),
    );
    // The first call no decision could answer is named, before a later call's own checks.
    let own = Proposal {
        requester: APPROVER,
        ..proposal(ask(b))
    };
    assert_eq!(
        reject(&answers, at(1, suspend_batch(&[proposal(a), own]))),
        Rejection::NoDecisionAllowed { call_id: a.call_id }
    );
    // A tool whose approver may only edit: a fresh key can be edited, a bound one never.
    let edits = with_allowed(a, &[Edit]);
    let (run, _) = accept(
        &new_run("run-batch"),
        at(1, suspend_batch(&[proposal(edits)])),
    );
    assert_eq!(
        run.suspension().map(|s| s.reason),
        Some(Reason::PendingBatch)
    );
    let known = key_bound_before(edits);
    assert_eq!(
        reject(&new_run("run-batch"), at(1, suspend_batch(&[known]))),
        Rejection::NoDecisionAllowed { call_id: a.call_id }
    );
    // With another verdict beside the edit, the bound key leaves that one.
    let known = Proposal {
        call: with_allowed(a, &[Edit, Reject]),
        ..known
    };
    accept(&new_run("run-batch"), at(1, suspend_batch(&[known])));
}
