//! The rule each rejection enforces: one spec ID per rejection kind, so that every rejection
//! a trace shows, in text and in JSON, points a reader to the rule that refused the input.
//!
//! The match below has no wildcard arm: a new rejection kind does not compile until it names
//! its rule. The ID named is one of those the rejection table of `spec/lifecycle.md`
//! (section 8, "raised by") gives its row; `tests/rules.rs` holds the two to each other.

use resumable_kernel::{RejectionKind, SpecId};

/// The spec ID of the rule a rejection of this kind enforces. Where the table names several,
/// this is the rule a learner should read first: the one the rejection's own check states.
pub fn rule(kind: RejectionKind) -> SpecId {
    use RejectionKind as K;
    match kind {
        // 4.1: the guards every input meets.
        K::IdentityMismatch => SpecId::Id1,
        K::Terminal => SpecId::Inv1,
        K::ClockRegressed => SpecId::Clk1,
        K::RevisionExhausted => SpecId::Rev1,
        // 5 rows 1 to 3: the checkpoint's schema and digest.
        K::SchemaTooNew | K::UnknownSchema | K::MigrationRequired => SpecId::Ckp3,
        K::DigestMismatch => SpecId::Ckp2,
        // 5 rows 4 and 5, and 5.3: the revision and the resource, checked against the present.
        K::FutureRevision | K::StaleRevision | K::ResourceChanged => SpecId::Res3,
        K::AlreadyApplied | K::AlreadyResumed => SpecId::Res2,
        // 5 rows 6 to 9: the suspension the resume answers.
        K::NotSuspended | K::CheckpointMismatch => SpecId::Res4,
        K::Expired => SpecId::Res5,
        K::DecisionMismatch | K::WaitMismatch => SpecId::Res6,
        // 5.2: the approval.
        K::ApprovalMismatch => SpecId::Apr1,
        K::ApprovalExpired => SpecId::Apr2,
        K::SelfApproval | K::Unauthorised => SpecId::Apr3,
        K::PermissionRevoked | K::BudgetExhausted => SpecId::Res7,
        // 4.2 and 4.3: what a run may be asked in its phase.
        K::NotRunning => SpecId::Res1,
        K::AlreadySuspended => SpecId::Sus2,
        K::ExpiryNotInFuture => SpecId::Sus1,
        K::ExpiryUnreachable | K::ClockExhausted | K::NotExpired => SpecId::Exp1,
        // 4.9: binding a call.
        K::NoAttemptsAllowed | K::KeyConflict => SpecId::Key1,
        K::CallIdReused => SpecId::Key2,
        K::KeyCommitted | K::NothingUnresolved => SpecId::Rec4,
        // 4.2 and 4.5: a call in flight.
        K::DispatchInFlight | K::NoDispatchInFlight | K::ResultMismatch => SpecId::Wal2,
        K::NothingInFlight => SpecId::Rec1,
        K::CancelPending => SpecId::Can2,
        // 5.5: batches, and the decisions a policy allows.
        K::EmptyBatch | K::DuplicateInBatch => SpecId::Bat1,
        K::NoDecision | K::DuplicateDecision => SpecId::Bat2,
        K::EditKeyBound => SpecId::Bat5,
        K::DecisionNotAllowed | K::NoDecisionAllowed => SpecId::Pol1,
    }
}
