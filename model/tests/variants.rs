//! Each broken variant of the reference machine, as a row of one table: a run, the input on
//! which the variant parts from the reference, and what each of the two does with it. One
//! check function reads every row, and every variant has exactly one.
//!
//! The model check shows each variant caught by a property (`properties_variants.rs`); this
//! table shows, one step at a time, the very rule each one breaks.

mod reference_support;

use reference_support::*;
use resumable_kernel::checkpoint::tool_key;
use resumable_kernel::*;
use resumable_model::reference::{RefRun, Reference, Status};
use resumable_model::variant::Variant;
use resumable_model::Lifecycle;
use resumable_testkit::batch;
use resumable_testkit::{
    approval, at, call, checkpoint_of, contract, first_dispatch, identity, resume,
    resume_at_version, suspend_for_approval, OPERATOR, REQUESTER,
};

/// What holds of an accepted step: of the next run and the effects.
type Holds = Box<dyn Fn(&RefRun, &Effects) -> bool>;

/// What a machine does with the input on which the two part.
enum Expect {
    /// It refuses it with exactly this rejection.
    Refused(Box<Rejection>),
    /// It accepts it, and this holds.
    Accepted(Holds),
}

fn refused(rejection: Rejection) -> Expect {
    Expect::Refused(Box::new(rejection))
}

fn accepted(holds: impl Fn(&RefRun, &Effects) -> bool + 'static) -> Expect {
    Expect::Accepted(Box::new(holds))
}

impl Expect {
    fn holds(&self, verdict: &Result<(RefRun, Effects), Rejection>) -> bool {
        match (self, verdict) {
            (Expect::Refused(expected), Err(got)) => **expected == *got,
            (Expect::Accepted(holds), Ok((run, fx))) => holds(run, fx),
            _ => false,
        }
    }
}

/// One row: the variant, the run and input on which it parts from the reference, and what
/// the reference (`honest`) and the variant (`broken`) do with it.
struct Parting {
    variant: Variant,
    run: RefRun,
    input: Input,
    honest: Expect,
    broken: Expect,
}

fn row(variant: Variant, (run, input): (RefRun, Input), honest: Expect, broken: Expect) -> Parting {
    Parting {
        variant,
        run,
        input,
        honest,
        broken,
    }
}

/// The one check: the reference does what the row says, the variant does what the row says,
/// and the two differ.
fn parts(p: &Parting) {
    let honest = REF.step(&p.run, &p.input);
    let broken = Reference::broken(p.variant).step(&p.run, &p.input);
    assert!(
        p.honest.holds(&honest),
        "{}: the reference gave {honest:?}",
        p.variant
    );
    assert!(
        p.broken.holds(&broken),
        "{}: the variant gave {broken:?}",
        p.variant
    );
    assert_ne!(honest, broken, "{}: the two do not part", p.variant);
}

#[test]
fn each_variant_parts_from_the_reference_on_the_input_it_breaks() {
    let table: Vec<Parting> = [first_rows(), suspends_and_keys(), approvals()]
        .into_iter()
        .chain([recovery(), expiry_and_cancel(), batches()])
        .flatten()
        .collect();
    for v in Variant::ALL {
        let rows = table.iter().filter(|p| p.variant == v).count();
        assert_eq!(rows, 1, "{v} has {rows} rows");
    }
    table.iter().for_each(parts);
}

/// A callback resume whose checkpoint was taken one suspension ago: the first checkpoint
/// matches the new suspension in every field but the revision.
fn stale_callback() -> (RefRun, Input) {
    let (run, fx) = accept(&new_run("r"), at(1, suspend_for_callback("cb", 9)));
    let stale = checkpoint_of(&fx);
    let callback = |payload: &[u8]| Decision::Callback {
        callback: Name::lit("cb"),
        payload: Digest::of(payload),
    };
    let (run, _) = accept(&run, at(1, resume(stale, callback(b"p"))));
    let (run, _) = accept(&run, at(1, suspend_for_callback("cb", 9)));
    (run, at(1, resume(stale, callback(b"q"))))
}

/// An approval of a run's pending call from a checkpoint resealed after `edit`.
fn approved_from(edit: impl FnOnce(&mut Checkpoint)) -> (RefRun, Input) {
    let (c, run, cp) = pending_c();
    let mut other = cp;
    edit(&mut other);
    let other = other.seal();
    (run, at(2, approving(other, &c)))
}

