//! Commands run as a user runs them, for the tests of the command line and the runtime: a
//! binary fed its stdin, its output read as text, and a process in the background that stops
//! with the test.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `exe` with `args` and `stdin` written to it, and returns what it did.
pub fn run(exe: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    // Ignore a write error: a command that fails (or finds what it looks for) before it has
    // read its stdin closes the pipe.
    let _ = child.stdin.take().expect("stdin is piped").write_all(stdin);
    child.wait_with_output().expect("the binary finishes")
}

/// Bytes a command wrote, as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A command's exit status (-1 if a signal ended it), its stdout and its stderr.
pub fn report(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// Asserts that the command exited with `code` and that its stderr says `says`; the failure
/// message shows the whole of stderr.
pub fn assert_fails(out: &Output, code: i32, says: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(err.contains(says), "stderr lacks {says:?}: {err}");
}

/// Asserts that the command exited with `code` and that its stderr starts with `start`.
pub fn assert_fails_starting(out: &Output, code: i32, start: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert!(
        err.starts_with(start),
        "stderr does not start {start:?}: {err}"
    );
}

/// A full disk to write to (Linux's `/dev/full`), where the system has one.
pub fn dev_full() -> Option<Stdio> {
    (std::fs::OpenOptions::new().write(true).open("/dev/full"))
        .ok()
        .map(Stdio::from)
}

/// Which of a process's outputs a test reads.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    /// Its standard output.
    Stdout,
    /// Its standard error.
    Stderr,
}

/// A process started for a test, killed when dropped (it would otherwise outlive the test).
pub struct Background(pub Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` with stdin closed, `stream` piped to the test and the other discarded:
/// the process and the lines it writes there.
pub fn start(command: &mut Command, stream: Stream) -> (Background, Lines) {
    let (out, err) = match stream {
        Stream::Stdout => (Stdio::piped(), Stdio::null()),
        Stream::Stderr => (Stdio::null(), Stdio::piped()),
    };
    let mut child = (command.stdin(Stdio::null()).stdout(out).stderr(err))
        .spawn()
        .expect("the binary starts");
    let reader: Box<dyn BufRead + Send> = match stream {
        Stream::Stdout => Box::new(BufReader::new(child.stdout.take().expect("piped"))),
        Stream::Stderr => Box::new(BufReader::new(child.stderr.take().expect("piped"))),
    };
    (Background(child), Lines(reader))
}

/// The lines a process started by [`start`] writes to the stream the test reads.
pub struct Lines(Box<dyn BufRead + Send>);

impl Lines {
    /// The next line, without its end; panics at the end of the stream.
    pub fn next_line(&mut self) -> String {
        let mut line = String::new();
        let read = self.0.read_line(&mut line).expect("the stream is readable");
        assert!(read > 0, "the process closed the stream before a line");
        line.trim_end().to_string()
    }

    /// Reads lines until one starts with `prefix`; whether one did before the stream ended.
    pub fn find(&mut self, prefix: &str) -> bool {
        (&mut self.0)
            .lines()
            .any(|l| l.is_ok_and(|l| l.starts_with(prefix)))
    }

    /// Collects lines, on a thread of their own, until `wanted` is in them or `within` has
    /// passed; returns what was seen.
    pub fn until(self, wanted: &str, within: Duration) -> String {
        let (tx, rx) = mpsc::channel();
        let reader = self.0;
        std::thread::spawn(move || {
            for line in reader.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let started = Instant::now();
        let mut seen = String::new();
        while started.elapsed() < within && !seen.contains(wanted) {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                seen.push_str(&line);
                seen.push('\n');
            }
        }
        seen
    }
}

/// Starts `command` in the background and reads its first line on stdout, which must be
/// `listening on ADDRESS`: the process and the address.
pub fn listening(command: &mut Command) -> (Background, String) {
    let (process, mut out) = start(command, Stream::Stdout);
    let line = out.next_line();
    let address = (line.strip_prefix("listening on "))
        .unwrap_or_else(|| panic!("not started: {line:?}"))
        .to_string();
    (process, address)
}
