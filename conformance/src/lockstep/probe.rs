//! Probes: adversarial inputs offered to both machines at every reachable state of the world,
//! without changing it (spec CONF-1).
//!
//! The world offers what its actors would send: decisions late, duplicated or from the
//! requester, tool answers, recoveries, expiries. Many inputs that must be refused it never
//! sends on a given configuration: a checkpoint of another tenant (unless two runs are
//! configured), a broken or newer checkpoint, a forged one, facts that changed, a decision of
//! the wrong kind, a clock that runs backwards. Probing every reachable state with these
//! covers the refusals at every state the world can reach, concurrency included, where random
//! sequences only sample them.

use super::{Divergence, Observable, Pair, PairRun};
use resumable_kernel::{
    Approval, Checkpoint, Decision, Digest, Event, Facts, Input, Name, QueryAnswer, ReasonKind,
    Resolution, Resume, Revision, Time, Wait, SCHEMA_VERSION,
};
use resumable_model::world::Cast;

/// The decision that answers a checkpoint's reason, from the party it names, valid until
/// `until`: what a well-behaved resumer sends.
pub fn fitting(cp: &Checkpoint, until: Time) -> Decision {
    let awaited = cp.waiting_on.unwrap_or(Name::lit("nothing"));
    match cp.reason {
        ReasonKind::PendingApproval => Decision::Approve(approval(cp, until)),
        ReasonKind::ExternalCallback => Decision::Callback {
            callback: awaited,
            payload: Digest::of(b"probe payload"),
        },
        ReasonKind::ResourceWait => Decision::ResourceReady { resource: awaited },
        ReasonKind::ManualIntervention => Decision::Intervene {
            by: cp.responsible,
            resolution: Resolution::Continue,
        },
        ReasonKind::OutcomeUnknown => Decision::Reconcile(QueryAnswer::NotCommitted),
    }
}

/// The approval that binds to a checkpoint's pending call.
fn approval(cp: &Checkpoint, until: Time) -> Approval {
    Approval {
        call_id: cp.pending.map_or(Name::lit("none"), |p| p.call_id),
        args: cp.pending.map_or(Digest::default(), |p| p.args),
        requester: cp.requester.unwrap_or(Name::lit("nobody")),
        approver: cp.responsible,
        revision: cp.revision,
        expires_at: until,
    }
}

/// A decision of another kind than the one the reason asks for (spec RES-6).
fn wrong_kind(cp: &Checkpoint, until: Time) -> Decision {
    match cp.reason {
        ReasonKind::OutcomeUnknown => Decision::Approve(approval(cp, until)),
        _ => Decision::Reconcile(QueryAnswer::Unknown),
    }
}

fn resume(checkpoint: Checkpoint, decision: Decision, facts: Facts) -> Event {
    Event::Resume(Resume {
        checkpoint,
        decision,
        facts,
    })
}

