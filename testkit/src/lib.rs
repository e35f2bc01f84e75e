//! Fixtures shared by the workspace's tests: the seed's run and call, builders for inputs and
//! expected effects, the scenarios every lifecycle machine must pass ([`Machine`]), and
//! commands run as a user runs them ([`process`]).
//!
//! Dev-only: the tests of the kernel, the model, conformance, the runtime and the command line
//! use it; nothing else does.

pub mod batch;
mod machine;
pub mod process;

pub use machine::*;

use resumable_kernel::*;

/// The operator of the fixtures' policy.
pub const OPERATOR: Name = Name::lit("ops");
/// The approver of the seed's suspension.
pub const APPROVER: Name = Name::lit("approver");
/// The agent that asks for the seed's call.
pub const REQUESTER: Name = Name::lit("agent");
/// The fixtures' reconcile window.
pub const WINDOW: u64 = 100;

/// The seed's identity, with `run` as the run's name.
pub fn identity(run: &str) -> Identity {
    Identity {
        tenant: Name::lit("tenant-a"),
        session: Name::lit("session-1"),
        run: Name::new(run).unwrap(),
        definition: Name::lit("demo@1"),
    }
}

/// A new kernel run named `run`, at t0 under the fixtures' policy.
pub fn new_run(run: &str) -> Run {
    new_run_on(&KernelMachine, run)
}

/// A tool contract of three attempts.
pub fn contract(dedupes: bool, query_fences: bool) -> ToolContract {
    ToolContract {
        dedupes,
        query_fences,
        max_attempts: 3,
        ..ToolContract::default()
    }
}

/// A call to `tool` (its arguments the tool's name) of a deduping tool.
pub fn call(call_id: &str, tool: &str, key: &str) -> Call {
    Call {
        call_id: Name::new(call_id).unwrap(),
        tool: Name::new(tool).unwrap(),
        args: Digest::of(tool.as_bytes()),
        key: IdempotencyKey::new(key).unwrap(),
        contract: contract(true, false),
    }
}

/// `event` at time `t`.
pub fn at(t: u64, event: Event) -> Input {
    Input { at: Time(t), event }
}

/// A suspend asking [`APPROVER`] to approve `c` for [`REQUESTER`], at resource version 1.
pub fn suspend_for_approval(c: Call, expires_at: u64) -> Event {
    Event::Suspend {
        wait: Wait::Approval {
            call: c,
            requester: REQUESTER,
            prior: Prior::NONE,
        },
        expires_at: Time(expires_at),
        responsible: APPROVER,
        resource_version: 1,
    }
}

/// A dispatch of `c` that states no earlier use of its id or key and no resource version.
pub fn first_dispatch(c: Call) -> Event {
    Event::Dispatch {
        call: c,
        prior: Prior::NONE,
        resource_version: None,
    }
}

/// `c`'s tool answering `result` to `attempt`.
pub fn tool_result(c: &Call, attempt: u8, result: &[u8]) -> Event {
    Event::ToolResult {
        call_id: c.call_id,
        attempt,
        result: Digest::of(result),
    }
}

/// A completion with the digest of `result`.
pub fn complete(result: &[u8]) -> Event {
    Event::Complete {
        result: Digest::of(result),
    }
}

/// A failure with the error `code`.
pub fn fail(code: &str) -> Event {
    Event::Fail {
        code: Name::new(code).unwrap(),
    }
}

/// Facts at resource version 1: policy permits, within budget.
pub fn facts() -> Facts {
    Facts {
        resource_version: 1,
        permitted: true,
        within_budget: true,
    }
}

/// [`APPROVER`]'s approval of `c` at `cp`'s revision, valid until t1000.
pub fn approval(cp: &Checkpoint, c: &Call) -> Approval {
    Approval {
        call_id: c.call_id,
        args: c.args,
        requester: REQUESTER,
        approver: APPROVER,
        revision: cp.revision,
        expires_at: Time(1_000),
    }
}

/// The fields an approval binds to, in the order they are checked (spec APR-1).
pub const BINDING: [ApprovalField; 4] = [
    ApprovalField::Revision,
    ApprovalField::CallId,
    ApprovalField::Args,
    ApprovalField::Requester,
];

