//! Every broken variant of the reference machine is caught by a property it targets
//! (`Variant::targets`), in the configuration that exposes it (`Config::exposing`), while the
//! reference itself holds every property in that same configuration. A property that no
//! variant can break would pass vacuously; these tests show each one bites.

mod world_support;

use resumable_kernel::SpecId;
use resumable_model::checker::Checkable;
use resumable_model::config::Config;
use resumable_model::driving::Driving;
use resumable_model::properties::names;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::{Ending, RunView, World};
use resumable_model::Kernel;
use stateright::Expectation;
use world_support::*;

/// The `always` properties of the world whose spec ID the variant targets.
fn targeted(world: &World<Reference>, variant: Variant) -> Vec<&'static str> {
    let list = world
        .property_list()
        .expect("the world's properties are partnered");
    (variant.targets().iter())
        .flat_map(|id| list.names_of(*id, Expectation::Always))
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
    identity_ignores_tenant_is_caught_by_id_1: IdentityIgnoresTenant;
    identity_ignores_session_is_caught_by_id_1: IdentityIgnoresSession;
    identity_ignores_run_is_caught_by_id_1: IdentityIgnoresRun;
    identity_ignores_definition_is_caught_by_id_1: IdentityIgnoresDefinition;
    approvals_never_expire_are_caught_by_an_expired_decision: ApprovalsNeverExpire;
    self_approval_allowed_is_caught_by_apr_3: SelfApprovalAllowed;
    rerun_step_on_resume_is_caught_by_rec_4: RerunStepOnResume;
    deny_leaves_running_is_caught_by_apr_4: DenyLeavesRunning;
    no_expiry_is_caught_by_live_1: NoExpiry;
    resource_blocks_answers_is_caught_by_live_2: ResourceBlocksAnswers;
    approval_ignores_resource_is_caught_by_res_3: ApprovalIgnoresResource;
    cancel_lost_on_escalation_is_caught_by_can_2: CancelLostOnEscalation;
    cancel_ends_unsettled_is_caught_by_eff_2: CancelEndsUnsettled;
    last_call_only_key_check_is_caught_by_key_1_or_rec_4: LastCallOnlyKeyCheck;
    self_named_approver_is_caught_by_apr_3: SelfNamedApprover;
    cancel_not_checkpointed_is_caught_by_can_2: CancelNotCheckpointed;
    cancel_expiry_forgets_effect_is_caught_by_can_2: CancelExpiryForgetsEffect;
    late_result_recorded_is_caught_by_inv_1: LateResultRecorded;
    resume_record_from_checkpoint_is_caught_by_aud_1: ResumeRecordFromCheckpoint;
    escalation_keeps_deadline_is_caught_by_sus_1: EscalationKeepsDeadline;
    batch_decision_wrong_call_is_caught_by_bat_2: BatchDecisionWrongCall;
    batch_one_approval_for_all_is_caught_by_bat_2: BatchOneApprovalForAll;
    rejected_dispatched_is_caught_by_bat_3: RejectedDispatched;
    edit_ignored_is_caught_by_bat_5: EditIgnored;
    dispatch_under_bare_key_is_caught_by_key_3: DispatchUnderBareKey;
}

