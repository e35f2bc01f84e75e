//! A worker's loop: find the runs it can act on, and give each a turn. What it does with a
//! run is [`plan`](super::plan)'s to say; this is the part that reads the clock and the store
//! and carries the plan out.

use super::plan::{self, Action};
use super::{facts, DriveError, Driver, Fed, Flavor};
use crate::auth::Parties;
use crate::rng::now_ms;
use crate::store::{Request, Row, RunKey, Store, Summary};
use crate::tool::Tools;
use resumable_kernel::{Event, Next, Resume};
use std::sync::Arc;
use std::time::Duration;

/// Most actions one turn takes on one run before the worker moves on to the next.
const TURN_BUDGET: u32 = 16;

/// The kernel input of a party's request, with the facts established now (RES-7): the
/// resource's version as the tool service reports it, never one the party sent. `None` for a
/// resume while the version cannot be observed.
fn request_event(request: Request, observed: Option<u64>) -> Option<Event> {
    Some(match request {
        Request::Resume {
            checkpoint,
            decision,
        } => Event::Resume(Resume {
            checkpoint,
            decision,
            facts: facts(observed?),
        }),
        Request::Cancel { by } => Event::Cancel { by },
    })
}

impl<S: Store, T: Tools> Driver<S, T> {
    /// Whether the run in the scan needs this worker at `now` (see [`plan::actionable`]).
    pub fn actionable(&self, s: &Summary, now: u64) -> bool {
        plan::actionable(s, now, &self.config.owner)
    }

    /// Whether nothing in the scan can move without someone outside (see
    /// [`plan::quiescent`]).
    pub fn quiescent(list: &[Summary], now: u64) -> bool {
        plan::quiescent(list, now)
    }

    /// Gives one run a turn: acts on it until it needs nothing more from this worker, or the
    /// turn's budget is spent. `inbox` says whether requests may wait in its inbox (the scan
    /// counted some). Returns whether anything was committed.
    pub fn turn(&mut self, key: &RunKey, mut inbox: bool) -> Result<bool, DriveError> {
        self.check_key(key)?;
        let mut progressed = false;
        self.landed = None;
        for _ in 0..TURN_BUDGET {
            // After this worker's own commit took, the run is the row that commit wrote;
            // otherwise (the turn's start, a lost compare-and-set, a request refused
            // unauthenticated) it is loaded.
            let row = match self.landed.take() {
                Some(row) if row.key == *key => row,
                _ => match self.store.load(key)? {
                    Some(row) => Arc::new(row),
                    None => return Ok(progressed),
                },
            };
            let pending = if inbox {
                self.store.inbox(key, true)?.into_iter().next()
            } else {
                None
            };
            // The resource's version now: the fact the program's step states and a resume is
            // re-checked against (RES-3), observed before each action.
            let observed = self.observe(key);
            let (owner, timing) = (&self.config.owner, &self.config.timing);
            let now = now_ms();
            let Some(action) = plan::plan(&row, pending.as_ref(), now, owner, timing, observed)?
            else {
                return Ok(progressed);
            };
            inbox = matches!(action, Action::Request(_));
            if !self.act(&row, action, observed)? {
                return Ok(progressed);
            }
            progressed = true;
        }
        Ok(progressed)
    }

    /// Carries out one planned action; returns whether something was committed. The broken
    /// flavours each take the place of one piece of the correct path, here and nowhere else.
    fn act(
        &mut self,
        row: &Row,
        action: Action,
        observed: Option<u64>,
    ) -> Result<bool, DriveError> {
        let (event, pc, consumed) = match action {
            Action::Query(d) => {
                return Ok(match self.reconcile(row, &d, row.checkpoint)? {
                    Some(moved) => {
                        self.carry_out(moved)?;
                        true
                    }
                    None => false,
                });
            }
            Action::Recover(d) if self.config.flavor == Flavor::RetryUnknownBlindly => {
                return self.retry_blindly(row, &d);
            }
            Action::Recover(_) => (Event::Recover, row.pc, None),
            Action::Expire => (Event::Expire, row.pc, None),
            Action::Program(event) => (event, row.pc.saturating_add(1), None),
            Action::Request(r) => {
                if let Parties::Authenticated(keys) = &self.config.parties {
                    // The party the run waits on, as the kernel says: a callback names none.
                    let responsible = match row.run.next() {
                        Next::Decision { responsible, .. } => Some(responsible),
                        _ => None,
                    };
                    if let Err(why) = keys.check(&row.key, &r, responsible.as_ref()) {
                        eprintln!(
                            "{}: request #{} refused, unauthenticated: {why}",
                            row.key, r.id
                        );
                        self.store.refuse_unauthenticated(&row.key, r.id)?;
                        return Ok(true);
                    }
                }
                let Some(event) = request_event(r.request, observed) else {
                    return Ok(false); // the facts cannot be established now: fed later
                };
                (event, row.pc, Some(r.id))
            }
        };
        if self.config.flavor == Flavor::DispatchBeforeCommit {
            return self.feed_dispatching_first(row, event, pc, consumed);
        }
        let fed = self.feed(row, now_ms(), event, pc, consumed)?;
        self.settle(&row.key, fed, consumed.is_some())
    }

    /// What a fed input comes to: an accepted one's effects are carried out; a refusal of a
    /// party's request is its answer, recorded. A refusal of this worker's own input (the
    /// program's step, a recover, an expire) means the driver and the kernel disagree: it is
    /// recorded too, and the turn ends there. Returns whether the turn goes on.
    pub(super) fn settle(
        &mut self,
        key: &RunKey,
        fed: Fed,
        from_request: bool,
    ) -> Result<bool, DriveError> {
        Ok(match fed {
            Fed::Accepted(moved) => {
                self.carry_out(moved)?;
                true
            }
            Fed::Rejected if from_request => true,
            Fed::Rejected => {
                eprintln!("{key}: the kernel refused this worker's own input");
                false
            }
            Fed::Conflict => false,
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
    /// someone outside. Sleeps `poll` between passes that found nothing to do. A store that
    /// fails is waited for with a bounded backoff (see [`crate::backoff`]), saying why.
    pub fn work(
        &mut self,
        offset: usize,
        poll: Duration,
        until_quiescent: bool,
    ) -> Result<(), DriveError> {
        let mut backoff = crate::backoff::Backoff::new();
        loop {
            let (progressed, quiet) = match self.pass(offset) {
                Ok(outcome) => {
                    backoff.succeeded(&self.config.owner);
                    outcome
                }
                // The store failed (a PostgreSQL restart): what this worker was doing is as
                // if it had been killed there, and the next pass starts from what the store
                // holds. Wait, saying why, and try again.
                Err(DriveError::Store(e)) if crate::backoff::transient(&e) => {
                    backoff.failed(&self.config.owner, &e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if quiet && until_quiescent {
                return Ok(());
            }
            if !progressed {
                std::thread::sleep(poll);
            }
        }
    }
}