/// Changes `field` of `a` so that the approval no longer binds to the call it was made for:
/// an older revision, another call, other arguments, another requester.
pub fn unbind(a: &mut Approval, field: ApprovalField) {
    match field {
        ApprovalField::Revision => a.revision = Revision(0),
        ApprovalField::CallId => a.call_id = Name::lit("call-2"),
        ApprovalField::Args => a.args = Digest::of(b"edited arguments"),
        ApprovalField::Requester => a.requester = Name::lit("other-agent"),
    }
}

/// A resume from `cp`, with facts that agree with it (current policy permits, the resource
/// is at the version the checkpoint saw).
pub fn resume(cp: Checkpoint, decision: Decision) -> Event {
    resume_at_version(cp, decision, cp.resource_version)
}

/// A resume from `cp` approving `c` with [`APPROVER`]'s approval bound to `cp`, with facts that
/// agree with it.
pub fn approving(cp: Checkpoint, c: &Call) -> Event {
    resume(cp, Decision::Approve(approval(&cp, c)))
}

/// A resume from `cp` denying `c` with [`APPROVER`]'s approval bound to `cp`, with facts that
/// agree with it.
pub fn denying(cp: Checkpoint, c: &Call) -> Event {
    resume(cp, Decision::Deny(approval(&cp, c)))
}

/// A resume from `cp` whose facts report the resource at `version`: honest facts after the
/// resource moved (or not), current policy permitting.
pub fn resume_at_version(cp: Checkpoint, decision: Decision, version: u64) -> Event {
    resume_with(
        cp,
        decision,
        Facts {
            resource_version: version,
            ..facts()
        },
    )
}

/// A resume from `cp` with the facts given.
pub fn resume_with(cp: Checkpoint, decision: Decision, facts: Facts) -> Event {
    Event::Resume(Resume {
        checkpoint: cp,
        decision,
        facts,
    })
}

/// A resume from `cp` at the resource version it saw, with the policy and budget facts given.
pub fn with_facts(
    cp: Checkpoint,
    decision: Decision,
    permitted: bool,
    within_budget: bool,
) -> Event {
    resume_with(
        cp,
        decision,
        Facts {
            resource_version: cp.resource_version,
            permitted,
            within_budget,
        },
    )
}

/// What a run records when `c`'s tool answers `result`.
pub fn outcome(c: &Call, result: Digest) -> CallOutcome {
    CallOutcome {
        call_id: c.call_id,
        key: c.key,
        args: c.args,
        result,
    }
}

/// The suspension of a run whose dispatch of `c` (attempt 0, sent once) has an unknown
/// outcome since `since`, for [`OPERATOR`] to reconcile within [`WINDOW`], with the cancel
/// `cancelled_by` pending.
pub fn unknown_outcome(c: Call, since: u64, cancelled_by: Option<Name>) -> Suspension {
    Suspension {
        reason: Reason::OutcomeUnknown {
            in_flight: in_flight(c, 0, 1),
            cancelled_by,
        },
        since: Time(since),
        expires_at: Time(since + WINDOW),
        responsible: OPERATOR,
    }
}

/// `c` as a checkpoint names its pending call, under `attempt`.
pub fn pending_call(c: &Call, attempt: u8) -> PendingCall {
    PendingCall {
        call_id: c.call_id,
        tool: c.tool,
        args: c.args,
        attempt,
    }
}

/// An unsealed checkpoint of the current schema for `identity` that holds `call` (its pending
/// call under the attempt given, and its key digest) or no call, and nothing a test has not
/// stated yet: no requester, wait target, batch or pending cancel; revision, resource version
/// and times 0; a manual intervention that continues, [`OPERATOR`] responsible. A test sets
/// the fields it expects on it, then seals it.
pub fn checkpoint_holding(identity: Identity, call: Option<(&Call, u8)>) -> Checkpoint {
    Checkpoint {
        schema_version: SCHEMA_VERSION,
        identity,
        revision: Revision(0),
        resource_version: 0,
        reason: ReasonKind::ManualIntervention,
        next_intent: Intent::Continue,
        pending: call.map(|(c, attempt)| pending_call(c, attempt)),
        key_digest: call.map(|(c, _)| checkpoint::key_digest(&c.key, &c.args)),
        requester: None,
        waiting_on: None,
        expires_at: Time(0),
        responsible: OPERATOR,
        created_at: Time(0),
        batch: None,
        cancel_requested_by: None,
        digest: Digest::default(),
    }
}

