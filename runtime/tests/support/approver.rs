//! The approver every driver of these tests checks its requests against, and the driver's
//! configuration that names it.

use resumable_runtime::auth::{Parties, PartyKeys, SharedKey};
use resumable_runtime::driver::{Config, CrashPlan, Flavor};
use resumable_runtime::program::{Timing, APPROVER};
use resumable_runtime::store::{Request, RunKey, Store};

/// A correct driver named `owner`, with no lease, that checks the approver's seal.
pub fn config(owner: &str) -> Config {
    Config {
        owner: owner.to_string(),
        lease_ms: 0,
        timing: Timing::default(),
        flavor: Flavor::Correct,
        crash: CrashPlan::none(),
        key: None,
        parties: parties(),
    }
}

/// The approver's key.
pub fn approver_key() -> SharedKey {
    SharedKey::from_bytes([8; 32])
}

fn parties() -> Parties {
    Parties::Authenticated(PartyKeys::of([(APPROVER.to_string(), approver_key())]))
}

/// Puts the approver's `request` in run `key`'s inbox, sealed with its key.
pub fn approve(store: &mut dyn Store, key: &RunKey, request: &Request) -> u64 {
    let seal = approver_key().seal(key, APPROVER, request);
    store
        .submit_sealed(key, APPROVER, 0, request, Some(seal))
        .unwrap()
}
