//! Audit logs written from kernel runs validate; every kind of tampering is caught on the right
//! line, with the right finding.

use resumable_audit::{
    self as audit, sample, Accepted, ChainKind, Claim, Class, Finding, Header, Key, Options,
    Problem, Record, Verdict, Writer,
};
use resumable_kernel::*;

/// Validates with the samples' key when the log is keyed (the samples are), without a key
/// when it is not (the forgeries below that recompute an unkeyed chain).
fn check(log: &[u8]) -> Result<audit::Summary, Finding> {
    let first = log.split(|&b| b == b'\n').next().unwrap_or_default();
    let keyed = String::from_utf8_lossy(first).contains("\"chain\":\"hmac-sha256\"");
    let options = Options {
        key: keyed.then(sample::key),
        ..Options::default()
    };
    audit::validate(log, &options)
}

fn finding(log: &[u8]) -> Finding {
    match check(log) {
        Ok(s) => panic!("expected a finding, the log conforms: {s:?}"),
        Err(f) => f,
    }
}

/// Asserts that `f` is a line whose MAC does not verify, on `line`.
fn assert_breaks_chain(f: &Finding, line: u64) {
    assert_eq!(f.line, line, "{f}");
    assert!(matches!(f.problem, Problem::MacMismatch { .. }), "{f}");
}

/// Asserts that `f` is a line whose MAC does not verify, on `line`, in a chain of `kind`.
fn assert_breaks_chain_of(f: &Finding, line: u64, kind: ChainKind) {
    assert_breaks_chain(f, line);
    let Problem::MacMismatch { chain, .. } = f.problem else {
        unreachable!("asserted above")
    };
    assert_eq!(chain, kind, "{f}");
}

