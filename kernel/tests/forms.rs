//! What a transition's effects count, and the wire forms of verdict sets and bounded lists.

use resumable_kernel::*;
use resumable_testkit::*;

fn proposal(c: Call) -> Proposal {
    Proposal {
        call: c,
        requester: REQUESTER,
        prior: Prior::NONE,
    }
}

/// A batch suspension of `n` calls (`call-0`, `call-1`, ...), each under its own key.
fn batch_of(n: usize, last_tool: &str) -> (Run, Effects) {
    let ids = [
        "call-0", "call-1", "call-2", "call-3", "call-4", "call-5", "call-6", "call-7",
    ];
    let keys = [
        "key-0", "key-1", "key-2", "key-3", "key-4", "key-5", "key-6", "key-7",
    ];
    let calls: Vec<Proposal> = (0..n)
        .map(|i| {
            let tool = if i + 1 == n { last_tool } else { "publish" };
            proposal(call(ids[i], tool, keys[i]))
        })
        .collect();
    let event = Event::Suspend {
        wait: Wait::Batch {
            calls: Proposals::of(&calls).expect("at most eight"),
        },
        expires_at: Time(50),
        responsible: APPROVER,
        resource_version: 1,
    };
    accept(&new_run("run-batch"), at(1, event))
}

#[test]
fn effects_count_what_they_hold_and_a_full_batch_fits() {
    let (run, fx) = accept(
        &new_run("run-1"),
        at(1, suspend_for_approval(publish(), 50)),
    );
    // The audit record, the call bound, the checkpoint.
    assert_eq!((fx.len(), fx.iter().count()), (3, 3));
    assert!(!fx.is_empty());
    let (_, fx) = accept(
        &run,
        at(
            2,
            resume(*fx.checkpoint().unwrap(), {
                let cp = fx.checkpoint().unwrap();
                Decision::Approve(approval(cp, &publish()))
            }),
        ),
    );
    // The audit record and the dispatch.
    assert_eq!((fx.len(), fx.iter().count()), (2, 2));
    // A batch of eight: the audit record, eight calls bound, the checkpoint.
    let (run, fx) = batch_of(BATCH_CAPACITY, "publish");
    assert_eq!((fx.len(), fx.iter().count()), (10, 10));
    let cp = *fx.checkpoint().unwrap();
    let decisions: Vec<CallDecision> = run
        .batch()
        .unwrap()
        .slots
        .iter()
        .map(|s| CallDecision {
            approval: approval(&cp, &s.call.call),
            verdict: Verdict::Approve,
        })
        .collect();
    let decisions = Decisions::of(&decisions).expect("at most eight");
    let (_, fx) = accept(&run, at(2, resume(cp, Decision::Batch { decisions })));
    // Every call of the full batch leaves at once, each with its own dispatch.
    assert_eq!(fx.commands().count(), BATCH_CAPACITY);
    assert_eq!(fx.len(), fx.iter().count());
    assert!(fx.len() <= effect::MAX_EFFECTS);
}

/// A full batch suspended, and its resumption with every call edited: the suspension's
/// effects, its checkpoint, and the resumption's effects.
fn full_batch_edited() -> (Effects, Checkpoint, Effects) {
    let (run, suspended) = batch_of(BATCH_CAPACITY, "publish");
    let cp = *suspended.checkpoint().unwrap();
    let decisions: Vec<CallDecision> = (run.batch().unwrap().slots.iter())
        .map(|s| CallDecision {
            approval: approval(&cp, &s.call.call),
            verdict: Verdict::Edit {
                args: Digest::of(s.call.call.call_id.as_str().as_bytes()),
            },
        })
        .collect();
    let decisions = Decisions::of(&decisions).expect("at most eight");
    let (_, edited) = accept(&run, at(2, resume(cp, Decision::Batch { decisions })));
    (suspended, cp, edited)
}

#[test]
fn a_full_batch_every_call_edited_emits_the_most_effects_and_keeps_them_all() {
    let (_, _, fx) = full_batch_edited();
    // The audit record, each call's key bound again to its new arguments, each dispatch.
    assert_eq!(fx.histories().count(), BATCH_CAPACITY);
    assert_eq!(fx.commands().count(), BATCH_CAPACITY);
    assert_eq!(fx.len(), 1 + 2 * BATCH_CAPACITY);
    assert!(fx.len() <= effect::MAX_EFFECTS);
}

