//! What the SQL backends write and read back, in SQL's own terms: the values a statement
//! binds, the cells a query returns, and the one decoder of each kind of stored row (a run,
//! a line of the run list, a request, a log line). Both backends use them, so a row reads
//! back the same from either; a stored value that does not decode is an error naming the
//! run and the column, never a panic and never a number wrapped into another.
//!
//! Numbers are stored as SQL's 64-bit signed integers. Every count and time the runtime
//! writes fits (times are milliseconds since the Unix epoch); one that would not is refused
//! when written ([`StoreError::TooLarge`]), and a negative one read back is corrupt.

use super::{Answer, Answered, Inbox, Lease, Row, RunKey, Sealed, Status, StoreError, Summary};
use crate::lifecycle::Tail;
use resumable_kernel::{Digest, HistoryEntry, KeyUse, LoggedCall, Prior, Run};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod tests;

/// A value bound to a statement's parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// An integer.
    Int(i64),
    /// An integer or NULL.
    OptInt(Option<i64>),
    /// Text.
    Text(&'a str),
    /// Text or NULL.
    OptText(Option<&'a str>),
    /// Bytes.
    Bytes(&'a [u8]),
    /// A boolean (an integer, 0 or 1, in SQLite).
    Bool(bool),
}

/// A cell of a query's result, as the backend returned it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cell {
    /// NULL.
    Null,
    /// An integer.
    Int(i64),
    /// Text.
    Text(String),
    /// Bytes.
    Bytes(Vec<u8>),
}

/// A number as the store writes it: refused, not wrapped, if it does not fit.
pub fn int(what: &'static str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::TooLarge { what, value })
}

/// A wake-up time as the store writes it. A time past the largest the store holds is never
/// reached by a clock in milliseconds since the Unix epoch, so it is kept as that largest
/// time: the run wakes just as (never) late.
pub fn time(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// Serialises a stored value; the kernel's types always serialise.
pub fn to_json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("encode: {e}")))
}

/// The cells of one result row, read in order, each under its column's name so that a
/// value that does not decode says where it came from.
struct Cells<'a> {
    key: &'a str,
    cells: std::vec::IntoIter<Cell>,
}

