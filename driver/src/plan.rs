//! What an adapter does now about the call (or the batch of calls) its agent proposes: a pure
//! function of what is stored, the driver's time and the facts it observed.
//!
//! A framework that runs a node again from its start (LangGraph) proposes the same call again
//! on every run of the node; an agent whose state was changed between a suspension and its
//! resume proposes a changed call under the old id. The plan matches the proposal against the
//! book by call id, tool, argument digest and key: the same call finds its own state (waiting
//! for a decision, in flight, unknown, or ended with its outcome); a different call under a
//! recorded id is refused ([`Todo::Changed`]), never answered with the recorded call's receipt.

use crate::book::{expiry, Args, Book, Kept, Outcome};
use crate::clock;
use crate::held::Held;
use resumable_kernel::{
    Call, Checkpoint, Digest, Dispatch, Event, Facts, FailCause, IdempotencyKey, List, Name, Phase,
    PhaseKind, Prior, Proposal as KernelProposal, Reason, ReasonKind, Time, ToolContract, Wait,
};
use serde::{Deserialize, Serialize};

/// A call the agent proposes now, with its arguments.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Proposal {
    /// The call as the kernel binds it: its argument digest is that of `args`.
    pub call: Call,
    /// The arguments, canonical.
    pub args: Args,
    /// Who asks for it (the agent); never the approver.
    pub requester: Name,
    /// Who must approve it; `None`: it needs no approval and is dispatched at once.
    pub approver: Option<Name>,
    /// How long the approver has, from the suspension, in the run's time unit.
    pub expires_in: u64,
}

/// Why a proposal could not be read.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("proposal: {0}")]
pub struct BadProposal(pub String);

impl Proposal {
    /// A proposal of the call `call_id` to `tool` with `args` (JSON text) under `key`, asked by
    /// `requester`, to be approved by `approver` within `expires_in` (or, without an approver,
    /// dispatched at once).
    #[expect(
        clippy::too_many_arguments,
        reason = "one value per field of the proposal"
    )]
    pub fn new(
        call_id: &str,
        tool: &str,
        args: &str,
        key: &str,
        contract: ToolContract,
        requester: &str,
        approver: Option<&str>,
        expires_in: u64,
    ) -> Result<Proposal, BadProposal> {
        let name = |what: &str, v: &str| {
            Name::new(v).map_err(|e| BadProposal(format!("{what} {v:?}: {e}")))
        };
        let args = Args::parse(args).map_err(BadProposal)?;
        let call = Call {
            call_id: name("call id", call_id)?,
            tool: name("tool", tool)?,
            args: args.digest,
            key: IdempotencyKey::new(key).map_err(|e| BadProposal(format!("key {key:?}: {e}")))?,
            contract,
        };
        Ok(Proposal {
            call,
            args,
            requester: name("requester", requester)?,
            approver: approver.map(|a| name("approver", a)).transpose()?,
            expires_in,
        })
    }

    /// What the book keeps of this proposal once the kernel binds it: its arguments.
    pub fn kept(&self) -> Kept {
        Kept {
            proposed: vec![(self.call, self.args.clone())],
            ..Kept::default()
        }
    }
}

/// One call put to a party, as the party is shown it: the arguments themselves beside their
/// digest, so a person approves what they can read.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Asked {
    /// The call.
    pub call_id: Name,
    /// Its tool.
    pub tool: Name,
    /// Its arguments, canonical JSON.
    pub args: String,
    /// Their digest: what an approval binds.
    pub args_digest: Digest,
    /// Who asked for it.
    pub requester: Name,
}

/// A request put to the party a run waits on.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Request {
    /// The calls to decide, in order (one for a single approval).
    pub calls: Vec<Asked>,
    /// Who must decide.
    pub responsible: Name,
    /// After this time decisions are refused (EXP-1).
    pub expires_at: Time,
    /// The checkpoint a decision binds to (its revision, APR-1).
    pub checkpoint: Checkpoint,
    /// How many answers were fed while the calls waited (see [`crate::book::CallRecord`]).
    pub answers: u32,
}