/// Each probe of one identity field catches exactly the variant that ignores that field,
/// and the honest reference and kernel hold ID-1 there; a world whose runs differ in
/// tenant, session and run at once (`two-tenants`) catches none of them.
#[test]
fn each_identity_field_is_probed_alone() {
    for (ignoring, _) in Variant::ONE_FIELD {
        let two_tenants = (Config::suite().into_iter())
            .find(|(n, _)| *n == "two-tenants")
            .expect("a world of the default check")
            .1;
        let world = World::new(Reference::broken(ignoring), two_tenants).unwrap();
        assert!(
            !reachable(&world)
                .iter()
                .any(|s| s.violated.has(SpecId::Id1)),
            "{ignoring} is caught where every field differs"
        );
        for (variant, field) in Variant::ONE_FIELD {
            let world = World::new(Reference::broken(ignoring), Config::cross_run(field)).unwrap();
            let caught = reachable(&world)
                .iter()
                .any(|s| s.violated.has(SpecId::Id1));
            assert_eq!(
                caught,
                variant == ignoring,
                "{ignoring} in a world differing in {field}"
            );
        }
    }
    for (_, field) in Variant::ONE_FIELD {
        let config = Config::cross_run(field);
        let reference = World::new(Reference::new(), config).unwrap();
        let kernel = World::new(Kernel, config).unwrap();
        assert!(!reachable(&reference)
            .iter()
            .any(|s| s.violated.has(SpecId::Id1)));
        assert!(!reachable(&kernel)
            .iter()
            .any(|s| s.violated.has(SpecId::Id1)));
    }
}

/// Two runs on one resource: one run's payment moves the account under the other run's
/// pending approval, with no outsider. The variant that resumes an approval without
/// comparing the resource (RES-3) is caught there, the same world with a resource for each
/// run catches nothing, and the honest reference and kernel hold RES-3 where the move
/// happens (LIVE-2's partner, a decision arriving after the resource moved, is reached).
#[test]
fn one_run_s_commit_moves_the_resource_under_the_other_s_approval() {
    let shared = Config::shared();
    assert_eq!(shared.outsider_moves, 0);
    let caught = |config| {
        let world = World::new(Reference::broken(Variant::ApprovalIgnoresResource), config);
        reachable(&world.unwrap())
            .iter()
            .any(|s| s.violated.has(SpecId::Res3))
    };
    assert!(caught(shared), "approval-ignores-resource not caught");
    let apart = Config {
        shared_resource: false,
        ..shared
    };
    assert!(!caught(apart), "caught with a resource for each run");
    for explored in [
        explore(World::new(Reference::new(), shared).unwrap()),
        explore(World::new(Kernel, shared).unwrap()),
    ] {
        assert!(explored.violations().is_empty(), "{:?}", explored.failed);
        assert!(explored.discovered.contains(names::RESOURCE_MOVED));
    }
    let apart = explore(World::new(Kernel, apart).unwrap());
    assert!(!apart.discovered.contains(names::RESOURCE_MOVED));
}

/// Every `always` property bites: each is violated by a variant that targets its spec ID, in
/// that variant's exposing world (not only some other property the variant targets).
#[test]
fn every_always_property_is_broken_by_a_variant_that_targets_it() {
    let world = World::new(Reference::new(), Config::default()).unwrap();
    let list = world.property_list().expect("every always has a partner");
    for (id, p) in list.iter() {
        if p.expectation != Expectation::Always {
            continue;
        }
        let broken = (Variant::ALL.into_iter())
            .filter(|v| v.targets().contains(&id))
            .any(|v| {
                let world = World::new(Reference::broken(v), Config::exposing(v)).unwrap();
                hunt(world, &[p.name]).contains(p.name)
            });
        // The rules of the driving contract are broken by a worker's driving, the kernel
        // driven so.
        let driven = (Driving::BROKEN.into_iter())
            .filter(|d| d.targets().contains(&id))
            .any(|d| {
                let world = World::new(Kernel, Config::exposing_driving(d)).unwrap();
                hunt(world, &[p.name]).contains(p.name)
            });
        assert!(broken || driven, "no variant or driving breaks {}", p.name);
    }
}

/// Each broken driving is caught by a property it targets, the kernel driven by it in the
/// configuration that exposes it (`Config::exposing_driving`).
fn caught_driving(driving: Driving) -> Vec<&'static str> {
    let world = World::new(Kernel, Config::exposing_driving(driving)).expect("valid");
    let list = world.property_list().expect("partnered");
    let targets: Vec<&'static str> = (driving.targets().iter())
        .flat_map(|id| list.names_of(*id, Expectation::Always))
        .collect();
    assert!(!targets.is_empty(), "{driving}: no property targets it");
    hunt(world, &targets).into_iter().collect()
}

