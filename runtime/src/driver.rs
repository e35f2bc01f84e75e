//! The driver: the driving contract of `spec/lifecycle.md`, section 7, as code.
//!
//! For every input: load the run, step it with the kernel, write the next run, its audit
//! record, its checkpoint and the answer to the request it consumed in one transaction with
//! compare-and-set on the revision and the log's end, and only then carry out the effects,
//! feeding each answer back as a new input. A refused input is recorded too (REJ-1), in the
//! same way, and changes nothing else.
//!
//! What a worker does with a run is [`plan`]'s to say, a pure function of what the store
//! shows and the time; the worker's loop (`work.rs`) reads both and carries the plan out.
//! [`Flavor`] holds two deliberately broken drivers, for showing that the torture bites.
//! [`crash`] holds the points where a planned kill lands.

use crate::lifecycle;
use crate::program::{Program, Timing};
use crate::rng::now_ms;
use crate::store::{
    status_of, Answer, Cas, Commit, Consumed, Expect, Lease, NewRun, Row, RunKey, Store, StoreError,
};
use crate::tool::{ToolReply, ToolRequest, Tools};
use resumable_driver::{Core, Staged};
use resumable_kernel::{Checkpoint, Dispatch, Event, Facts, Run, Transition};
use std::sync::Arc;

pub mod crash;
mod flavor;
pub mod plan;
#[cfg(test)]
mod tests;
mod work;

pub use crash::{CrashPlan, CrashPoint};
pub use flavor::Flavor;

/// A driver's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Who this driver is, unique per process: the holder named in leases.
    pub owner: String,
    /// How long a hold on a run lasts past its last commit. Longer than the longest wait for
    /// a tool's answer, so a live worker is never taken for a dead one.
    pub lease_ms: u64,
    /// The programs' timing.
    pub timing: Timing,
    /// Correct or broken.
    pub flavor: Flavor,
    /// Where a planned kill lands, if anywhere.
    pub crash: CrashPlan,
    /// The audit key that seals every record (HMAC-SHA-256); without one, records are
    /// chained by SHA-256 alone.
    pub key: Option<lifecycle::Key>,
    /// Whose requests reach the kernel: only those sealed by their sender, or, told so,
    /// every one.
    pub parties: crate::auth::Parties,
}

/// Why driving failed.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A run cannot be made under this name (it holds a `/`, or is not a valid name).
    #[error("run name {name:?}: {why}")]
    RunName {
        /// The name asked for.
        name: String,
        /// Why it cannot name a run.
        why: String,
    },
    /// The run's header or policy cannot make a run, or its log's header cannot be written.
    #[error("run {name:?}: {why}")]
    Header {
        /// The run.
        name: String,
        /// Why.
        why: String,
    },
    /// The row names a program this runtime does not know.
    #[error("{run}: unknown program {program}")]
    UnknownProgram {
        /// The run.
        run: RunKey,
        /// The program the row names.
        program: String,
    },
    /// The run's log's header, as stored, cannot be read.
    #[error("{run}: {why}")]
    LogHeader {
        /// The run.
        run: RunKey,
        /// Why.
        why: String,
    },
    /// An audit record could not be made.
    #[error("audit record: {0}")]
    Audit(std::io::Error),
    /// The run's log is sealed under a key this driver does not hold (or under none while
    /// it holds one): every record it wrote would fail its MAC, so it writes none.
    #[error("{run}: {}", key_mismatch(*.sealed, *.held))]
    Key {
        /// The run.
        run: RunKey,
        /// The key id its log's header names; `None`: the log is chained by SHA-256 alone.
        sealed: Option<lifecycle::KeyId>,
        /// The id of the key this driver holds, if any.
        held: Option<lifecycle::KeyId>,
    },
}

fn key_mismatch(sealed: Option<lifecycle::KeyId>, held: Option<lifecycle::KeyId>) -> String {
    match (sealed, held) {
        (Some(s), None) => format!(
            "its log is sealed under audit key {s}, and this worker has no audit key \
             (--audit-key FILE with that key)"
        ),
        (Some(s), Some(h)) => format!(
            "its log is sealed under audit key {s}, and this worker holds key {h} \
             (--audit-key FILE with key {s})"
        ),
        (None, Some(h)) => format!(
            "its log is chained without a key, and this worker holds audit key {h}: \
             drive it without --audit-key"
        ),
        (None, None) => "its log's key matches".to_string(),
    }
}

