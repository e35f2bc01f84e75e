//! CONF-1 for batches of calls (spec 5.5): the kernel and the reference machine, driven by
//! hand through batch sessions, agree on every input: which they accept, into which run (the
//! batch slot by slot included) and with which effects, and which they refuse, with which
//! evidence.
//!
//! Each case tells a short story: decisions one at a time and together, edits, rejections,
//! answers in the tool's place, denials, duplicates and conflicts, refusals of every check,
//! expiry and cancel of an open batch, a crash and a cancel with two calls in flight, and
//! results in both orders. Every case asserts that no input divided the machines, and what the
//! story must have reached, so that a case that stopped short cannot pass.

use resumable_conformance::lockstep::{kernel_and_reference, Said, Session};
use resumable_kernel::*;
use resumable_model::reference::Reference;
use resumable_model::Kernel;
use resumable_testkit::batch::*;

/// One batch session: the pair, its clock, and the last checkpoint both persisted.
struct Story {
    s: Session<Kernel, Reference>,
    now: u64,
    cp: Option<Checkpoint>,
}

impl Story {
    fn new() -> Story {
        Story::with_policy(Allowed::ALL)
    }

    fn with_policy(allowed: Allowed) -> Story {
        let s = Session::new(kernel_and_reference(), identity(), policy(allowed), Time(0)).unwrap();
        Story {
            s,
            now: 0,
            cp: None,
        }
    }

    /// Feeds `event` one tick later; panics with both verdicts side by side if the machines
    /// disagree.
    fn feed(&mut self, event: Event) -> Said {
        self.feed_at(self.now + 1, event)
    }

    fn feed_at(&mut self, t: u64, event: Event) -> Said {
        self.now = self.now.max(t);
        let row = self.s.feed(&Input { at: Time(t), event });
        let (agreed, a) = (row.agreed, row.a);
        if !agreed {
            panic!(
                "{}\n\n{}",
                self.s
                    .divergence()
                    .map(|d| d.to_string())
                    .unwrap_or_default(),
                self.s.to_text()
            );
        }
        if let Said::Accepted { effects, .. } = &a {
            if let Some(cp) = effects.checkpoint() {
                self.cp = Some(*cp);
            }
        }
        a
    }

    /// Feeds `event`; both machines must accept it. Returns the effects.
    fn accept(&mut self, event: Event) -> Effects {
        match self.feed(event) {
            Said::Accepted { effects, .. } => effects,
            other => panic!("both should accept, got {other:?}\n\n{}", self.s.to_text()),
        }
    }

    /// Feeds `event`; both machines must refuse it alike. Returns the rejection.
    fn refuse(&mut self, event: Event) -> Rejection {
        match self.feed(event) {
            Said::Refused(r) => r,
            other => panic!("both should refuse, got {other:?}\n\n{}", self.s.to_text()),
        }
    }

    fn checkpoint(&self) -> Checkpoint {
        self.cp.expect("a checkpoint was persisted")
    }

    /// The kernel's run (the reference's is the same, or the session would have panicked).
    fn run(&self) -> &Run {
        &self.s.run().a
    }

    fn batch(&self) -> Batch {
        self.run().batch().expect("the run holds a batch")
    }

    fn states(&self) -> Vec<SlotState> {
        self.batch().slots.iter().map(|s| s.state).collect()
    }

    fn phase(&self) -> Phase {
        *self.run().phase()
    }

    fn suspend(&mut self, calls: &[Proposal]) -> Event {
        suspend_until(calls, self.now + 50)
    }

    /// A story whose first input, accepted, suspends for the batch of `calls`.
    fn opened(calls: &[Call]) -> Story {
        let mut st = Story::new();
        st.open(calls);
        st
    }

    /// Suspends for the batch of `calls`, each proposed with no earlier use of its id or key;
    /// both machines must accept. Returns the effects.
    fn open(&mut self, calls: &[Call]) -> Effects {
        let proposals: Vec<Proposal> = calls.iter().map(|c| proposal(*c)).collect();
        let ev = self.suspend(&proposals);
        self.accept(ev)
    }

    /// Approves every call of `calls`, in that order, in one input; both machines must
    /// accept. Returns the effects.
    fn approve_all(&mut self, calls: &[Call]) -> Effects {
        let decisions: Vec<CallDecision> = (calls.iter())
            .map(|c| self.decision(c, Verdict::Approve))
            .collect();
        self.accept(self.decide(&decisions))
    }

    /// A story whose batch of `calls` was opened and every call approved, in one input.
    fn approved(calls: &[Call]) -> Story {
        let mut st = Story::opened(calls);
        st.approve_all(calls);
        st
    }

    /// Completes the run (both machines must accept) and ends the story.
    fn completes(mut self) {
        self.accept(Event::Complete {
            result: Digest::of(b"r"),
        });
        self.done();
    }

    /// A decision on `c`, bound to the latest checkpoint.
    fn decision(&self, c: &Call, verdict: Verdict) -> CallDecision {
        decision(&self.checkpoint(), c, verdict)
    }

    fn decide(&self, decisions: &[CallDecision]) -> Event {
        decide(&self.checkpoint(), decisions)
    }

    fn decide_with(&self, decisions: &[CallDecision], facts: Facts) -> Event {
        decide_with(&self.checkpoint(), decisions, facts)
    }

    fn reconcile(&self, answer: QueryAnswer) -> Event {
        reconcile(&self.checkpoint(), answer)
    }

