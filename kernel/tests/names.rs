//! One spelling per name: what a message prints is what the wire format and spec/ write.

use resumable_kernel::*;
use serde::Serialize;

/// The serde spelling of a unit variant, which is a bare JSON string.
fn wire<T: Serialize>(value: T) -> String {
    match serde_json::to_value(value).unwrap() {
        serde_json::Value::String(s) => s,
        other => panic!("a name serialises as a string, got {other}"),
    }
}

fn assert_one_spelling<T: Serialize + Copy + core::fmt::Display>(all: &[T]) {
    assert!(!all.is_empty());
    for &value in all {
        assert_eq!(wire(value), value.to_string());
    }
}

#[test]
fn each_name_prints_as_it_is_written_on_the_wire() {
    assert_one_spelling(&RejectionKind::ALL);
    assert_one_spelling(&PhaseKind::ALL);
    assert_one_spelling(&ReasonKind::ALL);
    assert_one_spelling(&DecisionKind::ALL);
    assert_one_spelling(&IdentityField::ALL);
    assert_one_spelling(&CheckpointField::ALL);
    assert_one_spelling(&ApprovalField::ALL);
    assert_one_spelling(&Fault::ALL);
}

#[test]
fn messages_speak_the_same_words_as_the_wire() {
    let r = Rejection::DecisionMismatch {
        reason: ReasonKind::PendingApproval,
        decision: DecisionKind::Callback,
    };
    assert_eq!(
        r.to_string(),
        "decision callback does not answer reason pending_approval"
    );
    let r = Rejection::IdentityMismatch {
        field: IdentityField::Run,
    };
    assert_eq!(r.to_string(), "checkpoint is not for this run: run differs");
}
