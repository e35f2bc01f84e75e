//! Batches of calls (spec 5.5): one suspension for the calls a model turn proposes together,
//! one decision per call, the approved ones dispatched together and each settled on its own.

use crate::calls::Prior;
use crate::ids::{Digest, Name, Revision, Time};
use crate::input::Approval;
use crate::names::named;
use crate::run::{BoundCall, Call};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// The most calls one batch holds (spec BAT-1). A turn of parallel tool calls, as models make
/// them, is a handful; eight covers it while the run, held inline and copied on every step,
/// stays a few kilobytes. A turn with more calls is put to the approver as consecutive batches.
pub const BATCH_CAPACITY: usize = 8;

/// A list of at most `N` values held inline, in order: no heap, no panic. On the wire, a JSON
/// array; one longer than `N` is refused where it is read.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct List<T: Copy, const N: usize> {
    items: [Option<T>; N],
}

impl<T: Copy, const N: usize> Default for List<T, N> {
    fn default() -> Self {
        List { items: [None; N] }
    }
}

impl<T: Copy, const N: usize> List<T, N> {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// A list of the given values, or `None` if there are more than `N`.
    pub fn of(values: &[T]) -> Option<Self> {
        let mut list = Self::new();
        for v in values {
            list.push(*v).ok()?;
        }
        Some(list)
    }

    /// Appends a value; gives it back if the list is full.
    pub fn push(&mut self, value: T) -> Result<(), T> {
        match self.items.iter_mut().find(|slot| slot.is_none()) {
            Some(slot) => {
                *slot = Some(value);
                Ok(())
            }
            None => Err(value),
        }
    }

    /// The values, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter().map_while(Option::as_ref)
    }

    /// The values, in order, to change in place.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.iter_mut().map_while(Option::as_mut)
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.first().is_none_or(Option::is_none)
    }

    /// The value at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&T> {
        self.items.get(index).and_then(Option::as_ref)
    }
}

#[cfg(feature = "serde")]
impl<T: Copy + Serialize, const N: usize> Serialize for List<T, N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(feature = "serde")]
impl<'de, T: Copy + Deserialize<'de>, const N: usize> Deserialize<'de> for List<T, N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Items<T, const N: usize>(core::marker::PhantomData<T>);
        impl<'de, T: Copy + Deserialize<'de>, const N: usize> serde::de::Visitor<'de> for Items<T, N> {
            type Value = List<T, N>;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "a list of at most {N} items")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut list = List::new();
                while let Some(item) = seq.next_element::<T>()? {
                    if list.push(item).is_err() {
                        return Err(serde::de::Error::custom(format_args!(
                            "a list here holds at most {N} items"
                        )));
                    }
                }
                Ok(list)
            }
        }
        d.deserialize_seq(Items::<T, N>(core::marker::PhantomData))
    }
}

named! {
    /// What an approver may decide about one call (spec 5.5, POL-1).
    #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
    #[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
    #[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
    pub enum VerdictKind {
        /// The call runs as proposed.
        Approve = "approve",
        /// The call runs with the approver's arguments.
        Edit = "edit",
        /// The call never runs; the rejection goes back to the agent and the run goes on.
        Reject = "reject",
        /// The call never runs; the person's answer is its result.
        Respond = "respond",
        /// The call never runs and the run fails (spec APR-4).
        Deny = "deny",
    }
}

impl VerdictKind {
    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of verdicts: those an approver may give on a run ([`crate::Policy::allowed`]) or on
/// a call to a tool ([`crate::ToolContract::allowed`]). On the wire, the list of their names.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Allowed(u8);

impl Allowed {
    /// Every verdict: a run's policy unless it narrows it.
    pub const ALL: Allowed = Allowed::of(&VerdictKind::ALL);
    /// What a tool allows unless it says otherwise: everything but `respond`, which only a
    /// tool whose person answers in its place (an "ask the user" tool) allows.
    pub const TOOL_DEFAULT: Allowed = Allowed::of(&[
        VerdictKind::Approve,
        VerdictKind::Edit,
        VerdictKind::Reject,
        VerdictKind::Deny,
    ]);

    /// The set of the given verdicts.
    pub const fn of(kinds: &[VerdictKind]) -> Allowed {
        let mut bits = 0;
        let mut i = 0;
        while i < kinds.len() {
            bits |= kinds[i].bit();
            i += 1;
        }
        Allowed(bits)
    }

    /// Whether the set holds `kind`.
    pub const fn contains(self, kind: VerdictKind) -> bool {
        self.0 & kind.bit() != 0
    }

    /// The verdicts both sets hold.
    pub const fn and(self, other: Allowed) -> Allowed {
        Allowed(self.0 & other.0)
    }

    /// Whether the set holds no verdict at all.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The verdicts of the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = VerdictKind> {
        VerdictKind::ALL
            .into_iter()
            .filter(move |k| self.contains(*k))
    }
}

