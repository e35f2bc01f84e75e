//! Each checker detects the violation it is named for and accepts the honest state: honest
//! runs and transitions come from stepping the real kernel; each broken one changes exactly
//! one thing, at the boundary of the comparison that should catch it.

extern crate std;

use super::*;
use crate::batch::{
    Allowed, Batch, CallDecision, Decided, Decisions, List, Proposal, Proposals, Slot, Verdict,
};
use crate::calls::Prior;
use crate::checkpoint::Checkpoint;
use crate::effect::{AuditRecord, Command, Dispatch, Effects};
use crate::ids::{Digest, IdempotencyKey, Name, Revision, Time};
use crate::input::{Approval, Decision, Event, Facts, Resume, Wait};
use crate::run::{Call, FailCause, Identity, PhaseKind, Policy, ResumeReceipt, ToolContract};
use crate::step::step;
use std::string::ToString;

const AGENT: Name = Name::lit("agent");
const ALICE: Name = Name::lit("alice");
const VERSION: u64 = 7;

fn identity() -> Identity {
    Identity {
        tenant: Name::lit("acme"),
        session: Name::lit("s-1"),
        run: Name::lit("run-1"),
        definition: Name::lit("agent@1"),
    }
}

fn policy() -> Policy {
    Policy {
        operator: Name::lit("ops"),
        reconcile_window: 10,
        allowed: Allowed::ALL,
    }
}

fn new_run() -> Run {
    Run::new(identity(), policy(), Time(0)).unwrap()
}

fn call(id: &str) -> Call {
    Call {
        call_id: Name::new(id).unwrap(),
        tool: Name::lit("tool"),
        args: Digest::of(id.as_bytes()),
        key: IdempotencyKey::new(id).unwrap(),
        contract: ToolContract {
            dedupes: true,
            query_fences: false,
            max_attempts: 3,
            allowed: Allowed::TOOL_DEFAULT,
        },
    }
}

fn input(t: u64, event: Event) -> Input {
    Input { at: Time(t), event }
}

fn go(run: &Run, t: u64, event: Event) -> Transition {
    step(run, &input(t, event)).unwrap()
}

fn suspend_approval() -> Event {
    Event::Suspend {
        wait: Wait::Approval {
            call: call("c1"),
            requester: AGENT,
            prior: Prior::NONE,
        },
        expires_at: Time(50),
        responsible: ALICE,
        resource_version: VERSION,
    }
}

fn dispatch_event() -> Event {
    Event::Dispatch {
        call: call("c1"),
        prior: Prior::NONE,
        resource_version: None,
    }
}

fn facts() -> Facts {
    Facts {
        resource_version: VERSION,
        permitted: true,
        within_budget: true,
    }
}

fn approval(cp: &Checkpoint, c: &Call) -> Approval {
    Approval {
        call_id: c.call_id,
        args: c.args,
        requester: AGENT,
        approver: ALICE,
        revision: cp.revision,
        expires_at: Time(40),
    }
}

/// A run suspended for approval of `c1`, revision 1, at t1.
fn suspended() -> Run {
    go(&new_run(), 1, suspend_approval()).next
}

/// A run with `c1` in flight: dispatched once, attempt 0.
fn dispatched() -> Run {
    go(&new_run(), 1, dispatch_event()).next
}

/// A run resumed by an approval: it carries its resume receipt.
fn resumed() -> Run {
    let run = suspended();
    let cp = *go(&new_run(), 1, suspend_approval())
        .effects
        .checkpoint()
        .unwrap();
    let event = Event::Resume(Resume {
        checkpoint: cp,
        decision: Decision::Approve(approval(&cp, &call("c1"))),
        facts: facts(),
    });
    go(&run, 2, event).next
}

fn proposal(c: Call) -> Proposal {
    Proposal {
        call: c,
        requester: AGENT,
        prior: Prior::NONE,
    }
}

fn suspend_batch() -> Event {
    Event::Suspend {
        wait: Wait::Batch {
            calls: Proposals::of(&[proposal(call("a")), proposal(call("b"))]).unwrap(),
        },
        expires_at: Time(50),
        responsible: ALICE,
        resource_version: VERSION,
    }
}

