//! Checkpoint references: a resume may name a checkpoint the trace emitted (`"latest"`,
//! `{"emitted": 1}`), with changes, instead of spelling it out. Parsing writes a placeholder
//! and records the reference; replay resolves it against the checkpoints emitted so far.

use super::read::type_name;
use super::{CheckpointRef, Fill, Source};
use resumable_kernel::{
    Checkpoint, Digest, Identity, Intent, Name, ReasonKind, Revision, Time, SCHEMA_VERSION,
};
use serde_json::{Map, Value};

impl CheckpointRef {
    /// The checkpoint this reference names, with its changes applied.
    pub fn resolve(&self, emitted: &[Checkpoint]) -> Result<Checkpoint, String> {
        let base = match self.source {
            Source::Latest => emitted.last().copied().ok_or_else(|| {
                "no checkpoint has been emitted yet: \"latest\" needs an earlier suspension"
                    .to_string()
            })?,
            Source::Emitted(rev) => emitted
                .iter()
                .rev()
                .find(|c| c.revision == rev)
                .copied()
                .ok_or_else(|| {
                    let seen: Vec<String> =
                        emitted.iter().map(|c| c.revision.to_string()).collect();
                    format!(
                        "no checkpoint was emitted at {rev} (emitted so far: {})",
                        if seen.is_empty() {
                            "none".to_string()
                        } else {
                            seen.join(", ")
                        }
                    )
                })?,
        };
        if self.changes.is_empty() {
            return Ok(if self.reseal { base.seal() } else { base });
        }
        let mut value = serde_json::to_value(base)
            .map_err(|e| format!("cannot represent the checkpoint as JSON: {e}"))?;
        merge(&mut value, &self.changes, "")?;
        let changed: Checkpoint = serde_json::from_value(value)
            .map_err(|e| format!("the changed checkpoint is not a checkpoint: {e}"))?;
        Ok(if self.reseal { changed.seal() } else { changed })
    }

    /// The changes as `path=value` pairs, for the trace.
    pub fn describe_changes(&self) -> String {
        let mut out = Vec::new();
        flatten(&self.changes, "", &mut out);
        out.join(", ")
    }
}

fn flatten(map: &Map<String, Value>, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in map {
        match v {
            Value::Object(sub) if !sub.is_empty() => flatten(sub, &format!("{prefix}{k}."), out),
            Value::String(s) if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
                out.push(format!("{prefix}{k}={}..", &s[..8]))
            }
            Value::String(s) => out.push(format!("{prefix}{k}={s}")),
            other => out.push(format!("{prefix}{k}={other}")),
        }
    }
}

/// Merges `changes` into `target`: nested objects merge field by field, anything else
/// replaces. A field the checkpoint does not have is refused, so a typo cannot pass silently.
fn merge(target: &mut Value, changes: &Map<String, Value>, path: &str) -> Result<(), String> {
    let Value::Object(fields) = target else {
        return Err(format!("checkpoint field `{path}` is not an object"));
    };
    for (k, v) in changes {
        let Some(slot) = fields.get_mut(k) else {
            return Err(format!("unknown checkpoint field `{path}{k}`"));
        };
        match (slot, v) {
            (slot @ Value::Object(_), Value::Object(sub)) => {
                merge(slot, sub, &format!("{path}{k}."))?
            }
            (slot, v) => *slot = v.clone(),
        }
    }
    Ok(())
}

/// A checkpoint that stands in for a reference until replay resolves it.
fn placeholder_checkpoint() -> Checkpoint {
    const P: Name = Name::lit("placeholder");
    Checkpoint {
        schema_version: SCHEMA_VERSION,
        identity: Identity {
            tenant: P,
            session: P,
            run: P,
            definition: P,
        },
        revision: Revision(0),
        resource_version: 0,
        reason: ReasonKind::PendingApproval,
        next_intent: Intent::Dispatch,
        pending: None,
        key_digest: None,
        requester: None,
        waiting_on: None,
        batch: None,
        expires_at: Time(0),
        responsible: P,
        created_at: Time(0),
        cancel_requested_by: None,
        digest: Digest::default(),
    }
}

