//! The lifecycle's properties, named `"<SPEC-ID> <present-tense sentence>"`.
//!
//! Each property is keyed by the spec ID of its rule, and each `always` has a `sometimes`
//! partner of its ID (the list is refused otherwise, see [`crate::checker::list`]). Safety
//! properties are `always`. Those about history read the [`crate::world::Violations`] the
//! world raises, by spec ID, when a transition lands; the rest read the state. The
//! table's last column names the function that holds each property's logic, one hop away. Each
//! has a `sometimes` partner showing that the states it speaks about are reached, so it cannot
//! hold vacuously.
//!
//! | property | checked | breaks it (variant) | partner | raised in (`world/ledger.rs` unless named) |
//! |---|---|---|---|---|
//! | RES-2 | when a resume lands: no other resume won from its checkpoint | no-revision-check | two workers race, one wins | `commit` |
//! | RES-3 | when a resume lands: its checkpoint is at the run's revision, and one that acts on the present finds the resource its checkpoint showed | no-revision-check, approval-ignores-resource | a stale checkpoint arrives (an approval, or a reconciler's answer) | `resume_violations`, `acts_on_moved_resource` |
//! | RES-5 | when a resume lands: the suspension had not expired | approvals-never-expire | a decision arrives after the suspension expired | `resume_violations` |
//! | APR-1 | when a gated dispatch lands: a binding approval released it | approval-not-bound-to-args | the tool commits an approved call | `book_dispatch` |
//! | APR-2 | when a decision lands: it had not expired | approvals-never-expire | a decision arrives after it expired | `resume_violations` |
//! | APR-3 | when a suspend lands: its approver is not its requester; when a decision lands: from the recorded approver, not the requester; in every state: no pending approval is held by its requester | self-approval-allowed, self-named-approver | the requester's own approval arrives; the agent asks to suspend naming itself, a worker free to feed it, and only APR-3 refuses it | `step_violations`, `resume_violations`; here (the state) |
//! | APR-4 | when a denial lands: the run failed; when a dispatch lands: its call was never denied | deny-leaves-running | a denial fails the run | `resume_violations`, `book_dispatch` |
//! | EFF-1 | when the tool commits: no other attempt of the key committed | retry-without-contract, retry-fresh-key-on-dedupe, rerun-step-on-resume | a delayed request reaches the tool after "not committed" | `commit_violations` |
//! | EFF-2 | when the tool commits: the run has not ended as if nothing more would commit (every end but abandoned, or expired naming the effect) | cancel-ends-unsettled, cancel-expiry-forgets-effect | a request is still on its way when its run ends | `commit_violations` |
//! | REC-2 | when a dispatch lands: its call's outcome was not unknown | retry-unknown-without-reconcile | a crash leaves an unknown outcome | `book_dispatch` |
//! | REC-3 | when a retry lands: every earlier key is fenced or deduped, its own is not fenced | retry-same-key-on-fence (and the two above) | a retry after "not committed" succeeds | `book_dispatch` |
//! | REC-4 | when a dispatch lands: its key's result was not known | rerun-step-on-resume, last-call-only-key-check | reconcile reuses a committed result | `book_dispatch` |
//! | KEY-1 | when a dispatch lands: its key carries the arguments of its first dispatch | last-call-only-key-check | the agent proposes an earlier call id or key again | `book_dispatch` |
//! | KEY-3 | when the tool handles a request: its outcome is the one the run's own records give; when a write lands: a "committed" the run records is a commit of its own | dispatch-under-bare-key | the tool handles a request under a key another run's request committed under | `world/transition.rs` `handle`, `settled_from_elsewhere` (the ledger: `world/tool.rs`) |
//! | CAN-2 | when a write lands after an accepted cancel: the run waits with the cancel in its suspension and in the checkpoint the write leaves, or has ended cancelled, abandoned, or expired naming the effect | cancel-lost-on-escalation, cancel-not-checkpointed, cancel-expiry-forgets-effect | a cancel waits while a person settles an unknown outcome | `can_2` |
//! | INV-1 | when a write lands: the run was not terminal | late-result-recorded | a message reaches a finished run | `step_violations` |
//! | AUD-1 | when a write lands, and in every state: one record per revision, describing it | resume-record-from-checkpoint | a run completes, every step audited | `step_violations`; here, `audited` |
//! | ID-1 | when a resume is stepped: a foreign checkpoint is refused for its identity | identity-after-revision, no-identity-check, identity-ignores-tenant, identity-ignores-session, identity-ignores-run, identity-ignores-definition | another tenant's checkpoint reaches a run | `resume_violations`; `transition.rs` `stage` |
//! | SUS-1 | in every state: a suspension's expiry and start are sound | escalation-keeps-deadline | a run waits on a person after its reconciliation ran out | here (the state) |
//! | SUS-2 | when a suspend lands: the run was not suspended | double-suspend | a run waiting for approval is asked to suspend again, a worker free to feed it, and only SUS-2 refuses it | `step_violations` |
//! | LIVE-1 | in every state: no suspension outlasts its bound | no-expiry | a suspension expires | here, `within_bound` |
//! | LIVE-2 | in every state: every suspension not past its expiry accepts some honest answer | resource-blocks-answers | a decision arrives after the resource moved | `World::stuck_run` (`world/honest.rs`) |
//! | BAT-2 | when a dispatch lands: its batch call was approved or edited by an accepted decision naming it | batch-one-approval-for-all, batch-decision-wrong-call | a batch's calls are decided one at a time | `batch_dispatch` |
//! | BAT-3 | when a dispatch lands: its batch call was not rejected, answered or denied | rejected-dispatched | a batch runs on without the call it rejected or answered | `batch_dispatch` |
//! | BAT-4 | when a write lands: each call of the batch is settled at most once, as the world knows it was, and all of them when the run completes | batch-decision-wrong-call | two calls in flight meet a restart or a cancel; a run completes after its batch | `batch_settled` |
//! | BAT-5 | when a dispatch lands: its batch call carries the approver's arguments (the edited ones after an edit) | edit-ignored | an edited call is dispatched | `batch_dispatch` |
//! | APR-5 | when a dispatch lands: the arguments the worker hands the tool have the dispatch's digest, the one its approval bound | tool-gets-node-arguments (a driving) | a call is dispatched after its arguments changed in the agent's state | `world/handout.rs` `handed`, raised in `world/transition.rs` `staged` |
//! | REC-5 | when the agent's proposal is answered from the record: the recorded call is the one proposed | recorded-call-by-id-only (a driving) | a new call is proposed under the call id of one whose result is recorded | `world/handout.rs` `renew` |
//! | REC-6 | when the framework resumes the node from an old config: no call whose result is recorded is dispatched again | run-from-old-config (a driving) | the node is resumed from an old config after its gated call's result is recorded | `world/handout.rs` `from_old_config` |
//! | RES-8 | when the node asks its second question: the gated call's record consumed every value fed to it, so the question is handed its own | recorded-call-skips-its-interrupt (a driving) | the second question follows a gated call that was fed more than one decision | `world/handout.rs` `ask` |
//! | CLK-2 | when a decision lands: it was stamped with the driver's time, or was in time at the driver's time (it and its suspension) | decision-time-from-message (a driving, `model/src/driving.rs`) | a decision written before its expiry arrives after it | `resume_violations` |
//!
//! Why each partner is the situation its `always` guards: spec/check-output.md, "What each
//! partner shows".
//!
//! Liveness (LIVE-1) is a budgeted `always`: the world tracks in clock ticks how long the
//! current suspension has lasted and the property requires it to stay within the longest
//! expiry plus one tick. The clock is bounded and never passes a due expiry, so the model is
//! acyclic and the property can really be broken, unlike stateright's `eventually`, which
//! misses violations on cycles and on paths cut by a bound.

