//! People and outside systems, on the in-memory store: a run found by its name, a decision
//! bound to the checkpoint its party was handed, a request made of a run that does not wait
//! for it refused as misuse before it reaches the inbox, the answer waited for, and the
//! watching approver deciding once per suspension.

use resumable_kernel::{Decision, Digest, Name, Resolution};
use resumable_runtime::driver::{create_run, Config, Driver};
use resumable_runtime::parties::{self, watch, PartyError};
use resumable_runtime::program::{Program, Timing, APPROVER, PAYMENT_SETTLED, REQUESTER};
use resumable_runtime::store::memory::MemoryStore;
use resumable_runtime::store::{status_of, Answer, Request, Row, RunKey, Status, Store};
use resumable_runtime::tool::MemoryTools;
use std::time::Duration;

#[path = "support/approver.rs"]
mod approver;

use approver::{approve, approver_key};

/// The watching approver, seeded with 1, approving everything once within ten minutes,
/// looking without a pause, unsealed.
fn approver_watch() -> watch::Watch {
    watch::Watch {
        name: APPROVER.to_string(),
        seed: 1,
        deny_percent: 0,
        duplicate_percent: 0,
        callbacks: false,
        valid_ms: 600_000,
        poll: Duration::ZERO,
        key: None,
        callback_as: None,
    }
}

/// The one worker of these tests.
fn config() -> Config {
    approver::config("worker-1")
}

/// A store holding one run of `program` named `name`, driven until it waits on a party.
fn waiting(store: &MemoryStore, program: Program, name: &str) -> RunKey {
    let mut d = Driver::new(store.clone(), MemoryTools::default(), config());
    let key = create_run(d.store(), program, name, 0, &Timing::default(), None)
        .unwrap()
        .unwrap();
    while d.turn(&key, false).unwrap() {}
    key
}

fn row(store: &mut MemoryStore, key: &RunKey) -> Row {
    store.load(key).unwrap().unwrap()
}

fn misuse(result: Result<Request, PartyError>) -> String {
    match result {
        Err(PartyError::Misuse(why)) => why,
        other => panic!("not a misuse: {other:?}"),
    }
}

#[test]
fn a_run_is_found_by_its_name_if_only_one_run_has_it_and_by_its_full_key_always() {
    let mut store = MemoryStore::new();
    let seed = waiting(&store, Program::Seed, "run-1");
    assert_eq!(parties::resolve(&mut store, "run-1").unwrap().key, seed);
    // Another tenant's run of the same name makes the short name ambiguous.
    let order = waiting(&store, Program::Order, "run-1");
    let err = parties::resolve(&mut store, "run-1")
        .unwrap_err()
        .to_string();
    assert!(err.contains("several runs are named run-1"), "{err}");
    assert_eq!(parties::resolve(&mut store, &order.0).unwrap().key, order);
    let err = parties::resolve(&mut store, "run-2")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no run named run-2"), "{err}");
    let err = parties::resolve(&mut store, "tenant-a/session-1/run-2")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no run tenant-a/session-1/run-2"), "{err}");
}

#[test]
fn an_approval_binds_the_call_arguments_requester_and_revision_of_the_checkpoint_handed() {
    let mut store = MemoryStore::new();
    let key = waiting(&store, Program::Seed, "run-1");
    let row = row(&mut store, &key);
    let handed = row.checkpoint.unwrap();
    for approve in [true, false] {
        let Request::Resume {
            checkpoint,
            decision,
        } = parties::approval(&row, None, APPROVER, approve, 60_000).unwrap()
        else {
            panic!("an approval is a resume");
        };
        assert_eq!(checkpoint, handed);
        let (Decision::Approve(a) | Decision::Deny(a)) = decision else {
            panic!("{decision:?}");
        };
        assert_eq!(matches!(decision, Decision::Approve(_)), approve);
        let call = handed.pending.unwrap();
        assert_eq!((a.call_id, a.args), (call.call_id, call.args));
        assert_eq!(a.requester, Name::lit(REQUESTER));
        assert_eq!(a.approver, Name::lit(APPROVER));
        assert_eq!(a.revision, handed.revision);
    }
}

#[test]
fn a_decision_of_a_run_that_does_not_wait_for_it_is_misuse_and_never_reaches_the_inbox() {
    let mut store = MemoryStore::new();
    let order = waiting(&store, Program::Order, "order-1");
    let waits_for_payment = row(&mut store, &order);
    assert_eq!(status_of(&waits_for_payment.run), Status::Callback);
    let why = misuse(parties::approval(
        &waits_for_payment,
        None,
        APPROVER,
        true,
        1,
    ));
    assert!(
        why.contains("is callback, not waiting for approval"),
        "{why}"
    );
    let why = misuse(parties::intervene(
        &waits_for_payment,
        "ops",
        Resolution::Abandon,
    ));
    assert!(why.contains("not waiting for person"), "{why}");
    let seed = waiting(&store, Program::Seed, "run-1");
    let waits_for_approval = row(&mut store, &seed);
    let why = misuse(parties::callback(&waits_for_approval, "settled"));
    assert!(why.contains("not waiting for callback"), "{why}");
    assert!(store.inbox(&order, false).unwrap().is_empty());
    assert!(store.inbox(&seed, false).unwrap().is_empty());
}

