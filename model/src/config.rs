//! The world's configuration: how many runs, workers and approvers, which budgets, which tool
//! contract. It lives outside the state, so it is never hashed and never changes during a check.
//!
//! Every budget is a bound on what the environment may do (crash, lose, duplicate, let time
//! pass), not a cut of the exploration: within the budgets the model is explored exhaustively.

use crate::driving::Driving;
use crate::variant::Variant;
use core::fmt;
use resumable_kernel::IdentityField;

/// The agent program every run executes. Programs are tiny and fixed: the model explores the
/// world around the run, not the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// Suspend for approval of the gated call `c1`; once its result is recorded, complete.
    Approval,
    /// Dispatch `c1` directly, ungated; once its result is recorded, complete. Smaller: it
    /// explores crashes, lost responses and reconciliation without the approval phase.
    Direct,
    /// Dispatch the ungated call `c0`, then suspend for approval of `c1`, then complete: a side
    /// effect before the pause, which no resume may execute again (spec REC-4).
    SideEffectFirst,
    /// Dispatch `c0`, suspend for approval of `c1`, dispatch `c2`, then complete. Where `c2` is
    /// due, the agent may instead propose an earlier call id or key again (see `reuses`).
    ThreeCalls,
    /// Suspend for one batch of the gated calls `c1` and `c2` (spec 5.5), each decided on its
    /// own; once every call of the batch is settled, complete.
    Batch,
}

impl Program {
    /// The program's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Program::Approval => "approval",
            Program::Direct => "direct",
            Program::SideEffectFirst => "side-effect-first",
            Program::ThreeCalls => "three-calls",
            Program::Batch => "batch",
        }
    }

    /// Every program, for listings.
    pub const ALL: [Program; 5] = [
        Program::Approval,
        Program::Direct,
        Program::SideEffectFirst,
        Program::ThreeCalls,
        Program::Batch,
    ];
}

