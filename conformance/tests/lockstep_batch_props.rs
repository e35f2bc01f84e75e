//! CONF-1 for batches of calls (spec 5.5), on generated sessions: batches of one to three
//! calls, decisions on any subset in any order (approve, edit, reject, respond, deny, some on a
//! moved resource), their duplicates while the batch is open, results for any call and
//! attempt, restarts, cancels, expiries, reconciliations and interventions, fed to the kernel
//! and the reference machine in lockstep. Every input must get the same verdict from both.
//!
//! The one input on which the machines are known to part (pinned, with both answers, in
//! `lockstep_batch.rs`) is not generated: a denial beside another decision in one input.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{
    Config as ProptestConfig, RngAlgorithm, TestCaseError, TestRng, TestRunner,
};
use resumable_conformance::lockstep::{kernel_and_reference, Said, Session};
use resumable_kernel::*;
use resumable_model::reference::Reference;
use resumable_model::Kernel;
use resumable_testkit::batch::{identity, policy, AGENT, ALICE, OPS, VERSION};

/// One step of a generated session, interpreted against the run as it stands.
#[derive(Clone, Debug)]
enum Op {
    /// Suspend for a batch of `n` new calls; bit i of `seen` marks call i's key as bound
    /// before, bit i of `fences` gives call i a fencing tool, bit i of `asks` an asking one.
    Suspend {
        n: u8,
        seen: u8,
        fences: u8,
        asks: u8,
    },
    /// Decide these (slot, verdict) pairs on the latest checkpoint, the resource moved or not.
    Decide {
        picks: Vec<(u8, u8)>,
        moved: bool,
    },
    /// Decide every call still awaiting: approve, or reject where bit i of the mask is set.
    DecideRest(u8),
    /// Send again the `i`-th decision input of the open batch.
    Replay(u8),
    /// A tool result for slot `slot` under `attempt`, or for the call in flight alone.
    Result {
        slot: u8,
        attempt: u8,
    },
    Recover,
    Cancel,
    Expire,
    Reconcile(u8),
    Intervene(u8),
    Complete,
    Dispatch,
}

/// A verdict's code: approvals most often, so that batches resume.
fn verdict() -> impl Strategy<Value = u8> {
    prop_oneof![5 => Just(0u8), 2 => Just(1), 2 => Just(2), 1 => Just(3), 1 => Just(4)]
}