#[cfg(feature = "serde")]
impl Serialize for Allowed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for Allowed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let kinds = List::<VerdictKind, 5>::deserialize(d)?;
        Ok(kinds
            .iter()
            .fold(Allowed(0), |set, k| Allowed(set.0 | k.bit())))
    }
}

/// One call of a batch as the agent proposes it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Proposal {
    /// The call.
    pub call: Call,
    /// Who asks for it; never the approver.
    pub requester: Name,
    /// What the run's history holds about the call's id and key, looked up by the driver
    /// just before (spec 4.9).
    pub prior: Prior,
}

/// The calls of one batch, in the order proposed.
pub type Proposals = List<Proposal, BATCH_CAPACITY>;

/// What the approver decided about one call of a batch.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "verdict", rename_all = "snake_case"))]
pub enum Verdict {
    /// Run the call as proposed.
    Approve,
    /// Run the call with these arguments instead (spec BAT-5).
    Edit {
        /// The digest of the approver's arguments.
        args: Digest,
    },
    /// Never run the call; hand this rejection back to the agent as its outcome.
    Reject {
        /// The digest of the message handed back.
        reason: Digest,
    },
    /// Never run the call; this answer is its result.
    Respond {
        /// The digest of the person's answer.
        result: Digest,
    },
    /// Never run the call, and fail the run (spec APR-4).
    Deny,
}

impl Verdict {
    /// The verdict's kind.
    pub fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Approve => VerdictKind::Approve,
            Verdict::Edit { .. } => VerdictKind::Edit,
            Verdict::Reject { .. } => VerdictKind::Reject,
            Verdict::Respond { .. } => VerdictKind::Respond,
            Verdict::Deny => VerdictKind::Deny,
        }
    }
}

/// One decision on one call of a batch: the approval that binds it to the call, its
/// arguments, its requester, the approver and the batch's checkpoint revision (spec BAT-2,
/// APR-1), and what was decided.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct CallDecision {
    /// What the decision binds to.
    pub approval: Approval,
    /// What was decided.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub verdict: Verdict,
}

/// The decisions one resume carries, each on its own call.
pub type Decisions = List<CallDecision, BATCH_CAPACITY>;

/// Where one call of a batch stands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "state", rename_all = "snake_case"))]
pub enum SlotState {
    /// No decision yet.
    Awaiting,
    /// Approved or edited: dispatched when the batch resumes.
    Approved,
    /// Dispatched; its answer is not yet recorded.
    InFlight {
        /// The key's attempt number.
        attempt: u8,
        /// How many times it was dispatched.
        dispatches: u8,
    },
    /// Its outcome became unknown; it waits its turn to be reconciled.
    Unknown {
        /// The key's attempt number.
        attempt: u8,
        /// How many times it was dispatched.
        dispatches: u8,
    },
    /// The run's phase holds it, under the single-call rules.
    Held,
    /// Its result was recorded.
    Committed {
        /// The digest of the result.
        result: Digest,
    },
    /// Rejected: never dispatched; the rejection is its outcome.
    Rejected {
        /// The digest of the message handed back to the agent.
        reason: Digest,
    },
    /// A person answered in the tool's place.
    Responded {
        /// The digest of the answer.
        result: Digest,
    },
    /// Settled without its effect.
    Dropped,
    /// Denied: the run failed.
    Denied,
}

/// One call of a batch and where it stands. `D` is what the slot holds of its decision: the
/// whole decision and the revision that recorded it, as a batch is read ([`Run::batch`],
/// the wire form), or only what the decision adds to the slot ([`Decided`]), as the run keeps
/// it.
///
/// [`Run::batch`]: crate::Run::batch
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Slot<D: Copy = (CallDecision, Revision)> {
    /// The bound call; after an edit, with the approver's arguments and their key digest.
    pub call: BoundCall,
    /// Who asked for it.
    pub requester: Name,
    /// The argument digest the agent proposed: what a decision binds to.
    pub proposed: Digest,
    /// Its key was bound by no earlier call: an edit may rebind it (spec BAT-5).
    pub fresh: bool,
    /// The decision it received, and the revision that recorded it.
    pub decided: Option<D>,
    /// Where it stands.
    #[cfg_attr(feature = "serde", serde(flatten))]
    pub state: SlotState,
}

/// The run's last batch (spec 5.5). `D` as for [`Slot`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Batch<D: Copy = (CallDecision, Revision)> {
    /// The revision of the batch's checkpoint: every decision binds to it.
    pub opened: Revision,
    /// The digest of the batch's checkpoint.
    pub checkpoint: Digest,
    /// The resource version the batch's checkpoint carries: the one the approver decides on.
    pub resource_version: u64,
    /// The revision at which the batch left its suspension, once it has.
    pub closed: Option<Revision>,
    /// Its calls, in the order proposed.
    pub slots: List<Slot<D>, BATCH_CAPACITY>,
}