/// One test per broken driving: the one property it is caught by.
macro_rules! drivings_caught {
    ($($test:ident: $driving:ident by $property:ident;)*) => {$(
        #[test]
        fn $test() {
            let found = caught_driving(Driving::$driving);
            assert_eq!(found, [resumable_model::properties::names::$property]);
        }
    )*};
}

drivings_caught! {
    decision_time_from_message_is_caught_by_clk_2: DecisionTimeFromMessage by CLK_2;
    tool_gets_node_arguments_is_caught_by_apr_5: ToolGetsNodeArguments by APR_5;
    recorded_call_by_id_only_is_caught_by_rec_5: RecordedCallByIdOnly by REC_5;
    run_from_old_config_is_caught_by_rec_6: RunFromOldConfig by REC_6;
    recorded_call_skips_its_interrupt_is_caught_by_res_8: RecordedCallSkipsItsInterrupt by RES_8;
}

/// Fails to compile when a broken driving is added without a test above.
#[expect(dead_code, reason = "never called: it exists to fail to compile")]
fn every_driving_has_a_test_above(d: Driving) {
    match d {
        Driving::Honest
        | Driving::DecisionTimeFromMessage
        | Driving::ToolGetsNodeArguments
        | Driving::RecordedCallByIdOnly
        | Driving::RunFromOldConfig
        | Driving::RecordedCallSkipsItsInterrupt => {}
    }
}

/// Fails to compile when a variant is added without a test above.
#[expect(dead_code, reason = "never called: it exists to fail to compile")]
fn every_variant_has_a_test_above(v: Variant) {
    match v {
        Variant::NoRevisionCheck
        | Variant::DoubleSuspend
        | Variant::ApprovalNotBoundToArgs
        | Variant::RetryUnknownWithoutReconcile
        | Variant::RetryWithoutContract
        | Variant::RetryFreshKeyOnDedupe
        | Variant::RetrySameKeyOnFence
        | Variant::IdentityAfterRevision
        | Variant::NoIdentityCheck
        | Variant::IdentityIgnoresTenant
        | Variant::IdentityIgnoresSession
        | Variant::IdentityIgnoresRun
        | Variant::IdentityIgnoresDefinition
        | Variant::ApprovalsNeverExpire
        | Variant::SelfApprovalAllowed
        | Variant::RerunStepOnResume
        | Variant::DenyLeavesRunning
        | Variant::NoExpiry
        | Variant::ResourceBlocksAnswers
        | Variant::ApprovalIgnoresResource
        | Variant::CancelLostOnEscalation
        | Variant::CancelEndsUnsettled
        | Variant::LastCallOnlyKeyCheck
        | Variant::SelfNamedApprover
        | Variant::CancelNotCheckpointed
        | Variant::CancelExpiryForgetsEffect
        | Variant::LateResultRecorded
        | Variant::ResumeRecordFromCheckpoint
        | Variant::EscalationKeepsDeadline
        | Variant::BatchDecisionWrongCall
        | Variant::BatchOneApprovalForAll
        | Variant::RejectedDispatched
        | Variant::EditIgnored
        | Variant::DispatchUnderBareKey => {}
    }
}

/// CAN-2 as the model read it before: after a cancel, every write leaves the run with the
/// cancel in its suspension, or ended cancelled, abandoned or expired (any expiry). Between
/// writes a run does not change, so the old property held exactly when this holds in every
/// reachable state.
fn old_can_2_kept(view: &RunView) -> bool {
    view.cancel_pending
        || matches!(
            view.ending,
            Some(Ending::Cancelled | Ending::Abandoned | Ending::Expired { .. })
        )
}

