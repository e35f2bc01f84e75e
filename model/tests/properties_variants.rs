//! Every broken variant of the reference machine is caught by a property it targets
//! (`Variant::targets`), in the configuration that exposes it (`Config::exposing`), while the
//! reference itself holds every property in that same configuration. A property that no
//! variant can break would pass vacuously; these tests show each one bites.

mod world_support;

use resumable_kernel::{
    AuditRecord, Effects, Event, EventKind, Identity, Input, Policy, PolicyError, Reason,
    Rejection, Revision, Time,
};
use resumable_model::checker::Checkable;
use resumable_model::config::Config;
use resumable_model::properties::names;
use resumable_model::reference::{RefRun, Reference, Status};
use resumable_model::variant::Variant;
use resumable_model::world::World;
use resumable_model::{Lifecycle, Snapshot};
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
        | Variant::ApprovalsNeverExpire
        | Variant::SelfApprovalAllowed
        | Variant::RerunStepOnResume
        | Variant::DenyLeavesRunning
        | Variant::NoExpiry
        | Variant::ResourceBlocksAnswers
        | Variant::ApprovalIgnoresResource
        | Variant::CancelLostOnEscalation
        | Variant::CancelEndsUnsettled
        | Variant::LastCallOnlyKeyCheck => {}
    }
}

// INV-1, AUD-1 and SUS-1 are broken by none of the variants: the reference machine
// gets them right by construction. To show that these properties bite too, three mutants are
// made here by wrapping the reference and spoiling its output in one place each.

/// How a mutant spoils the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spoil {
    /// Accepts a late tool result on a finished run (breaks INV-1).
    Resurrects,
    /// Advances the revision by two on a resume (breaks AUD-1 with REV-1).
    SkipsARevision,
    /// Records the requester as the party responsible for its own approval (breaks SUS-1).
    RequesterDecides,
}

#[derive(Clone, Copy, Debug)]
struct Mutant(Spoil);

impl Lifecycle for Mutant {
    type Run = RefRun;

    fn name(&self) -> &'static str {
        "mutant"
    }

    fn create(&self, identity: Identity, policy: Policy, at: Time) -> Result<RefRun, PolicyError> {
        Reference::default().create(identity, policy, at)
    }

    fn step(&self, run: &RefRun, input: &Input) -> Result<(RefRun, Effects), Rejection> {
        let result = Reference::default().step(run, input);
        match (self.0, result) {
            (Spoil::Resurrects, Err(Rejection::Terminal { phase })) => {
                let mut next = *run;
                next.revision = Revision(run.revision.0 + 1);
                next.clock = input.at;
                let record = AuditRecord {
                    revision: next.revision,
                    at: input.at,
                    event: EventKind::ToolResult,
                    decision: None,
                    phase,
                    reason: None,
                };
                Ok((next, Effects::of(record, None, None, None)))
            }
            (Spoil::SkipsARevision, Ok((mut next, effects)))
                if matches!(input.event, Event::Resume(_)) =>
            {
                next.revision = Revision(next.revision.0 + 1);
                Ok((next, effects))
            }
            (Spoil::RequesterDecides, Ok((mut next, effects))) => {
                if let Status::Suspended(s) = &mut next.status {
                    if let Reason::PendingApproval { requester, .. } = s.reason {
                        s.responsible = requester;
                    }
                }
                Ok((next, effects))
            }
            (_, other) => other,
        }
    }

    fn snapshot(&self, run: &RefRun) -> Snapshot {
        run.snapshot()
    }
}

fn mutant_caught(spoil: Spoil, property: &'static str) -> bool {
    let world = World::new(Mutant(spoil), tiny()).unwrap();
    hunt(world, &[property]).contains(property)
}

#[test]
fn a_lifecycle_that_accepts_input_on_a_finished_run_is_caught_by_inv_1() {
    assert!(mutant_caught(Spoil::Resurrects, names::INV_1));
}

#[test]
fn a_lifecycle_that_skips_a_revision_is_caught_by_aud_1() {
    assert!(mutant_caught(Spoil::SkipsARevision, names::AUD_1));
}

#[test]
fn a_lifecycle_that_lets_the_requester_decide_is_caught_by_sus_1() {
    assert!(mutant_caught(Spoil::RequesterDecides, names::SUS_1));
}