/// The probes for one run at time `now`: the run's own inputs at the wrong moment, a clock
/// that runs backwards, and resumes from its checkpoints, forged, broken, stale, foreign,
/// with facts that changed or decisions that do not bind.
pub fn inputs(cast: &Cast, updated_at: Time, checkpoints: &[Checkpoint], now: Time) -> Vec<Input> {
    let at = |event| Input { at: now, event };
    let mut v = vec![
        at(Event::Expire),
        at(Event::Recover),
        at(Event::ToolResult {
            call_id: cast.proposals[1].call.call_id,
            attempt: 0,
            result: cast.results[1],
        }),
        at(Event::Suspend {
            wait: Wait::Callback {
                callback: Name::lit("probe"),
            },
            expires_at: now.after(5),
            responsible: cast.approver,
            resource_version: 0,
        }),
        // EXP-1: a suspension that could never expire.
        at(Event::Suspend {
            wait: Wait::Intervention,
            expires_at: Time::END,
            responsible: cast.approver,
            resource_version: 0,
        }),
        at(Event::Cancel { by: cast.owner }),
        at(Event::Complete {
            result: cast.final_result,
        }),
        // EXP-1: at the end of time no reconciliation can begin.
        Input {
            at: Time::END,
            event: Event::Recover,
        },
    ];
    // KEY-1, KEY-2, REC-4: every call the agent may propose, earlier ids and keys included.
    v.extend((cast.proposals.iter()).map(|p| at(Event::Dispatch { call: p.call })));
    // CLK-1: the same input a moment before the run's last one.
    if let Some(before) = updated_at.0.checked_sub(1) {
        v.push(Input {
            at: Time(before),
            event: Event::Expire,
        });
    }
    let Some(&cp) = checkpoints.last() else {
        return v;
    };
    let until = now.after(5);
    let ok = Facts {
        resource_version: cp.resource_version,
        permitted: true,
        within_budget: true,
    };
    let decision = fitting(&cp, until);
    let resealed = |change: &dyn Fn(&mut Checkpoint)| {
        let mut c = cp;
        change(&mut c);
        c.seal()
    };
    let mut broken = cp;
    broken.digest.0[0] ^= 1;
    v.extend([
        // As a well-behaved resumer sends it: accepted or refused, alike.
        at(resume(cp, decision, ok)),
        // ID-1: another tenant's checkpoint, resealed so its digest verifies.
        at(resume(
            resealed(&|c| c.identity.tenant = Name::lit("tenant-probe")),
            decision,
            ok,
        )),
        // CKP-2: a broken digest. CKP-3: a newer schema, resealed.
        at(resume(broken, decision, ok)),
        at(resume(
            resealed(&|c| c.schema_version = SCHEMA_VERSION + 1),
            decision,
            ok,
        )),
        // RES-3: a revision the run never reached, resealed; a changed resource.
        at(resume(
            resealed(&|c| c.revision = Revision(c.revision.0 + 1)),
            decision,
            ok,
        )),
        at(resume(
            cp,
            decision,
            Facts {
                resource_version: cp.resource_version.wrapping_add(1),
                ..ok
            },
        )),
        // RES-4: a forged checkpoint naming another responsible party, resealed; one whose
        // pending cancel was erased.
        at(resume(
            resealed(&|c| c.responsible = Name::lit("mallory")),
            decision,
            ok,
        )),
        at(resume(
            resealed(&|c| c.cancel_requested_by = None),
            decision,
            ok,
        )),
        // CKP-3: a schema no kernel wrote.
        at(resume(resealed(&|c| c.schema_version = 0), decision, ok)),
        // RES-6: a decision of the wrong kind. RES-7: permission revoked.
        at(resume(cp, wrong_kind(&cp, until), ok)),
        at(resume(
            cp,
            decision,
            Facts {
                permitted: false,
                ..ok
            },
        )),
    ]);
    let moved = Facts {
        resource_version: cp.resource_version.wrapping_add(1),
        ..ok
    };
    match cp.reason {
        // RES-3, LIVE-2: every answer to an unknown outcome, with the resource moved.
        ReasonKind::OutcomeUnknown => v.extend(
            [
                QueryAnswer::Unknown,
                QueryAnswer::NotCommitted,
                QueryAnswer::Committed {
                    result: cast.results[1],
                },
            ]
            .map(|a| at(resume(cp, Decision::Reconcile(a), moved))),
        ),
        // RES-3, REC-4: every intervention, with the resource as it was and moved.
        ReasonKind::ManualIntervention => {
            for resolution in [
                Resolution::Abandon,
                Resolution::Continue,
                Resolution::Committed {
                    result: cast.results[1],
                },
            ] {
                let d = Decision::Intervene {
                    by: cp.responsible,
                    resolution,
                };
                v.extend([at(resume(cp, d, ok)), at(resume(cp, d, moved))]);
            }
        }
        _ => {}
    }
    if cp.reason == ReasonKind::PendingApproval {
        let a = approval(&cp, until);
        v.extend([
            // APR-3: the requester approves its own call. APR-1: an edited call.
            at(resume(
                cp,
                Decision::Approve(Approval {
                    approver: a.requester,
                    ..a
                }),
                ok,
            )),
            at(resume(
                cp,
                Decision::Approve(Approval {
                    args: Digest::of(b"edited by the probe"),
                    ..a
                }),
                ok,
            )),
            // APR-4 and RES-2: a denial, which also conflicts with an approval that won.
            at(resume(cp, Decision::Deny(a), ok)),
        ]);
        // APR-2: an approval that expired before it arrived.
        if let Some(before) = now.0.checked_sub(1) {
            v.push(at(resume(
                cp,
                Decision::Approve(Approval {
                    expires_at: Time(before),
                    ..a
                }),
                ok,
            )));
        }
    }
    // RES-2, RES-3: a resume from the run's first checkpoint, long superseded, as it was
    // and resealed naming another responsible party (only the holder of the very checkpoint
    // a resume was taken from learns how its decision fared).
    if let Some(&first) = checkpoints.first().filter(|first| **first != cp) {
        let facts = Facts {
            resource_version: first.resource_version,
            ..ok
        };
        let mut forged = first;
        forged.responsible = Name::lit("mallory");
        v.extend([
            at(resume(first, fitting(&first, until), facts)),
            at(resume(forged.seal(), fitting(&forged, until), facts)),
        ]);
    }
    v
}

/// The first probe on which the two machines of `pair` disagree at `run`, if any.
pub fn disagreement<A: Observable, B: Observable>(
    pair: &Pair<A, B>,
    run: &PairRun<A::Run, B::Run>,
    probes: &[Input],
) -> Option<Divergence> {
    if run.divergence.is_some() {
        return None;
    }
    probes
        .iter()
        .find_map(|input| match pair.compare(run, input).next {
            Ok((next, _)) => next.divergence.map(|d| *d),
            Err(_) => None,
        })
}
