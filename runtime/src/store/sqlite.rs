//! The embedded store: one SQLite file, shared by every worker process on the machine.
//!
//! Why SQLite: the runtime's workers are separate processes that are killed with SIGKILL at
//! any instruction, and they share one store. SQLite is built for exactly that: many
//! processes open one file, writers take turns under its lock, and a process killed in the
//! middle of a transaction leaves nothing of it behind (the write-ahead log is rolled back on
//! the next open). The file is opened in WAL mode with `synchronous = FULL`: every commit is
//! fsync'd before it returns, so a committed step survives a kill and a power loss alike.
//! (redb, pure Rust and crash-safe too, lets one process at a time open a file.)

use super::{
    decode_run, from_json, history_rows, prior_of, to_json, Answer, Cas, Commit, Inbox, Lease,
    NewRun, Request, Row, RunKey, Status, Store, StoreError, Summary,
};
use crate::lifecycle::Tail;
use resumable_kernel::Digest;
use resumable_kernel::{Call, Fingerprint, HistoryEntry, Prior};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::time::Duration;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    key TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    tail TEXT NOT NULL,
    run TEXT NOT NULL,
    checkpoint TEXT,
    status TEXT NOT NULL,
    wake_at INTEGER,
    owner TEXT,
    lease_until INTEGER NOT NULL,
    program TEXT NOT NULL,
    pc INTEGER NOT NULL,
    resource_version INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);
