//! The messages in flight in the world: requests to the tool and its responses, and the
//! decisions approvers send. Each is hashed in one word at every state that holds it, each
//! field in bits of its own.

use super::state::{fits, holds, pack};
use std::hash::{Hash, Hasher};

/// A request to the tool or its response: the run, the proposal (the call as the agent made
/// it: id, key and arguments) and the attempt.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub struct ToolMsg {
    /// The run.
    pub run: u8,
    /// The proposal.
    pub call: u8,
    /// The attempt.
    pub attempt: u8,
}

// One word per message, written at every state that holds it.
impl Hash for ToolMsg {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let ToolMsg { run, call, attempt } = *self;
        state.write_u32(u32::from(run) << 16 | u32::from(call) << 8 | u32::from(attempt));
    }
}

/// Who sent a decision.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Party {
    /// The approver the suspension names as responsible.
    Approver,
    /// The requester of the call, approving its own call (spec APR-3).
    Requester,
}

/// What a decision says.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Verdict {
    /// Approve the call as the checkpoint shows it.
    Approve,
    /// Deny it (spec APR-4).
    Deny,
    /// Approve an edited version of it: other arguments (spec APR-1, KEY-2).
    ApproveEdited,
    /// Decisions on calls of a batch (spec 5.5), one per slot of [`super::cast::BATCH`] named.
    Batch(Picks),
}

/// What an approver decides about one call of a batch (spec 5.5).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum CallVerdict {
    /// Run it as proposed.
    Approve,
    /// Run it with the approver's arguments (spec BAT-5).
    Edit,
    /// Never run it; the rejection goes back to the agent.
    Reject,
    /// Never run it; a person's answer is its result.
    Respond,
    /// Never run it, and fail the run (spec APR-4).
    Deny,
}

impl CallVerdict {
    /// Whether the call runs: approved or edited.
    pub fn runs(self) -> bool {
        matches!(self, CallVerdict::Approve | CallVerdict::Edit)
    }

    /// A number for each pick of a call, none included, different for different picks: at
    /// most [`CallVerdict::LAST_CODE`], for the state's hash.
    pub(super) fn code(pick: Option<CallVerdict>) -> u64 {
        match pick {
            None => 0,
            Some(CallVerdict::Approve) => 1,
            Some(CallVerdict::Edit) => 2,
            Some(CallVerdict::Reject) => 3,
            Some(CallVerdict::Respond) => 4,
            Some(CallVerdict::Deny) => 5,
        }
    }

    /// The largest [`CallVerdict::code`].
    pub(super) const LAST_CODE: u64 = 5;
}

/// The verdicts one batch decision gives, by slot of [`super::cast::BATCH`]; `None` for a
/// call it does not name.
pub type Picks = [Option<CallVerdict>; 2];

/// A decision on a checkpoint, in flight to a run.
#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub struct DecisionMsg {
    /// The run it is sent to.
    pub target: u8,
    /// The run whose checkpoint it decides on (another run's: spec ID-1).
    pub source: u8,
    /// The index of that checkpoint among the source run's persisted checkpoints.
    pub checkpoint: u8,
    /// The checkpoint's revision (determined by the two fields above; kept for reading).
    pub revision: u8,
    /// Who decided.
    pub party: Party,
    /// What.
    pub verdict: Verdict,
    /// The approval's own expiry (spec APR-2).
    pub expires_at: u8,
    /// How often it has been delivered.
    pub delivered: u8,
}

impl Verdict {
    /// A number for each verdict, different for different verdicts: below 3 for the single
    /// verdicts, and for a batch 3 plus its two picks in base 6.
    fn code(self) -> u64 {
        let pick = CallVerdict::code;
        match self {
            Verdict::Approve => 0,
            Verdict::Deny => 1,
            Verdict::ApproveEdited => 2,
            Verdict::Batch([a, b]) => 3 + 6 * pick(a) + pick(b),
        }
    }
}

/// A decision's word: its runs, checkpoint, revision, expiry and deliveries, the party, and
/// the verdict's code (a batch's the largest, two picks in base 6 after three).
const DECISION: [u32; 8] = [8, 8, 8, 8, 8, 8, 1, 6];
const _: () = assert!(CallVerdict::LAST_CODE < 6);
const _: () = assert!(fits(&DECISION) && 3 + 7 * CallVerdict::LAST_CODE <= holds(DECISION[7]));

// One word per decision, written at every state that holds it: each field in bits of its
// own (`pack`), so different decisions write different words.
impl Hash for DecisionMsg {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let DecisionMsg {
            target,
            source,
            checkpoint,
            revision,
            party,
            verdict,
            expires_at,
            delivered,
        } = *self;
        let party = match party {
            Party::Approver => 0,
            Party::Requester => 1,
        };
        state.write_u64(pack(
            &DECISION,
            [
                u64::from(target),
                u64::from(source),
                u64::from(checkpoint),
                u64::from(revision),
                u64::from(expires_at),
                u64::from(delivered),
                party,
                verdict.code(),
            ],
        ));
    }
}
