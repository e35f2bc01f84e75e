//! The scale-out store: PostgreSQL, shared by workers on many machines.
//!
//! The compare-and-set is `UPDATE runs ... WHERE key = $k AND revision = $r AND seq = $s`;
//! the audit record is inserted, and the consumed request answered, in the same transaction.
//! PostgreSQL's default `synchronous_commit = on` flushes the write-ahead log before a commit
//! returns: a committed step survives a crash of the server or of the machine.
//!
//! Address: a libpq connection string or URL, optionally followed by `#SCHEMA` to keep the
//! tables in a schema of their own (default `resumable`), e.g.
//! `host=127.0.0.1 port=5432 user=resumable dbname=postgres#torture`.

use super::{
    decode_run, from_json, history_rows, prior_of, to_json, Cas, Commit, Inbox, Lease, NewRun,
    Request, Row, RunKey, Status, Store, StoreError, Summary,
};
use crate::lifecycle::Tail;
use postgres::{Client, NoTls};
use resumable_kernel::Digest;
use resumable_kernel::{Call, Fingerprint, HistoryEntry, Prior};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    key TEXT PRIMARY KEY,
    revision BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    tail TEXT NOT NULL,
    run TEXT NOT NULL,
    checkpoint TEXT,
    status TEXT NOT NULL,
    wake_at BIGINT,
    owner TEXT,
    lease_until BIGINT NOT NULL,
    program TEXT NOT NULL,
    pc BIGINT NOT NULL,
    resource_version BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status);
CREATE TABLE IF NOT EXISTS audit (
    key TEXT NOT NULL,
    seq BIGINT NOT NULL,
    line BYTEA NOT NULL,
    PRIMARY KEY (key, seq)
);
CREATE TABLE IF NOT EXISTS inbox (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL,
    party TEXT NOT NULL,
    submitted_ms BIGINT NOT NULL,
    request TEXT NOT NULL,
    answer TEXT,
    seq BIGINT
);
CREATE INDEX IF NOT EXISTS inbox_pending ON inbox (key) WHERE answer IS NULL;
CREATE TABLE IF NOT EXISTS raw_cas (
    slot BIGINT PRIMARY KEY,
    version BIGINT NOT NULL,
    value BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    key TEXT NOT NULL,
    kind TEXT NOT NULL,
    fp TEXT NOT NULL,
    args TEXT,
    committed BOOLEAN NOT NULL,
    PRIMARY KEY (key, kind, fp)
);
";

const ACTIVE: &str = "('ready','in_flight','approval','callback','resource','person','unknown')";

/// A connection to a PostgreSQL store.
pub struct PgStore {
    db: Client,
}

fn backend(e: postgres::Error) -> StoreError {
    StoreError::Backend(format!("postgres: {e}"))
}

/// Splits `conninfo#schema` into its parts.
pub fn split_address(address: &str) -> (&str, &str) {
    match address.rsplit_once('#') {
        Some((conn, schema)) if !schema.is_empty() => (conn, schema),
        _ => (address, "resumable"),
    }
}

impl PgStore {
    /// Connects and creates the schema and tables if needed.
    pub fn open(address: &str) -> Result<PgStore, StoreError> {
        let (conn, schema) = split_address(address);
        if !schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(StoreError::Backend(format!(
                "postgres: schema name {schema:?}: use lowercase letters, digits and _"
            )));
        }
        let mut db = Client::connect(conn, NoTls).map_err(backend)?;
        // Workers start together: one creates the tables, the others wait on the lock.
        let mut tx = db.transaction().map_err(backend)?;
        tx.execute("SELECT pg_advisory_xact_lock(7231)", &[])
            .map_err(backend)?;
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {schema}; SET LOCAL search_path TO {schema}; {SCHEMA}"
        ))
        .map_err(backend)?;
        tx.commit().map_err(backend)?;
        db.batch_execute(&format!("SET search_path TO {schema}"))
            .map_err(backend)?;
        Ok(PgStore { db })
    }

    /// Drops a schema and everything in it (for tests and benchmarks that made their own).
    pub fn drop_schema(address: &str) -> Result<(), StoreError> {
        let (conn, schema) = split_address(address);
        let mut db = Client::connect(conn, NoTls).map_err(backend)?;
        db.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .map_err(backend)
    }
}

fn corrupt(what: &'static str, key: &str, why: String) -> StoreError {
    StoreError::Corrupt {
        what,
        key: key.to_string(),
        why,
    }
}