/// An approval from a checkpoint that differs from the run's in `field` of its identity
/// alone.
fn differing_in(field: IdentityField) -> (RefRun, Input) {
    approved_from(|cp| {
        let other = Name::lit("other");
        match field {
            IdentityField::Tenant => cp.identity.tenant = other,
            IdentityField::Session => cp.identity.session = other,
            IdentityField::Run => cp.identity.run = other,
            IdentityField::Definition => cp.identity.definition = other,
        }
    })
}

/// ID-1, RES-2, RES-3: the rows a resume meets first.
fn first_rows() -> Vec<Parting> {
    let mismatch = |field| refused(Rejection::IdentityMismatch { field });
    let any = || accepted(|_, _| true);
    let mut rows: Vec<Parting> = (Variant::ONE_FIELD.into_iter())
        .map(|(v, field)| row(v, differing_in(field), mismatch(field), any()))
        .collect();
    rows.extend([
        row(
            Variant::NoRevisionCheck,
            stale_callback(),
            refused(Rejection::AlreadyResumed {
                from: Revision(1),
                to: Revision(2),
            }),
            accepted(|run, _| run.status == Status::Running),
        ),
        row(
            Variant::IdentityAfterRevision,
            approved_from(|cp| {
                cp.identity = identity("someone-elses");
                cp.revision = Revision(0);
            }),
            mismatch(IdentityField::Run),
            refused(Rejection::StaleRevision {
                current: Revision(1),
                got: Revision(0),
            }),
        ),
        row(
            Variant::NoIdentityCheck,
            differing_in(IdentityField::Tenant),
            mismatch(IdentityField::Tenant),
            any(),
        ),
    ]);
    rows
}

/// A run that recorded the results of `c1` and then `c2`, asked to dispatch `c1` again.
fn c1_again_after_c2() -> (RefRun, Input) {
    let (c1, c2) = (call("c1", "t", "k1"), call("c2", "t", "k2"));
    let run = after_result(c1);
    let (run, _) = accept(&run, at(3, first_dispatch(c2)));
    let (run, _) = accept(&run, at(4, tool_result(&c2, 0, b"ok")));
    (run, at(5, dispatch_stating(c1, spent(&c1))))
}

/// SUS-2, APR-3 at suspend, KEY-1, KEY-2, REC-4, KEY-3.
fn suspends_and_keys() -> Vec<Parting> {
    let c = call("c", "t", "k");
    let self_named = Event::Suspend {
        wait: Wait::Approval {
            call: c,
            requester: REQUESTER,
            prior: Prior::NONE,
        },
        expires_at: Time(50),
        responsible: REQUESTER,
        resource_version: 1,
    };
    let key_sent =
        move |key: Digest| move |_: &RefRun, fx: &Effects| dispatches(fx)[0].tool_key == key;
    vec![
        row(
            Variant::DoubleSuspend,
            (pending(c).0, at(2, suspend_for_callback("cb", 9))),
            refused(Rejection::AlreadySuspended {
                reason: ReasonKind::PendingApproval,
            }),
            accepted(|run, _| reason_of(run) == Some(ReasonKind::ExternalCallback)),
        ),
        row(
            Variant::SelfNamedApprover,
            (new_run("r"), at(1, self_named)),
            refused(Rejection::SelfApproval { party: REQUESTER }),
            accepted(|run, _| reason_of(run) == Some(ReasonKind::PendingApproval)),
        ),
        row(
            Variant::LastCallOnlyKeyCheck,
            c1_again_after_c2(),
            refused(Rejection::CallIdReused {
                call_id: Name::lit("c1"),
            }),
            accepted(|_, fx| dispatches(fx).len() == 1),
        ),
        row(
            Variant::DispatchUnderBareKey,
            (new_run("r"), at(1, first_dispatch(c))),
            accepted(key_sent(tool_key(&identity("r"), &c.key))),
            accepted(key_sent(Digest::of(c.key.as_bytes()))),
        ),
    ]
}

/// A run waiting for approval of `c`, resumed at `t` by the approval `edit` makes of the
/// honest one.
fn approved_as(t: u64, edit: impl FnOnce(&mut Approval)) -> (RefRun, Input) {
    let (c, run, cp) = pending_c();
    let mut a = approval(&cp, &c);
    edit(&mut a);
    (run, at(t, resume(cp, Decision::Approve(a))))
}

