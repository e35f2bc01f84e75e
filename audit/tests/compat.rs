//! The compatibility corpus, `compat/`: logs and checkpoints exactly as earlier releases wrote
//! them, never regenerated. Every file is the one its checksum in `compat/SHA256SUMS` names;
//! every log gets the verdict pinned here; no genuine log of an earlier release is ever called
//! a divergence or malformed; a tampered one still is, where its format can prove it; and every
//! checkpoint the corpus holds decodes, its digest verified under its own schema.

use resumable_audit::json::decode_checkpoint;
use resumable_audit::{self as audit, Anchor, Finding, Key, Options, Summary, Unproven};
use resumable_kernel::checkpoint::Decoded;
use resumable_kernel::RULES_VERSION;
use sha2::{Digest as _, Sha256};
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(corpus().join(rel)).unwrap_or_else(|e| panic!("compat/{rel}: {e}"))
}

fn key(rel: &str) -> Key {
    Key::from_hex(&String::from_utf8_lossy(&read(rel))).unwrap()
}

fn anchor(rel: &str) -> Anchor {
    Anchor::from_json(&read(rel)).unwrap()
}

/// Every file of the corpus but its README, its checksums and its attributes, by path.
fn files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
            continue;
        }
        let rel = path
            .strip_prefix(corpus())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !["README.md", "SHA256SUMS", ".gitattributes"].contains(&rel.as_str()) {
            out.push(rel);
        }
    }
}

/// `compat/SHA256SUMS`: `HEX  PATH` lines, as `sha256sum` writes and checks them.
fn sums() -> Vec<(String, String)> {
    String::from_utf8(read("SHA256SUMS"))
        .unwrap()
        .lines()
        .map(|l| {
            let (hex, path) = l.split_once("  ").expect("a line is HEX, two spaces, PATH");
            (hex.to_string(), path.to_string())
        })
        .collect()
}

#[test]
fn every_corpus_file_is_byte_for_byte_what_its_release_wrote() {
    let sums = sums();
    let mut listed: Vec<String> = sums.iter().map(|(_, p)| p.clone()).collect();
    let mut found = Vec::new();
    files(&corpus(), &mut found);
    listed.sort();
    found.sort();
    assert_eq!(
        found, listed,
        "compat/ holds exactly the files compat/SHA256SUMS lists: a new release's files are \
         added with their checksums, and no file is ever removed"
    );
    for (hex, path) in &sums {
        let digest: [u8; 32] = Sha256::digest(read(path)).into();
        assert_eq!(
            &resumable_kernel::Digest(digest).to_string(),
            hex,
            "compat/{path} changed: the corpus holds what an earlier release wrote and is never \
             regenerated; restore it with `git checkout -- compat/{path}`"
        );
    }
    assert!(
        sums.len() >= 25,
        "the corpus was found ({} files)",
        sums.len()
    );
}

/// How a log of the corpus must validate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Every record judged, and it conforms.
    Conforming,
    /// Not judged from this line on.
    NotJudged(u64),
    /// A divergence on this line.
    Divergence(u64),
    /// Malformed on this line.
    Malformed(u64),
}

fn outcome(result: &Result<Summary, Finding>) -> Expect {
    match result {
        Ok(s) => match &s.not_judged {
            None => Expect::Conforming,
            Some(n) => Expect::NotJudged(n.line),
        },
        Err(f) if f.exit_code() == 2 => Expect::Malformed(f.line),
        Err(f) => Expect::Divergence(f.line),
    }
}

/// The options a log of the corpus is validated with: its release's key and anchor where the
/// corpus holds them.
fn options(path: &str) -> Options {
    let mut options = Options::default();
    if path.starts_with("604adaf/audit-examples/") && !path.ends_with("-v1.jsonl") {
        options.key = Some(key("604adaf/audit-examples/example.key"));
        if path.ends_with("/approval.jsonl") || path.ends_with("/forged-truncated.jsonl") {
            options.anchor = Some(anchor("604adaf/audit-examples/approval.anchor"));
        }
    }
    if path.starts_with("604adaf/store/") {
        options.key = Some(key("604adaf/store/demo.key"));
        options.anchor = Some(anchor("604adaf/store/run-approval.anchor"));
    }
    options
}