use crate::checker::{ListError, PropertyList};
use crate::world::{witness, Ending, RunView, World, WorldState};
use crate::Lifecycle;
use resumable_kernel::{ReasonKind, SpecId};
use stateright::Property;

/// Property names, for tests, reports and broken variants' targets.
pub mod names {
    /// RES-2, always.
    pub const RES_2: &str = "RES-2 at most one resume wins per suspension";
    /// RES-3, always.
    pub const RES_3: &str =
        "RES-3 a stale revision is never resumed, nor a moved resource acted on";
    /// RES-5, always.
    pub const RES_5: &str = "RES-5 no resume is accepted after the suspension expired";
    /// APR-1, always.
    pub const APR_1: &str =
        "APR-1 nothing gated is dispatched without an approval bound to call, arguments and revision";
    /// APR-2, always.
    pub const APR_2: &str = "APR-2 an expired decision is never accepted";
    /// APR-3, always.
    pub const APR_3: &str =
        "APR-3 only the recorded approver decides, never the requester of the call";
    /// APR-4, always.
    pub const APR_4: &str = "APR-4 a denial fails the run, and the denied call never runs";
    /// EFF-1, always.
    pub const EFF_1: &str = "EFF-1 the tool commits each key at most once";
    /// EFF-2, always.
    pub const EFF_2: &str = "EFF-2 nothing commits for a run that ended as if nothing would";
    /// KEY-1, always.
    pub const KEY_1: &str = "KEY-1 a key is never dispatched with other arguments";
    /// KEY-3, always.
    pub const KEY_3: &str =
        "KEY-3 no run is answered at the tool from a record another run's request made";
    /// CAN-2, always.
    pub const CAN_2: &str = "CAN-2 an accepted cancel is never lost";
    /// LIVE-2, always.
    pub const LIVE_2: &str =
        "LIVE-2 no run is stuck: every open suspension accepts some honest answer";
    /// REC-2, always.
    pub const REC_2: &str =
        "REC-2 an unknown outcome is never dispatched again before a not-committed answer";
    /// REC-3, always.
    pub const REC_3: &str =
        "REC-3 a call goes again only under a key its tool's contract makes safe and live";
    /// REC-4, always.
    pub const REC_4: &str =
        "REC-4 a committed result is reused, never executed again, under any call id";
    /// INV-1, always.
    pub const INV_1: &str = "INV-1 terminal phases are absorbing";
    /// AUD-1, always.
    pub const AUD_1: &str =
        "AUD-1 each accepted transition is audited exactly once, the revision advancing by one";
    /// ID-1, always.
    pub const ID_1: &str =
        "ID-1 no resume crosses tenant or session, and identity is checked first";
    /// SUS-1, always.
    pub const SUS_1: &str =
        "SUS-1 every suspension has a reason, an expiry and a responsible party";
    /// SUS-2, always.
    pub const SUS_2: &str = "SUS-2 a suspend while suspended is refused";
    /// LIVE-1, always (budgeted).
    pub const LIVE_1: &str = "LIVE-1 every suspension is left within its bound";
    /// BAT-2, always.
    pub const BAT_2: &str = "BAT-2 no call of a batch runs without its own decision";
    /// BAT-3, always.
    pub const BAT_3: &str = "BAT-3 a call rejected, answered or denied never runs";
    /// BAT-4, always.
    pub const BAT_4: &str = "BAT-4 every call of a batch is settled once";
    /// BAT-5, always.
    pub const BAT_5: &str = "BAT-5 an edited call runs only with the approver's arguments";
    /// APR-5, always.
    pub const APR_5: &str = "APR-5 a tool runs only with arguments whose digest an approval bound";
    /// REC-5, always.
    pub const REC_5: &str = "REC-5 a recorded result answers only its own call";
    /// REC-6, always.
    pub const REC_6: &str =
        "REC-6 a call whose result is recorded never runs again, whatever config resumes it";
    /// RES-8, always.
    pub const RES_8: &str = "RES-8 each interrupt of a node gets its own answer";
    /// CLK-2, always.
    pub const CLK_2: &str =
        "CLK-2 a decision is judged at the driver's time, never at a time its message claims";

