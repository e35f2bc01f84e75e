//! Checkpoints: the verifiable snapshot a suspension hands to the outside world, its digest,
//! its schema versions and the explicit migration from the older one (spec CKP-*).

#[cfg(feature = "json")]
mod json;
mod legacy;

#[cfg(feature = "json")]
pub use json::{decode_json, DecodeError, Decoded};
pub use legacy::{CheckpointV1, CheckpointV2, MigrationError};

use crate::batch::Batch;
use crate::ids::{Digest, IdempotencyKey, Name, Revision, Text, Time};
use crate::run::{Identity, Reason, ReasonKind, Run};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// The schema version this kernel writes and resumes from.
pub const SCHEMA_VERSION: u16 = 3;
/// The previous schema version (no pending cancel), readable only through
/// [`CheckpointV2::migrate`].
pub const SCHEMA_V2: u16 = 2;
/// The oldest schema version, readable only through [`CheckpointV1::migrate`].
pub const SCHEMA_V1: u16 = 1;

/// Where a resume re-enters the run.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Intent {
    /// Dispatch the pending call once approved.
    Dispatch,
    /// Continue the run's own steps.
    Continue,
    /// Reconcile the in-flight call by query before anything else.
    Reconcile,
}

/// The call a checkpoint holds: awaiting approval, or in flight with an unknown outcome.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct PendingCall {
    /// The call's identifier.
    pub call_id: Name,
    /// The tool.
    pub tool: Name,
    /// The argument digest.
    pub args: Digest,
    /// The attempt number.
    pub attempt: u8,
}

/// A checkpoint at the current schema (version 3).
///
/// `digest` covers every other field in a fixed binary encoding; [`Checkpoint::verify`]
/// recomputes it. An unkeyed digest detects corruption and careless edits, not a forger who
/// recomputes it: that is why a resume also compares the checkpoint with the run.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Checkpoint {
    /// The schema version; [`SCHEMA_VERSION`] for a checkpoint this kernel can resume from.
    pub schema_version: u16,
    /// Who the run belongs to.
    pub identity: Identity,
    /// The state revision the checkpoint was taken at.
    pub revision: Revision,
    /// The resource version the run last observed.
    pub resource_version: u64,
    /// Why the run is suspended.
    pub reason: ReasonKind,
    /// Where a resume re-enters.
    pub next_intent: Intent,
    /// The call awaiting approval or in flight, if any.
    pub pending: Option<PendingCall>,
    /// The digest of the pending call's idempotency key, bound to its arguments.
    pub key_digest: Option<Digest>,
    /// Who asked for the pending call, for an approval.
    pub requester: Option<Name>,
    /// The callback or resource awaited, if any.
    pub waiting_on: Option<Name>,
    /// When the suspension expires.
    pub expires_at: Time,
    /// Who must act.
    pub responsible: Name,
    /// When the checkpoint was made.
    pub created_at: Time,
    /// Who cancelled while the pending call's outcome is unsettled: the cancel takes effect
    /// once it is settled (spec CAN-2).
    pub cancel_requested_by: Option<Name>,
    /// For a batch awaiting decisions, the digest of its calls (spec 5.5); absent otherwise,
    /// and then absent on the wire and from the digest, so every other checkpoint is written
    /// and sealed exactly as before.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub batch: Option<Digest>,
    /// The digest over all the fields above.
    pub digest: Digest,
}

/// Feeds fields into SHA-256 in a fixed, self-delimiting encoding, without allocating.
struct Encoder(sha2::Sha256);

impl Encoder {
    fn new(domain: &[u8]) -> Encoder {
        use sha2::Digest as _;
        let mut hasher = sha2::Sha256::new();
        hasher.update(domain);
        Encoder(hasher)
    }
    fn bytes(&mut self, b: &[u8]) {
        use sha2::Digest as _;
        self.0.update(b);
    }
    fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_be_bytes());
    }
    fn name<const N: usize>(&mut self, n: &Text<N>) {
        // The length byte, then the bytes, zero-padded to the legacy width when shorter: the
        // encoding every name that fitted the old width always had.
        n.encode(|b| self.bytes(b));
    }
    fn opt_name(&mut self, n: &Option<Name>) {
        match n {
            Some(n) => {
                self.u8(1);
                self.name(n);
            }
            None => self.u8(0),
        }
    }
    fn digest(&mut self, d: &Digest) {
        self.bytes(&d.0);
    }
    fn opt_digest(&mut self, d: &Option<Digest>) {
        match d {
            Some(d) => {
                self.u8(1);
                self.digest(d);
            }
            None => self.u8(0),
        }
    }
    fn pending(&mut self, p: &Option<PendingCall>) {
        match p {
            Some(p) => {
                self.u8(1);
                self.name(&p.call_id);
                self.name(&p.tool);
                self.digest(&p.args);
                self.u8(p.attempt);
            }
            None => self.u8(0),
        }
    }
    /// The fields versions 1 and 2 share, after the identity and revision.
    fn suspension_fields(&mut self, f: &SharedFields<'_>) {
        self.u8(f.reason as u8);
        self.u8(f.next_intent as u8);
        self.pending(f.pending);
        self.opt_digest(f.key_digest);
        self.opt_name(f.requester);
        self.opt_name(f.waiting_on);
        self.u64(f.expires_at.0);
        self.name(f.responsible);
        self.u64(f.created_at.0);
    }
    fn identity(&mut self, id: &Identity) {
        self.name(&id.tenant);
        self.name(&id.session);
        self.name(&id.run);
        self.name(&id.definition);
    }
    fn finish(self) -> Digest {
        use sha2::Digest as _;
        Digest(self.0.finalize().into())
    }
}

