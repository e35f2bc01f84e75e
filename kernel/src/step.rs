//! The transition function. Guards run in the order spec/ gives; the first that fails names
//! the rejection. Each arm cites the spec rule it implements.

use crate::checkpoint::{key_digest, Checkpoint};
use crate::effect::{AuditRecord, Dispatch, Effect, Effects};
use crate::ids::{Name, Revision, Time};
use crate::input::{
    Approval, Decision, Event, Facts, Input, QueryAnswer, Resolution, Resume, Wait,
};
use crate::reject::{ApprovalField, CheckpointField, IdentityField, Rejection};
use crate::run::{
    BoundCall, Call, CallOutcome, FailCause, Identity, InFlight, Phase, Reason, ResumeReceipt, Run,
    Suspension,
};

/// An accepted input: the run's next state and the effects the driver must carry out, in
/// order, after storing `next` with compare-and-set on the revision.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Transition {
    /// The run after the input.
    pub next: Run,
    /// What the driver must do, in order. The first is always the audit record.
    pub effects: Effects,
}

/// Steps `run` by `input`: a transition, or the rejection that says why not. The run is
/// borrowed, so a rejection leaves it exactly as it was (spec REJ-2). In debug builds every
/// state invariant is asserted before the step, and every step invariant after it.
pub fn step(run: &Run, input: &Input) -> Result<Transition, Rejection> {
    debug_assert_eq!(crate::invariants::check_run(run), Ok(()));
    let result = decide(run, input);
    if let Ok(t) = &result {
        debug_assert_eq!(crate::invariants::check_run(&t.next), Ok(()));
        debug_assert_eq!(crate::invariants::check_step(run, input, t), Ok(()));
    }
    result
}

