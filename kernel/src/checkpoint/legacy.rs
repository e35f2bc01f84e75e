//! Checkpoints of earlier schema versions, never resumed from directly: each migrates to the
//! next with the facts it lacks supplied explicitly (spec CKP-3).

use super::{
    Checkpoint, Encoder, Intent, PendingCall, SharedFields, SCHEMA_V1, SCHEMA_V2, SCHEMA_VERSION,
};
use crate::ids::{Digest, Name, Revision, Time};
use crate::run::{Identity, ReasonKind};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// A checkpoint at schema version 2, which did not record a pending cancel. It is never
/// resumed from directly: [`CheckpointV2::migrate`] turns it into a current checkpoint, with
/// the pending cancel supplied explicitly.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct CheckpointV2 {
    /// Always [`SCHEMA_V2`].
    pub schema_version: u16,
    /// Who the run belongs to.
    pub identity: Identity,
    /// The state revision.
    pub revision: Revision,
    /// The resource version.
    pub resource_version: u64,
    /// Why the run is suspended.
    pub reason: ReasonKind,
    /// Where a resume re-enters.
    pub next_intent: Intent,
    /// The pending call.
    pub pending: Option<PendingCall>,
    /// The key digest.
    pub key_digest: Option<Digest>,
    /// The requester.
    pub requester: Option<Name>,
    /// The callback or resource awaited.
    pub waiting_on: Option<Name>,
    /// The expiry.
    pub expires_at: Time,
    /// The responsible party.
    pub responsible: Name,
    /// The creation time.
    pub created_at: Time,
    /// The version 2 digest.
    pub digest: Digest,
}

/// A checkpoint at schema version 1, which had no definition fingerprint and no resource
/// version. It is never resumed from directly: [`CheckpointV1::migrate`] turns it into a
/// current checkpoint, with the missing facts supplied explicitly.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct CheckpointV1 {
    /// Always [`SCHEMA_V1`].
    pub schema_version: u16,
    /// The tenant.
    pub tenant: Name,
    /// The session.
    pub session: Name,
    /// The run.
    pub run: Name,
    /// The state revision.
    pub revision: Revision,
    /// Why the run is suspended.
    pub reason: ReasonKind,
    /// Where a resume re-enters.
    pub next_intent: Intent,
    /// The pending call.
    pub pending: Option<PendingCall>,
    /// The key digest.
    pub key_digest: Option<Digest>,
    /// The requester.
    pub requester: Option<Name>,
    /// The callback or resource awaited.
    pub waiting_on: Option<Name>,
    /// The expiry.
    pub expires_at: Time,
    /// The responsible party.
    pub responsible: Name,
    /// The creation time.
    pub created_at: Time,
    /// The version 1 digest.
    pub digest: Digest,
}

/// Why a version 1 checkpoint could not be migrated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MigrationError {
    /// The checkpoint does not claim the version this migration reads.
    #[error("migration reads schema version {expected}, got {got}")]
    NotVersion {
        /// The version the migration reads.
        expected: u16,
        /// The version it claims.
        got: u16,
    },
    /// Its digest does not match its fields.
    #[error("checkpoint digest mismatch: expected {expected}, found {found}")]
    DigestMismatch {
        /// The digest of the fields.
        expected: Digest,
        /// The digest it carries.
        found: Digest,
    },
}

impl CheckpointV2 {
    /// The digest over every field but `digest`, in the version 2 encoding.
    pub fn compute_digest(&self) -> Digest {
        let mut e = Encoder::new(b"resumable/checkpoint/2\0");
        e.u64(u64::from(self.schema_version));
        e.identity(&self.identity);
        e.u64(self.revision.0);
        e.u64(self.resource_version);
        e.suspension_fields(&SharedFields {
            reason: self.reason,
            next_intent: self.next_intent,
            pending: &self.pending,
            key_digest: &self.key_digest,
            requester: &self.requester,
            waiting_on: &self.waiting_on,
            expires_at: self.expires_at,
            responsible: &self.responsible,
            created_at: self.created_at,
        });
        e.finish()
    }

