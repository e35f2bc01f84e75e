//! The reference machine's batches of calls (spec 5.5), rule by rule, driven on its own.
//! Where each broken batch variant parts from it is `variants.rs`.

use resumable_kernel::checkpoint::batch_digest;
use resumable_kernel::*;
use resumable_model::reference::{RefRun, Reference, Status};
use resumable_model::Lifecycle;
use resumable_testkit::batch::*;

const REF: Reference = Reference::new();

/// A suspend for the batch `calls`, expiring at t50.
fn suspend(calls: &[Proposal]) -> Event {
    suspend_until(calls, 50)
}

/// A lifecycle driven by hand: its run, its clock, its last checkpoint.
struct Driven<L: Lifecycle> {
    machine: L,
    run: L::Run,
    now: u64,
    cp: Option<Checkpoint>,
}

impl<L: Lifecycle> Driven<L> {
    fn new(machine: L, allowed: Allowed) -> Driven<L> {
        let run = machine
            .create(identity(), policy(allowed), Time(0))
            .unwrap();
        Driven {
            machine,
            run,
            now: 0,
            cp: None,
        }
    }

    fn step(&mut self, event: Event) -> Result<Effects, Rejection> {
        self.now += 1;
        let input = Input {
            at: Time(self.now),
            event,
        };
        let (next, effects) = self.machine.step(&self.run, &input)?;
        self.run = next;
        if let Some(cp) = effects.checkpoint() {
            self.cp = Some(*cp);
        }
        Ok(effects)
    }

    fn accept(&mut self, event: Event) -> Effects {
        self.step(event)
            .unwrap_or_else(|r| panic!("{}: expected acceptance, got {r:?}", self.machine.name()))
    }

    fn refuse(&mut self, event: Event) -> Rejection {
        match self.step(event) {
            Err(r) => r,
            Ok(fx) => panic!("{}: expected a refusal, got {fx:?}", self.machine.name()),
        }
    }

    fn cp(&self) -> Checkpoint {
        self.cp.expect("a checkpoint was persisted")
    }
}

fn reference() -> Driven<Reference> {
    Driven::new(REF, Allowed::ALL)
}

fn batch(d: &Driven<Reference>) -> Batch {
    d.run.batch.expect("the run holds a batch")
}

fn states(d: &Driven<Reference>) -> Vec<SlotState> {
    batch(d).slots.iter().map(|s| s.state).collect()
}

fn suspended(run: &RefRun) -> Option<Suspension> {
    match run.status {
        Status::Suspended(s) => Some(s),
        _ => None,
    }
}

// -------------------------------------------------------------------------------------------
// BAT-1: suspending for a batch, and its checkpoint.
// -------------------------------------------------------------------------------------------

#[test]
fn running_suspend_for_a_batch_binds_each_call_and_seals_one_checkpoint() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let seen = proposal_key_used(b, b.args, false);
    let mut d = reference();
    let fx = d.accept(suspend(&[proposal(a), seen]));
    let bound: Vec<HistoryEntry> = fx.histories().copied().collect();
    assert_eq!(
        bound,
        vec![HistoryEntry::bound(&a), HistoryEntry::bound(&b)]
    );
    let b1 = batch(&d);
    assert_eq!(
        (b1.opened, b1.closed, b1.resource_version),
        (Revision(1), None, VERSION)
    );
    let fresh: Vec<bool> = b1.slots.iter().map(|s| s.fresh).collect();
    assert_eq!(fresh, vec![true, false], "b's key was bound before");
    assert!(b1
        .slots
        .iter()
        .all(|s| s.state == SlotState::Awaiting && s.decided.is_none()));
    let cp = d.cp();
    assert_eq!(cp.reason, ReasonKind::PendingBatch);
    assert_eq!(cp.next_intent, Intent::Dispatch);
    assert_eq!(
        (cp.pending, cp.key_digest, cp.requester),
        (None, None, None)
    );
    assert_eq!(cp.batch, Some(batch_digest(&b1)));
    assert_eq!(
        cp.digest, b1.checkpoint,
        "the batch keeps its checkpoint's digest"
    );
    assert!(cp.verify().is_ok());
}

