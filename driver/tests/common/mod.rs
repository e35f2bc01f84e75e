//! What the driver core's tests build from: the audit header of one payments run.

use resumable_audit::{Header, RunHeader};
use resumable_kernel::{Allowed, Identity, Name, Policy, Time};

/// The header of run `pay-1` of tenant `acme`, operator `ops`, every verdict allowed.
pub fn header() -> Header {
    Header {
        run: RunHeader {
            identity: Identity {
                tenant: Name::lit("acme"),
                session: Name::lit("s-1"),
                run: Name::lit("pay-1"),
                definition: Name::lit("payments@1"),
            },
            policy: Policy {
                operator: Name::lit("ops"),
                reconcile_window: 600,
                allowed: Allowed::ALL,
            },
            created_at: Time(0),
        },
        tools: None,
    }
}
