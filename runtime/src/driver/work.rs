//! A worker's loop: find the runs it can act on, and give each a turn.

use super::{facts, DriveError, Driver, Fed, Flavor};
use crate::program::Program;
use crate::rng::now_ms;
use crate::store::{Inbox, Request, Row, RunKey, Status, Store, Summary};
use crate::tool::{ToolReply, Tools};
use resumable_kernel::{Dispatch, Event, Input, Next, Resume};
use std::time::Duration;

/// What a run needs from a worker now.
#[expect(
    clippy::large_enum_variant,
    reason = "one action at a time, moved once: a request carries its checkpoint inline"
)]
enum Action {
    /// A request waits in its inbox.
    Request(Inbox),
    /// Its program's next step.
    Program(Event),
    /// A call is in flight and its worker is gone: recover (REC-1).
    Recover,
    /// The broken flavour: dispatch the call in flight again, blindly.
    BlindRetry(Dispatch),
    /// Its suspension expired (EXP-1).
    Expire,
    /// Its outcome is unknown: ask the status query (REC-2).
    Query(Dispatch),
}

/// Most actions one turn takes on one run before the worker moves on to the next.
const TURN_BUDGET: u32 = 16;

impl<S: Store, T: Tools> Driver<S, T> {
    /// Whether another live worker holds the run.
    fn held_by_other(&self, owner: Option<&str>, until_ms: u64, now: u64) -> bool {
        owner.is_some_and(|o| o != self.config.owner) && until_ms > now
    }

    /// Whether the run in the scan needs this worker now.
    pub fn actionable(&self, s: &Summary, now: u64) -> bool {
        if self.held_by_other(s.lease.owner.as_deref(), s.lease.until_ms, now) {
            return false;
        }
        if s.pending > 0 {
            return true;
        }
        match s.status {
            Status::Ready | Status::InFlight | Status::Unknown => true,
            Status::Approval | Status::Callback | Status::Resource | Status::Person => {
                s.wake_at.is_some_and(|due| now >= due)
            }
            Status::Completed | Status::Failed => false,
        }
    }

    fn next_action(
        &mut self,
        row: &Row,
        now: u64,
        inbox: bool,
    ) -> Result<Option<Action>, DriveError> {
        if self.held_by_other(row.lease.owner.as_deref(), row.lease.until_ms, now) {
            return Ok(None);
        }
        if inbox {
            if let Some(request) = self.store.inbox(&row.key, true)?.into_iter().next() {
                return Ok(Some(Action::Request(request)));
            }
        }
        if row.run.deadline().is_some_and(|due| now >= due.0) {
            return Ok(Some(Action::Expire));
        }
        Ok(match row.run.next() {
            Next::Agent => {
                let program = Program::parse(&row.program).ok_or_else(|| {
                    DriveError::Invalid(format!("{}: unknown program {}", row.key, row.program))
                })?;
                let at = now.max(row.run.updated_at().0);
                program
                    .step(row.pc, at, row.resource_version, &self.config.timing)
                    .map(Action::Program)
            }
            // A dispatch in flight whose worker is gone (this worker holds no live dispatch:
            // it only acts on runs no live worker leases).
            Next::Result { dispatch } => match self.config.flavor {
                Flavor::RetryUnknownBlindly => Some(Action::BlindRetry(dispatch)),
                _ => Some(Action::Recover),
            },
            Next::Query { dispatch, .. } => Some(Action::Query(dispatch)),
            Next::Decision { .. } | Next::Nothing { .. } => None,
        })
    }

    /// Gives one run a turn: acts on it until it needs nothing more from this worker, or the
    /// turn's budget is spent. Returns whether anything was committed.
    pub fn turn(&mut self, key: &RunKey, mut inbox: bool) -> Result<bool, DriveError> {
        let mut progressed = false;
        for _ in 0..TURN_BUDGET {
            let Some(row) = self.store.load(key)? else {
                return Ok(progressed);
            };
            let Some(action) = self.next_action(&row, now_ms(), inbox)? else {
                return Ok(progressed);
            };
            inbox = matches!(action, Action::Request(_));
            if !self.perform(row, action)? {
                return Ok(progressed);
            }
            progressed = true;
        }
        Ok(progressed)
    }