#[test]
fn the_fullest_effects_hold_exactly_max_effects() {
    // A batch's suspension gives an audit record, eight entries and a checkpoint; its edited
    // resumption gives eight entries and eight dispatches. Offered twice over, an `Effects`
    // keeps a batch's capacity of each, and holds exactly `MAX_EFFECTS`: the bound the model
    // sizes its dispatch arrays by is the most an `Effects` can hold, no more and no less.
    let (suspended, cp, edited) = full_batch_edited();
    let fullest = Effects::of_batch(
        *suspended.audit().unwrap(),
        suspended.histories().chain(edited.histories()).copied(),
        Some(cp),
        edited.commands().chain(edited.commands()).copied(),
    );
    assert_eq!(fullest.len(), effect::MAX_EFFECTS);
    assert_eq!(fullest.iter().count(), effect::MAX_EFFECTS);
    assert_eq!(
        fullest.histories().count() + fullest.commands().count(),
        2 * BATCH_CAPACITY
    );
}

#[test]
fn a_batch_checkpoint_names_its_calls() {
    let (_, a) = batch_of(2, "publish");
    let (_, b) = batch_of(2, "email");
    let (a, b) = (a.checkpoint().unwrap(), b.checkpoint().unwrap());
    // The same run at the same revision: only the batch's calls differ, and so do the
    // digests, so a checkpoint of one batch never answers for another.
    assert_eq!(a.revision, b.revision);
    assert_ne!(a.batch, b.batch);
    assert_ne!(a.digest, b.digest);
    let (_, again) = batch_of(2, "publish");
    assert_eq!(again.checkpoint().unwrap().batch, a.batch);
}

#[test]
fn a_verdict_set_reads_from_the_list_of_its_names() {
    let set: Allowed = serde_json::from_str(r#"["approve", "reject", "deny"]"#).unwrap();
    let kinds: Vec<VerdictKind> = set.iter().collect();
    assert_eq!(
        kinds,
        [VerdictKind::Approve, VerdictKind::Reject, VerdictKind::Deny]
    );
    assert!(!set.contains(VerdictKind::Edit));
    let twice: Allowed = serde_json::from_str(r#"["approve", "approve", "reject"]"#).unwrap();
    assert!(twice.contains(VerdictKind::Approve) && twice.contains(VerdictKind::Reject));
    let none: Allowed = serde_json::from_str("[]").unwrap();
    assert!(none.is_empty());
    assert_eq!(
        serde_json::to_string(&set).unwrap(),
        r#"["approve","reject","deny"]"#
    );
}

#[test]
fn a_bounded_list_that_is_no_list_says_what_it_expected() {
    let err = serde_json::from_str::<Allowed>(r#"{"approve": true}"#).unwrap_err();
    assert!(
        err.to_string().contains("a list of at most 5 items"),
        "{err}"
    );
    let err = serde_json::from_str::<Allowed>(
        r#"["approve", "edit", "reject", "respond", "deny", "approve"]"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("5"), "{err}");
}

#[test]
fn a_narrowed_verdict_set_is_written_and_a_default_one_left_out() {
    let narrowed = ToolContract {
        allowed: Allowed::of(&[VerdictKind::Approve, VerdictKind::Respond]),
        ..ToolContract::default()
    };
    let json = serde_json::to_string(&narrowed).unwrap();
    assert!(
        json.contains(r#""allowed":["approve","respond"]"#),
        "{json}"
    );
    assert_eq!(
        serde_json::from_str::<ToolContract>(&json).unwrap(),
        narrowed
    );
    let json = serde_json::to_string(&ToolContract::default()).unwrap();
    assert!(!json.contains("allowed"), "{json}");

    let policy = Policy {
        operator: OPERATOR,
        reconcile_window: WINDOW,
        allowed: Allowed::of(&[VerdictKind::Approve, VerdictKind::Reject]),
    };
    let json = serde_json::to_string(&policy).unwrap();
    assert!(json.contains(r#""allowed":["approve","reject"]"#), "{json}");
    assert_eq!(serde_json::from_str::<Policy>(&json).unwrap(), policy);
    let every = Policy {
        allowed: Allowed::ALL,
        ..policy
    };
    assert!(!serde_json::to_string(&every).unwrap().contains("allowed"));
}