#[test]
fn a_callback_names_the_callback_the_run_waits_for_with_its_payload() {
    let mut store = MemoryStore::new();
    let key = waiting(&store, Program::Order, "order-1");
    let row = row(&mut store, &key);
    let Request::Resume { decision, .. } = parties::callback(&row, "settled").unwrap() else {
        panic!("a callback is a resume");
    };
    assert_eq!(
        decision,
        Decision::Callback {
            callback: Name::lit(PAYMENT_SETTLED),
            payload: Digest::of(b"settled"),
        }
    );
}

#[test]
fn a_party_whose_name_the_kernel_cannot_hold_is_refused_as_misuse() {
    let mut store = MemoryStore::new();
    let key = waiting(&store, Program::Seed, "run-1");
    let row = row(&mut store, &key);
    let long = "x".repeat(300);
    let why = misuse(parties::approval(&row, None, &long, true, 1));
    assert!(why.contains("party"), "{why}");
    assert!(matches!(parties::cancel(&long), Err(PartyError::Misuse(_))));
}

#[test]
fn waiting_for_an_answer_gives_the_kernels_answer_once_a_worker_fed_it_or_nothing_in_time() {
    let mut store = MemoryStore::new();
    let key = waiting(&store, Program::Seed, "run-1");
    let row = row(&mut store, &key);
    let request = parties::approval(&row, None, APPROVER, true, 600_000).unwrap();
    let id = approve(&mut store, &key, &request);
    let none = parties::wait_answer(&mut store, &key, id, Duration::ZERO).unwrap();
    assert_eq!(none, None, "no worker has fed it");
    let mut d = Driver::new(store.clone(), MemoryTools::default(), config());
    assert!(d.turn(&key, true).unwrap());
    let answered = parties::wait_answer(&mut store, &key, id, Duration::ZERO)
        .unwrap()
        .unwrap();
    assert!(matches!(answered.answer, Answer::Accepted(_)));
    assert_eq!(answered.seq, 2, "the record after the suspension's");
}

#[test]
fn a_runs_description_says_where_it_is_and_who_it_waits_on() {
    let mut store = MemoryStore::new();
    let key = waiting(&store, Program::Seed, "run-1");
    let line = parties::describe(&row(&mut store, &key), 0);
    assert!(
        line.starts_with("tenant-a/session-1/run-1 [seed] revision 1: suspended")
            && line.contains("waits for approver to approve call-1 (publish:demo) asked by agent"),
        "{line}"
    );
    let order = waiting(&store, Program::Order, "order-1");
    let line = parties::describe(&row(&mut store, &order), 0);
    assert!(
        line.contains("waits for callback payment-settled from payments"),
        "{line}"
    );
}

#[test]
fn the_watching_approver_decides_once_and_sends_duplicates_and_callbacks_when_told() {
    let told = |duplicate_percent, callbacks| watch::Watch {
        duplicate_percent,
        callbacks,
        ..approver_watch()
    };
    // Looks at an unchanged store: one decision (and its duplicate, if told), and the
    // callback only when told to play the payment system.
    for (case, program, name, w, looks, expected, from) in [
        (
            "a decision",
            Program::Seed,
            "run-1",
            told(0, false),
            3,
            1,
            Some(APPROVER),
        ),
        (
            "a duplicate",
            Program::Seed,
            "run-1",
            told(100, false),
            3,
            2,
            Some(APPROVER),
        ),
        (
            "no callback",
            Program::Order,
            "order-1",
            told(0, false),
            2,
            0,
            None,
        ),
        (
            "a callback",
            Program::Order,
            "order-1",
            told(0, true),
            2,
            1,
            None,
        ),
    ] {
        let mut store = MemoryStore::new();
        let key = waiting(&store, program, name);
        assert_eq!(
            watch::watch(&mut store, &w, Some(looks)).unwrap(),
            expected,
            "{case}"
        );
        let sent = store.inbox(&key, false).unwrap();
        assert_eq!(sent.len(), expected as usize, "{case}");
        if let Some(from) = from {
            assert!(sent.iter().all(|r| r.party == from), "{case}");
        }
    }
}