/// A run that recorded `c1`'s result and now waits for approval of `c2`, approved.
fn approved_after_a_result() -> (RefRun, Input) {
    let c2 = call("c2", "publish", "k2");
    let run = after_result(call("c1", "charge", "k1"));
    let (run, fx) = accept(&run, at(3, suspend_for_approval(c2, 50)));
    let cp = checkpoint_of(&fx);
    (run, at(4, approving(cp, &c2)))
}

/// APR-1 to APR-4, RES-3 for approvals, REC-4 at resume, AUD-1.
fn approvals() -> Vec<Parting> {
    let c = call("c", "t", "k");
    let runs = |run: &RefRun, fx: &Effects| {
        matches!(run.status, Status::AwaitingResult(_)) && dispatches(fx).len() == 1
    };
    let sends = |id: &'static str| {
        move |_: &RefRun, fx: &Effects| dispatches(fx)[0].call_id == Name::lit(id)
    };
    let (run, cp) = pending(c);
    let deny = at(2, resume(cp, Decision::Deny(approval(&cp, &c))));
    let moved = at(
        2,
        resume_at_version(cp, Decision::Approve(approval(&cp, &c)), 2),
    );
    let recorded_at = |r: u64| {
        move |_: &RefRun, fx: &Effects| fx.audit().map(|a| a.revision) == Some(Revision(r))
    };
    vec![
        row(
            Variant::ApprovalNotBoundToArgs,
            approved_as(2, |a| a.args = Digest::of(b"what the approver saw")),
            refused(Rejection::ApprovalMismatch {
                field: ApprovalField::Args,
            }),
            accepted(move |_, fx| dispatches(fx)[0].args == c.args),
        ),
        row(
            Variant::ApprovalsNeverExpire,
            approved_as(60, |a| a.expires_at = Time(10)),
            refused(Rejection::Expired {
                expires_at: Time(50),
                now: Time(60),
            }),
            accepted(runs),
        ),
        row(
            Variant::SelfApprovalAllowed,
            approved_as(2, |a| a.approver = REQUESTER),
            refused(Rejection::SelfApproval { party: REQUESTER }),
            accepted(runs),
        ),
        row(
            Variant::DenyLeavesRunning,
            (run, deny),
            accepted(|run, _| run.phase().kind() == PhaseKind::Failed),
            accepted(|run, fx| run.status == Status::Running && dispatches(fx).is_empty()),
        ),
        row(
            Variant::ApprovalIgnoresResource,
            (run, moved),
            refused(Rejection::ResourceChanged {
                checkpoint: 1,
                current: 2,
            }),
            accepted(runs),
        ),
        row(
            Variant::RerunStepOnResume,
            approved_after_a_result(),
            accepted(sends("c2")),
            accepted(sends("c1")),
        ),
        row(
            Variant::ResumeRecordFromCheckpoint,
            approved_as(2, |_| {}),
            accepted(recorded_at(2)),
            accepted(recorded_at(1)),
        ),
    ]
}

/// A run whose call of a tool with this contract has an unknown outcome, answered `answer`
/// at t3 with facts at resource version `version`.
fn reconciled(dedupes: bool, fences: bool, answer: QueryAnswer, version: u64) -> (RefRun, Input) {
    let c = Call {
        contract: contract(dedupes, fences),
        ..call("c", "t", "k")
    };
    let (run, cp) = outcome_unknown(c);
    (
        run,
        at(
            3,
            resume_at_version(cp, Decision::Reconcile(answer), version),
        ),
    )
}

/// REC-1 to REC-3, LIVE-2.
fn recovery() -> Vec<Parting> {
    let attempt = |a: Option<u8>| {
        move |_: &RefRun, fx: &Effects| dispatches(fx).first().map(|d| d.attempt) == a
    };
    let not_committed = |dedupes, fences| reconciled(dedupes, fences, QueryAnswer::NotCommitted, 0);
    let committed = QueryAnswer::Committed {
        result: Digest::of(b"ok"),
    };
    let (in_flight, _) = accept(&new_run("r"), at(1, first_dispatch(call("c", "t", "k"))));
    vec![
        row(
            Variant::RetryUnknownWithoutReconcile,
            (in_flight, at(2, Event::Recover)),
            accepted(|run, fx| {
                reason_of(run) == Some(ReasonKind::OutcomeUnknown) && dispatches(fx).is_empty()
            }),
            accepted(|run, _| matches!(run.status, Status::AwaitingResult(f) if f.dispatches == 2)),
        ),
        row(
            Variant::RetryWithoutContract,
            not_committed(false, false),
            accepted(attempt(None)),
            accepted(attempt(Some(0))),
        ),
        row(
            Variant::RetryFreshKeyOnDedupe,
            not_committed(true, false),
            accepted(attempt(Some(0))),
            accepted(attempt(Some(1))),
        ),
        row(
            Variant::RetrySameKeyOnFence,
            not_committed(false, true),
            accepted(attempt(Some(1))),
            accepted(attempt(Some(0))),
        ),
        row(
            Variant::ResourceBlocksAnswers,
            reconciled(true, false, committed, 1),
            accepted(|run, _| run.status == Status::Running),
            refused(Rejection::ResourceChanged {
                checkpoint: 0,
                current: 1,
            }),
        ),
    ]
}

