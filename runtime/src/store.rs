//! Storage behind one small trait. A store keeps, per run: the run, its latest checkpoint,
//! its audit log and its anchor, its call history, the agent program's position, and who
//! holds it; and an inbox of requests (decisions, cancels) from people and outside systems.
//!
//! The one rule every backend keeps: [`Store::commit`] writes the next run, its audit record,
//! its checkpoint, what it adds to the run's call history (which [`Store::prior`] looks up
//! before the run binds another call) and the verdict of the request it consumed in **one**
//! durable transaction, and only if the run's revision and log position are still the ones
//! the step started from (compare-and-set). Two durable backends, [`sqlite`] (embedded, one file, shared by worker
//! processes) and [`postgres`] (many workers on many machines), share one implementation in
//! SQL ([`sql`]: every statement, written once) and one decoder of what it reads back
//! ([`codec`]); each adds only its connection. [`memory`] keeps the same contract in one
//! process's memory, for tests that need no files.

use crate::lifecycle::Tail;
use resumable_kernel::{
    Call, Checkpoint, Decision, Digest, HistoryEntry, Name, Prior, Rejection, Revision, Run,
};
use serde::{Deserialize, Serialize};
use std::fmt;

pub mod codec;
pub mod memory;
pub mod postgres;
pub mod sql;
pub mod sqlite;

/// A run's key in the store: `tenant/session/run`.
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RunKey(pub String);

impl fmt::Display for RunKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the run waits for, as the store indexes it for workers to find their work.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Running with nothing in flight: the agent program's next step is due.
    Ready,
    /// A call is in flight: its worker waits for the tool's answer.
    InFlight,
    /// Suspended for an approver's decision.
    Approval,
    /// Suspended for an external callback.
    Callback,
    /// Suspended for a resource.
    Resource,
    /// Suspended for a person (manual intervention).
    Person,
    /// Suspended with an unknown outcome: a worker reconciles it by query.
    Unknown,
    /// Completed.
    Completed,
    /// Failed.
    Failed,
}

impl Status {
    /// Every status, in order.
    pub const ALL: [Status; 9] = [
        Status::Ready,
        Status::InFlight,
        Status::Approval,
        Status::Callback,
        Status::Resource,
        Status::Person,
        Status::Unknown,
        Status::Completed,
        Status::Failed,
    ];

    /// Its name in the store and on screen.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ready => "ready",
            Status::InFlight => "in_flight",
            Status::Approval => "approval",
            Status::Callback => "callback",
            Status::Resource => "resource",
            Status::Person => "person",
            Status::Unknown => "unknown",
            Status::Completed => "completed",
            Status::Failed => "failed",
        }
    }

    /// The status named `s`.
    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether the run has ended.
    pub fn is_ended(self) -> bool {
        matches!(self, Status::Completed | Status::Failed)
    }

    /// Whether the run's next step is a worker's, not a party's: its program's step
    /// ([`Next::Agent`]), a call's answer ([`Next::Result`]), or the status query
    /// ([`Next::Query`]). A worker holds such a run (a [`Lease`]) while it acts on it.
    ///
    /// [`Next::Agent`]: resumable_kernel::Next::Agent
    /// [`Next::Result`]: resumable_kernel::Next::Result
    /// [`Next::Query`]: resumable_kernel::Next::Query
    pub fn needs_worker(self) -> bool {
        matches!(self, Status::Ready | Status::InFlight | Status::Unknown)
    }
}

/// Who holds a run: the worker that committed its last step while the run needs a worker's
/// attention (a call in flight, a query due, the program's next step), until `until_ms`.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Lease {
    /// The holder, unique per worker process (a restarted worker is a new holder).
    pub owner: Option<String>,
    /// When the hold lapses, in the runtime's clock (ms since the Unix epoch).
    pub until_ms: u64,
}

/// Everything stored for one run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Row {
    /// The run's key.
    pub key: RunKey,
    /// The run, as the kernel left it.
    pub run: Run,
    /// The end of its audit log: the anchor.
    pub tail: Tail,
    /// The checkpoint persisted by the last transition that carried one, while suspended.
    pub checkpoint: Option<Checkpoint>,
    /// The agent program that drives the run.
    pub program: String,
    /// The program's position: how many of its own inputs were accepted.
    pub pc: u32,
    /// Who holds the run.
    pub lease: Lease,
    /// The current version of the resource the run acts on (the facts of a resume).
    pub resource_version: u64,
}

/// One line of the run-list a worker scans.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Summary {
    /// The run.
    pub key: RunKey,
    /// What it waits for.
    pub status: Status,
    /// When its next timer input falls due: the kernel's `Run::deadline`, if suspended.
    pub wake_at: Option<u64>,
    /// Who holds it.
    pub lease: Lease,
    /// How many requests wait in its inbox.
    pub pending: u32,
}