/// The configuration of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Runs (1 or 2). With two, the runs belong to different tenants and sessions (unless
    /// `differs_in` names one field they differ in).
    pub runs: u8,
    /// Workers that step runs, racing on the store's compare-and-set (1 to 4).
    pub workers: u8,
    /// How many times, in all, a worker may crash and lose its volatile state.
    pub crashes: u8,
    /// Instances of the responsible approver (browser tabs, devices): each sends at most one
    /// decision per checkpoint, so two of them can race an approval against a denial (0 to 3).
    pub approvers: u8,
    /// The requester also tries to approve its own call (spec APR-3).
    pub self_approval: bool,
    /// An approver may approve an edited version of the call (other arguments, spec APR-1).
    pub edited_approvals: bool,
    /// With two runs, an approval of run 1's checkpoint is also sent to run 0 (spec ID-1):
    /// across tenants, or across the one field `differs_in` names.
    pub cross_tenant: bool,
    /// The one identity field in which the cast's second identity differs from its first
    /// (spec ID-1); without, tenant, session and run all differ.
    pub differs_in: Option<IdentityField>,
    /// The tool remembers idempotency keys and commits each at most once.
    pub dedupes: bool,
    /// The tool's status query fences the key it answers "not committed" for.
    pub query_fences: bool,
    /// The status query may also answer "unknown" (spec REC-2).
    pub query_unknown: bool,
    /// A person (the run's operator) settles manual interventions truthfully: "committed"
    /// with the result if the tool committed the call, otherwise "abandon".
    pub operator: bool,
    /// Attempts the call's contract allows in all (1 to 4).
    pub max_attempts: u8,
    /// How many tool responses the network may lose in all.
    pub losses: u8,
    /// How many extra deliveries of decisions the network may make in all.
    pub duplicates: u8,
    /// How many cancel requests the run's owner may send in all, in any phase (spec CAN-1,
    /// CAN-2).
    pub cancels: u8,
    /// How many times the agent of the three-call program may propose an earlier call id or
    /// key again where `c2` is due (spec KEY-1, KEY-2, REC-4).
    pub reuses: u8,
    /// How many times an outsider may move a run's resource (the run's own commits move it
    /// too, always: spec RES-3).
    pub outsider_moves: u8,
    /// How many times the framework may change the arguments of a run's pending call between
    /// its suspension and its resume, under the same call id (a graph's state updated before
    /// the resume, spec APR-5).
    pub arg_changes: u8,
    /// How many times the agent's node, run again, proposes a new call under the call id of
    /// the gated call once its result is recorded (another payment under an old call id, spec
    /// REC-5).
    pub renewals: u8,
    /// How many times the framework resumes the agent's node from an old config (one of its
    /// own checkpoints, taken while the gated call waited for approval) once the gated call's
    /// result is recorded, with the approval given then (spec REC-6).
    pub old_configs: u8,
    /// How many times the agent's node asks its second question, a plain interrupt after the
    /// gated call, once that call's result is recorded (spec RES-8).
    pub questions: u8,
    /// The agent program.
    pub program: Program,
    /// With the batch program, the approver gives every verdict (approve, edit, reject,
    /// answer, deny); without, it only approves, one call at a time or both at once.
    pub batch_verdicts: bool,
    /// The two runs act on one resource (a shared account, one record two agents edit): a
    /// commit of either run's call, or an outsider's move, moves it for both, so a run's
    /// pending approval can be overtaken by the other run's payment (spec RES-3). Needs two
    /// runs; the per-run reduction does not cover it (each run's world would need the other
    /// run's commits as moves at any step) and refuses it.
    pub shared_resource: bool,
    /// The version the runs' resource starts at (before anything moves it). Above 0, a run
    /// that never recorded the version it acted on compares against a version it never saw
    /// (spec 4.4, RES-3).
    pub resource_start: u8,
    /// Ticks an approval suspension lasts before it expires (at least 1).
    pub suspend_for: u8,
    /// Ticks an approval is valid after it is given (spec APR-2).
    pub approval_ttl: u8,
    /// Ticks a reconciliation or manual intervention may wait: the run's policy (at least 1).
    pub reconcile_window: u8,
    /// The clock runs from 0 to this tick (at most 30).
    pub max_time: u8,
    /// No input is offered to a run at or past this revision (at most 31). A correct lifecycle
    /// never comes near it; it only keeps a looping broken variant finite.
    pub max_revision: u8,
    /// An optional bound on the depth of the exploration, in actions. A check cut short by it
    /// is incomplete, never a pass.
    pub depth_bound: Option<usize>,
    /// Which of the cast's two identities the first run takes (0 or 1; `identity + runs` is
    /// at most 2). The per-run reduction ([`Config::per_run`]) checks the second run of a
    /// two-run world as a world of its own, under its own name.
    pub identity: u8,
    /// Time may pass at any step, not only while some run waits: in the per-run reduction
    /// ([`Config::per_run`]), the stand-in for the suspensions of the run left out. A tick
    /// taken while no run of the world waits is borrowed, and no `sometimes` property is
    /// credited in a state reached through one (spec/check-output.md, "The per-run
    /// reduction").
    pub free_clock: bool,
    /// Commits the run left out may make under a tool key this run sent that is not bound to
    /// this run's identity (spec KEY-3): in the per-run reduction ([`Config::per_run`]), the
    /// stand-in for the other run's requests at the one tool both share (spec/check-output.md,
    /// "The per-run reduction"). At most 1.
    pub foreign_commits: u8,
    /// How the workers drive the runs (`model/src/driving.rs`): honestly, by the driver core's
    /// rules, or with one of them replaced, as an old adapter did.
    pub driving: Driving,
}