/// The driver: a store, tools, and the contract between them.
pub struct Driver<S, T> {
    store: S,
    tools: T,
    config: Config,
    /// The driving contract's core: the time an input is stamped with, the priors it states,
    /// the step and its audit record under the configured key.
    core: Core,
    commits: u64,
    /// The runs whose log's key this driver has checked against its own.
    sealed_by_mine: std::collections::HashSet<RunKey>,
    /// The row this driver's last commit wrote, if that commit took: exactly what the store
    /// held when the compare-and-set succeeded, so a turn goes on from it instead of loading
    /// the run again. Cleared by a lost compare-and-set, and at the start of every turn.
    /// Shared with the [`Moved`] of that commit rather than copied: a row is kilobytes.
    landed: Option<Arc<Row>>,
}

/// An accepted input, committed: the core's staged step, whose transition's effects are
/// still to be carried out, and the row as now stored.
pub(crate) struct Moved {
    /// The staged step, accepted: kept as the core made it (boxed), not copied out.
    staged: Box<Staged>,
    /// The row as the commit left it.
    pub row: Arc<Row>,
}

impl Moved {
    /// The transition the commit stored.
    pub(crate) fn transition(&self) -> &Transition {
        // `land` makes a `Moved` of an accepted step only.
        self.staged
            .accepted()
            .expect("a Moved holds an accepted step")
    }
}

/// What one committed input did.
pub(crate) enum Fed {
    /// Accepted and committed.
    Accepted(Box<Moved>),
    /// Refused, and the refusal recorded.
    Rejected,
    /// Another writer moved the run first: nothing was written.
    Conflict,
}

/// A step staged by the core and the row it leaves, not yet committed: what [`Driver::land`]
/// writes. Nothing outside the driver has seen it.
pub(crate) struct Landing {
    /// The core's staged step: the input as stamped, the kernel's answer, the audit line.
    staged: Box<Staged>,
    /// The row as the commit will leave it (the old run, checkpoint, position and lease for
    /// a refused input; only the log's end moves).
    after: Row,
    /// The inbox request the input answers, and the answer.
    consumed: Option<Consumed>,
}

impl Landing {
    /// The dispatches the step commands, if it was accepted and commands any: one, or a
    /// batch's several.
    pub(crate) fn dispatches(&self) -> impl Iterator<Item = &Dispatch> {
        self.staged.dispatches()
    }
}

/// The facts of a resume, established just before it under current policy (RES-7): this
/// runtime's policy permits every step and has no budget; the resource version is the one
/// the tool service reports now (`Driver::observe`), never one a party sent.
pub fn facts(resource_version: u64) -> Facts {
    resumable_driver::observed(resource_version)
}

/// Creates a run of `program` named `name` in `store`, with its log's header; `Ok(None)` if
/// it exists already.
pub fn create_run(
    store: &mut dyn Store,
    program: Program,
    name: &str,
    resource_version: u64,
    timing: &Timing,
    audit_key: Option<&lifecycle::Key>,
) -> Result<Option<RunKey>, DriveError> {
    // The store's key is `tenant/session/run`: a `/` in the name would make a key that
    // names another run, or none.
    if name.contains('/') {
        return Err(DriveError::RunName {
            name: name.to_string(),
            why: "a run's name holds no '/' (the store's keys are tenant/session/run)".into(),
        });
    }
    let header = program
        .header(name, now_ms(), timing)
        .map_err(|e| DriveError::RunName {
            name: name.to_string(),
            why: e.to_string(),
        })?;
    let (run, line, tail) =
        lifecycle::open(&header, program.tools(), audit_key).map_err(|why| DriveError::Header {
            name: name.to_string(),
            why,
        })?;
    let key = lifecycle::run_key(run.identity());
    let new = NewRun {
        key: &key,
        run: &run,
        header: &line,
        tail,
        program: program.as_str(),
        resource_version,
    };
    Ok(match store.create(&new)? {
        Cas::Done => Some(key),
        Cas::Conflict => None,
    })
}