#[test]
fn the_watching_approver_denies_once_its_approval_is_refused_for_a_moved_resource() {
    let mut store = MemoryStore::new();
    let key = waiting(&store, Program::Seed, "run-1");
    let w = watch::Watch {
        key: Some(approver_key()),
        ..approver_watch()
    };
    assert_eq!(watch::watch(&mut store, &w, Some(1)).unwrap(), 1);
    // Another system moves the run's resource before a worker feeds the approval.
    let mut tools = MemoryTools::default();
    let moved = resumable_runtime::tool::ToolRequest::Move {
        resource: key.0.clone(),
    };
    resumable_runtime::tool::Tools::call(&mut tools, &moved).unwrap();
    let mut d = Driver::new(store.clone(), tools, config());
    assert!(d.turn(&key, true).unwrap());
    // The approver sees its approval refused for the moved resource and denies, once; a
    // look without a new refusal sends nothing more.
    assert_eq!(watch::watch(&mut store, &w, Some(3)).unwrap(), 1);
    assert!(d.turn(&key, true).unwrap());
    let answers: Vec<Answer> = store
        .inbox(&key, false)
        .unwrap()
        .into_iter()
        .map(|r| r.answer.expect("answered").answer)
        .collect();
    assert!(
        matches!(
            answers.as_slice(),
            [
                Answer::Rejected(resumable_kernel::Rejection::ResourceChanged { .. }),
                Answer::Accepted(_)
            ]
        ),
        "{answers:?}"
    );
    assert_eq!(status_of(&row(&mut store, &key).run), Status::Failed);
}

/// The run's batch decisions in its inbox, in the order sent, each with the checkpoint it
/// binds to.
fn batch_decisions(store: &mut MemoryStore, key: &RunKey) -> Vec<resumable_kernel::CallDecision> {
    let handed = row(store, key).checkpoint.unwrap();
    let mut out = Vec::new();
    for r in store.inbox(key, false).unwrap() {
        match r.request {
            Request::Resume {
                checkpoint,
                decision: Decision::Batch { decisions },
            } => {
                assert_eq!(checkpoint, handed, "bound to the batch's checkpoint");
                out.extend(decisions.iter().copied());
            }
            other => panic!("a batch is decided by batch decisions: {other:?}"),
        }
    }
    out
}

/// Feeds every request waiting in `key`'s inbox and drives the run until it waits again.
fn drive(store: &MemoryStore, key: &RunKey) -> Row {
    let mut d = Driver::new(store.clone(), MemoryTools::default(), config());
    while d.turn(key, true).unwrap() {}
    d.store().load(key).unwrap().unwrap()
}

#[test]
fn an_approval_of_a_batch_approves_or_denies_every_call_bound_to_the_batch_checkpoint() {
    for (approves, ends) in [(true, Status::Completed), (false, Status::Failed)] {
        let mut store = MemoryStore::new();
        let key = waiting(&store, Program::Batch, "batch-1");
        let request =
            parties::approval(&row(&mut store, &key), None, APPROVER, approves, 60_000).unwrap();
        approve(&mut store, &key, &request);
        let decided = batch_decisions(&mut store, &key);
        let ids: Vec<&str> = decided
            .iter()
            .map(|d| d.approval.call_id.as_str())
            .collect();
        assert_eq!(ids, ["publish-1", "ship-1", "notify-1"]);
        let handed = row(&mut store, &key).checkpoint.unwrap();
        for d in &decided {
            assert_eq!(d.approval.revision, handed.revision);
            assert_eq!(d.approval.requester, Name::lit(REQUESTER));
            assert_eq!(d.verdict == resumable_kernel::Verdict::Approve, approves);
        }
        assert_eq!(status_of(&drive(&store, &key).run), ends);
    }
}

#[test]
fn the_watching_approver_decides_each_call_of_a_batch_once_and_the_run_goes_on() {
    for seed in 0..8 {
        let mut store = MemoryStore::new();
        let key = waiting(&store, Program::Batch, "batch-1");
        let w = watch::Watch {
            seed,
            key: Some(approver_key()),
            ..approver_watch()
        };
        // In one request or two (the first call's, then the rest), never again.
        let sent = watch::watch(&mut store, &w, Some(3)).unwrap();
        assert!((1..=2).contains(&sent), "seed {seed}: {sent} requests");
        let decided = batch_decisions(&mut store, &key);
        let mut ids: Vec<&str> = decided
            .iter()
            .map(|d| d.approval.call_id.as_str())
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, ["notify-1", "publish-1", "ship-1"], "seed {seed}");
        assert!(decided
            .iter()
            .all(|d| d.approval.approver == Name::lit(APPROVER)));
        // No denial drawn: whatever was rejected, the run completes.
        assert_eq!(
            status_of(&drive(&store, &key).run),
            Status::Completed,
            "seed {seed}"
        );
    }
}
