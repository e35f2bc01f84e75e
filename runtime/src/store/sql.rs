//! The store in SQL, written once for both backends: the tables, every statement, and the
//! one implementation of [`Store`] over them ([`SqlStore`]). A backend supplies a
//! [`Connection`]: how to run a statement, how to open a transaction; [`super::codec`]
//! decodes what comes back.
//!
//! Statements number their parameters `?1`, `?2`, ... as SQLite does; PostgreSQL's backend
//! writes them `$1`, `$2`, ... before running them. No statement holds a `?` otherwise.

use super::codec::{self, history_rows, int, time, to_json, Cell, HistoryRow, Value};
use super::{
    status_of, wake_at, Answer, Cas, Commit, Inbox, NewRun, Request, Row, RunKey, Sealed, Status,
    Store, StoreError, Summary,
};
use resumable_kernel::{Call, Digest, Fingerprint, Prior};

/// The words for the column types the two dialects spell differently.
#[derive(Clone, Copy, Debug)]
pub struct Dialect {
    /// A 64-bit signed integer.
    pub int: &'static str,
    /// Bytes.
    pub bytes: &'static str,
    /// A boolean.
    pub boolean: &'static str,
    /// An integer primary key numbered by the database, ascending.
    pub serial_key: &'static str,
    /// What ends the definition of a table of small rows keyed by several columns (SQLite
    /// then keeps it in its primary key's order, with no rowid).
    pub keyed_options: &'static str,
}

/// The tables and indexes, created if missing. `runs.status` and `runs.wake_at` are what the
/// scan reads to find work; they are the kernel's `Run::next` and `Run::deadline` of the
/// stored run ([`status_of`], [`wake_at`]), written in every commit. `history` is each run's
/// call history, by fingerprint ([`codec::HistoryRow`]).
///
/// `runs` has no index on `status`: the one statement that reads it, the [`scan`], reads it
/// under an `OR` with its `?1` and with a subquery on the inbox, which neither SQLite nor
/// PostgreSQL can answer from such an index (SQLite reads the runs in key order, PostgreSQL
/// reads them all and sorts them by key), while every commit that changes a run's status would update it. A store
/// made by an earlier release has one, dropped here when the store is opened for writing.
///
/// `audit` is not keyed without a rowid, as the history's small rows are: SQLite stores a
/// table without a rowid as an index whose key is the whole row, interior pages included,
/// and advises it for rows under a twentieth of a page; a record is hundreds of bytes, so a
/// few fill a page and appends split pages up the tree. With a rowid the records are
/// appended in rowid order and only the key and position go to the primary key's index: a
/// commit writes fewer pages (BENCHMARKS.md, "On a fast disk"). A store whose `audit` an
/// earlier release made without a rowid has it moved when it is opened for writing
/// (`sqlite.rs`).
pub fn schema(d: &Dialect) -> String {
    let Dialect {
        int,
        bytes,
        boolean,
        serial_key,
        keyed_options,
    } = d;
    format!(
        "
CREATE TABLE IF NOT EXISTS runs (
    key TEXT PRIMARY KEY,
    revision {int} NOT NULL,
    seq {int} NOT NULL,
    tail TEXT NOT NULL,
    run TEXT NOT NULL,
    checkpoint TEXT,
    status TEXT NOT NULL,
    wake_at {int},
    owner TEXT,
    lease_until {int} NOT NULL,
    program TEXT NOT NULL,
    pc {int} NOT NULL,
    resource_version {int} NOT NULL
);
DROP INDEX IF EXISTS runs_by_status;
CREATE TABLE IF NOT EXISTS audit (
    key TEXT NOT NULL,
    seq {int} NOT NULL,
    line {bytes} NOT NULL,
    PRIMARY KEY (key, seq)
);
CREATE TABLE IF NOT EXISTS inbox (
    id {serial_key},
    key TEXT NOT NULL,
    party TEXT NOT NULL,
    submitted_ms {int} NOT NULL,
    request TEXT NOT NULL,
    answer TEXT,
    seq {int}
);
CREATE INDEX IF NOT EXISTS inbox_pending ON inbox (key) WHERE answer IS NULL;
CREATE TABLE IF NOT EXISTS history (
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    fp TEXT NOT NULL,
    args TEXT,
    committed {boolean} NOT NULL,
    PRIMARY KEY (key, kind, fp)
){keyed_options};
"
    )
}

