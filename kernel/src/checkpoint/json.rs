//! Decoding a checkpoint from JSON bytes: the schema gate, then the digest, then the
//! explicit migration path for older versions (spec CKP-2, CKP-3).

use super::{Checkpoint, CheckpointV1, CheckpointV2, SCHEMA_V1, SCHEMA_V2, SCHEMA_VERSION};
use crate::ids::Digest;

use serde::Deserialize;

/// A checkpoint decoded from bytes: current, or old and awaiting an explicit migration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Decoded {
    /// A current checkpoint whose digest verified.
    Current(Checkpoint),
    /// A version 2 checkpoint: call [`CheckpointV2::migrate`] to resume from it.
    Version2(CheckpointV2),
    /// A version 1 checkpoint: call [`CheckpointV1::migrate`], then [`CheckpointV2::migrate`].
    Version1(CheckpointV1),
}

/// Why bytes could not be decoded as a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Not a JSON object of the expected shape.
    #[error("not a checkpoint: {category} error at line {line}, column {column}")]
    Malformed {
        /// What kind of JSON error.
        category: &'static str,
        /// The line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
    },
    /// Written by a newer kernel; this one cannot know its meaning.
    #[error("checkpoint schema {got} is newer than the supported {supported}")]
    SchemaTooNew {
        /// The newest version this kernel reads.
        supported: u16,
        /// The version found.
        got: u16,
    },
    /// A version this kernel never wrote (0).
    #[error("checkpoint schema {got} is unknown")]
    UnknownSchema {
        /// The version found.
        got: u16,
    },
    /// The digest does not match the fields.
    #[error("checkpoint digest mismatch: expected {expected}, found {found}")]
    DigestMismatch {
        /// The digest of the fields.
        expected: Digest,
        /// The digest carried.
        found: Digest,
    },
}

fn malformed(e: &serde_json::Error) -> DecodeError {
    use serde_json::error::Category;
    DecodeError::Malformed {
        category: match e.classify() {
            Category::Io => "io",
            Category::Syntax => "syntax",
            Category::Data => "data",
            Category::Eof => "eof",
        },
        line: e.line(),
        column: e.column(),
    }
}

/// Decodes a checkpoint from JSON: reads `schema_version` first, refuses a newer schema,
/// returns an older one for explicit migration, and verifies the digest of a current one.
pub fn decode_json(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    #[derive(Deserialize)]
    struct Header {
        schema_version: u16,
    }
    let header: Header = serde_json::from_slice(bytes).map_err(|e| malformed(&e))?;
    match header.schema_version {
        SCHEMA_VERSION => {
            let cp: Checkpoint = serde_json::from_slice(bytes).map_err(|e| malformed(&e))?;
            cp.verify()
                .map_err(|(expected, found)| DecodeError::DigestMismatch { expected, found })?;
            Ok(Decoded::Current(cp))
        }
        SCHEMA_V2 => {
            let cp: CheckpointV2 = serde_json::from_slice(bytes).map_err(|e| malformed(&e))?;
            Ok(Decoded::Version2(cp))
        }
        SCHEMA_V1 => {
            let cp: CheckpointV1 = serde_json::from_slice(bytes).map_err(|e| malformed(&e))?;
            Ok(Decoded::Version1(cp))
        }
        got if got > SCHEMA_VERSION => Err(DecodeError::SchemaTooNew {
            supported: SCHEMA_VERSION,
            got,
        }),
        got => Err(DecodeError::UnknownSchema { got }),
    }
}