fn decide(run: &Run, input: &Input) -> Result<Transition, Rejection> {
    let at = input.at;
    // ID-1, RES-1: identity comes first, before anything that would tell a stranger about the run.
    if let Event::Resume(r) = &input.event {
        check_identity(&run.identity, &r.checkpoint.identity)?;
        // REJ-1: the checkpoint's integrity and revision come before the terminal check, so a
        // resumer whose reply was lost learns that it won (or lost) even after the run ended.
        check_checkpoint(run, r)?;
    }
    // INV-1: terminal phases absorb every input.
    if run.phase.is_terminal() {
        return Err(Rejection::Terminal {
            phase: run.phase.kind(),
        });
    }
    // CLK-1: time never runs backwards within a run.
    if at < run.updated_at {
        return Err(Rejection::ClockRegressed {
            last: run.updated_at,
            got: at,
        });
    }
    let revision = run.revision.next().ok_or(Rejection::RevisionExhausted)?;
    let mut next = *run;
    next.revision = revision;
    next.updated_at = at;
    let mut extra: Option<Effect> = None;

    match (&run.phase, &input.event) {
        // SUS-2: a suspend needs a running run; a second suspend is refused.
        (Phase::Suspended(s), Event::Suspend { .. }) => {
            return Err(Rejection::AlreadySuspended {
                reason: s.reason.kind(),
            })
        }
        (
            Phase::Running { in_flight: None },
            Event::Suspend {
                wait,
                expires_at,
                responsible,
                resource_version,
            },
        ) => {
            // SUS-1: every suspension has a reason, an expiry after now and a party.
            if *expires_at <= at {
                return Err(Rejection::ExpiryNotInFuture {
                    expires_at: *expires_at,
                    now: at,
                });
            }
            let reason = match wait {
                Wait::Approval { call, requester } => {
                    // APR-3: the requester is never the approver.
                    if requester == responsible {
                        return Err(Rejection::SelfApproval { party: *requester });
                    }
                    Reason::PendingApproval {
                        call: bind(run, call)?,
                        requester: *requester,
                    }
                }
                Wait::Callback { callback } => Reason::ExternalCallback {
                    callback: *callback,
                },
                Wait::Intervention => Reason::ManualIntervention { unresolved: None },
                Wait::Resource { resource } => Reason::ResourceWait {
                    resource: *resource,
                },
            };
            next.resource_version = *resource_version;
            next.phase = Phase::Suspended(Suspension {
                reason,
                since: at,
                expires_at: *expires_at,
                responsible: *responsible,
            });
        }
        // WAL-1: the intent to dispatch becomes durable state before the driver dispatches.
        (Phase::Running { in_flight: None }, Event::Dispatch { call }) => {
            let in_flight = InFlight {
                call: bind(run, call)?,
                attempt: 0,
                dispatches: 1,
            };
            next.phase = Phase::Running {
                in_flight: Some(in_flight),
            };
            extra = Some(Effect::Dispatch(dispatch_of(&in_flight)));
        }
        // WAL-2: the result and the next revision land together.
        (
            Phase::Running {
                in_flight: Some(in_flight),
            },
            Event::ToolResult {
                call_id,
                attempt,
                result,
            },
        ) => {
            let expected = &in_flight.call.call;
            if *call_id != expected.call_id || *attempt != in_flight.attempt {
                return Err(Rejection::ResultMismatch {
                    call_id: expected.call_id,
                    attempt: in_flight.attempt,
                    got_call: *call_id,
                    got_attempt: *attempt,
                });
            }
            next.last_call = Some(outcome(in_flight, *result));
            next.phase = Phase::Running { in_flight: None };
        }
        (_, Event::ToolResult { .. }) => {
            return Err(Rejection::NoDispatchInFlight {
                phase: run.phase.kind(),
            })
        }
        // REC-1: a restart turns an in-flight dispatch into an unknown outcome to reconcile.
        (
            Phase::Running {
                in_flight: Some(in_flight),
            },
            Event::Recover,
        ) => {
            next.phase = reconcile_suspension(run, at, *in_flight, None);
            extra = Some(Effect::Query(dispatch_of(in_flight)));
        }
        (_, Event::Recover) => {
            return Err(Rejection::NothingInFlight {
                phase: run.phase.kind(),
            })
        }
        // EXP-1: a suspension past its expiry ends; an unknown outcome escalates to a person.
        (Phase::Suspended(s), Event::Expire) => {
            if at <= s.expires_at {
                return Err(Rejection::NotExpired {
                    expires_at: s.expires_at,
                    now: at,
                });
            }
            next.phase = match s.reason {
                Reason::OutcomeUnknown { in_flight, .. } => intervention(run, at, Some(in_flight)),
                Reason::ManualIntervention { unresolved } => {
                    Phase::Failed(FailCause::Expired { unresolved })
                }
                _ => Phase::Failed(FailCause::Expired { unresolved: None }),
            };
        }
        (_, Event::Expire) => {
            return Err(Rejection::NotSuspended {
                phase: run.phase.kind(),
            })
        }
        // CAN-1: a cancel with an effect in flight waits for reconciliation.
        (
            Phase::Running {
                in_flight: Some(in_flight),
            },
            Event::Cancel { by },
        ) => {
            next.phase = reconcile_suspension(run, at, *in_flight, Some(*by));
            extra = Some(Effect::Query(dispatch_of(in_flight)));
        }
        (Phase::Suspended(s), Event::Cancel { by }) => {
            next.phase = match s.reason {
                Reason::OutcomeUnknown {
                    cancelled_by: Some(_),
                    ..
                } => return Err(Rejection::CancelPending),
                Reason::OutcomeUnknown { in_flight, .. } => Phase::Suspended(Suspension {
                    reason: Reason::OutcomeUnknown {
                        in_flight,
                        cancelled_by: Some(*by),
                    },
                    ..*s
                }),
                Reason::ManualIntervention {
                    unresolved: Some(_),
                } => return Err(Rejection::ReconcileFirst),
                _ => Phase::Failed(FailCause::Cancelled { by: *by }),
            };
        }
        (Phase::Running { in_flight: None }, Event::Cancel { by }) => {
            next.phase = Phase::Failed(FailCause::Cancelled { by: *by });
        }
        (Phase::Running { in_flight: None }, Event::Complete { result }) => {
            next.phase = Phase::Completed { result: *result };
        }
        (Phase::Running { in_flight: None }, Event::Fail { code }) => {
            next.phase = Phase::Failed(FailCause::Error { code: *code });
        }
        // WAL-2: while a dispatch is in flight, the run waits for its answer.
        (
            Phase::Running { in_flight: Some(f) },
            Event::Suspend { .. }
            | Event::Dispatch { .. }
            | Event::Complete { .. }
            | Event::Fail { .. },
        ) => {
            return Err(Rejection::DispatchInFlight {
                call_id: f.call.call.call_id,
            })
        }
        (
            _,
            Event::Suspend { .. }
            | Event::Dispatch { .. }
            | Event::Complete { .. }
            | Event::Fail { .. },
        ) => {
            return Err(Rejection::NotRunning {
                phase: run.phase.kind(),
            })
        }
        // RES-*: a resume is a new, fully re-validated transition.
        (_, Event::Resume(r)) => {
            let resumed = resume(run, at, r)?;
            next.phase = resumed.phase;
            extra = resumed.effect;
            if resumed.recorded.is_some() {
                // REC-4: a committed result is recorded and reused, never executed again.
                next.last_call = resumed.recorded;
            }
            next.last_resume = Some(ResumeReceipt {
                from: run.revision,
                to: revision,
                decision: r.decision,
            });
        }
        // Phases the match above leaves are Completed and Failed, refused before the match.
        (Phase::Completed { .. } | Phase::Failed(_), _) => {
            return Err(Rejection::Terminal {
                phase: run.phase.kind(),
            })
        }
    }

    let record = AuditRecord {
        revision,
        at,
        event: input.event.kind(),
        decision: match &input.event {
            Event::Resume(r) => Some(r.decision.kind()),
            _ => None,
        },
        phase: next.phase.kind(),
        reason: next.suspension().map(|s| s.reason.kind()),
    };
    // AUD-1: exactly one new audit record, first; CKP-1: a checkpoint for every suspension.
    let mut effects = Effects::new(Effect::Audit(record));
    if let Some(cp) = Checkpoint::of(&next) {
        effects = effects.with(Effect::PersistCheckpoint(cp));
    }
    if let Some(e) = extra {
        effects = effects.with(e);
    }
    Ok(Transition { next, effects })
}

