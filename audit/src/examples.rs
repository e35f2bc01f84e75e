//! The examples kept in `spec/audit-examples/`, and the tools that take logs apart and put
//! them together again (for tests and forgeries): records read back, an unkeyed rechain, a
//! version 1 rendering. Re-exported from [`crate::sample`].

use crate::sample::{approval_log, approval_log_anchored, header, key, reconcile_log};
use crate::{Header, Key, Record};
use resumable_kernel::{Digest, Name, Revision};
use std::io;

/// The records of a version 2 log, read back without their MACs; `None` if a line is not one.
/// For tests and tools that take a log apart: it checks nothing (that is [`crate::validate`]).
pub fn records(log: &[u8]) -> Option<Vec<Record>> {
    let text = std::str::from_utf8(log).ok()?;
    text.lines()
        .skip(1)
        .map(|line| {
            let (body, _) = crate::chain::split_sealed(line)?;
            serde_json::from_str(&format!("{body}}}")).ok()
        })
        .collect()
}

/// A version 2 log's header and records; `None` if a line is not one. Checks nothing.
pub fn parse_log(log: &[u8]) -> Option<(Header, Vec<Record>)> {
    let text = std::str::from_utf8(log).ok()?;
    let (body, _) = crate::chain::split_sealed(text.lines().next()?)?;
    let object = format!("{body}}}");
    let head: crate::HeaderLine = serde_json::from_str(&object).ok()?;
    let header = Header {
        run: head.run,
        tools: head.tools,
    };
    Some((header, records(log)?))
}

/// Writes `records` as an unkeyed version 2 log under `header`, exactly as given (not through
/// the kernel), recomputing every MAC: what a forger without the key writes after editing
/// records of an unkeyed log.
pub fn rechain(header: &Header, records: &[Record]) -> Vec<u8> {
    let mut chain = crate::chain::Chain::new(None);
    let mut out = Vec::new();
    let head = crate::HeaderLine {
        format: crate::FORMAT,
        version: crate::VERSION,
        rules: Some(resumable_kernel::RULES_VERSION),
        chain: chain.kind(),
        key_id: None,
        run: header.run,
        tools: header.tools.clone(),
    };
    chain.seal(&serde_json::to_vec(&head).unwrap_or_default(), &mut out);
    for record in records {
        chain.seal(&serde_json::to_vec(record).unwrap_or_default(), &mut out);
    }
    out
}

/// The same history as a version 1 log: the header without chain, key or tools, and each
/// record with `prev`, the SHA-256 of the line before, instead of a MAC. What a runtime
/// that has not moved to version 2 writes.
pub fn to_v1(header: &Header, records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    let head = serde_json::json!({"format": crate::FORMAT, "version": 1, "run": header.run});
    let mut line = head.to_string();
    for r in records {
        let prev = Digest::of(line.as_bytes());
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
        let mut value = serde_json::to_value(r).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            map.insert("prev".into(), serde_json::Value::String(prev.to_string()));
        }
        line = value.to_string();
    }
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
    out
}

/// `log` with its line `n` (from 1) replaced by `with`, bytes otherwise unchanged.
fn replace_line(log: &[u8], n: usize, with: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, line) in log.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        out.extend_from_slice(if i + 1 == n { with } else { line });
        out.push(b'\n');
    }
    out
}

/// Line `n` (from 1) of `log`.
fn line_of(log: &[u8], n: usize) -> &[u8] {
    log.split(|&b| b == b'\n').nth(n - 1).unwrap_or_default()
}

/// Every example kept in `spec/audit-examples/`, by file name.
pub fn examples() -> io::Result<Vec<(&'static str, Vec<u8>)>> {
    let bad = || io::Error::other("a sample log did not parse");
    let (approval, anchor) = approval_log_anchored(Name::lit("run-approval"), Some(&key()))?;
    let reconcile = reconcile_log()?;
    let records = records(&approval).ok_or_else(bad)?;
    let v1 = to_v1(&header(Name::lit("run-approval")), &records);
    // An edited verdict: the stale-revision refusal on line 6 rewritten with other evidence,
    // its MAC left as it was.
    let edited = String::from_utf8_lossy(&approval).replacen(
        "\"rejection\":\"stale_revision\",\"current\":1,\"got\":0",
        "\"rejection\":\"stale_revision\",\"current\":1,\"got\":1",
        1,
    );
    let (version, next) = (crate::VERSION, crate::VERSION + 1);
    let unknown_version = String::from_utf8_lossy(&approval).replacen(
        &format!("\"version\":{version}"),
        &format!("\"version\":{next}"),
        1,
    );
    let forgeries = crate::forge::all()?;
    let forged = |name: &str| forgeries.iter().find(|f| f.name == name).ok_or_else(bad);
    let forger = Key::from_bytes([0x5a; 32]);
    let mut hex = [0u8; 64];
    Ok(vec![
        (
            "example.key",
            format!(
                "{}\n",
                Digest(*b"example key, public, never real!").to_hex(&mut hex)
            )
            .into_bytes(),
        ),
        ("approval.jsonl", approval.clone()),
        ("approval.anchor", anchor.to_json().into_bytes()),
        ("reconcile.jsonl", reconcile.clone()),
        ("approval-v1.jsonl", v1),
        ("tampered-edited-verdict.jsonl", edited.into_bytes()),
        (
            "tampered-forged-stale-resume.jsonl",
            forged_stale_resume(&forger)?,
        ),
        (
            "tampered-spliced.jsonl",
            replace_line(&reconcile, 4, line_of(&approval, 4)),
        ),
        (
            "forged-approval-erased.jsonl",
            crate::forge::rewritten_unkeyed(forged("approval-erased")?)?,
        ),
        (
            "forged-intervention-rewritten.jsonl",
            crate::forge::resealed(forged("intervention-rewritten")?, &forger)?,
        ),
        (
            "forged-truncated.jsonl",
            crate::forge::resealed(forged("truncated")?, &forger)?,
        ),
        (
            "malformed-unknown-version.jsonl",
            unknown_version.into_bytes(),
        ),
    ])
}

/// The approval log with a forged acceptance of a stale resume, sealed on by a forger with
/// its own key: the duplicate approval, which the kernel refuses, recorded as accepted, as if
/// it had resumed the same checkpoint a second time.
pub fn forged_stale_resume(forger: &Key) -> io::Result<Vec<u8>> {
    let bad = || io::Error::other("the approval log did not parse");
    let log = approval_log()?;
    let mut records = records(&log).ok_or_else(bad)?;
    let winner = records
        .iter()
        .position(|r| matches!(r.verdict, crate::Verdict::Accepted(a) if a.dispatch.is_some()))
        .ok_or_else(bad)?;
    let (won, duplicate) = (records[winner], *records.get(winner + 1).ok_or_else(bad)?);
    records.truncate(winner + 1);
    records.push(Record {
        revision: Revision(duplicate.revision.0 + 1),
        verdict: won.verdict,
        ..duplicate
    });
    // The forger keeps the lines before its change and seals its own with its own key.
    let kept: Vec<&[u8]> = log.split(|&b| b == b'\n').take(winner + 2).collect();
    let mut out = kept.join(&b'\n').to_vec();
    out.push(b'\n');
    let last =
        crate::chain::split_sealed(std::str::from_utf8(kept[winner + 1]).map_err(|_| bad())?)
            .ok_or_else(bad)?
            .1;
    let mut chain = crate::chain::Chain::resume(Some(forger), last);
    let object = serde_json::to_vec(&records[winner + 1]).map_err(io::Error::other)?;
    chain.seal(&object, &mut out);
    Ok(out)
}
