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
//!
//! A step's commit is one round trip: a call of the function `resumable_commit`, created
//! with the tables ([`COMMIT_FUNCTION`]), which runs [`sql::Connection::commit`]'s
//! statements in the call's own transaction.
//!
//! What this file holds is the connection: opening it, running a statement, a transaction,
//! and that function. The statements and the store's logic are [`super::sql`]'s, shared
//! with SQLite.

use super::codec::{Cell, Value};
use super::sql::{self, Dialect, Sql, SqlStore};
use super::{Cas, StoreError};
use postgres::types::{ToSql, Type};
use postgres::{Client, GenericClient, NoTls};

/// PostgreSQL's words for the column types.
const DIALECT: Dialect = Dialect {
    int: "BIGINT",
    bytes: "BYTEA",
    boolean: "BOOLEAN",
    serial_key: "BIGSERIAL PRIMARY KEY",
    keyed_options: "",
};

/// A step's commit in one call, so in one round trip: the statements of
/// [`sql::Connection::commit`] ([`sql::MOVE`], [`sql::APPEND`], [`sql::RECORD`] for each
/// history row in order, [`sql::ANSWER`]), run by the server in the call's transaction.
/// `FALSE` if the compare-and-set found the run moved (nothing written); a request answered
/// already raises [`ANSWERED_ALREADY`], which rolls the whole call back. Parameters: the 13
/// of [`sql::MOVE`], the record, the history rows as four arrays, the answer and the
/// request's number (both NULL when the step consumed no request).
pub const COMMIT_FUNCTION: &str = "
CREATE OR REPLACE FUNCTION resumable_commit(
    new_revision BIGINT, new_seq BIGINT, new_tail TEXT, new_run TEXT, new_checkpoint TEXT,
    new_status TEXT, new_wake_at BIGINT, new_owner TEXT, new_lease_until BIGINT,
    new_pc BIGINT, run_key TEXT, expect_revision BIGINT, expect_seq BIGINT,
    record_line BYTEA, h_kind TEXT[], h_fp TEXT[], h_args TEXT[], h_committed BOOLEAN[],
    answer_json TEXT, request_id BIGINT) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
    UPDATE runs SET revision = new_revision, seq = new_seq, tail = new_tail, run = new_run,
        checkpoint = new_checkpoint, status = new_status, wake_at = new_wake_at,
        owner = new_owner, lease_until = new_lease_until, pc = new_pc
        WHERE key = run_key AND revision = expect_revision AND seq = expect_seq;
    IF NOT FOUND THEN
        RETURN FALSE;
    END IF;
    INSERT INTO audit (key, seq, line) VALUES (run_key, new_seq, record_line);
    FOR i IN 1 .. coalesce(array_length(h_kind, 1), 0) LOOP
        INSERT INTO history (key, kind, fp, args, committed)
            VALUES (run_key, h_kind[i], h_fp[i], h_args[i], h_committed[i])
            ON CONFLICT (key, kind, fp)
            DO UPDATE SET committed = history.committed OR excluded.committed;
    END LOOP;
    IF request_id IS NOT NULL THEN
        UPDATE inbox SET answer = answer_json, seq = new_seq
            WHERE id = request_id AND answer IS NULL;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'request % is answered already', request_id
                USING ERRCODE = 'RS001';
        END IF;
    END IF;
    RETURN TRUE;
END $$;
";

/// The SQLSTATE [`COMMIT_FUNCTION`] raises for a request answered already: the store's
/// [`Cas::Conflict`], as when the statements run one by one.
pub const ANSWERED_ALREADY: &str = "RS001";

/// The call of [`COMMIT_FUNCTION`], numbered as the shared statements are.
const COMMIT: &str = "SELECT resumable_commit(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
    ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)";

/// A connection to a PostgreSQL store, made again when the server closed it (a restart).
pub struct Postgres {
    db: Client,
    /// The connection string, to connect again.
    conn: String,
    /// The store's schema.
    schema: String,
    /// Whether every transaction is read-only (`default_transaction_read_only`, set again
    /// on each new connection): the one notion of a reader, which the store asks through
    /// [`sql::Connection::read_only`].
    read_only: bool,
    /// Whether the last statement found the server gone: the next one connects again,
    /// whether or not the driver has yet noticed the connection closed.
    lost: bool,
    /// Each statement prepared once per connection: a statement given as text is parsed by
    /// the server, a round trip, every time it runs.
    prepared: Prepared,
}