/// A run suspended for the batch of `a` and `b`, and the transition that suspended it.
fn batch_suspend() -> Transition {
    go(&new_run(), 1, suspend_batch())
}

/// The batch resumed with these verdicts on `a` and `b`: the run before and the transition.
fn batch_resume(va: Verdict, vb: Verdict) -> (Run, Input, Transition) {
    let t = batch_suspend();
    let cp = *t.effects.checkpoint().unwrap();
    let decision = |c: Call, verdict| CallDecision {
        approval: approval(&cp, &c),
        verdict,
    };
    let decisions = Decisions::of(&[decision(call("a"), va), decision(call("b"), vb)]).unwrap();
    let inp = input(
        2,
        Event::Resume(Resume {
            checkpoint: cp,
            decision: Decision::Batch { decisions },
            facts: facts(),
        }),
    );
    let next = step(&t.next, &inp).unwrap();
    (t.next, inp, next)
}

/// Both calls of the batch in flight, the run running idle.
fn batch_in_flight() -> Run {
    batch_resume(Verdict::Approve, Verdict::Approve).2.next
}

/// After a crash with the batch in flight: `a` held by the phase (outcome unknown), `b`
/// unknown, waiting its turn.
fn batch_held() -> Run {
    go(&batch_in_flight(), 3, Event::Recover).next
}

fn batch_mut(run: &mut Run) -> &mut Batch<Decided> {
    &mut run.batch.as_mut().unwrap().calls
}

fn slot_mut(run: &mut Run, i: usize) -> &mut Slot<Decided> {
    batch_mut(run).slots.iter_mut().nth(i).unwrap()
}

fn suspension_mut(run: &mut Run) -> &mut crate::run::Suspension {
    match &mut run.phase {
        Phase::Suspended(s) => s,
        _ => panic!("not suspended"),
    }
}

fn in_flight_mut(run: &mut Run) -> &mut InFlight {
    match &mut run.phase {
        Phase::Running { in_flight: Some(f) } => f,
        Phase::Suspended(crate::run::Suspension {
            reason:
                Reason::OutcomeUnknown { in_flight: f, .. }
                | Reason::ManualIntervention {
                    unresolved: Some(f),
                    ..
                },
            ..
        }) => f,
        _ => panic!("nothing in flight"),
    }
}

fn failed(run: &Run) -> Run {
    Run {
        phase: Phase::Failed(FailCause::Cancelled { by: ALICE }),
        ..*run
    }
}

#[track_caller]
fn violates(result: Result<(), Violation>, id: SpecId) {
    match result {
        Err(v) => assert_eq!(v.id, id, "{v}"),
        Ok(()) => panic!("expected a violation of {id}"),
    }
}

/// Asserts that `check` accepts `honest`, and reports `id` once `edit` has broken it.
#[track_caller]
fn breaks(
    check: fn(&Run) -> Result<(), Violation>,
    honest: Run,
    id: SpecId,
    edit: impl FnOnce(&mut Run),
) {
    assert_eq!(check(&honest), Ok(()));
    let mut broken = honest;
    edit(&mut broken);
    violates(check(&broken), id);
}

// -------------------------------------------------------------------------------------------
// Violation, require.
// -------------------------------------------------------------------------------------------

#[test]
fn violation_display() {
    let v = Violation {
        id: SpecId::Sus1,
        what: "suspension begins in the future",
    };
    assert_eq!(
        v.to_string(),
        "SUS-1 violated: suspension begins in the future"
    );
}

#[test]
fn require_passes_true_and_fails_false() {
    assert_eq!(require(true, SpecId::Key1, "x"), Ok(()));
    assert_eq!(
        require(false, SpecId::Key1, "x"),
        Err(Violation {
            id: SpecId::Key1,
            what: "x"
        })
    );
}

// -------------------------------------------------------------------------------------------
// State invariants.
// -------------------------------------------------------------------------------------------

