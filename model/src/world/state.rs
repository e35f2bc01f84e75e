//! The world's state: the runs as the store holds them, the workers, the budgets and the
//! messages in flight (their types in `messages.rs`, the moves in `actions.rs`, the marks a
//! path leaves in `marks.rs`). Everything here is hashed at every state the checker visits,
//! so it is kept small: indices are `u8`, sets of keys and revisions are bit sets, messages
//! are sorted vectors (a multiset with one canonical order), and the configuration lives
//! outside, in [`crate::config::Config`].
//!
//! Every successor the checker generates is a copy of its state, so the state's vectors are
//! held inline ([`SmallVec`]) and a copy allocates nothing: runs and workers up to the
//! configuration's bounds, messages up to the few that are usually in flight. A message bag
//! may still grow past its inline room (a broken lifecycle may dispatch again and again); it
//! then moves to the heap, and the state is the same value, equal and hashed as before.

use super::actions::Choice;
use super::intern::Interned;
use super::marks::Violations;
use super::messages::{CallVerdict, DecisionMsg, ToolMsg};
use resumable_kernel::{
    Call, Checkpoint, Digest, Fingerprint, HistoryEntry, KeyUse, PhaseKind, Prior, ReasonKind, Time,
};
use smallvec::SmallVec;
use std::hash::{Hash, Hasher};

/// The idempotency keys the world's calls use (`k0`, `k1`, `k2`): the tool's ledger and the
/// world's books are kept per key.
pub const KEYS: usize = 3;

/// The attempts the tool's ledger distinguishes per key: the configuration allows at most
/// this many attempts in all ([`crate::config::Config::validate`]), so attempt numbers stay
/// below it.
pub const ATTEMPTS: u8 = 4;

/// A run as the store holds it, with its call history and the [`RunView`] the world and the
/// properties read of it. Interned as one value, so the view is computed once per distinct
/// run.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct StoredRun<R> {
    /// The lifecycle's run.
    pub run: R,
    /// The run's call history, kept by the store beside the run and written in the same
    /// commit (the run itself holds none: spec KEY-1, KEY-2, REC-4).
    pub history: StoreHistory,
    /// What the world reads of it.
    pub view: RunView,
    /// The run as the properties see it, taken once when the run is stored: the world reads
    /// it at every state, and a snapshot copies the run's phase whole.
    pub snapshot: crate::Snapshot,
}

/// The most bindings the world's programs make in one run: three calls, the agent's
/// re-proposals of them, and a second request for approval, with room to spare for the
/// broken variants that bind a reused call again.
pub const HISTORY_CAPACITY: usize = 8;

/// One run's call history as the world's store keeps it: the driver's index, by the kernel's
/// fingerprints of call ids and keys. A worker looks a call up here before binding it and
/// passes what it found as the call's [`Prior`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct StoreHistory {
    /// The bindings, oldest first: call id, key, argument digest, key spent.
    bound: [Option<(Fingerprint, Fingerprint, Digest, bool)>; HISTORY_CAPACITY],
}

impl StoreHistory {
    /// What the history holds about `call`'s id and key.
    pub fn prior(&self, call: &Call) -> Prior {
        let id = Fingerprint::call_id(&call.call_id);
        let key = Fingerprint::key(&call.key);
        let mut entries = self.bound.iter().flatten();
        Prior {
            call_id_used: entries.clone().any(|e| e.0 == id),
            key: entries.find(|e| e.1 == key).map(|e| KeyUse {
                args: e.2,
                committed: self.bound.iter().flatten().any(|s| s.1 == key && s.3),
            }),
        }
    }

    /// How many calls the run has bound.
    pub fn len(&self) -> usize {
        self.bound.iter().flatten().count()
    }

    /// Whether the run has bound none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The history with `entry` written, or `None` if the world's capacity is exceeded
    /// (the world then offers no such step: see [`HISTORY_CAPACITY`]).
    pub fn with(&self, entry: Option<&HistoryEntry>) -> Option<StoreHistory> {
        let mut next = *self;
        match entry {
            None => {}
            Some(HistoryEntry::Bound { call_id, key, args }) => {
                *next.bound.iter_mut().find(|e| e.is_none())? =
                    Some((*call_id, *key, *args, false));
            }
            Some(HistoryEntry::Settled { key }) => {
                for e in next.bound.iter_mut().flatten() {
                    if e.1 == *key {
                        e.3 = true;
                    }
                }
            }
        }
        Some(next)
    }
}