    fn intervene(&self, resolution: Resolution) -> Event {
        Event::Resume(Resume {
            checkpoint: self.checkpoint(),
            decision: Decision::Intervene {
                by: OPS,
                resolution,
            },
            facts: honest(),
        })
    }

    fn done(&self) {
        assert!(self.s.divergence().is_none());
        assert!(self.s.rows().iter().all(|r| r.agreed));
    }
}

/// An edit of a value the story is handed, for the tables of what does not bind.
type Edit<T> = fn(&mut T);

fn reason(story: &Story) -> Option<ReasonKind> {
    story.run().suspension().map(|s| s.reason.kind())
}

/// BAT-1, BAT-2, BAT-3, BAT-5, RES-2, BAT-4: decisions one at a time on one checkpoint (an
/// approval, its duplicate and a conflicting one, an edit, an answer in the tool's place),
/// then the approved and edited calls dispatched together, answering in either order.
#[test]
fn decisions_one_at_a_time_bind_to_one_checkpoint_and_resume_the_batch_together() {
    let (a, b, c) = (call("a", DEDUPES), call("b", FENCES), call("c", ASKS));
    let mut st = Story::new();
    let fx = st.open(&[a, b, c]);
    assert_eq!(fx.histories().count(), 3, "one bound entry per call");
    let opened = st.checkpoint();
    assert!(opened.batch.is_some());

    let approve_a = st.decision(&a, Verdict::Approve);
    let fx = st.accept(st.decide(&[approve_a]));
    assert_eq!(
        fx.checkpoint(),
        Some(&opened),
        "the batch's checkpoint stays the same"
    );
    assert_eq!(
        st.refuse(st.decide(&[approve_a])),
        Rejection::AlreadyApplied {
            from: opened.revision,
            to: Revision(2)
        }
    );
    let reject_a = st.decision(&a, reject());
    assert_eq!(
        st.refuse(st.decide(&[reject_a])),
        Rejection::AlreadyResumed {
            from: opened.revision,
            to: Revision(2)
        }
    );
    let fx = st.accept(st.decide(&[st.decision(&b, edit())]));
    assert_eq!(fx.histories().count(), 1, "the edited call is bound again");
    let fx = st.accept(st.decide(&[st.decision(&c, respond())]));
    assert_eq!(fx.dispatches().count(), 2, "a and the edited b, together");
    assert_eq!(
        fx.dispatches().nth(1).map(|d| d.args),
        Some(Digest::of(b"edited"))
    );
    assert_eq!(
        st.states(),
        vec![
            in_flight(),
            in_flight(),
            SlotState::Responded {
                result: Digest::of(b"Tuesday")
            }
        ]
    );
    // BAT-4: the run waits for every call in flight.
    let d = call("d", DEDUPES);
    let busy = Rejection::DispatchInFlight { call_id: a.call_id };
    let dispatch_d = Event::Dispatch {
        call: d,
        prior: Prior::NONE,
        resource_version: None,
    };
    assert_eq!(st.refuse(dispatch_d), busy);
    assert_eq!(
        st.refuse(Event::Complete {
            result: Digest::of(b"r")
        }),
        busy
    );
    assert_eq!(st.refuse(Event::Fail { code: AGENT }), busy);
    let again = st.suspend(&[proposal(d)]);
    assert_eq!(st.refuse(again), busy);
    assert!(matches!(
        st.refuse(result(&a, 1)),
        Rejection::ResultMismatch { .. }
    ));
    // Results in either order: b first, then a.
    st.accept(result(&b, 0));
    st.accept(result(&a, 0));
    st.accept(Event::Complete {
        result: Digest::of(b"r"),
    });
    assert!(st.phase().is_terminal());
    st.done();
}

/// BAT-3: decisions together, results in slot order: a rejected call never runs.
#[test]
fn decisions_together_dispatch_the_approved_calls_only_and_results_come_in_slot_order() {
    let (a, b, c) = (call("a", DEDUPES), call("b", FENCES), call("c", DEDUPES));
    let mut st = Story::opened(&[a, b, c]);
    let all = [
        st.decision(&c, Verdict::Approve),
        st.decision(&b, reject()),
        st.decision(&a, Verdict::Approve),
    ];
    let fx = st.accept(st.decide(&all));
    let sent: Vec<Name> = fx.dispatches().map(|d| d.call_id).collect();
    assert_eq!(sent, vec![a.call_id, c.call_id], "in slot order");
    st.accept(result(&a, 0));
    st.accept(result(&c, 0));
    assert_eq!(st.phase(), Phase::Running { in_flight: None });
    assert!(matches!(st.states()[1], SlotState::Rejected { .. }));
    st.completes();
}

/// A batch with nothing approved resumes idle; the next dispatch states the resource
/// version the agent observed (spec 4.4).
#[test]
fn a_batch_rejected_and_answered_resumes_idle_and_a_dispatch_records_its_version() {
    let (a, c) = (call("a", DEDUPES), call("c", ASKS));
    let mut st = Story::opened(&[a, c]);
    let fx = st.accept(st.decide(&[st.decision(&a, reject()), st.decision(&c, respond())]));
    assert_eq!(fx.dispatches().count(), 0);
    assert_eq!(
        fx.histories().count(),
        1,
        "the answered call's key is spent"
    );
    assert_eq!(st.phase(), Phase::Running { in_flight: None });
    assert_eq!(st.run().last_call().map(|l| l.call_id), Some(c.call_id));
    st.accept(Event::Dispatch {
        call: call("d", DEDUPES),
        prior: Prior::NONE,
        resource_version: Some(42),
    });
    assert_eq!(st.run().resource_version(), 42);
    st.done();
}

