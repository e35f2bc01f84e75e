//! Agent programs: what a run does on its own, one kernel input at a time.
//!
//! A program is a list of steps. Its position (`pc`) counts the steps the kernel accepted and
//! is stored with the run, in the same transaction. It acts only while the run is running
//! with nothing in flight: everything else (a tool's answer, an approval, a callback) comes
//! from outside and is fed by the driver. So the program never decides a lifecycle question;
//! it proposes, and the kernel accepts or refuses.

use resumable_audit::{RunHeader, ToolPolicy};
use resumable_kernel::{
    Call, Digest, Event, Identity, Name, NameError, Policy, Prior, Proposal, Proposals, Text, Time,
    ToolContract, Wait,
};

/// How long the suspensions of a program may wait, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// An approval's window.
    pub approval_ms: u64,
    /// A callback's window.
    pub callback_ms: u64,
    /// The policy's reconcile window: how long an unknown outcome, then a person, may take.
    pub reconcile_ms: u64,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            approval_ms: 600_000,
            callback_ms: 600_000,
            reconcile_ms: 600_000,
        }
    }
}

/// The programs this runtime knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// The source chapter's example: ask for approval to publish, then publish `publish:demo`
    /// under the key `idem-run-approval`, then complete.
    Seed,
    /// An order: charge a card (a deduping tool), wait for the payment's callback, ship after
    /// an approval (a gated call, deduping), send a notice (a fencing tool that does not
    /// dedupe), complete.
    Order,
    /// The yardstick for throughput: [`BENCH_CALLS`] ungated calls on a deduping tool, each
    /// dispatched and answered (two transitions each), then complete.
    Bench,
    /// A model turn of three calls put to the approver as one batch (spec 5.5): publish a
    /// post and ship an order (deduping tools), send a notice (a fencing tool that does not
    /// dedupe), each decided on its own ([`BATCH`]); the approved ones are dispatched together,
    /// then complete.
    Batch,
}

/// The calls of a [`Program::Batch`] turn: call id, tool, arguments, key.
pub const BATCH: [(&str, &str, &str, &str); 3] = [
    ("publish-1", "publish:demo", "post=1", "batch-publish"),
    ("ship-1", "ship:order", "order=8", "batch-ship"),
    ("notify-1", "notify:email", "to=buyer", "batch-notify"),
];

/// How many calls a [`Program::Bench`] run makes. The run's history lives in the store, so
/// any number would do; 32 keeps one run short enough to measure many.
pub const BENCH_CALLS: u32 = 32;

/// A tool this runtime's tool service offers, with the contract it honours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolSpec {
    /// Its name.
    pub name: &'static str,
    /// Whether it commits each key at most once.
    pub dedupes: bool,
    /// Whether its status query fences a key it answers "not committed" for.
    pub query_fences: bool,
}

/// The tools, with their contracts: the tool service honours them, the programs declare them.
pub const TOOLS: [ToolSpec; 4] = [
    ToolSpec {
        name: "publish:demo",
        dedupes: true,
        query_fences: false,
    },
    ToolSpec {
        name: "charge:card",
        dedupes: true,
        query_fences: false,
    },
    ToolSpec {
        name: "ship:order",
        dedupes: true,
        query_fences: false,
    },
    ToolSpec {
        name: "notify:email",
        dedupes: false,
        query_fences: true,
    },
];

/// The spec of tool `name`, if this runtime offers it.
pub fn tool_spec(name: &str) -> Option<ToolSpec> {
    TOOLS.into_iter().find(|t| t.name == name)
}

/// The party who approves gated calls in these programs.
pub const APPROVER: &str = "approver";
/// The party who asks for gated calls.
pub const REQUESTER: &str = "agent";
/// The operator: reconciles unknown outcomes, handles interventions.
pub const OPERATOR: &str = "ops";
/// The payment system, which sends the order's callback.
pub const PAYMENTS: &str = "payments";
/// The order's callback.
pub const PAYMENT_SETTLED: &str = "payment-settled";

fn name<const N: usize>(s: &str) -> Text<N> {
    // Every literal in this module is a valid name; a test checks each program's steps.
    Text::new(s).unwrap_or(Text::lit("invalid"))
}

/// The contract a call to `tool` declares: the tool service's, and three attempts.
fn contract(tool: &str) -> ToolContract {
    let spec = tool_spec(tool).unwrap_or(TOOLS[0]);
    ToolContract {
        dedupes: spec.dedupes,
        query_fences: spec.query_fences,
        max_attempts: 3,
        ..ToolContract::default()
    }
}