    /// KEY-3's partner (two runs, or a per-run reduction's world).
    pub const SHARED_KEY: &str =
        "KEY-3 the tool handles a request under a key another run's request committed under";
    /// RES-2's partner.
    pub const RACE_WON: &str = "RES-2 two workers race to resume one suspension and one wins";
    /// RES-3's partner.
    pub const STALE_ARRIVES: &str =
        "RES-3 a stale checkpoint arrives, with an approval or a reconciler's answer";
    /// APR-1's partner (programs with a gated call).
    pub const APPROVED_RUNS: &str = "APR-1 the tool commits an approved call";
    /// APR-2's partner (with approvers).
    pub const EXPIRED_ARRIVES: &str = "APR-2 a decision arrives after it expired";
    /// APR-3's partner at decision time (with the requester approving itself).
    pub const SELF_ARRIVES: &str = "APR-3 the requester's approval of its own call arrives";
    /// APR-3's partner at suspend time (with the requester approving itself).
    pub const SELF_NAMED_OFFERED: &str =
        "APR-3 the agent asks to suspend naming itself its approver, refused by APR-3 alone";
    /// RES-5's partner (with approvers).
    pub const AFTER_EXPIRY: &str = "RES-5 a decision arrives after the suspension expired";
    /// APR-4's partner (with approvers).
    pub const DENIED: &str = "APR-4 a denial fails the run";
    /// EFF-1's partner (with crashes).
    pub const LATE_REQUEST: &str =
        "EFF-1 a delayed request reaches the tool after a not-committed answer";
    /// REC-2's partner (with crashes).
    pub const UNKNOWN: &str = "REC-2 a crash leaves an unknown outcome";
    /// REC-3's witness (only where the tool's contract makes a retry safe).
    pub const RETRY_SUCCEEDS: &str = "REC-3 a retry after a not-committed answer succeeds";
    /// REC-4's partner (with crashes).
    pub const REUSED: &str = "REC-4 reconcile reuses a committed result";
    /// INV-1's partner.
    pub const LATE_TO_TERMINAL: &str = "INV-1 a message reaches a finished run";
    /// AUD-1's partner.
    pub const COMPLETES: &str = "AUD-1 a run completes, every step audited";
    /// ID-1's partner (two runs, cross-tenant decisions on).
    pub const FOREIGN_OFFERED: &str = "ID-1 a checkpoint of another tenant reaches a run";
    /// SUS-1's partner.
    pub const WAITS: &str = "SUS-1 a run waits on a person after its reconciliation ran out";
    /// SUS-2's partner (programs with a gated call).
    pub const SUSPEND_OFFERED: &str =
        "SUS-2 a run waiting for approval is asked to suspend again, refused by SUS-2 alone";
    /// LIVE-1's partner.
    pub const EXPIRES: &str = "LIVE-1 a suspension expires";
    /// LIVE-2's partner (with a resource that moves before a resume).
    pub const RESOURCE_MOVED: &str = "LIVE-2 a decision arrives after the resource moved";
    /// KEY-1's partner (the three-call program with re-proposals).
    pub const REUSE_PROPOSED: &str = "KEY-1 the agent proposes an earlier call id or key again";
    /// CAN-2's partner (with cancels).
    pub const CANCEL_WAITS: &str = "CAN-2 a cancel waits while a person settles an unknown outcome";
    /// EFF-2's partner (with crashes or cancels).
    pub const LATE_AFTER_END: &str = "EFF-2 a request is still on its way when its run ends";