/// The statements prepared on the current connection, by their text.
type Prepared = std::collections::HashMap<String, postgres::Statement>;

impl Postgres {
    /// The client, connected again first if the server closed the connection: a statement
    /// that failed with the server gone failed, and the next one finds it back.
    fn client(&mut self) -> Result<&mut Client, StoreError> {
        if self.lost || self.db.is_closed() {
            let mut db = Client::connect(&self.conn, NoTls).map_err(backend)?;
            db.batch_execute(&session(&self.schema, self.read_only))
                .map_err(backend)?;
            self.db = db;
            self.lost = false;
            self.prepared.clear();
        }
        Ok(&mut self.db)
    }

    /// `result`, remembering whether it found the server gone.
    fn noting<T>(&mut self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if matches!(result, Err(StoreError::Unavailable(_))) {
            self.lost = true;
        }
        result
    }
}

/// The settings of a store's session: its schema, and whether it only reads.
fn session(schema: &str, read_only: bool) -> String {
    let read_only = if read_only {
        "SET default_transaction_read_only = on; "
    } else {
        ""
    };
    format!("{read_only}SET search_path TO {schema}")
}

/// The store on PostgreSQL.
pub type PgStore = SqlStore<Postgres>;

/// The error with the server's own words: the driver's `Display` says only "db error" or
/// "error connecting to server"; the server's message (a wrong user, a missing database, a
/// relation that does not exist) and the I/O cause are in its sources.
pub(crate) fn backend(e: postgres::Error) -> StoreError {
    // Connection exceptions (class 08) and operator intervention (57: a shutdown, a server
    // still starting up), or no answer from a server at all: the server is not there now.
    let unavailable = match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || code.starts_with("57")
        }
        None => {
            e.is_closed() || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>())
        }
    };
    let mut text = format!("postgres: {e}");
    if let Some(db) = e.as_db_error() {
        text.push_str(&format!(
            ": {} {}: {}",
            db.severity(),
            db.code().code(),
            db.message()
        ));
        if let Some(detail) = db.detail() {
            text.push_str(&format!(" ({detail})"));
        }
    } else {
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
    }
    if unavailable {
        StoreError::Unavailable(text)
    } else {
        StoreError::Backend(text)
    }
}

/// Splits `conninfo#schema` into its parts.
pub fn split_address(address: &str) -> (&str, &str) {
    match address.rsplit_once('#') {
        Some((conn, schema)) if !schema.is_empty() => (conn, schema),
        _ => (address, "resumable"),
    }
}

/// Most bytes of an identifier PostgreSQL keeps (`NAMEDATALEN - 1`); it silently shortens a
/// longer one, so that two long schema names could name one schema.
pub const MAX_SCHEMA_BYTES: usize = 63;

/// Whether `schema` can name the store's own schema: lowercase letters, digits and `_`,
/// starting with a letter or `_`, at most [`MAX_SCHEMA_BYTES`] bytes, and none of
/// PostgreSQL's own (`pg_...`, `information_schema`, `public`).
pub fn check_schema(schema: &str) -> Result<(), String> {
    let why = if schema.len() > MAX_SCHEMA_BYTES {
        format!(
            "is {} bytes; PostgreSQL keeps {MAX_SCHEMA_BYTES} and would shorten it",
            schema.len()
        )
    } else if !schema
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        "use lowercase letters, digits and _".to_string()
    } else if !schema
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
    {
        "starts with a letter or _".to_string()
    } else if schema.starts_with("pg_") || schema == "information_schema" || schema == "public" {
        "is PostgreSQL's own; name a schema of the store's own".to_string()
    } else {
        return Ok(());
    };
    Err(format!("postgres: schema name {schema:?} {why}"))
}

/// Connects as the store does: to the address's server, in its schema (created if
/// missing), with `work` run once in a transaction that holds the store's setup lock (so
/// that workers starting together create the tables once). For anything that must measure
/// or touch the store's schema under its own settings.
pub fn connect(
    address: &str,
    work: impl FnOnce(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>,
) -> Result<Client, StoreError> {
    let (conn, schema) = split_address(address);
    check_schema(schema).map_err(StoreError::Misuse)?;
    let mut db = Client::connect(conn, NoTls).map_err(backend)?;
    // Workers start together: one creates the tables, the others wait on the lock.
    let mut tx = db.transaction().map_err(backend)?;
    tx.execute("SELECT pg_advisory_xact_lock(7231)", &[])
        .map_err(backend)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema}; SET LOCAL search_path TO {schema};"
    ))
    .map_err(backend)?;
    work(&mut tx).map_err(backend)?;
    tx.commit().map_err(backend)?;
    db.batch_execute(&session(schema, false)).map_err(backend)?;
    Ok(db)
}