fn check_identity(run: &Identity, offered: &Identity) -> Result<(), Rejection> {
    let field = if offered.tenant != run.tenant {
        IdentityField::Tenant
    } else if offered.session != run.session {
        IdentityField::Session
    } else if offered.run != run.run {
        IdentityField::Run
    } else if offered.definition != run.definition {
        IdentityField::Definition
    } else {
        return Ok(());
    };
    Err(Rejection::IdentityMismatch { field })
}

/// KEY-1, KEY-2: accepts a new call, binding its key to its arguments.
fn bind(run: &Run, call: &Call) -> Result<BoundCall, Rejection> {
    if call.contract.max_attempts == 0 {
        return Err(Rejection::NoAttemptsAllowed);
    }
    if let Some(last) = &run.last_call {
        if last.call_id == call.call_id {
            return Err(Rejection::CallIdReused {
                call_id: call.call_id,
            });
        }
        if last.key == call.key && last.args != call.args {
            return Err(Rejection::KeyConflict { key: call.key });
        }
    }
    Ok(BoundCall {
        call: *call,
        key_digest: key_digest(&call.key, &call.args),
    })
}

fn dispatch_of(f: &InFlight) -> Dispatch {
    Dispatch {
        call_id: f.call.call.call_id,
        tool: f.call.call.tool,
        args: f.call.call.args,
        key: f.call.call.key,
        attempt: f.attempt,
    }
}