    /// BAT-2's partner (the batch program).
    pub const BATCH_SPLIT: &str = "BAT-2 a batch's calls are decided one at a time";
    /// BAT-3's partner (the batch program).
    pub const BATCH_RUNS_ON: &str =
        "BAT-3 a batch runs on without the call it rejected or answered";
    /// BAT-4's partner (the batch program, with a crash or a cancel).
    pub const BATCH_TWO_UNKNOWN: &str =
        "BAT-4 two calls of a batch in flight meet a restart or a cancel";
    /// BAT-4's partner (the batch program).
    pub const BATCH_COMPLETES: &str = "BAT-4 a run completes after its batch";
    /// BAT-5's partner (the batch program).
    pub const EDITED_DISPATCHED: &str = "BAT-5 an edited call is dispatched";
    /// APR-5's partner (with the framework changing a pending call's arguments).
    pub const CHANGED_DISPATCHED: &str =
        "APR-5 a call is dispatched after its arguments changed in the agent's state";
    /// REC-5's partner (with the node proposing a new call under a recorded call's id).
    pub const RENEWED: &str =
        "REC-5 a new call is proposed under the call id of one whose result is recorded";
    /// REC-6's partner (with the framework resuming from old configs).
    pub const OLD_CONFIG: &str =
        "REC-6 the node is resumed from an old config after its call's result is recorded";
    /// RES-8's partner (with the node asking a second question).
    pub const ASKED_AFTER_ANSWERS: &str =
        "RES-8 a second question follows a gated call that was fed more than one decision";
    /// CLK-2's partner (with approvers).
    pub const WRITTEN_IN_TIME_ARRIVES_LATE: &str =
        "CLK-2 a decision written before its expiry arrives after it, by the driver's clock";