impl SqlStore<Postgres> {
    /// Connects and creates the schema and tables if needed.
    pub fn open(address: &str) -> Result<PgStore, StoreError> {
        let db = connect(address, |tx| {
            tx.batch_execute(&sql::schema(&DIALECT))?;
            tx.batch_execute(COMMIT_FUNCTION)
        })?;
        let (conn, schema) = split_address(address);
        Ok(SqlStore::new(Postgres {
            db,
            conn: conn.to_string(),
            schema: schema.to_string(),
            read_only: false,
            lost: false,
            prepared: Prepared::new(),
        }))
    }

    /// Connects for reading only: every transaction is read-only, nothing is created, and a
    /// schema that does not exist is refused rather than made.
    pub fn open_read_only(address: &str) -> Result<PgStore, StoreError> {
        let (conn, schema) = split_address(address);
        check_schema(schema).map_err(StoreError::Misuse)?;
        let mut db = Client::connect(conn, NoTls).map_err(backend)?;
        let found = db
            .query("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
            .map_err(backend)?;
        if found.is_empty() {
            return Err(StoreError::Misuse(format!(
                "postgres: no store in schema {schema} (a reading command never creates one)"
            )));
        }
        db.batch_execute(&session(schema, true)).map_err(backend)?;
        Ok(SqlStore::new(Postgres {
            db,
            conn: conn.to_string(),
            schema: schema.to_string(),
            read_only: true,
            lost: false,
            prepared: Prepared::new(),
        }))
    }

    /// Drops a schema and everything in it (for tests and benchmarks that made their own).
    pub fn drop_schema(address: &str) -> Result<(), StoreError> {
        let (conn, schema) = split_address(address);
        check_schema(schema).map_err(StoreError::Misuse)?;
        let mut db = Client::connect(conn, NoTls).map_err(backend)?;
        db.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .map_err(backend)
    }
}

/// A statement in PostgreSQL's spelling: `$1` where the shared statements write `?1`.
fn dollars(sql: &str) -> String {
    sql.replace('?', "$")
}

fn params<'a>(values: &'a [Value<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    values
        .iter()
        .map(|v| -> &'a (dyn ToSql + Sync) {
            match v {
                Value::Int(i) => i,
                Value::OptInt(i) => i,
                Value::Text(t) => t,
                Value::OptText(t) => t,
                Value::Bytes(b) => b,
                Value::Bool(b) => b,
            }
        })
        .collect()
}

fn cells(row: &postgres::Row) -> Result<Vec<Cell>, StoreError> {
    // The column types the store's tables use; a value of any other type is an error the
    // driver reads (a schema edited by hand), never a panic.
    let cell = |i: usize, ty: &Type| -> Result<Cell, postgres::Error> {
        Ok(if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(i)?
                .map_or(Cell::Null, Cell::Int)
        } else if *ty == Type::BOOL {
            row.try_get::<_, Option<bool>>(i)?
                .map_or(Cell::Null, |b| Cell::Int(i64::from(b)))
        } else if *ty == Type::BYTEA {
            row.try_get::<_, Option<Vec<u8>>>(i)?
                .map_or(Cell::Null, Cell::Bytes)
        } else {
            row.try_get::<_, Option<String>>(i)?
                .map_or(Cell::Null, Cell::Text)
        })
    };
    row.columns()
        .iter()
        .enumerate()
        .map(|(i, column)| cell(i, column.type_()).map_err(backend))
        .collect()
}

/// `sql` prepared on `db`'s connection, once.
fn statement(
    db: &mut impl GenericClient,
    prepared: &mut Prepared,
    sql: &str,
) -> Result<postgres::Statement, StoreError> {
    if let Some(statement) = prepared.get(sql) {
        return Ok(statement.clone());
    }
    let statement = db.prepare(&dollars(sql)).map_err(backend)?;
    prepared.insert(sql.to_string(), statement.clone());
    Ok(statement)
}