/// The two variants that break CAN-2 where the old property did not look (the checkpoint, and
/// an expiry that names no effect) are caught by CAN-2 now, and would have passed it before:
/// in their exposing worlds, no reachable state breaks the old reading.
#[test]
fn can_2_now_catches_what_its_old_reading_let_through() {
    for variant in [
        Variant::CancelNotCheckpointed,
        Variant::CancelExpiryForgetsEffect,
    ] {
        let world = World::new(Reference::broken(variant), Config::exposing(variant)).unwrap();
        let states = reachable(&world);
        let caught = states.iter().any(|s| s.violated.has(SpecId::Can2));
        assert!(caught, "{variant}: CAN-2 does not catch it");
        let old = (states.iter())
            .flat_map(|s| s.runs.iter())
            .all(|slot| !slot.cancelled || old_can_2_kept(&slot.run.view));
        assert!(old, "{variant}: the old reading of CAN-2 caught it too");
    }
}

/// The world of the default check (`Config::suite`) that catches each variant: every variant
/// must be caught by the main job, so a new one fails to compile here until it names a world
/// of the default check that finds it.
fn catching_world(v: Variant) -> &'static str {
    match v {
        Variant::DoubleSuspend
        | Variant::RetryUnknownWithoutReconcile
        | Variant::RetryFreshKeyOnDedupe
        | Variant::ApprovalsNeverExpire
        | Variant::DenyLeavesRunning
        | Variant::NoExpiry
        | Variant::ResourceBlocksAnswers
        | Variant::ResumeRecordFromCheckpoint => "default",
        Variant::SelfApprovalAllowed | Variant::SelfNamedApprover => "self-approval",
        Variant::IdentityAfterRevision | Variant::NoIdentityCheck => "two-tenants",
        Variant::IdentityIgnoresTenant => "cross-tenant",
        Variant::IdentityIgnoresSession => "cross-session",
        Variant::IdentityIgnoresRun => "cross-run",
        Variant::IdentityIgnoresDefinition => "cross-definition",
        Variant::CancelLostOnEscalation
        | Variant::CancelEndsUnsettled
        | Variant::CancelNotCheckpointed
        | Variant::CancelExpiryForgetsEffect => "cancel",
        Variant::RerunStepOnResume
        | Variant::LastCallOnlyKeyCheck
        | Variant::EscalationKeepsDeadline => "reuse",
        Variant::BatchDecisionWrongCall
        | Variant::BatchOneApprovalForAll
        | Variant::RejectedDispatched
        | Variant::EditIgnored => "batch",
        Variant::NoRevisionCheck => "stale-checkpoint",
        Variant::RetryWithoutContract | Variant::LateResultRecorded => "no-dedupe",
        Variant::RetrySameKeyOnFence => "fencing",
        Variant::ApprovalNotBoundToArgs | Variant::ApprovalIgnoresResource => "edited-and-moved",
        Variant::DispatchUnderBareKey => "two-runs-crash",
    }
}

/// The world of the default check that catches each broken driving, the kernel driven so.
fn catching_world_of_driving(d: Driving) -> &'static str {
    match d {
        Driving::Honest | Driving::DecisionTimeFromMessage => "default",
        Driving::ToolGetsNodeArguments
        | Driving::RecordedCallByIdOnly
        | Driving::RunFromOldConfig
        | Driving::RecordedCallSkipsItsInterrupt => "self-approval",
    }
}

/// Whether `world` violates a property of one of `targets`, searched breadth-first.
fn violates<L: resumable_model::Lifecycle>(world: World<L>, targets: &[SpecId]) -> bool {
    let list = world.property_list().expect("partnered");
    let names: Vec<&'static str> = (targets.iter())
        .flat_map(|id| list.names_of(*id, Expectation::Always))
        .collect();
    !names.is_empty() && !hunt(world, &names).is_empty()
}

