//! The whole-log checks on what each record claims: the safety properties (RES-3, APR-1,
//! REC-4/EFF-1, and the history priors of KEY-1, KEY-2, REC-4) and the tool policy the header declares. They run before the verdict
//! comparison, so a forged verdict is named by the rule it breaks.

use crate::history::History;
use crate::{Record, ToolPolicy, Verdict};
use resumable_kernel::{
    ApprovalField, Batch, Call, CallDecision, Decision, Event, IdempotencyKey, Name, Prior, Reason,
    Run, SpecId, Verdict as CallVerdict, Wait,
};
use std::collections::{HashMap, VecDeque};

/// The recent commits, for REC-4/EFF-1: each key with its attempt (what the tool sees), the
/// call that committed it and the line, forgetting the oldest once `capacity` are held. The
/// call id is not part of the key: the same key committed again under a new call id is a
/// second commit all the same.
pub(super) struct CommitWindow {
    lines: HashMap<(IdempotencyKey, u8), (Name, u64)>,
    order: VecDeque<(IdempotencyKey, u8)>,
    capacity: usize,
    pub(super) exceeded: bool,
}

impl CommitWindow {
    pub(super) fn new(capacity: usize) -> CommitWindow {
        let capacity = capacity.max(1);
        CommitWindow {
            // Twice the capacity, so that the table rehashes in place as old entries leave
            // instead of growing: the window's memory is fixed when validation starts.
            lines: HashMap::with_capacity(capacity * 2),
            order: VecDeque::with_capacity(capacity),
            capacity,
            exceeded: false,
        }
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    fn first(&self, key: &(IdempotencyKey, u8)) -> Option<(Name, u64)> {
        self.lines.get(key).copied()
    }

    pub(super) fn insert(&mut self, key: (IdempotencyKey, u8), call: Name, line: u64) {
        if self.order.len() == self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.lines.remove(&old);
            }
            self.exceeded = true;
        }
        self.order.push_back(key);
        self.lines.insert(key, (call, line));
    }
}

/// The tool policy of a version 2 header, looked up by tool.
pub(super) struct ToolTable(HashMap<Name, ToolPolicy>);

impl ToolTable {
    pub(super) fn new(tools: &[ToolPolicy]) -> Result<ToolTable, String> {
        let mut table = HashMap::with_capacity(tools.len());
        for t in tools {
            if table.insert(t.tool, *t).is_some() {
                return Err(format!("tool {} is listed twice", t.tool));
            }
        }
        Ok(ToolTable(table))
    }