/// A new run's row: key, revision, tail, run, status, program, resource version. Nothing if
/// the key exists.
pub const CREATE: &str = "INSERT INTO runs (key, revision, seq, tail, run, checkpoint, status,
    wake_at, owner, lease_until, program, pc, resource_version)
    VALUES (?1, ?2, 0, ?3, ?4, NULL, ?5, NULL, NULL, 0, ?6, 0, ?7)
    ON CONFLICT (key) DO NOTHING";

/// One line of a run's audit log: key, seq, line.
pub const APPEND: &str = "INSERT INTO audit (key, seq, line) VALUES (?1, ?2, ?3)";

/// A run's row, by key; the columns [`codec::run_row`] reads.
pub const LOAD: &str = "SELECT seq, tail, run, checkpoint, owner, lease_until, program, pc,
    resource_version FROM runs WHERE key = ?1";

/// The compare-and-set: the run moves only if it is still at the revision (`?12`) and log
/// position (`?13`) the step started from.
pub const MOVE: &str = "UPDATE runs SET revision = ?1, seq = ?2, tail = ?3, run = ?4,
    checkpoint = ?5, status = ?6, wake_at = ?7, owner = ?8, lease_until = ?9, pc = ?10
    WHERE key = ?11 AND revision = ?12 AND seq = ?13";

/// A request's answer and the record that carries it, once: only if it has none yet.
pub const ANSWER: &str = "UPDATE inbox SET answer = ?1, seq = ?2 WHERE id = ?3 AND answer IS NULL";

/// The run list (with `?1`, every run; else those not ended or with requests waiting),
/// ordered by key; the columns [`codec::summary`] reads.
pub fn scan() -> String {
    let active: Vec<String> = Status::ALL
        .into_iter()
        .filter(|s| !s.is_ended())
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    format!(
        "SELECT r.key, r.status, r.wake_at, r.owner, r.lease_until,
         (SELECT COUNT(*) FROM inbox i WHERE i.key = r.key AND i.answer IS NULL)
         FROM runs r WHERE ?1 OR r.status IN ({})
         OR r.key IN (SELECT key FROM inbox WHERE answer IS NULL) ORDER BY r.key",
        active.join(",")
    )
}

/// A new request: key, party, submitted_ms, request; returns its number.
pub const SUBMIT: &str = "INSERT INTO inbox (key, party, submitted_ms, request)
    VALUES (?1, ?2, ?3, ?4) RETURNING id";

/// A request refused before the kernel saw it: answered with no audit record (`seq` 0).
pub const REFUSE: &str =
    "UPDATE inbox SET answer = ?1, seq = 0 WHERE id = ?2 AND key = ?3 AND answer IS NULL";

/// A run's requests (with `?2`, only those unanswered), oldest first; the columns
/// [`codec::request`] reads.
pub const INBOX: &str = "SELECT id, party, submitted_ms, request, answer, seq FROM inbox
    WHERE key = ?1 AND (NOT ?2 OR answer IS NULL) ORDER BY id";

/// A run's audit log, header first.
pub const LOG: &str = "SELECT line FROM audit WHERE key = ?1 ORDER BY seq";
/// Line 1 of a run's audit log: its header.
pub const HEADER: &str = "SELECT line FROM audit WHERE key = ?1 AND seq = 0";

/// One row of a run's history: key, kind, fingerprint, args, committed. A row written again
/// keeps its arguments, and stays spent once spent.
pub const RECORD: &str = "INSERT INTO history (key, kind, fp, args, committed)
    VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key, kind, fp)
    DO UPDATE SET committed = history.committed OR excluded.committed";

/// What a run's history holds of a call id (`?2`) and a key (`?3`), by fingerprint; the
/// columns [`codec::prior`] reads.
pub const PRIOR: &str = "SELECT kind, args, committed FROM history WHERE key = ?1
    AND ((kind = 'call' AND fp = ?2) OR (kind = 'key' AND fp = ?3))";