#[test]
fn running_suspend_for_a_batch_refuses_in_the_spec_order() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut d = reference();
    // 4.3 row 1 first: the expiry, even of an empty batch.
    let past = Event::Suspend {
        wait: Wait::Batch {
            calls: Proposals::new(),
        },
        expires_at: Time(1),
        responsible: ALICE,
        resource_version: VERSION,
    };
    assert!(matches!(
        d.refuse(past),
        Rejection::ExpiryNotInFuture { .. }
    ));
    assert_eq!(d.refuse(suspend(&[])), Rejection::EmptyBatch);
    let twin = Call {
        call_id: Name::lit("a2"),
        ..a
    };
    // A duplicate is found before a self-approval of an earlier call.
    let mine = Proposal {
        requester: ALICE,
        ..proposal(a)
    };
    assert_eq!(
        d.refuse(suspend(&[mine, proposal(twin)])),
        Rejection::DuplicateInBatch {
            call_id: Name::lit("a2")
        }
    );
    // Call by call: the first call's binding fault before the second's self-approval.
    let reused = Proposal {
        prior: Prior {
            call_id_used: true,
            key: None,
        },
        ..proposal(a)
    };
    let mine_b = Proposal {
        requester: ALICE,
        ..proposal(b)
    };
    assert_eq!(
        d.refuse(suspend(&[reused, mine_b])),
        Rejection::CallIdReused { call_id: a.call_id }
    );
    assert_eq!(
        d.refuse(suspend(&[proposal(a), mine_b])),
        Rejection::SelfApproval { party: ALICE }
    );
    let spent = proposal_key_used(b, b.args, true);
    assert_eq!(
        d.refuse(suspend(&[proposal(a), spent])),
        Rejection::KeyCommitted { key: b.key }
    );
    assert_eq!(d.run.revision, Revision(0), "a refusal changes nothing");
}

#[test]
fn pending_batch_decisions_keep_the_checkpoint_it_opened_with() {
    let (a, b, c) = (call("a", DEDUPES), call("b", FENCES), call("c", ASKS));
    let mut d = reference();
    d.accept(suspend(&[proposal(a), proposal(b), proposal(c)]));
    let opened = d.cp();
    let fx = d.accept(decide(&opened, &[decision(&opened, &b, edit())]));
    assert_eq!(
        fx.checkpoint(),
        Some(&opened),
        "an edit leaves it unchanged"
    );
    let fx = d.accept(decide(&opened, &[decision(&opened, &a, Verdict::Approve)]));
    assert_eq!(fx.checkpoint(), Some(&opened));
    assert_eq!(d.run.revision, Revision(3));
    assert_eq!(suspended(&d.run).map(|s| s.since), Some(Time(1)));
}

// -------------------------------------------------------------------------------------------
// BAT-2, POL-1, BAT-5: deciding.
// -------------------------------------------------------------------------------------------

/// Decisions on a batch of `a` (whose key is fresh) and `b` (whose key was bound before),
/// opened at `cp` by `ALICE` under a policy that allows approve, edit and reject, each with
/// the refusal it meets, in the spec's order of the checks: each differs from an approval of
/// `a` in one field only (an expiry of t0 is refused at the time of the decision).
fn refused_decisions(cp: &Checkpoint, a: &Call, b: &Call) -> Vec<(CallDecision, Rejection)> {
    let good = decision(cp, a, Verdict::Approve);
    let with = |f: &dyn Fn(&mut Approval)| {
        let mut x = good;
        f(&mut x.approval);
        x
    };
    vec![
        (
            with(&|x| x.call_id = Name::lit("z")),
            Rejection::ApprovalMismatch {
                field: ApprovalField::CallId,
            },
        ),
        (
            with(&|x| x.revision = Revision(0)),
            Rejection::ApprovalMismatch {
                field: ApprovalField::Revision,
            },
        ),
        (
            with(&|x| x.args = Digest::of(b"x")),
            Rejection::ApprovalMismatch {
                field: ApprovalField::Args,
            },
        ),
        (
            with(&|x| x.requester = Name::lit("eve")),
            Rejection::ApprovalMismatch {
                field: ApprovalField::Requester,
            },
        ),
        (
            with(&|x| x.expires_at = Time(0)),
            Rejection::ApprovalExpired {
                expires_at: Time(0),
                now: Time(0),
            },
        ),
        (
            with(&|x| x.approver = AGENT),
            Rejection::SelfApproval { party: AGENT },
        ),
        (
            with(&|x| x.approver = Name::lit("bob")),
            Rejection::Unauthorised {
                expected: ALICE,
                got: Name::lit("bob"),
            },
        ),
        (
            decision(cp, a, Verdict::Deny),
            Rejection::DecisionNotAllowed {
                decision: VerdictKind::Deny,
            },
        ),
        (
            decision(cp, a, respond()),
            Rejection::DecisionNotAllowed {
                decision: VerdictKind::Respond,
            },
        ),
        (
            decision(cp, b, edit()),
            Rejection::EditKeyBound { key: b.key },
        ),
    ]
}

