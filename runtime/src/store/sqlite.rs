//! The embedded store: one SQLite file, shared by every worker process on the machine.
//!
//! Why SQLite: the runtime's workers are separate processes that are killed with SIGKILL at
//! any instruction, and they share one store. SQLite is built for exactly that: many
//! processes open one file, writers take turns under its lock, and a process killed in the
//! middle of a transaction leaves nothing of it behind (the write-ahead log is rolled back on
//! the next open). The file is opened in WAL mode with `synchronous = FULL`: every commit is
//! fsync'd before it returns, so a committed step survives a kill and a power loss alike.
//! (redb, pure Rust and crash-safe too, lets one process at a time open a file.)
//!
//! What this file holds is the connection: opening it, running a statement, a transaction.
//! The statements and the store's logic are [`super::sql`]'s, shared with PostgreSQL.

use super::codec::{Cell, Value};
use super::sql::{self, Dialect, Sql, SqlStore};
use super::{Cas, StoreError};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{params_from_iter, TransactionBehavior};
use std::time::Duration;

/// SQLite's words for the column types.
const DIALECT: Dialect = Dialect {
    int: "INTEGER",
    bytes: "BLOB",
    boolean: "INTEGER",
    serial_key: "INTEGER PRIMARY KEY AUTOINCREMENT",
    keyed_options: " WITHOUT ROWID",
};

/// A connection to an SQLite store file.
pub struct Sqlite {
    db: rusqlite::Connection,
}

/// The store on an SQLite file.
pub type SqliteStore = SqlStore<Sqlite>;

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("sqlite: {e}"))
}

/// Opens (creating if needed) the SQLite file at `path` as the store opens it: in WAL mode
/// with fsync'd commits, waiting up to 30 s for another process's write lock. For anything
/// that must measure or touch the file under the store's own settings.
pub fn connect(path: &str) -> Result<rusqlite::Connection, StoreError> {
    let db = rusqlite::Connection::open(path).map_err(backend)?;
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
    Ok(db)
}

impl SqlStore<Sqlite> {
    /// Opens (creating if needed) the store at `path`, in WAL mode with fsync'd commits.
    pub fn open(path: &str) -> Result<SqliteStore, StoreError> {
        let mut db = connect(path)?;
        db.execute_batch(&sql::schema(&DIALECT)).map_err(backend)?;
        give_audit_a_rowid(&mut db)?;
        Ok(SqlStore::new(Sqlite { db }))
    }
}

/// Whether the store's `audit` table is keyed without a rowid, as releases before the
/// schema's rowid `audit` made it.
fn audit_without_rowid(db: &rusqlite::Connection) -> Result<bool, StoreError> {
    let sql = "SELECT count(*) FROM pragma_table_list WHERE schema = 'main' AND name = 'audit'
        AND wr = 1";
    let n: i64 = db.query_row(sql, [], |r| r.get(0)).map_err(backend)?;
    Ok(n > 0)
}

/// Moves an `audit` table that an earlier release made without a rowid into the rowid
/// table [`sql::schema`] makes now (why: its documentation), every line kept, in one
/// transaction: the old table renamed, the schema's made, the lines copied in the log's
/// order, the old table dropped. A worker that opens the store at the same time waits for
/// the write lock and then finds the move made. Done once, when the store is first opened
/// for writing by this release; a reader never moves it, and reads either table alike.
fn give_audit_a_rowid(db: &mut rusqlite::Connection) -> Result<(), StoreError> {
    if !audit_without_rowid(db)? {
        return Ok(());
    }
    let tx = db
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    if !audit_without_rowid(&tx)? {
        return Ok(()); // another process moved it while this one waited for the lock
    }
    tx.execute_batch("ALTER TABLE audit RENAME TO audit_without_rowid")
        .map_err(backend)?;
    tx.execute_batch(&sql::schema(&DIALECT)).map_err(backend)?;
    tx.execute_batch(
        "INSERT INTO audit (key, seq, line)
            SELECT key, seq, line FROM audit_without_rowid ORDER BY key, seq;
         DROP TABLE audit_without_rowid;",
    )
    .map_err(backend)?;
    tx.commit().map_err(backend)
}