/// A statement runner: a connection, or a transaction on one.
pub trait Sql {
    /// Runs a statement; how many rows it changed.
    fn execute(&mut self, sql: &str, values: &[Value<'_>]) -> Result<u64, StoreError>;
    /// Runs a query; its rows, each as its cells in column order.
    fn query(&mut self, sql: &str, values: &[Value<'_>]) -> Result<Vec<Vec<Cell>>, StoreError>;
}

/// One step's write, its values made once ([`Store::commit`]): what a backend's
/// [`Connection::commit`] writes in one transaction.
pub struct Write<'a> {
    /// The run's key.
    pub key: &'a str,
    /// The values of [`MOVE`], the compare-and-set.
    pub moved: [Value<'a>; 13],
    /// The values of [`APPEND`], the audit record.
    pub line: [Value<'a>; 3],
    /// What the step adds to the run's history, in order ([`RECORD`] each).
    pub history: Vec<HistoryRow>,
    /// The answer to the request the step consumed, and the request's number ([`ANSWER`]).
    pub answered: Option<(String, i64)>,
}

/// A backend's connection: it runs single statements outside a transaction (each is one on
/// its own), and several in one.
pub trait Connection: Sql {
    /// Writes one step in one transaction, statement by statement: the compare-and-set, the
    /// record, the history, the answer. [`Cas::Conflict`], and nothing written, if the run
    /// moved or the request was answered already. A backend may write the same in fewer
    /// round trips (PostgreSQL: one call of a function that runs these statements).
    fn commit(&mut self, w: &Write<'_>) -> Result<Cas, StoreError> {
        self.transaction(&mut |sql| {
            if sql.execute(MOVE, &w.moved)? == 0 {
                return Ok(Cas::Conflict);
            }
            sql.execute(APPEND, &w.line)?;
            record(sql, w.key, &w.history)?;
            if let Some((answer, id)) = &w.answered {
                let values = [Value::Text(answer), w.line[1], Value::Int(*id)]; // line[1]: its seq
                if sql.execute(ANSWER, &values)? == 0 {
                    return Ok(Cas::Conflict); // answered already: the whole commit rolls back
                }
            }
            Ok(Cas::Done)
        })
    }

    /// Whether the connection was opened for reading only. The store over it then writes
    /// nothing, not even on a load: a run stored by an earlier release is read as it is, its
    /// inline call log left for the first writer to move (the earlier release's store may
    /// not even have the history table yet).
    fn read_only(&self) -> bool;

    /// Runs `work` in one transaction: committed if it returns [`Cas::Done`], rolled back
    /// if it returns [`Cas::Conflict`] or fails.
    fn transaction(
        &mut self,
        work: &mut dyn FnMut(&mut dyn Sql) -> Result<Cas, StoreError>,
    ) -> Result<Cas, StoreError>;
}

/// The store over a SQL connection: the [`Store`] contract, once, for every backend.
pub struct SqlStore<C> {
    connection: C,
}

impl<C: Connection> SqlStore<C> {
    /// The store over `connection`, whose tables exist; over a read-only connection
    /// ([`Connection::read_only`]), loading a run never writes.
    pub fn new(connection: C) -> SqlStore<C> {
        SqlStore { connection }
    }
}

impl<C: Connection> Store for SqlStore<C> {
    fn create(&mut self, new: &NewRun<'_>) -> Result<Cas, StoreError> {
        let run = to_json(new.run)?;
        let tail = new.tail.digest.to_string();
        let values = [
            Value::Text(&new.key.0),
            Value::Int(int("revision", new.run.revision().0)?),
            Value::Text(&tail),
            Value::Text(&run),
            Value::Text(status_of(new.run).as_str()),
            Value::Text(new.program),
            Value::Int(int("resource version", new.resource_version)?),
        ];
        let header = [
            Value::Text(&new.key.0),
            Value::Int(0),
            Value::Bytes(new.header),
        ];
        self.connection.transaction(&mut |sql| {
            if sql.execute(CREATE, &values)? == 0 {
                return Ok(Cas::Conflict);
            }
            sql.execute(APPEND, &header)?;
            Ok(Cas::Done)
        })
    }

    fn load(&mut self, key: &RunKey) -> Result<Option<Row>, StoreError> {
        let rows = self.connection.query(LOAD, &[Value::Text(&key.0)])?;
        let Some(cells) = rows.into_iter().next() else {
            return Ok(None);
        };
        let (row, legacy) = codec::run_row(key, cells)?;
        if !legacy.is_empty() && !self.connection.read_only() {
            // A run stored under rules 2 kept its call log inline: its history moves to the
            // history table (idempotently), and the next commit stores the run without it.
            let rows: Vec<HistoryRow> = legacy.iter().flat_map(history_rows).collect();
            self.connection
                .transaction(&mut |sql| record(sql, &key.0, &rows).map(|()| Cas::Done))?;
        }
        Ok(Some(row))
    }

    fn commit(&mut self, c: &Commit<'_>) -> Result<Cas, StoreError> {
        let run = to_json(c.run)?;
        let tail = c.tail.digest.to_string();
        let checkpoint = c.checkpoint.map(to_json).transpose()?;
        let seq = int("log position", c.tail.seq)?;
        let moved = [
            Value::Int(int("revision", c.run.revision().0)?),
            Value::Int(seq),
            Value::Text(&tail),
            Value::Text(&run),
            Value::OptText(checkpoint.as_deref()),
            Value::Text(status_of(c.run).as_str()),
            Value::OptInt(wake_at(c.run).map(time)),
            Value::OptText(c.lease.owner.as_deref()),
            Value::Int(time(c.lease.until_ms)),
            Value::Int(i64::from(c.pc)),
            Value::Text(&c.key.0),
            Value::Int(int("expected revision", c.expect.revision.0)?),
            Value::Int(int("expected log position", c.expect.seq)?),
        ];
        let line = [Value::Text(&c.key.0), Value::Int(seq), Value::Bytes(c.line)];
        let history: Vec<HistoryRow> = c.history.iter().flat_map(history_rows).collect();
        let answered = match c.consumed {
            Some(consumed) => Some((
                to_json(&consumed.answer)?,
                int("request id", consumed.request)?,
            )),
            None => None,
        };
        self.connection.commit(&Write {
            key: &c.key.0,
            moved,
            line,
            history,
            answered,
        })
    }

    fn scan(&mut self, all: bool) -> Result<Vec<Summary>, StoreError> {
        let rows = self.connection.query(&scan(), &[Value::Bool(all)])?;
        rows.into_iter().map(codec::summary).collect()
    }

    fn submit_sealed(
        &mut self,
        key: &RunKey,
        party: &str,
        at_ms: u64,
        request: &Request,
        seal: Option<Digest>,
    ) -> Result<u64, StoreError> {
        let request = to_json(&Sealed {
            request: *request,
            seal,
        })?;
        let values = [
            Value::Text(&key.0),
            Value::Text(party),
            Value::Int(time(at_ms)),
            Value::Text(&request),
        ];
        let rows = self.connection.query(SUBMIT, &values)?;
        let Some(cells) = rows.into_iter().next() else {
            return Err(StoreError::Backend("submit: no id returned".to_string()));
        };
        codec::number(key, "request id", cells)
    }

    fn refuse_unauthenticated(&mut self, key: &RunKey, id: u64) -> Result<Cas, StoreError> {
        let answer = to_json(&Answer::Unauthenticated)?;
        let values = [
            Value::Text(&answer),
            Value::Int(int("request id", id)?),
            Value::Text(&key.0),
        ];
        Ok(match self.connection.execute(REFUSE, &values)? {
            0 => Cas::Conflict,
            _ => Cas::Done,
        })
    }

    fn inbox(&mut self, key: &RunKey, pending: bool) -> Result<Vec<Inbox>, StoreError> {
        let values = [Value::Text(&key.0), Value::Bool(pending)];
        let rows = self.connection.query(INBOX, &values)?;
        rows.into_iter()
            .map(|cells| codec::request(key, cells))
            .collect()
    }

    fn log(&mut self, key: &RunKey) -> Result<Vec<Vec<u8>>, StoreError> {
        let rows = self.connection.query(LOG, &[Value::Text(&key.0)])?;
        rows.into_iter()
            .map(|cells| codec::log_line(key, cells))
            .collect()
    }

    fn header(&mut self, key: &RunKey) -> Result<Option<Vec<u8>>, StoreError> {
        let rows = self.connection.query(HEADER, &[Value::Text(&key.0)])?;
        rows.into_iter()
            .next()
            .map(|cells| codec::log_line(key, cells))
            .transpose()
    }

    fn prior(&mut self, key: &RunKey, call: &Call) -> Result<Prior, StoreError> {
        let call_id = Fingerprint::call_id(&call.call_id).to_string();
        let idem = Fingerprint::key(&call.key).to_string();
        let values = [
            Value::Text(&key.0),
            Value::Text(&call_id),
            Value::Text(&idem),
        ];
        let rows = self.connection.query(PRIOR, &values)?;
        codec::prior(key, rows)
    }
}

/// Writes history rows of run `key`, in the transaction `sql` runs.
fn record(sql: &mut dyn Sql, key: &str, rows: &[HistoryRow]) -> Result<(), StoreError> {
    for row in rows {
        let values = [
            Value::Text(key),
            Value::Text(row.kind),
            Value::Text(&row.fp),
            Value::OptText(row.args.as_deref()),
            Value::Bool(row.committed),
        ];
        sql.execute(RECORD, &values)?;
    }
    Ok(())
}