fn call(id: &str, tool: &str, args: &str, key: &str) -> Call {
    Call {
        call_id: name(id),
        tool: name(tool),
        args: Digest::of(args.as_bytes()),
        key: name(key),
        contract: contract(tool),
    }
}

fn policy(tool: &str, gated: bool) -> ToolPolicy {
    ToolPolicy {
        tool: name(tool),
        gated,
        contract: contract(tool),
    }
}

/// The proposals of a [`Program::Batch`] turn, each asked by the agent; the driver states
/// each call's prior before feeding them.
fn batch_calls() -> Proposals {
    let mut calls = Proposals::new();
    for (id, tool, args, key) in BATCH {
        let proposal = Proposal {
            call: call(id, tool, args, key),
            requester: name(REQUESTER),
            prior: Prior::NONE,
        };
        // Three calls in a list of eight: never full.
        let _ = calls.push(proposal);
    }
    calls
}

impl Program {
    /// Every program.
    pub const ALL: [Program; 4] = [
        Program::Seed,
        Program::Order,
        Program::Bench,
        Program::Batch,
    ];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Program::Seed => "seed",
            Program::Order => "order",
            Program::Bench => "bench",
            Program::Batch => "batch",
        }
    }

    /// The program named `s`.
    pub fn parse(s: &str) -> Option<Program> {
        Program::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// The tool policy the program's audit logs declare: each tool it calls, whether a call
    /// to it waits for an approval, and its contract.
    pub fn tools(self) -> Vec<ToolPolicy> {
        match self {
            Program::Seed => vec![policy("publish:demo", true)],
            Program::Order => vec![
                policy("charge:card", false),
                policy("ship:order", true),
                policy("notify:email", false),
            ],
            Program::Bench => vec![policy("publish:demo", false)],
            Program::Batch => BATCH
                .iter()
                .map(|(_, tool, _, _)| policy(tool, true))
                .collect(),
        }
    }

    /// The header of a new run of this program named `run`, created at `now`.
    pub fn header(self, run: &str, now: u64, timing: &Timing) -> Result<RunHeader, NameError> {
        let (tenant, session, definition) = match self {
            Program::Seed => ("tenant-a", "session-1", "demo@1"),
            Program::Order => ("tenant-b", "orders", "order@1"),
            Program::Bench => ("tenant-c", "bench", "bench@1"),
            Program::Batch => ("tenant-d", "batches", "batch@1"),
        };
        Ok(RunHeader {
            identity: Identity {
                tenant: name(tenant),
                session: name(session),
                run: Name::new(run)?,
                definition: name(definition),
            },
            policy: Policy {
                operator: name(OPERATOR),
                reconcile_window: timing.reconcile_ms,
                allowed: resumable_kernel::Allowed::ALL,
            },
            created_at: Time(now),
        })
    }

    /// The program's step at position `pc`, at time `now`, for a run that is running with
    /// nothing in flight and whose resource is at `resource_version`; `None` once done.
    pub fn step(self, pc: u32, now: u64, resource_version: u64, timing: &Timing) -> Option<Event> {
        let approval = |call: Call| Event::Suspend {
            wait: Wait::Approval {
                call,
                requester: name(REQUESTER),
                // The driver states what the run's history holds before feeding it.
                prior: Prior::NONE,
            },
            expires_at: Time(now.saturating_add(timing.approval_ms)),
            responsible: name(APPROVER),
            resource_version,
        };
        let done = |what: &str| Event::Complete {
            result: Digest::of(what.as_bytes()),
        };
        match (self, pc) {
            (Program::Seed, 0) => Some(approval(call(
                "call-1",
                "publish:demo",
                "publish:demo",
                "idem-run-approval",
            ))),
            (Program::Seed, 1) => Some(done("published")),
            (Program::Order, 0) => Some(Event::Dispatch {
                call: call("charge-1", "charge:card", "amount=42", "charge"),
                prior: Prior::NONE,
                resource_version: None,
            }),
            (Program::Order, 1) => Some(Event::Suspend {
                wait: Wait::Callback {
                    callback: name(PAYMENT_SETTLED),
                },
                expires_at: Time(now.saturating_add(timing.callback_ms)),
                responsible: name(PAYMENTS),
                resource_version,
            }),
            (Program::Order, 2) => Some(approval(call("ship-1", "ship:order", "order=7", "ship"))),
            (Program::Order, 3) => Some(Event::Dispatch {
                call: call("notify-1", "notify:email", "to=buyer", "notify"),
                prior: Prior::NONE,
                resource_version: None,
            }),
            (Program::Order, 4) => Some(done("order done")),
            (Program::Bench, n) if n < BENCH_CALLS => {
                let id = format!("call-{n}");
                Some(Event::Dispatch {
                    call: call(&id, "publish:demo", &id, &id),
                    prior: Prior::NONE,
                    resource_version: None,
                })
            }
            (Program::Bench, BENCH_CALLS) => Some(done("bench done")),
            (Program::Batch, 0) => Some(Event::Suspend {
                wait: Wait::Batch {
                    calls: batch_calls(),
                },
                expires_at: Time(now.saturating_add(timing.approval_ms)),
                responsible: name(APPROVER),
                resource_version,
            }),
            (Program::Batch, 1) => Some(done("batch done")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resumable_kernel::{step, IdempotencyKey, Input, Run};

    #[test]
    fn every_program_names_valid_names_and_declares_its_tools_contract() {
        for p in Program::ALL {
            let h = p.header("run-1", 0, &Timing::default()).unwrap();
            Run::new(h.identity, h.policy, h.created_at).unwrap();
            for pc in 0..8 {
                let calls: Vec<Call> = match p.step(pc, 1, 1, &Timing::default()) {
                    Some(
                        Event::Dispatch { call, .. }
                        | Event::Suspend {
                            wait: Wait::Approval { call, .. },
                            ..
                        },
                    ) => vec![call],
                    Some(Event::Suspend {
                        wait: Wait::Batch { calls },
                        ..
                    }) => calls.iter().map(|p| p.call).collect(),
                    _ => vec![],
                };
                for call in calls {
                    let spec = tool_spec(call.tool.as_str()).unwrap();
                    assert_eq!(call.contract.dedupes, spec.dedupes);
                    assert_eq!(call.contract.query_fences, spec.query_fences);
                    assert_ne!(call.call_id, Name::lit("invalid"));
                    let declared = p.tools().into_iter().find(|t| t.tool == call.tool);
                    assert_eq!(declared.map(|t| t.contract), Some(call.contract));
                }
            }
        }
    }

    #[test]
    fn the_seed_program_suspends_for_approval_of_publish_demo_under_its_key() {
        let h = Program::Seed
            .header("run-approval", 0, &Timing::default())
            .unwrap();
        let run = h.run().unwrap();
        let event = Program::Seed.step(0, 1, 1, &Timing::default()).unwrap();
        let t = step(&run, &Input { at: Time(1), event }).unwrap();
        let cp = t.effects.checkpoint().unwrap();
        assert_eq!(cp.pending.unwrap().tool, Name::lit("publish:demo"));
        match t.next.suspension().unwrap().reason.call() {
            Some((c, 0)) => assert_eq!(c.call.key, IdempotencyKey::lit("idem-run-approval")),
            other => panic!("{other:?}"),
        }
        assert_eq!(Program::Order.step(5, 1, 1, &Timing::default()), None);
    }

    #[test]
    fn the_batch_program_puts_three_calls_to_the_approver_as_one_batch_then_completes() {
        let h = Program::Batch
            .header("run-batch", 0, &Timing::default())
            .unwrap();
        let run = h.run().unwrap();
        let event = Program::Batch.step(0, 1, 1, &Timing::default()).unwrap();
        let t = step(&run, &Input { at: Time(1), event }).unwrap();
        let batch = t.next.batch().unwrap();
        let ids: Vec<&str> = batch
            .slots
            .iter()
            .map(|s| s.call.call.call_id.as_str())
            .collect();
        assert_eq!(ids, ["publish-1", "ship-1", "notify-1"]);
        let cp = t.effects.checkpoint().unwrap();
        assert_eq!(
            cp.digest, batch.checkpoint,
            "every decision binds to this checkpoint"
        );
        assert!(cp.batch.is_some() && cp.pending.is_none());
        assert_eq!(
            t.next.suspension().unwrap().responsible,
            Name::lit(APPROVER)
        );
        assert_eq!(
            Program::Batch.step(1, 2, 1, &Timing::default()),
            Some(Event::Complete {
                result: Digest::of(b"batch done")
            })
        );
        assert_eq!(Program::Batch.step(2, 2, 1, &Timing::default()), None);
    }
}
