//! Shared keys: who may use the tool service. A key file holds 32 bytes as 64 hex digits, as
//! an audit key does; the service sends each new connection a fresh challenge, and a client
//! proves it holds the key by answering with the HMAC-SHA-256 of the challenge under it.
//! Nothing that crosses the connection lets a listener answer another challenge.

use crate::bounded;
use hmac::{Hmac, KeyInit, Mac};
use resumable_kernel::Digest;
use sha2::Sha256;
use std::path::Path;

/// What the proof is a MAC of, before the challenge: so that a proof made for the tool
/// service can never pass for any other MAC made with the same key.
const LABEL: &[u8] = b"resumable tool-service client\0";

/// A shared secret, read from a key file.
#[derive(Clone)]
pub struct SharedKey([u8; 32]);

impl std::fmt::Debug for SharedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedKey(..)")
    }
}

impl SharedKey {
    /// The key in a key file (64 hex digits; at most [`bounded::KEY_FILE_BYTES`] read); with
    /// `make`, a fresh one is written first (0600) if the file does not exist.
    pub fn read(path: &Path, make: bool) -> Result<SharedKey, String> {
        let shown = path.display();
        if make && !path.exists() {
            crate::lifecycle::write_key(path, random()?)?;
        }
        let bytes = bounded::read_file(path, bounded::KEY_FILE_BYTES)
            .map_err(|e| format!("{shown}: {e}"))?;
        let text = String::from_utf8(bytes).map_err(|_| format!("{shown}: not text"))?;
        let hex = text.trim_end_matches(['\n', '\r']);
        Digest::from_hex(hex)
            .map(|d| SharedKey(d.0))
            .map_err(|e| format!("{shown}: a key file holds 64 hex digits (32 bytes): {e}"))
    }

    /// A key from its bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> SharedKey {
        SharedKey(bytes)
    }

    fn mac(&self) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(LABEL);
        mac
    }

    /// The proof that answers `challenge`.
    pub fn prove(&self, challenge: &Digest) -> Digest {
        let mut mac = self.mac();
        mac.update(&challenge.0);
        Digest(mac.finalize().into_bytes().into())
    }

    /// Whether `proof` answers `challenge` (compared in constant time).
    pub fn verify(&self, challenge: &Digest, proof: &Digest) -> bool {
        let mut mac = self.mac();
        mac.update(&challenge.0);
        mac.verify_slice(&proof.0).is_ok()
    }
}

/// 32 bytes from the operating system's random source.
pub fn random() -> Result<[u8; 32], String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_answers_its_challenge_under_its_key_only() {
        let (a, b) = (SharedKey([1; 32]), SharedKey([2; 32]));
        let (c1, c2) = (Digest([7; 32]), Digest([8; 32]));
        let proof = a.prove(&c1);
        assert!(a.verify(&c1, &proof));
        assert!(!a.verify(&c2, &proof), "another challenge");
        assert!(!b.verify(&c1, &proof), "another key");
    }
}