/// A run whose call `c` has an unknown outcome (expiring at t102) and whose cancel waits on
/// it since t3, with the checkpoint that says so.
fn cancelled_unknown() -> (RefRun, Checkpoint) {
    let (run, _) = outcome_unknown(call("c", "t", "k"));
    let (run, fx) = accept(&run, at(3, Event::Cancel { by: OPERATOR }));
    (run, checkpoint_of(&fx))
}

/// The run is suspended until `t`.
fn suspended_until(t: u64) -> impl Fn(&RefRun, &Effects) -> bool {
    move |run, _| matches!(run.status, Status::Suspended(s) if s.expires_at == Time(t))
}

/// The cancel the suspension of `run` carries, if it carries one.
fn waiting_cancel(run: &RefRun) -> Option<Name> {
    match run.status {
        Status::Suspended(s) => s.reason.cancelled_by(),
        _ => None,
    }
}

/// EXP-1, SUS-1, CAN-2, EFF-2, INV-1.
fn expiry_and_cancel() -> Vec<Parting> {
    let (unknown, _) = outcome_unknown(call("c", "t", "k"));
    let (cancelled, cp) = cancelled_unknown();
    let answered = |answer| (cancelled, at(4, resume(cp, Decision::Reconcile(answer))));
    let persisted_cancel = |by| {
        move |_: &RefRun, fx: &Effects| fx.checkpoint().map(|cp| cp.cancel_requested_by) == Some(by)
    };
    let finished = accept(
        &after_result(call("c", "t", "k")),
        at(
            3,
            Event::Complete {
                result: Digest::of(b"done"),
            },
        ),
    )
    .0;
    let late = tool_result(&call("c", "t", "k"), 0, b"late");
    vec![
        row(
            Variant::NoExpiry,
            (pending(call("c", "t", "k")).0, at(51, Event::Expire)),
            accepted(|run, _| run.phase().kind() == PhaseKind::Failed),
            refused(Rejection::NotExpired {
                expires_at: Time(50),
                now: Time(51),
            }),
        ),
        row(
            Variant::EscalationKeepsDeadline,
            (unknown, at(103, Event::Expire)),
            accepted(suspended_until(203)),
            accepted(suspended_until(102)),
        ),
        row(
            Variant::CancelExpiryForgetsEffect,
            (cancelled, at(103, Event::Expire)),
            accepted(|run, _| waiting_cancel(run) == Some(OPERATOR)),
            accepted(|run, _| {
                run.status == Status::Failed(FailCause::Expired { unresolved: None })
            }),
        ),
        row(
            Variant::CancelLostOnEscalation,
            answered(QueryAnswer::Unknown),
            accepted(|run, _| waiting_cancel(run) == Some(OPERATOR)),
            accepted(|run, _| {
                reason_of(run) == Some(ReasonKind::ManualIntervention)
                    && waiting_cancel(run).is_none()
            }),
        ),
        row(
            Variant::CancelEndsUnsettled,
            answered(QueryAnswer::NotCommitted),
            accepted(|run, _| reason_of(run) == Some(ReasonKind::ManualIntervention)),
            accepted(|run, _| run.status == Status::Failed(FailCause::Cancelled { by: OPERATOR })),
        ),
        row(
            Variant::CancelNotCheckpointed,
            (unknown, at(3, Event::Cancel { by: OPERATOR })),
            accepted(persisted_cancel(Some(OPERATOR))),
            accepted(persisted_cancel(None)),
        ),
        row(
            Variant::LateResultRecorded,
            (finished, at(4, late)),
            refused(Rejection::Terminal {
                phase: PhaseKind::Completed,
            }),
            accepted(|run, _| run.revision == Revision(4)),
        ),
    ]
}

