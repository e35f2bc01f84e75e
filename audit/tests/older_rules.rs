//! A log of rules 5 (kernel/src/rules.rs): written in this validator's shapes, with verdicts
//! that differ from its own rules only where a batch input denies a call beside other
//! decisions and where a suspension no decision could answer was accepted. It is judged while
//! the kernel agrees with it, and not judged from the first record where it does not; never
//! called a divergence for its age. The same record under a header naming this validator's
//! rules is a divergence.

use resumable_audit::{self as audit, sample, Options, Unproven, Writer};
use resumable_kernel::*;

fn call(id: &str) -> Call {
    Call {
        call_id: Name::new(id).unwrap(),
        tool: sample::PUBLISH.tool,
        args: Digest::of(id.as_bytes()),
        key: IdempotencyKey::new(&format!("key-{id}")).unwrap(),
        contract: sample::PUBLISH.contract,
    }
}

fn decision(cp: &Checkpoint, c: &Call, verdict: Verdict) -> CallDecision {
    CallDecision {
        approval: sample::approval(cp, c, sample::APPROVER),
        verdict,
    }
}

/// A batch of two calls, then one input that edits the first and denies the second, written
/// unkeyed by this kernel; and the first call as the edit would have bound it.
fn denial_beside_an_edit() -> (Vec<String>, Call) {
    let (a, b) = (call("call-a"), call("call-b"));
    let header = sample::header(Name::lit("run-batch"));
    let mut log = Writer::new(Vec::new(), &header, None).unwrap();
    let proposal = |c: Call| Proposal {
        call: c,
        requester: sample::REQUESTER,
        prior: Prior::NONE,
    };
    let suspend = Event::Suspend {
        wait: Wait::Batch {
            calls: Proposals::of(&[proposal(a), proposal(b)]).unwrap(),
        },
        expires_at: Time(40),
        responsible: sample::APPROVER,
        resource_version: 7,
    };
    let opened = log
        .step(&Input {
            at: Time(1),
            event: suspend,
        })
        .unwrap()
        .unwrap();
    let cp = *opened.effects.checkpoint().unwrap();
    let edited = Digest::of(b"the approver's arguments");
    let decisions = [
        decision(&cp, &a, Verdict::Edit { args: edited }),
        decision(&cp, &b, Verdict::Deny),
    ];
    let both = sample::resume(
        cp,
        Decision::Batch {
            decisions: Decisions::of(&decisions).unwrap(),
        },
    );
    let denied = log
        .step(&Input {
            at: Time(2),
            event: both,
        })
        .unwrap()
        .unwrap();
    assert_eq!(denied.effects.histories().count(), 0);
    let text = String::from_utf8(log.into_inner().unwrap()).unwrap();
    (
        text.lines().map(String::from).collect(),
        Call { args: edited, ..a },
    )
}

/// The lines, each edited by `edit` (line number from 1, body without its MAC), and sealed
/// again in an unkeyed chain.
fn resealed(lines: &[String], edit: impl Fn(usize, &str) -> String) -> Vec<u8> {
    let mut chain = audit::chain::Chain::new(None);
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let (body, _) = audit::chain::split_sealed(line).unwrap();
        chain.seal(format!("{}}}", edit(i + 1, body)).as_bytes(), &mut out);
    }
    out
}

/// Line 3's verdict as rules 5 wrote it: the edit beside the denial was recorded, and bound
/// the call to the approver's arguments.
fn as_rules_5_recorded_it(body: &str, rebound: &Call) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&format!("{body}}}")).unwrap();
    let accepted = &mut v["verdict"]["accepted"];
    assert!(accepted.get("history").is_none());
    accepted["history"] = serde_json::to_value(HistoryEntry::bound(rebound)).unwrap();
    let text = v.to_string();
    text[..text.len() - 1].to_string()
}

fn naming(rules: u16) -> impl Fn(&str) -> String {
    move |body: &str| {
        body.replacen(
            &format!("\"rules\":{RULES_VERSION},"),
            &format!("\"rules\":{rules},"),
            1,
        )
    }
}

#[test]
fn a_rules_5_log_is_judged_until_a_denial_beside_an_edit_and_not_judged_from_there() {
    let (lines, rebound) = denial_beside_an_edit();
    assert_eq!(lines.len(), 3);
    let header = naming(5);
    let rules_5 = resealed(&lines, |n, body| match n {
        1 => header(body),
        3 => as_rules_5_recorded_it(body, &rebound),
        _ => body.to_string(),
    });
    let s = audit::validate(&rules_5[..], &Options::default()).unwrap();
    let n = s.not_judged.as_ref().expect("not judged");
    assert_eq!(
        (n.line, n.rules, n.reason.code(), s.judged),
        (3, Some(5), "answer", 1)
    );
    assert_eq!(s.exit_code(), audit::NOT_JUDGED_EXIT);
    assert!(!s.conforming());
    // Up to that record, a rules-5 log is judged, read as written.
    let agreeing = resealed(&lines, |n, body| match n {
        1 => header(body),
        _ => body.to_string(),
    });
    let s = audit::validate(&agreeing[..], &Options::default()).unwrap();
    assert_eq!((s.judged, s.not_judged.is_none()), (2, true), "{s:?}");
    assert!(s.unproven.contains(&Unproven::OtherRules));
    // Under this validator's own rules, the same record is a divergence.
    let own = resealed(&lines, |n, body| match n {
        3 => as_rules_5_recorded_it(body, &rebound),
        _ => body.to_string(),
    });
    let f = audit::validate(&own[..], &Options::default()).unwrap_err();
    assert_eq!((f.line, f.exit_code()), (3, 1), "{f}");
}

#[test]
fn a_rules_4_log_is_still_judged_as_strictly_as_one_of_this_validators_rules() {
    let log = sample::approval_log().unwrap();
    let text = String::from_utf8(log).unwrap();
    let lines: Vec<String> = text.lines().map(String::from).collect();
    let header = naming(4);
    let rules_4 = resealed(&lines, |n, body| {
        let body = body.replacen(
            "\"chain\":\"hmac-sha256\",\"key_id\":\"de3490493e18cac4\",",
            "\"chain\":\"sha256\",",
            1,
        );
        if n == 1 {
            header(&body)
        } else {
            body
        }
    });
    let s = audit::validate(&rules_4[..], &Options::default()).unwrap();
    assert!(s.conforming(), "{s:?}");
    assert!(!s.unproven.contains(&Unproven::OtherRules), "{s:?}");
}