impl SqlStore<Sqlite> {
    /// Opens the store at `path` for reading only: nothing is created or written, so a
    /// reader needs no write access, and a path that names no store is refused rather than
    /// made into an empty one.
    pub fn open_read_only(path: &str) -> Result<SqliteStore, StoreError> {
        if !std::path::Path::new(path).is_file() {
            return Err(StoreError::Misuse(format!(
                "sqlite: no store at {path} (a reading command never creates one)"
            )));
        }
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
            | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
            | rusqlite::OpenFlags::SQLITE_OPEN_URI;
        let db = rusqlite::Connection::open_with_flags(path, flags).map_err(backend)?;
        db.busy_timeout(Duration::from_secs(30)).map_err(backend)?;
        // A file that is not a store (or not yet one) has no runs table: say so now.
        let tables: i64 = db
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'",
                [],
                |r| r.get(0),
            )
            .map_err(backend)?;
        if tables == 0 {
            return Err(StoreError::Misuse(format!("sqlite: {path} holds no store")));
        }
        Ok(SqlStore::new(Sqlite { db }))
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        let value = match *self {
            Value::Int(i) | Value::OptInt(Some(i)) => ValueRef::Integer(i),
            Value::OptInt(None) | Value::OptText(None) => ValueRef::Null,
            Value::Text(t) | Value::OptText(Some(t)) => ValueRef::Text(t.as_bytes()),
            Value::Bytes(b) => ValueRef::Blob(b),
            Value::Bool(b) => ValueRef::Integer(i64::from(b)),
        };
        Ok(ToSqlOutput::Borrowed(value))
    }
}

fn cell(value: ValueRef<'_>) -> Result<Cell, StoreError> {
    Ok(match value {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(i) => Cell::Int(i),
        ValueRef::Text(t) => Cell::Text(
            String::from_utf8(t.to_vec())
                .map_err(|e| StoreError::Backend(format!("sqlite: text that is not UTF-8: {e}")))?,
        ),
        ValueRef::Blob(b) => Cell::Bytes(b.to_vec()),
        ValueRef::Real(r) => {
            return Err(StoreError::Backend(format!(
                "sqlite: a real number {r} where the store writes none"
            )))
        }
    })
}

fn execute(db: &rusqlite::Connection, sql: &str, values: &[Value<'_>]) -> Result<u64, StoreError> {
    let mut statement = db.prepare_cached(sql).map_err(backend)?;
    let changed = statement
        .execute(params_from_iter(values))
        .map_err(backend)?;
    Ok(changed as u64)
}

fn query(
    db: &rusqlite::Connection,
    sql: &str,
    values: &[Value<'_>],
) -> Result<Vec<Vec<Cell>>, StoreError> {
    let mut statement = db.prepare_cached(sql).map_err(backend)?;
    let columns = statement.column_count();
    let mut rows = statement.query(params_from_iter(values)).map_err(backend)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(backend)? {
        let cells = (0..columns)
            .map(|i| cell(row.get_ref(i).map_err(backend)?))
            .collect::<Result<_, _>>()?;
        out.push(cells);
    }
    Ok(out)
}

/// Statements inside a transaction (which derefs to its connection).
struct InTransaction<'c>(&'c rusqlite::Connection);

impl Sql for InTransaction<'_> {
    fn execute(&mut self, sql: &str, values: &[Value<'_>]) -> Result<u64, StoreError> {
        execute(self.0, sql, values)
    }

    fn query(&mut self, sql: &str, values: &[Value<'_>]) -> Result<Vec<Vec<Cell>>, StoreError> {
        query(self.0, sql, values)
    }
}

/// Statements outside a transaction: each is one on its own.
impl Sql for Sqlite {
    fn execute(&mut self, sql: &str, values: &[Value<'_>]) -> Result<u64, StoreError> {
        execute(&self.db, sql, values)
    }

    fn query(&mut self, sql: &str, values: &[Value<'_>]) -> Result<Vec<Vec<Cell>>, StoreError> {
        query(&self.db, sql, values)
    }
}

impl sql::Connection for Sqlite {
    fn read_only(&self) -> bool {
        // SQLite's own answer for the connection (opened with SQLITE_OPEN_READ_ONLY or
        // not); one it cannot give is taken as read-only, which at worst leaves an earlier
        // release's call log for the first writer to move.
        self.db.is_readonly(rusqlite::MAIN_DB).unwrap_or(true)
    }

    fn transaction(
        &mut self,
        work: &mut dyn FnMut(&mut dyn Sql) -> Result<Cas, StoreError>,
    ) -> Result<Cas, StoreError> {
        // IMMEDIATE takes the write lock at the start: two writers never both read, then
        // both try to upgrade, and one fails with a deadlock. BEGIN and COMMIT are prepared
        // once, as every other statement (a transaction of rusqlite's parses both each time).
        execute(&self.db, "BEGIN IMMEDIATE", &[])?;
        let open = Open(&self.db);
        let cas = work(&mut InTransaction(open.0))?;
        if cas == Cas::Done {
            execute(open.0, "COMMIT", &[])?;
        }
        Ok(cas) // on a conflict or a failure, `open` rolls the transaction back
    }
}

/// A transaction open on a connection: rolled back when dropped, unless it was committed.
struct Open<'c>(&'c rusqlite::Connection);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            // Nothing of a transaction that did not commit may stay; a rollback that fails
            // leaves SQLite to roll it back when the connection closes.
            let _ = execute(self.0, "ROLLBACK", &[]);
        }
    }
}