/// The version 1 checkpoint holding the same facts as `cp`, sealed.
pub fn as_v1(cp: &Checkpoint) -> CheckpointV1 {
    CheckpointV1 {
        schema_version: SCHEMA_V1,
        tenant: cp.identity.tenant,
        session: cp.identity.session,
        run: cp.identity.run,
        revision: cp.revision,
        reason: cp.reason,
        next_intent: cp.next_intent,
        pending: cp.pending,
        key_digest: cp.key_digest,
        requester: cp.requester,
        waiting_on: cp.waiting_on,
        expires_at: cp.expires_at,
        responsible: cp.responsible,
        created_at: cp.created_at,
        digest: Digest::default(),
    }
    .seal()
}

/// The version 2 checkpoint holding the same facts as `cp`, sealed: `cp`'s fields but the
/// pending cancel and the batch, which version 2 did not record, read back under its schema.
pub fn as_v2(cp: &Checkpoint) -> CheckpointV2 {
    assert_eq!(
        (cp.cancel_requested_by, cp.batch),
        (None, None),
        "a version 2 checkpoint records neither a pending cancel nor a batch"
    );
    let mut value = serde_json::to_value(cp).expect("a checkpoint serialises");
    let fields = value
        .as_object_mut()
        .expect("a checkpoint is a JSON object");
    fields.remove("cancel_requested_by");
    fields.remove("batch");
    fields.insert("schema_version".into(), SCHEMA_V2.into());
    let v2: CheckpointV2 = serde_json::from_value(value).expect("the same facts, in version 2");
    v2.seal()
}

/// Steps the kernel and expects acceptance; returns the next run and the effects.
pub fn accept(run: &Run, input: Input) -> (Run, Effects) {
    accept_on(&KernelMachine, run, input)
}

/// Steps the kernel and expects a rejection.
pub fn reject(run: &Run, input: Input) -> Rejection {
    reject_on(&KernelMachine, run, input)
}

/// A run suspended at t1 for approval of `c`, expiring at t50, with its checkpoint.
pub fn pending(c: Call) -> (Run, Checkpoint) {
    pending_on(&KernelMachine, c)
}

/// A run whose dispatch of `c` (at t1) was in flight when the worker restarted (at t2).
pub fn outcome_unknown(c: Call) -> (Run, Checkpoint) {
    outcome_unknown_on(&KernelMachine, c)
}

// ---------------------------------------------------------------------------------------------
// Fixtures per phase and builders of expected effects, for the phase-by-phase unit tests.
// ---------------------------------------------------------------------------------------------

/// The effects of a transition, in order, as a list that compares in one assertion.
pub fn effects(fx: &Effects) -> Vec<Effect> {
    fx.iter().collect()
}

/// The audit record an accepted input must emit first (spec AUD-1).
pub fn audit(
    revision: u64,
    at: u64,
    event: EventKind,
    decision: Option<DecisionKind>,
    phase: PhaseKind,
    reason: Option<ReasonKind>,
) -> Effect {
    Effect::Audit(AuditRecord {
        revision: Revision(revision),
        at: Time(at),
        event,
        decision,
        phase,
        reason,
    })
}

/// The audit record of an input of kind `event` accepted at `at` that leaves the run in
/// `phase` at `revision`, neither resumed nor suspended (spec AUD-1).
pub fn record(revision: u64, at: u64, event: EventKind, phase: PhaseKind) -> Effect {
    audit(revision, at, event, None, phase, None)
}

/// The audit record of an input of kind `event` accepted at `at` that leaves the run
/// suspended for `reason` at `revision` (spec AUD-1).
pub fn suspended_record(revision: u64, at: u64, event: EventKind, reason: ReasonKind) -> Effect {
    audit(
        revision,
        at,
        event,
        None,
        PhaseKind::Suspended,
        Some(reason),
    )
}