/// What to do now about a proposal.
#[expect(
    clippy::large_enum_variant,
    reason = "one answer per call, moved once: an event carries its checkpoint inline"
)]
#[derive(Clone, PartialEq, Debug)]
pub enum Todo {
    /// Stage and commit this event (stamped with the driver's time), keeping `Kept` in the
    /// book with it.
    Feed(Event, Kept),
    /// Put the request to its party, and feed the answer ([`crate::party`]).
    Ask(Box<Request>),
    /// Ask the tool's status query about this call and attempt, under its tool key, and feed
    /// the answer ([`reconcile`]).
    Query(Dispatch),
    /// Every proposed call is recorded, and ended: here is each one's outcome, in order, and
    /// how many answers were fed while they waited.
    Done {
        /// The outcomes.
        outcomes: Vec<Outcome>,
        /// The answers fed while the calls waited.
        answers: u32,
    },
    /// A call other than the proposed one is recorded under its call id: refused. The agent
    /// proposes a new call under a new id, or the proposal is put right.
    Changed {
        /// The call recorded under the id.
        recorded: Box<Call>,
        /// The call proposed.
        proposed: Box<Call>,
    },
    /// The run waits on something else than the proposal: another call, or a person.
    Waits {
        /// Why it waits.
        reason: ReasonKind,
        /// Who must act.
        responsible: Name,
        /// Until when.
        expires_at: Time,
    },
    /// The run is busy with another call (in flight, or about to be).
    Busy {
        /// The other call.
        call_id: Name,
    },
    /// The run has ended: nothing more is done.
    Ended {
        /// Completed or failed.
        phase: PhaseKind,
        /// Why it failed, if it did.
        cause: Option<FailCause>,
    },
}

/// What to do now about `proposal` (one call) on `held`, at `now`, with the facts observed now.
pub fn plan(held: &Held, book: &Book, now: Time, proposal: &Proposal, facts: Facts) -> Todo {
    plan_batch(held, book, now, std::slice::from_ref(proposal), facts)
}

/// What to do now about `proposals`, one model turn's calls: one call is put to its approver
/// alone (`wait: approval`); several, or one of a turn that HITL reviews, as one batch (spec
/// 5.5). Calls without an approver are dispatched one by one before any is put to a person.
pub fn plan_batch(
    held: &Held,
    book: &Book,
    now: Time,
    proposals: &[Proposal],
    facts: Facts,
) -> Todo {
    plan_shaped(held, book, now, proposals, facts, proposals.len() > 1)
}

/// What to do now about `proposals`, one model turn's calls that a framework reviews as one
/// batch even when the turn holds one call (LangChain's HITL middleware, the Agents SDKs: each
/// call may be approved, edited, rejected or answered, spec 5.5). Otherwise as [`plan_batch`].
pub fn plan_turn(
    held: &Held,
    book: &Book,
    now: Time,
    proposals: &[Proposal],
    facts: Facts,
) -> Todo {
    plan_shaped(held, book, now, proposals, facts, true)
}