/// The batch of a (its tool dedupes), b (its query fences) and c (dedupes), a approved, then b
/// denied: the story, its calls and the denial's effects.
fn denied_after_an_approval() -> (Story, [Call; 3], Effects) {
    let calls = [call("a", DEDUPES), call("b", FENCES), call("c", DEDUPES)];
    let mut st = Story::opened(&calls);
    st.accept(st.decide(&[st.decision(&calls[0], Verdict::Approve)]));
    let fx = st.accept(st.decide(&[st.decision(&calls[1], Verdict::Deny)]));
    (st, calls, fx)
}

/// APR-4: a denial fails the run and no call runs, the calls approved before it included; a
/// call never decided stays so.
#[test]
fn a_denial_fails_the_run_and_no_call_of_the_batch_runs() {
    let (st, [_, b, _], fx) = denied_after_an_approval();
    assert_eq!(fx.dispatches().count(), 0);
    assert_eq!(
        st.phase(),
        Phase::Failed(FailCause::Denied { call_id: b.call_id })
    );
    assert!(st.batch().closed.is_some());
    assert_eq!(
        st.states(),
        vec![SlotState::Approved, SlotState::Denied, SlotState::Awaiting]
    );
    st.done();
}

/// RES-2 after a batch closed (spec 5.5, "Duplicates and late decisions"): a duplicate of
/// the decision that closed it, on the batch's checkpoint, is answered from the batch:
/// `AlreadyApplied` with the revision that recorded it; another decision on a call never
/// decided learns that the batch was resumed.
#[test]
fn a_duplicate_of_the_decision_that_closed_a_batch_is_answered_from_the_batch() {
    let (mut st, [_, b, c], _) = denied_after_an_approval();
    let late = st.decide(&[st.decision(&b, Verdict::Deny)]);
    assert_eq!(
        st.refuse(late),
        Rejection::AlreadyApplied {
            from: Revision(1),
            to: Revision(3)
        }
    );
    let never = st.decide(&[st.decision(&c, Verdict::Approve)]);
    assert_eq!(
        st.refuse(never),
        Rejection::AlreadyResumed {
            from: Revision(1),
            to: Revision(3)
        }
    );
    st.done();
}

/// APR-4 with two denials in one input, given out of slot order: the run fails naming the
/// first denied call.
#[test]
fn two_denials_in_one_input_fail_the_run_naming_the_first() {
    let (a, b, c) = (call("a", DEDUPES), call("b", FENCES), call("c", DEDUPES));
    let mut st = Story::opened(&[a, b, c]);
    st.accept(st.decide(&[
        st.decision(&c, Verdict::Deny),
        st.decision(&b, Verdict::Deny),
    ]));
    assert_eq!(
        st.phase(),
        Phase::Failed(FailCause::Denied { call_id: b.call_id })
    );
    st.done();
}

/// APR-4 with a denial beside other decisions of the same input (spec 5.5): the run fails,
/// and only the denial is recorded. The approval, the edit and the answer in the tool's place
/// beside it leave their calls awaiting (no key rebound, no result recorded, no history
/// entry); sent again, each learns that the batch was resumed, and the denial that it won.
#[test]
fn a_denial_beside_an_approval_an_edit_and_an_answer_records_the_denial_alone() {
    let (a, b, c, d) = (
        call("a", DEDUPES),
        call("b", FENCES),
        call("c", ASKS),
        call("d", DEDUPES),
    );
    let mut st = Story::opened(&[a, b, c, d]);
    let opened = st.batch();
    let together = [
        st.decision(&a, Verdict::Approve),
        st.decision(&b, edit()),
        st.decision(&d, Verdict::Deny),
        st.decision(&c, respond()),
    ];
    let fx = st.accept(st.decide(&together));
    assert_eq!(fx.dispatches().count(), 0);
    assert_eq!(fx.histories().count(), 0);
    assert_eq!(
        st.phase(),
        Phase::Failed(FailCause::Denied { call_id: d.call_id })
    );
    assert_eq!(st.run().last_call(), None);
    assert_eq!(
        st.states(),
        vec![
            SlotState::Awaiting,
            SlotState::Awaiting,
            SlotState::Awaiting,
            SlotState::Denied
        ]
    );
    let closed = st.batch();
    for (was, now) in opened.slots.iter().zip(closed.slots.iter()).take(3) {
        assert_eq!(now, was);
    }
    let to = closed.closed.expect("the denial closed the batch");
    for again in [together[0], together[1], together[3]] {
        assert_eq!(
            st.refuse(st.decide(&[again])),
            Rejection::AlreadyResumed {
                from: opened.opened,
                to
            }
        );
    }
    assert_eq!(
        st.refuse(st.decide(&[together[2]])),
        Rejection::AlreadyApplied {
            from: opened.opened,
            to
        }
    );
    st.done();
}

/// POL-1: a run whose policy leaves `deny` out refuses a denial; a tool that does not allow
/// `respond` refuses an answer in its place.
#[test]
fn decisions_the_policy_or_the_tool_does_not_allow_are_refused() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::with_policy(Allowed::of(&[
        VerdictKind::Approve,
        VerdictKind::Edit,
        VerdictKind::Reject,
        VerdictKind::Respond,
    ]));
    st.open(&[a, b]);
    assert_eq!(
        st.refuse(st.decide(&[st.decision(&a, Verdict::Deny)])),
        Rejection::DecisionNotAllowed {
            decision: VerdictKind::Deny
        }
    );
    assert_eq!(
        st.refuse(st.decide(&[st.decision(&a, respond())])),
        Rejection::DecisionNotAllowed {
            decision: VerdictKind::Respond
        }
    );
    st.accept(st.decide(&[st.decision(&a, reject()), st.decision(&b, reject())]));
    assert_eq!(st.phase(), Phase::Running { in_flight: None });
    st.done();
}

