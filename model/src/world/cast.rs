//! The cast of the world: names, the calls the agent may propose, the digests the tool
//! answers with. Fixed when the world is made, never part of a state.

use super::state::KEYS;
use crate::config::{Config, Program};
use resumable_kernel::checkpoint::tool_key;
use resumable_kernel::IdempotencyKey;
use resumable_kernel::{Call, Digest, Identity, IdentityField, Name, Policy, ToolContract};

/// A call the agent may propose, and the index of its idempotency key among the world's keys.
#[derive(Clone, Copy, Debug)]
pub struct Proposal {
    /// The call: id, tool, arguments, key and contract.
    pub call: Call,
    /// Its key's index (`k0`, `k1`, `k2`).
    pub key: u8,
}

/// How many proposals there are: the program's calls, then the re-proposals.
pub const PROPOSALS: usize = 5;

/// The proposal of the gated call `c1`: the only call any program gates.
pub const GATED: u8 = 1;

/// The proposals of the batch program's one batch, in slot order: `c1` and `c2`, under keys
/// of their own (spec 5.5).
pub const BATCH: [u8; 2] = [1, 2];

/// The key index of each proposal: `c0`, `c1`, `c2` under keys of their own, the
/// re-proposals `c3` and `c4` under `c0`'s key `k0`.
pub const KEY_OF: [u8; PROPOSALS] = [0, 1, 2, 0, 0];

/// The names, calls and digests of the world, fixed when the world is made.
#[derive(Clone, Copy, Debug)]
pub struct Cast {
    /// Each run's identity: distinct tenants, sessions and runs, one definition; or, with
    /// [`Config::differs_in`], the same but for that one field (spec ID-1).
    pub identities: [Identity; 2],
    /// Every run's policy: the operator and the reconcile window.
    pub policy: Policy,
    /// The agent that asks for the gated call.
    pub requester: Name,
    /// The approver the suspension names as responsible.
    pub approver: Name,
    /// The run's owner, who may cancel it.
    pub owner: Name,
    /// The calls the agent may propose, by index (see [`Cast::REUSES`]). Both runs make the
    /// same calls under the same keys: only their identities differ, so a checkpoint of one
    /// run fits the other in every field but identity (spec ID-1).
    pub proposals: [Proposal; PROPOSALS],
    /// The argument digest of an edited `c1`.
    pub edited_args: Digest,
    /// The argument digest of `c1` once the framework changed it in the agent's state, under
    /// the same call id (spec APR-5).
    pub changed_args: Digest,
    /// The digest of the message an approver hands back with a rejection.
    pub rejection: Digest,
    /// The digest of the answer a person gives in the tool's place.
    pub answer: Digest,
    /// A new call the agent's node proposes under the gated call's id once that call's result
    /// is recorded: other arguments (another payee), the same key (spec REC-5). Never bound:
    /// the driver answers it, or refuses it, before any step.
    pub renewed: Call,
    /// The result each key commits with.
    pub results: [Digest; KEYS],
    /// The run's final result.
    pub final_result: Digest,
    /// The tool key of each key under each identity, bound to the identity as spec KEY-3
    /// binds it: what the world compares a dispatch's tool key with where it must know
    /// whether the tool key is the run's own (the per-run reduction's foreign commits).
    pub bound_keys: [[Digest; KEYS]; 2],
}

impl Cast {
    /// The re-proposals of the three-call program, offered where `c2` is due: `c0` again
    /// (an earlier call id, key and arguments), `c3` (key `k0` with other arguments) and
    /// `c4` (key `k0` with `c0`'s arguments, a key already spent).
    pub const REUSES: [u8; 3] = [0, 3, 4];