fn plan_shaped(
    held: &Held,
    book: &Book,
    now: Time,
    proposals: &[Proposal],
    facts: Facts,
    as_batch: bool,
) -> Todo {
    if let Some(todo) = recorded(book, proposals) {
        return todo;
    }
    let run = &held.run;
    if clock::due(run, now) {
        return Todo::Feed(Event::Expire, Kept::default());
    }
    match run.phase() {
        Phase::Completed { .. } | Phase::Failed(_) => ended(held),
        Phase::Running { in_flight: None } if run.next() != resumable_kernel::Next::Agent => {
            // A batch's calls in flight together, their worker gone: each becomes unknown.
            Todo::Feed(Event::Recover, Kept::default())
        }
        Phase::Running { in_flight: None } => bind(held, book, now, proposals, facts, as_batch),
        Phase::Running { in_flight: Some(f) } if proposes(proposals, &f.call.call.call_id) => {
            // Committed as dispatching, and nobody waits for the answer now (a node run
            // again, a process restarted): the outcome is unknown and goes to the query.
            Todo::Feed(Event::Recover, Kept::default())
        }
        Phase::Running { in_flight: Some(f) } => Todo::Busy {
            call_id: f.call.call.call_id,
        },
        Phase::Suspended(s) => match &s.reason {
            Reason::OutcomeUnknown { in_flight, .. } => Todo::Query(run.dispatch_of(in_flight)),
            Reason::PendingApproval { call, .. } if proposes(proposals, &call.call.call_id) => ask(
                held,
                book,
                &[call.call.call_id],
                s.responsible,
                s.expires_at,
            ),
            Reason::PendingBatch => {
                let ids: Vec<Name> = run
                    .batch()
                    .map(|b| b.slots.iter().map(|slot| slot.call.call.call_id).collect())
                    .unwrap_or_default();
                if ids.iter().all(|id| proposes(proposals, id)) {
                    ask(held, book, &ids, s.responsible, s.expires_at)
                } else {
                    Todo::Busy { call_id: ids[0] }
                }
            }
            other => Todo::Waits {
                reason: other.kind(),
                responsible: s.responsible,
                expires_at: s.expires_at,
            },
        },
    }
}

fn proposes(proposals: &[Proposal], call_id: &Name) -> bool {
    proposals.iter().any(|p| p.call.call_id == *call_id)
}

/// Whether the call recorded under a call id answers the call proposed now under it: only if
/// it is the very call (call id, tool, argument digest, key and contract). Anything else is
/// a new call or a refusal, never the recorded call's result (REC-5). The rule of
/// [`plan`]'s match against the book, for a driver that keeps its calls its own way (the
/// model's world).
pub fn same_call(recorded: &Call, proposed: &Call) -> bool {
    recorded == proposed
}

/// The answer from the book alone: a changed call refused, or every call ended.
fn recorded(book: &Book, proposals: &[Proposal]) -> Option<Todo> {
    let mut outcomes = Vec::new();
    let mut answers = 0;
    for p in proposals {
        match book.record(&p.call.call_id) {
            Some(r) if !same_call(&r.call, &p.call) => {
                return Some(Todo::Changed {
                    recorded: Box::new(r.call),
                    proposed: Box::new(p.call),
                })
            }
            Some(r) => {
                answers = answers.max(r.answers);
                outcomes.push(r.outcome.clone());
            }
            None => outcomes.push(None),
        }
    }
    let outcomes: Option<Vec<Outcome>> = outcomes.into_iter().collect();
    outcomes.map(|outcomes| Todo::Done { outcomes, answers })
}

fn ended(held: &Held) -> Todo {
    Todo::Ended {
        phase: held.run.phase().kind(),
        cause: match held.run.phase() {
            Phase::Failed(c) => Some(*c),
            _ => None,
        },
    }
}

/// The input that binds what is proposed and not yet recorded: a dispatch of a call that
/// needs no approval, else a suspension for the approval of one call or of the batch.
fn bind(
    held: &Held,
    book: &Book,
    now: Time,
    proposals: &[Proposal],
    facts: Facts,
    as_batch: bool,
) -> Todo {
    let fresh: Vec<&Proposal> = proposals
        .iter()
        .filter(|p| book.record(&p.call.call_id).is_none())
        .collect();
    let Some(first) = fresh.first() else {
        // Every call is recorded and one has no outcome, yet the run waits for nothing: the
        // kernel says why (a reused call id is refused by name, KEY-2).
        return Todo::Feed(dispatch(proposals[0].call, facts), Kept::default());
    };
    if let Some(p) = fresh.iter().find(|p| p.approver.is_none()) {
        return Todo::Feed(dispatch(p.call, facts), p.kept());
    }
    let approver = first.approver.unwrap_or(first.requester);
    let expires_at = expiry(clock::stamp(&held.run, now), first.expires_in);
    let kept = Kept {
        proposed: fresh.iter().map(|p| (p.call, p.args.clone())).collect(),
        ..Kept::default()
    };
    let wait = if !as_batch {
        Wait::Approval {
            call: first.call,
            requester: first.requester,
            prior: Prior::NONE,
        }
    } else {
        let mut calls = List::new();
        for p in &fresh {
            let proposal = KernelProposal {
                call: p.call,
                requester: p.requester,
                prior: Prior::NONE,
            };
            if calls.push(proposal).is_err() {
                // More calls than one batch holds: the kernel refuses the batch by name.
                break;
            }
        }
        Wait::Batch { calls }
    };
    let event = Event::Suspend {
        wait,
        expires_at,
        responsible: approver,
        resource_version: facts.resource_version,
    };
    Todo::Feed(event, kept)
}