/// A request from outside the run: a decision on its suspension, or a cancel.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
#[expect(
    clippy::large_enum_variant,
    reason = "held inline like the kernel's own inputs"
)]
pub enum Request {
    /// Resume the suspension this checkpoint describes with this decision.
    Resume {
        /// The checkpoint the party was handed.
        checkpoint: Checkpoint,
        /// The decision.
        decision: Decision,
    },
    /// Cancel the run.
    Cancel {
        /// Who cancels.
        by: Name,
    },
}

/// What the kernel answered to a request, recorded with it.
#[expect(
    clippy::large_enum_variant,
    reason = "a refusal carries its evidence inline, as the kernel returns it"
)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Accepted: the run moved to this revision.
    Accepted(Revision),
    /// Refused, with the kernel's evidence.
    Rejected(Rejection),
    /// Refused before the kernel saw it: the request was not sealed by the party that sent
    /// it, or named another party ([`crate::auth::PartyKeys::check`]). No audit record
    /// carries it (its record number is 0).
    Unauthenticated,
}

/// The kernel's answer to a request and the audit record that carries it, stored with the
/// request once a commit consumed it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Answered {
    /// The kernel's answer.
    pub answer: Answer,
    /// The `seq` of the audit record that carries it.
    pub seq: u64,
}

/// A request in a run's inbox.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Inbox {
    /// Its number, unique in the store.
    pub id: u64,
    /// The run it is for.
    pub key: RunKey,
    /// Who sent it.
    pub party: String,
    /// When it was sent.
    pub submitted_ms: u64,
    /// The request.
    pub request: Request,
    /// The kernel's answer, once consumed.
    pub answer: Option<Answered>,
    /// The sender's seal ([`crate::auth::SharedKey::seal`]), if it sealed the request.
    pub seal: Option<Digest>,
}

/// A request as the store keeps it: the request and its sender's seal, if any (a request
/// stored before seals has none).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Sealed {
    /// The request.
    #[serde(flatten)]
    pub request: Request,
    /// The sender's seal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<Digest>,
}

/// Where a commit expects the run to be: the revision and the log's end the step started
/// from. The revision alone is not enough: a refused input appends a record without moving
/// it, so two workers recording refusals at once would both append record `seq + 1`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Expect {
    /// The run's revision.
    pub revision: Revision,
    /// The `seq` of the last record of its log (0: the header alone).
    pub seq: u64,
}

impl Expect {
    /// Where `row` stands: what a step loaded from it expects to find at its commit.
    pub fn of(row: &Row) -> Expect {
        Expect {
            revision: row.run.revision(),
            seq: row.tail.seq,
        }
    }
}

/// The request a step consumed, and the kernel's answer to it, stored in the same commit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Consumed {
    /// The request's number.
    pub request: u64,
    /// The kernel's answer.
    pub answer: Answer,
}

/// The write of one step: the run after it and everything that lands with it (its audit
/// record, its checkpoint, its history entry, the answer to the request it consumed), in one
/// transaction, only if the run is still where the step found it ([`Expect`]). The store
/// indexes the run itself ([`status_of`], [`wake_at`]).
#[derive(Clone, Debug)]
pub struct Commit<'a> {
    /// The run.
    pub key: &'a RunKey,
    /// Where the step found the run: the compare-and-set.
    pub expect: Expect,
    /// The run after the step (unchanged for a refused input).
    pub run: &'a Run,
    /// The log's new end.
    pub tail: Tail,
    /// The audit record, without its LF.
    pub line: &'a [u8],
    /// The checkpoint to persist (the latest one is kept while suspended, cleared otherwise).
    pub checkpoint: Option<&'a Checkpoint>,
    /// The program's position after the step.
    pub pc: u32,
    /// Who holds the run after the step.
    pub lease: &'a Lease,
    /// The request the step consumed, and the kernel's answer to it.
    pub consumed: Option<Consumed>,
    /// What the step added to the run's call history (a call bound, a key spent), in order:
    /// one entry at most, but for a batch of calls, one per call.
    pub history: &'a [HistoryEntry],
}

/// A new run: its first row and the header of its log.
#[derive(Clone, Debug)]
pub struct NewRun<'a> {
    /// The run's key.
    pub key: &'a RunKey,
    /// The run at revision 0.
    pub run: &'a Run,
    /// The header line, without its LF.
    pub header: &'a [u8],
    /// The log's end after the header.
    pub tail: Tail,
    /// The program that drives it.
    pub program: &'a str,
    /// The resource version it starts with.
    pub resource_version: u64,
}