    /// Not in the default list: a `sometimes` that no correct lifecycle reaches. Where the
    /// tool neither dedupes nor fences and a broken lifecycle retries after "not committed",
    /// the delayed original commits too. [`super::hazards`] holds it, for demonstrations.
    pub const DOUBLE_COMMIT: &str =
        "EFF-1 hazard: a key commits twice (only a retrying broken lifecycle reaches it)";
}

fn clean<R>(s: &WorldState<R>, id: SpecId) -> bool {
    !s.violated.has(id)
}

fn any_run<R>(s: &WorldState<R>, f: impl Fn(&RunView) -> bool) -> bool {
    s.runs.iter().any(|slot| f(&slot.run.view))
}

/// AUD-1 on the state: every run's log holds one record per revision, and no write broke the
/// rule (checked when it landed).
fn audited<L: Lifecycle>(_: &World<L>, s: &WorldState<L::Run>) -> bool {
    clean(s, SpecId::Aud1)
        && s.runs
            .iter()
            .all(|slot| u64::from(slot.audited) == slot.run.view.revision)
}

/// LIVE-1: no run has been suspended for longer than the bound, in clock ticks.
fn within_bound<L: Lifecycle>(w: &World<L>, s: &WorldState<L::Run>) -> bool {
    let bound = w.config().suspension_bound();
    s.runs.iter().all(|slot| {
        slot.waiting_since
            .is_none_or(|since| s.now.saturating_sub(since) <= bound)
    })
}

