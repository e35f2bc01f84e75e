//! Every forgery of `audit::forge`: with the run's key (and the anchor, for a cut tail) it is
//! refused on the first line it changed, as a divergence; rewritten as an unkeyed log and
//! validated without a key, it is either still caught by the property it breaks or conforms
//! with the report saying what an unkeyed log cannot prove; and with the anchor, every unkeyed
//! rewrite is caught at the end of the log.

use resumable_audit::{self as audit, forge, sample, Key, Options, Problem, Unproven, Verdict};
use resumable_kernel::{RejectionKind, SpecId};

fn forger() -> Key {
    Key::from_bytes([0x5a; 32])
}

fn with_key_and_anchor(f: &forge::Forgery) -> Options {
    Options {
        key: Some(sample::key()),
        anchor: Some(f.original.anchor),
        ..Options::default()
    }
}

#[test]
fn there_is_a_forgery_of_every_class() {
    let names: Vec<&str> = forge::all().unwrap().iter().map(|f| f.name).collect();
    for class in [
        "refused-dropped",
        "refused-swapped",
        "refused-duplicated",
        "approval-erased",
        "key-recommitted-no-dedupe",
        "key-recommitted-dedupe",
        "intervention-rewritten",
        "result-digest-changed",
        "completion-digest-changed",
        "refused-party-renamed",
        "operator-changed",
        "truncated",
        "last-line-edited",
    ] {
        assert!(names.contains(&class), "{class} missing from {names:?}");
    }
}

#[test]
fn the_original_logs_conform_with_their_key_and_anchor_and_prove_everything() {
    for f in forge::all().unwrap() {
        let o = &f.original;
        let s = audit::validate(&o.log[..], &with_key_and_anchor(&f)).unwrap();
        assert!(s.authenticated && s.anchored, "{}", f.name);
        assert_eq!(s.unproven, vec![], "{}", f.name);
    }
}

#[test]
fn with_the_key_every_forgery_is_refused_on_the_first_line_it_changed() {
    for f in forge::all().unwrap() {
        let log = forge::resealed(&f, &forger()).unwrap();
        let finding = audit::validate(&log[..], &with_key_and_anchor(&f))
            .expect_err(&format!("{} passed with the key", f.name));
        assert_eq!(finding.exit_code(), 1, "{}: {finding}", f.name);
        assert_eq!(finding.line, f.caught_on_line(), "{}: {finding}", f.name);
        let expected = match f.kept() {
            Some(kept) if kept == f.inputs.len() => {
                matches!(finding.problem, Problem::Truncated { .. })
            }
            // A forged header names the forger's key, or keeps the run's key id and fails
            // its MAC: either way line 1 is refused.
            None => matches!(
                finding.problem,
                Problem::KeyMismatch { .. } | Problem::MacMismatch { .. }
            ),
            _ => matches!(finding.problem, Problem::MacMismatch { .. }),
        };
        assert!(expected, "{}: {finding}", f.name);
    }
}

#[test]
fn with_the_key_but_no_anchor_only_the_cut_tail_passes_and_the_report_says_so() {
    for f in forge::all().unwrap() {
        let log = forge::resealed(&f, &forger()).unwrap();
        let keyed = Options {
            key: Some(sample::key()),
            ..Options::default()
        };
        match audit::validate(&log[..], &keyed) {
            Ok(s) => {
                assert_eq!(f.name, "truncated", "{} passed with the key", f.name);
                assert_eq!(s.unproven, vec![Unproven::NoAnchor]);
            }
            Err(finding) => assert_eq!(finding.line, f.caught_on_line(), "{}", f.name),
        }
    }
}

#[test]
fn rewritten_unkeyed_each_forgery_is_caught_by_its_property_or_reported_unproven() {
    for f in forge::all().unwrap() {
        let log = forge::rewritten_unkeyed(&f).unwrap();
        let result = audit::validate(&log[..], &Options::default());
        match (f.unkeyed_caught_by, result) {
            (None, Ok(s)) => {
                assert!(s.unproven.contains(&Unproven::Unkeyed), "{}", f.name);
                let report = audit::report_text("f", &Ok(s));
                assert!(report.contains("unproven: the log is unkeyed"), "{report}");
            }
            (Some(id), Err(finding)) => {
                // Named by the whole-log property, or refused by the kernel itself for the
                // same rule: a committed key is never dispatched again (REC-4).
                let by_kernel = |e: &Verdict| matches!(e, Verdict::Rejected(r) if id == SpecId::Rec4 && r.kind() == RejectionKind::KeyCommitted);
                assert!(
                    match &finding.problem {
                        Problem::Property { id: found, .. } => *found == id,
                        Problem::VerdictDiverges { expected, .. } => by_kernel(expected),
                        _ => false,
                    },
                    "{}: expected {id}, got {finding}",
                    f.name
                );
                assert_eq!(finding.exit_code(), 1);
            }
            (expected, got) => panic!("{}: expected {expected:?}, got {got:?}", f.name),
        }
    }
}

#[test]
fn rewritten_unkeyed_each_forgery_is_refused_by_the_key_on_line_1() {
    for f in forge::all().unwrap() {
        let log = forge::rewritten_unkeyed(&f).unwrap();
        let keyed = Options {
            key: Some(sample::key()),
            ..Options::default()
        };
        let finding = audit::validate(&log[..], &keyed).unwrap_err();
        assert_eq!(finding.line, 1, "{}", f.name);
        assert_eq!(
            finding.problem,
            Problem::NotKeyed {
                version: audit::VERSION
            },
            "{}",
            f.name
        );
    }
}

#[test]
fn rewritten_unkeyed_each_forgery_misses_the_anchor() {
    for f in forge::all().unwrap() {
        if f.unkeyed_caught_by.is_some() {
            continue; // caught earlier, by its property
        }
        let log = forge::rewritten_unkeyed(&f).unwrap();
        // The anchor of the genuine history, written unkeyed: what the runtime stored.
        let genuine = forge::Forgery {
            header: f.original.header.clone(),
            inputs: f.original.inputs.clone(),
            ..f.clone()
        };
        let genuine_log = forge::rewritten_unkeyed(&genuine).unwrap();
        let summary = audit::validate(&genuine_log[..], &Options::default()).unwrap();
        let anchor = audit::Anchor {
            records: summary.records,
            mac: last_mac(&genuine_log),
        };
        let anchored = Options {
            anchor: Some(anchor),
            ..Options::default()
        };
        assert!(audit::validate(&genuine_log[..], &anchored).is_ok());
        let finding = audit::validate(&log[..], &anchored).unwrap_err();
        assert!(
            matches!(
                finding.problem,
                Problem::AnchorMismatch { .. }
                    | Problem::Truncated { .. }
                    | Problem::PastAnchor { .. }
            ),
            "{}: {finding}",
            f.name
        );
    }
}

/// The MAC at the end of a log's last line.
fn last_mac(log: &[u8]) -> resumable_kernel::Digest {
    let text = std::str::from_utf8(log).unwrap().trim_end();
    let last = text.lines().last().unwrap();
    resumable_kernel::Digest::from_hex(&last[last.len() - 66..last.len() - 2]).unwrap()
}