#[test]
fn check_run_accepts_honest_runs_and_finds_each_violation() {
    for run in [
        new_run(),
        suspended(),
        dispatched(),
        resumed(),
        batch_suspend().next,
        batch_in_flight(),
        batch_held(),
    ] {
        assert_eq!(check_run(&run), Ok(()));
    }
    let mut run = suspended();
    suspension_mut(&mut run).since = Time(2);
    violates(check_run(&run), SpecId::Sus1);
    let mut run = suspended();
    suspension_mut(&mut run).responsible = AGENT;
    violates(check_run(&run), SpecId::Apr3);
    let mut run = dispatched();
    in_flight_mut(&mut run).dispatches = 0;
    violates(check_run(&run), SpecId::Rec3);
    let mut run = resumed();
    run.last_resume.as_mut().unwrap().to = Revision(3);
    violates(check_run(&run), SpecId::Res2);
    let mut run = batch_suspend().next;
    batch_mut(&mut run).slots = List::new();
    violates(check_run(&run), SpecId::Bat1);
}

#[test]
fn sus_1_expiry_not_before_start() {
    let mut run = suspended();
    assert_eq!(sus_1(&run), Ok(()));
    let s = suspension_mut(&mut run);
    s.expires_at = s.since;
    assert_eq!(sus_1(&run), Ok(()));
    let s = suspension_mut(&mut run);
    s.expires_at = Time(s.since.0 - 1);
    violates(sus_1(&run), SpecId::Sus1);
}

#[test]
fn sus_1_expiry_can_be_passed() {
    let mut run = suspended();
    suspension_mut(&mut run).expires_at = Time::LATEST_EXPIRY;
    assert_eq!(sus_1(&run), Ok(()));
    suspension_mut(&mut run).expires_at = Time::END;
    violates(sus_1(&run), SpecId::Sus1);
}

#[test]
fn sus_1_begins_no_later_than_last_input() {
    let run = suspended();
    assert_eq!(run.suspension().unwrap().since, run.updated_at);
    breaks(sus_1, run, SpecId::Sus1, |run| {
        suspension_mut(run).since = Time(run.updated_at.0 + 1)
    });
    assert_eq!(sus_1(&new_run()), Ok(()));
}

#[test]
fn apr_3_requester_is_not_approver() {
    breaks(apr_3, suspended(), SpecId::Apr3, |run| {
        suspension_mut(run).responsible = AGENT
    });
    // Other suspensions have no requester: the check does not apply.
    let mut run = batch_suspend().next;
    suspension_mut(&mut run).responsible = AGENT;
    assert_eq!(apr_3(&run), Ok(()));
    assert_eq!(apr_3(&new_run()), Ok(()));
}

#[test]
fn bound_key_digest_and_attempts() {
    let f = *dispatched().in_flight().unwrap();
    let mut c = f.call;
    assert_eq!(bound(&c), Ok(()));
    c.call.args = Digest::of(b"other");
    violates(bound(&c), SpecId::Key1);
    let mut c = f.call;
    c.call.contract.max_attempts = 1;
    assert_eq!(bound(&c), Ok(()));
    c.call.contract.max_attempts = 0;
    violates(bound(&c), SpecId::Key1);
}

#[test]
fn in_flight_dispatches_within_budget() {
    let honest = *dispatched().in_flight().unwrap();
    assert_eq!((honest.attempt, honest.dispatches), (0, 1));
    assert_eq!(in_flight(&honest), Ok(()));
    let max = honest.call.call.contract.max_attempts;
    let with = |attempt, dispatches| InFlight {
        attempt,
        dispatches,
        ..honest
    };
    assert_eq!(in_flight(&with(0, max)), Ok(()));
    violates(in_flight(&with(0, max + 1)), SpecId::Rec3);
    violates(in_flight(&with(0, 0)), SpecId::Rec3);
    assert_eq!(in_flight(&with(1, 2)), Ok(()));
    violates(in_flight(&with(2, 2)), SpecId::Rec3);
    violates(in_flight(&with(3, 2)), SpecId::Rec3);
    let mut unbound = honest;
    unbound.call.key_digest = Digest::of(b"other");
    violates(in_flight(&unbound), SpecId::Key1);
}