impl<D: Copy> Batch<D> {
    /// Whether the batch still awaits decisions.
    pub fn is_open(&self) -> bool {
        self.closed.is_none()
    }

    /// The slot of the call with this id.
    pub fn slot(&self, call_id: &Name) -> Option<&Slot<D>> {
        self.slots.iter().find(|s| s.call.call.call_id == *call_id)
    }

    /// The same batch, each slot holding `decided(slot)` of its decision.
    fn map<E: Copy>(&self, mut decided: impl FnMut(&Slot<D>) -> Option<E>) -> Batch<E> {
        let mut slots = List::new();
        for s in self.slots.iter() {
            let _ = slots.push(Slot {
                call: s.call,
                requester: s.requester,
                proposed: s.proposed,
                fresh: s.fresh,
                decided: decided(s),
                state: s.state,
            });
        }
        Batch {
            opened: self.opened,
            checkpoint: self.checkpoint,
            resource_version: self.resource_version,
            closed: self.closed,
            slots,
        }
    }
}

/// What a decision on one call of a batch adds to the call's slot, as the run keeps it: the
/// verdict, the decision's expiry and the revision that recorded it. The rest of what the
/// decision binds to (spec BAT-2, APR-1) is the slot's already: its call id, the arguments
/// proposed and the requester; and the batch's: the revision of its checkpoint and the
/// approver the run waited on. A copy of the whole approval in each slot would make the run,
/// copied on every step, a fifth larger.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Decided {
    /// What was decided.
    pub verdict: Verdict,
    /// The decision is void after this time.
    pub expires_at: Time,
    /// The revision that recorded it.
    pub at: Revision,
}

impl Decided {
    /// What `decision`, recorded at revision `at`, adds to its call's slot.
    pub fn of(decision: &CallDecision, at: Revision) -> Decided {
        Decided {
            verdict: decision.verdict,
            expires_at: decision.approval.expires_at,
            at,
        }
    }
}

/// The batch as the run keeps it: each slot holds what its decision adds ([`Decided`]), and
/// the batch the approver who decided, once one decision is recorded. [`KeptBatch::view`]
/// gives it back whole, as [`Batch`], which is also its wire form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct KeptBatch {
    /// The batch, its slots holding what their decisions add.
    pub(crate) calls: Batch<Decided>,
    /// Who decided its calls: the approver the run waited on (APR-2), one for the batch.
    pub(crate) approver: Option<Name>,
}

impl KeptBatch {
    /// The whole decision recorded in `slot`, if one is.
    pub(crate) fn decision(&self, slot: &Slot<Decided>) -> Option<(CallDecision, Revision)> {
        let (d, approver) = (slot.decided?, self.approver?);
        let approval = Approval {
            call_id: slot.call.call.call_id,
            args: slot.proposed,
            requester: slot.requester,
            approver,
            revision: self.calls.opened,
            expires_at: d.expires_at,
        };
        Some((
            CallDecision {
                approval,
                verdict: d.verdict,
            },
            d.at,
        ))
    }

    /// Records `decision` in the slot at `index`, at revision `at`.
    pub(crate) fn record(&mut self, index: usize, decision: &CallDecision, at: Revision) {
        self.approver = Some(decision.approval.approver);
        if let Some(slot) = self.calls.slots.iter_mut().nth(index) {
            slot.decided = Some(Decided::of(decision, at));
        }
    }

    /// The batch whole, each recorded decision with its approval.
    pub(crate) fn view(&self) -> Batch {
        self.calls.map(|s| self.decision(s))
    }

    /// The batch `whole` as the run keeps it, or why it cannot be: a decision recorded in a
    /// slot binds to that slot's call, proposed arguments and requester, to the batch's
    /// revision, and to the one approver of the batch, or the kernel never recorded it.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))]
    pub(crate) fn keep(whole: &Batch) -> Result<KeptBatch, &'static str> {
        let mut kept = KeptBatch {
            calls: whole.map(|_| None),
            approver: None,
        };
        for (i, s) in whole.slots.iter().enumerate() {
            if let Some((d, at)) = s.decided {
                kept.record(i, &d, at);
            }
        }
        // What the kept form drops of each decision must be what it gives back: the batch
        // keeps the last approver recorded, so a slot whose decision names another is seen.
        if whole.slots.iter().eq(kept.view().slots.iter()) {
            Ok(kept)
        } else {
            Err(
                "a decision recorded in a batch's slot binds to another call, arguments, \
                 requester, revision or approver than the slot's and the batch's",
            )
        }
    }
}

/// The run's batch on the wire: whole, as [`KeptBatch::view`] gives it back.
#[cfg(feature = "serde")]
pub(crate) fn serialize_kept<S: serde::Serializer>(
    batch: &Option<KeptBatch>,
    s: S,
) -> Result<S::Ok, S::Error> {
    batch.as_ref().map(KeptBatch::view).serialize(s)
}