/// For a resume: replaces a checkpoint reference with a placeholder and fills the fields
/// that may be left out, recording what replay must fill in from the resolved checkpoint.
pub(super) fn resume_conveniences(written: &mut Value) -> Result<Fill, String> {
    let mut fill = Fill::default();
    let Value::Object(obj) = written else {
        return Ok(fill);
    };
    if obj.get("kind").and_then(Value::as_str) != Some("resume") {
        return Ok(fill);
    }
    if let Some(cp) = obj.get_mut("checkpoint") {
        if let Some(r) = checkpoint_ref(cp)? {
            fill.checkpoint = Some(r);
            *cp = serde_json::to_value(placeholder_checkpoint())
                .map_err(|e| format!("cannot write a placeholder checkpoint: {e}"))?;
        }
    }
    if let Some(Value::Object(d)) = obj.get_mut("decision") {
        let binds = matches!(
            d.get("decision").and_then(Value::as_str),
            Some("approve" | "deny")
        );
        if binds && !d.contains_key("revision") {
            d.insert("revision".into(), Value::from(0u64));
            fill.approval_revision = true;
        }
        if d.get("decision").and_then(Value::as_str) == Some("batch") {
            if let Some(Value::Array(decisions)) = d.get_mut("decisions") {
                for (i, each) in decisions.iter_mut().enumerate().take(8) {
                    if let Some(Value::Object(a)) = each.get_mut("approval") {
                        if !a.contains_key("revision") {
                            a.insert("revision".into(), Value::from(0u64));
                            fill.batch_revisions |= 1 << i;
                        }
                    }
                }
            }
        }
    }
    let facts = obj
        .entry("facts")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(f) = facts {
        if !f.contains_key("resource_version") {
            f.insert("resource_version".into(), Value::from(0u64));
            fill.facts_resource_version = true;
        }
        f.entry("permitted").or_insert(Value::Bool(true));
        f.entry("within_budget").or_insert(Value::Bool(true));
    }
    Ok(fill)
}

const REF_FORMS: &str =
    "\"latest\", {\"latest\": {changes}}, {\"emitted\": <revision>, \"changes\": {...}} \
     or a checkpoint written in full";

/// Reads a checkpoint reference; `None` for a checkpoint written in full.
fn checkpoint_ref(v: &Value) -> Result<Option<CheckpointRef>, String> {
    let obj = match v {
        Value::String(s) if s == "latest" => {
            return Ok(Some(CheckpointRef {
                source: Source::Latest,
                changes: Map::new(),
                reseal: true,
            }))
        }
        Value::String(s) => {
            return Err(format!(
                "checkpoint \"{s}\" is not a reference; a checkpoint is {REF_FORMS}"
            ))
        }
        Value::Object(obj) if obj.contains_key("latest") || obj.contains_key("emitted") => obj,
        _ => return Ok(None),
    };
    if let Some(k) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "latest" | "emitted" | "changes" | "reseal"))
    {
        return Err(format!(
            "unknown field `{k}` in a checkpoint reference; a checkpoint is {REF_FORMS}"
        ));
    }
    let (source, changes) = match (obj.get("latest"), obj.get("emitted")) {
        (Some(_), Some(_)) => {
            return Err("a checkpoint reference names \"latest\" or \"emitted\", not both".into())
        }
        (Some(latest), None) => {
            if obj.contains_key("changes") {
                return Err(
                    "with \"latest\", write the changes as its value: {\"latest\": {changes}}"
                        .into(),
                );
            }
            (Source::Latest, latest)
        }
        (None, Some(rev)) => {
            let rev = rev.as_u64().ok_or_else(|| {
                format!("\"emitted\" is a revision number, found {}", type_name(rev))
            })?;
            let changes = obj.get("changes").unwrap_or(&Value::Null);
            (Source::Emitted(Revision(rev)), changes)
        }
        (None, None) => return Ok(None),
    };
    let changes = match changes {
        Value::Object(c) => c.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(format!(
                "the changes to a checkpoint are an object of fields, found {}",
                type_name(other)
            ))
        }
    };
    let reseal = match obj.get("reseal") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "\"reseal\" is true or false, found {}",
                type_name(other)
            ))
        }
    };
    if reseal && changes.contains_key("digest") {
        return Err(
            "a changed digest would be overwritten by resealing; add \"reseal\": false".into(),
        );
    }
    Ok(Some(CheckpointRef {
        source,
        changes,
        reseal,
    }))
}