/// The audit record of a resume accepted at `at` with `decision`, leaving the run in `phase`
/// at `revision` (spec AUD-1).
pub fn resume_record(revision: u64, at: u64, decision: DecisionKind, phase: PhaseKind) -> Effect {
    audit(revision, at, EventKind::Resume, Some(decision), phase, None)
}

/// The phase of a run running with `c` in flight under `attempt`, dispatched `dispatches`
/// times.
pub fn running_with(c: Call, attempt: u8, dispatches: u8) -> Phase {
    Phase::Running {
        in_flight: Some(in_flight(c, attempt, dispatches)),
    }
}

/// Asserts that a cancel by [`CANCELLER`] at `at` failed the run `next`, at `revision`, with
/// its audit record as the only effect.
pub fn assert_cancelled(next: &Run, fx: &Effects, revision: u64, at: u64) {
    assert_eq!(
        next.phase(),
        &Phase::Failed(FailCause::Cancelled { by: CANCELLER })
    );
    assert_eq!(next.revision(), Revision(revision));
    let failed = record(revision, at, EventKind::Cancel, PhaseKind::Failed);
    assert_eq!(effects(fx), vec![failed]);
}

/// The refusal of a resume from a checkpoint of revision `got` while the run is at `current`
/// (spec RES-3).
pub fn stale_revision(current: u64, got: u64) -> Rejection {
    Rejection::StaleRevision {
        current: Revision(current),
        got: Revision(got),
    }
}

/// The answer to a duplicate of the resume that moved the run from `from` to `to` (spec RES-2).
pub fn already_applied(from: u64, to: u64) -> Rejection {
    Rejection::AlreadyApplied {
        from: Revision(from),
        to: Revision(to),
    }
}

/// The answer to another decision on the checkpoint a winning resume, from `from` to `to`,
/// was taken from (spec RES-2).
pub fn already_resumed(from: u64, to: u64) -> Rejection {
    Rejection::AlreadyResumed {
        from: Revision(from),
        to: Revision(to),
    }
}

/// The checkpoint a transition into or within a suspension must persist (spec CKP-1).
pub fn persisted(next: &Run) -> Effect {
    Effect::PersistCheckpoint(Checkpoint::of(next).expect("the run is suspended"))
}

/// The dispatch command for `c` of `run` under `attempt`, with the key the tool sees
/// (spec KEY-3).
pub fn dispatch_of(run: &Run, c: &Call, attempt: u8) -> Dispatch {
    Dispatch {
        call_id: c.call_id,
        tool: c.tool,
        args: c.args,
        key: c.key,
        tool_key: checkpoint::tool_key(run.identity(), &c.key),
        attempt,
    }
}

/// `c` as the kernel binds it: its key digested together with its arguments (spec KEY-1).
pub fn bound(c: Call) -> BoundCall {
    BoundCall {
        call: c,
        key_digest: checkpoint::key_digest(&c.key, &c.args),
    }
}

/// `c` in flight under `attempt`, dispatched `dispatches` times.
pub fn in_flight(c: Call, attempt: u8, dispatches: u8) -> InFlight {
    InFlight {
        call: bound(c),
        attempt,
        dispatches,
    }
}

/// The phase of a run that expired with `c`'s effect unsettled: attempt 0, sent once (spec
/// EXP-1).
pub fn expired_unresolved(c: Call) -> Phase {
    Phase::Failed(FailCause::Expired {
        unresolved: Some(in_flight(c, 0, 1)),
    })
}

/// `c` with another tool contract.
pub fn with_contract(c: Call, dedupes: bool, query_fences: bool, max_attempts: u8) -> Call {
    Call {
        contract: ToolContract {
            dedupes,
            query_fences,
            max_attempts,
            ..ToolContract::default()
        },
        ..c
    }
}

/// A checkpoint changed by `edit` and sealed again, so that only the edit differs: what a
/// forger who recomputes the unkeyed digest would offer.
pub fn resealed(cp: Checkpoint, edit: impl FnOnce(&mut Checkpoint)) -> Checkpoint {
    let mut cp = cp;
    edit(&mut cp);
    cp.seal()
}

/// The default call of the phase tests: a deduping tool, three attempts.
pub fn publish() -> Call {
    call("call-1", "publish:demo", "idem-1")
}