/// POL-1 at suspend time (spec 4.3, 5.5): a call no decision could answer is refused before
/// the suspension begins, by both machines alike and after the call's own checks; the run is
/// left as it was, and a suspension that leaves some decision is accepted.
#[test]
fn a_suspension_no_decision_could_answer_is_refused_alike() {
    use VerdictKind::*;
    let only = |kinds: &[VerdictKind], c: Call| Call {
        contract: ToolContract {
            allowed: Allowed::of(kinds),
            ..c.contract
        },
        ..c
    };
    let single = |c: Call, requester: Name| Event::Suspend {
        wait: Wait::Approval {
            call: c,
            requester,
            prior: Prior::NONE,
        },
        expires_at: Time(40),
        responsible: ALICE,
        resource_version: VERSION,
    };
    // A run that answers for its tools and rejects, never approves nor denies.
    let mut st = Story::with_policy(Allowed::of(&[Edit, Reject, Respond]));
    let (a, b) = (call("a", DEDUPES), call("b", ASKS));
    assert_eq!(
        st.refuse(single(a, AGENT)),
        Rejection::NoDecisionAllowed { call_id: a.call_id }
    );
    assert_eq!(
        st.refuse(single(a, ALICE)),
        Rejection::SelfApproval { party: ALICE }
    );
    let never = Call {
        contract: ToolContract {
            max_attempts: 0,
            ..a.contract
        },
        ..a
    };
    assert_eq!(
        st.refuse(single(never, AGENT)),
        Rejection::NoAttemptsAllowed
    );
    assert_eq!(st.run().revision(), Revision(0));
    // As calls of a batch, both can be answered: rejected, edited, or answered in b's place.
    st.open(&[a, b]);
    st.done();
    // A run that only lets its approver answer in the tool's place: only b can be answered.
    let mut st = Story::with_policy(Allowed::of(&[Respond]));
    let ev = st.suspend(&[proposal(b), proposal(a)]);
    assert_eq!(
        st.refuse(ev),
        Rejection::NoDecisionAllowed { call_id: a.call_id }
    );
    // A tool whose approver may only edit: not when an earlier call bound its key.
    let mut st = Story::new();
    let e = only(&[Edit], call("e", DEDUPES));
    let bound = proposal_key_used(e, e.args, false);
    let ev = st.suspend(&[bound]);
    assert_eq!(
        st.refuse(ev),
        Rejection::NoDecisionAllowed { call_id: e.call_id }
    );
    st.open(&[e]);
    st.done();
}

/// BAT-1: the suspension's own refusals, in order.
#[test]
fn suspending_for_a_batch_refuses_empty_duplicate_self_approved_and_reused_calls() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::new();
    let ev = st.suspend(&[]);
    assert_eq!(st.refuse(ev), Rejection::EmptyBatch);
    let same_id = Call {
        key: IdempotencyKey::lit("key-other"),
        ..a
    };
    let ev = st.suspend(&[proposal(a), proposal(b), proposal(same_id)]);
    assert_eq!(
        st.refuse(ev),
        Rejection::DuplicateInBatch { call_id: a.call_id }
    );
    let same_key = Call {
        call_id: Name::lit("a2"),
        ..a
    };
    let ev = st.suspend(&[proposal(a), proposal(same_key)]);
    assert_eq!(
        st.refuse(ev),
        Rejection::DuplicateInBatch {
            call_id: Name::lit("a2")
        }
    );
    let mine = Proposal {
        requester: ALICE,
        ..proposal(b)
    };
    let ev = st.suspend(&[proposal(a), mine]);
    assert_eq!(st.refuse(ev), Rejection::SelfApproval { party: ALICE });
    let reused = Proposal {
        prior: Prior {
            call_id_used: true,
            key: None,
        },
        ..proposal(b)
    };
    let ev = st.suspend(&[proposal(a), reused]);
    assert_eq!(
        st.refuse(ev),
        Rejection::CallIdReused { call_id: b.call_id }
    );
    let conflicting = proposal_key_used(b, Digest::of(b"other"), false);
    let ev = st.suspend(&[proposal(a), conflicting]);
    assert_eq!(st.refuse(ev), Rejection::KeyConflict { key: b.key });
    let zero = Call {
        contract: ToolContract {
            max_attempts: 0,
            ..DEDUPES
        },
        ..b
    };
    let ev = st.suspend(&[proposal(a), proposal(zero)]);
    assert_eq!(st.refuse(ev), Rejection::NoAttemptsAllowed);
    let ev = Event::Suspend {
        wait: Wait::Batch {
            calls: Proposals::of(&[proposal(a)]).unwrap(),
        },
        expires_at: Time(st.now),
        responsible: ALICE,
        resource_version: VERSION,
    };
    assert!(matches!(st.refuse(ev), Rejection::ExpiryNotInFuture { .. }));
    st.open(&[a, b]);
    let ev = st.suspend(&[proposal(a), proposal(b)]);
    assert!(matches!(st.refuse(ev), Rejection::AlreadySuspended { .. }));
    st.done();
}