impl<'a> Cells<'a> {
    fn new(key: &'a str, cells: Vec<Cell>) -> Cells<'a> {
        Cells {
            key,
            cells: cells.into_iter(),
        }
    }

    fn corrupt(&self, column: &'static str, why: String) -> StoreError {
        StoreError::Corrupt {
            what: column,
            key: self.key.to_string(),
            why,
        }
    }

    fn next(&mut self, column: &'static str) -> Result<Cell, StoreError> {
        self.cells
            .next()
            .ok_or_else(|| self.corrupt(column, "the column is missing".to_string()))
    }

    fn opt_uint(&mut self, column: &'static str) -> Result<Option<u64>, StoreError> {
        match self.next(column)? {
            Cell::Null => Ok(None),
            Cell::Int(i) => u64::try_from(i)
                .map(Some)
                .map_err(|_| self.corrupt(column, format!("{i} is negative"))),
            other => Err(self.corrupt(column, format!("{other:?} is not an integer"))),
        }
    }

    fn uint(&mut self, column: &'static str) -> Result<u64, StoreError> {
        self.opt_uint(column)?
            .ok_or_else(|| self.corrupt(column, "NULL is not an integer".to_string()))
    }

    fn opt_text(&mut self, column: &'static str) -> Result<Option<String>, StoreError> {
        match self.next(column)? {
            Cell::Null => Ok(None),
            Cell::Text(t) => Ok(Some(t)),
            other => Err(self.corrupt(column, format!("{other:?} is not text"))),
        }
    }

    fn text(&mut self, column: &'static str) -> Result<String, StoreError> {
        self.opt_text(column)?
            .ok_or_else(|| self.corrupt(column, "NULL is not text".to_string()))
    }

    fn bytes(&mut self, column: &'static str) -> Result<Vec<u8>, StoreError> {
        match self.next(column)? {
            Cell::Bytes(b) => Ok(b),
            other => Err(self.corrupt(column, format!("{other:?} is not bytes"))),
        }
    }

    fn json<T: for<'de> Deserialize<'de>>(
        &self,
        column: &'static str,
        text: &str,
    ) -> Result<T, StoreError> {
        // The run's deserialiser checks every kernel invariant: a run that breaks one is
        // refused here, never handed to the kernel.
        serde_json::from_str(text).map_err(|e| self.corrupt(column, e.to_string()))
    }

    fn opt_json<T: for<'de> Deserialize<'de>>(
        &mut self,
        column: &'static str,
    ) -> Result<Option<T>, StoreError> {
        match self.opt_text(column)? {
            Some(text) => self.json(column, &text).map(Some),
            None => Ok(None),
        }
    }

    fn the_json<T: for<'de> Deserialize<'de>>(
        &mut self,
        column: &'static str,
    ) -> Result<T, StoreError> {
        let text = self.text(column)?;
        self.json(column, &text)
    }

    fn bool(&mut self, column: &'static str) -> Result<bool, StoreError> {
        match self.uint(column)? {
            0 => Ok(false),
            1 => Ok(true),
            n => Err(self.corrupt(column, format!("{n} is not a boolean"))),
        }
    }

    /// The stored run, with the history entries of a call log it still carries inline (a
    /// run stored under rules 2 and earlier, in its `calls` field): the run's deserialiser
    /// refuses such a field, so it is taken out first and handed to the store to move.
    fn run(&mut self) -> Result<(Run, Vec<HistoryEntry>), StoreError> {
        let text = self.text("run")?;
        let mut value: serde_json::Value = self.json("run", &text)?;
        let logged = match value.as_object_mut().and_then(|o| o.remove("calls")) {
            Some(calls) => serde_json::from_value::<Vec<LoggedCall>>(calls)
                .map_err(|e| self.corrupt("run", format!("its inline call log: {e}")))?,
            None => Vec::new(),
        };
        let run = serde_json::from_value(value).map_err(|e| self.corrupt("run", e.to_string()))?;
        Ok((run, logged.iter().flat_map(|c| c.entries()).collect()))
    }

    /// Whether every cell was read: a row with more columns than its decoder knows is not
    /// the row it expects.
    fn end(mut self) -> Result<(), StoreError> {
        match self.cells.next() {
            None => Ok(()),
            Some(extra) => Err(self.corrupt("row", format!("an extra column {extra:?}"))),
        }
    }
}

/// A run's row, from the columns of [`super::sql::LOAD`]: `seq, tail, run, checkpoint,
/// owner, lease_until, program, pc, resource_version`; and the history entries of a call log
/// the stored run still carries inline (rules 2 and earlier), which the store moves into its
/// history table.
pub fn run_row(key: &RunKey, cells: Vec<Cell>) -> Result<(Row, Vec<HistoryEntry>), StoreError> {
    let mut c = Cells::new(&key.0, cells);
    let seq = c.uint("seq")?;
    let tail = c.text("anchor")?;
    let digest = Digest::from_hex(&tail).map_err(|e| c.corrupt("anchor", format!("{e:?}")))?;
    let (run, legacy) = c.run()?;
    let checkpoint = c.opt_json("checkpoint")?;
    let owner = c.opt_text("owner")?;
    let until_ms = c.uint("lease_until")?;
    let program = c.text("program")?;
    let pc = c.uint("pc")?;
    let pc = u32::try_from(pc).map_err(|_| c.corrupt("pc", format!("{pc} is too large")))?;
    let resource_version = c.uint("resource_version")?;
    c.end()?;
    let row = Row {
        key: key.clone(),
        run,
        tail: Tail { seq, digest },
        checkpoint,
        program,
        pc,
        lease: Lease { owner, until_ms },
        resource_version,
    };
    Ok((row, legacy))
}

/// A line of the run list, from the columns of [`super::sql::scan`]: `key, status, wake_at,
/// owner, lease_until, pending`.
pub fn summary(cells: Vec<Cell>) -> Result<Summary, StoreError> {
    let mut c = Cells::new("a run", cells);
    let key = c.text("key")?;
    let mut c = Cells { key: &key, ..c };
    let status = c.text("status")?;
    let status = Status::parse(&status).ok_or_else(|| c.corrupt("status", status.clone()))?;
    let wake_at = c.opt_uint("wake_at")?;
    let owner = c.opt_text("owner")?;
    let until_ms = c.uint("lease_until")?;
    let pending = c.uint("pending")?;
    let pending = u32::try_from(pending).unwrap_or(u32::MAX);
    c.end()?;
    Ok(Summary {
        key: RunKey(key.clone()),
        status,
        wake_at,
        lease: Lease { owner, until_ms },
        pending,
    })
}

/// A request in `key`'s inbox, from the columns of [`super::sql::INBOX`]: `id, party,
/// submitted_ms, request, answer, seq`. A request is answered with both its answer and the
/// record that carries it, or with neither.
pub fn request(key: &RunKey, cells: Vec<Cell>) -> Result<Inbox, StoreError> {
    let mut c = Cells::new(&key.0, cells);
    let id = c.uint("request id")?;
    let party = c.text("party")?;
    let submitted_ms = c.uint("submitted_ms")?;
    let Sealed { request, seal } = c.the_json("request")?;
    let answer: Option<Answer> = c.opt_json("answer")?;
    let seq = c.opt_uint("answer's record")?;
    c.end()?;
    let answer = match (answer, seq) {
        (Some(answer), Some(seq)) => Some(Answered { answer, seq }),
        (None, None) => None,
        (answer, seq) => {
            let why = format!("request {id} has answer {answer:?} with record {seq:?}");
            return Err(corrupt(key, "answer", why));
        }
    };
    Ok(Inbox {
        id,
        key: key.clone(),
        party,
        submitted_ms,
        request,
        answer,
        seal,
    })
}

/// A line of `key`'s audit log, from the column of [`super::sql::LOG`]: `line`.
pub fn log_line(key: &RunKey, cells: Vec<Cell>) -> Result<Vec<u8>, StoreError> {
    let mut c = Cells::new(&key.0, cells);
    let line = c.bytes("log line")?;
    c.end()?;
    Ok(line)
}

/// The number a statement returned, from its one column (a new request's `id`).
pub fn number(key: &RunKey, what: &'static str, cells: Vec<Cell>) -> Result<u64, StoreError> {
    let mut c = Cells::new(&key.0, cells);
    let n = c.uint(what)?;
    c.end()?;
    Ok(n)
}

/// One row of a run's history table: a call id used (`call`), or a key bound to its
/// arguments and maybe spent (`key`), by fingerprint, as hex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryRow {
    /// `call` or `key`.
    pub kind: &'static str,
    /// The fingerprint of the call id or the key.
    pub fp: String,
    /// The argument digest a key is bound to; none for a call id, or for a key spent that
    /// the history never saw bound.
    pub args: Option<String>,
    /// A result under the key was recorded.
    pub committed: bool,
}

