//! Shared keys: who may use the tool service, and who a party is. A key file holds 32 bytes
//! as 64 hex digits, as an audit key does.
//!
//! - The tool service sends each new connection a fresh challenge, and a client proves it
//!   holds the service's key by answering with the HMAC-SHA-256 of the challenge under it.
//!   Nothing that crosses the connection lets a listener answer another challenge.
//! - A party (an approver, an operator, a callback's sender) seals each request it puts in a
//!   run's inbox with its own key ([`SharedKey::seal`]); a driver is always told whose word
//!   it takes ([`Parties`], no default): holding the parties' keys ([`PartyKeys`]), it feeds
//!   the kernel only requests sealed by the party that sent them and naming no one else, and
//!   answers any other `unauthenticated` without a record.

use crate::bounded;
use crate::store::{Inbox, Request, RunKey};
use hmac::{Hmac, KeyInit, Mac};
use resumable_kernel::{Decision, Digest, Name};
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

/// What a party's seal is a MAC of, before the request: so that a seal can never pass for
/// a tool service's proof or an audit log's MAC made with the same key.
const DECISION_LABEL: &[u8] = b"resumable party request\0";

impl SharedKey {
    /// The seal of `request` sent by `party` to run `run`: HMAC-SHA-256 under the party's
    /// key of a fixed label, the run's key, the party's name and the request's JSON.
    pub fn seal(&self, run: &RunKey, party: &str, request: &Request) -> Digest {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(DECISION_LABEL);
        for part in [run.0.as_bytes(), party.as_bytes()] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.update(&serde_json::to_vec(request).unwrap_or_default());
        Digest(mac.finalize().into_bytes().into())
    }
}

/// Whose word a driver takes for who sent a request. There is no default: a driver is told,
/// and the reference worker takes [`Parties::Unauthenticated`] only when its operator says
/// so explicitly (`--unauthenticated-parties`).
#[derive(Clone, Debug)]
pub enum Parties {
    /// Feed the kernel only requests sealed by the party that sent them and naming no one
    /// else ([`PartyKeys::check`]); answer any other `unauthenticated`, without a record.
    Authenticated(PartyKeys),
    /// Feed every request, whatever party it names, sealed or not: for a deployment that
    /// authenticates parties in front of the store (its own login, a store role per party).
    Unauthenticated,
}

/// Most party key files a keyring reads.
pub const MAX_PARTIES: usize = 1024;

/// The keys of the parties a worker accepts requests from: a directory of key files, one per
/// party, `NAME.key`.
#[derive(Clone, Debug, Default)]
pub struct PartyKeys {
    keys: std::collections::BTreeMap<String, SharedKey>,
}

impl PartyKeys {
    /// Reads every `NAME.key` in `dir` (at most [`MAX_PARTIES`]).
    pub fn load(dir: &Path) -> Result<PartyKeys, String> {
        let shown = dir.display();
        let mut keys = std::collections::BTreeMap::new();
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{shown}: {e}"))?;
        for entry in entries {
            let path = entry.map_err(|e| format!("{shown}: {e}"))?.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".key"))
            else {
                continue;
            };
            if keys.len() == MAX_PARTIES {
                return Err(format!("{shown}: more than {MAX_PARTIES} party keys"));
            }
            keys.insert(name.to_string(), SharedKey::read(&path, false)?);
        }
        Ok(PartyKeys { keys })
    }

    /// A keyring of the given keys.
    pub fn of(keys: impl IntoIterator<Item = (String, SharedKey)>) -> PartyKeys {
        PartyKeys {
            keys: keys.into_iter().collect(),
        }
    }

    /// Whether `request` is what it says: sealed under the key of the party that sent it,
    /// and naming no party other than that one. `responsible` is the party the run waits on,
    /// as the kernel says ([`resumable_kernel::Run::next`]): a callback names no party, so
    /// only that party may send it. `Err` says why not.
    pub fn check(
        &self,
        run: &RunKey,
        request: &Inbox,
        responsible: Option<&Name>,
    ) -> Result<(), String> {
        let party = request.party.as_str();
        let Some(key) = self.keys.get(party) else {
            return Err(format!("no key for party {party:?}"));
        };
        let Some(seal) = request.seal else {
            return Err(format!(
                "request #{} from {party} is not sealed",
                request.id
            ));
        };
        let expected = key.seal(run, party, &request.request);
        if !constant_time_eq(&expected.0, &seal.0) {
            return Err(format!(
                "request #{} is not sealed under {party}'s key",
                request.id
            ));
        }
        let named = match &request.request {
            Request::Cancel { by } => Some(by),
            Request::Resume { decision, .. } => match decision {
                Decision::Approve(a) | Decision::Deny(a) => Some(&a.approver),
                Decision::Intervene { by, .. } => Some(by),
                // Every decision of a batch names its approver: each must be the sender.
                Decision::Batch { decisions } => decisions
                    .iter()
                    .map(|d| &d.approval.approver)
                    .find(|a| a.as_str() != party)
                    .or(responsible),
                _ => responsible,
            },
        };
        match named {
            Some(name) if name.as_str() != party => Err(format!(
                "request #{} from {party} speaks for {name}",
                request.id
            )),
            _ => Ok(()),
        }
    }
}

/// Whether `a` and `b` are equal, in time that does not depend on where they differ.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
    fn a_request_passes_only_sealed_by_its_sender_and_naming_no_one_else() {
        let run = RunKey("t/s/r".into());
        let (ops, mallory) = (SharedKey([1; 32]), SharedKey([2; 32]));
        let keys = PartyKeys::of([
            ("ops".to_string(), ops.clone()),
            ("mallory".into(), mallory.clone()),
        ]);
        let cancel = |by: &str| Request::Cancel { by: Name::lit(by) };
        let inbox = |party: &str, request: Request, seal: Option<Digest>| Inbox {
            id: 1,
            key: run.clone(),
            party: party.into(),
            submitted_ms: 0,
            request,
            answer: None,
            seal,
        };
        let good = inbox(
            "ops",
            cancel("ops"),
            Some(ops.seal(&run, "ops", &cancel("ops"))),
        );
        assert_eq!(keys.check(&run, &good, None), Ok(()));
        let unsealed = inbox("ops", cancel("ops"), None);
        assert!(keys
            .check(&run, &unsealed, None)
            .unwrap_err()
            .contains("not sealed"));
        let forged = inbox(
            "ops",
            cancel("ops"),
            Some(mallory.seal(&run, "ops", &cancel("ops"))),
        );
        assert!(keys
            .check(&run, &forged, None)
            .unwrap_err()
            .contains("not sealed under ops"));
        let other_run = inbox(
            "ops",
            cancel("ops"),
            Some(ops.seal(&RunKey("t/s/x".into()), "ops", &cancel("ops"))),
        );
        assert!(keys.check(&run, &other_run, None).is_err());
        let speaks_for = inbox(
            "mallory",
            cancel("ops"),
            Some(mallory.seal(&run, "mallory", &cancel("ops"))),
        );
        assert!(keys
            .check(&run, &speaks_for, None)
            .unwrap_err()
            .contains("speaks for ops"));
        let stranger = inbox(
            "eve",
            cancel("eve"),
            Some(mallory.seal(&run, "eve", &cancel("eve"))),
        );
        assert!(keys
            .check(&run, &stranger, None)
            .unwrap_err()
            .contains("no key"));
    }

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
