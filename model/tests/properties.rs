//! Every property holds on the kernel and on the reference, and every `sometimes` partner is
//! reached in some configuration of each set, so no `always` holds vacuously. (Every partner
//! is listed in every configuration; one a configuration cannot reach is reached in another.)
//! For each partner, a shortest witness path is pinned: it is the shortest story of how the
//! interesting state comes about.
//!
//! The larger configurations (the default, two runs, the requester approving itself, every
//! variant's exposing configuration, and a grid of 108 small ones) take from seconds to two
//! minutes in release and far longer in debug; they are `#[ignore]`d here and run with
//! `cargo test --release -p resumable-model --test properties -- --ignored`.

mod world_support;

use resumable_kernel::ReasonKind;
use resumable_model::checker::Checkable;
use resumable_model::config::{Config, Program};
use resumable_model::properties::names;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::{Action, Choice, Intent, World};
use resumable_model::{Kernel, Lifecycle};
use stateright::Model;
use world_support::*;

fn with_self_approval() -> Config {
    Config {
        self_approval: true,
        ..tiny()
    }
}

/// Two runs of different tenants, with run 1's approval also sent to run 0 (spec ID-1): the
/// default check's world.
fn two_runs() -> Config {
    Config::two_tenants()
}

/// A side effect before the pause, with one worker.
fn side_effect_first() -> Config {
    Config {
        program: Program::SideEffectFirst,
        workers: 1,
        ..tiny()
    }
}

/// The small configurations every lifecycle must pass in debug tests.
fn small() -> Vec<(&'static str, Config)> {
    vec![
        ("tiny", tiny()),
        ("direct, deduping tool", direct(true, false)),
        ("direct, fencing query", direct(false, true)),
        ("direct, neither", direct(false, false)),
        ("side effect first", side_effect_first()),
        // The requester's refused approval comes before the approver's, so the node's second
        // question follows a call that was fed two decisions (RES-8).
        (
            "requester approves itself, one worker",
            Config {
                workers: 1,
                questions: 1,
                ..with_self_approval()
            },
        ),
        // The framework changes the pending call's arguments before the resume (APR-5), runs
        // the node again with a new call under the old id (REC-5), resumes it from an old
        // config (REC-6), and asks its second question (RES-8).
        (
            "arguments changed before the resume, one worker",
            Config {
                workers: 1,
                arg_changes: 1,
                renewals: 1,
                old_configs: 1,
                questions: 1,
                ..tiny()
            },
        ),
        (
            "two runs, no time passing",
            Config {
                max_time: 0,
                ..two_runs()
            },
        ),
        // A cancel meets an unknown outcome that goes to a person (spec CAN-2).
        (
            "direct, a cancel, an operator",
            Config {
                cancels: 1,
                operator: true,
                crashes: 0,
                ..direct(true, false)
            },
        ),
        // A batch of two calls, decided one at a time or together, a crash with both in
        // flight (spec 5.5).
        (
            "a batch, a crash, no time passing",
            Config {
                workers: 1,
                crashes: 1,
                losses: 0,
                duplicates: 0,
                max_time: 0,
                ..Config::batch()
            },
        ),
        // The agent re-proposes an earlier call where the third is due (spec KEY-1).
        (
            "three calls, a reuse",
            Config {
                program: Program::ThreeCalls,
                reuses: 1,
                workers: 1,
                crashes: 0,
                ..tiny()
            },
        ),
    ]
}