/// How a finished run ended.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Ending {
    /// Completed.
    Completed,
    /// Failed: the pending call was denied.
    Denied,
    /// Failed: a suspension expired, naming the effect it left unsettled or not.
    Expired {
        /// The failure names an unsettled effect (`expired { unresolved }`): one that may
        /// still commit, as the run's record says.
        unresolved: bool,
    },
    /// Failed: cancelled.
    Cancelled,
    /// Failed: the run's own error.
    Error,
    /// Failed: abandoned by a person.
    Abandoned,
}

/// What the world's guards and the properties read of a run: a function of the run alone,
/// computed once from its snapshot, so that no state pays for a snapshot again.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct RunView {
    /// The revision.
    pub revision: u64,
    /// The phase.
    pub phase: PhaseKind,
    /// The suspension's reason, if suspended.
    pub reason: Option<ReasonKind>,
    /// The suspension's expiry, if suspended.
    pub expires_at: Option<Time>,
    /// How it ended, if it did.
    pub ending: Option<Ending>,
    /// Running with a dispatch in flight.
    pub in_flight: bool,
    /// Suspended with a cancel waiting on an unsettled effect (spec CAN-2).
    pub cancel_pending: bool,
    /// SUS-1: not suspended, or suspended with an expiry not before its start and before the
    /// end of time, and a start no later than the last input.
    pub well_formed: bool,
    /// APR-3: suspended for an approval whose responsible party is its own requester.
    pub self_approved: bool,
    /// The calls of the run's open batch that await a decision, one bit per slot of
    /// [`super::cast::BATCH`] (spec 5.5): what the approver reads before deciding.
    pub awaiting: u8,
    /// How many calls of the run's batch are in flight together (spec BAT-4).
    pub batch_in_flight: u8,
}

/// The most runs a configuration has ([`crate::config::Config::validate`]): the runs are
/// held inline up to it.
pub const MAX_RUNS: usize = 2;

/// The most workers a configuration has ([`crate::config::Config::validate`]): the workers
/// are held inline up to it.
pub const MAX_WORKERS: usize = 4;

/// Messages of one kind held inline before a bag moves to the heap: more than a correct
/// lifecycle has in flight in the default check's worlds.
pub const INLINE_MESSAGES: usize = 4;

/// The runs of a state, inline.
pub type Runs<R> = SmallVec<[RunSlot<R>; MAX_RUNS]>;

/// The workers of a state, inline.
pub type Workers<R> = SmallVec<[Worker<R>; MAX_WORKERS]>;

/// A bag of tool messages, sorted, inline while small.
pub type ToolMsgs = SmallVec<[ToolMsg; INLINE_MESSAGES]>;

/// A bag of decisions, sorted, inline while small.
pub type DecisionMsgs = SmallVec<[DecisionMsg; INLINE_MESSAGES]>;

/// The state of the whole world, generic over the lifecycle's run type `R`.
#[derive(PartialEq, Eq, Debug)]
pub struct WorldState<R: 'static> {
    /// The logical clock, in ticks.
    pub now: u8,
    /// What the environment may still do.
    pub budgets: Budgets,
    /// One slot per run: its durable store, its log summary, the tool's durable side.
    pub runs: Runs<R>,
    /// The workers. None of them is named anywhere else in the state, so they are
    /// interchangeable: sorting them gives a canonical representative.
    pub workers: Workers<R>,
    /// Requests dispatched to the tool and not yet handled (delayed arbitrarily).
    pub requests: ToolMsgs,
    /// Tool responses travelling back (delayed arbitrarily, or lost within the budget).
    pub responses: ToolMsgs,
    /// Decisions sent by approvers, each with how often it has been delivered so far.
    pub decisions: DecisionMsgs,
    /// The rules found broken along the path to this state, by spec ID (see [`Violations`]).
    /// Always empty for a correct lifecycle, so it never splits its states.
    pub violated: Violations,
    /// Rare events seen along the path that no state shows otherwise, for the `sometimes`
    /// properties: see [`witness`].
    pub seen: u32,
}