#[test]
fn pending_batch_decisions_are_checked_in_the_spec_order() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut d = Driven::new(
        REF,
        Allowed::of(&[VerdictKind::Approve, VerdictKind::Edit, VerdictKind::Reject]),
    );
    let seen = proposal_key_used(b, b.args, false);
    d.accept(suspend(&[proposal(a), seen]));
    let cp = d.cp();
    let good = decision(&cp, &a, Verdict::Approve);
    assert_eq!(d.refuse(decide(&cp, &[])), Rejection::NoDecision);
    assert_eq!(
        d.refuse(decide(&cp, &[good, decision(&cp, &a, reject())])),
        Rejection::DuplicateDecision { call_id: a.call_id }
    );
    let cases = refused_decisions(&cp, &a, &b);
    for (i, (bad, expected)) in cases.into_iter().enumerate() {
        let now = d.now + 1;
        let expected = match expected {
            Rejection::ApprovalExpired { expires_at, .. } => Rejection::ApprovalExpired {
                expires_at,
                now: Time(now),
            },
            other => other,
        };
        assert_eq!(d.refuse(decide(&cp, &[bad])), expected, "case {i}");
    }
    // RES-2 per call: the decision recorded is answered with the revision that recorded it.
    d.accept(decide(&cp, &[good]));
    let to = d.run.revision;
    assert_eq!(
        d.refuse(decide(&cp, &[good])),
        Rejection::AlreadyApplied {
            from: cp.revision,
            to
        }
    );
    assert_eq!(
        d.refuse(decide(&cp, &[decision(&cp, &a, reject())])),
        Rejection::AlreadyResumed {
            from: cp.revision,
            to
        }
    );
}

#[test]
fn pending_batch_edit_rebinds_a_fresh_key_and_respond_records_the_answer() {
    let (a, c) = (call("a", DEDUPES), call("c", ASKS));
    let mut d = reference();
    d.accept(suspend(&[proposal(a), proposal(c)]));
    let cp = d.cp();
    let fx = d.accept(decide(
        &cp,
        &[decision(&cp, &c, respond()), decision(&cp, &a, edit())],
    ));
    let edited = Call {
        args: Digest::of(b"edited"),
        ..a
    };
    // In slot order: a bound again with the approver's arguments, c's key spent.
    let entries: Vec<HistoryEntry> = fx.histories().copied().collect();
    assert_eq!(
        entries,
        vec![HistoryEntry::bound(&edited), HistoryEntry::settled(&c.key)]
    );
    let slot_a = *batch(&d).slots.get(0).unwrap();
    assert_eq!(slot_a.call.call.args, edited.args);
    assert_eq!(slot_a.proposed, a.args);
    assert_eq!(
        slot_a.call.key_digest,
        checkpoint::key_digest(&a.key, &edited.args)
    );
    let dispatched: Vec<Digest> = fx.dispatches().map(|x| x.args).collect();
    assert_eq!(dispatched, vec![edited.args]);
    let last = d.run.last_call.expect("the answer is the last result");
    assert_eq!(
        (last.call.call.call_id, last.result),
        (c.call_id, Digest::of(b"Tuesday"))
    );
    assert_eq!(d.run.last_resume.map(|r| r.checkpoint), Some(cp.digest));
}

#[test]
fn pending_approval_decisions_the_policy_leaves_out_are_refused() {
    let a = call("a", DEDUPES);
    let mut d = Driven::new(
        REF,
        Allowed::of(&[VerdictKind::Approve, VerdictKind::Reject]),
    );
    d.accept(Event::Suspend {
        wait: Wait::Approval {
            call: a,
            requester: AGENT,
            prior: Prior::NONE,
        },
        expires_at: Time(50),
        responsible: ALICE,
        resource_version: VERSION,
    });
    let cp = d.cp();
    let approval = decision(&cp, &a, Verdict::Approve).approval;
    let deny = Event::Resume(Resume {
        checkpoint: cp,
        decision: Decision::Deny(approval),
        facts: honest(),
    });
    assert_eq!(
        d.refuse(deny),
        Rejection::DecisionNotAllowed {
            decision: VerdictKind::Deny
        }
    );
    let approve = Event::Resume(Resume {
        checkpoint: cp,
        decision: Decision::Approve(approval),
        facts: honest(),
    });
    assert!(d.accept(approve).dispatch().is_some());
}

