//! One input, decided and recorded, not yet committed: rules 2 and 3 of the driving contract
//! (spec/lifecycle.md section 7) as a pure function of what is stored.

use crate::clock;
use crate::held::Held;
use resumable_audit::{Anchor, Header, Key, Writer};
use resumable_kernel::{
    Call, Checkpoint, Dispatch, Event, HistoryEntry, Input, Prior, Rejection, Time, Transition,
    Wait,
};

/// Most times an event is staged again after losing a compare-and-set, before the driver
/// gives up for now (another writer keeps moving the run; the next pass tries again).
pub const RETRIES: u32 = 8;

/// What the driver's store holds of a run's call history: the prior a call has, looked up by
/// its id and key (spec KEY-1, KEY-2, REC-4). The runtime's store answers from its history
/// table; a [`crate::book::Book`] answers from memory.
pub trait Ledger {
    /// Why a lookup failed (the store's error; [`std::convert::Infallible`] in memory).
    type Error;
    /// What the history holds of `call`'s id and key.
    fn prior(&mut self, call: &Call) -> Result<Prior, Self::Error>;
}

/// Why an input could not be staged: the store's lookup failed, or the audit record could not
/// be written. A rejection is not an error: it is staged and recorded like any answer.
#[derive(Debug, thiserror::Error)]
pub enum StageError<E> {
    /// The history lookup failed.
    #[error("the call history could not be read: {0}")]
    Ledger(E),
    /// The audit record could not be made.
    #[error("audit record: {0}")]
    Audit(std::io::Error),
}

/// A step decided and its audit record made: everything one commit writes. Nothing outside
/// the driver has seen it; on a lost compare-and-set it is dropped whole.
#[derive(Debug)]
pub struct Staged {
    /// The input as fed: stamped with the driver's time, with the priors it states.
    pub input: Input,
    /// The kernel's answer.
    pub result: Result<Transition, Rejection>,
    /// The audit record of the input and the answer, without its LF.
    pub line: Vec<u8>,
    /// The end of the audit log once `line` is appended.
    pub anchor: Anchor,
    /// The latest checkpoint once committed: the transition's, or the one held before.
    checkpoint: Option<Checkpoint>,
}

impl Staged {
    /// The row after the commit, staged on `before`: the next run and checkpoint for an
    /// accepted input; for a refused one the same run and checkpoint, only the log's end
    /// moved.
    pub fn after(&self, before: &Held) -> Held {
        Held {
            run: self.accepted().map_or(before.run, |t| t.next),
            anchor: self.anchor,
            checkpoint: self.checkpoint,
        }
    }

    /// The transition, if the input was accepted.
    pub fn accepted(&self) -> Option<&Transition> {
        self.result.as_ref().ok()
    }

    /// The rejection, if the input was refused.
    pub fn rejected(&self) -> Option<&Rejection> {
        self.result.as_ref().err()
    }

    /// The history entries the commit writes with the run (a call bound, a key spent).
    pub fn history(&self) -> impl Iterator<Item = &HistoryEntry> {
        self.accepted()
            .into_iter()
            .flat_map(|t| t.effects.histories())
    }

    /// The dispatches to carry out once the commit is durable (WAL-1), in order.
    pub fn dispatches(&self) -> impl Iterator<Item = &Dispatch> {
        self.accepted()
            .into_iter()
            .flat_map(|t| t.effects.dispatches())
    }

    /// The status query to ask once the commit is durable, if the transition commands one.
    pub fn query(&self) -> Option<&Dispatch> {
        self.accepted().and_then(|t| t.effects.query())
    }
}

/// The driving contract's core: the audit key it seals records under, and nothing else. It
/// holds no run and no clock; every call takes what is stored and the time.
#[derive(Clone, Default)]
pub struct Core {
    key: Option<Key>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The audit key never reaches a log, a report or an error: it is named by its id.
        f.debug_struct("Core")
            .field("key", &self.key.as_ref().map(Key::id))
            .finish()
    }
}

impl Core {
    /// A core that seals every record under `key` (HMAC-SHA-256), or chains them by SHA-256
    /// alone without one.
    pub fn new(key: Option<Key>) -> Core {
        Core { key }
    }

    /// The audit key, if any.
    pub fn key(&self) -> Option<&Key> {
        self.key.as_ref()
    }

    /// A new run from its log's header, and line 1 of its audit log.
    pub fn open(&self, header: &Header) -> Result<(Held, Vec<u8>), String> {
        Held::open(header, self.key.as_ref())
    }

    /// Steps `held` with `event` fed at `now`, and makes its audit record. The input is
    /// stamped with the driver's time (CLK-1, [`clock::stamp`]); a call it binds states the
    /// prior `ledger` holds of it, whatever prior the event carried. Nothing is written: the
    /// caller commits [`Staged`] with compare-and-set on `held`, and on a conflict loads the
    /// run again and stages the same event on it.
    pub fn stage<L: Ledger>(
        &self,
        held: &Held,
        now: Time,
        event: Event,
        ledger: &mut L,
    ) -> Result<Box<Staged>, StageError<L::Error>> {
        let input = Input {
            at: clock::stamp(&held.run, now),
            event: stating_priors(event, ledger).map_err(StageError::Ledger)?,
        };
        let result = resumable_kernel::step(&held.run, &input);
        let mut writer = Writer::resume(Vec::new(), held.run, self.key.as_ref(), held.anchor);
        writer.record(&input, &result).map_err(StageError::Audit)?;
        let anchor = writer.anchor();
        let mut line = writer.into_inner().map_err(StageError::Audit)?;
        line.pop();
        let checkpoint = match &result {
            Ok(t) => t.effects.checkpoint().copied().or(held.checkpoint),
            Err(_) => held.checkpoint,
        };
        // Boxed: a run and its transition are kilobytes each, and a driver passes the staged
        // step through several frames before it commits.
        Ok(Box::new(Staged {
            input,
            result,
            line,
            anchor,
            checkpoint,
        }))
    }
}

/// `event` with the prior of every call it binds looked up in `ledger`: a dispatch, a
/// suspension for one call's approval, each call of a batch.
fn stating_priors<L: Ledger>(mut event: Event, ledger: &mut L) -> Result<Event, L::Error> {
    match &mut event {
        Event::Dispatch { call, prior, .. }
        | Event::Suspend {
            wait: Wait::Approval { call, prior, .. },
            ..
        } => *prior = ledger.prior(call)?,
        Event::Suspend {
            wait: Wait::Batch { calls },
            ..
        } => {
            for p in calls.iter_mut() {
                p.prior = ledger.prior(&p.call)?;
            }
        }
        _ => {}
    }
    Ok(event)
}