struct SharedFields<'a> {
    reason: ReasonKind,
    next_intent: Intent,
    pending: &'a Option<PendingCall>,
    key_digest: &'a Option<Digest>,
    requester: &'a Option<Name>,
    waiting_on: &'a Option<Name>,
    expires_at: Time,
    responsible: &'a Name,
    created_at: Time,
}

/// Digests the key of a call bound to its argument digest (spec KEY-1): the same key with
/// other arguments yields another digest.
pub fn key_digest(key: &IdempotencyKey, args: &Digest) -> Digest {
    let mut e = Encoder::new(b"resumable/key\0");
    e.name(key);
    e.digest(args);
    e.finish()
}

/// The digest of a batch's calls as proposed, as its checkpoint carries it (spec 5.5): the
/// count, then for each call in order its id, tool, proposed arguments, the key digest of its
/// key and those arguments, and its requester. An edit recorded later does not change it.
pub fn batch_digest<D: Copy>(batch: &Batch<D>) -> Digest {
    let mut e = Encoder::new(b"resumable/batch\0");
    e.u64(batch.slots.len() as u64);
    for slot in batch.slots.iter() {
        e.name(&slot.call.call.call_id);
        e.name(&slot.call.call.tool);
        e.digest(&slot.proposed);
        e.digest(&key_digest(&slot.call.call.key, &slot.proposed));
        e.name(&slot.requester);
    }
    e.finish()
}

/// The idempotency key the driver sends to the tool: the run's identity and the call's key
/// together (spec KEY-3), so that two runs using the same key never share the tool's dedupe
/// record or its fence.
pub fn tool_key(identity: &Identity, key: &IdempotencyKey) -> Digest {
    let mut e = Encoder::new(b"resumable/tool-key\0");
    e.identity(identity);
    e.name(key);
    e.finish()
}

impl Checkpoint {
    /// The checkpoint of a suspended run, sealed with its digest; `None` if not suspended.
    pub fn of(run: &Run) -> Option<Checkpoint> {
        let mut cp = Checkpoint::unsealed(run)?;
        cp.digest = cp.compute_digest();
        Some(cp)
    }

    /// The checkpoint of a suspended run with a zero digest: what a resume compares against,
    /// field by field, without paying for a hash.
    pub(crate) fn unsealed(run: &Run) -> Option<Checkpoint> {
        let s = run.suspension()?;
        let open_batch = match (&s.reason, &run.batch) {
            (Reason::PendingBatch, Some(b)) => Some(&b.calls),
            _ => None,
        };
        let (next_intent, requester, waiting_on) = match s.reason {
            Reason::PendingApproval { requester, .. } => (Intent::Dispatch, Some(requester), None),
            Reason::ExternalCallback { callback } => (Intent::Continue, None, Some(callback)),
            Reason::ResourceWait { resource } => (Intent::Continue, None, Some(resource)),
            Reason::ManualIntervention { .. } => (Intent::Continue, None, None),
            Reason::OutcomeUnknown { .. } => (Intent::Reconcile, None, None),
            Reason::PendingBatch => (Intent::Dispatch, None, None),
        };
        let call = s.reason.call();
        Some(Checkpoint {
            schema_version: SCHEMA_VERSION,
            identity: run.identity,
            // A batch's decisions all bind to the checkpoint it opened with (spec BAT-2).
            revision: open_batch.map_or(run.revision, |b| b.opened),
            resource_version: open_batch.map_or(run.resource_version, |b| b.resource_version),
            reason: s.reason.kind(),
            next_intent,
            pending: call.map(|(c, attempt)| PendingCall {
                call_id: c.call.call_id,
                tool: c.call.tool,
                args: c.call.args,
                attempt,
            }),
            key_digest: call.map(|(c, _)| c.key_digest),
            requester,
            waiting_on,
            expires_at: s.expires_at,
            responsible: s.responsible,
            created_at: s.since,
            cancel_requested_by: s.reason.cancelled_by(),
            batch: open_batch.map(batch_digest),
            digest: Digest::default(),
        })
    }

    /// The digest over every field but `digest`, in the version 3 encoding: the version 2
    /// fields, then the pending cancel.
    pub fn compute_digest(&self) -> Digest {
        let mut e = Encoder::new(b"resumable/checkpoint/3\0");
        e.u64(u64::from(self.schema_version));
        e.identity(&self.identity);
        e.u64(self.revision.0);
        e.u64(self.resource_version);
        e.suspension_fields(&self.shared());
        e.opt_name(&self.cancel_requested_by);
        if let Some(batch) = &self.batch {
            e.digest(batch);
        }
        e.finish()
    }

    /// Recomputes the digest and compares it with the one carried.
    pub fn verify(&self) -> Result<(), (Digest, Digest)> {
        let expected = self.compute_digest();
        if expected == self.digest {
            Ok(())
        } else {
            Err((expected, self.digest))
        }
    }

    /// Sets `digest` to the digest of the other fields.
    pub fn seal(mut self) -> Checkpoint {
        self.digest = self.compute_digest();
        self
    }

    fn shared(&self) -> SharedFields<'_> {
        SharedFields {
            reason: self.reason,
            next_intent: self.next_intent,
            pending: &self.pending,
            key_digest: &self.key_digest,
            requester: &self.requester,
            waiting_on: &self.waiting_on,
            expires_at: self.expires_at,
            responsible: &self.responsible,
            created_at: self.created_at,
        }
    }
}