// Every successor starts as a clone of its state: each vector is copied whole from its
// slice (its elements are all copies), not element by element as a derive would.
impl<R> Clone for WorldState<R> {
    fn clone(&self) -> Self {
        let WorldState {
            now,
            budgets,
            runs,
            workers,
            requests,
            responses,
            decisions,
            violated,
            seen,
        } = self;
        WorldState {
            now: *now,
            budgets: *budgets,
            runs: SmallVec::from_slice(runs),
            workers: SmallVec::from_slice(workers),
            requests: SmallVec::from_slice(requests),
            responses: SmallVec::from_slice(responses),
            decisions: SmallVec::from_slice(decisions),
            violated: *violated,
            seen: *seen,
        }
    }
}

// The checker identifies a state by this hash alone, so different states must write
// different words: the small fields packed into words, each in bits of its own, then the
/// Packs `values` into one word of a state's hash, lowest bits first, each in a slot of the
/// width `widths` gives it, so that different values write different words: the checker
/// keeps a state's hash, not the state, so two states whose words met would be one. The
/// widths of each word are constants whose sum a compile-time check holds within 64 bits,
/// with the slots narrower than their field's type checked against the range
/// `Config::validate` allows; every value is checked against its slot in debug builds.
pub(super) fn pack<const N: usize>(widths: &[u32; N], values: [u64; N]) -> u64 {
    let mut word = 0;
    let mut at = 0;
    for (&width, value) in widths.iter().zip(values) {
        debug_assert!(
            value <= holds(width),
            "{value} overflows a {width}-bit slot"
        );
        word |= value << at;
        at += width;
    }
    word
}

/// Whether slots of these widths fit in one word.
pub(super) const fn fits(widths: &[u32]) -> bool {
    let mut sum = 0;
    let mut i = 0;
    while i < widths.len() {
        sum += widths[i];
        i += 1;
    }
    sum <= u64::BITS
}

/// The largest value a slot of `width` bits holds.
pub(super) const fn holds(width: u32) -> u64 {
    if width >= u64::BITS {
        u64::MAX
    } else {
        (1 << width) - 1
    }
}

/// The world's first word: the clock and the budgets (two of them in four bits).
const CLOCK_AND_BUDGETS: [u32; 9] = [8, 8, 8, 8, 8, 8, 8, 4, 4];
/// The third: the marks seen, and how many runs and workers.
const MARKS_AND_SIZES: [u32; 3] = [32, 16, 16];
/// The fourth: how many messages of each kind, and two budgets.
const MESSAGES_AND_BUDGETS: [u32; 5] = [16, 16, 16, 8, 8];
const _: () = assert!(fits(&CLOCK_AND_BUDGETS) && fits(&MARKS_AND_SIZES));
const _: () = assert!(fits(&MESSAGES_AND_BUDGETS));
const _: () = assert!(
    crate::config::MAX_ARG_CHANGES as u64 <= holds(CLOCK_AND_BUDGETS[7])
        && crate::config::MAX_RENEWALS as u64 <= holds(CLOCK_AND_BUDGETS[8])
);

// lengths of the vectors, then their elements (each written the same way). A state is hashed
// for every successor generated; a few words cost less than a word per field.
impl<R: Hash> Hash for WorldState<R> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let WorldState {
            now,
            budgets,
            runs,
            workers,
            requests,
            responses,
            decisions,
            violated,
            seen,
        } = self;
        // A vector grows by at most one element a step, far from 65,535 on any path the
        // checker explores.
        let length = |n: usize| u64::from(u16::try_from(n).unwrap_or(u16::MAX));
        let (clock_and_budgets, [old_configs, questions], foreign) = budgets.packed(*now);
        state.write_u64(clock_and_budgets);
        state.write_u64(violated.bits());
        state.write_u64(pack(
            &MARKS_AND_SIZES,
            [u64::from(*seen), length(runs.len()), length(workers.len())],
        ));
        state.write_u64(pack(
            &MESSAGES_AND_BUDGETS,
            [
                length(requests.len()),
                length(responses.len()),
                length(decisions.len()),
                old_configs,
                questions,
            ],
        ));
        state.write_u8(foreign);
        runs.iter().for_each(|r| r.hash(state));
        workers.iter().for_each(|w| w.hash(state));
        requests.iter().for_each(|m| m.hash(state));
        responses.iter().for_each(|m| m.hash(state));
        decisions.iter().for_each(|m| m.hash(state));
    }
}