/// A run at revision 1 whose dispatch of `c` (made at t1) is in flight.
pub fn call_in_flight(c: Call) -> Run {
    accept(&new_run("run-in-flight"), at(1, first_dispatch(c))).0
}

/// A run suspended at t1 (revision 1) on `wait`, expiring at t50, with resource version 1.
pub fn waiting_on(wait: Wait, responsible: Name) -> (Run, Checkpoint) {
    let suspend = Event::Suspend {
        wait,
        expires_at: Time(50),
        responsible,
        resource_version: 1,
    };
    let (run, fx) = accept(&new_run("run-wait"), at(1, suspend));
    (
        run,
        *fx.checkpoint().expect("a suspension persists a checkpoint"),
    )
}

/// The callback of [`awaiting_callback`].
pub const CALLBACK: Name = Name::lit("webhook-7");
/// The resource of [`awaiting_resource`].
pub const RESOURCE: Name = Name::lit("gpu-pool");
/// The party responsible for [`awaiting_callback`].
pub const OWNER: Name = Name::lit("partner");

/// A run waiting (since t1, until t50) for the callback [`CALLBACK`], owned by [`OWNER`].
pub fn awaiting_callback() -> (Run, Checkpoint) {
    waiting_on(Wait::Callback { callback: CALLBACK }, OWNER)
}

/// A run waiting (since t1, until t50) for the resource [`RESOURCE`], owned by [`OPERATOR`].
pub fn awaiting_resource() -> (Run, Checkpoint) {
    waiting_on(Wait::Resource { resource: RESOURCE }, OPERATOR)
}

/// A run waiting (since t1, until t50) for a person, [`OPERATOR`], with no unresolved effect.
pub fn awaiting_person() -> (Run, Checkpoint) {
    waiting_on(Wait::Intervention, OPERATOR)
}

/// Who cancels in [`cancelled_in_flight`].
pub const CANCELLER: Name = Name::lit("user-9");

/// A run whose unknown outcome for `c` (dispatched t1, recovered t2) was answered "unknown"
/// at t3: revision 3, manual intervention with the effect unresolved, until t103.
pub fn unresolved_effect(c: Call) -> (Run, Checkpoint) {
    let (run, cp) = outcome_unknown(c);
    let reconcile = resume(cp, Decision::Reconcile(QueryAnswer::Unknown));
    let (run, fx) = accept(&run, at(3, reconcile));
    (
        run,
        *fx.checkpoint()
            .expect("an intervention persists a checkpoint"),
    )
}

/// A run of `c`, a call whose query fences, whose unknown outcome (dispatched t1, recovered
/// t2) was answered "not committed" at t3, so that attempt 1 went out, and whose worker
/// restarted again at t4: revision 4, its outcome unknown again. Returns the run, the first
/// unknown outcome's checkpoint and the second's.
pub fn unknown_after_a_retry(c: Call) -> (Run, Checkpoint, Checkpoint) {
    let (run, first) = outcome_unknown(c);
    let retry = Decision::Reconcile(QueryAnswer::NotCommitted);
    let (run, _) = accept(&run, at(3, resume(first, retry)));
    let (run, fx) = accept(&run, at(4, Event::Recover));
    let second = *fx
        .checkpoint()
        .expect("a restart in flight persists a checkpoint");
    (run, first, second)
}

/// A run cancelled by [`CANCELLER`] at t2 while `c` was in flight (dispatched t1): revision 2,
/// outcome unknown with the cancel pending, until t102.
pub fn cancelled_in_flight(c: Call) -> (Run, Checkpoint) {
    let (run, fx) = accept(&call_in_flight(c), at(2, Event::Cancel { by: CANCELLER }));
    (
        run,
        *fx.checkpoint()
            .expect("a cancel in flight persists a checkpoint"),
    )
}

/// A run completed at t1 (revision 1).
pub fn completed_run() -> Run {
    let done = Event::Complete {
        result: Digest::of(b"done"),
    };
    accept(&new_run("run-done"), at(1, done)).0
}

/// A run failed with its own error at t1 (revision 1).
pub fn failed_run() -> Run {
    let fail = Event::Fail {
        code: Name::lit("E42"),
    };
    accept(&new_run("run-failed"), at(1, fail)).0
}

