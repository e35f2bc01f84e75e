//! The seam between this runtime and the kernel, the driver core and the audit-log crate.
//! Every call into their APIs goes through the few functions here, so a change on their side
//! (a fallible `Run::new`, a keyed audit chain, a tool key carried by the dispatch) is absorbed
//! in one place. The driving contract itself (the time an input is stamped with, the priors
//! it states, the step and its audit record) is the driver core's ([`stage`]).

use crate::store::{Row, RunKey, Store, StoreError};
use resumable_audit::{self as audit, Record, RunHeader};
use resumable_driver::{Core, Held, Ledger, StageError, Staged};
use resumable_kernel::{Call, Digest, Event, IdempotencyKey, Identity, Prior, Time};
use serde::{Deserialize, Serialize};

/// The end of a run's audit log: the last record's number (0: the header alone) and the
/// digest of the last line. Stored with the run, it anchors the log: a log cut short at a
/// line boundary no longer ends where the anchor says.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Tail {
    /// The last record's `seq`; 0 when only the header is written.
    pub seq: u64,
    /// SHA-256 of the last line, without its LF.
    pub digest: Digest,
}

/// The store's key for a run: its identity, so two tenants' runs of the same name never meet.
pub fn run_key(identity: &Identity) -> RunKey {
    RunKey(format!(
        "{}/{}/{}",
        identity.tenant, identity.session, identity.run
    ))
}

/// The key the tool sees for a call, as text: the kernel's tool key (KEY-3), the call's
/// idempotency key bound to the run's identity, so that two runs using the same key (every
/// run of one program does) are two keys to the tool. The kernel's `Dispatch` carries the
/// same digest; this recomputes it for a call known only from the run.
pub fn tool_key(identity: &Identity, key: &IdempotencyKey) -> String {
    resumable_kernel::checkpoint::tool_key(identity, key).to_string()
}

pub use resumable_audit::{Key, KeyId, ToolPolicy};

/// The id of the key that seals a log, as its header (line 1, without its LF) names it;
/// `None` for a log chained by SHA-256 alone.
pub fn header_key_id(header: &[u8]) -> Result<Option<KeyId>, String> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(default)]
        key_id: Option<KeyId>,
    }
    serde_json::from_slice::<Probe>(header)
        .map(|p| p.key_id)
        .map_err(|e| format!("the log's header is unreadable: {e}"))
}

/// A new run from its header, and line 1 of its audit log (the format's header: the run, its
/// tool policy and the kernel's rules, sealed under `key`, or chained by SHA-256 without one),
/// without its LF, with the anchor it leaves.
pub fn open(
    header: &RunHeader,
    tools: Vec<ToolPolicy>,
    key: Option<&Key>,
) -> Result<(resumable_kernel::Run, Vec<u8>, Tail), String> {
    let full = audit::Header {
        run: *header,
        tools: Some(tools),
    };
    let (held, line) = Held::open(&full, key)?;
    Ok((held.run, line, tail_of(held.anchor)))
}

fn tail_of(anchor: audit::Anchor) -> Tail {
    Tail {
        seq: anchor.records,
        digest: anchor.mac,
    }
}

/// The row as the driver core reads it: the run, its log's end, its latest checkpoint.
pub fn held(row: &Row) -> Held {
    Held {
        run: row.run,
        anchor: audit::Anchor {
            records: row.tail.seq,
            mac: row.tail.digest,
        },
        checkpoint: row.checkpoint,
    }
}

/// The log's end a staged step leaves, as the store keeps it.
pub fn tail_after(staged: &Staged) -> Tail {
    tail_of(staged.anchor)
}

/// The run's call history as the core looks it up: the store's history table.
struct History<'a> {
    store: &'a mut dyn Store,
    key: &'a RunKey,
}

impl Ledger for History<'_> {
    type Error = StoreError;
    fn prior(&mut self, call: &Call) -> Result<Prior, StoreError> {
        self.store.prior(self.key, call)
    }
}

