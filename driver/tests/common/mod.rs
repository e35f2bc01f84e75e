//! What the driver core's tests build from: the audit header of one payments run, and its
//! payments.

use resumable_audit::{Header, RunHeader};
use resumable_driver::plan::Proposal;
use resumable_kernel::{Allowed, Identity, Name, Policy, Time, ToolContract};

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

/// The payment tool's contract: it dedupes by key, three attempts.
pub fn dedupes() -> ToolContract {
    ToolContract {
        dedupes: true,
        query_fences: false,
        max_attempts: 3,
        ..ToolContract::default()
    }
}

/// The agent's proposal `call_id` to pay `amount` to `to` under `key`, put to `approver` (if
/// any) with a minute to decide.
pub fn payment(
    call_id: &str,
    key: &str,
    to: &str,
    amount: u64,
    approver: Option<&str>,
) -> Proposal {
    let args = format!(r#"{{"to":"{to}","amount":{amount}}}"#);
    let tool = "send_payment";
    Proposal::new(call_id, tool, &args, key, dedupes(), "agent", approver, 60).unwrap()
}