    /// Sets `digest` to the version 2 digest of the other fields.
    pub fn seal(mut self) -> CheckpointV2 {
        self.digest = self.compute_digest();
        self
    }

    /// Migrates to the current schema. Version 2 did not record a pending cancel, so the
    /// caller supplies it (`None` if nobody cancelled): nothing is guessed. The version 2
    /// digest is verified first and the result is sealed with a version 3 digest.
    pub fn migrate(&self, cancel_requested_by: Option<Name>) -> Result<Checkpoint, MigrationError> {
        if self.schema_version != SCHEMA_V2 {
            return Err(MigrationError::NotVersion {
                expected: SCHEMA_V2,
                got: self.schema_version,
            });
        }
        let expected = self.compute_digest();
        if expected != self.digest {
            return Err(MigrationError::DigestMismatch {
                expected,
                found: self.digest,
            });
        }
        Ok(Checkpoint {
            schema_version: SCHEMA_VERSION,
            identity: self.identity,
            revision: self.revision,
            resource_version: self.resource_version,
            reason: self.reason,
            next_intent: self.next_intent,
            pending: self.pending,
            key_digest: self.key_digest,
            requester: self.requester,
            waiting_on: self.waiting_on,
            expires_at: self.expires_at,
            responsible: self.responsible,
            created_at: self.created_at,
            cancel_requested_by,
            batch: None,
            digest: Digest::default(),
        }
        .seal())
    }
}

impl CheckpointV1 {
    /// The digest over every field but `digest`, in the version 1 encoding.
    pub fn compute_digest(&self) -> Digest {
        let mut e = Encoder::new(b"resumable/checkpoint/1\0");
        e.u64(u64::from(self.schema_version));
        e.name(&self.tenant);
        e.name(&self.session);
        e.name(&self.run);
        e.u64(self.revision.0);
        e.suspension_fields(&SharedFields {
            reason: self.reason,
            next_intent: self.next_intent,
            pending: &self.pending,
            key_digest: &self.key_digest,
            requester: &self.requester,
            waiting_on: &self.waiting_on,
            expires_at: self.expires_at,
            responsible: &self.responsible,
            created_at: self.created_at,
        });
        e.finish()
    }

    /// Sets `digest` to the version 1 digest of the other fields.
    pub fn seal(mut self) -> CheckpointV1 {
        self.digest = self.compute_digest();
        self
    }

    /// Migrates to schema version 2, from which [`CheckpointV2::migrate`] leads to the
    /// current one. Version 1 did not record the run's definition or the resource version, so
    /// the caller supplies both: nothing is guessed. The version 1 digest is verified first
    /// and the result is sealed with a version 2 digest.
    pub fn migrate(
        &self,
        definition: Name,
        resource_version: u64,
    ) -> Result<CheckpointV2, MigrationError> {
        if self.schema_version != SCHEMA_V1 {
            return Err(MigrationError::NotVersion {
                expected: SCHEMA_V1,
                got: self.schema_version,
            });
        }
        let expected = self.compute_digest();
        if expected != self.digest {
            return Err(MigrationError::DigestMismatch {
                expected,
                found: self.digest,
            });
        }
        Ok(CheckpointV2 {
            schema_version: SCHEMA_V2,
            identity: Identity {
                tenant: self.tenant,
                session: self.session,
                run: self.run,
                definition,
            },
            revision: self.revision,
            resource_version,
            reason: self.reason,
            next_intent: self.next_intent,
            pending: self.pending,
            key_digest: self.key_digest,
            requester: self.requester,
            waiting_on: self.waiting_on,
            expires_at: self.expires_at,
            responsible: self.responsible,
            created_at: self.created_at,
            digest: Digest::default(),
        }
        .seal())
    }
}
