//! Effects: the commands a transition gives the driver, in the order it must carry them out.

use crate::batch::{List, BATCH_CAPACITY};
use crate::calls::HistoryEntry;
use crate::checkpoint::Checkpoint;
use crate::ids::{Digest, IdempotencyKey, Name, Revision, Time};
use crate::input::{DecisionKind, EventKind};
use crate::run::{PhaseKind, ReasonKind};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// The audit record of one accepted input: new, never a copy of an older one (spec AUD-1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct AuditRecord {
    /// The revision the transition produced.
    pub revision: Revision,
    /// When the input happened.
    pub at: Time,
    /// The kind of input accepted.
    pub event: EventKind,
    /// For a resume, the kind of decision.
    pub decision: Option<DecisionKind>,
    /// The phase after the transition.
    pub phase: PhaseKind,
    /// The suspension reason after the transition, if suspended.
    pub reason: Option<ReasonKind>,
}

/// A tool call the driver must issue, under this key and attempt.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
pub struct Dispatch {
    /// The call's identifier.
    pub call_id: Name,
    /// The tool.
    pub tool: Name,
    /// The argument digest.
    pub args: Digest,
    /// The idempotency key, as the agent named it.
    pub key: IdempotencyKey,
    /// The key the tool must see: the run's identity and `key` together (spec KEY-3), so that
    /// two runs using one key never share a dedupe record or a fence.
    pub tool_key: Digest,
    /// The attempt; with a fencing query, the tool sees the key and attempt together.
    pub attempt: u8,
}

/// A command to the driver.
#[expect(
    clippy::large_enum_variant,
    reason = "the kernel never allocates, so the checkpoint is held inline rather than boxed"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "effect", rename_all = "snake_case"))]
pub enum Effect {
    /// Append this record to the audit log.
    Audit(AuditRecord),
    /// Add this entry to the run's history index, in the same commit as the next run.
    History(HistoryEntry),
    /// Persist this checkpoint and hand it to the responsible party.
    PersistCheckpoint(Checkpoint),
    /// Issue this tool call. Only after `next` is durably stored (spec WAL-1).
    Dispatch(Dispatch),
    /// Ask the tool's status query about this call and attempt.
    Query(Dispatch),
}

/// A command to the driver that stands after the audit record and the checkpoint: at most
/// one per transition, and only a dispatch or a query can stand there (spec WAL-1, REC-1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "effect", rename_all = "snake_case"))]
pub enum Command {
    /// Issue this tool call, only after `next` is durably stored (spec WAL-1).
    Dispatch(Dispatch),
    /// Ask the tool's status query about this call and attempt (spec REC-1, REC-2).
    Query(Dispatch),
}

impl Command {
    /// The call and attempt the command is about.
    pub fn call(&self) -> &Dispatch {
        match self {
            Command::Dispatch(d) | Command::Query(d) => d,
        }
    }
}

impl From<Command> for Effect {
    fn from(c: Command) -> Effect {
        match c {
            Command::Dispatch(d) => Effect::Dispatch(d),
            Command::Query(d) => Effect::Query(d),
        }
    }
}

/// The most effects one transition emits: an audit record, a history entry and a command per
/// call of a batch, and a checkpoint.
pub const MAX_EFFECTS: usize = 2 + 2 * BATCH_CAPACITY;

/// The ordered effects of a transition, held inline: its audit record, the entries it adds to
/// the run's history (a call bound, a key spent), its checkpoint if the run is suspended after
/// it, then its commands (dispatches or a query). Every transition but a batch's carries at
/// most one entry and one command; a batch carries one per call (spec 5.5). The constructor's
/// types make any other order impossible to write down.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Effects {
    // Crate-visible so that the step writes each part in place, in the transition it returns,
    // rather than building the effects beside it and copying them in.
    pub(crate) audit: AuditRecord,
    pub(crate) history: List<HistoryEntry, BATCH_CAPACITY>,
    pub(crate) checkpoint: Option<Checkpoint>,
    pub(crate) commands: List<Command, BATCH_CAPACITY>,
}

impl Effects {
    /// The effects of one transition, in the order the driver carries them out: its audit
    /// record, its history entry (stored with the run), its checkpoint if the run is suspended
    /// after it, then at most one command (a dispatch or a query). Public so that other
    /// lifecycle implementations (the model's reference machine) speak the same vocabulary.
    pub fn of(
        audit: AuditRecord,
        history: Option<HistoryEntry>,
        checkpoint: Option<Checkpoint>,
        command: Option<Command>,
    ) -> Effects {
        Effects::of_batch(audit, history, checkpoint, command)
    }

    /// Effects with only their audit record, for the step to fill in place.
    pub(crate) fn only(audit: AuditRecord) -> Effects {
        Effects {
            audit,
            history: List::new(),
            checkpoint: None,
            commands: List::new(),
        }
    }

    /// The effects of one transition with any number of history entries and commands, up to
    /// a batch's capacity each (spec 5.5); more than that is never emitted, and any beyond it
    /// would be dropped.
    pub fn of_batch(
        audit: AuditRecord,
        history: impl IntoIterator<Item = HistoryEntry>,
        checkpoint: Option<Checkpoint>,
        commands: impl IntoIterator<Item = Command>,
    ) -> Effects {
        let mut effects = Effects::only(audit);
        effects.checkpoint = checkpoint;
        for h in history {
            let _ = effects.history.push(h);
        }
        for c in commands {
            let _ = effects.commands.push(c);
        }
        effects
    }

    /// The effects in order, by value.
    pub fn iter(&self) -> impl Iterator<Item = Effect> + '_ {
        core::iter::once(Effect::Audit(self.audit))
            .chain(self.history.iter().map(|h| Effect::History(*h)))
            .chain(self.checkpoint.map(Effect::PersistCheckpoint))
            .chain(self.commands.iter().map(|c| Effect::from(*c)))
    }

    /// How many effects there are.
    pub fn len(&self) -> usize {
        1 + self.history.len() + usize::from(self.checkpoint.is_some()) + self.commands.len()
    }

    /// Whether there are none (never true: a transition always carries its audit record).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The audit record, which every transition carries first.
    pub fn audit(&self) -> Option<&AuditRecord> {
        Some(&self.audit)
    }

    /// The first command, if any: a dispatch or a query, last.
    pub fn command(&self) -> Option<Command> {
        self.commands.get(0).copied()
    }

    /// Every command, in order.
    pub fn commands(&self) -> impl Iterator<Item = &Command> {
        self.commands.iter()
    }

    /// The query command, if any.
    pub fn query(&self) -> Option<&Dispatch> {
        self.commands.iter().find_map(|c| match c {
            Command::Query(d) => Some(d),
            Command::Dispatch(_) => None,
        })
    }

    /// The first dispatch command, if any.
    pub fn dispatch(&self) -> Option<&Dispatch> {
        self.dispatches().next()
    }

    /// Every dispatch command, in order.
    pub fn dispatches(&self) -> impl Iterator<Item = &Dispatch> {
        self.commands.iter().filter_map(|c| match c {
            Command::Dispatch(d) => Some(d),
            Command::Query(_) => None,
        })
    }

    /// The first entry to add to the run's history index, if any.
    pub fn history(&self) -> Option<&HistoryEntry> {
        self.history.get(0)
    }

    /// Every entry to add to the run's history index, in order.
    pub fn histories(&self) -> impl Iterator<Item = &HistoryEntry> {
        self.history.iter()
    }

    /// The checkpoint to persist, if any.
    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        self.checkpoint.as_ref()
    }
}

#[cfg(feature = "serde")]
impl Serialize for Effects {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}
