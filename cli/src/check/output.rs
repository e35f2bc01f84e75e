//! Writing to stdout without panicking: a reader that closes the pipe early (`check | head
//! -1`) ends the command quietly, and a write that fails otherwise (a full disk, `>
//! /dev/full`) is reported on stderr with exit status 2.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with `BrokenPipe`, and `print!`
//! panics on any failed write; every write of `check` goes through here instead.

use std::io::{self, Write};
use std::process::ExitCode;

/// Why stdout could not take the text.
pub enum Failed {
    /// The reader closed the pipe: nobody is reading, so stop quietly.
    Closed,
    /// Anything else: the output is lost, which the user must hear about.
    Error(io::Error),
}

/// Writes `text` to stdout and flushes it.
pub fn write(text: &str) -> Result<(), Failed> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => Failed::Closed,
            _ => Failed::Error(e),
        })
}

/// Writes a line to stderr, ignoring failure: there is nowhere left to report it.
pub fn note(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// Writes `text` and returns `status`; or, when the pipe is closed, `status` all the same
/// (the verdict does not depend on who reads it); or 2 when the output is lost.
pub fn finish(text: &str, status: u8) -> ExitCode {
    match write(text) {
        Ok(()) | Err(Failed::Closed) => ExitCode::from(status),
        Err(Failed::Error(e)) => {
            note(&format!("resumable check: cannot write the output: {e}"));
            ExitCode::from(2)
        }
    }
}