/// A session: a batch first, then anything.
fn session() -> impl Strategy<Value = Vec<Op>> {
    let first =
        (1u8..=3, any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(n, seen, fences, asks)| {
            Op::Suspend {
                n,
                seen,
                fences,
                asks,
            }
        });
    (first, prop::collection::vec(op(), 1..40)).prop_map(|(first, mut rest)| {
        rest.insert(0, first);
        rest
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (1u8..=3, any::<u8>(), any::<u8>(), any::<u8>())
            .prop_map(|(n, seen, fences, asks)| Op::Suspend { n, seen, fences, asks }),
        6 => (prop::collection::vec((0u8..3, verdict()), 1..=3), prop::bool::weighted(0.1))
            .prop_map(|(picks, moved)| Op::Decide { picks, moved }),
        3 => (0u8..8).prop_map(Op::DecideRest),
        1 => (0u8..4).prop_map(Op::Replay),
        4 => (0u8..3, 0u8..2).prop_map(|(slot, attempt)| Op::Result { slot, attempt }),
        2 => Just(Op::Recover),
        2 => Just(Op::Cancel),
        1 => Just(Op::Expire),
        2 => (0u8..3).prop_map(Op::Reconcile),
        2 => (0u8..3).prop_map(Op::Intervene),
        1 => Just(Op::Complete),
        1 => Just(Op::Dispatch),
    ]
}

struct Driver {
    s: Session<Kernel, Reference>,
    now: u64,
    cp: Option<Checkpoint>,
    calls: u32,
    /// The decision inputs sent while the current batch is open.
    decided: Vec<Event>,
}

fn contract(fences: bool, asks: bool) -> ToolContract {
    ToolContract {
        dedupes: !fences,
        query_fences: fences,
        max_attempts: 2,
        allowed: if asks {
            Allowed::ALL
        } else {
            Allowed::TOOL_DEFAULT
        },
    }
}

impl Driver {
    fn new() -> Driver {
        let policy = Policy {
            reconcile_window: 5,
            ..policy(Allowed::ALL)
        };
        let s = Session::new(kernel_and_reference(), identity(), policy, Time(0)).unwrap();
        Driver {
            s,
            now: 0,
            cp: None,
            calls: 0,
            decided: Vec::new(),
        }
    }

    fn run(&self) -> &Run {
        &self.s.run().a
    }

    fn new_call(&mut self, fences: bool, asks: bool) -> Call {
        self.calls += 1;
        let id = format!("c{}", self.calls);
        Call {
            call_id: Name::new(&id).unwrap(),
            tool: Name::lit("tool"),
            args: Digest::of(id.as_bytes()),
            key: IdempotencyKey::new(&format!("key-{id}")).unwrap(),
            contract: contract(fences, asks),
        }
    }

    fn facts(moved: bool) -> Facts {
        Facts {
            resource_version: if moved { VERSION + 1 } else { VERSION },
            permitted: true,
            within_budget: true,
        }
    }

    /// The input `op` stands for now, or `None` where it would be one of the known partings
    /// or means nothing.
    fn input(&mut self, op: &Op) -> Option<Input> {
        let open = self.run().batch().filter(|b| b.is_open());
        let latest_is_current = self.cp.is_some_and(|cp| {
            self.run().suspension().is_some()
                && (cp.revision == self.run().revision()
                    || open.is_some_and(|b| b.opened == cp.revision))
        });
        let mut at = self.now + 1;
        let event = match *op {
            Op::Suspend {
                n,
                seen,
                fences,
                asks,
            } => {
                let mut calls = Vec::new();
                for i in 0..n {
                    let c = self.new_call(fences & (1 << i) != 0, asks & (1 << i) != 0);
                    let prior = Prior {
                        call_id_used: false,
                        key: (seen & (1 << i) != 0).then_some(KeyUse {
                            args: c.args,
                            committed: false,
                        }),
                    };
                    calls.push(Proposal {
                        call: c,
                        requester: AGENT,
                        prior,
                    });
                }
                Event::Suspend {
                    wait: Wait::Batch {
                        calls: Proposals::of(&calls).unwrap(),
                    },
                    expires_at: Time(at + 20),
                    responsible: ALICE,
                    resource_version: VERSION,
                }
            }
            Op::Decide { ref picks, moved } => {
                if !latest_is_current {
                    return None;
                }
                let cp = self.cp?;
                let slots: Vec<Slot> = (self.run().batch())
                    .map(|b| b.slots.iter().copied().collect())
                    .unwrap_or_default();
                let mut decisions = Vec::new();
                for &(i, v) in picks {
                    let Some(slot) = slots.get(usize::from(i)) else {
                        continue;
                    };
                    let verdict = match v {
                        0 => Verdict::Approve,
                        1 => Verdict::Edit {
                            args: Digest::of(b"edited"),
                        },
                        2 => Verdict::Reject {
                            reason: Digest::of(b"no"),
                        },
                        3 => Verdict::Respond {
                            result: Digest::of(b"answer"),
                        },
                        // A denial beside another decision is a known parting.
                        _ if picks.len() > 1 => Verdict::Reject {
                            reason: Digest::of(b"no"),
                        },
                        _ => Verdict::Deny,
                    };
                    decisions.push(CallDecision {
                        approval: Approval {
                            call_id: slot.call.call.call_id,
                            args: slot.proposed,
                            requester: slot.requester,
                            approver: ALICE,
                            revision: cp.revision,
                            expires_at: Time(1_000),
                        },
                        verdict,
                    });
                }
                let event = Event::Resume(Resume {
                    checkpoint: cp,
                    decision: Decision::Batch {
                        decisions: Decisions::of(&decisions)?,
                    },
                    facts: Driver::facts(moved),
                });
                if open.is_some() {
                    self.decided.push(event);
                }
                event
            }
            Op::DecideRest(rejects) => {
                let picks: Vec<(u8, u8)> = (open.iter())
                    .flat_map(|b| b.slots.iter().enumerate())
                    .filter(|(_, x)| x.state == SlotState::Awaiting)
                    .map(|(i, _)| (i as u8, if rejects & (1 << i) != 0 { 2 } else { 0 }))
                    .collect();
                if picks.is_empty() {
                    return None;
                }
                return self.input(&Op::Decide {
                    picks,
                    moved: false,
                });
            }
            Op::Replay(i) => {
                open?;
                *self.decided.get(usize::from(i))?
            }
            Op::Result { slot, attempt } => {
                let alone = match self.run().phase() {
                    Phase::Running { in_flight: Some(f) } => Some((f.call.call.call_id, f.attempt)),
                    _ => None,
                };
                let named = (self.run().batch())
                    .and_then(|b| b.slots.get(usize::from(slot)).map(|s| s.call.call.call_id));
                let (call_id, attempt) = match (alone, named) {
                    (Some(f), _) if slot == 0 => f,
                    (_, Some(id)) => (id, attempt),
                    _ => return None,
                };
                Event::ToolResult {
                    call_id,
                    attempt,
                    result: Digest::of(b"done"),
                }
            }
            Op::Recover => Event::Recover,
            Op::Cancel => Event::Cancel {
                by: Name::lit("bob"),
            },
            Op::Expire => {
                if let Some(s) = self.run().suspension() {
                    at = at.max(s.expires_at.0 + 1);
                }
                Event::Expire
            }
            Op::Reconcile(answer) => {
                if !latest_is_current {
                    return None;
                }
                Event::Resume(Resume {
                    checkpoint: self.cp?,
                    decision: Decision::Reconcile(match answer {
                        0 => QueryAnswer::Committed {
                            result: Digest::of(b"done"),
                        },
                        1 => QueryAnswer::NotCommitted,
                        _ => QueryAnswer::Unknown,
                    }),
                    facts: Driver::facts(false),
                })
            }
            Op::Intervene(resolution) => {
                if !latest_is_current {
                    return None;
                }
                Event::Resume(Resume {
                    checkpoint: self.cp?,
                    decision: Decision::Intervene {
                        by: OPS,
                        resolution: match resolution {
                            0 => Resolution::Committed {
                                result: Digest::of(b"done"),
                            },
                            1 => Resolution::Continue,
                            _ => Resolution::Abandon,
                        },
                    },
                    facts: Driver::facts(false),
                })
            }
            Op::Complete => Event::Complete {
                result: Digest::of(b"final"),
            },
            Op::Dispatch => {
                let c = self.new_call(false, false);
                Event::Dispatch {
                    call: c,
                    prior: Prior::NONE,
                    resource_version: Some(VERSION),
                }
            }
        };
        Some(Input {
            at: Time(at),
            event,
        })
    }

    /// Feeds the input `op` stands for; `Err` with both machines' verdicts side by side if
    /// they part.
    fn feed(&mut self, op: &Op) -> Result<(), String> {
        let Some(input) = self.input(op) else {
            return Ok(());
        };
        let row = self.s.feed(&input);
        if !row.agreed {
            return Err(self.s.to_text());
        }
        if let Said::Accepted { effects, .. } = row.a {
            self.now = input.at.0;
            if let Some(cp) = effects.checkpoint() {
                self.cp = Some(*cp);
            }
        }
        // Once no batch is open, the decisions sent belong to none.
        if !self.run().batch().is_some_and(|b| b.is_open()) {
            self.decided.clear();
        }
        Ok(())
    }
}

/// CONF-1 on generated batch sessions: kernel and reference agree on every input.
#[test]
fn generated_batch_sessions_get_the_same_verdicts_from_kernel_and_reference() {
    let config = ProptestConfig {
        cases: 1_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let mut fed = 0usize;
    let mut batches_resumed = 0usize;
    let mut together = 0usize;
    let result = runner.run(&session(), |ops| {
        let mut d = Driver::new();
        for op in &ops {
            if let Err(text) = d.feed(op) {
                return Err(TestCaseError::fail(text));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // The generator reaches what it is for: a direct count over the same seeds.
    let mut runner = TestRunner::new_with_rng(
        ProptestConfig::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = session();
    for _ in 0..300 {
        let ops = strategy.new_tree(&mut runner).unwrap().current();
        let mut d = Driver::new();
        for op in &ops {
            d.feed(op).unwrap();
        }
        fed += d.s.rows().len();
        batches_resumed += (d.s.rows().iter())
            .filter(|r| match &r.a {
                Said::Accepted { effects, .. } => effects.dispatches().count() >= 2,
                _ => false,
            })
            .count();
        together += (d.s.rows().windows(2))
            .filter(|w| {
                matches!(w[1].input.event, Event::Recover | Event::Cancel { .. })
                    && w[1].a.accepted()
                    && matches!(&w[0].a, Said::Accepted { run, .. }
                        if run.batch.is_some_and(|b| b.slots.iter()
                            .filter(|x| matches!(x.state, SlotState::InFlight { .. }))
                            .count() >= 2))
            })
            .count();
    }
    // Over these 300 sessions: 3,528 inputs, 41 resumes dispatching two calls or more, 12
    // restarts or cancels with two calls in flight.
    assert!(fed > 2_000, "only {fed} inputs fed");
    assert!(
        batches_resumed > 20,
        "only {batches_resumed} batches dispatched two calls"
    );
    assert!(
        together > 5,
        "only {together} restarts or cancels with two in flight"
    );
}