CREATE TABLE IF NOT EXISTS audit (
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    line BLOB NOT NULL,
    PRIMARY KEY (key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    party TEXT NOT NULL,
    submitted_ms INTEGER NOT NULL,
    request TEXT NOT NULL,
    answer TEXT,
    seq INTEGER
);
CREATE INDEX IF NOT EXISTS inbox_pending ON inbox (key) WHERE answer IS NULL;
CREATE TABLE IF NOT EXISTS raw_cas (
    slot INTEGER PRIMARY KEY,
    version INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    fp TEXT NOT NULL,
    args TEXT,
    committed INTEGER NOT NULL,
    PRIMARY KEY (key, kind, fp)
) WITHOUT ROWID;
";

const ACTIVE: &str = "('ready','in_flight','approval','callback','resource','person','unknown')";

/// A connection to an SQLite store file.
pub struct SqliteStore {
    db: Connection,
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("sqlite: {e}"))
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path`, in WAL mode with fsync'd commits.
    pub fn open(path: &str) -> Result<SqliteStore, StoreError> {
        let db = Connection::open(path).map_err(backend)?;
        db.busy_timeout(Duration::from_secs(30)).map_err(backend)?;
        // WAL lets readers proceed while one writer commits; FULL syncs the log on every
        // commit, which is what makes a returned commit durable.
        let mode: String = db
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(backend)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Backend(format!(
                "sqlite: {path}: journal mode is {mode}, not wal"
            )));
        }
        db.execute_batch("PRAGMA synchronous = FULL;")
            .map_err(backend)?;
        db.execute_batch(SCHEMA).map_err(backend)?;
        Ok(SqliteStore { db })
    }
}

fn tail_of(seq: i64, hex: &str, key: &str) -> Result<Tail, StoreError> {
    let digest = Digest::from_hex(hex).map_err(|e| StoreError::Corrupt {
        what: "anchor",
        key: key.to_string(),
        why: format!("{e:?}"),
    })?;
    Ok(Tail {
        seq: seq as u64,
        digest,
    })
}

fn answer_text(answer: &Answer) -> Result<String, StoreError> {
    to_json(answer)
}

impl Store for SqliteStore {
    fn create(&mut self, new: &NewRun<'_>) -> Result<Cas, StoreError> {
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let inserted = tx
            .execute(
                "INSERT OR IGNORE INTO runs (key, revision, seq, tail, run, checkpoint, status,
                 wake_at, owner, lease_until, program, pc, resource_version)
                 VALUES (?1, ?2, 0, ?3, ?4, NULL, ?5, NULL, NULL, 0, ?6, 0, ?7)",
                params![
                    new.key.0,
                    new.run.revision().0 as i64,
                    new.tail.digest.to_string(),
                    to_json(new.run)?,
                    super::status_of(new.run).as_str(),
                    new.program,
                    new.resource_version as i64,
                ],
            )
            .map_err(backend)?;
        if inserted == 0 {
            return Ok(Cas::Conflict);
        }
        tx.execute(
            "INSERT INTO audit (key, seq, line) VALUES (?1, 0, ?2)",
            params![new.key.0, new.header],
        )
        .map_err(backend)?;
        tx.commit().map_err(backend)?;
        Ok(Cas::Done)
    }

    fn load(&mut self, key: &RunKey) -> Result<Option<Row>, StoreError> {
        type Raw = (i64, String, String, Option<String>, Option<String>, i64);
        let raw: Option<(Raw, (String, i64, i64))> = self
            .db
            .query_row(
                "SELECT seq, tail, run, checkpoint, owner, lease_until, program, pc,
                 resource_version FROM runs WHERE key = ?1",
                params![key.0],
                |r| {
                    Ok((
                        (
                            r.get(0)?,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            r.get(4)?,
                            r.get(5)?,
                        ),
                        (r.get(6)?, r.get(7)?, r.get(8)?),
                    ))
                },
            )
            .optional()
            .map_err(backend)?;
        let Some(((seq, tail, run, checkpoint, owner, until), (program, pc, rv))) = raw else {
            return Ok(None);
        };
        let (run, legacy) = decode_run(&key.0, &run)?;
        if !legacy.is_empty() {
            // A run stored under rules 2 kept its call log inline: its history moves to the
            // history table (idempotently), and the next commit stores the run without it.
            let tx = self.db.transaction().map_err(backend)?;
            for entry in &legacy {
                write_history(&tx, &key.0, entry)?;
            }
            tx.commit().map_err(backend)?;
        }
        Ok(Some(Row {
            key: key.clone(),
            run,
            tail: tail_of(seq, &tail, &key.0)?,
            checkpoint: match checkpoint {
                Some(c) => Some(from_json("checkpoint", &key.0, &c)?),
                None => None,
            },
            program,
            pc: pc as u32,
            lease: Lease {
                owner,
                until_ms: until as u64,
            },
            resource_version: rv as u64,
        }))
    }

    fn commit(&mut self, c: &Commit<'_>) -> Result<Cas, StoreError> {
        let run = to_json(c.run)?;
        let checkpoint = c.checkpoint.map(to_json).transpose()?;
        let answer = c.consumed.map(|(_, a)| answer_text(&a)).transpose()?;
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let moved = tx
            .execute(
                "UPDATE runs SET revision = ?1, seq = ?2, tail = ?3, run = ?4, checkpoint = ?5,
                 status = ?6, wake_at = ?7, owner = ?8, lease_until = ?9, pc = ?10
                 WHERE key = ?11 AND revision = ?12 AND seq = ?13",
                params![
                    c.run.revision().0 as i64,
                    c.tail.seq as i64,
                    c.tail.digest.to_string(),
                    run,
                    checkpoint,
                    c.status.as_str(),
                    c.wake_at.map(|t| t as i64),
                    c.lease.owner,
                    c.lease.until_ms as i64,
                    c.pc as i64,
                    c.key.0,
                    c.expect.0 .0 as i64,
                    c.expect.1 as i64,
                ],
            )
            .map_err(backend)?;
        if moved == 0 {
            return Ok(Cas::Conflict); // dropping the transaction rolls it back
        }
        tx.execute(
            "INSERT INTO audit (key, seq, line) VALUES (?1, ?2, ?3)",
            params![c.key.0, c.tail.seq as i64, c.line],
        )
        .map_err(backend)?;
        if let Some(entry) = c.history {
            write_history(&tx, &c.key.0, entry)?;
        }
        if let (Some((id, _)), Some(answer)) = (c.consumed, answer) {
            let took = tx
                .execute(
                    "UPDATE inbox SET answer = ?1, seq = ?2 WHERE id = ?3 AND answer IS NULL",
                    params![answer, c.tail.seq as i64, id as i64],
                )
                .map_err(backend)?;
            if took == 0 {
                return Ok(Cas::Conflict);
            }
        }
        tx.commit().map_err(backend)?;
        Ok(Cas::Done)
    }

    fn scan(&mut self, all: bool) -> Result<Vec<Summary>, StoreError> {
        let sql = format!(
            "SELECT r.key, r.status, r.wake_at, r.owner, r.lease_until,
             (SELECT COUNT(*) FROM inbox i WHERE i.key = r.key AND i.answer IS NULL)
             FROM runs r WHERE ?1 OR r.status IN {ACTIVE}
             OR r.key IN (SELECT key FROM inbox WHERE answer IS NULL) ORDER BY r.key"
        );
        let mut stmt = self.db.prepare_cached(&sql).map_err(backend)?;
        let rows = stmt
            .query_map(params![all], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })
            .map_err(backend)?;
        let mut out = Vec::new();
        for row in rows {
            let (key, status, wake_at, owner, until, pending) = row.map_err(backend)?;
            let status = Status::parse(&status).ok_or_else(|| StoreError::Corrupt {
                what: "status",
                key: key.clone(),
                why: status.clone(),
            })?;
            out.push(Summary {
                key: RunKey(key),
                status,
                wake_at: wake_at.map(|t| t as u64),
                lease: Lease {
                    owner,
                    until_ms: until as u64,
                },
                pending: pending as u32,
            });
        }
        Ok(out)
    }

    fn submit(
        &mut self,
        key: &RunKey,
        party: &str,
        at_ms: u64,
        request: &Request,
    ) -> Result<u64, StoreError> {
        self.db
            .execute(
                "INSERT INTO inbox (key, party, submitted_ms, request) VALUES (?1, ?2, ?3, ?4)",
                params![key.0, party, at_ms as i64, to_json(request)?],
            )
            .map_err(backend)?;
        Ok(self.db.last_insert_rowid() as u64)
    }

    fn inbox(&mut self, key: &RunKey, pending: bool) -> Result<Vec<Inbox>, StoreError> {
        let mut stmt = self
            .db
            .prepare_cached(
                "SELECT id, party, submitted_ms, request, answer, seq FROM inbox
                 WHERE key = ?1 AND (NOT ?2 OR answer IS NULL) ORDER BY id",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![key.0, pending], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                ))
            })
            .map_err(backend)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, party, at, request, answer, seq) = row.map_err(backend)?;
            out.push(Inbox {
                id: id as u64,
                key: key.clone(),
                party,
                submitted_ms: at as u64,
                request: from_json("request", &key.0, &request)?,
                answer: match (answer, seq) {
                    (Some(a), Some(s)) => Some((from_json("answer", &key.0, &a)?, s as u64)),
                    _ => None,
                },
            });
        }
        Ok(out)
    }

    fn log(&mut self, key: &RunKey) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut stmt = self
            .db
            .prepare_cached("SELECT line FROM audit WHERE key = ?1 ORDER BY seq")
            .map_err(backend)?;
        let lines = stmt
            .query_map(params![key.0], |r| r.get::<_, Vec<u8>>(0))
            .map_err(backend)?;
        lines.collect::<Result<_, _>>().map_err(backend)
    }

    fn raw_cas(&mut self, slot: u32, expect: u64, value: &[u8]) -> Result<Cas, StoreError> {
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let moved = if expect == 0 {
            tx.execute(
                "INSERT OR IGNORE INTO raw_cas (slot, version, value) VALUES (?1, 1, ?2)",
                params![slot, value],
            )
        } else {
            tx.execute(
                "UPDATE raw_cas SET version = version + 1, value = ?1
                 WHERE slot = ?2 AND version = ?3",
                params![value, slot, expect as i64],
            )
        }
        .map_err(backend)?;
        if moved == 0 {
            return Ok(Cas::Conflict);
        }
        tx.commit().map_err(backend)?;
        Ok(Cas::Done)
    }

    fn prior(&mut self, key: &RunKey, call: &Call) -> Result<Prior, StoreError> {
        let mut stmt = self
            .db
            .prepare_cached(
                "SELECT kind, args, committed FROM history WHERE key = ?1
                 AND ((kind = 'call' AND fp = ?2) OR (kind = 'key' AND fp = ?3))",
            )
            .map_err(backend)?;
        let call_id = Fingerprint::call_id(&call.call_id).to_string();
        let idem = Fingerprint::key(&call.key).to_string();
        let rows = stmt
            .query_map(params![key.0, call_id, idem], |r| {
                Ok((r.get::<_, String>(0)?, r.get(1)?, r.get::<_, i64>(2)? != 0))
            })
            .map_err(backend)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend)?;
        prior_of(rows, &key.0)
    }
}

/// Writes a history entry's rows in the transaction `tx`.
fn write_history(
    tx: &rusqlite::Transaction<'_>,
    key: &str,
    entry: &HistoryEntry,
) -> Result<(), StoreError> {
    for row in history_rows(entry) {
        tx.execute(
            "INSERT INTO history (key, kind, fp, args, committed) VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (key, kind, fp) DO UPDATE SET committed = MAX(committed, excluded.committed)",
            params![key, row.kind, row.fp, row.args, i64::from(row.committed)],
        )
        .map_err(backend)?;
    }
    Ok(())
}
