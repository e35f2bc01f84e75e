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
    Approval, Checkpoint, Decision, Digest, Event, Facts, Input, Name, Prior, QueryAnswer,
    ReasonKind, Resolution, Resume, Revision, Time, Wait, SCHEMA_VERSION,
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
        // A batch's decisions name its calls, which its checkpoint holds only as a digest:
        // a probe sends an empty list, which the kernel refuses as such.
        ReasonKind::PendingBatch => Decision::Batch {
            decisions: resumable_kernel::Decisions::new(),
        },
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
/// with facts that changed or decisions that do not bind. The order is fixed: the first probe
/// that finds a disagreement is the one reported.
pub fn inputs(cast: &Cast, updated_at: Time, checkpoints: &[Checkpoint], now: Time) -> Vec<Input> {
    let mut v = unprompted(cast, updated_at, now);
    let Some(&cp) = checkpoints.last() else {
        return v;
    };
    let latest = Latest::new(cp, now);
    v.extend(latest.tampered());
    v.extend(latest.by_reason(cast));
    if cp.reason == ReasonKind::PendingApproval {
        v.extend(latest.unbound_approvals());
    }
    // RES-2, RES-3: a resume from the run's first checkpoint, long superseded.
    if let Some(&first) = checkpoints.first().filter(|first| **first != cp) {
        v.extend(latest.superseded(first));
    }
    v
}

/// The inputs that need no checkpoint: the run's own inputs at the wrong moment, every call
/// the agent may propose, and a clock that runs backwards.
fn unprompted(cast: &Cast, updated_at: Time, now: Time) -> Vec<Input> {
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
    // KEY-1, KEY-2, REC-4: every call the agent may propose, earlier ids and keys included,
    // with every prior a driver may state of it: nothing known, the id used, the key bound to
    // other arguments, the key spent.
    let priors = |call: &resumable_kernel::Call| {
        let other = resumable_kernel::Digest::of(b"other arguments");
        let key = |args, committed| Some(resumable_kernel::KeyUse { args, committed });
        [
            Prior::NONE,
            Prior {
                call_id_used: true,
                key: None,
            },
            Prior {
                call_id_used: false,
                key: key(other, false),
            },
            Prior {
                call_id_used: false,
                key: key(call.args, true),
            },
        ]
    };
    v.extend((cast.proposals.iter()).flat_map(|p| {
        priors(&p.call).map(|prior| {
            at(Event::Dispatch {
                call: p.call,
                prior,
                resource_version: None,
            })
        })
    }));
    // CLK-1: the same input a moment before the run's last one.
    if let Some(before) = updated_at.0.checked_sub(1) {
        v.push(Input {
            at: Time(before),
            event: Event::Expire,
        });
    }
    v
}

/// The run's latest checkpoint, and what a well-behaved resumer would send with it at `now`:
/// the ground every resume probe changes one thing of.
struct Latest {
    cp: Checkpoint,
    now: Time,
    until: Time,
    decision: Decision,
    ok: Facts,
}

impl Latest {
    fn new(cp: Checkpoint, now: Time) -> Latest {
        let until = now.after(5);
        Latest {
            cp,
            now,
            until,
            decision: fitting(&cp, until),
            ok: Facts {
                resource_version: cp.resource_version,
                permitted: true,
                within_budget: true,
            },
        }
    }

    fn at(&self, checkpoint: Checkpoint, decision: Decision, facts: Facts) -> Input {
        Input {
            at: self.now,
            event: resume(checkpoint, decision, facts),
        }
    }

    /// The checkpoint with `change` made, resealed so that its digest verifies.
    fn resealed(&self, change: impl FnOnce(&mut Checkpoint)) -> Checkpoint {
        let mut c = self.cp;
        change(&mut c);
        c.seal()
    }