#[test]
fn key_1_running_in_flight() {
    breaks(key_1, dispatched(), SpecId::Rec3, |run| {
        in_flight_mut(run).dispatches = 0
    });
    assert_eq!(key_1(&new_run()), Ok(()));
}

#[test]
fn key_1_pending_approval() {
    let mut run = suspended();
    assert_eq!(key_1(&run), Ok(()));
    match &mut suspension_mut(&mut run).reason {
        Reason::PendingApproval { call, .. } => call.key_digest = Digest::of(b"other"),
        _ => unreachable!(),
    }
    violates(key_1(&run), SpecId::Key1);
}

#[test]
fn key_1_outcome_unknown_and_manual_intervention() {
    let mut run = go(&dispatched(), 2, Event::Recover).next;
    assert!(matches!(
        run.suspension().unwrap().reason,
        Reason::OutcomeUnknown { .. }
    ));
    assert_eq!(key_1(&run), Ok(()));
    let f = *in_flight_mut(&mut run);
    in_flight_mut(&mut run).attempt = 1;
    violates(key_1(&run), SpecId::Rec3);

    let mut run = Run {
        phase: Phase::Suspended(crate::run::Suspension {
            reason: Reason::ManualIntervention {
                unresolved: Some(f),
                cancelled_by: None,
            },
            ..*run.suspension().unwrap()
        }),
        ..run
    };
    assert_eq!(key_1(&run), Ok(()));
    in_flight_mut(&mut run).attempt = 1;
    violates(key_1(&run), SpecId::Rec3);
}

#[test]
fn key_1_ignores_suspensions_without_a_call() {
    let run = batch_suspend().next;
    assert_eq!(key_1(&run), Ok(()));
}

#[test]
fn res_2_receipt_points_into_the_past() {
    let mut run = resumed();
    let rc = *run.last_resume().unwrap();
    assert!(rc.from < rc.to);
    assert_eq!(rc.to, run.revision());
    assert_eq!(res_2(&run), Ok(()));
    let set = |run: &mut Run, from, to| {
        *run.last_resume.as_mut().unwrap() = ResumeReceipt {
            from: Revision(from),
            to: Revision(to),
            ..rc
        };
    };
    let r = run.revision().0;
    set(&mut run, r - 1, r + 1);
    violates(res_2(&run), SpecId::Res2);
    set(&mut run, r, r);
    violates(res_2(&run), SpecId::Res2);
    set(&mut run, r - 1, r - 1);
    violates(res_2(&run), SpecId::Res2);
    set(&mut run, r - 2, r - 1);
    assert_eq!(res_2(&run), Ok(()));
    assert_eq!(res_2(&new_run()), Ok(()));
}

#[test]
fn bat_1_suspended_for_a_batch_it_does_not_hold() {
    let honest = batch_suspend().next;
    breaks(bat_1, honest, SpecId::Bat1, |run| run.batch = None);
    assert_eq!(bat_1(&new_run()), Ok(()));
}

#[test]
fn bat_1_open_exactly_while_suspended_for_it() {
    // Open, not suspended.
    let mut run = batch_suspend().next;
    run.phase = Phase::Running { in_flight: None };
    violates(bat_1(&run), SpecId::Bat1);
    // Closed, still suspended for it.
    let mut run = batch_suspend().next;
    batch_mut(&mut run).closed = Some(run.revision);
    violates(bat_1(&run), SpecId::Bat1);
}

#[test]
fn bat_1_empty_batch() {
    breaks(bat_1, batch_in_flight(), SpecId::Bat1, |run| {
        batch_mut(run).slots = List::new()
    });
}

#[test]
fn bat_1_slot_key_bound() {
    let mut run = batch_in_flight();
    slot_mut(&mut run, 1).call.key_digest = Digest::of(b"other");
    violates(bat_1(&run), SpecId::Key1);
}

