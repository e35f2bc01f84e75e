//! The world's vocabulary of moves: what the agent asks for ([`Intent`]), the inputs a worker
//! may feed a run ([`Choice`]), and the actions of workers and of the environment
//! ([`Action`]).

use super::messages::{DecisionMsg, ToolMsg};

/// The agent program's next request.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Intent {
    /// Suspend for approval of a gated proposal.
    Suspend(u8),
    /// Suspend for the batch of [`super::cast::BATCH`] (spec 5.5).
    SuspendBatch,
    /// Suspend for approval of a gated proposal, naming the requester itself as the approver
    /// (spec APR-3): an agent that fills in the approver field with its own name. Offered
    /// only where the requester tries to approve itself (`Config::self_approval`); refused by
    /// a correct lifecycle, it consumes nothing and is no transition.
    SuspendSelfApproved(u8),
    /// Dispatch an ungated proposal.
    Dispatch(u8),
    /// Propose an earlier call id or key again (a proposal of [`super::Cast::REUSES`]): used
    /// up whether accepted or refused.
    Reuse(u8),
    /// Finish with the final result.
    Complete,
    /// Propose a new call under the gated call's id once its result is recorded (the node
    /// run again, another payee: [`super::Cast::renewed`]). Answered or refused by the
    /// driver before any step; used up either way.
    Renew,
    /// The framework resumes the node from an old config, one of its own checkpoints taken
    /// while the gated call waited for approval, once that call's result is recorded: the
    /// node proposes the gated call again, and the resume value it holds is the approval
    /// given then (spec REC-6). Planned by the driver before any step; used up either way.
    OldConfig,
    /// The node asks its second question, a plain interrupt after the gated call, once that
    /// call's result is recorded: the framework runs the node again from its start and hands
    /// its interrupts the resume values given so far, in order (spec RES-8). Planned by the
    /// driver before any step; used up either way.
    Ask,
}

impl Intent {
    /// Whether the driver plans this intent against what it has recorded, before any step:
    /// the lifecycle is never asked.
    pub fn planned_by_driver(self) -> bool {
        matches!(self, Intent::Renew | Intent::OldConfig | Intent::Ask)
    }
}

/// What the tool's status query answered.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Answer {
    /// The key committed.
    Committed,
    /// The key did not commit (and, with a fencing query, now never will).
    NotCommitted,
    /// The query could not tell.
    Unknown,
}

/// How the operator settles a manual intervention, honestly: each is offered only when true.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Settle {
    /// The unresolved call committed: record its result.
    Committed,
    /// Nothing unresolved can commit any more: go ahead without it.
    Continue,
    /// Give the run up.
    Abandon,
}

/// The input a worker feeds a run, as the world chose it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Choice {
    /// The agent program's next request.
    Agent(Intent),
    /// A decision from the network, resumed from the checkpoint it was made on.
    Decision(DecisionMsg),
    /// A tool response from the network.
    Result {
        /// The call.
        call: u8,
        /// The attempt.
        attempt: u8,
    },
    /// The worker restarted after a crash with the run's dispatch in flight.
    Recover,
    /// The clock passed the suspension's expiry.
    Expire,
    /// The tool's status query answered for the unknown outcome: resume from the latest
    /// checkpoint with that answer.
    Reconcile {
        /// The index of the checkpoint the reconciler read (the latest, or an older one of
        /// the same suspension that a slow reconciler still holds).
        checkpoint: u8,
        /// That checkpoint's revision (determined by the index; kept for reading).
        revision: u8,
        /// The call queried.
        call: u8,
        /// The attempt queried.
        attempt: u8,
        /// The answer.
        answer: Answer,
    },
    /// The owner cancels the run.
    Cancel,
    /// The operator settles a manual intervention, from the latest checkpoint.
    Intervene {
        /// The unresolved call, if any.
        call: Option<u8>,
        /// How.
        settle: Settle,
    },
}

/// What the tool does with a request.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ToolOutcome {
    /// It commits the key and answers.
    Commits,
    /// The key already committed: it answers with the stored result (a deduping tool).
    Dedupes,
    /// The key was fenced by a query: it refuses, and nothing commits.
    Refuses,
}

/// An action of the world: who does what to what.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A worker reads a run and steps it with an input (accepted: it holds the step;
    /// refused: it drops the input).
    Step {
        /// The worker.
        worker: u8,
        /// The run.
        run: u8,
        /// The input.
        choice: Choice,
    },
    /// A worker's compare-and-set succeeds.
    Commit {
        /// The worker.
        worker: u8,
        /// The run.
        run: u8,
        /// The revision it read.
        from: u64,
        /// The revision it writes.
        to: u64,
    },
    /// A worker's compare-and-set fails: another write landed first.
    Conflict {
        /// The worker.
        worker: u8,
        /// The run.
        run: u8,
        /// The revision it read.
        staged: u64,
        /// The revision in the store.
        store: u64,
    },
    /// A worker sends a dispatch to the tool.
    Dispatch {
        /// The worker.
        worker: u8,
        /// The request.
        msg: ToolMsg,
    },
    /// A worker crashes, losing everything volatile.
    Crash {
        /// The worker.
        worker: u8,
    },
    /// The tool handles a request.
    Tool {
        /// The request.
        msg: ToolMsg,
        /// What it does.
        outcome: ToolOutcome,
    },
    /// The network loses a tool response.
    Lose {
        /// The response.
        msg: ToolMsg,
    },
    /// An approver (or the requester) decides on a run's current checkpoint.
    Decide {
        /// The decision.
        msg: DecisionMsg,
    },
    /// The clock ticks.
    Tick {
        /// The new time.
        to: u8,
    },
    /// Someone outside the run changes the resource it acts on.
    Outsider {
        /// The run whose resource moves.
        run: u8,
    },
    /// The framework changes the arguments of the run's pending call in the agent's state,
    /// under the same call id, before the resume (a graph's state updated while it waits).
    Framework {
        /// The run.
        run: u8,
    },
    /// In a per-run reduction's world, the run left out makes a record at the tool under the
    /// tool key of one of this run's keys, at an attempt this run sent: a commit, or a fence
    /// by its query (`Config::foreign_commits`).
    Foreign {
        /// The run whose tool key it is.
        run: u8,
        /// The key.
        key: u8,
        /// The attempt.
        attempt: u8,
        /// A fence (the other run's query answered "not committed"), not a commit.
        fence: bool,
    },
}
