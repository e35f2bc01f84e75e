//! Line 1 of a log: its format and version first, then the rules it was written under, then
//! the header of its version, strictly when this validator reads the rules' shapes.
//!
//! - Format 1: `format`, `version`, `run`; no MAC (the records chain by `prev`), no rules.
//! - Format 2: `format`, `version`, `chain`, `key_id`, `run`, `tools`, `mac`; no rules field,
//!   and every release that wrote it decided by rules 3.
//! - Format 3: format 2 with `rules` after `version`.

use crate::chain::{split_sealed, Chain, ChainKind, KeyId, SEAL_LEN};
use crate::finding::{at, Finding, Problem};
use crate::properties::ToolTable;
use crate::rules::{Dialects, RULES_OF_FORMAT_2};
use crate::validate::{parse, unseal, Options, Sealing};
use crate::{HeaderLine, RunHeader, FORMAT, VERSIONS_READ};
use resumable_kernel::{Digest, RULES_VERSION};
use serde::de::IgnoredAny;
use serde::Deserialize;

/// How the records of a log are judged, as its header decides.
pub(crate) enum Judging {
    /// By this validator's kernel, strictly: the log's rules are its own.
    Strict,
    /// By this validator's kernel, reading the shapes of the log's other (or unnamed) rules
    /// in one of `Dialects`; a disagreement ends the judging, not the validation.
    Lenient(Dialects),
    /// Not at all: this validator reads no shape of the log's rules.
    Not,
}

/// What the header tells the validation.
pub(crate) struct Start {
    pub(crate) version: u64,
    /// The rules the header names or implies; `None` for format 1.
    pub(crate) rules: Option<u16>,
    pub(crate) judging: Judging,
    /// The run, when the header is read in a shape of its rules.
    pub(crate) run: Option<RunHeader>,
    pub(crate) sealing: Sealing,
    pub(crate) tools: Option<ToolTable>,
    pub(crate) key_id: Option<KeyId>,
}

fn data(message: &str) -> Finding {
    let (category, message) = ("data", message.to_string());
    at(1, None, Problem::Json { category, message })
}

/// Reads the header: format and version first, so an unknown version is named as such rather
/// than as whatever shape a future version has; then the rules; then the version's header.
pub(crate) fn read(text: &str, options: &Options) -> Result<Start, Finding> {
    #[derive(Deserialize)]
    struct Probe {
        format: String,
        version: u64,
        #[serde(default)]
        rules: Option<u16>,
    }
    let probe: Probe = parse(text, 1)?;
    if probe.format != FORMAT {
        let format = probe.format;
        return Err(at(1, None, Problem::NotAnAuditLog { format }));
    }
    let rules = match (probe.version, probe.rules) {
        (1, None) => None,
        (2, None) => Some(RULES_OF_FORMAT_2),
        (3, Some(r)) if r >= 1 => Some(r),
        (1 | 2, Some(_)) => return Err(data("a format 1 or 2 header names no rules")),
        (3, _) => return Err(data("a format 3 header names its rules, a number from 1")),
        (found, _) => {
            let supported = VERSIONS_READ;
            return Err(at(1, None, Problem::UnknownVersion { found, supported }));
        }
    };
    let judging = match rules {
        // Rules 5 only added to rules 4, and rules 6 changed only verdicts a rules-4 log cannot
        // hold (a batch, a narrowed policy): a rules-4 log is judged as strictly as one of its
        // own. A rules-5 log is read as written, and judged until its kernel answers otherwise.
        Some(RULES_VERSION | 4) => Judging::Strict,
        Some(r) if Dialects::of_rules(r).is_empty() => Judging::Not,
        Some(r) => Judging::Lenient(Dialects::of_rules(r)),
        None => Judging::Lenient(Dialects::all()),
    };
    let (run, sealing, tools, key_id) = match probe.version {
        1 => {
            let prev = Digest::of(text.as_bytes());
            (Some(read_v1(text)?), Sealing::V1 { prev }, None, None)
        }
        _ => sealed(text, options, &judging)?,
    };
    if options.key.is_some() && key_id.is_none() {
        let version = probe.version;
        return Err(at(1, None, Problem::NotKeyed { version }));
    }
    Ok(Start {
        version: probe.version,
        rules,
        judging,
        run,
        sealing,
        tools,
        key_id,
    })
}

/// The format 1 header: `format`, `version` and `run`, nothing else.
fn read_v1(text: &str) -> Result<RunHeader, Finding> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(
        dead_code,
        reason = "format and version are read by the probe; here they are only allowed"
    )]
    struct Full {
        format: IgnoredAny,
        version: IgnoredAny,
        run: RunHeader,
    }
    let full: Full = parse(text, 1)?;
    Ok(full.run)
}

type Sealed = (Option<RunHeader>, Sealing, Option<ToolTable>, Option<KeyId>);

/// A format 2 or 3 header: sealed, with its chain and key id; its run and tool policy read
/// strictly when the rules' shapes are read, and otherwise only the run, if it reads.
fn sealed(text: &str, options: &Options, judging: &Judging) -> Result<Sealed, Finding> {
    let Some((body, _)) = split_sealed(text) else {
        let column = Some(text.len().saturating_sub(SEAL_LEN) as u64 + 1);
        return Err(at(1, column, Problem::Unsealed));
    };
    let object = format!("{body}}}");
    let (chain, key_id, run, tools) = match judging {
        Judging::Strict | Judging::Lenient(_) => {
            let head: HeaderLine = parse(&object, 1)?;
            (head.chain, head.key_id, Some(head.run), head.tools)
        }
        Judging::Not => {
            // The header of rules this validator does not read: the format's fields in their
            // places, the run and the tools in whatever shape their rules give them.
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            #[expect(dead_code, reason = "read by the probe; here they are only allowed")]
            struct Opaque {
                format: IgnoredAny,
                version: IgnoredAny,
                rules: IgnoredAny,
                chain: ChainKind,
                #[serde(default)]
                key_id: Option<KeyId>,
                run: serde_json::Value,
                #[serde(default)]
                tools: Option<IgnoredAny>,
            }
            let head: Opaque = parse(&object, 1)?;
            let run = serde_json::from_value(head.run).ok();
            (head.chain, head.key_id, run, None)
        }
    };
    if (chain == ChainKind::HmacSha256) != key_id.is_some() {
        return Err(data(
            "a header names a key_id exactly when its chain is hmac-sha256",
        ));
    }
    let verify = match (&options.key, key_id) {
        (Some(key), Some(found)) if key.id() != found => {
            let expected = key.id();
            return Err(at(1, None, Problem::KeyMismatch { expected, found }));
        }
        (Some(_), Some(_)) | (None, None) => true,
        (_, _) => false,
    };
    let mut chain = Chain::new(options.key.as_ref().filter(|_| key_id.is_some()));
    unseal(text, 1, &mut chain, verify)?;
    let tools = match &tools {
        Some(list) => {
            Some(ToolTable::new(list).map_err(|what| at(1, None, Problem::Policy { what }))?)
        }
        None => None,
    };
    Ok((run, Sealing::Sealed { chain, verify }, tools, key_id))
}
