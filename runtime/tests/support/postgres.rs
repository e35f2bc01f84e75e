//! Sessions a test names and ends, as a restart of the PostgreSQL server ends its clients'.
//! Shared with the command line's tests (`cli/tests/runtime.rs`), whose worker processes a
//! test names the same way.

use resumable_runtime::store::postgres::split_address;

/// `address` with its sessions named `name` (PostgreSQL's `application_name`), so that a test
/// can end its own sessions and no other test's.
pub fn named(address: &str, name: &str) -> String {
    let (conn, schema) = split_address(address);
    format!("{conn} application_name={name}#{schema}")
}

/// Ends every session named `name`, as a restart of the server does for its clients; asserts
/// that there was one.
pub fn terminate_sessions(address: &str, name: &str) {
    let (conn, _) = split_address(address);
    let mut admin = postgres::Client::connect(conn, postgres::NoTls).unwrap();
    let ended = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .unwrap();
    assert!(!ended.is_empty(), "no session named {name}");
}