/// The environment's remaining budgets.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Budgets {
    /// Worker crashes left.
    pub crashes: u8,
    /// Tool responses the network may still lose.
    pub losses: u8,
    /// Extra deliveries of decisions the network may still make.
    pub duplicates: u8,
    /// Cancel requests the owner may still send.
    pub cancels: u8,
    /// Times the agent may still propose an earlier call id or key again.
    pub reuses: u8,
    /// Times an outsider may still move a run's resource.
    pub outsider_moves: u8,
    /// Times the framework may still change a pending call's arguments.
    pub arg_changes: u8,
    /// Times the agent may still propose a new call under a recorded call's id.
    pub renewals: u8,
    /// Times the framework may still resume the agent's node from an old config.
    pub old_configs: u8,
    /// Times the agent's node may still ask its second question after the gated call.
    pub questions: u8,
    /// Commits the run left out of a per-run reduction's world may still make under a tool
    /// key this run sent (`Config::foreign_commits`).
    pub foreign: u8,
}

impl Budgets {
    /// The budgets as the state's hash writes them: seven in one word with the clock `now`
    /// (`CLOCK_AND_BUDGETS`), two for the word of the messages' counts, and the last alone.
    /// Every field is named, so a new budget cannot be left out of the hash.
    fn packed(self, now: u8) -> (u64, [u64; 2], u8) {
        let Budgets {
            crashes,
            losses,
            duplicates,
            cancels,
            reuses,
            outsider_moves,
            arg_changes,
            renewals,
            old_configs,
            questions,
            foreign,
        } = self;
        let word = pack(
            &CLOCK_AND_BUDGETS,
            [
                now,
                crashes,
                losses,
                duplicates,
                cancels,
                reuses,
                outsider_moves,
                arg_changes,
                renewals,
            ]
            .map(u64::from),
        );
        (word, [old_configs, questions].map(u64::from), foreign)
    }
}

/// One run's durable side of the world.
#[derive(PartialEq, Eq, Debug)]
pub struct RunSlot<R: 'static> {
    /// The durable store's record of the run, written with compare-and-set on its revision.
    pub run: Interned<StoredRun<R>>,
    /// Every checkpoint persisted for the run, oldest first: what approvers and resumers read.
    /// Persisted in the same write as the run, so a crash never separates them.
    pub checkpoints: Interned<Vec<Interned<Checkpoint>>>,
    /// Records in the run's audit log, also appended in the same write (spec AUD-1).
    pub audited: u8,
    /// The tick at which the run entered its current suspension, if suspended (spec LIVE-1).
    pub waiting_since: Option<u8>,
    /// A worker crashed while the run had a dispatch in flight: a restarted worker may feed
    /// `Recover` (spec REC-1). Cleared by the next accepted write.
    pub orphaned: bool,
    /// Checkpoint revisions a resume has won from (spec RES-2), one bit per revision (the
    /// configuration keeps revisions below 32).
    pub won: u32,
    /// What the world knows about each key, as bits of [`book`].
    pub books: [u8; KEYS],
    /// For each key, the proposal first dispatched under it, plus one (0: none yet), so
    /// that a dispatch of other arguments under it is seen (spec KEY-1).
    pub payloads: [u8; KEYS],
    /// Keys and attempts (bits as in [`ToolSide`]) whose dispatch was made durable (spec
    /// REC-3).
    pub dispatched: u16,
    /// What the tool did with this run's own requests and queries: the world's truth about
    /// the run's calls, by which EFF-1 and BAT-4 judge them. The tool's ledger is keyed by the
    /// tool key a dispatch carries, not by the run: what it answers a run is this, joined with
    /// the records of every other request sent under the same tool key (`world/tool.rs`).
    pub tool: ToolSide,
    /// For each key, the tool key the run's first dispatch under it carried (spec KEY-3): the
    /// key under which the tool's ledger holds its records.
    pub tool_keys: [Option<Interned<Digest>>; KEYS],
    /// The records the run left out of a per-run reduction's world made under this run's tool
    /// keys (a commit, or a query's fence), as it may where a tool key is not bound to this
    /// run's identity (`Config::foreign_commits`, spec/check-output.md, "The per-run
    /// reduction").
    pub foreign: ToolSide,
    /// The version of the resource the run acts on: every commit of the run's calls moves
    /// it, and so may an outsider. Resumes are fed it as their facts, honestly.
    pub resource: u8,
    /// A cancel of the run was accepted (spec CAN-2).
    pub cancelled: bool,
    /// The world's ledger of the batch: the verdict the approver gave each call of
    /// [`super::cast::BATCH`] in an accepted decision naming it (the first, if a broken
    /// lifecycle accepts more). What the batch properties check dispatches and settlements
    /// against (spec BAT-2, BAT-3, BAT-4, BAT-5).
    pub decided: [Option<CallVerdict>; 2],
    /// The framework changed the arguments of the run's gated call after it was proposed,
    /// under the same call id: the agent's node now holds other arguments than the ones the
    /// approver is shown (spec APR-5).
    pub changed: bool,
    /// The run as the framework's own checkpoint (its config) holds it, taken when the run
    /// first waited for the gated call's approval: what a resume from that old config finds
    /// if the run is kept in the framework's state (spec REC-6). Kept only where the
    /// framework resumes from old configs (`Config::old_configs`).
    pub config: Option<Interned<StoredRun<R>>>,
    /// How many decisions were fed to the run while its gated call waited for approval,
    /// accepted or refused: the resume values the framework hands the node's interrupts
    /// before its second question's (spec RES-8). Counted only where the node asks one
    /// (`Config::questions`), up to 3.
    pub fed: u8,
}

