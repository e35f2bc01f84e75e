//! The deliberately broken drivers, for showing that the torture bites. Each breaks one rule
//! of the driving contract by taking the place of one piece of the correct path, and the
//! worker calls it in that place, by name (`work.rs`); the planner, `feed` and `carry_out`
//! never look at the flavour.

use super::{DriveError, Driver, Fed, Row};
use crate::store::Store;
use crate::tool::{ToolReply, Tools};
use resumable_kernel::{Dispatch, Event};
use std::io;

/// How the driver behaves: correctly, or with one rule of the contract broken on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// The driving contract, kept.
    Correct,
    /// Broken: carries out a dispatch before the step is committed (breaks WAL-1). A kill
    /// between the two, or a lost compare-and-set, leaves a call the store never heard of.
    DispatchBeforeCommit,
    /// Broken: finding a call in flight whose worker is gone, dispatches it again under the
    /// same key and attempt instead of recovering and reconciling by query (breaks REC-2).
    RetryUnknownBlindly,
}

impl Flavor {
    /// The flavour's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::Correct => "correct",
            Flavor::DispatchBeforeCommit => "dispatch-before-commit",
            Flavor::RetryUnknownBlindly => "retry-unknown-blindly",
        }
    }

    /// The flavour named `s`.
    pub fn parse(s: &str) -> Option<Flavor> {
        [
            Flavor::Correct,
            Flavor::DispatchBeforeCommit,
            Flavor::RetryUnknownBlindly,
        ]
        .into_iter()
        .find(|f| f.as_str() == s)
    }
}

impl<S: Store, T: Tools> Driver<S, T> {
    /// [`Flavor::RetryUnknownBlindly`], in place of the planned `recover`: the call again,
    /// under the same key and attempt, with no recover and no query; its answer is fed as if
    /// it were the first. Returns whether anything was committed.
    pub(super) fn retry_blindly(&mut self, row: &Row, d: &Dispatch) -> Result<bool, DriveError> {
        let reply = self.dispatch(&row.run, d);
        let Ok(ToolReply::Committed { result }) = reply else {
            return Ok(false);
        };
        let event = Event::ToolResult {
            call_id: d.call_id,
            attempt: d.attempt,
            result,
        };
        Ok(self.feed_retrying(row, event)?.is_some())
    }

    /// [`Flavor::DispatchBeforeCommit`], in place of `feed` and `carry_out`: the step's
    /// dispatches (one, or a batch's several) are sent before its commit, and their answers
    /// fed, each in turn, once the commit has landed. Returns whether anything was committed.
    pub(super) fn feed_dispatching_first(
        &mut self,
        row: &Row,
        event: Event,
        pc: u32,
        consumed: Option<u64>,
    ) -> Result<bool, DriveError> {
        let staged = self.stage(row, crate::rng::now_ms(), event, pc, consumed)?;
        let dispatches: Vec<Dispatch> = staged.dispatches().copied().collect();
        let mut early: Vec<io::Result<ToolReply>> = Vec::new();
        for d in &dispatches {
            let request = self.request(&row.run, d, false);
            early.push(self.tools.call(&request));
        }
        match self.land(row, staged)? {
            Fed::Accepted(moved) if !dispatches.is_empty() => {
                // Each early answer in its dispatch's turn.
                let mut replies = early.into_iter();
                let next = self.carry_dispatches(&moved.row, &dispatches, |_, _, _| {
                    replies
                        .next()
                        .unwrap_or_else(|| Err(io::Error::other("no early answer")))
                })?;
                if let Some(next) = next {
                    self.carry_out(next)?;
                }
                Ok(true)
            }
            fed => self.settle(&row.key, fed, consumed.is_some()),
        }
    }
}