fn dispatch(call: Call, facts: Facts) -> Event {
    Event::Dispatch {
        call,
        prior: Prior::NONE,
        resource_version: Some(facts.resource_version),
    }
}

fn ask(held: &Held, book: &Book, ids: &[Name], responsible: Name, expires_at: Time) -> Todo {
    let mut calls = Vec::new();
    let mut answers = 0;
    for id in ids {
        let Some(r) = book.record(id) else {
            return Todo::Busy { call_id: *id };
        };
        answers = answers.max(r.answers);
        calls.push(Asked {
            call_id: r.call.call_id,
            tool: r.call.tool,
            args: r.args.clone(),
            args_digest: r.args_digest,
            requester: requester_of(held, id).unwrap_or(responsible),
        });
    }
    let Some(checkpoint) = held.checkpoint else {
        return Todo::Busy { call_id: ids[0] };
    };
    Todo::Ask(Box::new(Request {
        calls,
        responsible,
        expires_at,
        checkpoint,
        answers,
    }))
}

fn requester_of(held: &Held, id: &Name) -> Option<Name> {
    let s = held.run.suspension()?;
    if let Reason::PendingApproval { requester, .. } = s.reason {
        return Some(requester);
    }
    let batch = held.run.batch()?;
    batch.slot(id).map(|slot| slot.requester)
}

/// Whether the run waits on the outcome of the dispatch `d` itself (its call and attempt). A
/// status query's answer is about one dispatch; the kernel's reconcile input names none, so
/// an answer staged again on a run that moved on (a lost compare-and-set, another worker that
/// reconciled first) must not be recorded for the call the run waits on now.
pub fn waits_on(held: &Held, d: &Dispatch) -> bool {
    match held.run.suspension().map(|s| s.reason) {
        Some(Reason::OutcomeUnknown { in_flight, .. }) => held.run.dispatch_of(&in_flight) == *d,
        _ => false,
    }
}

/// The status query's answer about `d` as the input that records it: `found` is the result
/// the tool committed under the key (`Some`), a firm "not committed" (`None`), or the query
/// failed (`Err`: the outcome stays unknown). Resumed from the latest checkpoint, with the
/// facts observed now.
pub fn reconcile(
    held: &Held,
    d: &Dispatch,
    found: Result<Option<&str>, ()>,
    facts: Facts,
) -> Result<(Event, Kept), String> {
    use resumable_kernel::{Decision, QueryAnswer, Resume};
    if !waits_on(held, d) {
        return Err(format!(
            "the run does not wait on the outcome of call {} attempt {}: an answer about it \
             is never recorded for another call",
            d.call_id, d.attempt
        ));
    }
    let checkpoint = held
        .checkpoint
        .ok_or_else(|| "the run has no checkpoint to reconcile from".to_string())?;
    let (answer, kept) = match found {
        Ok(Some(result)) => {
            let digest =
                resumable_audit::jcs::digest(result).map_err(|e| format!("query result: {e}"))?;
            let kept = Kept {
                outcomes: vec![(
                    d.call_id,
                    Outcome::Result {
                        result: result.to_string(),
                    },
                )],
                ..Kept::default()
            };
            (QueryAnswer::Committed { result: digest }, kept)
        }
        Ok(None) => (QueryAnswer::NotCommitted, Kept::default()),
        Err(()) => (QueryAnswer::Unknown, Kept::default()),
    };
    let event = Event::Resume(Resume {
        checkpoint,
        decision: Decision::Reconcile(answer),
        facts,
    });
    Ok((event, kept))
}