/// Whether a compare-and-set took.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cas {
    /// Written.
    Done,
    /// Another writer moved the row first (or, on create, the run exists): nothing written.
    Conflict,
}

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store was named or asked for in a way it cannot serve (a schema name PostgreSQL
    /// would shorten or that is its own, a missing file opened for reading): the caller's
    /// to fix.
    #[error("store: {0}")]
    Misuse(String),
    /// The backend failed (I/O, SQL).
    #[error("store: {0}")]
    Backend(String),
    /// The server cannot be reached or is not taking connections now (down, restarting,
    /// shutting down): waiting may mend it.
    #[error("store: {0}")]
    Unavailable(String),
    /// A stored value could not be read back (a corrupted or foreign record).
    #[error("store: stored {what} of {key} is unreadable: {why}")]
    Corrupt {
        /// What was read.
        what: &'static str,
        /// Which run.
        key: String,
        /// Why.
        why: String,
    },
    /// A number too large for the store's 64-bit signed integers was to be written.
    #[error("store: {what} {value} is larger than the store holds ({})", i64::MAX)]
    TooLarge {
        /// What was written.
        what: &'static str,
        /// Its value.
        value: u64,
    },
}

/// Durable storage for runs. Every method is one transaction.
pub trait Store {
    /// Creates a run with its log's header; [`Cas::Conflict`] if the key exists.
    fn create(&mut self, new: &NewRun<'_>) -> Result<Cas, StoreError>;
    /// The run stored under `key`, if any.
    fn load(&mut self, key: &RunKey) -> Result<Option<Row>, StoreError>;
    /// Writes one step, all of it or nothing, if the row is still at `commit.expect` and the
    /// request it consumed, if any, is still unanswered; [`Cas::Conflict`] otherwise.
    fn commit(&mut self, commit: &Commit<'_>) -> Result<Cas, StoreError>;
    /// Every run that has not ended or has requests waiting, ordered by key; with `all`,
    /// every run.
    fn scan(&mut self, all: bool) -> Result<Vec<Summary>, StoreError>;
    /// Puts a request in a run's inbox and returns its number.
    fn submit(
        &mut self,
        key: &RunKey,
        party: &str,
        at_ms: u64,
        request: &Request,
    ) -> Result<u64, StoreError> {
        self.submit_sealed(key, party, at_ms, request, None)
    }
    /// Puts a request in a run's inbox with its sender's seal and returns its number.
    fn submit_sealed(
        &mut self,
        key: &RunKey,
        party: &str,
        at_ms: u64,
        request: &Request,
        seal: Option<Digest>,
    ) -> Result<u64, StoreError>;
    /// Answers request `id` of run `key` [`Answer::Unauthenticated`], with no audit record,
    /// if it is still unanswered; [`Cas::Conflict`] otherwise.
    fn refuse_unauthenticated(&mut self, key: &RunKey, id: u64) -> Result<Cas, StoreError>;
    /// A run's requests, oldest first; with `pending`, only those not yet consumed.
    fn inbox(&mut self, key: &RunKey, pending: bool) -> Result<Vec<Inbox>, StoreError>;
    /// A run's audit log, header first, each line without its LF.
    fn log(&mut self, key: &RunKey) -> Result<Vec<Vec<u8>>, StoreError>;
    /// Line 1 of a run's audit log (its header, which names the key that seals the log),
    /// without its LF.
    fn header(&mut self, key: &RunKey) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.log(key)?.into_iter().next())
    }
    /// What the run's call history holds about `call`'s id and key: the prior the driver
    /// states when it binds the call (spec KEY-1, KEY-2, REC-4).
    fn prior(&mut self, key: &RunKey, call: &Call) -> Result<Prior, StoreError>;
}

impl<S: Store + ?Sized> Store for Box<S> {
    fn create(&mut self, new: &NewRun<'_>) -> Result<Cas, StoreError> {
        (**self).create(new)
    }
    fn load(&mut self, key: &RunKey) -> Result<Option<Row>, StoreError> {
        (**self).load(key)
    }
    fn commit(&mut self, commit: &Commit<'_>) -> Result<Cas, StoreError> {
        (**self).commit(commit)
    }
    fn scan(&mut self, all: bool) -> Result<Vec<Summary>, StoreError> {
        (**self).scan(all)
    }
    fn submit_sealed(
        &mut self,
        key: &RunKey,
        party: &str,
        at_ms: u64,
        request: &Request,
        seal: Option<Digest>,
    ) -> Result<u64, StoreError> {
        (**self).submit_sealed(key, party, at_ms, request, seal)
    }
    fn refuse_unauthenticated(&mut self, key: &RunKey, id: u64) -> Result<Cas, StoreError> {
        (**self).refuse_unauthenticated(key, id)
    }
    fn inbox(&mut self, key: &RunKey, pending: bool) -> Result<Vec<Inbox>, StoreError> {
        (**self).inbox(key, pending)
    }
    fn log(&mut self, key: &RunKey) -> Result<Vec<Vec<u8>>, StoreError> {
        (**self).log(key)
    }
    fn header(&mut self, key: &RunKey) -> Result<Option<Vec<u8>>, StoreError> {
        (**self).header(key)
    }
    fn prior(&mut self, key: &RunKey, call: &Call) -> Result<Prior, StoreError> {
        (**self).prior(key, call)
    }
}

