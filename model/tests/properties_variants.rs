//! Every broken variant of the reference machine is caught by a property it targets
//! (`Variant::targets`), in the configuration that exposes it (`Config::exposing`), while the
//! reference itself holds every property in that same configuration. A property that no
//! variant can break would pass vacuously; these tests show each one bites.

mod world_support;

use resumable_model::config::Config;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::World;
use stateright::{Expectation, Model};
use world_support::*;

/// The `always` properties of the world whose spec ID the variant targets.
fn targeted(world: &World<Reference>, variant: Variant) -> Vec<&'static str> {
    world
        .properties()
        .into_iter()
        .filter(|p| p.expectation == Expectation::Always)
        .map(|p| p.name)
        .filter(|name| {
            let id = name.split(' ').next().unwrap_or("");
            variant.targets().contains(&id)
        })
        .collect()
}

fn caught(variant: Variant) -> Vec<&'static str> {
    let world = World::new(
        Reference {
            variant: Some(variant),
        },
        Config::exposing(variant),
    )
    .expect("the exposing configuration is valid");
    let targets = targeted(&world, variant);
    assert!(
        !targets.is_empty(),
        "{variant}: no property of the world carries one of {:?}",
        variant.targets()
    );
    let mut found: Vec<&'static str> = hunt(world, &targets).into_iter().collect();
    found.sort();
    found
}

macro_rules! caught_by {
    ($($test:ident: $variant:ident;)*) => {$(
        #[test]
        fn $test() {
            let found = caught(Variant::$variant);
            assert!(
                !found.is_empty(),
                "{} was not caught by any property it targets",
                Variant::$variant
            );
        }
    )*};
}

caught_by! {
    no_revision_check_is_caught_by_a_stale_resume: NoRevisionCheck;
    double_suspend_is_caught_by_sus_2: DoubleSuspend;
    approval_not_bound_to_args_is_caught_by_apr_1: ApprovalNotBoundToArgs;
    retry_unknown_without_reconcile_is_caught_by_rec_2: RetryUnknownWithoutReconcile;
    retry_without_contract_is_caught_by_a_double_commit: RetryWithoutContract;
    retry_fresh_key_on_dedupe_is_caught_by_a_double_commit: RetryFreshKeyOnDedupe;
    retry_same_key_on_fence_is_caught_by_rec_3: RetrySameKeyOnFence;
    identity_after_revision_is_caught_by_id_1: IdentityAfterRevision;
    no_identity_check_is_caught_by_id_1: NoIdentityCheck;
    approvals_never_expire_are_caught_by_an_expired_decision: ApprovalsNeverExpire;
    self_approval_allowed_is_caught_by_apr_3: SelfApprovalAllowed;
    rerun_step_on_resume_is_caught_by_rec_4: RerunStepOnResume;
    deny_leaves_running_is_caught_by_apr_4: DenyLeavesRunning;
    no_expiry_is_caught_by_live_1: NoExpiry;
}

#[test]
fn every_variant_has_a_test_here() {
    // The macro above lists fourteen variants; a new variant must be added to it.
    assert_eq!(Variant::ALL.len(), 14);
}