impl Default for Config {
    /// One run, two workers racing, one crash, one lost response, one duplicated decision, one
    /// approver, a deduping tool whose query may answer "unknown", and a clock long enough for
    /// a suspension to expire. A second approver tab or the requester approving itself each
    /// multiply the states by about ten; turn them on for a longer check.
    fn default() -> Config {
        Config {
            runs: 1,
            workers: 2,
            crashes: 1,
            approvers: 1,
            self_approval: false,
            edited_approvals: false,
            cross_tenant: false,
            differs_in: None,
            dedupes: true,
            query_fences: false,
            query_unknown: true,
            operator: false,
            max_attempts: 2,
            losses: 1,
            duplicates: 1,
            cancels: 0,
            reuses: 0,
            outsider_moves: 0,
            arg_changes: 0,
            renewals: 0,
            old_configs: 0,
            questions: 0,
            program: Program::Approval,
            batch_verdicts: true,
            shared_resource: false,
            resource_start: 0,
            suspend_for: 2,
            approval_ttl: 1,
            reconcile_window: 1,
            max_time: 4,
            max_revision: 12,
            depth_bound: None,
            identity: 0,
            free_clock: false,
            foreign_commits: 0,
            driving: Driving::Honest,
        }
    }
}

/// Why a configuration cannot be explored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// A count or duration is outside its range.
    OutOfRange {
        /// The field.
        field: &'static str,
        /// The value given.
        got: u64,
        /// The smallest allowed value.
        min: u64,
        /// The largest allowed value.
        max: u64,
    },
    /// `cross_tenant` needs two runs.
    CrossTenantNeedsTwoRuns,
    /// `shared_resource` needs two runs.
    SharedResourceNeedsTwoRuns,
    /// The first run's identity leaves no identity for another run.
    IdentityOutOfCast,
    /// The per-run reduction was asked of a world it does not apply to.
    NotPerRun,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::OutOfRange {
                field,
                got,
                min,
                max,
            } => write!(f, "{field} must be between {min} and {max}, got {got}"),
            ConfigError::CrossTenantNeedsTwoRuns => {
                f.write_str("a cross-tenant resume needs two runs")
            }
            ConfigError::SharedResourceNeedsTwoRuns => {
                f.write_str("a resource shared by the runs needs two runs")
            }
            ConfigError::IdentityOutOfCast => {
                f.write_str("the cast has two identities: identity + runs must be at most 2")
            }
            ConfigError::NotPerRun => f.write_str(
                "the per-run reduction needs two runs, no approval offered across tenants \
                 (--cross-tenant couples the runs) and no resource shared by them \
                 (--shared-resource: the other run's commits move it at any step)",
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// The most changes of a pending call's arguments a world allows (`Config::arg_changes`): the
/// state's hash keeps the budget in four bits.
pub const MAX_ARG_CHANGES: u8 = 3;

/// The most renewals a world allows (`Config::renewals`): the state's hash keeps the budget
/// in four bits.
pub const MAX_RENEWALS: u8 = 3;

fn range(field: &'static str, got: u8, min: u8, max: u8) -> Result<(), ConfigError> {
    if got < min || got > max {
        return Err(ConfigError::OutOfRange {
            field,
            got: u64::from(got),
            min: u64::from(min),
            max: u64::from(max),
        });
    }
    Ok(())
}

impl Config {
    /// Checks every field against its range. The world relies on these ranges to keep its
    /// state in small fixed-width fields (bit sets of keys, revisions and ticks).
    pub fn validate(&self) -> Result<(), ConfigError> {
        range("runs", self.runs, 1, 2)?;
        range("workers", self.workers, 1, 4)?;
        range("crashes", self.crashes, 0, 8)?;
        range("approvers", self.approvers, 0, 3)?;
        range("max_attempts", self.max_attempts, 1, crate::world::ATTEMPTS)?;
        range("losses", self.losses, 0, 8)?;
        range("duplicates", self.duplicates, 0, 8)?;
        range("cancels", self.cancels, 0, 4)?;
        range("reuses", self.reuses, 0, 3)?;
        range("outsider_moves", self.outsider_moves, 0, 4)?;
        range("arg_changes", self.arg_changes, 0, MAX_ARG_CHANGES)?;
        range("renewals", self.renewals, 0, MAX_RENEWALS)?;
        range("old_configs", self.old_configs, 0, 3)?;
        range("questions", self.questions, 0, 3)?;
        range("resource_start", self.resource_start, 0, 8)?;
        range("suspend_for", self.suspend_for, 1, 20)?;
        range("approval_ttl", self.approval_ttl, 0, 20)?;
        range("reconcile_window", self.reconcile_window, 1, 20)?;
        range("max_time", self.max_time, 0, 30)?;
        range("max_revision", self.max_revision, 1, 31)?;
        range("foreign_commits", self.foreign_commits, 0, 1)?;
        if self.cross_tenant && self.runs != 2 {
            return Err(ConfigError::CrossTenantNeedsTwoRuns);
        }
        if self.shared_resource && self.runs != 2 {
            return Err(ConfigError::SharedResourceNeedsTwoRuns);
        }
        if usize::from(self.identity) + usize::from(self.runs) > 2 {
            return Err(ConfigError::IdentityOutOfCast);
        }
        Ok(())
    }

    /// The per-run reduction of a two-run world (spec/check-output.md, "The per-run
    /// reduction"): one world for each of its runs, named `run-0` and `run-1`, holding that run
    /// alone under its own identity, with every budget and worker of the whole, and a clock
    /// that may pass at any step. Without an approval offered across tenants the two runs share
    /// nothing but the workers, the budgets and the clock, so each run's steps in the two-run
    /// world, its neighbour's left out, are steps of its own world: every `always` property
    /// (each speaks of one run at a time) that holds in both holds in the two-run world. A
    /// state reached without a borrowed tick is one the two-run world reaches with the other
    /// run not yet started, so a `sometimes` property reached there is reached in the whole.
    pub fn per_run(&self) -> Result<[(&'static str, Config); 2], ConfigError> {
        self.validate()?;
        if self.runs != 2 || self.cross_tenant || self.shared_resource {
            return Err(ConfigError::NotPerRun);
        }
        let alone = |identity| Config {
            runs: 1,
            identity,
            free_clock: true,
            foreign_commits: 1,
            ..*self
        };
        Ok([("run-0", alone(0)), ("run-1", alone(1))])
    }

    /// The worlds of the default check, by name: the default world, and beside it the small
    /// worlds that exercise what it cannot reach (a requester approving its own call, a second
    /// tenant, a second run differing in one identity field, two runs in flight through a
    /// crash, a cancel that meets an unknown outcome, an agent re-proposing an earlier call),
    /// each turned down to what its situation needs so the whole takes seconds, and the tiny
    /// worlds where a tool's contract, a stale checkpoint, an edited approval or a resource
    /// moved from outside arise. Every property has a partner reached in one of them; each
    /// `always` must hold in all of them; every broken variant and driving is caught in one of
    /// them (model/tests/properties_variants.rs), so the main job misses none.
    pub fn suite() -> [(&'static str, Config); 17] {
        let default = Config::default();
        // No lost response, no duplicated decision, a query that never answers "unknown".
        let quiet = Config {
            losses: 0,
            duplicates: 0,
            query_unknown: false,
            ..default
        };
        let short = Config {
            max_time: 3,
            ..quiet
        };
        let direct = Config::direct;
        let cross = |field| (Config::cross_run_name(field), Config::cross_run(field));
        [
            ("default", default),
            ("self-approval", Config::self_approving(short)),
            ("two-tenants", Config::two_tenants()),
            // Two runs whose identities differ in one field alone, a world for each (ID-1).
            cross(IdentityField::Tenant),
            cross(IdentityField::Session),
            cross(IdentityField::Run),
            cross(IdentityField::Definition),
            ("two-runs-crash", Config::two_runs_crash()),
            ("shared-resource", Config::shared()),
            (
                "cancel",
                Config {
                    cancels: 1,
                    operator: true,
                    ..short
                },
            ),
            (
                "reuse",
                Config {
                    program: Program::ThreeCalls,
                    reuses: 1,
                    // The first call is dispatched without a suspension before it: its
                    // worker states the version it observed, which a retry re-checks.
                    resource_start: 2,
                    ..quiet
                },
            ),
            ("batch", Config::batch()),
            ("batch-crash", Config::batch_crash()),
            // A retry under the same key crashes again at the same instant, and a slow
            // reconciler still holds the checkpoint of the first crash: a stale checkpoint
            // that matches the run in every field but its revision (RES-3).
            (
                "stale-checkpoint",
                Config {
                    crashes: 2,
                    ..direct(true, false)
                },
            ),
            // A tool that neither dedupes nor fences: no retry is safe (REC-3).
            ("no-dedupe", direct(false, false)),
            // A tool whose query fences the key it answers "not committed" for: a retry must
            // take a fresh key (REC-3).
            ("fencing", direct(false, true)),
            // An approver who approves an edited call, and a writer outside the run who moves
            // the resource under a pending approval (APR-1, RES-3).
            (
                "edited-and-moved",
                Config {
                    edited_approvals: true,
                    outsider_moves: 1,
                    crashes: 0,
                    ..quiet
                },
            ),
        ]
    }

    /// The default check's world of batches (spec 5.5): one run whose agent proposes `c1` and
    /// `c2` together; the approver decides each call (approve, edit, reject, deny, or answer
    /// in the tool's place), one at a time or both at once, and a decision may be delivered
    /// twice, late; two workers race to write them; the approved calls run together and a
    /// response may be lost.
    pub fn batch() -> Config {
        Config {
            program: Program::Batch,
            query_unknown: false,
            crashes: 0,
            max_time: 2,
            suspend_for: 1,
            ..Config::default()
        }
    }

    /// The default check's world of batch calls in flight together (spec BAT-4): one worker
    /// that may crash, possibly with both calls in flight, and an owner who may cancel while
    /// the batch awaits decisions or has calls in flight; the approver decides each call as
    /// in [`Config::batch`], so the world where BAT-4's partners are both reached is also one
    /// where a call is settled by a person.
    pub fn batch_crash() -> Config {
        Config {
            workers: 1,
            cancels: 1,
            losses: 0,
            duplicates: 0,
            crashes: 1,
            suspend_for: 2,
            ..Config::batch()
        }
    }

    /// The default check's world of a requester approving its own call (spec APR-3), on top
    /// of `base`, with the framework and the node doing what only drivings can get wrong
    /// (spec APR-5, REC-5, REC-6, RES-8).
    pub fn self_approving(base: Config) -> Config {
        Config {
            self_approval: true,
            // The framework changes the pending call's arguments before the resume.
            arg_changes: 1,
            // The node, run again, proposes a new call under the recorded call's id.
            renewals: 1,
            // The framework resumes the node from an old config, and the node asks its
            // second question.
            old_configs: 1,
            questions: 1,
            ..base
        }
    }

    /// The default check's world of two tenants (spec ID-1): two runs whose identities differ
    /// in tenant, session and run, and run 1's approval also sent to run 0; one worker,
    /// nothing lost, crashed or duplicated, clock to t2.
    pub fn two_tenants() -> Config {
        Config {
            runs: 2,
            cross_tenant: true,
            workers: 1,
            crashes: 0,
            losses: 0,
            duplicates: 0,
            query_unknown: false,
            max_time: 2,
            suspend_for: 1,
            ..Config::default()
        }
    }

    /// The default check's world of two runs through a crash (spec REC-1, REC-2): two runs of
    /// the direct program on one worker that may crash once, also while both calls are in
    /// flight, so that a restart reconciles both; a response may be lost.
    pub fn two_runs_crash() -> Config {
        Config {
            runs: 2,
            workers: 1,
            query_unknown: false,
            ..Config::direct(true, false)
        }
    }

    /// The default check's probe of one identity field (spec ID-1): two runs whose identities
    /// differ in `field` alone, and run 1's approval also sent to run 0; one worker, nothing
    /// lost, crashed or duplicated, no time passing.
    pub fn cross_run(field: IdentityField) -> Config {
        Config {
            runs: 2,
            cross_tenant: true,
            differs_in: Some(field),
            workers: 1,
            crashes: 0,
            losses: 0,
            duplicates: 0,
            query_unknown: false,
            max_time: 0,
            ..Config::default()
        }
    }

    /// The default check's world of two runs on one resource (spec RES-3): two runs of one
    /// tenant and session, differing in the run id, whose gated calls act on one account, so
    /// that one run's payment can overtake the other's pending approval; one worker, nothing
    /// lost, crashed or duplicated, no time passing.
    /// It is [`Config::cross_run`]'s world of the run id, with the resource shared and no
    /// approval sent across.
    pub fn shared() -> Config {
        Config {
            cross_tenant: false,
            shared_resource: true,
            ..Config::cross_run(IdentityField::Run)
        }
    }

    /// The name of [`Config::cross_run`]'s world of `field` in the default check.
    pub const fn cross_run_name(field: IdentityField) -> &'static str {
        match field {
            IdentityField::Tenant => "cross-tenant",
            IdentityField::Session => "cross-session",
            IdentityField::Run => "cross-run",
            IdentityField::Definition => "cross-definition",
        }
    }

    /// The default world on the direct program (an ungated call, no approver, no duplicated
    /// decision), with the tool's contract given: where retries and reconciliation are tried.
    pub fn direct(dedupes: bool, query_fences: bool) -> Config {
        Config {
            program: Program::Direct,
            approvers: 0,
            duplicates: 0,
            dedupes,
            query_fences,
            ..Config::default()
        }
    }

    /// A small configuration in which the flaw of `variant` is reachable, so that the property
    /// it breaks can catch it: the default, with only what the flaw needs turned on (and, for
    /// two runs, everything else turned down to keep the check short).
    pub fn exposing(variant: Variant) -> Config {
        let base = Config::default();
        let direct = Config::direct;
        match variant {
            // A stale checkpoint that matches the run in every field but its revision: a
            // retry under the same key crashes again at the same instant, and a slow
            // reconciler still holds the checkpoint of the first crash.
            Variant::NoRevisionCheck => Config {
                crashes: 2,
                ..direct(true, false)
            },
            Variant::ApprovalNotBoundToArgs => Config {
                edited_approvals: true,
                ..base
            },
            // A crash leaves an unknown outcome; for the last, its reconciliation expires.
            Variant::RetryUnknownWithoutReconcile
            | Variant::RetryFreshKeyOnDedupe
            | Variant::EscalationKeepsDeadline => direct(true, false),
            Variant::RetryWithoutContract => direct(false, false),
            Variant::RetrySameKeyOnFence => direct(false, true),
            Variant::IdentityAfterRevision | Variant::NoIdentityCheck => Config {
                runs: 2,
                cross_tenant: true,
                workers: 1,
                crashes: 0,
                losses: 0,
                duplicates: 0,
                query_unknown: false,
                ..base
            },
            Variant::IdentityIgnoresTenant => Config::cross_run(IdentityField::Tenant),
            Variant::IdentityIgnoresSession => Config::cross_run(IdentityField::Session),
            Variant::IdentityIgnoresRun => Config::cross_run(IdentityField::Run),
            Variant::IdentityIgnoresDefinition => Config::cross_run(IdentityField::Definition),
            Variant::SelfApprovalAllowed | Variant::SelfNamedApprover => Config {
                self_approval: true,
                losses: 0,
                duplicates: 0,
                ..base
            },
            Variant::RerunStepOnResume => Config {
                program: Program::SideEffectFirst,
                ..base
            },
            Variant::DoubleSuspend
            | Variant::ApprovalsNeverExpire
            | Variant::DenyLeavesRunning
            | Variant::NoExpiry
            | Variant::ResumeRecordFromCheckpoint => base,
            // A crash after the approved call committed (which moved the resource): every
            // answer to the unknown outcome meets a resource that moved.
            Variant::ResourceBlocksAnswers => Config {
                losses: 0,
                duplicates: 0,
                ..base
            },
            // The resource moves under a pending approval.
            Variant::ApprovalIgnoresResource => Config {
                outsider_moves: 1,
                crashes: 0,
                losses: 0,
                duplicates: 0,
                ..base
            },
            // A cancel while the call is in flight, an "unknown" answer, a person.
            Variant::CancelLostOnEscalation => Config {
                cancels: 1,
                operator: true,
                crashes: 0,
                ..direct(true, false)
            },
            // A cancel while the call is in flight: "not committed" before the request lands,
            // the cancel persisted, the reconciliation expiring, or "committed" while the
            // response is still on its way to the run the cancel ends.
            Variant::CancelEndsUnsettled
            | Variant::CancelNotCheckpointed
            | Variant::CancelExpiryForgetsEffect
            | Variant::LateResultRecorded => Config {
                cancels: 1,
                crashes: 0,
                losses: 0,
                query_unknown: false,
                ..direct(true, false)
            },
            // One batch, one worker, no loss, no duplicate, no time passing: the approver's
            // decisions on each call, one at a time or both at once (and a crash, with both
            // calls in flight, so that the exposing worlds together reach every partner).
            Variant::BatchDecisionWrongCall
            | Variant::BatchOneApprovalForAll
            | Variant::RejectedDispatched
            | Variant::EditIgnored => Config {
                workers: 1,
                crashes: 1,
                losses: 0,
                duplicates: 0,
                max_time: 0,
                ..Config::batch()
            },
            // Two runs of the direct program on a deduping tool, both calling under `k1`: the
            // second request under the shared bare key is answered from the first's commit.
            Variant::DispatchUnderBareKey => Config {
                runs: 2,
                workers: 1,
                crashes: 0,
                losses: 0,
                query_unknown: false,
                max_time: 0,
                ..direct(true, false)
            },
            Variant::LastCallOnlyKeyCheck => Config {
                program: Program::ThreeCalls,
                reuses: 1,
                approvers: 1,
                crashes: 0,
                losses: 0,
                duplicates: 0,
                query_unknown: false,
                dedupes: false,
                ..base
            },
        }
    }

    /// A small configuration in which the flaw of the broken `driving` is reachable, with the
    /// workers driving so (the lifecycle under check stays correct: the kernel by default).
    pub fn exposing_driving(driving: Driving) -> Config {
        let base = Config::default();
        // One worker, nothing lost, crashed or duplicated.
        let calm = Config {
            crashes: 0,
            losses: 0,
            duplicates: 0,
            workers: 1,
            ..base
        };
        match driving {
            // An approval written right after the suspension, delivered once the clock has
            // passed its expiry (but not yet the suspension's).
            Driving::Honest | Driving::DecisionTimeFromMessage => Config { driving, ..base },
            // The gated call's result is recorded; the node proposes another call under its id.
            Driving::RecordedCallByIdOnly => Config {
                driving,
                renewals: 1,
                ..calm
            },
            // The gated call's result is recorded; the framework resumes the node from the
            // config it had while the call waited.
            Driving::RunFromOldConfig => Config {
                driving,
                old_configs: 1,
                ..calm
            },
            // The gated call's result is recorded; the node asks its second question. The
            // requester approving its own call first makes two decisions fed while the call
            // waited, the situation RES-8's partner names.
            Driving::RecordedCallSkipsItsInterrupt => Config {
                driving,
                questions: 1,
                self_approval: true,
                ..calm
            },
            // The framework changes the pending call's arguments before the approval arrives;
            // nothing else goes wrong.
            Driving::ToolGetsNodeArguments => Config {
                driving,
                arg_changes: 1,
                ..calm
            },
        }
    }

    /// How long, in ticks, any suspension may last before it must have been left (spec
    /// LIVE-1): the longest expiry the world asks for, plus the one tick after it at which
    /// the expiry becomes due.
    pub fn suspension_bound(&self) -> u8 {
        self.suspend_for
            .max(self.reconcile_window)
            .saturating_add(1)
    }

    /// Whether the tool's contract lets a correct lifecycle retry after "not committed"
    /// (spec REC-3): only a deduping tool or a fencing query make a retry safe.
    pub fn retry_is_safe(&self) -> bool {
        (self.dedupes || self.query_fences) && self.max_attempts > 1
    }
}