#[test]
fn bat_1_in_flight_only_while_running_idle() {
    let honest = batch_in_flight();
    assert!(matches!(
        honest.batch().unwrap().slots.get(0).unwrap().state,
        SlotState::InFlight { .. }
    ));
    assert_eq!(bat_1(&honest), Ok(()));
    // Something else in flight.
    let f = *dispatched().in_flight().unwrap();
    let run = Run {
        phase: Phase::Running { in_flight: Some(f) },
        ..honest
    };
    violates(bat_1(&run), SpecId::Bat4);
    // Suspended.
    let mut run = batch_held();
    run.batch = honest.batch;
    violates(bat_1(&run), SpecId::Bat4);
}

#[test]
fn bat_1_held_only_while_the_phase_holds_it() {
    // Held by an outcome-unknown suspension.
    let held = batch_held();
    assert_eq!(
        held.batch().unwrap().slots.get(0).unwrap().state,
        SlotState::Held
    );
    assert_eq!(bat_1(&held), Ok(()));
    // Held by a running dispatch of it.
    let mut run = held;
    let f = *in_flight_mut(&mut run);
    let running = Run {
        phase: Phase::Running { in_flight: Some(f) },
        ..held
    };
    assert_eq!(bat_1(&running), Ok(()));
    // Held by a terminal run.
    assert_eq!(bat_1(&failed(&held)), Ok(()));
    // The phase holds another call, or none.
    let mut run = held;
    in_flight_mut(&mut run).call.call.call_id = Name::lit("other");
    violates(bat_1(&run), SpecId::Bat4);
    let mut run = running;
    in_flight_mut(&mut run).call.call.call_id = Name::lit("other");
    violates(bat_1(&run), SpecId::Bat4);
    let run = Run {
        phase: Phase::Running { in_flight: None },
        ..held
    };
    violates(bat_1(&run), SpecId::Bat4);
}

#[test]
fn bat_1_awaiting_only_on_an_open_batch() {
    let open = batch_suspend().next;
    assert_eq!(
        open.batch().unwrap().slots.get(0).unwrap().state,
        SlotState::Awaiting
    );
    assert_eq!(bat_1(&open), Ok(()));
    let mut closed = open;
    batch_mut(&mut closed).closed = Some(closed.revision);
    closed.phase = Phase::Running { in_flight: None };
    violates(bat_1(&closed), SpecId::Bat1);
    // A batch left undecided ends the run.
    assert_eq!(bat_1(&failed(&closed)), Ok(()));
}

// -------------------------------------------------------------------------------------------
// Step invariants.
// -------------------------------------------------------------------------------------------

/// The transition of a single dispatch from a new run.
fn dispatch_step() -> (Run, Input, Transition) {
    let before = new_run();
    let inp = input(1, dispatch_event());
    let t = step(&before, &inp).unwrap();
    (before, inp, t)
}

/// The transition of a suspension for approval from a new run.
fn suspend_step() -> (Run, Input, Transition) {
    let before = new_run();
    let inp = input(1, suspend_approval());
    let t = step(&before, &inp).unwrap();
    (before, inp, t)
}

/// `t` with its effects rebuilt from these parts.
fn with_effects(
    t: &Transition,
    audit: AuditRecord,
    checkpoint: Option<Checkpoint>,
    commands: &[Command],
) -> Transition {
    Transition {
        next: t.next,
        effects: Effects::of_batch(
            audit,
            t.effects.histories().copied(),
            checkpoint,
            commands.iter().copied(),
        ),
    }
}

fn audit(t: &Transition) -> AuditRecord {
    *t.effects.audit().unwrap()
}

fn with_dispatches(t: &Transition, ds: &[Dispatch]) -> Transition {
    let commands: std::vec::Vec<Command> = ds.iter().map(|d| Command::Dispatch(*d)).collect();
    with_effects(t, audit(t), t.effects.checkpoint().copied(), &commands)
}