fn outcome(f: &InFlight, result: crate::ids::Digest) -> CallOutcome {
    CallOutcome {
        call_id: f.call.call.call_id,
        key: f.call.call.key,
        args: f.call.call.args,
        result,
    }
}

/// The suspension that waits for a reconcile answer, owned by the run's operator.
fn reconcile_suspension(run: &Run, at: Time, in_flight: InFlight, by: Option<Name>) -> Phase {
    Phase::Suspended(Suspension {
        reason: Reason::OutcomeUnknown {
            in_flight,
            cancelled_by: by,
        },
        since: at,
        expires_at: at.after(run.policy.reconcile_window),
        responsible: run.policy.operator,
    })
}

/// A manual intervention owned by the run's operator, holding any unresolved effect.
fn intervention(run: &Run, at: Time, unresolved: Option<InFlight>) -> Phase {
    Phase::Suspended(Suspension {
        reason: Reason::ManualIntervention { unresolved },
        since: at,
        expires_at: at.after(run.policy.reconcile_window),
        responsible: run.policy.operator,
    })
}

/// What an accepted resume leads to.
struct Resumed {
    phase: Phase,
    effect: Option<Effect>,
    /// A committed result that the resume records, to be reused.
    recorded: Option<CallOutcome>,
}

impl From<Phase> for Resumed {
    fn from(phase: Phase) -> Resumed {
        Resumed {
            phase,
            effect: None,
            recorded: None,
        }
    }
}

/// CKP-3, CKP-2, then RES-3 and RES-2: the checkpoint is of a schema this kernel resumes,
/// intact, and of the run's current revision (or the evidence of who won it).
fn check_checkpoint(run: &Run, r: &Resume) -> Result<(), Rejection> {
    let cp = &r.checkpoint;
    // CKP-3: schema gate; CKP-2: then integrity.
    if cp.schema_version > crate::checkpoint::SCHEMA_VERSION {
        return Err(Rejection::SchemaTooNew {
            supported: crate::checkpoint::SCHEMA_VERSION,
            got: cp.schema_version,
        });
    }
    if cp.schema_version < crate::checkpoint::SCHEMA_VERSION {
        return Err(Rejection::MigrationRequired {
            got: cp.schema_version,
            current: crate::checkpoint::SCHEMA_VERSION,
        });
    }
    cp.verify()
        .map_err(|(expected, found)| Rejection::DigestMismatch { expected, found })?;
    // RES-3: state revision (one winner per suspension).
    check_revision(run, cp.revision, &r.decision)?;
    Ok(())
}