/// Every log of the corpus, whether a runtime could have written it (genuine) or it is one of
/// the tampered, forged or malformed examples that release kept, and the verdict it gets.
const LOGS: &[(&str, bool, Expect)] = &[
    // Release 717b2db: format 1, rules 2 (dispatches without a tool key, schema 2 checkpoints).
    (
        "717b2db/audit-examples/approval.jsonl",
        true,
        Expect::Conforming,
    ),
    (
        "717b2db/audit-examples/reconcile.jsonl",
        true,
        Expect::Conforming,
    ),
    // Its tampered examples: an edit and a splice break the chain of `prev` digests; the
    // forged acceptance of a stale resume, its chain recomputed, breaks RES-3.
    (
        "717b2db/audit-examples/tampered-edited-verdict.jsonl",
        false,
        Expect::Divergence(7),
    ),
    (
        "717b2db/audit-examples/tampered-forged-stale-resume.jsonl",
        false,
        Expect::Divergence(8),
    ),
    (
        "717b2db/audit-examples/tampered-spliced.jsonl",
        false,
        Expect::Divergence(4),
    ),
    // A format 2 header, unknown then, unsealed: malformed then and now.
    (
        "717b2db/audit-examples/malformed-unknown-version.jsonl",
        false,
        Expect::Malformed(1),
    ),
    // Release 604adaf: format 2, rules 3; with the examples' key and anchor.
    (
        "604adaf/audit-examples/approval.jsonl",
        true,
        Expect::Conforming,
    ),
    (
        "604adaf/audit-examples/approval-v1.jsonl",
        true,
        Expect::Conforming,
    ),
    (
        "604adaf/audit-examples/reconcile.jsonl",
        true,
        Expect::Conforming,
    ),
    (
        "604adaf/audit-examples/tampered-edited-verdict.jsonl",
        false,
        Expect::Divergence(6),
    ),
    (
        "604adaf/audit-examples/tampered-forged-stale-resume.jsonl",
        false,
        Expect::Divergence(8),
    ),
    (
        "604adaf/audit-examples/tampered-spliced.jsonl",
        false,
        Expect::Divergence(4),
    ),
    (
        "604adaf/audit-examples/forged-approval-erased.jsonl",
        false,
        Expect::Divergence(1),
    ),
    (
        "604adaf/audit-examples/forged-intervention-rewritten.jsonl",
        false,
        Expect::Divergence(9),
    ),
    (
        "604adaf/audit-examples/forged-truncated.jsonl",
        false,
        Expect::Divergence(9),
    ),
    // A format 3 header of that release's making, without the rules format 3 names.
    (
        "604adaf/audit-examples/malformed-unknown-version.jsonl",
        false,
        Expect::Malformed(1),
    ),
    // The log of a run suspended in a SQLite store by release 604adaf's runtime.
    ("604adaf/store/run-approval.jsonl", true, Expect::Conforming),
];

#[test]
fn every_corpus_log_gets_its_pinned_verdict() {
    let mut logs = Vec::new();
    files(&corpus(), &mut logs);
    logs.retain(|p| p.ends_with(".jsonl"));
    logs.sort();
    let mut pinned: Vec<String> = LOGS.iter().map(|(p, _, _)| p.to_string()).collect();
    pinned.sort();
    assert_eq!(
        logs, pinned,
        "every log of the corpus has a verdict pinned here"
    );
    for &(path, _, expect) in LOGS {
        let result = audit::validate(&read(path)[..], &options(path));
        assert_eq!(
            outcome(&result),
            expect,
            "compat/{path}:\n{}",
            audit::report_text(path, &result)
        );
    }
}

#[test]
fn no_genuine_log_of_an_earlier_release_is_called_tampered_or_malformed() {
    for &(path, _, _) in LOGS.iter().filter(|(_, genuine, _)| *genuine) {
        for options in [Options::default(), options(path)] {
            let result = audit::validate(&read(path)[..], &options);
            let said = outcome(&result);
            assert!(
                matches!(said, Expect::Conforming | Expect::NotJudged(_)),
                "compat/{path} is what a runtime wrote, and must conform or be reported not \
                 judged:\n{}",
                audit::report_text(path, &result)
            );
        }
    }
}

#[test]
fn a_log_of_rules_2_is_judged_in_its_own_shapes_and_says_what_that_cannot_prove() {
    let path = "717b2db/audit-examples/approval.jsonl";
    let s = audit::validate(&read(path)[..], &Options::default()).unwrap();
    assert_eq!(
        (s.version, s.rules, s.validator_rules),
        (1, None, RULES_VERSION)
    );
    assert_eq!((s.records, s.judged, s.accepted, s.commits), (9, 9, 4, 1));
    assert!(s.unproven.contains(&Unproven::OtherRules), "{s:?}");
    // The same log judged strictly by this validator's shapes would not read: line 2 carries
    // the schema 2 digest of the checkpoint, which this kernel digests in schema 3.
    let text = String::from_utf8(read(path)).unwrap();
    assert!(text.contains(
        "\"checkpoint\":\"6906715d03f25eec4b4ee05f1f4fb9cc086e96bd9d7cc7a414f3a4d2efbe01f1\""
    ));
}