/// BAT-2, BAT-5, RES-4, RES-5, RES-6: every check of a batch decision, each refusing alike.
#[test]
fn batch_decisions_that_do_not_bind_are_refused_with_their_evidence() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::new();
    let used_b = proposal_key_used(b, b.args, false);
    let ev = st.suspend(&[proposal(a), used_b]);
    st.accept(ev);
    let cp = st.checkpoint();
    let good = st.decision(&a, Verdict::Approve);
    assert_eq!(st.refuse(st.decide(&[])), Rejection::NoDecision);
    assert_eq!(
        st.refuse(st.decide(&[good, st.decision(&a, reject())])),
        Rejection::DuplicateDecision { call_id: a.call_id }
    );
    // An approval bound to another call, revision, arguments or requester.
    let edits: [(Edit<Approval>, ApprovalField); 4] = [
        (|a| a.call_id = Name::lit("z"), ApprovalField::CallId),
        (|a| a.revision = Revision(0), ApprovalField::Revision),
        (|a| a.args = Digest::of(b"other"), ApprovalField::Args),
        (|a| a.requester = Name::lit("eve"), ApprovalField::Requester),
    ];
    for (edit, field) in edits {
        let mut other = good;
        edit(&mut other.approval);
        assert_eq!(
            st.refuse(st.decide(&[other])),
            Rejection::ApprovalMismatch { field },
            "{field:?}"
        );
    }
    let mut stale = good;
    stale.approval.expires_at = Time(st.now);
    assert!(matches!(
        st.refuse(st.decide(&[stale])),
        Rejection::ApprovalExpired { .. }
    ));
    let mut own = good;
    own.approval.approver = AGENT;
    assert_eq!(
        st.refuse(st.decide(&[own])),
        Rejection::SelfApproval { party: AGENT }
    );
    let mut bob = good;
    bob.approval.approver = Name::lit("bob");
    assert_eq!(
        st.refuse(st.decide(&[bob])),
        Rejection::Unauthorised {
            expected: ALICE,
            got: Name::lit("bob")
        }
    );
    assert_eq!(
        st.refuse(st.decide(&[good, st.decision(&b, edit())])),
        Rejection::EditKeyBound { key: b.key }
    );
    // The second decision's fault is found although the first binds.
    let mut second_bad = st.decision(&b, Verdict::Approve);
    second_bad.approval.args = Digest::of(b"other");
    assert_eq!(
        st.refuse(st.decide(&[good, second_bad])),
        Rejection::ApprovalMismatch {
            field: ApprovalField::Args
        }
    );
    // Decisions of another kind, and checkpoints that are not the batch's.
    let approve = Event::Resume(Resume {
        checkpoint: cp,
        decision: Decision::Approve(good.approval),
        facts: honest(),
    });
    assert!(matches!(
        st.refuse(approve),
        Rejection::DecisionMismatch { .. }
    ));
    // A checkpoint of a future revision, of other calls, of another expiry.
    let edits: [(Edit<Checkpoint>, RejectionKind); 3] = [
        (
            |cp| cp.revision = Revision(9),
            RejectionKind::FutureRevision,
        ),
        (
            |cp| cp.batch = Some(Digest::of(b"other calls")),
            RejectionKind::CheckpointMismatch,
        ),
        (
            |cp| cp.expires_at = Time(99),
            RejectionKind::CheckpointMismatch,
        ),
    ];
    for (edit, kind) in edits {
        let mut other = cp;
        edit(&mut other);
        let refused = st.refuse(decide_with(&other.seal(), &[good], honest()));
        assert_eq!(refused.kind(), kind, "{other:?}");
    }
    let expired = st.decide(&[good]);
    let when = st.run().suspension().unwrap().expires_at.0 + 1;
    assert!(matches!(
        st.feed_at(when, expired),
        Said::Refused(Rejection::Expired { .. })
    ));
    st.done();
}

/// RES-3, RES-7 at the batch's resume: partial approvals are recorded whatever the present,
/// the decision that completes the batch re-checks it, and a failing re-check refuses only
/// while a call is approved.
#[test]
fn the_decision_that_completes_a_batch_rechecks_the_present_once_a_call_is_approved() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::opened(&[a, b]);
    let moved = Facts {
        resource_version: VERSION + 1,
        ..honest()
    };
    // The first approval is recorded although the resource moved: the batch waits on.
    st.accept(st.decide_with(&[st.decision(&a, Verdict::Approve)], moved));
    assert_eq!(st.run().resource_version(), VERSION + 1);
    let approve_b = st.decision(&b, Verdict::Approve);
    let revoked = Facts {
        permitted: false,
        ..honest()
    };
    let broke = Facts {
        within_budget: false,
        ..honest()
    };
    for (facts, rejection) in [
        (
            moved,
            Rejection::ResourceChanged {
                checkpoint: VERSION,
                current: VERSION + 1,
            },
        ),
        (revoked, Rejection::PermissionRevoked),
        (broke, Rejection::BudgetExhausted),
    ] {
        let refused = st.refuse(st.decide_with(&[approve_b], facts));
        assert_eq!(refused, rejection, "{facts:?}");
    }
    let fx = st.accept(st.decide(&[approve_b]));
    assert_eq!(fx.dispatches().count(), 2);
    st.done();
}