    pub(super) fn new(config: &Config) -> Cast {
        let contract = ToolContract {
            dedupes: config.dedupes,
            query_fences: config.query_fences,
            max_attempts: config.max_attempts,
            // The batch world's tool lets a person answer in its place (spec POL-1); the
            // single-call programs keep the default, which is all they use.
            allowed: if config.program == Program::Batch {
                resumable_kernel::Allowed::ALL
            } else {
                resumable_kernel::Allowed::TOOL_DEFAULT
            },
        };
        let proposal = |id: &str, index: usize, args: &[u8]| {
            let key = KEY_OF[index];
            Proposal {
                call: Call {
                    call_id: Name::lit(id),
                    tool: Name::lit("tool"),
                    args: Digest::of(args),
                    key: KEY_NAMES[usize::from(key)],
                    contract,
                },
                key,
            }
        };
        let gated = proposal("c1", 1, b"c1 args");
        let identities = identities(config.differs_in);
        let bound_keys = identities.map(|id| KEY_NAMES.map(|key| tool_key(&id, &key)));
        Cast {
            renewed: Call {
                args: Digest::of(b"c1 args, another payee"),
                ..gated.call
            },
            identities,
            bound_keys,
            policy: Policy {
                operator: Name::lit("ops"),
                reconcile_window: u64::from(config.reconcile_window),
                allowed: resumable_kernel::Allowed::ALL,
            },
            requester: Name::lit("agent"),
            approver: Name::lit("alice"),
            owner: Name::lit("owner"),
            proposals: [
                proposal("c0", 0, b"c0 args"),
                proposal("c1", 1, b"c1 args"),
                proposal("c2", 2, b"c2 args"),
                proposal("c3", 3, b"c0 args, edited"),
                proposal("c4", 4, b"c0 args"),
            ],
            edited_args: Digest::of(b"c1 args, edited"),
            changed_args: Digest::of(b"c1 args, changed in the agent's state"),
            rejection: Digest::of(b"rejected: ask again with other arguments"),
            answer: Digest::of(b"answered by a person"),
            results: [
                Digest::of(b"k0 result"),
                Digest::of(b"k1 result"),
                Digest::of(b"k2 result"),
            ],
            final_result: Digest::of(b"final result"),
        }
    }

    /// The proposal whose call id this is: every proposal has an id of its own (a
    /// re-proposal of an earlier call id is that very proposal again).
    pub fn proposal_by_id(&self, call_id: &Name) -> Option<u8> {
        self.proposals
            .iter()
            .position(|p| p.call.call_id == *call_id)
            .and_then(|i| u8::try_from(i).ok())
    }

    /// The proposal, if the index is one.
    pub fn proposal(&self, index: u8) -> Option<&Proposal> {
        self.proposals.get(usize::from(index))
    }

    /// The key index of a proposal.
    pub fn key_of(&self, index: u8) -> Option<u8> {
        self.proposal(index).map(|p| p.key)
    }
}

/// The cast's two identities (spec ID-1): the second differs from the first in tenant,
/// session and run, or, when `differs_in` names a field, in that field alone.
fn identities(differs_in: Option<IdentityField>) -> [Identity; 2] {
    let first = Identity {
        tenant: Name::lit("tenant-0"),
        session: Name::lit("session-0"),
        run: Name::lit("run-0"),
        definition: Name::lit("agent@1"),
    };
    let second = match differs_in {
        None => Identity {
            tenant: Name::lit("tenant-1"),
            session: Name::lit("session-1"),
            run: Name::lit("run-1"),
            ..first
        },
        Some(IdentityField::Tenant) => Identity {
            tenant: Name::lit("tenant-1"),
            ..first
        },
        Some(IdentityField::Session) => Identity {
            session: Name::lit("session-1"),
            ..first
        },
        Some(IdentityField::Run) => Identity {
            run: Name::lit("run-1"),
            ..first
        },
        Some(IdentityField::Definition) => Identity {
            definition: Name::lit("agent@2"),
            ..first
        },
    };
    [first, second]
}

const KEY_NAMES: [IdempotencyKey; KEYS] = [
    IdempotencyKey::lit("k0"),
    IdempotencyKey::lit("k1"),
    IdempotencyKey::lit("k2"),
];

/// One step of an agent program: a proposal, gated (suspend for approval) or not (dispatch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Suspend for approval of the proposal.
    Gated(u8),
    /// Dispatch the proposal directly.
    Ungated(u8),
}

impl Program {
    /// The program's calls, in order; it completes after the last.
    pub fn steps(self) -> &'static [Step] {
        match self {
            Program::Approval => &[Step::Gated(GATED)],
            Program::Direct => &[Step::Ungated(GATED)],
            Program::SideEffectFirst => &[Step::Ungated(0), Step::Gated(GATED)],
            Program::ThreeCalls => &[Step::Ungated(0), Step::Gated(GATED), Step::Ungated(2)],
            // One batch (see [`BATCH`]), which no single-call step describes.
            Program::Batch => &[],
        }
    }

    /// Whether the proposal needs an approval before it may be dispatched.
    pub fn gated(self, proposal: u8) -> bool {
        self.steps().contains(&Step::Gated(proposal))
    }

    /// The position at which the agent may re-propose an earlier call id or key instead of
    /// its next call: where `c2` is due, in the three-call program only.
    pub fn reuse_at(self) -> Option<usize> {
        match self {
            Program::ThreeCalls => Some(2),
            _ => None,
        }
    }
}