/// The main job misses no broken lifecycle: every variant of `--list-variants`, the reference
/// broken so (or the kernel, driven so), violates a property it targets in the world of the
/// default check that `catching_world` names.
#[test]
#[ignore = "seconds in release; run with --release -- --ignored"]
fn the_default_check_catches_every_variant_and_every_broken_driving() {
    let suite = Config::suite();
    let world = |name: &str| {
        let found = suite.iter().find(|(n, _)| *n == name);
        found
            .unwrap_or_else(|| panic!("{name} is not a world of the default check"))
            .1
    };
    let mut missed = Vec::new();
    for v in Variant::ALL {
        let name = catching_world(v);
        let broken = World::new(Reference::broken(v), world(name)).expect("valid");
        if !violates(broken, v.targets()) {
            missed.push(format!("{v} in {name}"));
        }
    }
    for d in Driving::BROKEN {
        let name = catching_world_of_driving(d);
        let config = Config {
            driving: d,
            ..world(name)
        };
        let driven = World::new(Kernel, config).expect("valid");
        if !violates(driven, d.targets()) {
            missed.push(format!("{d} in {name}"));
        }
    }
    assert!(missed.is_empty(), "the default check misses {missed:?}");
}

/// Partners that exercise: for every `always`, a variant (or a broken driving) that targets
/// it is caught by it in a world of the default check where the honest machine reaches every
/// partner of that property, so the situation the property guards arises where it bites.
/// The variant's own catching world is tried first, then the others.
#[test]
#[ignore = "seconds in release; run with --release -- --ignored"]
fn each_property_catches_its_variant_where_its_partners_are_reached() {
    let suite = Config::suite();
    let honest_reach: Vec<std::collections::HashSet<&'static str>> = {
        let explored = explore_each(&Reference { variant: None }, &suite);
        explored.into_iter().map(|e| e.discovered).collect()
    };
    let list = World::new(Reference { variant: None }, Config::default())
        .expect("valid")
        .property_list()
        .expect("partnered");
    let position = |name: &str| (suite.iter().position(|(n, _)| *n == name)).expect("a world");
    let mut unexercised = Vec::new();
    for (i, (key, p)) in list.iter().enumerate() {
        if p.expectation != Expectation::Always {
            continue;
        }
        let partners: Vec<&'static str> = (list.partners()[i].iter())
            .map(|&j| list.properties()[j].name)
            .collect();
        let reached = |w: usize| partners.iter().all(|q| honest_reach[w].contains(q));
        let catches = |w: usize, broken: Breaker| {
            let config = suite[w].1;
            let found = match broken {
                Breaker::Variant(v) => hunt(
                    World::new(Reference::broken(v), config).expect("valid"),
                    &[p.name],
                ),
                Breaker::Driving(d) => hunt(
                    World::new(
                        Kernel,
                        Config {
                            driving: d,
                            ..config
                        },
                    )
                    .expect("valid"),
                    &[p.name],
                ),
            };
            found.contains(p.name)
        };
        let breakers: Vec<(Breaker, usize)> = (Variant::ALL.iter())
            .filter(|v| v.targets().contains(&key))
            .map(|&v| (Breaker::Variant(v), position(catching_world(v))))
            .chain(
                (Driving::BROKEN.iter())
                    .filter(|d| d.targets().contains(&key))
                    .map(|&d| (Breaker::Driving(d), position(catching_world_of_driving(d)))),
            )
            .collect();
        let own = breakers.iter().any(|&(b, w)| reached(w) && catches(w, b));
        let anywhere = own
            || breakers.iter().any(|&(b, own_world)| {
                (0..suite.len()).any(|w| w != own_world && reached(w) && catches(w, b))
            });
        if !anywhere {
            unexercised.push(p.name);
        }
    }
    assert!(
        unexercised.is_empty(),
        "caught by no variant where their partners are reached: {unexercised:#?}"
    );
}

/// What breaks a property: a variant of the reference, or the kernel driven wrongly.
#[derive(Clone, Copy)]
enum Breaker {
    Variant(Variant),
    Driving(Driving),
}