    /// Carries out one action; returns whether something was committed.
    fn perform(&mut self, row: Row, action: Action) -> Result<bool, DriveError> {
        let at = Self::at(&row.run);
        let (event, pc, consumed) = match action {
            Action::Request(request) => {
                let event = match request.request {
                    Request::Resume {
                        checkpoint,
                        decision,
                    } => Event::Resume(Resume {
                        checkpoint,
                        decision,
                        facts: facts(&row),
                    }),
                    Request::Cancel { by } => Event::Cancel { by },
                };
                (event, row.pc, Some(request.id))
            }
            Action::Program(event) => (event, row.pc + 1, None),
            Action::Recover => (Event::Recover, row.pc, None),
            Action::Expire => (Event::Expire, row.pc, None),
            Action::Query(d) => {
                return Ok(match self.reconcile(&row, &d, row.checkpoint)? {
                    Some((t, stored)) => {
                        self.carry_out(t, stored, None)?;
                        true
                    }
                    None => false,
                });
            }
            Action::BlindRetry(d) => return self.blind_retry(&row, &d),
        };
        let mut early = None;
        match self.feed(&row, &Input { at, event }, pc, consumed, &mut early)? {
            Fed::Accepted(b) => {
                let (t, stored) = *b;
                self.carry_out(t, stored, early)?
            }
            // A refusal of a party's request is its answer, recorded. A refusal of this
            // worker's own input (the program's step, a recover, an expire) means the driver
            // and the kernel disagree: it is recorded too, and the turn ends there.
            Fed::Rejected if consumed.is_some() => {}
            Fed::Rejected => {
                eprintln!("{}: the kernel refused this worker's own input", row.key);
                return Ok(false);
            }
            Fed::Conflict => return Ok(false),
        }
        Ok(true)
    }

    /// The broken flavour's retry: the call again, under the same key and attempt, with no
    /// recover and no query; its answer is fed as if it were the first.
    fn blind_retry(&mut self, row: &Row, d: &Dispatch) -> Result<bool, DriveError> {
        let reply = self.dispatch(&row.run, d);
        let Ok(ToolReply::Committed { result }) = reply else {
            return Ok(false);
        };
        let event = Event::ToolResult {
            call_id: d.call_id,
            attempt: d.attempt,
            result,
        };
        Ok(self.feed_retrying(row, event, None)?.is_some())
    }

    /// Whether nothing in the scan can move without someone outside: every run has ended or
    /// waits on an approver, a callback, a resource or a person, and no request waits.
    pub fn quiescent(list: &[Summary], now: u64) -> bool {
        list.iter().all(|s| {
            s.pending == 0
                && match s.status {
                    Status::Approval | Status::Callback | Status::Resource | Status::Person => {
                        s.wake_at.is_none_or(|due| now < due)
                    }
                    Status::Completed | Status::Failed => true,
                    Status::Ready | Status::InFlight | Status::Unknown => false,
                }
        })
    }

    /// One pass over the store, starting at `offset` in the list so that workers spread out.
    /// Returns whether anything was committed, and whether the store is quiescent.
    pub fn pass(&mut self, offset: usize) -> Result<(bool, bool), DriveError> {
        let list = self.store.scan(false)?;
        let now = now_ms();
        if Self::quiescent(&list, now) {
            return Ok((false, true));
        }
        let mut progressed = false;
        let n = list.len();
        for i in 0..n {
            let s = &list[(i + offset) % n];
            if self.actionable(s, now_ms()) {
                progressed |= self.turn(&s.key, s.pending > 0)?;
            }
        }
        Ok((progressed, false))
    }

    /// Works until stopped; with `until_quiescent`, returns once nothing can move without
    /// someone outside. Sleeps `poll` between passes that found nothing to do.
    pub fn work(
        &mut self,
        offset: usize,
        poll: Duration,
        until_quiescent: bool,
    ) -> Result<(), DriveError> {
        loop {
            let (progressed, quiet) = self.pass(offset)?;
            if quiet && until_quiescent {
                return Ok(());
            }
            if !progressed {
                std::thread::sleep(poll);
            }
        }
    }
}