/// `run` as read back from storage with its revision set to `revision`: the only way to reach
/// a revision counter near its end. Storage reads check every state invariant.
pub fn with_revision(run: &Run, revision: u64) -> Run {
    let mut value = serde_json::to_value(run).expect("a run serialises");
    value["revision"] = serde_json::Value::from(revision);
    serde_json::from_value(value).expect("the edited run still satisfies every invariant")
}

/// One input of every kind, valid in shape, for the tables of terminal and phase refusals.
/// The resume carries `cp`; the suspend and dispatch carry fresh calls.
pub fn one_of_each_kind(cp: Checkpoint, t: u64) -> Vec<Input> {
    let fresh = call("call-fresh", "notify:demo", "idem-fresh");
    vec![
        at(t, suspend_for_approval(fresh, t + 50)),
        at(t, first_dispatch(fresh)),
        at(
            t,
            Event::ToolResult {
                call_id: fresh.call_id,
                attempt: 0,
                result: Digest::of(b"r"),
            },
        ),
        at(t, Event::Recover),
        at(
            t,
            resume(cp, Decision::Reconcile(QueryAnswer::NotCommitted)),
        ),
        at(t, Event::Expire),
        at(t, Event::Cancel { by: CANCELLER }),
        at(t, complete(b"r")),
        at(t, fail("E1")),
    ]
}

/// Asserts that `run` refuses an input of every kind at `t` (the resume carrying `cp`) with
/// `expected`, naming the run's phase and the kind of an input that was not.
#[track_caller]
pub fn refuses_every_kind(run: &Run, cp: Checkpoint, t: u64, expected: Rejection) {
    for input in one_of_each_kind(cp, t) {
        let kind = input.event.kind();
        assert_eq!(reject(run, input), expected, "{:?} {kind:?}", run.phase());
    }
}

/// A run's call history as a driver's store keeps it, for tests that bind many calls: the
/// entries the kernel emitted, and the prior they state for a call.
#[derive(Default)]
pub struct Index(pub Vec<HistoryEntry>);

impl Index {
    /// What the entries hold about `c`'s id and key.
    pub fn prior(&self, c: &Call) -> Prior {
        let (id, key) = (Fingerprint::call_id(&c.call_id), Fingerprint::key(&c.key));
        let mut prior = Prior::NONE;
        for e in &self.0 {
            match *e {
                HistoryEntry::Bound {
                    call_id,
                    key: k,
                    args,
                } => {
                    prior.call_id_used |= call_id == id;
                    if k == key && prior.key.is_none() {
                        prior.key = Some(KeyUse {
                            args,
                            committed: false,
                        });
                    }
                }
                HistoryEntry::Settled { key: k } if k == key => {
                    if let Some(u) = &mut prior.key {
                        u.committed = true;
                    }
                }
                HistoryEntry::Settled { .. } => {}
            }
        }
        prior
    }

    /// A dispatch of `c` with the prior the entries state.
    pub fn dispatch(&self, c: Call) -> Event {
        Event::Dispatch {
            call: c,
            prior: self.prior(&c),
            resource_version: None,
        }
    }

    /// Steps, expecting acceptance, and keeps the entry the transition emitted.
    pub fn accept(&mut self, run: &Run, input: Input) -> Run {
        let (next, fx) = accept(run, input);
        self.0.extend(fx.histories().copied());
        next
    }

    /// How many calls were bound.
    pub fn bound(&self) -> usize {
        (self.0.iter())
            .filter(|e| matches!(e, HistoryEntry::Bound { .. }))
            .count()
    }
}

/// The history after `c` was dispatched and its result recorded (what `after_result_of`
/// leaves in the driver's store).
pub fn spent(c: &Call) -> Index {
    Index(vec![HistoryEntry::bound(c), HistoryEntry::settled(&c.key)])
}

/// The history effect of binding `c` (spec KEY-1, KEY-2).
pub fn binds(c: &Call) -> Effect {
    Effect::History(HistoryEntry::bound(c))
}

/// The history effect of recording `c`'s result: its key is spent (spec REC-4).
pub fn spends(c: &Call) -> Effect {
    Effect::History(HistoryEntry::settled(&c.key))
}