// Written out because a derive would require `R: Clone`; every field is a copy.
impl<R> Clone for RunSlot<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for RunSlot<R> {}

/// A run slot's first word: the races won, the dispatches, the audit records, the resource.
const SLOT_COUNTS: [u32; 4] = [32, 16, 8, 8];
/// Its second: the books and payloads of the keys, the wait's start (a presence bit and the
/// tick), three flags, and the decisions fed (counted up to three).
const SLOT_BOOKS_AND_FLAGS: [u32; 11] = [8, 8, 8, 8, 8, 8, 9, 1, 1, 1, 2];
/// How many decisions fed the hash tells apart: more are hashed as this many.
const FED_SEEN: u8 = 3;
/// Its third: the tool's records of its keys, and the batch's two verdicts.
const SLOT_TOOL: [u32; 5] = [16, 16, 16, 3, 3];
const _: () = assert!(CallVerdict::LAST_CODE <= holds(SLOT_TOOL[3]));
/// Its fourth: the records made under its tool keys by a run left out, and which keys have a
/// tool key.
const SLOT_FOREIGN: [u32; 4] = [16, 16, 16, 16];
const _: () = assert!(fits(&SLOT_COUNTS) && fits(&SLOT_BOOKS_AND_FLAGS));
const _: () = assert!(fits(&SLOT_TOOL) && fits(&SLOT_FOREIGN));
const _: () = assert!(FED_SEEN as u64 <= holds(SLOT_BOOKS_AND_FLAGS[10]));
// A key's attempts are bits of a `u16`, and the keys present one bit each.
const _: () = assert!(KEYS * ATTEMPTS as usize <= 16 && KEYS as u64 <= 16);

// Hashed at every state: the two references, then words holding every other field, each in
// bits of its own (`pack`), so that different slots write different words.
impl<R> Hash for RunSlot<R> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let RunSlot {
            run,
            checkpoints,
            audited,
            waiting_since,
            orphaned,
            won,
            books: [b0, b1, b2],
            payloads: [p0, p1, p2],
            dispatched,
            tool,
            tool_keys,
            foreign,
            resource,
            cancelled,
            decided: [d0, d1],
            changed,
            config,
            fed,
        } = *self;
        let since = waiting_since.map_or(0, |t| 0x100 | u64::from(t));
        let [b0, b1, b2, p0, p1, p2] = [b0, b1, b2, p0, p1, p2].map(u64::from);
        let [orphaned, cancelled, changed] = [orphaned, cancelled, changed].map(u64::from);
        let [audited, resource] = [audited, resource].map(u64::from);
        let fed = u64::from(fed.min(FED_SEEN));
        let [d0, d1] = [d0, d1].map(CallVerdict::code);
        run.hash(state);
        checkpoints.hash(state);
        let counts = [u64::from(won), u64::from(dispatched), audited, resource];
        state.write_u64(pack(&SLOT_COUNTS, counts));
        let books_and_flags = [
            b0, b1, b2, p0, p1, p2, since, orphaned, cancelled, changed, fed,
        ];
        state.write_u64(pack(&SLOT_BOOKS_AND_FLAGS, books_and_flags));
        let [committed, fenced, denied] = tool.words();
        state.write_u64(pack(&SLOT_TOOL, [committed, fenced, denied, d0, d1]));
        if let Some(config) = config {
            config.hash(state);
        }
        // Which keys have a tool key, then those tool keys: absent ones write nothing more.
        let present = (tool_keys.iter().enumerate())
            .filter(|(_, t)| t.is_some())
            .fold(0u64, |mask, (i, _)| mask | 1 << i);
        let [committed, fenced, denied] = foreign.words();
        state.write_u64(pack(&SLOT_FOREIGN, [committed, fenced, denied, present]));
        tool_keys.iter().flatten().for_each(|t| t.hash(state));
    }
}