/// The rows a history entry writes. A binding inserts its call id and its key (the first
/// binding of a key keeps its arguments: the kernel binds a key again only to the same ones);
/// a spent key is marked, inserted if the history never saw it bound.
pub fn history_rows(entry: &HistoryEntry) -> Vec<HistoryRow> {
    match entry {
        HistoryEntry::Bound { call_id, key, args } => vec![
            HistoryRow {
                kind: "call",
                fp: call_id.to_string(),
                args: None,
                committed: false,
            },
            HistoryRow {
                kind: "key",
                fp: key.to_string(),
                args: Some(args.to_string()),
                committed: false,
            },
        ],
        HistoryEntry::Settled { key } => vec![HistoryRow {
            kind: "key",
            fp: key.to_string(),
            args: None,
            committed: true,
        }],
    }
}

/// The prior a run's history states for a call, from the rows of [`super::sql::PRIOR`]
/// matching the call's id and key: `kind, args, committed`.
pub fn prior(key: &RunKey, rows: Vec<Vec<Cell>>) -> Result<Prior, StoreError> {
    let mut prior = Prior::NONE;
    for cells in rows {
        let mut c = Cells::new(&key.0, cells);
        let kind = c.text("history kind")?;
        let args = c.opt_text("history args")?;
        let committed = c.bool("history committed")?;
        c.end()?;
        match kind.as_str() {
            "call" => prior.call_id_used = true,
            "key" => {
                let args = match args {
                    Some(hex) => Digest::from_hex(&hex)
                        .map_err(|e| corrupt(key, "history args", format!("{e:?}")))?,
                    None => Digest::default(),
                };
                prior.key = Some(KeyUse { args, committed });
            }
            other => return Err(corrupt(key, "history kind", other.to_string())),
        }
    }
    Ok(prior)
}

/// A stored value of run `key` that does not decode.
fn corrupt(key: &RunKey, what: &'static str, why: String) -> StoreError {
    StoreError::Corrupt {
        what,
        key: key.0.clone(),
        why,
    }
}