#[test]
fn the_spec_quotes_the_report_on_a_log_of_rules_2() {
    let spec = std::fs::read_to_string(corpus().join("../spec/audit-log.md")).unwrap();
    let path = "717b2db/audit-examples/approval.jsonl";
    let result = audit::validate(&read(path)[..], &Options::default());
    let report = audit::report_text(&format!("compat/{path}"), &result);
    for line in report.lines() {
        assert!(
            spec.contains(line),
            "spec/audit-log.md does not quote: {line}"
        );
    }
}

/// `text` with the `prev` of every record after the first recomputed: what a forger of a
/// format 1 log writes after an edit.
fn rechain_v1(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some(last) = out.last() else {
            out.push(line.to_string());
            continue;
        };
        let prev = resumable_kernel::Digest::of(last.as_bytes()).to_string();
        let cut = line
            .rfind("\"prev\":\"")
            .expect("a format 1 record ends with prev");
        out.push(format!("{}\"prev\":\"{prev}\"}}", &line[..cut]));
    }
    out.join("\n") + "\n"
}

#[test]
fn a_tampered_log_of_an_earlier_release_is_still_a_divergence_where_its_format_proves_it() {
    let path = "717b2db/audit-examples/reconcile.jsonl";
    let genuine = String::from_utf8(read(path)).unwrap();
    assert_eq!(rechain_v1(&genuine), genuine, "the rechaining is faithful");
    // The operator's "committed" rewritten as "abandoned", its chain left alone: line 9 no
    // longer follows from line 8.
    let edited = genuine.replacen(
        "\"resolution\":{\"resolution\":\"committed\",\"result\":\"cc0f26cb8f0328c28daaa287669f87b948ae738e1a274c9d62a6ac0f7069bbd8\"}",
        "\"resolution\":{\"resolution\":\"abandoned\"}",
        1,
    );
    assert_ne!(edited, genuine);
    let f = audit::validate(edited.as_bytes(), &Options::default()).unwrap_err();
    assert_eq!((f.line, f.exit_code()), (10, 1), "{f}");
    // A record dropped and the chain recomputed: seq jumps.
    let mut lines: Vec<&str> = genuine.lines().collect();
    lines.remove(5);
    let dropped = rechain_v1(&(lines.join("\n") + "\n"));
    let f = audit::validate(dropped.as_bytes(), &Options::default()).unwrap_err();
    assert_eq!((f.line, f.exit_code()), (6, 1), "{f}");
    assert!(matches!(f.problem, audit::Problem::SeqGap { .. }), "{f}");
    // The same edit with the chain recomputed cannot be proven by an unkeyed log: the kernel
    // of rules 3 answers otherwise than the log, which may be the rules; it is not judged from
    // there, never called conforming.
    let rechained = rechain_v1(&edited);
    let s = audit::validate(rechained.as_bytes(), &Options::default()).unwrap();
    let n = s.not_judged.as_ref().expect("not judged");
    assert_eq!((n.line, s.judged, s.exit_code()), (9, 7, 3), "{s:?}");
    assert!(!s.conforming());
}

#[test]
fn a_log_of_unnamed_rules_keeps_to_the_shapes_its_first_records_showed() {
    // Line 2 of the reconcile log is a dispatch without a tool key: rules 1 or 2. A later
    // dispatch in the shape of rules 3 (a forger's, its chain recomputed) is in no shape of
    // the rules the log has shown: not judged from there.
    let genuine = String::from_utf8(read("717b2db/audit-examples/reconcile.jsonl")).unwrap();
    let line6 = genuine.lines().nth(5).unwrap();
    let with_key = line6.replacen(
        "\"key\":\"idem-2\",\"attempt\":0}}}",
        &format!(
            "\"key\":\"idem-2\",\"tool_key\":\"{}\",\"attempt\":0}}}}}}",
            "0".repeat(64)
        ),
        1,
    );
    assert_ne!(with_key, line6);
    let mixed = rechain_v1(&genuine.replacen(line6, &with_key, 1));
    let s = audit::validate(mixed.as_bytes(), &Options::default()).unwrap();
    let n = s.not_judged.as_ref().expect("not judged");
    assert_eq!((n.line, n.reason.code()), (6, "shape"), "{s:?}");
}

