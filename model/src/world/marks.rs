//! What a path leaves on the state besides the runs: the rules found broken along it
//! ([`Violations`]) and the rare events seen on it ([`witness`]), which the properties read.

use resumable_kernel::SpecId;
use std::ops::{BitOr, BitOrAssign};

/// The rules found broken along a path, one bit per spec ID: what the `always` properties
/// about history read (see [`crate::properties`]), raised where a write, a dispatch or a
/// commit breaks a rule (`world/ledger.rs`, `world/transition.rs`). Keyed by the kernel's
/// [`SpecId`], so a rule is named by a type, never by a bit or a string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, PartialOrd, Ord)]
pub struct Violations(u64);

// One bit per spec ID.
const _: () = assert!(SpecId::ALL.len() <= u64::BITS as usize);

impl Violations {
    /// Nothing broken.
    pub const NONE: Violations = Violations(0);

    /// The rule `id` broken.
    pub const fn of(id: SpecId) -> Violations {
        Violations(1 << id as u32)
    }

    /// Whether the rule `id` was found broken.
    pub const fn has(self, id: SpecId) -> bool {
        self.0 & Violations::of(id).0 != 0
    }

    /// Whether nothing was found broken.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The bits, for traces (bit `n` is the `n`-th of [`SpecId::ALL`]).
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// The rules found broken, in the order of [`SpecId::ALL`].
    pub fn ids(self) -> impl Iterator<Item = SpecId> {
        SpecId::ALL.into_iter().filter(move |id| self.has(*id))
    }
}

impl BitOr for Violations {
    type Output = Violations;
    fn bitor(self, other: Violations) -> Violations {
        Violations(self.0 | other.0)
    }
}

impl BitOrAssign for Violations {
    fn bitor_assign(&mut self, other: Violations) {
        self.0 |= other.0;
    }
}

impl BitOrAssign<SpecId> for Violations {
    fn bitor_assign(&mut self, id: SpecId) {
        *self |= Violations::of(id);
    }
}

/// Bits of [`WorldState::seen`].
pub mod witness {
    /// A decision, or a reconciler's answer, reached its run after the run had moved past the
    /// revision of the checkpoint it was read from.
    pub const STALE_ARRIVED: u32 = 1 << 0;
    /// A reconcile answer of "committed" was recorded, the call not executed again.
    pub const REUSED: u32 = 1 << 1;
    /// A retry made after "not committed" had its result recorded.
    pub const RETRY_SUCCEEDED: u32 = 1 << 2;
    /// A request reached the tool after the query had answered "not committed" for its key.
    pub const LATE_REQUEST: u32 = 1 << 3;
    /// A decision or response reached a run that had already finished (spec INV-1).
    pub const LATE_TO_TERMINAL: u32 = 1 << 4;
    /// A decision reached its run after the decision's own expiry.
    pub const EXPIRED_APPROVAL: u32 = 1 << 5;
    /// A decision reached a run suspended past its expiry, before anyone fed the expiry.
    pub const AFTER_EXPIRY: u32 = 1 << 6;
    /// The agent proposed an earlier call id or key again (spec KEY-1, KEY-2).
    pub const REUSE_PROPOSED: u32 = 1 << 7;
    /// A resume arrived with a resource version other than its checkpoint's (spec RES-3).
    pub const RESOURCE_MOVED: u32 = 1 << 8;
    /// A decision on one call of a batch was accepted while another still awaited one.
    pub const BATCH_SPLIT: u32 = 1 << 9;
    /// A batch resumed with a call rejected or answered by a person and another dispatched.
    pub const BATCH_RUNS_ON: u32 = 1 << 10;
    /// A restart or a cancel found two calls of a batch in flight together (spec BAT-4).
    pub const BATCH_TWO_UNKNOWN: u32 = 1 << 11;
    /// A call edited by the approver was dispatched (spec BAT-5).
    pub const EDITED_DISPATCHED: u32 = 1 << 12;
    /// The clock ticked while no run waited: only a free clock does (`Config::free_clock`,
    /// the per-run reduction's stand-in for the other run's suspensions); or the run left out
    /// committed at the shared tool (`Config::foreign_commits`, its stand-in for the other
    /// run's requests). Not a witness but its opposite: no `sometimes` property is credited
    /// in a state reached through either ([`crate::world::World::may_witness`]).
    pub const BORROWED_TIME: u32 = 1 << 13;
    /// A dispatch of the gated call landed after the framework changed its arguments in the
    /// agent's state (spec APR-5).
    pub const CHANGED_DISPATCHED: u32 = 1 << 14;
    /// The agent proposed a new call under the id of a call whose result is recorded (spec
    /// REC-5).
    pub const RENEWED: u32 = 1 << 15;
    /// The framework resumed the node from an old config after the gated call's result was
    /// recorded (spec REC-6).
    pub const OLD_CONFIG: u32 = 1 << 16;
    /// The node asked its second question after a gated call fed more than one decision
    /// (spec RES-8).
    pub const ASKED_AFTER_ANSWERS: u32 = 1 << 17;
    /// The tool handled a run's request under an idempotency key under which another run's
    /// request had committed first (spec KEY-3): two runs met at the tool with one key.
    pub const SHARED_KEY: u32 = 1 << 18;
}