/// Steps `row` with `event` fed at `now` (ms) through the driver core: stamped with the
/// driver's time (CLK-1), every call it binds stating the prior the store's history holds,
/// and its audit record made under `core`'s key. Nothing is written.
pub fn stage(
    core: &Core,
    store: &mut dyn Store,
    row: &Row,
    now: u64,
    event: Event,
) -> Result<Box<Staged>, StageError<StoreError>> {
    let mut history = History {
        store,
        key: &row.key,
    };
    core.stage(&held(row), Time(now), event, &mut history)
}

/// Validates a whole log (lines with their LF) with the audit-log validator: every line's MAC
/// under `key`, and the log's end against the anchor stored with the run. A log whose records
/// were not all judged (written under other rules) is not a conforming one, and is an error
/// here too.
pub fn validate_log(log: &[u8], anchor: Tail, key: Option<&Key>) -> Result<audit::Summary, String> {
    let options = audit::Options {
        key: key.cloned(),
        anchor: Some(audit::Anchor {
            records: anchor.seq,
            mac: anchor.digest,
        }),
        ..audit::Options::default()
    };
    match audit::validate(log, &options) {
        Ok(summary) if summary.conforming() => Ok(summary),
        result => Err(audit::report_text("log", &result).trim().to_string()),
    }
}

/// Reads an audit key file (64 hex digits, at most [`crate::bounded::KEY_FILE_BYTES`]
/// bytes read); with `make`, first writes one with a fresh key from the operating system's
/// random source if the file does not exist, readable and writable by its owner alone (0600).
pub fn read_key(path: &std::path::Path, make: bool) -> Result<Key, String> {
    let shown = path.display();
    if make && !path.exists() {
        use std::io::Read;
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        write_key(path, bytes)?;
    }
    let bytes = crate::bounded::read_file(path, crate::bounded::KEY_FILE_BYTES)
        .map_err(|e| format!("{shown}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{shown}: not text"))?;
    Key::from_hex(&text).map_err(|e| format!("{shown}: {e}"))
}

/// Writes a key file holding `key` as 64 hex digits, readable and writable by its owner
/// alone (0600; an existing file is made so before the key is written to it).
pub fn write_key(path: &std::path::Path, key: [u8; 32]) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let shown = path.display();
    let hex = Digest(key).to_string() + "\n";
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{shown}: {e}"))?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|()| file.write_all(hex.as_bytes()))
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("{shown}: {e}"))
}

pub use resumable_audit::{Accepted, Verdict};

/// A party's decision on one call, in the frameworks' words (approve, edit, reject, respond,
/// deny), as the driver core maps them onto the kernel's verdicts.
pub use resumable_driver::party::Word;
/// What a party is shown: the calls it decides and the checkpoint its decision binds to, as
/// the driver core binds every decision.
pub use resumable_driver::plan::{Asked, Request as Asking};

/// A party's `words` on calls of `asking`, each naming its call, bound by the driver core to
/// each call as the party was shown it (APR-1, BAT-2): for a batch, one batch decision of
/// those calls; for the one call of a single approval, its approval or denial. Returns the
/// checkpoint and the decision the party's request carries.
pub fn decide(
    asking: &Asking,
    batch: bool,
    words: &[(String, Word)],
    approver: resumable_kernel::Name,
    expires_at: Time,
) -> Result<(resumable_kernel::Checkpoint, resumable_kernel::Decision), String> {
    use resumable_driver::party;
    let answer = if batch {
        party::decide_calls(asking, words, approver, expires_at)
            .map_err(|e| e.to_string())?
            .0
    } else {
        let approve = match words {
            [(_, Word::Approve)] => true,
            [(_, Word::Deny)] => false,
            _ => return Err("a call awaiting approval alone is approved or denied".into()),
        };
        party::approval(asking, approve, approver, expires_at)
            .ok_or_else(|| "no call awaits a decision".to_string())?
    };
    Ok((answer.checkpoint, answer.decision))
}

/// Reads one record line back (for the torture's checks): the record without its MAC.
pub fn parse_record(line: &[u8]) -> Result<Record, String> {
    let text = std::str::from_utf8(line).map_err(|e| e.to_string())?;
    let body = audit::chain::split_sealed(text).map_or(text, |(body, _)| body);
    let object = format!("{body}}}");
    serde_json::from_str(&object)
        .or_else(|_| serde_json::from_str(text))
        .map_err(|e| e.to_string())
}
