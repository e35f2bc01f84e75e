//! What every command does with its output and its errors, in one place:
//!
//! - output goes through [`Out`], buffered; a reader that goes away (a closed pipe, EPIPE:
//!   `resumable replay big.jsonl | head`) ends the command quietly, with no message;
//! - any other write failure (a full disk, ENOSPC) is an error: one message on stderr and exit
//!   status 2, never a silent success;
//! - an error is one line on stderr, `error: MESSAGE`, or in `--format json` one JSON object
//!   on stderr: `{"error": {"problem": NAME, "message": ..., ...}, "exit_code": 2}`.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe is an `io::Error` here, never a signal.

use clap::ValueEnum;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

/// The exit statuses the commands share (the README's table says what each means per
/// command).
pub mod status {
    /// Done, and the answer is yes: the check passed, the log conforms, the request was
    /// accepted.
    pub const PASS: u8 = 0;
    /// Done, and the answer is no: a property is violated, the log diverges, a verdict
    /// differs, the request was refused.
    pub const FAIL: u8 = 1;
    /// Not done: the command was misused, its input is malformed, or its output was lost.
    pub const MISUSE: u8 = 2;
    /// Not done yet: no answer came in time. (`check`'s 3, incomplete, and 4, unexercised,
    /// are its outcome's, `Outcome::exit_code`.)
    pub const INCOMPLETE: u8 = 3;
}

/// How a command prints its result and its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text for people.
    Text,
    /// JSON for programs; every error is JSON too.
    Json,
}

/// Why output stopped.
#[derive(Debug)]
pub enum Ended {
    /// The reader went away: stop quietly.
    Closed,
    /// Writing failed: report it, exit 2.
    Failed(io::Error),
}

impl From<io::Error> for Ended {
    fn from(e: io::Error) -> Ended {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Ended::Closed
        } else {
            Ended::Failed(e)
        }
    }
}

/// Standard output, buffered, with write errors classified.
pub struct Out {
    inner: BufWriter<io::StdoutLock<'static>>,
}

impl Out {
    /// Standard output.
    pub fn stdout() -> Out {
        Out {
            inner: BufWriter::with_capacity(64 * 1024, io::stdout().lock()),
        }
    }

    /// Writes `bytes` (buffered).
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Ended> {
        self.inner.write_all(bytes).map_err(Ended::from)
    }

    /// Writes out everything buffered.
    pub fn flush(&mut self) -> Result<(), Ended> {
        self.inner.flush().map_err(Ended::from)
    }
}

/// An error a command reports: a stable name, a message, and fields a program may read.
#[derive(Debug)]
pub struct Error {
    /// A stable snake_case name: `cannot_read`, `cannot_write`, `malformed`, `misuse`...
    pub problem: &'static str,
    /// One sentence, with the file and position where there are some.
    pub message: String,
    /// More fields for the JSON form (`file`, `line`, `column`...).
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl Error {
    /// An error without fields.
    pub fn new(problem: &'static str, message: impl Into<String>) -> Error {
        Error {
            problem,
            message: message.into(),
            fields: serde_json::Map::new(),
        }
    }

    /// The error with one more field for the JSON form.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Error {
        self.fields.insert(key.into(), value.into());
        self
    }

    /// The error as one JSON object on one line.
    pub fn to_json(&self) -> String {
        let mut error = self.fields.clone();
        error.insert("problem".into(), self.problem.into());
        error.insert("message".into(), self.message.clone().into());
        let report = serde_json::json!({ "error": error, "exit_code": 2 });
        format!("{report}\n")
    }
}

/// Reports `error` on stderr in `format` and returns exit status 2.
pub fn fail(format: Format, error: &Error) -> ExitCode {
    let text = match format {
        Format::Text => format!("error: {}\n", error.message),
        Format::Json => error.to_json(),
    };
    // If stderr is gone too, there is no one left to tell.
    let _ = io::stderr().write_all(text.as_bytes());
    ExitCode::from(status::MISUSE)
}

/// What a command does when its output stopped: quietly return `quiet` when the reader went
/// away, or report the write failure and return 2.
pub fn ended(format: Format, why: Ended, what: &str, quiet: ExitCode) -> ExitCode {
    match why {
        Ended::Closed => quiet,
        Ended::Failed(e) => fail(
            format,
            &Error::new("cannot_write", format!("cannot write {what}: {e}")),
        ),
    }
}

/// Writes `text` to standard output at once.
pub fn print(text: &str) -> Result<(), Ended> {
    let mut out = Out::stdout();
    out.write(text.as_bytes())?;
    out.flush()
}

/// A line on standard error (progress, a note), ignoring failure: there is nowhere left to
/// report it.
pub fn note(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// Prints a command's whole report and returns `status`; `status` all the same when the
/// reader went away (the verdict does not depend on who reads it); 2 when the report is lost.
pub fn finish(format: Format, text: &str, status: u8) -> ExitCode {
    match print(text) {
        Ok(()) => ExitCode::from(status),
        Err(why) => ended(format, why, "the report", ExitCode::from(status)),
    }
}

/// Prints one line of a runtime command's answer. A reader that went away loses only the
/// line; a failed write (a full disk) is reported on stderr and is exit status 2, never a
/// silent success: the caller returns the `Err`.
pub fn say(line: &str) -> Result<(), ExitCode> {
    match print(&format!("{line}\n")) {
        Ok(()) | Err(Ended::Closed) => Ok(()),
        Err(Ended::Failed(e)) => Err(fail(
            Format::Text,
            &Error::new("cannot_write", format!("cannot write the answer: {e}")),
        )),
    }
}