#[test]
fn check_step_accepts_honest_steps_and_finds_violations() {
    for (before, inp, t) in [
        dispatch_step(),
        suspend_step(),
        batch_resume(Verdict::Approve, Verdict::Approve),
    ] {
        assert_eq!(check_step(&before, &inp, &t), Ok(()));
    }
    let (before, inp, t) = dispatch_step();
    violates(check_step(&failed(&before), &inp, &t), SpecId::Inv1);
}

#[test]
fn inv_1_nothing_from_a_terminal_phase() {
    assert_eq!(inv_1(&new_run()), Ok(()));
    assert_eq!(inv_1(&suspended()), Ok(()));
    violates(inv_1(&failed(&new_run())), SpecId::Inv1);
    let completed = Run {
        phase: Phase::Completed {
            result: Digest::of(b"done"),
        },
        ..new_run()
    };
    violates(inv_1(&completed), SpecId::Inv1);
}

#[test]
fn rev_1_advances_by_exactly_one() {
    let (before, _, mut t) = dispatch_step();
    assert_eq!(rev_1(&before, &t), Ok(()));
    t.next.revision = Revision(2);
    violates(rev_1(&before, &t), SpecId::Rev1);
    t.next.revision = before.revision;
    violates(rev_1(&before, &t), SpecId::Rev1);
    // No room for one more.
    let at_end = Run {
        revision: Revision(u64::MAX),
        ..before
    };
    t.next.revision = Revision(u64::MAX);
    violates(rev_1(&at_end, &t), SpecId::Rev1);
}

#[test]
fn aud_1_one_audit_record_of_the_new_state() {
    let (_, _, t) = suspend_step();
    assert_eq!(aud_1(&t), Ok(()));
    let cp = t.effects.checkpoint().copied();
    let wrong_revision = AuditRecord {
        revision: Revision(2),
        ..audit(&t)
    };
    violates(
        aud_1(&with_effects(&t, wrong_revision, cp, &[])),
        SpecId::Aud1,
    );
    let wrong_phase = AuditRecord {
        phase: PhaseKind::Running,
        ..audit(&t)
    };
    violates(aud_1(&with_effects(&t, wrong_phase, cp, &[])), SpecId::Aud1);
    assert_eq!(aud_1(&with_effects(&t, audit(&t), cp, &[])), Ok(()));
}

#[test]
fn clk_1_time_is_the_inputs_and_never_moves_back() {
    let (before, inp, t) = dispatch_step();
    assert_eq!(clk_1(&before, &inp, &t), Ok(()));
    // The same instant as the last input.
    let later = Run {
        updated_at: inp.at,
        ..before
    };
    assert_eq!(clk_1(&later, &inp, &t), Ok(()));
    // Backwards, though the run takes the input's time.
    let ahead = Run {
        updated_at: Time(inp.at.0 + 1),
        ..before
    };
    violates(clk_1(&ahead, &inp, &t), SpecId::Clk1);
    // Not the input's time, though it moves forward.
    let mut wrong = t;
    wrong.next.updated_at = Time(inp.at.0 + 1);
    violates(clk_1(&before, &inp, &wrong), SpecId::Clk1);
}

#[test]
fn id_1_identity_and_policy_fixed() {
    let (before, _, t) = dispatch_step();
    assert_eq!(id_1(&before, &t), Ok(()));
    let mut other = t;
    other.next.identity.run = Name::lit("run-2");
    violates(id_1(&before, &other), SpecId::Id1);
    let mut other = t;
    other.next.policy.reconcile_window += 1;
    violates(id_1(&before, &other), SpecId::Id1);
}