fn execute(
    db: &mut impl GenericClient,
    prepared: &mut Prepared,
    sql: &str,
    values: &[Value<'_>],
) -> Result<u64, StoreError> {
    let statement = statement(db, prepared, sql)?;
    db.execute(&statement, &params(values)).map_err(backend)
}

fn query(
    db: &mut impl GenericClient,
    prepared: &mut Prepared,
    sql: &str,
    values: &[Value<'_>],
) -> Result<Vec<Vec<Cell>>, StoreError> {
    let statement = statement(db, prepared, sql)?;
    let rows = db.query(&statement, &params(values)).map_err(backend)?;
    rows.iter().map(cells).collect()
}

/// Statements inside a transaction, prepared once on its connection.
struct InTransaction<'t, 'c> {
    tx: postgres::Transaction<'c>,
    prepared: &'t mut Prepared,
}

impl Sql for InTransaction<'_, '_> {
    fn execute(&mut self, sql: &str, values: &[Value<'_>]) -> Result<u64, StoreError> {
        execute(&mut self.tx, self.prepared, sql, values)
    }

    fn query(&mut self, sql: &str, values: &[Value<'_>]) -> Result<Vec<Vec<Cell>>, StoreError> {
        query(&mut self.tx, self.prepared, sql, values)
    }
}

/// Statements outside a transaction: each is one on its own.
impl Sql for Postgres {
    fn execute(&mut self, sql: &str, values: &[Value<'_>]) -> Result<u64, StoreError> {
        let result = self.client().map(|_| ());
        let result = result.and_then(|()| execute(&mut self.db, &mut self.prepared, sql, values));
        self.noting(result)
    }

    fn query(&mut self, sql: &str, values: &[Value<'_>]) -> Result<Vec<Vec<Cell>>, StoreError> {
        let result = self.client().map(|_| ());
        let result = result.and_then(|()| query(&mut self.db, &mut self.prepared, sql, values));
        self.noting(result)
    }
}

impl sql::Connection for Postgres {
    fn read_only(&self) -> bool {
        self.read_only
    }

    fn commit(&mut self, w: &sql::Write<'_>) -> Result<Cas, StoreError> {
        let kinds: Vec<&str> = w.history.iter().map(|h| h.kind).collect();
        let fps: Vec<&str> = w.history.iter().map(|h| h.fp.as_str()).collect();
        let args: Vec<Option<&str>> = w.history.iter().map(|h| h.args.as_deref()).collect();
        let committed: Vec<bool> = w.history.iter().map(|h| h.committed).collect();
        let (answer, request) = match &w.answered {
            Some((answer, id)) => (Some(answer.as_str()), Some(*id)),
            None => (None, None),
        };
        let mut values = params(&w.moved);
        let line = params(&w.line[2..]);
        values.extend(line);
        values.extend([
            &kinds as &(dyn ToSql + Sync),
            &fps,
            &args,
            &committed,
            &answer,
            &request,
        ]);
        let result = (|| {
            self.client()?;
            let statement = statement(&mut self.db, &mut self.prepared, COMMIT)?;
            match self.db.query_one(&statement, &values) {
                Ok(row) => Ok(if row.try_get::<_, bool>(0).map_err(backend)? {
                    Cas::Done
                } else {
                    Cas::Conflict
                }),
                Err(e)
                    if e.as_db_error()
                        .is_some_and(|db| db.code().code() == ANSWERED_ALREADY) =>
                {
                    Ok(Cas::Conflict) // answered already: the whole call rolled back
                }
                Err(e) => Err(backend(e)),
            }
        })();
        self.noting(result)
    }

    fn transaction(
        &mut self,
        work: &mut dyn FnMut(&mut dyn Sql) -> Result<Cas, StoreError>,
    ) -> Result<Cas, StoreError> {
        let result = (|| {
            self.client()?;
            let tx = self.db.transaction().map_err(backend)?;
            let mut tx = InTransaction {
                tx,
                prepared: &mut self.prepared,
            };
            let cas = work(&mut tx)?;
            if cas == Cas::Done {
                tx.tx.commit().map_err(backend)?;
            }
            Ok(cas) // on a conflict, dropping the transaction rolls it back
        })();
        self.noting(result)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_postgres_would_shorten_or_owns_are_refused() {
        assert!(check_schema("torture").is_ok());
        assert!(check_schema(&"a".repeat(63)).is_ok());
        let long = check_schema(&"a".repeat(64)).unwrap_err();
        assert!(long.contains("64 bytes"), "{long}");
        for bad in [
            "information_schema",
            "pg_catalog",
            "public",
            "Caps",
            "9lives",
            "a-b",
            "",
        ] {
            assert!(check_schema(bad).is_err(), "{bad}");
        }
    }
}
