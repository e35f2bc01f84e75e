//! Unit tests of scenario parsing and reference resolution.

use super::*;
use resumable_kernel::{Decision, Digest};

const HEADER: &str = r#"{"scenario": "t", "format": 1, "shows": ["RES-3"], "description": "d", "run": {"tenant": "tenant-a", "session": "s-1", "run": "run-1", "definition": "demo@1", "operator": "ops", "reconcile_window": 100, "created_at": 0}}"#;
const SUSPEND: &str = r#"{"at": 1, "kind": "suspend", "wait": {"wait": "approval", "call": {"call_id": "call-1", "tool": "publish:demo", "args": {"text": "post"}, "key": "k-1", "contract": {"dedupes": true, "query_fences": false, "max_attempts": 3}}, "requester": "agent"}, "expires_at": 50, "responsible": "approver", "resource_version": 7}"#;
const APPROVAL: &str = r#"{"decision": "approve", "call_id": "call-1", "args": {"text": "post"}, "requester": "agent", "approver": "approver", "expires_at": 90}"#;

fn scenario(lines: &[&str]) -> Result<Scenario, ScenarioError> {
    let mut text = String::from(HEADER);
    for l in lines {
        text.push('\n');
        text.push_str(l);
    }
    parse(text.as_bytes())
}