    /// Whether `call` keeps to the policy: its tool is listed, with the same contract.
    fn check_call(&self, call: &Call) -> Result<&ToolPolicy, String> {
        let policy = self.0.get(&call.tool).ok_or_else(|| {
            format!(
                "call {} is to tool {}, which the policy does not list",
                call.call_id, call.tool
            )
        })?;
        if policy.contract != call.contract {
            return Err(format!(
                "call {} to tool {} declares the contract {}, the policy says {}",
                call.call_id,
                call.tool,
                json(&call.contract),
                json(&policy.contract)
            ));
        }
        Ok(policy)
    }
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// A finding of the whole-log checks: a property, by spec ID, or the tool policy.
pub(super) enum Broken {
    Property(SpecId, String),
    Policy(String),
}

/// The calls an input proposes (one, or a batch's), with the prior the runtime stated for
/// each: the runtime's own words about its tools and its history.
fn proposed_calls(record: &Record) -> Vec<(&Call, &Prior)> {
    match &record.input.event {
        Event::Dispatch { call, prior, .. } => vec![(call, prior)],
        Event::Suspend {
            wait: Wait::Approval { call, prior, .. },
            ..
        } => vec![(call, prior)],
        Event::Suspend {
            wait: Wait::Batch { calls },
            ..
        } => calls.iter().map(|p| (&p.call, &p.prior)).collect(),
        _ => Vec::new(),
    }
}

/// KEY-2, KEY-1, REC-4 over the whole history: the prior a record states for the call it
/// proposes is what the log's own earlier records bound and spent. A runtime whose history
/// index lost a binding (or that claims a fresh key for a spent one) is caught here, on the
/// line that claims it, whether the kernel accepted the call or not.
pub(super) fn check_prior(history: &History, record: &Record) -> Result<(), Broken> {
    proposed_calls(record)
        .into_iter()
        .try_for_each(|(call, claimed)| check_one_prior(history, call, claimed))
}

fn check_one_prior(history: &History, call: &Call, claimed: &Prior) -> Result<(), Broken> {
    let known = history.prior(call);
    if *claimed == known {
        return Ok(());
    }
    let (id, what) = if claimed.call_id_used != known.call_id_used {
        (
            SpecId::Key2,
            format!(
                "the runtime stated that call id {} was {}used before; the log shows it {}",
                call.call_id,
                if claimed.call_id_used { "" } else { "not " },
                if known.call_id_used {
                    "bound earlier"
                } else {
                    "never bound"
                }
            ),
        )
    } else if claimed.key.map(|k| k.args) != known.key.map(|k| k.args) {
        (
            SpecId::Key1,
            format!(
                "the runtime stated key {}'s earlier binding as {}; the log shows {}",
                call.key,
                binding(claimed.key.map(|k| k.args)),
                binding(known.key.map(|k| k.args))
            ),
        )
    } else {
        (
            SpecId::Rec4,
            format!(
                "the runtime stated key {} as {}spent; the log shows it {}",
                call.key,
                if claimed.key.is_some_and(|k| k.committed) {
                    ""
                } else {
                    "not "
                },
                if known.key.is_some_and(|k| k.committed) {
                    "spent by a recorded result"
                } else {
                    "not spent"
                }
            ),
        )
    };
    Err(Broken::Property(id, what))
}

fn binding(args: Option<resumable_kernel::Digest>) -> String {
    match args {
        Some(d) => format!("arguments {}", &d.to_string()[..8]),
        None => "none".to_string(),
    }
}

/// The tool policy, on an accepted record: every call proposed keeps to its tool's policy, and
/// a call to a gated tool is never dispatched directly (APR-1: it is dispatched only out of an
/// approval; a retry after a restart re-dispatches a call already out, not a new one).
fn check_policy(tools: &ToolTable, record: &Record) -> Result<(), Broken> {
    for (call, _) in proposed_calls(record) {
        let policy = tools.check_call(call).map_err(Broken::Policy)?;
        if policy.gated && matches!(record.input.event, Event::Dispatch { .. }) {
            return Err(Broken::Property(
                SpecId::Apr1,
                format!(
                    "call {} to tool {}, which the header's policy gates, was dispatched \
                     directly, without an approval",
                    call.call_id, call.tool
                ),
            ));
        }
    }
    Ok(())
}

/// RES-3: a resume is accepted only from the run's current revision.
fn check_res_3(run: &Run, record: &Record) -> Result<(), Broken> {
    let Event::Resume(r) = &record.input.event else {
        return Ok(());
    };
    let got = r.checkpoint.revision;
    if got == run.revision() {
        return Ok(());
    }
    // BAT-2: a decision on an open batch binds to the checkpoint the batch opened with.
    let open_batch = run.batch().filter(|b| b.is_open());
    if matches!(r.decision, Decision::Batch { .. }) && open_batch.is_some_and(|b| b.opened == got) {
        return Ok(());
    }
    let age = if got < run.revision() {
        "stale"
    } else {
        "future"
    };
    Err(Broken::Property(
        SpecId::Res3,
        format!(
            "a resume from {age} checkpoint revision {} was accepted while the run was at \
             revision {}",
            got.0,
            run.revision().0
        ),
    ))
}

/// APR-1: a dispatch out of a pending approval needs an approval bound to that call, its
/// arguments, its requester and the checkpoint revision.
fn check_apr_1(run: &Run, record: &Record, claim: &crate::Accepted) -> Result<(), Broken> {
    if let Some(batch) = run.batch().filter(|b| b.is_open()) {
        return check_bat_2(&batch, record, claim);
    }
    let Some(d) = &claim.dispatch else {
        return Ok(());
    };
    let pending = run.suspension().and_then(|s| match &s.reason {
        Reason::PendingApproval { call, requester } => Some((call.call, *requester)),
        _ => None,
    });
    let approval = match &record.input.event {
        Event::Resume(r) => match &r.decision {
            Decision::Approve(a) => Some(a),
            _ => None,
        },
        _ => None,
    };
    let broken = |what: String| Err(Broken::Property(SpecId::Apr1, what));
    match (pending, approval) {
        (Some((call, requester)), Some(a)) => {
            let unbound = if a.call_id != call.call_id || d.call_id != call.call_id {
                Unbound::Approval(ApprovalField::CallId)
            } else if a.args != call.args || d.args != call.args {
                Unbound::Approval(ApprovalField::Args)
            } else if a.requester != requester {
                Unbound::Approval(ApprovalField::Requester)
            } else if a.revision != run.revision() {
                Unbound::Approval(ApprovalField::Revision)
            } else if d.key != call.key {
                Unbound::Key
            } else {
                return Ok(());
            };
            broken(format!(
                "call {} was dispatched on an approval whose {} does not match the pending call",
                d.call_id,
                unbound.words()
            ))
        }
        (Some((call, _)), None) => broken(format!(
            "call {} was dispatched while call {} awaited approval, without one",
            d.call_id, call.call_id
        )),
        (None, Some(_)) => broken(format!(
            "call {} was dispatched on an approval while no call awaited approval",
            d.call_id
        )),
        (None, None) => Ok(()),
    }
}

/// BAT-2, BAT-3, BAT-5: a dispatch out of an open batch needs a decision of its own, on that
/// call, that approved it as proposed or edited it: it runs with the proposed arguments or the
/// approver's, under the call's key; a rejected, responded or denied call never runs.
fn check_bat_2(batch: &Batch, record: &Record, claim: &crate::Accepted) -> Result<(), Broken> {
    let now: Vec<CallDecision> = match &record.input.event {
        Event::Resume(r) => match &r.decision {
            Decision::Batch { decisions } => decisions.iter().copied().collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let broken = |id, what: String| Err(Broken::Property(id, what));
    for d in claim.dispatch.iter().chain(claim.dispatch_more.iter()) {
        let Some(slot) = batch.slot(&d.call_id) else {
            return broken(
                SpecId::Bat2,
                format!(
                    "call {} was dispatched out of a batch that does not hold it",
                    d.call_id
                ),
            );
        };
        let decided = slot.decided.map(|(decision, _)| decision).or_else(|| {
            now.iter()
                .copied()
                .find(|n| n.approval.call_id == d.call_id)
        });
        let args = match decided.map(|decision| decision.verdict) {
            Some(CallVerdict::Approve) => slot.proposed,
            Some(CallVerdict::Edit { args }) => args,
            Some(other) => {
                return broken(
                    SpecId::Bat3,
                    format!(
                        "call {} was dispatched although its decision was {}",
                        d.call_id,
                        other.kind()
                    ),
                )
            }
            None => {
                return broken(
                    SpecId::Bat2,
                    format!(
                        "call {} was dispatched without a decision of its own",
                        d.call_id
                    ),
                )
            }
        };
        if d.args != args || d.key != slot.call.call.key {
            return broken(
                SpecId::Bat5,
                format!(
                    "call {} was dispatched with other arguments or another key than its decision \
                     allows",
                    d.call_id
                ),
            );
        }
    }
    Ok(())
}

/// What of a dispatch out of an approval does not match the call that awaited it: a part of
/// the approval (the kernel's own [`ApprovalField`]), or the key the dispatch carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unbound {
    Approval(ApprovalField),
    Key,
}

impl Unbound {
    /// The part, in words for a report.
    fn words(self) -> &'static str {
        match self {
            Unbound::Approval(ApprovalField::CallId) => "call id",
            Unbound::Approval(ApprovalField::Args) => "argument digest",
            Unbound::Approval(ApprovalField::Requester) => "requester",
            Unbound::Approval(ApprovalField::Revision) => "checkpoint revision",
            Unbound::Key => "idempotency key",
        }
    }
}

/// REC-4, EFF-1: a key (with the attempt the tool sees) is committed at most once, whatever
/// the call id.
fn check_rec_4(
    claim: &crate::Accepted,
    expected: &Verdict,
    commits: &CommitWindow,
) -> Result<(), Broken> {
    let Some(c) = &claim.committed else {
        return Ok(());
    };
    let Some((first_call, first_line)) = commits.first(&(c.key, c.attempt)) else {
        return Ok(());
    };
    let kernel = match expected {
        Verdict::Accepted(_) => {
            " (the kernel accepts the input: it compares a call only with the last one \
             recorded)"
        }
        Verdict::Rejected(_) => "",
    };
    let under = if first_call == c.call_id {
        format!("call {}", c.call_id)
    } else {
        format!("call {}; first by call {first_call}", c.call_id)
    };
    Err(Broken::Property(
        SpecId::Rec4,
        format!(
            "key {} (attempt {}) was committed again ({under}); it was first committed on line \
             {first_line}: EFF-1 allows one commit per key{kernel}",
            c.key, c.attempt
        ),
    ))
}

/// Checks what an accepted record claims. `run` is the kernel's run before the record (every
/// earlier record agreed with the kernel, or validation stopped); `tools` is the header's
/// policy, if it declares one.
pub(super) fn check(
    run: &Run,
    record: &Record,
    expected: &Verdict,
    commits: &CommitWindow,
    tools: Option<&ToolTable>,
) -> Result<(), Broken> {
    let Verdict::Accepted(claim) = &record.verdict else {
        return Ok(());
    };
    if let Some(tools) = tools {
        check_policy(tools, record)?;
    }
    check_res_3(run, record)?;
    check_apr_1(run, record, claim)?;
    check_rec_4(claim, expected, commits)
}