/// Bits of [`RunSlot::books`]: the world's ledger of each key, for the properties.
pub mod book {
    /// A dispatch under the key was made durable and its outcome is not known to the run yet.
    pub const OPEN: u8 = 1 << 0;
    /// The run learned the key's committed result (spec REC-4).
    pub const SETTLED: u8 = 1 << 1;
    /// A denial of the key's call was accepted (spec APR-4).
    pub const DENIED: u8 = 1 << 2;
    /// The key's call was dispatched under a valid approval (spec APR-1); retries may follow.
    pub const APPROVED: u8 = 1 << 3;
}

/// The tool's durable side. The tool sees a key and an attempt together; bit
/// `ATTEMPTS * key + attempt` stands for the pair.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct ToolSide {
    /// Key-attempt pairs the tool committed.
    pub committed: u16,
    /// Pairs the status query fenced: a late request under them can no longer commit.
    pub fenced: u16,
    /// Pairs the status query answered "not committed" for.
    pub denied_commit: u16,
}

impl ToolSide {
    /// Its three sets as words of the state's hash: committed, fenced, answered "not
    /// committed".
    fn words(self) -> [u64; 3] {
        let ToolSide {
            committed,
            fenced,
            denied_commit,
        } = self;
        [committed, fenced, denied_commit].map(u64::from)
    }

    /// The bit for a key and attempt. Keys are below [`KEYS`] and attempts below
    /// [`ATTEMPTS`], as the world's cast and configuration guarantee; both are asserted.
    pub fn bit(key: u8, attempt: u8) -> u16 {
        debug_assert!(usize::from(key) < KEYS && attempt < ATTEMPTS);
        1u16 << (u32::from(ATTEMPTS) * u32::from(key) + u32::from(attempt))
    }

    /// The bits of every attempt of a key.
    pub fn every_attempt(key: u8) -> u16 {
        debug_assert!(usize::from(key) < KEYS);
        ((1u16 << ATTEMPTS) - 1) << (u32::from(ATTEMPTS) * u32::from(key))
    }

    /// Whether the tool committed any attempt of the key.
    pub fn committed_key(&self, key: u8) -> bool {
        self.committed & ToolSide::every_attempt(key) != 0
    }
}

/// A worker: idle, holding a step it computed and will write, or carrying out a dispatch.
/// What it holds is interned, so a worker is a few bytes to copy and hash.
#[derive(PartialEq, Eq, Hash, Debug)]
pub enum Worker<R: 'static> {
    /// Nothing in hand.
    Idle,
    /// It read the run at `from`, stepped it locally and will compare-and-set. The step is
    /// interned, as the runs are: a step is computed once and held by many states, which
    /// then copy and hash a reference rather than the step.
    Staged(Interned<StagedStep<R>>),
    /// Its write landed; it still has to send the step's dispatches to the tool, in order.
    Dispatching {
        /// The run.
        run: u8,
        /// Call and attempt of each dispatch still to send; the first is always present.
        queue: Interned<Queue>,
    },
}

// Written out because a derive would require `R: Clone`; every field is a copy.
impl<R> Clone for Worker<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Worker<R> {}

/// Up to [`resumable_kernel::effect::MAX_EFFECTS`] dispatches (proposal, attempt), in order,
/// packed to the front: as many as one effect list can hold.
pub type Dispatches = [Option<(u8, u8)>; resumable_kernel::effect::MAX_EFFECTS];

/// A worker's dispatches still to send, never empty, interned with what is left of it once
/// its first is sent: sending one is following a reference.
#[derive(PartialEq, Eq, Hash, Debug)]
pub struct Queue {
    /// The dispatches, packed to the front; the first is always present.
    pub dispatches: Dispatches,
    /// The queue once the first is sent, or `None` if it was the last. A function of
    /// `dispatches`, interned as they are.
    pub rest: Option<Interned<Queue>>,
}

