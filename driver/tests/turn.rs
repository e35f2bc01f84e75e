//! A turn planned with `plan_turn` is suspended as a batch even of one call, so a framework's
//! decision list (`forms::decide`) answers it; `plan` puts one call to its approver alone.

use resumable_driver::forms;
use serde_json::{json, Value};

const HEADER: &str = r#"{"run":{"identity":{"tenant":"acme","session":"s-1","run":"pay-1",
"definition":"payments@1"},"policy":{"operator":"ops","reconcile_window":600},"created_at":0},
"tools":null}"#;
const FACTS: &str = r#"{"resource_version":0,"permitted":true,"within_budget":true}"#;

fn proposals() -> String {
    json!([{"call_id": "call-1", "tool": "send_payment", "args": {"to": "bob", "amount": 50},
        "key": "pay-1:call-1", "requester": "agent", "approver": "alice", "expires_in": 60,
        "contract": {"dedupes": true, "query_fences": false, "max_attempts": 3}}])
    .to_string()
}

fn read(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// The run and its book, as `forms::open` makes them from the header.
fn opened() -> (String, String) {
    let opened = read(&forms::open(HEADER, None).unwrap());
    (opened["held"].to_string(), opened["book"].to_string())
}

/// Feeds at `at` the event the plan `todo` says to feed: what `forms::feed` answers, and the
/// run and the book it leaves.
fn feed_todo(held: &str, book: &str, at: u64, todo: &Value) -> (Value, String, String) {
    let (event, kept) = (todo["event"].to_string(), todo["kept"].to_string());
    let fed = read(&forms::feed(held, book, at, &event, &kept, None).unwrap());
    let (held, book) = (fed["held"].to_string(), fed["book"].to_string());
    (fed, held, book)
}

/// Suspends with the planner `how` and answers with a single `reject` decision list.
fn reject_one(how: fn(&str, &str, u64, &str, &str) -> forms::Result<String>) -> Value {
    let (held, book) = opened();
    let todo = read(&how(&held, &book, 1, &proposals(), FACTS).unwrap());
    assert_eq!(todo["todo"], "feed");
    let (_, held, book) = feed_todo(&held, &book, 1, &todo);
    let todo = read(&how(&held, &book, 2, &proposals(), FACTS).unwrap());
    assert_eq!(todo["todo"], "ask");
    let words = r#"[{"type":"reject","message":"not today"}]"#;
    let request = todo["request"].to_string();
    read(&forms::decide(&held, &book, 3, &request, words, "alice", 100, FACTS, None).unwrap())
}

#[test]
fn a_turn_of_one_call_is_a_batch_its_decision_list_answers() {
    let fed = reject_one(forms::plan_turn);
    assert_eq!(fed["verdict"]["verdict"], "accepted", "{fed}");
    let outcome = &fed["book"]["calls"]["call-1"]["outcome"];
    assert_eq!(outcome["outcome"], "rejected");
    assert_eq!(outcome["message"], "not today");
}

#[test]
fn one_call_planned_alone_waits_for_one_approval_not_a_list() {
    let fed = reject_one(forms::plan);
    assert_eq!(fed["verdict"]["verdict"], "decision_mismatch", "{fed}");
}

#[test]
fn a_turn_larger_than_a_batch_is_refused_never_cut_short() {
    let (held, book) = opened();
    let one: Value = read(&proposals());
    let turn: Vec<Value> = (0..9)
        .map(|i| {
            let mut p = one[0].clone();
            p["call_id"] = json!(format!("call-{i}"));
            p["key"] = json!(format!("pay-1:call-{i}"));
            p
        })
        .collect();
    let turn = serde_json::to_string(&turn).unwrap();
    for how in [forms::plan, forms::plan_turn] {
        let err = how(&held, &book, 1, &turn, FACTS).unwrap_err();
        assert!(err.contains("at most 8"), "{err}");
    }
}

#[test]
fn the_calls_of_a_batch_are_decided_one_at_a_time_and_dispatched_together() {
    let (held, book) = opened();
    let one: Value = read(&proposals());
    let mut two = one[0].clone();
    two["call_id"] = json!("call-2");
    two["key"] = json!("pay-1:call-2");
    let turn = serde_json::to_string(&json!([one[0], two])).unwrap();
    let todo = read(&forms::plan(&held, &book, 1, &turn, FACTS).unwrap());
    let (_, held, book) = feed_todo(&held, &book, 1, &todo);
    let todo = read(&forms::plan(&held, &book, 2, &turn, FACTS).unwrap());
    let request = todo["request"].to_string();
    let first = r#"[{"call_id":"call-2","decision":{"type":"approve"}}]"#;
    let fed = read(
        &forms::decide_calls(&held, &book, 3, &request, first, "alice", 100, FACTS, None).unwrap(),
    );
    assert_eq!(fed["verdict"]["verdict"], "accepted", "{fed}");
    assert_eq!(fed["tool_calls"], json!([]));
    let (held, book) = (fed["held"].to_string(), fed["book"].to_string());
    let second = r#"[{"call_id":"call-1","decision":{"type":"reject","message":"no"}}]"#;
    let fed = read(
        &forms::decide_calls(&held, &book, 4, &request, second, "alice", 100, FACTS, None).unwrap(),
    );
    assert_eq!(fed["verdict"]["verdict"], "accepted", "{fed}");
    assert_eq!(fed["tool_calls"][0]["call_id"], "call-2");
    assert_eq!(fed["book"]["calls"]["call-1"]["outcome"]["message"], "no");
    let stray = r#"[{"call_id":"call-9","decision":{"type":"approve"}}]"#;
    let refused = read(
        &forms::decide_calls(&held, &book, 5, &request, stray, "alice", 100, FACTS, None).unwrap(),
    );
    assert_eq!(refused["verdict"], "not_a_decision");
}