#[test]
fn wal_1_single_dispatch_matches_its_intent() {
    let (_, _, t) = dispatch_step();
    assert_eq!(wal_1(&t), Ok(()));
    let d = *t.effects.dispatch().unwrap();
    assert_eq!(wal_1(&with_dispatches(&t, &[d])), Ok(()));
    let other_key = IdempotencyKey::lit("other");
    for broken in [
        Dispatch {
            call_id: Name::lit("other"),
            ..d
        },
        Dispatch {
            key: other_key,
            tool_key: tool_key(t.next.identity(), &other_key),
            ..d
        },
        Dispatch {
            tool_key: Digest::of(b"other"),
            ..d
        },
        Dispatch { attempt: 1, ..d },
    ] {
        violates(wal_1(&with_dispatches(&t, &[broken])), SpecId::Wal1);
    }
    // Two dispatches, outside a batch, though the first matches the intent.
    violates(wal_1(&with_dispatches(&t, &[d, d])), SpecId::Wal1);
    // A dispatch with no intent recorded.
    let mut idle = t;
    idle.next.phase = Phase::Running { in_flight: None };
    violates(wal_1(&idle), SpecId::Wal1);
    // No dispatch at all.
    let (_, _, s) = suspend_step();
    assert_eq!(wal_1(&s), Ok(()));
}

#[test]
fn wal_1_batch_dispatches_match_their_slots() {
    let (_, _, t) = batch_resume(Verdict::Approve, Verdict::Approve);
    assert_eq!(t.effects.dispatches().count(), 2);
    assert_eq!(wal_1(&t), Ok(()));
    let a = *t.effects.dispatches().next().unwrap();
    let b = *t.effects.dispatches().nth(1).unwrap();
    let other_key = IdempotencyKey::lit("other");
    for broken in [
        Dispatch {
            call_id: Name::lit("other"),
            ..b
        },
        Dispatch { attempt: 1, ..b },
        Dispatch {
            key: other_key,
            tool_key: tool_key(t.next.identity(), &other_key),
            ..b
        },
        Dispatch {
            args: Digest::of(b"other"),
            ..b
        },
        Dispatch {
            tool_key: Digest::of(b"other"),
            ..b
        },
    ] {
        violates(wal_1(&with_dispatches(&t, &[a, broken])), SpecId::Wal1);
    }
    // A batch of one dispatch: the other call was rejected.
    let reject = Verdict::Reject {
        reason: Digest::of(b"no"),
    };
    let (_, _, one) = batch_resume(Verdict::Approve, reject);
    assert_eq!(one.effects.dispatches().count(), 1);
    assert_eq!(wal_1(&one), Ok(()));
    let a = *one.effects.dispatch().unwrap();
    violates(
        wal_1(&with_dispatches(&one, &[Dispatch { attempt: 1, ..a }])),
        SpecId::Wal1,
    );
}

#[test]
fn ckp_1_sealed_checkpoint_exactly_with_a_suspension() {
    let (_, _, t) = suspend_step();
    assert_eq!(ckp_1(&t), Ok(()));
    let cp = *t.effects.checkpoint().unwrap();
    let a = audit(&t);
    // Unsealed.
    let unsealed = Checkpoint {
        responsible: AGENT,
        ..cp
    };
    violates(
        ckp_1(&with_effects(&t, a, Some(unsealed), &[])),
        SpecId::Ckp1,
    );
    // Sealed at the wrong revision.
    let stale = Checkpoint {
        revision: Revision(0),
        ..cp
    }
    .seal();
    violates(ckp_1(&with_effects(&t, a, Some(stale), &[])), SpecId::Ckp1);
    // A suspension without one.
    violates(ckp_1(&with_effects(&t, a, None, &[])), SpecId::Ckp1);
    // One without a suspension.
    let (_, _, d) = dispatch_step();
    assert_eq!(ckp_1(&d), Ok(()));
    let cmds: std::vec::Vec<Command> = d.effects.commands().copied().collect();
    violates(
        ckp_1(&with_effects(&d, audit(&d), Some(cp), &cmds)),
        SpecId::Ckp1,
    );
}

#[test]
fn ckp_1_batch_checkpoint_is_the_one_it_opened_with() {
    let mut t = batch_suspend();
    assert_eq!(ckp_1(&t), Ok(()));
    // A later transition within the batch's suspension keeps its opening checkpoint.
    t.next.revision = Revision(t.next.revision.0 + 1);
    assert_eq!(ckp_1(&t), Ok(()));
    batch_mut(&mut t.next).opened = t.next.revision;
    violates(ckp_1(&t), SpecId::Ckp1);
}