impl Store for PgStore {
    fn create(&mut self, new: &NewRun<'_>) -> Result<Cas, StoreError> {
        let mut tx = self.db.transaction().map_err(backend)?;
        let inserted = tx
            .execute(
                "INSERT INTO runs (key, revision, seq, tail, run, checkpoint, status, wake_at,
                 owner, lease_until, program, pc, resource_version)
                 VALUES ($1, $2, 0, $3, $4, NULL, $5, NULL, NULL, 0, $6, 0, $7)
                 ON CONFLICT (key) DO NOTHING",
                &[
                    &new.key.0,
                    &(new.run.revision().0 as i64),
                    &new.tail.digest.to_string(),
                    &to_json(new.run)?,
                    &super::status_of(new.run).as_str(),
                    &new.program,
                    &(new.resource_version as i64),
                ],
            )
            .map_err(backend)?;
        if inserted == 0 {
            return Ok(Cas::Conflict);
        }
        tx.execute(
            "INSERT INTO audit (key, seq, line) VALUES ($1, 0, $2)",
            &[&new.key.0, &new.header],
        )
        .map_err(backend)?;
        tx.commit().map_err(backend)?;
        Ok(Cas::Done)
    }

    fn load(&mut self, key: &RunKey) -> Result<Option<Row>, StoreError> {
        let Some(r) = self
            .db
            .query_opt(
                "SELECT seq, tail, run, checkpoint, owner, lease_until, program, pc,
                 resource_version FROM runs WHERE key = $1",
                &[&key.0],
            )
            .map_err(backend)?
        else {
            return Ok(None);
        };
        let tail: String = r.get(1);
        let checkpoint: Option<String> = r.get(3);
        let (run, legacy) = decode_run(&key.0, r.get(2))?;
        if !legacy.is_empty() {
            // A run stored under rules 2 kept its call log inline: its history moves to the
            // history table (idempotently), and the next commit stores the run without it.
            let mut tx = self.db.transaction().map_err(backend)?;
            for entry in &legacy {
                write_history(&mut tx, &key.0, entry)?;
            }
            tx.commit().map_err(backend)?;
        }
        Ok(Some(Row {
            key: key.clone(),
            run,
            tail: Tail {
                seq: r.get::<_, i64>(0) as u64,
                digest: Digest::from_hex(&tail)
                    .map_err(|e| corrupt("anchor", &key.0, format!("{e:?}")))?,
            },
            checkpoint: match checkpoint {
                Some(c) => Some(from_json("checkpoint", &key.0, &c)?),
                None => None,
            },
            program: r.get(6),
            pc: r.get::<_, i64>(7) as u32,
            lease: Lease {
                owner: r.get(4),
                until_ms: r.get::<_, i64>(5) as u64,
            },
            resource_version: r.get::<_, i64>(8) as u64,
        }))
    }

    fn commit(&mut self, c: &Commit<'_>) -> Result<Cas, StoreError> {
        let run = to_json(c.run)?;
        let checkpoint = c.checkpoint.map(to_json).transpose()?;
        let answer = c.consumed.map(|(_, a)| to_json(&a)).transpose()?;
        let mut tx = self.db.transaction().map_err(backend)?;
        let moved = tx
            .execute(
                "UPDATE runs SET revision = $1, seq = $2, tail = $3, run = $4, checkpoint = $5,
                 status = $6, wake_at = $7, owner = $8, lease_until = $9, pc = $10
                 WHERE key = $11 AND revision = $12 AND seq = $13",
                &[
                    &(c.run.revision().0 as i64),
                    &(c.tail.seq as i64),
                    &c.tail.digest.to_string(),
                    &run,
                    &checkpoint,
                    &c.status.as_str(),
                    &c.wake_at.map(|t| t as i64),
                    &c.lease.owner,
                    &(c.lease.until_ms as i64),
                    &(c.pc as i64),
                    &c.key.0,
                    &(c.expect.0 .0 as i64),
                    &(c.expect.1 as i64),
                ],
            )
            .map_err(backend)?;
        if moved == 0 {
            return Ok(Cas::Conflict); // dropping the transaction rolls it back
        }
        tx.execute(
            "INSERT INTO audit (key, seq, line) VALUES ($1, $2, $3)",
            &[&c.key.0, &(c.tail.seq as i64), &c.line],
        )
        .map_err(backend)?;
        if let Some(entry) = c.history {
            write_history(&mut tx, &c.key.0, entry)?;
        }
        if let (Some((id, _)), Some(answer)) = (c.consumed, answer) {
            let took = tx
                .execute(
                    "UPDATE inbox SET answer = $1, seq = $2 WHERE id = $3 AND answer IS NULL",
                    &[&answer, &(c.tail.seq as i64), &(id as i64)],
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
             FROM runs r WHERE $1 OR r.status IN {ACTIVE}
             OR r.key IN (SELECT key FROM inbox WHERE answer IS NULL) ORDER BY r.key"
        );
        let rows = self.db.query(&sql, &[&all]).map_err(backend)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let key: String = r.get(0);
            let status: String = r.get(1);
            let status =
                Status::parse(&status).ok_or_else(|| corrupt("status", &key, status.clone()))?;
            out.push(Summary {
                key: RunKey(key),
                status,
                wake_at: r.get::<_, Option<i64>>(2).map(|t| t as u64),
                lease: Lease {
                    owner: r.get(3),
                    until_ms: r.get::<_, i64>(4) as u64,
                },
                pending: r.get::<_, i64>(5) as u32,
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
        let r = self
            .db
            .query_one(
                "INSERT INTO inbox (key, party, submitted_ms, request) VALUES ($1, $2, $3, $4)
                 RETURNING id",
                &[&key.0, &party, &(at_ms as i64), &to_json(request)?],
            )
            .map_err(backend)?;
        Ok(r.get::<_, i64>(0) as u64)
    }

    fn inbox(&mut self, key: &RunKey, pending: bool) -> Result<Vec<Inbox>, StoreError> {
        let rows = self
            .db
            .query(
                "SELECT id, party, submitted_ms, request, answer, seq FROM inbox
                 WHERE key = $1 AND (NOT $2 OR answer IS NULL) ORDER BY id",
                &[&key.0, &pending],
            )
            .map_err(backend)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let answer: Option<String> = r.get(4);
            let seq: Option<i64> = r.get(5);
            out.push(Inbox {
                id: r.get::<_, i64>(0) as u64,
                key: key.clone(),
                party: r.get(1),
                submitted_ms: r.get::<_, i64>(2) as u64,
                request: from_json("request", &key.0, r.get(3))?,
                answer: match (answer, seq) {
                    (Some(a), Some(s)) => Some((from_json("answer", &key.0, &a)?, s as u64)),
                    _ => None,
                },
            });
        }
        Ok(out)
    }

    fn log(&mut self, key: &RunKey) -> Result<Vec<Vec<u8>>, StoreError> {
        let rows = self
            .db
            .query(
                "SELECT line FROM audit WHERE key = $1 ORDER BY seq",
                &[&key.0],
            )
            .map_err(backend)?;
        Ok(rows.into_iter().map(|r| r.get(0)).collect())
    }

    fn raw_cas(&mut self, slot: u32, expect: u64, value: &[u8]) -> Result<Cas, StoreError> {
        let slot = slot as i64;
        let moved = if expect == 0 {
            self.db.execute(
                "INSERT INTO raw_cas (slot, version, value) VALUES ($1, 1, $2)
                 ON CONFLICT (slot) DO NOTHING",
                &[&slot, &value],
            )
        } else {
            self.db.execute(
                "UPDATE raw_cas SET version = version + 1, value = $1
                 WHERE slot = $2 AND version = $3",
                &[&value, &slot, &(expect as i64)],
            )
        }
        .map_err(backend)?;
        Ok(if moved == 0 { Cas::Conflict } else { Cas::Done })
    }

    fn prior(&mut self, key: &RunKey, call: &Call) -> Result<Prior, StoreError> {
        let call_id = Fingerprint::call_id(&call.call_id).to_string();
        let idem = Fingerprint::key(&call.key).to_string();
        let rows = self
            .db
            .query(
                "SELECT kind, args, committed FROM history WHERE key = $1
                 AND ((kind = 'call' AND fp = $2) OR (kind = 'key' AND fp = $3))",
                &[&key.0, &call_id, &idem],
            )
            .map_err(backend)?;
        prior_of(
            rows.into_iter().map(|r| (r.get(0), r.get(1), r.get(2))),
            &key.0,
        )
    }
}

/// Writes a history entry's rows in the transaction `tx`.
fn write_history(
    tx: &mut postgres::Transaction<'_>,
    key: &str,
    entry: &HistoryEntry,
) -> Result<(), StoreError> {
    for row in history_rows(entry) {
        tx.execute(
            "INSERT INTO history (key, kind, fp, args, committed) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (key, kind, fp)
             DO UPDATE SET committed = history.committed OR excluded.committed",
            &[&key, &row.kind, &row.fp, &row.args, &row.committed],
        )
        .map_err(backend)?;
    }
    Ok(())
}

/// The PostgreSQL address for a test named `test`, in a schema of its own (dropped first),
/// from `RESUMABLE_TEST_POSTGRES` (a libpq connection string; `runtime/scripts/postgres.sh`
/// starts a server and prints one). Without it the test is skipped, loudly: the notice goes
/// straight to the terminal, past the test harness's capture. With
/// `RESUMABLE_REQUIRE_POSTGRES=1` (CI sets it) a skip is a failure instead.
pub fn test_address(test: &str) -> Option<String> {
    use std::io::Write;
    let Ok(conn) = std::env::var("RESUMABLE_TEST_POSTGRES") else {
        let required = std::env::var("RESUMABLE_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "RESUMABLE_REQUIRE_POSTGRES=1 but RESUMABLE_TEST_POSTGRES is not set: \
             the PostgreSQL test {test} cannot run"
        );
        let _ = writeln!(
            std::io::stderr(),
            "\nSKIPPED: PostgreSQL test {test}: RESUMABLE_TEST_POSTGRES is not set \
             (runtime/scripts/postgres.sh start DIR starts a server and prints its address)\n"
        );
        return None;
    };
    let schema = format!("t_{}_{}", test.replace(['-', ':'], "_"), std::process::id());
    let address = format!("{conn}#{schema}");
    PgStore::drop_schema(&address).ok()?;
    Some(address)
}