/// RES-1 to RES-7, in order. Identity, schema, digest and revision were checked before the
/// phase.
fn resume(run: &Run, at: Time, r: &Resume) -> Result<Resumed, Rejection> {
    let cp = &r.checkpoint;
    // Schema, digest and revision (CKP-3, CKP-2, RES-3, RES-2) were checked before the phase.
    // RES-3: the resource must be the version the checkpoint saw.
    if cp.resource_version != r.facts.resource_version {
        return Err(Rejection::ResourceChanged {
            checkpoint: cp.resource_version,
            current: r.facts.resource_version,
        });
    }
    // RES-4: the run must be suspended, exactly as the checkpoint says.
    let Phase::Suspended(s) = &run.phase else {
        return Err(Rejection::NotSuspended {
            phase: run.phase.kind(),
        });
    };
    if let Some(field) = Checkpoint::unsealed(run).and_then(|expected| mismatch(&expected, cp)) {
        return Err(Rejection::CheckpointMismatch { field });
    }
    // RES-5: expiry.
    if at > s.expires_at {
        return Err(Rejection::Expired {
            expires_at: s.expires_at,
            now: at,
        });
    }
    // RES-6: the decision must answer the reason, from the party the kernel recorded.
    match (&s.reason, &r.decision) {
        (Reason::PendingApproval { call, requester }, Decision::Approve(a)) => {
            check_approval(a, call, requester, cp.revision, at, &s.responsible)?;
            recheck(&r.facts)?;
            let in_flight = InFlight {
                call: *call,
                attempt: 0,
                dispatches: 1,
            };
            Ok(Resumed {
                phase: Phase::Running {
                    in_flight: Some(in_flight),
                },
                effect: Some(Effect::Dispatch(dispatch_of(&in_flight))),
                recorded: None,
            })
        }
        (Reason::PendingApproval { call, requester }, Decision::Deny(a)) => {
            check_approval(a, call, requester, cp.revision, at, &s.responsible)?;
            Ok(Phase::Failed(FailCause::Denied {
                call_id: call.call.call_id,
            })
            .into())
        }
        (Reason::ExternalCallback { callback }, Decision::Callback { callback: got, .. })
        | (
            Reason::ResourceWait { resource: callback },
            Decision::ResourceReady { resource: got },
        ) => {
            if got != callback {
                return Err(Rejection::WaitMismatch {
                    expected: *callback,
                    got: *got,
                });
            }
            recheck(&r.facts)?;
            Ok(Phase::Running { in_flight: None }.into())
        }
        (Reason::ManualIntervention { unresolved }, Decision::Intervene { by, resolution }) => {
            if *by != s.responsible {
                return Err(Rejection::Unauthorised {
                    expected: s.responsible,
                    got: *by,
                });
            }
            match (resolution, unresolved) {
                (Resolution::Abandon, _) => {
                    Ok(Phase::Failed(FailCause::Abandoned { by: *by }).into())
                }
                (Resolution::Committed { .. }, None) => Err(Rejection::NothingInFlight {
                    phase: run.phase.kind(),
                }),
                (Resolution::Committed { result }, Some(f)) => Ok(Resumed {
                    phase: Phase::Running { in_flight: None },
                    effect: None,
                    recorded: Some(outcome(f, *result)),
                }),
                (Resolution::Continue, _) => {
                    recheck(&r.facts)?;
                    Ok(Phase::Running { in_flight: None }.into())
                }
            }
        }
        (
            Reason::OutcomeUnknown {
                in_flight,
                cancelled_by,
            },
            Decision::Reconcile(answer),
        ) => reconcile(run, at, in_flight, cancelled_by, answer, &r.facts),
        (reason, decision) => Err(Rejection::DecisionMismatch {
            reason: reason.kind(),
            decision: decision.kind(),
        }),
    }
}

/// RES-3: the checkpoint's revision must be the run's. An older one is a duplicate of the
/// winning decision, a conflicting decision, or simply stale.
fn check_revision(run: &Run, got: Revision, decision: &Decision) -> Result<(), Rejection> {
    if got > run.revision {
        return Err(Rejection::FutureRevision {
            current: run.revision,
            got,
        });
    }
    if got < run.revision {
        return Err(match &run.last_resume {
            Some(rc) if rc.from == got && rc.decision == *decision => Rejection::AlreadyApplied {
                from: rc.from,
                to: rc.to,
            },
            Some(rc) if rc.from == got => Rejection::AlreadyResumed {
                from: rc.from,
                to: rc.to,
            },
            _ => Rejection::StaleRevision {
                current: run.revision,
                got,
            },
        });
    }
    Ok(())
}

/// The first field in which a checkpoint differs from the one the run would write.
fn mismatch(expected: &Checkpoint, got: &Checkpoint) -> Option<CheckpointField> {
    use CheckpointField::*;
    [
        (
            expected.reason == got.reason && expected.next_intent == got.next_intent,
            Reason,
        ),
        (expected.pending == got.pending, PendingCall),
        (expected.key_digest == got.key_digest, KeyDigest),
        (expected.requester == got.requester, Requester),
        (expected.waiting_on == got.waiting_on, WaitingOn),
        (expected.expires_at == got.expires_at, ExpiresAt),
        (expected.responsible == got.responsible, Responsible),
        (expected.created_at == got.created_at, CreatedAt),
        (
            expected.resource_version == got.resource_version,
            ResourceVersion,
        ),
    ]
    .into_iter()
    .find(|(same, _)| !same)
    .map(|(_, field)| field)
}