// -------------------------------------------------------------------------------------------
// BAT-3: the batch resumes.
// -------------------------------------------------------------------------------------------

#[test]
fn pending_batch_last_decision_rechecks_the_present_and_dispatches_in_slot_order() {
    let (a, b, c) = (call("a", DEDUPES), call("b", FENCES), call("c", DEDUPES));
    let mut d = reference();
    d.accept(suspend(&[proposal(a), proposal(b), proposal(c)]));
    let cp = d.cp();
    let moved = Facts {
        resource_version: VERSION + 1,
        ..honest()
    };
    d.accept(decide_with(
        &cp,
        &[decision(&cp, &c, Verdict::Approve)],
        moved,
    ));
    let rest = [
        decision(&cp, &b, reject()),
        decision(&cp, &a, Verdict::Approve),
    ];
    assert_eq!(
        d.refuse(decide_with(&cp, &rest, moved)),
        Rejection::ResourceChanged {
            checkpoint: VERSION,
            current: VERSION + 1
        }
    );
    let fx = d.accept(decide(&cp, &rest));
    let sent: Vec<(Name, u8)> = fx.dispatches().map(|x| (x.call_id, x.attempt)).collect();
    assert_eq!(sent, vec![(a.call_id, 0), (c.call_id, 0)]);
    assert_eq!(d.run.status, Status::Running);
    assert_eq!(batch(&d).closed, Some(d.run.revision));
    assert_eq!(
        states(&d),
        vec![
            in_flight(),
            SlotState::Rejected {
                reason: Digest::of(b"no")
            },
            in_flight()
        ]
    );
}

#[test]
fn pending_batch_deny_fails_the_run_and_nothing_is_dispatched() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut d = reference();
    d.accept(suspend(&[proposal(a), proposal(b)]));
    let cp = d.cp();
    let fx = d.accept(decide(
        &cp,
        &[
            decision(&cp, &a, Verdict::Approve),
            decision(&cp, &b, Verdict::Deny),
        ],
    ));
    assert_eq!(fx.dispatches().count(), 0);
    assert_eq!(
        d.run.status,
        Status::Failed(FailCause::Denied { call_id: b.call_id })
    );
    assert_eq!(states(&d), vec![SlotState::Awaiting, SlotState::Denied]);
}

// -------------------------------------------------------------------------------------------
// BAT-4: calls in flight together.
// -------------------------------------------------------------------------------------------

fn two_in_flight() -> (Driven<Reference>, Call, Call) {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut d = reference();
    d.accept(suspend(&[proposal(a), proposal(b)]));
    let cp = d.cp();
    d.accept(decide(
        &cp,
        &[
            decision(&cp, &a, Verdict::Approve),
            decision(&cp, &b, Verdict::Approve),
        ],
    ));
    (d, a, b)
}

#[test]
fn batch_in_flight_results_arrive_in_any_order_and_the_run_waits_for_them() {
    let (mut d, a, b) = two_in_flight();
    let busy = Rejection::DispatchInFlight { call_id: a.call_id };
    let other = call("d", DEDUPES);
    let dispatch = Event::Dispatch {
        call: other,
        prior: Prior::NONE,
        resource_version: None,
    };
    assert_eq!(d.refuse(dispatch), busy);
    assert_eq!(d.refuse(suspend(&[proposal(other)])), busy);
    assert_eq!(d.refuse(Event::Fail { code: AGENT }), busy);
    assert_eq!(
        d.refuse(result(&b, 1)),
        Rejection::ResultMismatch {
            call_id: a.call_id,
            attempt: 0,
            got_call: b.call_id,
            got_attempt: 1
        }
    );
    let fx = d.accept(result(&b, 0));
    assert_eq!(
        fx.histories().copied().collect::<Vec<_>>(),
        vec![HistoryEntry::settled(&b.key)]
    );
    assert_eq!(
        d.run.last_call.map(|l| l.call.call.call_id),
        Some(b.call_id)
    );
    assert_eq!(
        d.refuse(Event::Complete {
            result: Digest::of(b"r")
        }),
        busy
    );
    d.accept(result(&a, 0));
    d.accept(Event::Complete {
        result: Digest::of(b"r"),
    });
}