impl std::ops::Deref for Queue {
    type Target = Dispatches;
    fn deref(&self) -> &Dispatches {
        &self.dispatches
    }
}

/// A step computed and not yet written.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct StagedStep<R: 'static> {
    /// The run.
    pub run: u8,
    /// The revision the worker read; the write succeeds only if the store is still there.
    pub from: u64,
    /// The input the worker fed.
    pub choice: Choice,
    /// The run after the step.
    pub next: Interned<StoredRun<R>>,
    /// The checkpoint to persist with the write.
    pub checkpoint: Option<Interned<Checkpoint>>,
    /// The dispatches to carry out after the write, in order. A correct lifecycle emits at
    /// most one; a broken one may emit more.
    pub dispatches: Dispatches,
    /// The tool key each of the dispatches carries (spec KEY-3), in the same order.
    pub tool_keys: [Option<Interned<Digest>>; resumable_kernel::effect::MAX_EFFECTS],
    /// The same dispatches as the queue a worker carries after the write (`None` if there
    /// are none): determined by `dispatches`, made once with the step.
    pub queue: Option<Interned<Queue>>,
    /// For a resume, the revision of the checkpoint it was taken from (the configuration
    /// keeps revisions below 32).
    pub resumed_from: Option<u8>,
    /// Audit records the step emitted (exactly one for a correct lifecycle).
    pub audits: u8,
    /// The step was a resume by an approval that binds to the dispatch it makes (spec APR-1).
    pub approval_binds: bool,
    /// Violations the write makes real, found when the step was computed.
    pub raise: Violations,
    /// Witness bits the write makes real.
    pub witness: u32,
    /// Which of the dispatches carry the approver's edited arguments, one bit per dispatch
    /// (spec BAT-5).
    pub edited: u32,
}

// Workers are ordered by their whole content, so that sorting them is canonical. Written out
// because a derive would require `R: Ord`; the run is compared by its interned address.
impl<R> StagedStep<R> {
    #[expect(clippy::type_complexity, reason = "a sort key: the tuple is the order")]
    fn key(
        &self,
    ) -> (
        (
            u8,
            u64,
            Choice,
            Interned<StoredRun<R>>,
            Option<Interned<Checkpoint>>,
        ),
        (
            Dispatches,
            [Option<Interned<Digest>>; resumable_kernel::effect::MAX_EFFECTS],
            Option<u8>,
            u8,
            bool,
            Violations,
            u32,
            u32,
        ),
    ) {
        (
            (self.run, self.from, self.choice, self.next, self.checkpoint),
            (
                self.dispatches,
                self.tool_keys,
                self.resumed_from,
                self.audits,
                self.approval_binds,
                self.raise,
                self.witness,
                self.edited,
            ),
        )
    }
}

impl<R: Eq> PartialOrd for StagedStep<R> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<R: Eq> Ord for StagedStep<R> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl<R: Eq> PartialOrd for Worker<R> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<R: Eq> Ord for Worker<R> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self, other) {
            (Worker::Idle, Worker::Idle) => Ordering::Equal,
            (Worker::Idle, _) => Ordering::Less,
            (_, Worker::Idle) => Ordering::Greater,
            // By content, not by address: the order is the one of the steps themselves.
            (Worker::Staged(a), Worker::Staged(b)) => (**a).cmp(&**b),
            (Worker::Staged(_), _) => Ordering::Less,
            (_, Worker::Staged(_)) => Ordering::Greater,
            // By content, as above.
            (
                Worker::Dispatching { run: a, queue: qa },
                Worker::Dispatching { run: b, queue: qb },
            ) => (a, &qa.dispatches).cmp(&(b, &qb.dispatches)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{fits, holds, pack};

    #[test]
    fn each_value_lands_in_its_own_slot() {
        assert_eq!(pack(&[4, 4, 8], [0xf, 0x1, 0xab]), 0xab1f);
        assert_eq!(holds(3), 7);
        assert_eq!(holds(64), u64::MAX);
        assert!(fits(&[32, 16, 16]));
        assert!(!fits(&[32, 16, 16, 1]));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "overflows a 4-bit slot")]
    fn a_value_wider_than_its_slot_is_refused_in_debug_builds() {
        pack(&[4, 4], [16, 0]);
    }
}