/// The properties, each keyed by its spec ID: every `always`, and every `sometimes` partner,
/// whatever the configuration. A partner the configuration cannot reach (a race needs two
/// workers, a partner about approvals a gated call and an approver, one about crashes a crash
/// budget...) is reported unreached, and the `always` it partners unexercised: a
/// configuration that cannot exercise a property has not checked it. The list is refused if an
/// `always` has no partner of its spec ID.
pub fn properties<L: Lifecycle>(
    _world: &World<L>,
) -> Result<PropertyList<World<L>, SpecId>, ListError> {
    use names::*;
    use SpecId::*;
    PropertyList::<World<L>, SpecId>::builder()
        .always(Res2, RES_2, |_, s| clean(s, Res2))
        .always(Res3, RES_3, |_, s| clean(s, Res3))
        .always(Res5, RES_5, |_, s| clean(s, Res5))
        .always(Apr1, APR_1, |_, s| clean(s, Apr1))
        .always(Apr2, APR_2, |_, s| clean(s, Apr2))
        .always(Apr3, APR_3, |_, s| {
            clean(s, Apr3) && !any_run(s, |v| v.self_approved)
        })
        .always(Apr4, APR_4, |_, s| clean(s, Apr4))
        .always(Eff1, EFF_1, |_, s| clean(s, Eff1))
        .always(Eff2, EFF_2, |_, s| clean(s, Eff2))
        .always(Key1, KEY_1, |_, s| clean(s, Key1))
        .always(Key3, KEY_3, |_, s| clean(s, Key3))
        .always(Can2, CAN_2, |_, s| clean(s, Can2))
        .always(Rec2, REC_2, |_, s| clean(s, Rec2))
        .always(Rec3, REC_3, |_, s| clean(s, Rec3))
        .always(Rec4, REC_4, |_, s| clean(s, Rec4))
        .always(Inv1, INV_1, |_, s| clean(s, Inv1))
        .always(Aud1, AUD_1, audited)
        .always(Id1, ID_1, |_, s| clean(s, Id1))
        .always(Sus1, SUS_1, |_, s| !any_run(s, |v| !v.well_formed))
        .always(Sus2, SUS_2, |_, s| clean(s, Sus2))
        .always(Live1, LIVE_1, within_bound)
        .always(Live2, LIVE_2, |w, s| w.stuck_run(s).is_none())
        .always(Bat2, BAT_2, |_, s| clean(s, Bat2))
        .always(Bat3, BAT_3, |_, s| clean(s, Bat3))
        .always(Bat4, BAT_4, |_, s| clean(s, Bat4))
        .always(Bat5, BAT_5, |_, s| clean(s, Bat5))
        .always(Clk2, CLK_2, |_, s| clean(s, Clk2))
        .always(Apr5, APR_5, |_, s| clean(s, Apr5))
        .always(Rec5, REC_5, |_, s| clean(s, Rec5))
        .always(Rec6, REC_6, |_, s| clean(s, Rec6))
        .always(Res8, RES_8, |_, s| clean(s, Res8))
        .sometimes(Res2, RACE_WON, |_, s| {
            s.workers.iter().any(|w| match w {
                crate::world::Worker::Staged(st) => {
                    st.resumed_from.is_some()
                        && s.runs.get(usize::from(st.run)).is_some_and(|slot| {
                            let bit = u32::try_from(st.from)
                                .ok()
                                .and_then(|f| 1u32.checked_shl(f));
                            bit.is_some_and(|b| slot.won & b != 0)
                        })
                }
                _ => false,
            })
        })
        .sometimes(Res3, STALE_ARRIVES, |_, s| {
            s.seen & witness::STALE_ARRIVED != 0
        })
        .sometimes(Apr1, APPROVED_RUNS, |_, s| {
            s.runs
                .iter()
                .any(|slot| slot.tool.committed_key(crate::world::GATED))
        })
        .sometimes(Apr4, DENIED, |_, s| {
            any_run(s, |v| v.ending == Some(Ending::Denied))
        })
        .sometimes(Apr2, EXPIRED_ARRIVES, |_, s| {
            s.seen & witness::EXPIRED_APPROVAL != 0
        })
        .sometimes(Res5, AFTER_EXPIRY, |_, s| {
            s.seen & witness::AFTER_EXPIRY != 0
        })
        .sometimes(Apr3, SELF_ARRIVES, |_, s| {
            s.decisions
                .iter()
                .any(|m| m.party == crate::world::Party::Requester && m.delivered > 0)
        })
        // The agent names itself as approver where its next call is gated, a worker is free to
        // feed it, and only APR-3's check refuses it (a refused request is no transition).
        .sometimes(Apr3, SELF_NAMED_OFFERED, |w, s| w.self_named_asked(s))
        .sometimes(Eff1, LATE_REQUEST, |_, s| {
            s.seen & witness::LATE_REQUEST != 0
        })
        .sometimes(Rec2, UNKNOWN, |_, s| {
            any_run(s, |v| v.reason == Some(ReasonKind::OutcomeUnknown))
        })
        .sometimes(Rec4, REUSED, |_, s| s.seen & witness::REUSED != 0)
        .sometimes(Rec3, RETRY_SUCCEEDS, |_, s| {
            s.seen & witness::RETRY_SUCCEEDED != 0
        })
        .sometimes(Inv1, LATE_TO_TERMINAL, |_, s| {
            s.seen & witness::LATE_TO_TERMINAL != 0
        })
        .sometimes(Aud1, COMPLETES, |w, s| {
            any_run(s, |v| v.ending == Some(Ending::Completed)) && audited(w, s)
        })
        .sometimes(Id1, FOREIGN_OFFERED, |_, s| {
            s.decisions
                .iter()
                .any(|m| m.source != m.target && m.delivered > 0)
        })
        // The wait opened from another: a reconciliation that ran out of time goes to a
        // person, and the new suspension's start and expiry must be its own.
        .sometimes(Sus1, WAITS, |_, s| {
            any_run(s, |v| v.reason == Some(ReasonKind::ManualIntervention))
        })
        // The world's agent re-sends its suspend while its first approval is pending (as an
        // agent whose reply was lost does), a worker is free to feed it, and only SUS-2's
        // check refuses it.
        .sometimes(Sus2, SUSPEND_OFFERED, |w, s| w.second_suspend_asked(s))
        .sometimes(Live1, EXPIRES, |_, s| {
            any_run(s, |v| matches!(v.ending, Some(Ending::Expired { .. })))
        })
        .sometimes(Live2, RESOURCE_MOVED, |_, s| {
            s.seen & witness::RESOURCE_MOVED != 0
        })
        .sometimes(Key1, REUSE_PROPOSED, |_, s| {
            s.seen & witness::REUSE_PROPOSED != 0
        })
        .sometimes(Key3, SHARED_KEY, |_, s| s.seen & witness::SHARED_KEY != 0)
        .sometimes(Can2, CANCEL_WAITS, |_, s| {
            any_run(s, |v| {
                v.cancel_pending && v.reason == Some(ReasonKind::ManualIntervention)
            })
        })
        .sometimes(Eff2, LATE_AFTER_END, |_, s| {
            s.requests.iter().any(|m| {
                s.runs
                    .get(usize::from(m.run))
                    .is_some_and(|slot| slot.run.view.ending.is_some())
            })
        })
        .sometimes(Bat2, BATCH_SPLIT, |_, s| s.seen & witness::BATCH_SPLIT != 0)
        .sometimes(Bat3, BATCH_RUNS_ON, |_, s| {
            s.seen & witness::BATCH_RUNS_ON != 0
        })
        .sometimes(Bat4, BATCH_TWO_UNKNOWN, |_, s| {
            s.seen & witness::BATCH_TWO_UNKNOWN != 0
        })
        .sometimes(Bat4, BATCH_COMPLETES, |w, s| {
            w.config().program == crate::config::Program::Batch
                && any_run(s, |v| v.ending == Some(Ending::Completed))
        })
        .sometimes(Bat5, EDITED_DISPATCHED, |_, s| {
            s.seen & witness::EDITED_DISPATCHED != 0
        })
        .sometimes(Apr5, CHANGED_DISPATCHED, |_, s| {
            s.seen & witness::CHANGED_DISPATCHED != 0
        })
        .sometimes(Rec5, RENEWED, |_, s| s.seen & witness::RENEWED != 0)
        .sometimes(Rec6, OLD_CONFIG, |_, s| s.seen & witness::OLD_CONFIG != 0)
        .sometimes(Res8, ASKED_AFTER_ANSWERS, |_, s| {
            s.seen & witness::ASKED_AFTER_ANSWERS != 0
        })
        // The approver's message says it was written in time (its own expiry is after it),
        // and the driver's clock has passed that expiry when it is delivered.
        .sometimes(Clk2, WRITTEN_IN_TIME_ARRIVES_LATE, |_, s| {
            s.seen & witness::EXPIRED_APPROVAL != 0
        })
        .build()
}

/// Demonstrations that no correct lifecycle reaches, kept out of [`properties`] so that a
/// correct lifecycle's check is not reported as missing them: the double commit of the tool
/// table's first row (spec EFF-1, REC-3).
pub fn hazards<L: Lifecycle>() -> Vec<Property<World<L>>> {
    vec![Property::<World<L>>::sometimes(
        names::DOUBLE_COMMIT,
        |_, s| s.violated.has(SpecId::Eff1),
    )]
}