    /// The fitting resume, then the same with one thing forged, broken or changed.
    fn tampered(&self) -> Vec<Input> {
        let (cp, decision, ok) = (self.cp, self.decision, self.ok);
        let mut broken = cp;
        broken.digest.0[0] ^= 1;
        let moved = Facts {
            resource_version: cp.resource_version.wrapping_add(1),
            ..ok
        };
        vec![
            // As a well-behaved resumer sends it: accepted or refused, alike.
            self.at(cp, decision, ok),
            // ID-1: another tenant's checkpoint, resealed so its digest verifies.
            self.at(
                self.resealed(|c| c.identity.tenant = Name::lit("tenant-probe")),
                decision,
                ok,
            ),
            // CKP-2: a broken digest. CKP-3: a newer schema, resealed.
            self.at(broken, decision, ok),
            self.at(
                self.resealed(|c| c.schema_version = SCHEMA_VERSION + 1),
                decision,
                ok,
            ),
            // RES-3: a revision the run never reached, resealed; a changed resource.
            self.at(
                self.resealed(|c| c.revision = Revision(c.revision.0 + 1)),
                decision,
                ok,
            ),
            self.at(cp, decision, moved),
            // RES-4: a forged checkpoint naming another responsible party, resealed; one whose
            // pending cancel was erased.
            self.at(
                self.resealed(|c| c.responsible = Name::lit("mallory")),
                decision,
                ok,
            ),
            self.at(
                self.resealed(|c| c.cancel_requested_by = None),
                decision,
                ok,
            ),
            // CKP-3: a schema no kernel wrote.
            self.at(self.resealed(|c| c.schema_version = 0), decision, ok),
            // RES-6: a decision of the wrong kind. RES-7: permission revoked.
            self.at(cp, wrong_kind(&cp, self.until), ok),
            self.at(
                cp,
                decision,
                Facts {
                    permitted: false,
                    ..ok
                },
            ),
        ]
    }

    /// Every answer the reason admits, with the resource as it was and moved.
    fn by_reason(&self, cast: &Cast) -> Vec<Input> {
        let (cp, ok) = (self.cp, self.ok);
        let moved = Facts {
            resource_version: cp.resource_version.wrapping_add(1),
            ..ok
        };
        let committed = cast.results[1];
        match cp.reason {
            // RES-3, LIVE-2: every answer to an unknown outcome, with the resource moved.
            ReasonKind::OutcomeUnknown => [
                QueryAnswer::Unknown,
                QueryAnswer::NotCommitted,
                QueryAnswer::Committed { result: committed },
            ]
            .map(|a| self.at(cp, Decision::Reconcile(a), moved))
            .to_vec(),
            // RES-3, REC-4: every intervention, with the resource as it was and moved.
            ReasonKind::ManualIntervention => [
                Resolution::Abandon,
                Resolution::Continue,
                Resolution::Committed { result: committed },
            ]
            .into_iter()
            .flat_map(|resolution| {
                let d = Decision::Intervene {
                    by: cp.responsible,
                    resolution,
                };
                [self.at(cp, d, ok), self.at(cp, d, moved)]
            })
            .collect(),
            _ => Vec::new(),
        }
    }

    /// Approvals that do not bind, for a pending approval.
    fn unbound_approvals(&self) -> Vec<Input> {
        let (cp, ok) = (self.cp, self.ok);
        let a = approval(&cp, self.until);
        let mut v = vec![
            // APR-3: the requester approves its own call. APR-1: an edited call.
            self.at(
                cp,
                Decision::Approve(Approval {
                    approver: a.requester,
                    ..a
                }),
                ok,
            ),
            self.at(
                cp,
                Decision::Approve(Approval {
                    args: Digest::of(b"edited by the probe"),
                    ..a
                }),
                ok,
            ),
            // APR-4 and RES-2: a denial, which also conflicts with an approval that won.
            self.at(cp, Decision::Deny(a), ok),
        ];
        // APR-2: an approval that expired before it arrived.
        if let Some(before) = self.now.0.checked_sub(1) {
            let expired = Approval {
                expires_at: Time(before),
                ..a
            };
            v.push(self.at(cp, Decision::Approve(expired), ok));
        }
        v
    }

    /// Resumes from the run's first checkpoint, long superseded, as it was and resealed naming
    /// another responsible party (only the holder of the very checkpoint a resume was taken
    /// from learns how its decision fared).
    fn superseded(&self, first: Checkpoint) -> [Input; 2] {
        let facts = Facts {
            resource_version: first.resource_version,
            ..self.ok
        };
        let mut forged = first;
        forged.responsible = Name::lit("mallory");
        [
            self.at(first, fitting(&first, self.until), facts),
            self.at(forged.seal(), fitting(&forged, self.until), facts),
        ]
    }
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