#[test]
fn a_log_of_newer_rules_is_not_judged_but_its_chain_and_anchor_are_checked() {
    let path = "604adaf/store/run-approval.jsonl";
    let store_key = key("604adaf/store/demo.key");
    // The store's log under a header naming rules this validator does not know, resealed
    // with the store's key, as a later release would write it.
    let text = String::from_utf8(read(path)).unwrap();
    let future = RULES_VERSION + 1;
    let mut chain = audit::chain::Chain::new(Some(&store_key));
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let (body, _) = audit::chain::split_sealed(line).unwrap();
        let body = if i == 0 {
            body.replacen(
                "\"version\":2,",
                &format!("\"version\":3,\"rules\":{future},"),
                1,
            )
        } else {
            body.to_string()
        };
        chain.seal(format!("{body}}}").as_bytes(), &mut out);
    }
    let anchor = Anchor {
        records: 1,
        mac: chain.last(),
    };
    let keyed = Options {
        key: Some(store_key),
        anchor: Some(anchor),
        ..Options::default()
    };
    let s = audit::validate(&out[..], &keyed).unwrap();
    let n = s.not_judged.as_ref().expect("not judged");
    assert_eq!((n.line, n.rules, s.judged), (1, Some(future), 0));
    assert!(s.authenticated && s.anchored, "{s:?}");
    assert_eq!(s.exit_code(), audit::NOT_JUDGED_EXIT);
    assert!(audit::report_json(path, &Ok(s.clone())).contains("\"status\":\"not_judged\""));
    // A byte changed in its record: the key still refuses it.
    let tampered = String::from_utf8(out.clone())
        .unwrap()
        .replacen("\"at\":", "\"at\": ", 1);
    let f = audit::validate(tampered.as_bytes(), &keyed).unwrap_err();
    assert_eq!((f.line, f.exit_code()), (2, 1), "{f}");
    assert!(
        matches!(f.problem, audit::Problem::MacMismatch { .. }),
        "{f}"
    );
    // Its record cut off: the anchor still tells.
    let header_only: Vec<u8> = out
        .split_inclusive(|&b| b == b'\n')
        .next()
        .unwrap()
        .to_vec();
    let f = audit::validate(&header_only[..], &keyed).unwrap_err();
    assert!(matches!(f.problem, audit::Problem::Truncated { .. }), "{f}");
}

/// Every checkpoint a JSON value holds: an object with a `schema_version` and a `digest`.
fn checkpoints_in(value: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    match value {
        serde_json::Value::Object(map) => {
            if map.contains_key("schema_version") && map.contains_key("digest") {
                out.push(value.clone());
            }
            map.values().for_each(|v| checkpoints_in(v, out));
        }
        serde_json::Value::Array(list) => list.iter().for_each(|v| checkpoints_in(v, out)),
        _ => {}
    }
}

#[test]
fn every_checkpoint_the_corpus_holds_decodes_with_its_digest_verified_under_its_schema() {
    let mut found = Vec::new();
    let mut sources = Vec::new();
    files(&corpus(), &mut sources);
    for path in sources
        .iter()
        .filter(|p| p.ends_with(".jsonl") || p.ends_with(".snap"))
    {
        if path.contains("tampered-") || path.contains("forged-") || path.contains("malformed-") {
            continue;
        }
        let text = String::from_utf8(read(path)).unwrap();
        for line in text.lines().filter(|l| l.starts_with('{')) {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let mut cps = Vec::new();
            checkpoints_in(&value, &mut cps);
            found.extend(
                cps.into_iter()
                    .map(|cp| (path.clone(), serde_json::to_vec(&cp).unwrap())),
            );
        }
    }
    found.push((
        "604adaf/store/checkpoint.json".into(),
        read("604adaf/store/checkpoint.json"),
    ));
    let (mut v2, mut v3) = (0, 0);
    for (path, bytes) in &found {
        let decoded = decode_checkpoint(bytes)
            .unwrap_or_else(|e| panic!("a checkpoint in compat/{path} does not decode: {e:?}"));
        match decoded {
            Decoded::Current(_) => v3 += 1,
            Decoded::Version2(cp) => {
                cp.migrate(None).unwrap_or_else(|e| {
                    panic!("a schema 2 checkpoint in compat/{path} does not verify: {e}")
                });
                v2 += 1;
            }
            Decoded::Version1(_) => panic!("compat/{path}: no release wrote schema 1 here"),
        }
    }
    // 717b2db's seed trace and logs hold schema 2 checkpoints; 604adaf's, schema 3.
    assert!(v2 >= 9 && v3 >= 10, "schema 2: {v2}, schema 3: {v3}");
}