impl<S: Store, T: Tools> Driver<S, T> {
    /// A driver over `store` and `tools`.
    pub fn new(store: S, tools: T, config: Config) -> Driver<S, T> {
        Driver {
            store,
            tools,
            core: Core::new(config.key.clone()),
            config,
            commits: 0,
            sealed_by_mine: std::collections::HashSet::new(),
            landed: None,
        }
    }

    /// How many steps (accepted or refused) this driver has committed.
    pub fn commits(&self) -> u64 {
        self.commits
    }

    /// The store.
    pub fn store(&mut self) -> &mut S {
        &mut self.store
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Checks, once per run, that the key its log's header names is the one this driver
    /// seals with (or that neither has one), before anything is written to it.
    pub fn check_key(&mut self, key: &RunKey) -> Result<(), DriveError> {
        if self.sealed_by_mine.contains(key) {
            return Ok(());
        }
        let Some(header) = self.store.header(key)? else {
            return Ok(()); // no such run: nothing will be written to it
        };
        let sealed = lifecycle::header_key_id(&header).map_err(|why| DriveError::LogHeader {
            run: key.clone(),
            why,
        })?;
        let held = self.config.key.as_ref().map(lifecycle::Key::id);
        if sealed != held {
            return Err(DriveError::Key {
                run: key.clone(),
                sealed,
                held,
            });
        }
        self.sealed_by_mine.insert(key.clone());
        Ok(())
    }

    /// Who holds the run after `next`: this driver while the run's next step is a worker's
    /// (its program's step, a call in flight, a query), nobody while it waits on a party.
    fn lease_after(&self, next: &Run) -> Lease {
        if status_of(next).needs_worker() {
            Lease {
                owner: Some(self.config.owner.clone()),
                until_ms: now_ms() + self.config.lease_ms,
            }
        } else {
            Lease::default()
        }
    }

    /// Steps `row` with `event` fed at `now` (ms) and commits the outcome, accepted or
    /// refused, in one transaction (rules 2 to 4 of the driving contract). `pc` is the
    /// program's position if the input is accepted; `consumed` the inbox request the input
    /// answers. Nothing outside the store happens here.
    pub(crate) fn feed(
        &mut self,
        row: &Row,
        now: u64,
        event: Event,
        pc: u32,
        consumed: Option<u64>,
    ) -> Result<Fed, DriveError> {
        let landing = self.stage(row, now, event, pc, consumed)?;
        self.land(row, landing)
    }

    /// Stages `event` through the driver core (the driver's time, the priors the store's
    /// history holds, the step, the audit record) and makes the row it leaves.
    pub(crate) fn stage(
        &mut self,
        row: &Row,
        now: u64,
        event: Event,
        pc: u32,
        consumed: Option<u64>,
    ) -> Result<Landing, DriveError> {
        let staged = lifecycle::stage(&self.core, &mut self.store, row, now, event).map_err(
            |e| match e {
                resumable_driver::StageError::Ledger(e) => DriveError::Store(e),
                resumable_driver::StageError::Audit(e) => DriveError::Audit(e),
            },
        )?;
        let tail = lifecycle::tail_after(&staged);
        // The row is built field by field: `..row.clone()` would copy the old run (kilobytes)
        // only to drop it for the next one.
        let (after, answer) = match &staged.result {
            Ok(t) => (
                Row {
                    key: row.key.clone(),
                    run: t.next,
                    tail,
                    checkpoint: t.effects.checkpoint().copied(),
                    program: row.program.clone(),
                    pc,
                    lease: self.lease_after(&t.next),
                    resource_version: row.resource_version,
                },
                Answer::Accepted(t.next.revision()),
            ),
            Err(r) => (
                Row {
                    tail,
                    ..row.clone()
                },
                Answer::Rejected(*r),
            ),
        };
        Ok(Landing {
            staged,
            after,
            consumed: consumed.map(|request| Consumed { request, answer }),
        })
    }

    /// Commits a staged step if `row` is still what the store holds (compare-and-set on its
    /// revision and log position); the kill points sit on either side of the commit.
    pub(crate) fn land(&mut self, row: &Row, landing: Landing) -> Result<Fed, DriveError> {
        let Landing {
            staged,
            after,
            consumed,
        } = landing;
        self.config.crash.at(CrashPoint::BeforeCommit);
        let history: Vec<resumable_kernel::HistoryEntry> = staged.history().copied().collect();
        let commit = Commit {
            key: &row.key,
            expect: Expect::of(row),
            run: &after.run,
            tail: after.tail,
            line: &staged.line,
            checkpoint: after.checkpoint.as_ref(),
            pc: after.pc,
            lease: &after.lease,
            consumed,
            history: &history,
        };
        self.landed = None;
        if self.store.commit(&commit)? == Cas::Conflict {
            return Ok(Fed::Conflict);
        }
        let after = Arc::new(after);
        self.landed = Some(Arc::clone(&after));
        self.commits += 1;
        self.config.crash.at(CrashPoint::AfterCommit);
        Ok(if staged.accepted().is_some() {
            Fed::Accepted(Box::new(Moved { staged, row: after }))
        } else {
            Fed::Rejected
        })
    }

    /// The version of the resource run `key` acts on, as the tool service reports it now:
    /// the fact a decision is re-checked against (RES-3). `None` while the service cannot
    /// say (unreachable): nothing that needs the fact is fed.
    pub(crate) fn observe(&mut self, key: &RunKey) -> Option<u64> {
        let request = ToolRequest::Version {
            resource: key.0.clone(),
        };
        match self.tools.call(&request) {
            Ok(ToolReply::Version { version }) => Some(version),
            _ => None,
        }
    }

    /// The request for a dispatch or a status query of `d`, under the run's tool key. A
    /// dispatch names the resource it acts on, the run's own, whose version its commit moves.
    fn request(&self, run: &Run, d: &Dispatch, query: bool) -> ToolRequest {
        let tool = d.tool.as_str().to_string();
        let key = d.tool_key.to_string();
        debug_assert_eq!(key, lifecycle::tool_key(run.identity(), &d.key));
        if query {
            ToolRequest::Query {
                tool,
                key,
                attempt: d.attempt,
            }
        } else {
            ToolRequest::Dispatch {
                tool,
                key,
                attempt: d.attempt,
                args: d.args,
                resource: Some(lifecycle::run_key(run.identity()).0),
            }
        }
    }

    /// Carries out a committed transition's effects (rule 5), feeding each answer back,
    /// until the run needs nothing more from this driver right now.
    /// Each transition is held boxed: a run and a transition are kilobytes each, and the
    /// loop's frames would otherwise hold several at once.
    pub(crate) fn carry_out(&mut self, moved: Box<Moved>) -> Result<(), DriveError> {
        let mut next = Some(moved);
        while let Some(moved) = next {
            let (transition, row) = (moved.transition(), &*moved.row);
            let dispatches: Vec<Dispatch> = transition.effects.dispatches().copied().collect();
            next = if !dispatches.is_empty() {
                self.carry_dispatches(row, &dispatches, |driver, run, d| driver.dispatch(run, d))?
            } else if let Some(q) = transition.effects.query() {
                let checkpoint = transition.effects.checkpoint().copied();
                self.reconcile(row, q, checkpoint)?
            } else {
                None
            };
        }
        Ok(())
    }

    /// Carries out a transition's dispatches (one, or a batch's several, spec BAT-4) in
    /// order, each answered through `reply` and its answer fed as an input of its own before
    /// the next leaves, on the row the last answer left. A dispatch leaves only while the run
    /// still waits on its answer ([`plan::awaits_answer`]); once an answer's transition
    /// commands more (a recover's query), or an answer cannot be recorded, the dispatches
    /// not yet sent are left to recovery: still in flight for the kernel, they are made
    /// unknown and settled by query, never sent again blindly. Returns the transition the
    /// last answer made, to carry on with.
    pub(crate) fn carry_dispatches(
        &mut self,
        row: &Row,
        dispatches: &[Dispatch],
        mut reply: impl FnMut(&mut Self, &Run, &Dispatch) -> std::io::Result<ToolReply>,
    ) -> Result<Option<Box<Moved>>, DriveError> {
        let mut last: Option<Box<Moved>> = None;
        for (i, d) in dispatches.iter().enumerate() {
            if i > 0 {
                // One answer of the batch is recorded, the next call has not left.
                self.config.crash.at(CrashPoint::BetweenDispatches);
            }
            let at = last.as_ref().map_or(row, |m| &m.row);
            if !plan::awaits_answer(&at.run, d) {
                return Ok(None);
            }
            let answer = reply(self, &at.run, d);
            let Some(moved) = self.answer_dispatch(at, d, answer)? else {
                return Ok(None);
            };
            if moved.transition().effects.commands().next().is_some() {
                return Ok(Some(moved));
            }
            last = Some(moved);
        }
        Ok(last)
    }

    /// Sends a dispatch and waits for its answer; the kill points sit on either side.
    fn dispatch(&mut self, run: &Run, d: &Dispatch) -> std::io::Result<ToolReply> {
        let request = self.request(run, d, false);
        self.tools.send(&request)?;
        self.config.crash.at(CrashPoint::AfterSend);
        let reply = self.tools.receive();
        self.config.crash.at(CrashPoint::AfterAnswer);
        reply
    }

    /// Feeds the tool's answer: the result (WAL-2); or, when no answer came, `recover`: this
    /// worker no longer waits, so the outcome is unknown (REC-1) and goes to the query.
    pub(crate) fn answer_dispatch(
        &mut self,
        row: &Row,
        d: &Dispatch,
        reply: std::io::Result<ToolReply>,
    ) -> Result<Option<Box<Moved>>, DriveError> {
        let event = match reply {
            Ok(ToolReply::Committed { result }) => Event::ToolResult {
                call_id: d.call_id,
                attempt: d.attempt,
                result,
            },
            // Fenced or refused: this request will never commit, but the call in flight is
            // the run's to settle, by query: only recovery may say what happened.
            Ok(_) | Err(_) => Event::Recover,
        };
        self.feed_retrying(row, event)
    }

    /// Asks the status query about `q` and feeds the answer as a reconcile decision on
    /// `checkpoint` (the one the recover persisted, or the stored one).
    pub(crate) fn reconcile(
        &mut self,
        row: &Row,
        q: &Dispatch,
        checkpoint: Option<Checkpoint>,
    ) -> Result<Option<Box<Moved>>, DriveError> {
        let request = self.request(&row.run, q, true);
        let Ok(reply) = self.tools.call(&request) else {
            return Ok(None); // the query failed: still unknown; asked again on a later turn
        };
        self.config.crash.at(CrashPoint::AfterQuery);
        let Some(checkpoint) = checkpoint.or(row.checkpoint) else {
            return Ok(None);
        };
        let Some(version) = self.observe(&row.key) else {
            return Ok(None); // the facts cannot be established now: asked again later
        };
        let event = Event::Resume(resumable_kernel::Resume {
            checkpoint,
            decision: resumable_kernel::Decision::Reconcile(reply.as_answer()),
            facts: facts(version),
        });
        self.feed_retrying(row, event)
    }

    /// Feeds an answer from outside (a tool's, a query's). If another writer moved the run
    /// first, the answer is stepped again on the run as it now is (section 7, rule 4).
    pub(crate) fn feed_retrying(
        &mut self,
        row: &Row,
        event: Event,
    ) -> Result<Option<Box<Moved>>, DriveError> {
        let mut loaded: Option<Row> = None;
        for _ in 0..resumable_driver::RETRIES {
            let current = loaded.as_ref().unwrap_or(row);
            match self.feed(current, now_ms(), event, current.pc, None)? {
                Fed::Accepted(moved) => return Ok(Some(moved)),
                Fed::Rejected => return Ok(None),
                Fed::Conflict => match self.store.load(&row.key)? {
                    Some(r) => loaded = Some(r),
                    None => return Ok(None),
                },
            }
        }
        Ok(None)
    }
}