/// Whether a store address names PostgreSQL: `postgres://...`, `postgresql://...` or a
/// libpq connection string with `host=...`; anything else is a path to an SQLite file.
pub fn is_postgres(address: &str) -> bool {
    address.starts_with("postgres://")
        || address.starts_with("postgresql://")
        || address.contains("host=")
}

/// The address as it may be shown in a message: a password in it (`password=...` in a
/// connection string, `user:...@` in a URL) replaced by `***`.
pub fn redact(address: &str) -> String {
    let mut out = String::with_capacity(address.len());
    let mut rest = address;
    // Connection string: `password=VALUE` or `password='VALUE'`, up to the next space.
    while let Some(at) = rest.find("password=") {
        let (before, after) = rest.split_at(at + "password=".len());
        out.push_str(before);
        out.push_str("***");
        let end = if let Some(quoted) = after.strip_prefix('\'') {
            quoted.find('\'').map_or(after.len(), |i| i + 2)
        } else {
            after.find(char::is_whitespace).unwrap_or(after.len())
        };
        rest = &after[end..];
    }
    out.push_str(rest);
    // URL: `scheme://user:PASSWORD@host`.
    if let Some(scheme) = out.find("://") {
        let authority_start = scheme + 3;
        let authority_end = out[authority_start..]
            .find('/')
            .map_or(out.len(), |i| authority_start + i);
        if let Some(at) = out[authority_start..authority_end].rfind('@') {
            let userinfo = &out[authority_start..authority_start + at];
            if let Some(colon) = userinfo.find(':') {
                let from = authority_start + colon + 1;
                out.replace_range(from..authority_start + at, "***");
            }
        }
    }
    out
}

/// Opens the store an address names (see [`is_postgres`]).
pub fn open(address: &str) -> Result<Box<dyn Store + Send>, StoreError> {
    if is_postgres(address) {
        Ok(Box::new(postgres::PgStore::open(address)?))
    } else {
        Ok(Box::new(sqlite::SqliteStore::open(address)?))
    }
}

/// Opens the store an address names for reading only (see the backends'
/// `open_read_only`): nothing is created or written, and a missing store is refused.
pub fn open_read_only(address: &str) -> Result<Box<dyn Store + Send>, StoreError> {
    if is_postgres(address) {
        Ok(Box::new(postgres::PgStore::open_read_only(address)?))
    } else {
        Ok(Box::new(sqlite::SqliteStore::open_read_only(address)?))
    }
}

/// The status of a run, as the store indexes it.
pub fn status_of(run: &Run) -> Status {
    use resumable_kernel::{Next, PhaseKind, ReasonKind};
    match run.next() {
        Next::Agent => Status::Ready,
        Next::Result { .. } | Next::Results { .. } => Status::InFlight,
        Next::Query { .. } => Status::Unknown,
        Next::Decision { reason, .. } => match reason {
            ReasonKind::PendingApproval | ReasonKind::PendingBatch => Status::Approval,
            ReasonKind::ExternalCallback => Status::Callback,
            ReasonKind::ResourceWait => Status::Resource,
            ReasonKind::ManualIntervention => Status::Person,
            ReasonKind::OutcomeUnknown => Status::Unknown,
        },
        Next::Nothing {
            phase: PhaseKind::Completed,
        } => Status::Completed,
        Next::Nothing { .. } => Status::Failed,
    }
}

/// When the run's next timer input falls due, as the store indexes it: the kernel's
/// [`Run::deadline`], if suspended.
pub fn wake_at(run: &Run) -> Option<u64> {
    run.deadline().map(|due| due.0)
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn a_password_in_an_address_is_never_shown() {
        assert_eq!(
            redact("host=db user=ops password=s3cret dbname=runs#torture"),
            "host=db user=ops password=*** dbname=runs#torture"
        );
        assert_eq!(
            redact("host=db password='a b' user=ops"),
            "host=db password=*** user=ops"
        );
        assert_eq!(
            redact("postgres://ops:s3cret@db:5432/runs"),
            "postgres://ops:***@db:5432/runs"
        );
        assert_eq!(redact("postgres://ops@db/runs"), "postgres://ops@db/runs");
        assert_eq!(redact("runs.db"), "runs.db");
    }
}
