//! The shortest counterexample for every broken variant, as the numbered trace `resumable
//! check --variant NAME` prints, kept as a snapshot per variant (tests/snapshots/). They are
//! teaching material: each shows, step by step, how the flaw of one runtime mistake is reached
//! and which spec ID it breaks (spec/counterexamples.md explains each).
//!
//! Each variant is checked in the smallest world that exposes it (`Config::exposing`). A full
//! exploration of some of those worlds takes minutes, so the check deepens a depth bound until
//! a property the variant targets is violated: breadth-first, the first depth at which one is
//! found yields a shortest counterexample, which is all a snapshot needs.

use resumable_kernel::SpecId;
use resumable_model::checker::{self, Checkable, Options, Verdict};
use resumable_model::config::Config;
use resumable_model::driving::Driving;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::World;
use resumable_model::{Kernel, Lifecycle};

/// Depth bounds tried in turn; past the last, the variant is reported as not caught.
const DEPTHS: [usize; 5] = [4, 8, 12, 16, 20];

/// The shortest counterexample to a property `variant` targets, rendered as the CLI does.
fn shortest_counterexample(variant: Variant) -> String {
    let lifecycle = Reference {
        variant: Some(variant),
    };
    let config = Config::exposing(variant);
    shortest(lifecycle, config, variant.name(), variant.targets())
}

/// The shortest counterexample to a property `driving` targets: the kernel, driven by
/// workers that break one rule of the driving contract (`model/src/driving.rs`).
fn shortest_driving_counterexample(driving: Driving) -> String {
    let config = Config::exposing_driving(driving);
    shortest(Kernel, config, driving.name(), driving.targets())
}

/// The shortest counterexample, in `config`, to a property keyed by one of `targets`.
fn shortest<L: Lifecycle>(lifecycle: L, config: Config, name: &str, targets: &[SpecId]) -> String {
    for depth in DEPTHS {
        let world =
            World::new(lifecycle.clone(), config).expect("the exposing configuration is valid");
        let list = world
            .property_list()
            .expect("the world's properties are partnered");
        // Whether the property's spec ID is one the variant targets.
        let targeted = |name: &str| list.key_of(name).is_some_and(|id| targets.contains(&id));
        let options = Options {
            depth: Some(depth),
            keep_going: true,
            ..Options::default()
        };
        let report = checker::check(world, &options).expect("the check runs");
        // The shortest of the violated targeted properties; the first in the model's order
        // among equals, so the snapshot is stable.
        let caught = (report.properties.iter())
            .filter(|p| p.verdict == Verdict::Violated && targeted(&p.name))
            .filter_map(|p| Some((p.counterexample.as_ref()?.steps, p)))
            .min_by_key(|(steps, _)| *steps);
        if let Some((_, property)) = caught {
            return property
                .counterexample_text()
                .expect("a violated property has a counterexample");
        }
    }
    panic!(
        "{name}: no property with an ID in {targets:?} is violated within {} steps",
        DEPTHS[DEPTHS.len() - 1]
    );
}

/// Checks the variant and compares its trace with the snapshot named after it.
fn snapshot(variant: Variant) {
    let trace = shortest_counterexample(variant);
    let what = variant.description().to_owned();
    compare(variant.name(), &what, variant.targets_named(), trace);
}

/// Checks the driving and compares its trace with the snapshot named after it.
fn driving_snapshot(driving: Driving) {
    let trace = shortest_driving_counterexample(driving);
    let what = format!(
        "the kernel, driven by a worker that breaks one rule: {}",
        driving.description()
    );
    compare(driving.name(), &what, driving.targets_named(), trace);
}

/// Compares `trace` with the snapshot `name`, described as what it shows and what it breaks.
fn compare(name: &str, what: &str, breaks: String, trace: String) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!("{name}: {what} (breaks {breaks})"));
    settings.bind(|| insta::assert_snapshot!(name, trace));
}

// One test per variant, and per broken driving, so they run in parallel; the test after
// each list makes sure none is left out of it.
macro_rules! snapshots {
    ($every:ident: every $kind:ident of $all:expr, by $check:ident; $($test:ident: $name:ident;)*) => {
        $(
            #[test]
            fn $test() {
                $check($kind::$name);
            }
        )*

        #[test]
        fn $every() {
            let listed = [$($kind::$name),*];
            for each in $all {
                assert!(listed.contains(&each), "{each} has no snapshot test");
            }
        }
    };
}