/// A batch run suspended at t1 for `calls`, with its checkpoint, decided at t2 by
/// `decisions` (each made from the checkpoint).
fn batch_decided(
    calls: &[Call],
    decisions: impl FnOnce(&Checkpoint) -> Vec<CallDecision>,
) -> (RefRun, Input) {
    let run = REF
        .create(batch::identity(), batch::policy(Allowed::ALL), Time(0))
        .expect("a valid policy");
    let proposals: Vec<Proposal> = calls.iter().map(|c| batch::proposal(*c)).collect();
    let (run, fx) = accept(&run, at(1, batch::suspend_until(&proposals, 50)));
    let cp = checkpoint_of(&fx);
    (run, at(2, batch::decide(&cp, &decisions(&cp))))
}

/// The states of the run's batch, slot by slot.
fn slot_states(run: &RefRun) -> Vec<SlotState> {
    (run.batch.iter())
        .flat_map(|b| b.slots.iter().map(|s| s.state))
        .collect()
}

/// BAT-2, BAT-3, BAT-5.
fn batches() -> Vec<Parting> {
    let (a, b) = (
        batch::call("a", batch::DEDUPES),
        batch::call("b", batch::FENCES),
    );
    let rejected = SlotState::Rejected {
        reason: Digest::of(b"no"),
    };
    let states = move |s: Vec<SlotState>| move |run: &RefRun, _: &Effects| slot_states(run) == s;
    let sent = |ids: &'static [&'static str]| {
        move |_: &RefRun, fx: &Effects| {
            dispatches(fx)
                .iter()
                .map(|d| d.call_id)
                .eq(ids.iter().map(|id| Name::lit(id)))
        }
    };
    let args_sent = move |args: Digest| {
        move |_: &RefRun, fx: &Effects| dispatches(fx).iter().map(|d| d.args).eq([args])
    };
    let decide =
        |c: Call, verdict: Verdict| move |cp: &Checkpoint| vec![batch::decision(cp, &c, verdict)];
    let edited = match batch::edit() {
        Verdict::Edit { args } => args,
        _ => unreachable!("an edit"),
    };
    vec![
        row(
            Variant::BatchDecisionWrongCall,
            batch_decided(&[a, b], decide(a, batch::reject())),
            accepted(states(vec![rejected, SlotState::Awaiting])),
            accepted(states(vec![SlotState::Awaiting, rejected])),
        ),
        row(
            Variant::BatchOneApprovalForAll,
            batch_decided(&[a, b], decide(a, Verdict::Approve)),
            accepted(sent(&[])),
            accepted(sent(&["a", "b"])),
        ),
        row(
            Variant::RejectedDispatched,
            batch_decided(&[a, b], |cp| {
                vec![
                    batch::decision(cp, &a, Verdict::Approve),
                    batch::decision(cp, &b, batch::reject()),
                ]
            }),
            accepted(sent(&["a"])),
            accepted(sent(&["a", "b"])),
        ),
        row(
            Variant::EditIgnored,
            batch_decided(&[a], decide(a, batch::edit())),
            accepted(args_sent(edited)),
            accepted(args_sent(a.args)),
        ),
    ]
}

/// ID-1, one field at a time: a checkpoint that differs from the run in that field alone is
/// refused naming it by every variant but the one that ignores it.
#[test]
fn each_identity_variant_still_compares_every_other_field() {
    for (ignores, field) in Variant::ONE_FIELD {
        let (run, input) = differing_in(field);
        for (v, _) in Variant::ONE_FIELD
            .into_iter()
            .filter(|(v, _)| *v != ignores)
        {
            let refusal = reject_on(&Reference::broken(v), &run, input);
            assert_eq!(refusal, Rejection::IdentityMismatch { field }, "{v}");
        }
    }
}

#[test]
fn variant_names_round_trip_and_each_names_its_targets() {
    let mut names: Vec<_> = Variant::ALL.iter().map(|v| v.name()).collect();
    for v in Variant::ALL {
        assert_eq!(Variant::from_name(v.name()), Some(v));
        assert!(!v.targets().is_empty() && !v.description().is_empty());
        assert_eq!(Reference::broken(v).name(), v.name());
    }
    assert!(Variant::BATCH.iter().all(|v| Variant::ALL.contains(v)));
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Variant::ALL.len());
    assert_eq!(Variant::from_name("no-such-variant"), None);
    assert_eq!(REF.name(), "reference");
}