/// APR-1 to APR-3: an approval binds to the call, its arguments, its requester and the
/// checkpoint revision; it expires; only the recorded approver, never the requester, decides.
fn check_approval(
    a: &Approval,
    call: &BoundCall,
    requester: &Name,
    revision: Revision,
    at: Time,
    responsible: &Name,
) -> Result<(), Rejection> {
    let field = if a.revision != revision {
        Some(ApprovalField::Revision)
    } else if a.call_id != call.call.call_id {
        Some(ApprovalField::CallId)
    } else if a.args != call.call.args {
        Some(ApprovalField::Args)
    } else if a.requester != *requester {
        Some(ApprovalField::Requester)
    } else {
        None
    };
    if let Some(field) = field {
        return Err(Rejection::ApprovalMismatch { field });
    }
    if at > a.expires_at {
        return Err(Rejection::ApprovalExpired {
            expires_at: a.expires_at,
            now: at,
        });
    }
    if a.approver == *requester {
        return Err(Rejection::SelfApproval { party: a.approver });
    }
    if a.approver != *responsible {
        return Err(Rejection::Unauthorised {
            expected: *responsible,
            got: a.approver,
        });
    }
    Ok(())
}

/// RES-7: current policy, supplied by the driver as facts, re-checked for new work.
fn recheck(facts: &Facts) -> Result<(), Rejection> {
    if !facts.permitted {
        return Err(Rejection::PermissionRevoked);
    }
    if !facts.within_budget {
        return Err(Rejection::BudgetExhausted);
    }
    Ok(())
}

/// REC-2, REC-3: a reconcile answer settles an unknown outcome, or hands it to a person.
fn reconcile(
    run: &Run,
    at: Time,
    in_flight: &InFlight,
    cancelled_by: &Option<Name>,
    answer: &QueryAnswer,
    facts: &Facts,
) -> Result<Resumed, Rejection> {
    let contract = in_flight.call.call.contract;
    let phase = match (answer, cancelled_by) {
        (QueryAnswer::Unknown, _) => intervention(run, at, Some(*in_flight)),
        (QueryAnswer::Committed { result }, by) => {
            // REC-4: the committed result is recorded; the call is not executed again.
            return Ok(Resumed {
                phase: match by {
                    Some(by) => Phase::Failed(FailCause::Cancelled { by: *by }),
                    None => Phase::Running { in_flight: None },
                },
                effect: None,
                recorded: Some(outcome(in_flight, *result)),
            });
        }
        (QueryAnswer::NotCommitted, Some(by)) => Phase::Failed(FailCause::Cancelled { by: *by }),
        (QueryAnswer::NotCommitted, None) => {
            // REC-3: the retry that is safe depends on the tool's contract.
            let attempt = if contract.query_fences {
                // The old key is fenced: only a fresh attempt key can commit now.
                in_flight.attempt.checked_add(1)
            } else if contract.dedupes {
                // The tool dedupes: the same key cannot commit twice.
                Some(in_flight.attempt)
            } else {
                // Neither: the original may still commit late. Never retry automatically.
                None
            };
            match attempt {
                Some(attempt) if in_flight.dispatches < contract.max_attempts => {
                    recheck(facts)?;
                    let retry = InFlight {
                        call: in_flight.call,
                        attempt,
                        dispatches: in_flight.dispatches + 1,
                    };
                    return Ok(Resumed {
                        phase: Phase::Running {
                            in_flight: Some(retry),
                        },
                        effect: Some(Effect::Dispatch(dispatch_of(&retry))),
                        recorded: None,
                    });
                }
                _ => intervention(run, at, Some(*in_flight)),
            }
        }
    };
    Ok(phase.into())
}