fn lines(log: &[u8]) -> Vec<String> {
    String::from_utf8(log.to_vec())
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn join(lines: &[String]) -> Vec<u8> {
    let mut out = lines.join("\n").into_bytes();
    out.push(b'\n');
    out
}

fn approval() -> Vec<u8> {
    sample::approval_log().unwrap()
}

/// `log` with line `n` (from 1) edited as text (without its MAC) and the whole chain
/// recomputed, unkeyed: what a forger does to a log whose chain has no key.
fn rechained_edit(log: &[u8], n: usize, edit: impl FnOnce(String) -> String) -> Vec<u8> {
    let (head, mut records) = sample::parse_log(log).unwrap();
    let text = serde_json::to_string(&records[n - 2]).unwrap();
    records[n - 2] = serde_json::from_str(&edit(text)).unwrap();
    sample::rechain(&head, &records)
}

/// The forger's own key, which it seals its lines with since it does not hold the run's.
fn forger() -> Key {
    Key::from_bytes([0x5a; 32])
}

/// The approval log as a header and records, for forgeries that recompute the chain.
fn approval_records() -> (Header, Vec<Record>) {
    sample::parse_log(&approval()).unwrap()
}

fn is_approve(r: &Record) -> bool {
    matches!(&r.input.event, Event::Resume(x) if matches!(x.decision, Decision::Approve(_)))
        && matches!(r.verdict, Verdict::Accepted(_))
}

#[test]
fn a_log_written_from_the_seed_lifecycle_validates() {
    let summary = check(&approval()).unwrap();
    assert_eq!(
        (summary.records, summary.accepted, summary.rejected),
        (9, 4, 5)
    );
    assert_eq!(summary.revision, Revision(4));
    assert_eq!(summary.phase, Some(PhaseKind::Completed));
    assert_eq!((summary.dispatches, summary.commits), (1, 1));
}

#[test]
fn a_log_of_every_reconcile_path_validates() {
    let summary = check(&sample::reconcile_log().unwrap()).unwrap();
    assert_eq!((summary.records, summary.rejected), (9, 0));
    assert_eq!((summary.dispatches, summary.commits), (3, 2));
}

#[test]
fn a_generated_log_has_the_requested_length_and_a_realistic_mix() {
    let log = sample::generate(Vec::new(), 5_000, 7, Some(&sample::key())).unwrap();
    let s = check(&log).unwrap();
    assert_eq!(s.records, 5_000);
    // The weights in `generate`: plain calls, approvals and reconciliations commit results
    // (the run's history lives beside it, so calls never run out); callbacks and resource
    // waits, with refused attempts around them, fill the rest.
    assert!(s.rejected > 400 && s.rejected < 2_000, "{s:?}");
    assert!(s.commits >= 20, "{s:?}");
    assert!(s.dispatches > s.commits, "{s:?}");
    assert!(s.accepted > 3 * s.rejected / 2, "{s:?}");
    // The run never ends: the budget cuts it wherever it is.
    assert!(
        matches!(s.phase, Some(PhaseKind::Running | PhaseKind::Suspended)),
        "{s:?}"
    );
    assert!(!s.commit_window_exceeded);
}

#[test]
fn a_log_with_a_header_and_no_records_conforms() {
    let log = Writer::new(Vec::new(), &sample::header(Name::lit("idle")), None)
        .unwrap()
        .into_inner()
        .unwrap();
    let s = check(&log).unwrap();
    assert_eq!((s.records, s.revision), (0, Revision(0)));
}

#[test]
fn an_edited_verdict_is_a_divergence_on_its_line() {
    // Line 3 is the refused second suspend; claim it was refused for another reason.
    let log = rechained_edit(&approval(), 3, |l| {
        l.replace("already_suspended", "not_running").replace(
            "\"reason\":\"pending_approval\"}}",
            "\"phase\":\"suspended\"}}",
        )
    });
    let f = finding(&log);
    assert_eq!((f.line, f.exit_code()), (3, 1));
    assert!(matches!(f.problem, Problem::VerdictDiverges { .. }), "{f}");
    assert!(
        f.to_string().contains(
            "the log says rejected (not_running), the kernel says rejected (already_suspended)"
        ),
        "{f}"
    );
}

#[test]
fn an_edited_input_that_changes_the_verdict_is_a_divergence_on_its_line() {
    let (head, mut records) = approval_records();
    // The tool result: a different result digest than the one recorded committed.
    let i = (records.iter())
        .position(|r| matches!(r.input.event, Event::ToolResult { .. }))
        .unwrap();
    records[i].input.event = Event::ToolResult {
        call_id: Name::lit("call-1"),
        attempt: 0,
        result: Digest::of(b"forged"),
    };
    let f = finding(&sample::rechain(&head, &records));
    assert_eq!(f.line, i as u64 + 2);
    assert!(matches!(f.problem, Problem::VerdictDiverges { .. }), "{f}");
}

#[test]
fn an_edited_input_with_the_same_verdict_breaks_the_chain_on_its_own_line() {
    // The refused second suspend, with another expiry: still refused the same way.
    let edit = |log: &[u8]| {
        let mut l = lines(log);
        l[2] = l[2].replacen("\"expires_at\":52", "\"expires_at\":99", 1);
        join(&l)
    };
    assert_breaks_chain_of(&finding(&edit(&approval())), 3, ChainKind::HmacSha256);
    // Unkeyed, the line's own SHA-256 no longer matches it either.
    let unkeyed = sample::approval_log_anchored(Name::lit("run-approval"), None)
        .unwrap()
        .0;
    assert_breaks_chain_of(&finding(&edit(&unkeyed)), 3, ChainKind::Sha256);
}

/// A line removed, moved or copied: the lines edited as text, and the records edited before
/// the chain is recomputed.
struct Moved {
    what: &'static str,
    lines: fn(&mut Vec<String>),
    records: fn(&mut Vec<Record>),
    /// The line the finding names, either way.
    line: u64,
    /// The sequence number expected there, and the one found.
    gap: (u64, u64),
    /// How the rechained finding's text starts, where a case pins it.
    says: Option<&'static str>,
}

/// A line removed, moved or copied breaks the chain where it was; with the chain recomputed, it
/// is a gap in the sequence at the first line out of place.
#[test]
fn a_removed_reordered_or_duplicated_line_breaks_the_chain_and_rechained_is_a_gap() {
    let cases = [
        Moved {
            what: "a removed line",
            lines: |l| {
                l.remove(4);
            },
            records: |r| {
                r.remove(3);
            },
            line: 5,
            gap: (4, 5),
            says: Some("line 5: record seq 5 where seq 4 should come"),
        },
        Moved {
            what: "reordered lines",
            lines: |l| l.swap(3, 4),
            records: |r| r.swap(2, 3),
            line: 4,
            gap: (3, 4),
            says: None,
        },
        Moved {
            what: "a duplicated record",
            lines: |l| l.insert(6, l[5].clone()),
            records: |r| r.insert(5, r[4]),
            line: 7,
            gap: (6, 5),
            says: None,
        },
    ];
    for case in cases {
        let mut l = lines(&approval());
        (case.lines)(&mut l);
        assert_breaks_chain(&finding(&join(&l)), case.line);
        let (head, mut records) = approval_records();
        (case.records)(&mut records);
        let f = finding(&sample::rechain(&head, &records));
        assert_eq!(f.line, case.line, "{}: {f}", case.what);
        let (expected, found) = case.gap;
        assert_eq!(
            f.problem,
            Problem::SeqGap { expected, found },
            "{}",
            case.what
        );
        if let Some(says) = case.says {
            assert!(f.to_string().starts_with(says), "{}: {f}", case.what);
        }
    }
}

#[test]
fn an_edited_mac_breaks_the_chain_on_its_line() {
    let mut l = lines(&approval());
    let cut = l[6].len() - 66;
    let genuine = Digest::from_hex(&l[6][cut..cut + 64]).unwrap();
    let other = Digest::of(b"something else");
    l[6] = format!("{}{other}\"}}", &l[6][..cut]);
    let f = finding(&join(&l));
    assert_eq!(f.line, 7);
    assert_eq!(
        f.problem,
        Problem::MacMismatch {
            chain: ChainKind::HmacSha256,
            expected: genuine,
            found: other
        }
    );
}

#[test]
fn an_edited_header_breaks_the_chain_on_the_header() {
    let mut l = lines(&approval());
    l[0] = l[0].replace("\"reconcile_window\":100", "\"reconcile_window\":101");
    assert_breaks_chain(&finding(&join(&l)), 1);
}

#[test]
fn a_record_of_another_run_spliced_in_as_it_was_breaks_the_chain() {
    let examples = sample::examples().unwrap();
    let (_, spliced) = examples
        .iter()
        .find(|(n, _)| *n == "tampered-spliced.jsonl")
        .unwrap();
    let f = finding(spliced);
    assert_breaks_chain(&f, 4);
    assert_eq!(f.exit_code(), 1);
}

#[test]
fn a_resume_of_another_run_spliced_in_with_the_chain_recomputed_is_a_divergence() {
    // A twin run with the same script: its records are the same but for the run's identity.
    let (_, genuine) = approval_records();
    let twin_log = sample::approval_log_for(Name::lit("run-twin")).unwrap();
    let (twin_head, mut twin) = sample::parse_log(&twin_log).unwrap();
    let at = twin.iter().position(is_approve).unwrap();
    // The twin's log claims the original run's approval as its own.
    twin[at] = genuine[at];
    twin.truncate(at + 1);
    let f = finding(&sample::rechain(&twin_head, &twin));
    assert_eq!(f.line, at as u64 + 2);
    match &f.problem {
        Problem::VerdictDiverges { expected, .. } => assert_eq!(
            **expected,
            Verdict::Rejected(Rejection::IdentityMismatch {
                field: IdentityField::Run
            })
        ),
        other => panic!("expected a divergence, got {other:?}"),
    }
}

#[test]
fn a_forged_acceptance_of_a_stale_resume_is_refused_by_the_key_and_violates_res_3() {
    assert_breaks_chain(
        &finding(&sample::forged_stale_resume(&forger()).unwrap()),
        8,
    );
    let f = finding(&forged_stale_resume_unkeyed());
    assert_eq!((f.line, f.exit_code()), (8, 1));
    match &f.problem {
        Problem::Property {
            id,
            expected,
            found,
            ..
        } => {
            assert_eq!(*id, SpecId::Res3);
            assert_eq!(
                **expected,
                Verdict::Rejected(Rejection::AlreadyApplied {
                    from: Revision(1),
                    to: Revision(2)
                })
            );
            assert!(matches!(**found, Claim::Verdict(Verdict::Accepted(_))));
        }
        other => panic!("expected RES-3, got {other:?}"),
    }
    assert!(f.to_string().contains(
        "RES-3 violated: a resume from stale checkpoint revision 1 was accepted while the run was at revision 2"
    ));
}

/// The approval log with the duplicate approval recorded as accepted, rechained unkeyed.
fn forged_stale_resume_unkeyed() -> Vec<u8> {
    let (head, mut records) = approval_records();
    let winner = records.iter().position(is_approve).unwrap();
    let (won, duplicate) = (records[winner], records[winner + 1]);
    records.truncate(winner + 1);
    records.push(Record {
        revision: Revision(duplicate.revision.0 + 1),
        verdict: won.verdict,
        ..duplicate
    });
    sample::rechain(&head, &records)
}

#[test]
fn a_dispatch_claimed_while_a_call_awaits_approval_violates_apr_1() {
    let (mut head, mut records) = approval_records();
    // Without a tool policy, so that the check of the pending approval speaks (the policy
    // would refuse the direct dispatch of a gated tool first, as APR-1 too).
    head.tools = None;
    let call = match &records[0].input.event {
        Event::Suspend {
            wait: Wait::Approval { call, .. },
            ..
        } => *call,
        other => panic!("{other:?}"),
    };
    // Line 3: instead of the refused second suspend, an ungated dispatch of the gated call.
    records[1] = Record {
        revision: Revision(2),
        input: Input {
            at: Time(2),
            // The runtime states the history truthfully: the suspension bound the call.
            event: Event::Dispatch {
                call,
                prior: Prior {
                    call_id_used: true,
                    key: Some(KeyUse {
                        args: call.args,
                        committed: false,
                    }),
                },
                resource_version: None,
            },
        },
        verdict: Verdict::Accepted(Accepted {
            event: EventKind::Dispatch,
            decision: None,
            phase: PhaseKind::Running,
            reason: None,
            checkpoint: None,
            dispatch: Some(Dispatch {
                call_id: call.call_id,
                tool: call.tool,
                args: call.args,
                key: call.key,
                tool_key: resumable_kernel::checkpoint::tool_key(&head.run.identity, &call.key),
                attempt: 0,
            }),
            query: None,
            committed: None,
            history: Some(HistoryEntry::bound(&call)),
            dispatch_more: Default::default(),
            history_more: Default::default(),
        }),
        ..records[1]
    };
    records.truncate(2);
    let f = finding(&sample::rechain(&head, &records));
    assert_eq!(f.line, 3);
    match &f.problem {
        Problem::Property { id, expected, .. } => {
            assert_eq!(*id, SpecId::Apr1);
            assert_eq!(
                **expected,
                Verdict::Rejected(Rejection::NotRunning {
                    phase: PhaseKind::Suspended
                })
            );
        }
        other => panic!("expected APR-1, got {other:?}"),
    }
    let said = f.message();
    let says = "call-1 was dispatched while call call-1 awaited approval";
    assert!(said.contains(says), "{said}");
}

#[test]
fn an_approval_for_other_arguments_claimed_accepted_violates_apr_1() {
    let (head, mut records) = approval_records();
    let at = records.iter().position(is_approve).unwrap();
    if let Event::Resume(r) = &mut records[at].input.event {
        if let Decision::Approve(a) = &mut r.decision {
            a.args = Digest::of(b"{\"post\":666}");
        }
    }
    records.truncate(at + 1);
    let f = finding(&sample::rechain(&head, &records));
    assert_eq!(f.line, at as u64 + 2);
    match &f.problem {
        Problem::Property {
            id, what, expected, ..
        } => {
            assert_eq!(*id, SpecId::Apr1);
            assert!(what.contains("argument digest"), "{what}");
            assert_eq!(
                **expected,
                Verdict::Rejected(Rejection::ApprovalMismatch {
                    field: ApprovalField::Args
                })
            );
        }
        other => panic!("expected APR-1, got {other:?}"),
    }
}

/// A run that dispatches the calls `ids` in turn, each committing; each step's verdict is
/// the kernel's, so a call made again under its old id is refused (KEY-2, over the run's
/// whole history) and logged as refused.
fn calls_log(ids: &[&str]) -> Vec<u8> {
    let header = Header {
        tools: None,
        ..sample::header(Name::lit("run-reuse"))
    };
    let mut w = Writer::new(Vec::new(), &header, None).unwrap();
    let contract = ToolContract {
        dedupes: false,
        query_fences: false,
        max_attempts: 1,
        ..ToolContract::default()
    };
    let call = |id: &str| Call {
        call_id: Name::new(id).unwrap(),
        tool: Name::lit("pay"),
        args: Digest::of(id.as_bytes()),
        key: IdempotencyKey::new(&format!("key-{id}")).unwrap(),
        contract,
    };
    let mut t = 0;
    // The runtime's store: every prior it states is what its history holds.
    let mut history = resumable_audit::history::History::new();
    let mut feed =
        |w: &mut Writer<Vec<u8>>, history: &mut resumable_audit::history::History, event| {
            t += 1;
            let result = w.step(&Input { at: Time(t), event }).unwrap();
            if let Some(entry) = result.as_ref().ok().and_then(|t| t.effects.history()) {
                history.apply(entry);
            }
            result
        };
    for id in ids {
        let c = call(id);
        let prior = history.prior(&c);
        if feed(
            &mut w,
            &mut history,
            Event::Dispatch {
                call: c,
                prior,
                resource_version: None,
            },
        )
        .is_err()
        {
            continue;
        }
        feed(
            &mut w,
            &mut history,
            Event::ToolResult {
                call_id: c.call_id,
                attempt: 0,
                result: Digest::of(b"paid"),
            },
        )
        .unwrap();
    }
    w.into_inner().unwrap()
}

#[test]
fn a_call_made_again_under_its_old_id_is_refused_by_the_kernel_and_the_log_says_so() {
    // A, B, then A again: the kernel remembers every call the run bound, so the third
    // dispatch is refused, and an honest log records the refusal.
    let log = calls_log(&["a", "b", "a"]);
    let s = audit::validate(&log[..], &Options::default()).unwrap();
    assert_eq!((s.commits, s.rejected), (2, 1));
    assert!(String::from_utf8_lossy(&log).contains("call_id_reused"));
}

#[test]
fn a_commit_window_smaller_than_the_commits_says_reuses_beyond_it_went_unchecked() {
    let log = calls_log(&["a", "b", "c"]);
    let narrow = Options {
        commit_window: 1,
        ..Options::default()
    };
    let s = audit::validate(&log[..], &narrow).unwrap();
    assert_eq!(s.commits, 3);
    assert!(s.commit_window_exceeded);
}

#[test]
fn an_accepted_record_that_keeps_its_revision_is_a_revision_gap() {
    let (head, mut records) = approval_records();
    records[0].revision = Revision(0);
    let f = finding(&sample::rechain(&head, &records));
    assert_eq!(f.line, 2);
    assert_eq!(
        f.problem,
        Problem::RevisionGap {
            expected: Revision(1),
            found: Revision(0)
        }
    );
}

#[test]
fn a_refused_input_recorded_as_accepted_is_a_divergence() {
    let (head, mut records) = approval_records();
    // The second suspend, claimed accepted as a suspension of its own.
    let first = records[0].verdict;
    records[1].verdict = first;
    records[1].revision = Revision(2);
    records.truncate(2);
    let f = finding(&sample::rechain(&head, &records));
    assert_eq!(f.line, 3);
    assert!(
        f.message()
            .contains("the log says accepted, the kernel says rejected (already_suspended)"),
        "{f}"
    );
}

#[test]
fn a_finding_in_json_names_line_class_problem_and_both_verdicts() {
    let f = finding(&forged_stale_resume_unkeyed());
    let json = f.to_json();
    assert_eq!(json["line"], 8);
    assert_eq!(json["class"], "divergence");
    assert_eq!(json["problem"], "property");
    assert_eq!(json["id"], "RES-3");
    assert_eq!(json["expected"]["rejected"]["rejection"], "already_applied");
    assert!(json["found"]["accepted"].is_object());
    assert_eq!(f.problem.class(), Class::Divergence);
}