fn resume_line(checkpoint: &str) -> String {
    format!(r#"{{"at": 2, "kind": "resume", "checkpoint": {checkpoint}, "decision": {APPROVAL}}}"#)
}

/// The checkpoint the suspend emits, found by stepping the kernel directly.
fn emitted(s: &Scenario) -> Checkpoint {
    let t = resumable_kernel::step(
        &s.header.run.create().expect("valid policy"),
        &s.steps[0].input,
    )
    .expect("the suspend is accepted");
    *t.effects
        .checkpoint()
        .expect("a suspension persists a checkpoint")
}

#[test]
fn a_digest_written_as_text_is_the_sha256_of_the_text() {
    let s = scenario(&[SUSPEND]).unwrap();
    let Event::Suspend {
        wait: resumable_kernel::Wait::Approval { call, .. },
        ..
    } = s.steps[0].input.event
    else {
        panic!("a suspend for approval")
    };
    assert_eq!(call.args, Digest::of(b"post"));
}

#[test]
fn latest_resolves_to_the_last_emitted_checkpoint_and_fills_revision_and_facts() {
    let s = scenario(&[SUSPEND, &resume_line("\"latest\"")]).unwrap();
    let cp = emitted(&s);
    let input = s.steps[1].resolve(&[cp]).unwrap();
    let Event::Resume(r) = input.event else {
        panic!("a resume")
    };
    assert_eq!(r.checkpoint, cp);
    let Decision::Approve(a) = r.decision else {
        panic!("an approval")
    };
    assert_eq!(
        a.revision, cp.revision,
        "an omitted revision is the checkpoint's"
    );
    assert_eq!(
        r.facts.resource_version, 7,
        "an omitted resource version is unchanged"
    );
    assert!(r.facts.permitted && r.facts.within_budget);
}

#[test]
fn changes_to_the_latest_checkpoint_are_resealed_unless_told_not_to() {
    let s = scenario(&[
        SUSPEND,
        &resume_line(r#"{"latest": {"identity": {"run": "run-other"}}}"#),
        &resume_line(r#"{"latest": {"expires_at": 99}, "reseal": false}"#),
    ])
    .unwrap();
    let cp = emitted(&s);
    let Event::Resume(resealed) = s.steps[1].resolve(&[cp]).unwrap().event else {
        panic!("a resume")
    };
    assert_eq!(resealed.checkpoint.identity.run, Name::lit("run-other"));
    assert_eq!(resealed.checkpoint.identity.tenant, cp.identity.tenant);
    assert_eq!(resealed.checkpoint.verify(), Ok(()));
    let Event::Resume(stale) = s.steps[2].resolve(&[cp]).unwrap().event else {
        panic!("a resume")
    };
    assert_eq!(stale.checkpoint.expires_at, Time(99));
    assert_eq!(
        stale.checkpoint.digest, cp.digest,
        "the emitted digest is kept"
    );
    assert!(stale.checkpoint.verify().is_err());
}

#[test]
fn emitted_names_a_checkpoint_by_revision_and_an_unknown_one_is_an_error() {
    let s = scenario(&[
        SUSPEND,
        &resume_line(r#"{"emitted": 1}"#),
        &resume_line(r#"{"emitted": 5}"#),
    ])
    .unwrap();
    let cp = emitted(&s);
    assert!(s.steps[1].resolve(&[cp]).is_ok());
    let err = s.steps[2].resolve(&[cp]).unwrap_err();
    assert!(err.contains("no checkpoint was emitted at r5"), "{err}");
    let err = s.steps[1].resolve(&[]).unwrap_err();
    assert!(err.contains("emitted so far: none"), "{err}");
}

#[test]
fn latest_before_any_suspension_is_an_error_not_a_panic() {
    let s = scenario(&[&resume_line("\"latest\"")]).unwrap();
    let err = s.steps[0].resolve(&[]).unwrap_err();
    assert!(err.contains("no checkpoint has been emitted yet"), "{err}");
}

#[test]
fn a_misspelt_checkpoint_change_is_refused() {
    let s = scenario(&[SUSPEND, &resume_line(r#"{"latest": {"revison": 0}}"#)]).unwrap();
    let err = s.steps[1].resolve(&[emitted(&s)]).unwrap_err();
    assert!(err.contains("unknown checkpoint field `revison`"), "{err}");
}

#[test]
fn a_changed_digest_that_would_be_resealed_is_refused() {
    let digest = "0".repeat(64);
    let err = scenario(&[
        SUSPEND,
        &resume_line(&format!(r#"{{"latest": {{"digest": "{digest}"}}}}"#)),
    ])
    .unwrap_err();
    assert_eq!(err.line, 3);
    assert!(err.message.contains("\"reseal\": false"), "{err}");
}

#[test]
fn a_field_the_kernel_does_not_know_is_refused_with_its_path() {
    let line = SUSPEND.replace(
        "\"requester\": \"agent\"",
        "\"requester\": \"agent\", \"aprover\": \"x\"",
    );
    let err = scenario(&[&line]).unwrap_err();
    assert_eq!(
        (err.line, err.message.as_str()),
        (2, "unknown field `wait.aprover`")
    );
}

#[test]
fn a_syntax_error_names_line_and_column() {
    let err = scenario(&[SUSPEND, r#"{"at": 2, "kind": }"#]).unwrap_err();
    assert_eq!((err.line, err.column), (3, Some(19)));
    assert!(err.message.starts_with("not JSON"), "{err}");
}

#[test]
fn bytes_that_are_not_utf8_name_line_and_column() {
    let mut text = format!("{HEADER}\n").into_bytes();
    text.extend_from_slice(b"{\"at\": \xff}");
    let err = parse(&text).unwrap_err();
    assert_eq!((err.line, err.column), (2, Some(8)));
}

#[test]
fn blank_lines_and_crlf_endings_are_accepted_and_notes_kept() {
    let text = format!(
        "\r\n{HEADER}\r\n\r\n{{\"at\": 1, \"kind\": \"expire\", \"note\": \"why\", \"expect\": \"not_suspended\"}}\r\n"
    );
    let s = parse(text.as_bytes()).unwrap();
    assert_eq!((s.header_line, s.steps[0].line), (2, 4));
    assert_eq!(s.steps[0].note.as_deref(), Some("why"));
    assert_eq!(s.steps[0].expect.as_deref(), Some("not_suspended"));
}

#[test]
fn a_second_header_is_refused() {
    let err = scenario(&[HEADER]).unwrap_err();
    assert_eq!(err.line, 2);
    assert!(err.message.contains("second header"), "{err}");
}

#[test]
fn a_newer_format_is_named_as_such() {
    let text =
        HEADER.replace("\"format\": 1", "\"format\": 2") + "\n{\"at\": 1, \"kind\": \"expire\"}";
    let err = parse(text.as_bytes()).unwrap_err();
    assert!(err.message.contains("format 2 is not supported"), "{err}");
}

#[test]
fn every_truncation_of_a_scenario_parses_or_names_a_line() {
    // Cutting a valid scenario anywhere must give a scenario or an error, never a panic,
    // and replaying whatever parses must not panic either.
    let full = format!("{HEADER}\n{SUSPEND}\n{}\n", resume_line("\"latest\""));
    for cut in 0..=full.len() {
        match parse(&full.as_bytes()[..cut]) {
            Ok(s) => {
                let t = crate::trace::replay(&s).expect("a complete line resolves");
                assert_eq!(t.steps.len(), s.steps.len());
            }
            Err(e) => assert!(e.line >= 1 && !e.message.is_empty()),
        }
    }
}
