//! The one reader of a human-in-the-loop resume value (`party::read_resume`, over JSON as
//! `forms::read_resume`, `forms::is_resume_decision` and `forms::resume`): both forms the
//! packages write (spec/frameworks.md, "Resuming"), what each feeds, and what is no decision.

use resumable_driver::forms;
use resumable_driver::party::{self, Word};
use resumable_driver::plan::Request;
use resumable_kernel::{Name, Time};
use serde_json::{json, Value};

const HEADER: &str = r#"{"run":{"identity":{"tenant":"acme","session":"s-1","run":"pay-1",
"definition":"payments@1"},"policy":{"operator":"ops","reconcile_window":600},"created_at":0},
"tools":null}"#;
const FACTS: &str = r#"{"resource_version":0,"permitted":true,"within_budget":true}"#;

fn read(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn proposals() -> String {
    let call = |id: &str, to: &str| {
        json!({"call_id": id, "tool": "send_payment", "args": {"to": to, "amount": 50},
            "key": format!("pay-1:{id}"), "requester": "agent", "approver": "alice",
            "expires_in": 60,
            "contract": {"dedupes": true, "query_fences": false, "max_attempts": 3}})
    };
    json!([call("call-1", "bob"), call("call-2", "carol")]).to_string()
}

/// A run suspended on a batch of two payments: the held run, its book, and the request.
struct Asked {
    held: String,
    book: String,
    request: Value,
}

impl Asked {
    fn new() -> Asked {
        let opened = read(&forms::open(HEADER, None).unwrap());
        let (held, book) = (opened["held"].to_string(), opened["book"].to_string());
        let todo = read(&forms::plan_turn(&held, &book, 1, &proposals(), FACTS).unwrap());
        let (event, kept) = (todo["event"].to_string(), todo["kept"].to_string());
        let fed = read(&forms::feed(&held, &book, 1, &event, &kept, None).unwrap());
        let (held, book) = (fed["held"].to_string(), fed["book"].to_string());
        let mut asked = Asked {
            held,
            book,
            request: Value::Null,
        };
        asked.plan();
        asked
    }

    fn plan(&mut self) -> Value {
        let todo = read(&forms::plan_turn(&self.held, &self.book, 2, &proposals(), FACTS).unwrap());
        if todo["todo"] == "ask" {
            self.request = todo["request"].clone();
        }
        todo
    }

    fn typed(&self) -> Request {
        serde_json::from_value(self.request.clone()).unwrap()
    }

    /// Feeds `value` through `forms::resume` and keeps what it commits.
    fn resume(&mut self, value: &Value) -> Value {
        let fed = read(
            &forms::resume(
                &self.held,
                &self.book,
                3,
                &self.request.to_string(),
                &value.to_string(),
                "alice",
                FACTS,
                None,
            )
            .unwrap(),
        );
        if fed.get("held").is_some() {
            self.held = fed["held"].to_string();
            self.book = fed["book"].to_string();
        }
        fed
    }
}

fn words(text: &str) -> Vec<Word> {
    serde_json::from_str(text).unwrap()
}

#[test]
fn a_value_naming_its_request_feeds_what_decide_feeds() {
    let asked = Asked::new();
    let request = asked.typed();
    let list = r#"[{"type": "approve"}, {"type": "reject", "message": "not carol"}]"#;
    let value = json!({"request": asked.request, "decisions": read(list),
        "approver": "alice", "expires_at": 100});
    let read_back = party::read_resume(&request, &value.to_string(), Name::lit("ops")).unwrap();
    let decided = party::decide(&request, &words(list), Name::lit("alice"), Time(100)).unwrap();
    assert_eq!(read_back, decided);
}

#[test]
fn a_value_on_a_checkpoint_leaves_a_null_call_and_takes_the_adapters_approver_and_expiry() {
    let asked = Asked::new();
    let request = asked.typed();
    let value = json!({"checkpoint": asked.request["checkpoint"],
        "decisions": [null, {"type": "approve"}]});
    let kept = approves_alone(&request, &value, "call-2", "alice", request.expires_at);
    // Counted against the request, not against the call it happens to decide.
    assert_eq!(kept.answered, Some(Name::lit("call-1")));
    let shorter = json!({"checkpoint": asked.request["checkpoint"],
        "decisions": [{"type": "approve"}], "approver": "bea", "expires_at": 9});
    approves_alone(&request, &shorter, "call-1", "bea", Time(9));
}

/// Asserts that `value`, read for the adapter's approver `alice`, feeds what an approval of
/// `call` alone by `approver`, valid until `expires_at`, feeds; returns what the reading kept.
fn approves_alone(
    request: &Request,
    value: &Value,
    call: &str,
    approver: &str,
    expires_at: Time,
) -> resumable_driver::book::Kept {
    let (answer, kept) =
        party::read_resume(request, &value.to_string(), Name::lit("alice")).unwrap();
    let approve = [(call.to_string(), Word::Approve)];
    let approver = Name::new(approver).unwrap();
    let (expected, _) = party::decide_calls(request, &approve, approver, expires_at).unwrap();
    assert_eq!(answer, expected, "{value}");
    kept
}

#[test]
fn an_edit_reads_alike_in_either_languages_spelling() {
    let asked = Asked::new();
    let request = asked.typed();
    let edit = |field: &str| {
        let mut word = json!({"type": "edit"});
        word[field] = json!({"name": "send_payment", "args": {"to": "carol", "amount": 5}});
        json!({"checkpoint": asked.request["checkpoint"], "decisions": [null, word]}).to_string()
    };
    let snake = party::read_resume(&request, &edit("edited_action"), Name::lit("alice")).unwrap();
    let camel = party::read_resume(&request, &edit("editedAction"), Name::lit("alice")).unwrap();
    assert_eq!(snake, camel);
    assert_eq!(snake.1.edited.len(), 1);
}

#[test]
fn what_is_no_decision_is_read_as_none_and_feeds_nothing() {
    let mut asked = Asked::new();
    let request = asked.typed();
    let checkpoint = asked.request["checkpoint"].clone();
    let shown = asked.request.clone();
    let approve = json!({"type": "approve"});
    let not_one = [
        json!("approve them"),
        json!(null),
        json!({"decisions": [approve, approve]}),
        json!({"checkpoint": null, "decisions": [approve, approve]}),
        json!({"checkpoint": checkpoint, "request": shown, "decisions": [approve, approve]}),
        json!({"checkpoint": checkpoint, "decisions": [approve, approve, approve]}),
        json!({"checkpoint": checkpoint, "decisions": [null, null]}),
        json!({"checkpoint": checkpoint, "decisions": []}),
        json!({"checkpoint": checkpoint, "decisions": [{"type": "maybe"}]}),
        json!({"checkpoint": checkpoint, "decisions": [approve], "approver": ""}),
        json!({"checkpoint": checkpoint, "decisions":
            [{"type": "edit", "editedAction": {"name": "refund", "args": {}}}]}),
        json!({"request": shown, "decisions": [approve], "approver": "alice", "expires_at": 9}),
        json!({"request": shown, "decisions": [approve, null], "approver": "alice",
            "expires_at": 9}),
        json!({"request": shown, "decisions": [approve, approve], "expires_at": 9}),
        json!({"request": shown, "decisions": [approve, approve], "approver": "alice"}),
    ];
    let before = (asked.held.clone(), asked.book.clone());
    for value in &not_one {
        let text = value.to_string();
        assert!(
            party::read_resume(&request, &text, Name::lit("alice")).is_err(),
            "{value}"
        );
        let req = asked.request.to_string();
        assert_eq!(
            forms::is_resume_decision(&req, &text, "alice").unwrap(),
            "false"
        );
        let judged = read(&forms::read_resume(&req, &text, "alice").unwrap());
        assert_eq!(judged["verdict"], "not_a_decision", "{value}");
        let fed = asked.resume(value);
        assert_eq!(fed["verdict"], "not_a_decision", "{value}");
        assert!(fed.get("held").is_none());
    }
    assert_eq!((asked.held.clone(), asked.book.clone()), before);
    assert_eq!(asked.plan()["request"]["answers"], 0);
}

#[test]
fn every_decision_fed_is_counted_once_whichever_call_it_decides() {
    let mut asked = Asked::new();
    let checkpoint = asked.request["checkpoint"].clone();
    let req = asked.request.to_string();
    let first = json!({"checkpoint": checkpoint, "decisions": [{"type": "approve"}]});
    assert_eq!(
        forms::is_resume_decision(&req, &first.to_string(), "alice").unwrap(),
        "true"
    );
    assert_eq!(asked.resume(&first)["verdict"]["verdict"], "accepted");
    assert_eq!(asked.plan()["request"]["answers"], 1);
    // Refused by the kernel (call-1 is decided already), and still an answer fed: counted.
    let conflict = json!({"checkpoint": checkpoint,
        "decisions": [{"type": "reject", "message": "no"}]});
    assert_eq!(
        asked.resume(&conflict)["verdict"]["verdict"],
        "already_resumed"
    );
    assert_eq!(asked.plan()["request"]["answers"], 2);
    // A decision on the second call alone is counted with the others.
    let last = json!({"checkpoint": checkpoint, "decisions": [null, {"type": "approve"}]});
    let fed = asked.resume(&last);
    assert_eq!(fed["verdict"]["verdict"], "accepted", "{fed}");
    assert_eq!(fed["tool_calls"].as_array().unwrap().len(), 2);
    let answers = &read(&asked.book)["calls"];
    assert_eq!(answers["call-1"]["answers"], 3);
    assert_eq!(answers["call-2"]["answers"], 0);
}

#[test]
fn the_reader_stages_nothing_and_says_what_would_be_fed() {
    let asked = Asked::new();
    let value = json!({"checkpoint": asked.request["checkpoint"],
        "decisions": [{"type": "approve"}, {"type": "reject", "message": "not carol"}]});
    let judged =
        read(&forms::read_resume(&asked.request.to_string(), &value.to_string(), "alice").unwrap());
    assert_eq!(judged["kept"]["answered"], "call-1");
    assert_eq!(judged["kept"]["outcomes"][0][0], "call-2");
    assert_eq!(judged["answer"]["decision"]["decision"], "batch");
    let decisions = judged["answer"]["decision"]["decisions"]
        .as_array()
        .unwrap();
    assert_eq!(decisions.len(), 2);
    assert!(forms::read_resume(&asked.request.to_string(), &value.to_string(), "").is_err());
}