/// Expiry of an open batch: undecided and approved calls alike never run.
#[test]
fn an_open_batch_expires_and_none_of_its_calls_runs() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::opened(&[a, b]);
    st.accept(st.decide(&[st.decision(&a, Verdict::Approve)]));
    let expires_at = st.run().suspension().unwrap().expires_at;
    assert!(matches!(
        st.feed_at(expires_at.0, Event::Expire),
        Said::Refused(Rejection::NotExpired { .. })
    ));
    let fx = match st.feed_at(expires_at.0 + 1, Event::Expire) {
        Said::Accepted { effects, .. } => effects,
        other => panic!("expected an expiry: {other:?}"),
    };
    assert_eq!(fx.dispatches().count(), 0);
    assert_eq!(
        st.phase(),
        Phase::Failed(FailCause::Expired { unresolved: None })
    );
    assert!(st.batch().closed.is_some());
    st.done();
}

/// Cancel of an open batch ends the run at once: nothing was dispatched.
#[test]
fn an_open_batch_is_cancelled_at_once() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::opened(&[a, b]);
    st.accept(st.decide(&[st.decision(&b, edit())]));
    st.accept(Event::Cancel {
        by: Name::lit("bob"),
    });
    assert_eq!(
        st.phase(),
        Phase::Failed(FailCause::Cancelled {
            by: Name::lit("bob")
        })
    );
    st.done();
}

/// Two calls approved together, answered out of slot order, then a second batch replacing
/// the first in the run.
#[test]
fn results_in_reverse_order_then_a_second_batch_replaces_the_first() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::opened(&[a, b]);
    let both = [
        st.decision(&a, Verdict::Approve),
        st.decision(&b, Verdict::Approve),
    ];
    st.accept(st.decide(&both));
    let first = st.checkpoint();
    st.accept(result(&b, 0));
    assert_eq!(
        st.states()[1],
        SlotState::Committed {
            result: Digest::of(b"done")
        }
    );
    st.accept(result(&a, 0));
    // The decisions' duplicate, after the batch left its suspension.
    let late = decide_with(&first, &both, honest());
    let refused = st.refuse(late);
    assert!(matches!(
        refused,
        Rejection::AlreadyApplied { .. } | Rejection::StaleRevision { .. }
    ));
    let (c, d) = (call("c", DEDUPES), call("d", DEDUPES));
    st.open(&[c, d]);
    assert_eq!(st.batch().slots.len(), 2);
    assert_eq!(
        st.batch().slots.get(0).map(|s| s.call.call.call_id),
        Some(c.call_id)
    );
    st.accept(st.decide(&[st.decision(&c, reject()), st.decision(&d, Verdict::Approve)]));
    st.accept(result(&d, 0));
    st.done();
}

/// BAT-4, REC-1..REC-4: a crash with two calls in flight; each is reconciled on its own, the
/// first committed, the second retried under a fresh attempt after a fencing "not committed".
#[test]
fn a_crash_with_two_in_flight_reconciles_each_in_turn() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::approved(&[a, b]);
    let fx = st.accept(Event::Recover);
    assert_eq!(fx.query().map(|q| q.call_id), Some(a.call_id));
    assert_eq!(reason(&st), Some(ReasonKind::OutcomeUnknown));
    assert_eq!(st.states(), vec![SlotState::Held, unknown()]);
    // The phase's rules while the others wait.
    assert!(matches!(
        st.refuse(result(&b, 0)),
        Rejection::NoDispatchInFlight { .. }
    ));
    let fx = st.accept(st.reconcile(QueryAnswer::Committed {
        result: Digest::of(b"done"),
    }));
    assert_eq!(fx.query().map(|q| q.call_id), Some(b.call_id));
    let fx = st.accept(st.reconcile(QueryAnswer::NotCommitted));
    assert_eq!(
        fx.dispatch().map(|d| (d.call_id, d.attempt)),
        Some((b.call_id, 1))
    );
    assert!(matches!(
        st.refuse(Event::Complete {
            result: Digest::of(b"r")
        }),
        Rejection::DispatchInFlight { .. }
    ));
    st.accept(result(&b, 1));
    assert_eq!(st.phase(), Phase::Running { in_flight: None });
    assert!(st
        .states()
        .iter()
        .all(|s| matches!(s, SlotState::Committed { .. })));
    st.completes();
}

/// BAT-4 after one result: a crash makes only the call still in flight unknown; an "unknown"
/// answer goes to a person, whose "continue" drops it.
#[test]
fn a_crash_after_one_result_reconciles_the_other_and_a_person_drops_it() {
    let (a, b) = (call("a", DEDUPES), call("b", DEDUPES));
    let mut st = Story::approved(&[a, b]);
    st.accept(result(&a, 0));
    let fx = st.accept(Event::Recover);
    assert_eq!(fx.query().map(|q| q.call_id), Some(b.call_id));
    st.accept(st.reconcile(QueryAnswer::Unknown));
    assert_eq!(reason(&st), Some(ReasonKind::ManualIntervention));
    st.accept(st.intervene(Resolution::Continue));
    assert_eq!(st.phase(), Phase::Running { in_flight: None });
    assert_eq!(st.states()[1], SlotState::Dropped);
    st.done();
}

/// BAT-4 with a person abandoning: the run ends, the slots stay as they were.
#[test]
fn a_person_abandons_while_a_batch_call_waits_its_turn() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::approved(&[a, b]);
    st.accept(Event::Recover);
    st.accept(st.reconcile(QueryAnswer::Unknown));
    st.accept(st.intervene(Resolution::Abandon));
    assert!(st.phase().is_terminal());
    assert_eq!(st.states(), vec![SlotState::Held, unknown()]);
    st.done();
}