#[test]
fn batch_in_flight_recover_makes_each_unknown_and_reconciles_them_in_turn() {
    let (mut d, a, b) = two_in_flight();
    let fx = d.accept(Event::Recover);
    assert_eq!(fx.query().map(|q| q.call_id), Some(a.call_id));
    assert_eq!(states(&d), vec![SlotState::Held, unknown()]);
    let s = suspended(&d.run).expect("outcome unknown");
    assert_eq!(s.responsible, OPS);
    let cp = d.cp();
    let fx = d.accept(reconcile(
        &cp,
        QueryAnswer::Committed {
            result: Digest::of(b"done"),
        },
    ));
    // a is committed, b taken up: its query, a new checkpoint.
    assert_eq!(fx.query().map(|q| q.call_id), Some(b.call_id));
    assert_eq!(
        fx.histories().copied().collect::<Vec<_>>(),
        vec![HistoryEntry::settled(&a.key)]
    );
    assert!(matches!(states(&d)[0], SlotState::Committed { .. }));
    assert_eq!(states(&d)[1], SlotState::Held);
    let cp = d.cp();
    let fx = d.accept(reconcile(&cp, QueryAnswer::NotCommitted));
    assert_eq!(
        fx.dispatch().map(|x| (x.call_id, x.attempt)),
        Some((b.call_id, 1))
    );
    assert_eq!(
        states(&d)[1],
        SlotState::Held,
        "in flight alone, held by the phase"
    );
    d.accept(result(&b, 1));
    assert_eq!(d.run.status, Status::Running);
    assert!(matches!(states(&d)[1], SlotState::Committed { .. }));
}

#[test]
fn batch_in_flight_cancel_waits_for_each_outcome_then_ends_the_run() {
    let (mut d, a, b) = two_in_flight();
    let bob = Name::lit("bob");
    let fx = d.accept(Event::Cancel { by: bob });
    assert_eq!(fx.query().map(|q| q.call_id), Some(a.call_id));
    assert_eq!(
        d.refuse(Event::Cancel { by: bob }),
        Rejection::CancelPending
    );
    let cp = d.cp();
    // a's query does not fence: "not committed" goes to a person, the cancel waiting.
    d.accept(reconcile(&cp, QueryAnswer::NotCommitted));
    let cp = d.cp();
    let fx = d.accept(Event::Resume(Resume {
        checkpoint: cp,
        decision: Decision::Intervene {
            by: OPS,
            resolution: Resolution::Continue,
        },
        facts: honest(),
    }));
    assert_eq!(fx.query().map(|q| q.call_id), Some(b.call_id));
    assert_eq!(states(&d)[0], SlotState::Dropped);
    let s = suspended(&d.run).expect("b's outcome unknown");
    assert_eq!(s.reason.cancelled_by(), Some(bob));
    let cp = d.cp();
    d.accept(reconcile(&cp, QueryAnswer::NotCommitted));
    assert_eq!(
        d.run.status,
        Status::Failed(FailCause::Cancelled { by: bob })
    );
    assert_eq!(states(&d), vec![SlotState::Dropped, SlotState::Dropped]);
}

// -------------------------------------------------------------------------------------------
// Expiry and cancel of an open batch; dispatch's resource version (spec 4.4).
// -------------------------------------------------------------------------------------------

#[test]
fn pending_batch_expires_or_is_cancelled_without_dispatching_anything() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut d = reference();
    d.accept(suspend(&[proposal(a), proposal(b)]));
    let cp = d.cp();
    d.accept(decide(&cp, &[decision(&cp, &a, Verdict::Approve)]));
    let mut e = Driven {
        machine: REF,
        run: d.run,
        now: 50,
        cp: d.cp,
    };
    let fx = e.accept(Event::Expire);
    assert_eq!(fx.dispatches().count(), 0);
    assert_eq!(
        e.run.status,
        Status::Failed(FailCause::Expired { unresolved: None })
    );
    assert_eq!(batch(&e).closed, Some(e.run.revision));
    let fx = d.accept(Event::Cancel {
        by: Name::lit("bob"),
    });
    assert_eq!(fx.dispatches().count(), 0);
    assert!(matches!(
        d.run.status,
        Status::Failed(FailCause::Cancelled { .. })
    ));
}

#[test]
fn running_dispatch_records_the_resource_version_it_states() {
    let mut d = reference();
    d.accept(Event::Dispatch {
        call: call("a", DEDUPES),
        prior: Prior::NONE,
        resource_version: Some(42),
    });
    assert_eq!(d.run.resource_version, 42);
    d.accept(result(&call("a", DEDUPES), 0));
    d.accept(Event::Dispatch {
        call: call("b", DEDUPES),
        prior: Prior::NONE,
        resource_version: None,
    });
    assert_eq!(
        d.run.resource_version, 42,
        "without one, the run keeps its version"
    );
}