snapshots! {
    every_variant_has_a_snapshot_test: every Variant of Variant::ALL, by snapshot;
    no_revision_check_resumes_a_stale_checkpoint: NoRevisionCheck;
    double_suspend_replaces_the_pending_suspension: DoubleSuspend;
    approval_not_bound_to_args_releases_edited_arguments: ApprovalNotBoundToArgs;
    retry_unknown_without_reconcile_dispatches_an_unknown_outcome_again: RetryUnknownWithoutReconcile;
    retry_without_contract_retries_on_an_unsafe_tool: RetryWithoutContract;
    retry_fresh_key_on_dedupe_defeats_the_dedupe: RetryFreshKeyOnDedupe;
    retry_same_key_on_fence_retries_a_fenced_key: RetrySameKeyOnFence;
    identity_after_revision_tells_a_stranger_about_the_run: IdentityAfterRevision;
    no_identity_check_resumes_across_tenants: NoIdentityCheck;
    identity_ignores_tenant_resumes_from_another_tenant: IdentityIgnoresTenant;
    identity_ignores_session_resumes_from_another_session: IdentityIgnoresSession;
    identity_ignores_run_resumes_from_another_run: IdentityIgnoresRun;
    identity_ignores_definition_resumes_under_another_definition: IdentityIgnoresDefinition;
    approvals_never_expire_accepts_an_expired_decision: ApprovalsNeverExpire;
    self_approval_allowed_lets_the_requester_approve: SelfApprovalAllowed;
    rerun_step_on_resume_executes_a_committed_call_again: RerunStepOnResume;
    deny_leaves_running_lets_a_denied_call_run: DenyLeavesRunning;
    no_expiry_lets_a_suspension_wait_forever: NoExpiry;
    resource_blocks_answers_locks_an_unknown_outcome: ResourceBlocksAnswers;
    approval_ignores_resource_acts_on_a_moved_resource: ApprovalIgnoresResource;
    cancel_lost_on_escalation_lets_a_cancelled_run_run_on: CancelLostOnEscalation;
    cancel_ends_unsettled_leaves_a_late_commit_unrecorded: CancelEndsUnsettled;
    last_call_only_key_check_commits_an_earlier_key_again: LastCallOnlyKeyCheck;
    self_named_approver_lets_the_requester_hold_its_own_approval: SelfNamedApprover;
    cancel_not_checkpointed_persists_a_suspension_without_its_cancel: CancelNotCheckpointed;
    cancel_expiry_forgets_effect_ends_the_run_without_naming_it: CancelExpiryForgetsEffect;
    late_result_recorded_changes_a_finished_run: LateResultRecorded;
    resume_record_from_checkpoint_audits_the_past: ResumeRecordFromCheckpoint;
    escalation_keeps_deadline_opens_an_expired_suspension: EscalationKeepsDeadline;
    batch_decision_wrong_call_runs_a_call_on_another_call_s_decision: BatchDecisionWrongCall;
    batch_one_approval_for_all_runs_a_call_nobody_decided: BatchOneApprovalForAll;
    rejected_dispatched_runs_a_rejected_call: RejectedDispatched;
    edit_ignored_runs_the_proposed_arguments: EditIgnored;
    dispatch_under_bare_key_answers_a_run_from_another_run_s_commit: DispatchUnderBareKey;
}

// The broken drivings: the kernel, driven by workers that break one rule of the driving
// contract the way an old adapter did.
snapshots! {
    every_broken_driving_has_a_snapshot_test: every Driving of Driving::BROKEN, by driving_snapshot;
    decision_time_from_message_accepts_a_late_approval: DecisionTimeFromMessage;
    tool_gets_node_arguments_pays_what_nobody_approved: ToolGetsNodeArguments;
    recorded_call_by_id_only_answers_a_new_call_with_an_old_receipt: RecordedCallByIdOnly;
    run_from_old_config_runs_a_recorded_call_again: RunFromOldConfig;
    recorded_call_skips_its_interrupt_hands_the_question_the_approval: RecordedCallSkipsItsInterrupt;
}