/// CAN-1, CAN-2, BAT-4: a cancel with two in flight waits for both outcomes, each settled in
/// turn (a person records the first committed, the second's fencing query says it never
/// will), and only then ends the run.
#[test]
fn a_cancel_with_two_in_flight_waits_for_both_to_be_settled() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::opened(&[a, b]);
    st.approve_all(&[b, a]);
    let bob = Name::lit("bob");
    let fx = st.accept(Event::Cancel { by: bob });
    assert_eq!(fx.query().map(|q| q.call_id), Some(a.call_id));
    assert_eq!(
        st.refuse(Event::Cancel { by: bob }),
        Rejection::CancelPending
    );
    st.accept(st.reconcile(QueryAnswer::Unknown));
    let fx = st.accept(st.intervene(Resolution::Committed {
        result: Digest::of(b"done"),
    }));
    assert_eq!(fx.query().map(|q| q.call_id), Some(b.call_id));
    assert_eq!(
        st.run().suspension().and_then(|s| s.reason.cancelled_by()),
        Some(bob)
    );
    st.accept(st.reconcile(QueryAnswer::NotCommitted));
    assert_eq!(st.phase(), Phase::Failed(FailCause::Cancelled { by: bob }));
    assert_eq!(
        st.states(),
        vec![
            SlotState::Committed {
                result: Digest::of(b"done")
            },
            SlotState::Dropped
        ]
    );
    st.done();
}

/// CAN-2, EXP-1: a cancel with two in flight, the first reconciliation expiring to a person,
/// who finds it committed; the second's outcome expires too, and the run ends expired with it
/// unresolved.
#[test]
fn a_cancel_with_two_in_flight_survives_expiries_until_the_effect_is_named() {
    let (a, b) = (call("a", DEDUPES), call("b", DEDUPES));
    let mut st = Story::approved(&[a, b]);
    st.accept(Event::Cancel {
        by: Name::lit("bob"),
    });
    let until = st.run().suspension().unwrap().expires_at.0;
    st.feed_at(until + 1, Event::Expire);
    assert_eq!(reason(&st), Some(ReasonKind::ManualIntervention));
    st.accept(st.intervene(Resolution::Committed {
        result: Digest::of(b"done"),
    }));
    assert_eq!(reason(&st), Some(ReasonKind::OutcomeUnknown));
    let until = st.run().suspension().unwrap().expires_at.0;
    st.feed_at(until + 1, Event::Expire);
    let until = st.run().suspension().unwrap().expires_at.0;
    st.feed_at(until + 1, Event::Expire);
    assert!(matches!(
        st.phase(),
        Phase::Failed(FailCause::Expired {
            unresolved: Some(_)
        })
    ));
    st.done();
}

/// A batch of one behaves as a pending approval does, with the batch's decisions.
#[test]
fn a_batch_of_one_is_approved_dispatched_and_answered() {
    let a = call("a", FENCES);
    let mut st = Story::opened(&[a]);
    let fx = st.accept(st.decide(&[st.decision(&a, edit())]));
    assert_eq!(fx.dispatch().map(|d| d.args), Some(Digest::of(b"edited")));
    st.accept(Event::Recover);
    st.accept(st.reconcile(QueryAnswer::NotCommitted));
    st.accept(result(&a, 1));
    assert_eq!(st.phase(), Phase::Running { in_flight: None });
    st.done();
}

/// Spec 5.5's decision checks in order: check 2 (the call named, a duplicate answered) over
/// every decision before check 3 looks at any, so a second decision's duplicate is answered
/// before a first one's fault; checks 3 to 5 decision by decision.
#[test]
fn decisions_are_checked_check_by_check() {
    let (a, b, c) = (call("a", DEDUPES), call("b", FENCES), call("c", DEDUPES));
    let mut st = Story::opened(&[a, b, c]);
    let approve_a = st.decision(&a, Verdict::Approve);
    st.accept(st.decide(&[approve_a]));
    let mut late_b = st.decision(&b, Verdict::Approve);
    late_b.approval.expires_at = Time(1);
    let refused = st.refuse(st.decide(&[late_b, approve_a]));
    assert!(matches!(refused, Rejection::AlreadyApplied { .. }));
    let refused = st.refuse(st.decide(&[approve_a, late_b]));
    assert!(matches!(refused, Rejection::AlreadyApplied { .. }));
    let mut other_c = st.decision(&c, Verdict::Approve);
    other_c.approval.args = Digest::of(b"other");
    let refused = st.refuse(st.decide(&[late_b, other_c]));
    assert!(matches!(refused, Rejection::ApprovalExpired { .. }));
    st.accept(st.decide(&[st.decision(&c, reject())]));
    st.accept(st.decide(&[st.decision(&b, Verdict::Approve)]));
    assert_eq!(st.states()[1], in_flight());
    st.done();
}

/// RES-2 while a batch is open (spec 5.5): any checkpoint but the batch's own is stale, a
/// duplicate of the resume that won an earlier suspension included.
#[test]
fn an_earlier_suspensions_duplicate_while_a_batch_is_open_is_stale() {
    let a = call("a", DEDUPES);
    let mut st = Story::new();
    let hook = Name::lit("hook");
    st.accept(Event::Suspend {
        wait: Wait::Callback { callback: hook },
        expires_at: Time(40),
        responsible: Name::lit("partner"),
        resource_version: VERSION,
    });
    let first = st.checkpoint();
    let callback = Event::Resume(Resume {
        checkpoint: first,
        decision: Decision::Callback {
            callback: hook,
            payload: Digest::of(b"p"),
        },
        facts: honest(),
    });
    st.accept(callback);
    st.open(&[a]);
    assert_eq!(
        st.refuse(callback),
        Rejection::StaleRevision {
            current: Revision(3),
            got: Revision(1)
        }
    );
    st.done();
}