/// No `always` property is violated in any of `configs`, and every `sometimes` partner is
/// reached in at least one of them.
fn assert_holds<L: Lifecycle>(lifecycle: L, configs: Vec<(&'static str, Config)>) {
    let mut reached = std::collections::HashSet::new();
    let mut partners = std::collections::BTreeSet::new();
    for ((name, config), explored) in configs.iter().zip(explore_each(&lifecycle, &configs)) {
        let violated = explored.violations();
        assert!(
            violated.is_empty(),
            "{} in the {name} world: {violated:?}",
            lifecycle.name(),
        );
        let world = World::new(lifecycle.clone(), *config).unwrap();
        let sometimes: std::collections::HashSet<&'static str> = (world.properties().into_iter())
            .filter(|p| p.expectation == stateright::Expectation::Sometimes)
            .map(|p| p.name)
            .collect();
        reached.extend(explored.discovered.intersection(&sometimes).copied());
        partners.extend(sometimes);
    }
    let unreached: Vec<&str> = partners
        .into_iter()
        .filter(|p| !reached.contains(p))
        .collect();
    assert!(
        unreached.is_empty(),
        "{}: partners reached in none of the configurations: {unreached:?}",
        lifecycle.name()
    );
}

/// Each property is keyed by the spec ID its name starts with, so that the ID a report shows
/// is the one the checker paired it by; the list builds, so every `always` has a partner.
#[test]
fn every_property_is_keyed_by_the_spec_id_its_name_starts_with() {
    let world = World::new(Kernel, Config::default()).unwrap();
    let list = world.property_list().expect("every always has a partner");
    for (id, p) in list.iter() {
        assert_eq!(p.name.split(' ').next(), Some(id.name()), "{}", p.name);
    }
    assert_eq!(list.properties().len(), world.properties().len());
}

#[test]
fn the_kernel_holds_every_property_and_reaches_every_partner() {
    assert_holds(Kernel, small());
}

#[test]
fn the_reference_holds_every_property_and_reaches_every_partner() {
    assert_holds(Reference::default(), small());
}

#[test]
#[ignore = "seconds in release; run with --release -- --ignored"]
fn the_kernel_and_the_reference_hold_on_the_larger_configurations() {
    // The default check's worlds, which together reach every partner, and a tool that both
    // fences and dedupes with three attempts and an operator.
    let larger = || {
        let mut worlds: Vec<(&'static str, Config)> = Config::suite().into();
        worlds.push((
            "fencing and deduping, three attempts, an operator",
            Config {
                dedupes: true,
                query_fences: true,
                max_attempts: 3,
                operator: true,
                ..tiny()
            },
        ));
        worlds
    };
    assert_holds(Kernel, larger());
    assert_holds(Reference::default(), larger());
}

#[test]
#[ignore = "seconds in release; run with --release -- --ignored"]
fn the_kernel_and_the_reference_hold_where_each_variant_is_exposed() {
    // So that a variant caught in its exposing configuration is caught for its flaw, not for
    // something the configuration does to every lifecycle.
    // Each configuration once: several variants share one.
    let exposing = || {
        let mut configs: Vec<(&'static str, Config)> = Vec::new();
        for v in Variant::ALL {
            let config = Config::exposing(v);
            if configs.iter().all(|(_, c)| *c != config) {
                configs.push((v.name(), config));
            }
        }
        // Where each broken driving is exposed, driven honestly.
        for d in resumable_model::driving::Driving::BROKEN {
            let config = Config {
                driving: resumable_model::driving::Driving::Honest,
                ..Config::exposing_driving(d)
            };
            if configs.iter().all(|(_, c)| *c != config) {
                configs.push((d.name(), config));
            }
        }
        configs
    };
    assert_holds(Kernel, exposing());
    assert_holds(Reference::default(), exposing());
}

// Shortest witness paths, as the steps of the story each tells. The steps, in the words of
// the traces:

/// The gated call is suspended for approval, and the suspension written.
const SUSPENDED: &[&str] = &[
    "Worker(0) steps run 0 with suspend for approval of c1: accepted: suspended (pending approval, expires t2) at r1",
    "Worker(0) commits run 0 r0->r1: written with its audit record and its checkpoint",
];
/// The approver approves it.
const SENT: &[&str] = &["Approver alice approves c1 at r1 of run 0: sent"];
/// The approval is fed and written: the call is in flight.
const APPROVED: &[&str] = &[
    "Worker(0) steps run 0 with resume approve c1@r1 from alice: accepted: running, c1 attempt 0 in flight at r2",
    "Worker(0) commits run 0 r1->r2: written with its audit record",
];
/// The call goes out.
const DISPATCHED: &[&str] = &["Worker(0) dispatches c1 key k1#0 for run 0: sent to the tool"];
/// The tool commits it.
const TOOL_COMMITS: &[&str] = &["Tool commits c1 key k1#0 for run 0: committed, response sent"];
/// The worker crashes and a restarted one recovers the run: the outcome is unknown.
const CRASHED: &[&str] = &[
    "Worker(0) crashes: volatile state lost",
    "Worker(0) steps run 0 with recover: accepted: suspended (outcome unknown, expires t1) at r3",
    "Worker(0) commits run 0 r2->r3: written with its audit record and its checkpoint",
];
/// The query says "not committed", and the call is retried.
const RETRIED: &[&str] = &[
    "Worker(0) steps run 0 with reconcile c1 key k1#0 from r3: not committed: accepted: running, c1 attempt 0 in flight at r4",
];
/// The retry is written.
const RETRY_WRITTEN: &[&str] = &["Worker(0) commits run 0 r3->r4: written with its audit record"];
/// Time passes to t2.
const TO_T2: &[&str] = &[
    "Clock ticks to 1: time passes",
    "Clock ticks to 2: time passes",
];
/// And to t3, past the approval's suspension.
const TO_T3: &[&str] = &["Clock ticks to 3: time passes"];
/// The suspension expires.
const EXPIRED: &[&str] = &[
    "Worker(0) steps run 0 with expire: accepted: failed (expired) at r2",
    "Worker(0) commits run 0 r1->r2: written with its audit record",
];
/// The approval, sent before, reaches the expired run.
const STALE: &[&str] = &[
    "Worker(0) steps run 0 with resume approve c1@r1 from alice: refused: stale revision: current r2, got r1",
];

fn assert_witness(config: Config, property: &str, steps: &[&[&str]]) {
    let world = World::new(Kernel, config).unwrap();
    let path = shortest(&world, property, true).expect("the partner is reached");
    assert_eq!(path, steps.concat(), "{property}");
}

/// One test per partner: the test, the world, the property, and its shortest witness path
/// as the steps of its story, in order.
macro_rules! witnesses {
    ($($test:ident: $config:expr, $property:ident, [$($steps:expr),* $(,)?];)*) => {$(
        #[test]
        fn $test() {
            assert_witness($config, names::$property, &[$($steps),*]);
        }
    )*};
}

witnesses! {
    witness_two_workers_race_to_resume_one_suspension_and_one_wins: tiny(), RACE_WON, [
        SUSPENDED, SENT, APPROVED, CRASHED, RETRIED,
        &["Worker(1) steps run 0 with reconcile c1 key k1#0 from r3: not committed: accepted: running, c1 attempt 0 in flight at r4"],
        RETRY_WRITTEN,
    ];
    witness_a_stale_approval_arrives: tiny(), STALE_ARRIVES, [
        SUSPENDED, SENT, TO_T2, TO_T3, EXPIRED, STALE,
    ];
    witness_the_tool_commits_an_approved_call: tiny(), APPROVED_RUNS, [
        SUSPENDED, SENT, APPROVED, DISPATCHED, TOOL_COMMITS,
    ];
    witness_a_decision_arrives_after_it_expired: tiny(), EXPIRED_ARRIVES, [
        SUSPENDED, SENT, TO_T2,
        &["Worker(0) steps run 0 with resume approve c1@r1 from alice: refused: approval expired at t1, now t2"],
    ];
    witness_a_decision_arrives_after_the_suspension_expired: tiny(), AFTER_EXPIRY, [
        SUSPENDED, SENT, TO_T2, TO_T3,
        &["Worker(0) steps run 0 with resume approve c1@r1 from alice: refused: suspension expired at t2, now t3"],
    ];
    witness_a_denial_fails_the_run: tiny(), DENIED, [
        SUSPENDED,
        &[
            "Approver alice denies c1 at r1 of run 0: sent",
            "Worker(0) steps run 0 with resume deny c1@r1 from alice: accepted: failed (denied) at r2",
            "Worker(0) commits run 0 r1->r2: written with its audit record",
        ],
    ];
    witness_a_delayed_request_reaches_the_tool_after_a_not_committed_answer: tiny(), LATE_REQUEST, [
        SUSPENDED, SENT, APPROVED, DISPATCHED, CRASHED, RETRIED, TOOL_COMMITS,
    ];
    witness_a_crash_leaves_an_unknown_outcome: tiny(), UNKNOWN, [
        SUSPENDED, SENT, APPROVED, CRASHED,
    ];
    witness_reconcile_reuses_a_committed_result: tiny(), REUSED, [
        SUSPENDED, SENT, APPROVED, DISPATCHED, CRASHED, TOOL_COMMITS,
        &["Worker(0) steps run 0 with reconcile c1 key k1#0 from r3: committed: accepted: running at r4"],
        RETRY_WRITTEN,
    ];
    witness_a_retry_after_a_not_committed_answer_succeeds: tiny(), RETRY_SUCCEEDS, [
        SUSPENDED, SENT, APPROVED, DISPATCHED, CRASHED, RETRIED, RETRY_WRITTEN, TOOL_COMMITS,
        &[
            "Worker(1) steps run 0 with result of c1 key k1#0: accepted: running at r5",
            "Worker(1) commits run 0 r4->r5: written with its audit record",
        ],
    ];
    // The same story as a stale approval's: the approval is late to a finished run.
    witness_a_message_reaches_a_finished_run: tiny(), LATE_TO_TERMINAL, [
        SUSPENDED, SENT, TO_T2, TO_T3, EXPIRED, STALE,
    ];
    witness_a_run_completes_every_step_audited: tiny(), COMPLETES, [
        SUSPENDED, SENT, APPROVED, DISPATCHED, TOOL_COMMITS,
        &[
            "Worker(0) steps run 0 with result of c1 key k1#0: accepted: running at r3",
            "Worker(0) commits run 0 r2->r3: written with its audit record",
            "Worker(0) steps run 0 with complete: accepted: completed at r4",
            "Worker(0) commits run 0 r3->r4: written with its audit record",
        ],
    ];
    witness_a_run_waits_on_a_person_after_its_reconciliation_ran_out: tiny(), WAITS, [
        SUSPENDED, SENT, APPROVED, CRASHED, TO_T2,
        &[
            "Worker(0) steps run 0 with expire: accepted: suspended (manual intervention, expires t3) at r4",
            "Worker(0) commits run 0 r3->r4: written with its audit record and its checkpoint",
        ],
    ];
    witness_a_run_waiting_for_approval_is_offered_a_second_suspend: tiny(), SUSPEND_OFFERED, [
        SUSPENDED,
    ];
    witness_a_suspension_expires: tiny(), EXPIRES, [SUSPENDED, TO_T2, TO_T3, EXPIRED];
    witness_the_requester_s_approval_of_its_own_call_arrives: with_self_approval(), SELF_ARRIVES, [
        SUSPENDED,
        &[
            "Requester agent approves its own c1 at r1 of run 0: sent",
            "Worker(0) steps run 0 with resume approve c1@r1 from agent: refused: agent cannot approve its own call",
        ],
    ];
    witness_a_checkpoint_of_another_tenant_reaches_a_run: two_runs(), FOREIGN_OFFERED, [&[
        "Worker(0) steps run 1 with suspend for approval of c1: accepted: suspended (pending approval, expires t1) at r1",
        "Worker(0) commits run 1 r0->r1: written with its audit record and its checkpoint",
        "Approver alice approves c1 at r1 of run 1, sent to run 0: sent",
        "Worker(0) steps run 0 with resume approve c1@r1 from alice (run 1's checkpoint): refused: checkpoint is not for this run: tenant differs",
    ]];
}

/// APR-3's suspend-time half: where the requester tries to approve itself, the agent is
/// offered, from the first state, to suspend naming itself the approver; the kernel refuses
/// it, and a refused agent request is no transition.
#[test]
fn witness_the_agent_is_offered_to_suspend_naming_itself_the_approver() {
    assert_witness(with_self_approval(), names::SELF_NAMED_OFFERED, &[]);
    let world = World::new(Kernel, with_self_approval()).unwrap();
    let first = &world.init_states()[0];
    let mut actions = Vec::new();
    world.actions(first, &mut actions);
    let offer = (actions.iter())
        .find(|a| {
            let choice = Choice::Agent(Intent::SuspendSelfApproved(resumable_model::world::GATED));
            matches!(a, Action::Step { choice: c, .. } if *c == choice)
        })
        .expect("the offer is made");
    assert_eq!(
        world.explain(first, offer),
        "refused: agent cannot approve its own call"
    );
    assert_eq!(world.next_state(first, *offer), None);
}

#[test]
#[ignore = "four minutes in release; run with --release -- --ignored"]
fn the_kernel_holds_on_a_grid_of_small_configurations() {
    // Every partner is listed in every configuration; across the grid each is reached in
    // some configuration, and no configuration violates a property.
    let mut grid = Vec::new();
    for program in [Program::Approval, Program::Direct, Program::SideEffectFirst] {
        for workers in [1, 2] {
            for crashes in [0, 1] {
                for approvers in [0, 1, 2] {
                    for (duplicates, self_approval) in [(0, false), (1, false), (0, true)] {
                        let config = Config {
                            program,
                            workers,
                            crashes,
                            approvers,
                            duplicates,
                            self_approval,
                            losses: 0,
                            query_unknown: false,
                            max_time: 4,
                            ..Config::default()
                        };
                        grid.push(("grid", config));
                    }
                }
            }
        }
    }
    grid.push(("two runs", two_runs()));
    // The hostile framework's moves (APR-5, REC-5, REC-6, RES-8), which no grid world makes.
    grid.push((
        "arguments changed, a new call under an old id, an old config, a second question",
        Config {
            workers: 1,
            arg_changes: 1,
            renewals: 1,
            old_configs: 1,
            questions: 1,
            // Two decisions fed while the call waits (RES-8's partner): its own, refused.
            self_approval: true,
            ..tiny()
        },
    ));
    // A cancel, a reuse of an earlier call and a batch need worlds of their own (as in the
    // default check): the grid's programs have no third call, no batch, and none of its worlds
    // cancels.
    for (name, config) in Config::suite() {
        if matches!(name, "cancel" | "reuse" | "batch" | "batch-crash") {
            grid.push((name, config));
        }
    }
    assert_holds(Kernel, grid);
}

/// The partners read from what the world offers count only where the input could be fed and
/// only the one rule refuses it: at the revision bound the run waits for approval, the state
/// that used to count as SUS-2's situation, yet no second suspend can reach the lifecycle,
/// and the partner is not reached.
#[test]
fn an_offer_that_no_worker_can_feed_reaches_no_partner() {
    let config = Config {
        max_revision: 1,
        ..tiny()
    };
    let world = World::new(Kernel, config).expect("valid");
    let waits = reachable(&world).iter().any(|s| {
        (s.runs.iter()).any(|slot| slot.run.view.reason == Some(ReasonKind::PendingApproval))
    });
    assert!(waits, "the run never waits for approval");
    let explored = explore(World::new(Kernel, config).expect("valid"));
    assert!(!explored.discovered.contains(names::SUSPEND_OFFERED));
    // One revision more, and the second suspend is fed and refused.
    let explored = explore(
        World::new(
            Kernel,
            Config {
                max_revision: 2,
                ..config
            },
        )
        .expect("valid"),
    );
    assert!(explored.discovered.contains(names::SUSPEND_OFFERED));
}