/// POL-1 on a single pending approval (spec 5.2 rule 5): a denial the run's policy leaves out,
/// and an approval the tool's contract leaves out, are refused after the approval's own
/// checks; a denial both allow fails the run as before.
#[test]
fn a_single_approval_or_denial_is_refused_unless_policy_and_tool_allow_it() {
    let no_approve = ToolContract {
        allowed: Allowed::of(&[VerdictKind::Reject, VerdictKind::Deny]),
        ..DEDUPES
    };
    for (allowed, contract, deny, expected) in [
        (
            Allowed::of(&[VerdictKind::Approve, VerdictKind::Reject]),
            DEDUPES,
            true,
            Some(VerdictKind::Deny),
        ),
        (Allowed::ALL, no_approve, false, Some(VerdictKind::Approve)),
        (Allowed::ALL, DEDUPES, true, None),
    ] {
        let a = call("a", contract);
        let mut st = Story::with_policy(allowed);
        st.accept(Event::Suspend {
            wait: Wait::Approval {
                call: a,
                requester: AGENT,
                prior: Prior::NONE,
            },
            expires_at: Time(40),
            responsible: ALICE,
            resource_version: VERSION,
        });
        let approval = st.decision(&a, Verdict::Approve).approval;
        let decision = if deny {
            Decision::Deny(approval)
        } else {
            Decision::Approve(approval)
        };
        let ev = Event::Resume(Resume {
            checkpoint: st.checkpoint(),
            decision,
            facts: honest(),
        });
        match expected {
            Some(decision) => {
                assert_eq!(st.refuse(ev), Rejection::DecisionNotAllowed { decision });
                // The approval's own checks come first.
                let mut bob = approval;
                bob.approver = Name::lit("bob");
                let ev = Event::Resume(Resume {
                    checkpoint: st.checkpoint(),
                    decision: Decision::Approve(bob),
                    facts: honest(),
                });
                assert!(matches!(st.refuse(ev), Rejection::Unauthorised { .. }));
            }
            None => {
                st.accept(ev);
                assert!(st.phase().is_terminal());
            }
        }
        st.done();
    }
}

/// Spec 5.5: a list naming a decided call is answered from the batch with rows 4 and 5,
/// before the list's own checks, even when it names that call twice.
#[test]
fn a_decided_call_named_twice_in_one_input_is_answered_from_the_batch() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::opened(&[a, b]);
    let approve_a = st.decision(&a, Verdict::Approve);
    st.accept(st.decide(&[approve_a]));
    assert_eq!(
        st.refuse(st.decide(&[approve_a, approve_a])),
        Rejection::AlreadyApplied {
            from: Revision(1),
            to: Revision(2)
        }
    );
    let approve_b = st.decision(&b, Verdict::Approve);
    assert_eq!(
        st.refuse(st.decide(&[approve_b, approve_b, approve_a])),
        Rejection::AlreadyApplied {
            from: Revision(1),
            to: Revision(2)
        }
    );
    st.done();
}

/// Rows 4 and 5 while a batch is open and partly decided (the run's revision past `opened`):
/// a checkpoint at the run's revision is not the batch's and is stale, one past it is from the
/// future, and one of an earlier batch is answered from that batch or stale.
#[test]
fn checkpoints_other_than_the_batchs_are_refused_alike_while_it_is_partly_decided() {
    let (a, b) = (call("a", DEDUPES), call("b", FENCES));
    let mut st = Story::new();
    st.accept(Event::Suspend {
        wait: Wait::Intervention,
        expires_at: Time(40),
        responsible: OPS,
        resource_version: VERSION,
    });
    let before = st.checkpoint();
    st.accept(Event::Resume(Resume {
        checkpoint: before,
        decision: Decision::Intervene {
            by: OPS,
            resolution: Resolution::Continue,
        },
        facts: honest(),
    }));
    st.open(&[a, b]);
    let cp = st.checkpoint();
    st.accept(st.decide(&[st.decision(&a, reject())]));
    st.accept(st.decide(&[st.decision(&b, reject())]));
    let ev = st.suspend(&[proposal(call("c", DEDUPES)), proposal(call("d", DEDUPES))]);
    st.accept(ev);
    let open = st.checkpoint();
    st.accept(st.decide(&[st.decision(&call("c", DEDUPES), Verdict::Approve)]));
    let future = Checkpoint {
        revision: Revision(open.revision.0 + 1),
        ..open
    }
    .seal();
    let decision = [st.decision(&call("d", DEDUPES), Verdict::Approve)];
    let refused = st.refuse(decide_with(&future, &decision, honest()));
    assert!(matches!(refused, Rejection::StaleRevision { .. }));
    let far = Checkpoint {
        revision: Revision(open.revision.0 + 5),
        ..open
    }
    .seal();
    let refused = st.refuse(decide_with(&far, &decision, honest()));
    assert!(matches!(refused, Rejection::FutureRevision { .. }));
    let refused = st.refuse(decide_with(&cp, &decision, honest()));
    assert!(matches!(
        refused,
        Rejection::AlreadyResumed { .. } | Rejection::StaleRevision { .. }
    ));
    st.done();
}
