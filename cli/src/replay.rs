//! `resumable replay FILE`: run a scenario through the kernel and print the trace.
//!
//! The scenario is streamed: one line is read, run and printed at a time, so memory stays flat
//! however long the input, and a line is bounded (an endless one, `/dev/zero`, is refused at
//! once). Exit status: 0 when the scenario ran (rejections are ordinary trace content), 1 when
//! a step's verdict differs from the `expect` the scenario wrote for it, 2 when the scenario
//! cannot be read or is malformed (`error: FILE:LINE[:COL]: what` on stderr; the steps before
//! the bad line have been printed), or when the trace or the audit log cannot be written. A
//! reader that goes away (`| head`) ends the replay quietly. In `--format json` every error is
//! one JSON object on stderr.

use crate::output::{self, status, Error, Format, Out};
use resumable_audit as audit;
use resumable_conformance::scenario::{self, Header, ScenarioError};
use resumable_conformance::trace::{self, Replayer, TraceStep};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `replay`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario file (JSON lines, see spec/scenario-format.md), or `-` for stdin.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the run's audit log (JSON lines, spec/audit-log.md) to this file:
    /// every input with the kernel's verdict, refused attempts included, every line sealed.
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// Seal the audit log with this key (a file holding 64 hex digits): HMAC-SHA-256.
    #[arg(long, value_name = "FILE", requires = "audit_log")]
    pub key_file: Option<PathBuf>,
    /// Write the audit log's anchor ({"records": N, "mac": "..."}) to this file at the end:
    /// what a runtime stores with its run, for `validate --anchor`.
    #[arg(long, value_name = "FILE", requires = "audit_log")]
    pub audit_anchor: Option<PathBuf>,
}

/// Why a replay stopped early.
enum Stop {
    /// An error to report (exit 2).
    Error(Error),
    /// Standard output stopped.
    Output(output::Ended),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop::Error(e)
    }
}

impl From<output::Ended> for Stop {
    fn from(e: output::Ended) -> Stop {
        Stop::Output(e)
    }
}

/// A malformed scenario as an error: `FILE:LINE[:COL]: what`.
fn malformed(name: &str, e: &ScenarioError) -> Error {
    let mut error = Error::new("malformed", format!("{name}:{e}"))
        .with("file", name)
        .with("line", e.line)
        .with("what", e.message.clone());
    if let Some(c) = e.column {
        error = error.with("column", c);
    }
    error
}

/// Runs the command and returns its exit status.
pub fn run(args: &Args) -> ExitCode {
    let stdin = args.file.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        args.file.display().to_string()
    };
    let input: Box<dyn BufRead> = if stdin {
        Box::new(std::io::stdin().lock())
    } else {
        match File::open(&args.file) {
            Ok(f) => Box::new(BufReader::with_capacity(64 * 1024, f)),
            Err(e) => {
                let message = format!("{name}: cannot read: {e}");
                return output::fail(args.format, &Error::new("cannot_read", message));
            }
        }
    };
    let mut replay = Replay {
        name,
        format: args.format,
        out: Out::stdout(),
        unmet: 0,
    };
    match replay.stream(input, args) {
        Ok(()) => replay.status(),
        Err(Stop::Error(e)) => {
            // Show what was printed before the error, then the error.
            let _ = replay.out.flush();
            output::fail(args.format, &e)
        }
        Err(Stop::Output(why)) => output::ended(args.format, why, "the trace", replay.status()),
    }
}

/// A replay under way: where it prints, and how many verdicts differed from the scenario's.
struct Replay {
    name: String,
    format: Format,
    out: Out,
    unmet: u64,
}

impl Replay {
    fn status(&self) -> ExitCode {
        if self.unmet > 0 {
            ExitCode::from(status::FAIL)
        } else {
            ExitCode::SUCCESS
        }
    }

    fn stream(&mut self, input: Box<dyn BufRead>, args: &Args) -> Result<(), Stop> {
        let mut reader = scenario::Reader::new(input);
        let (header, header_line) = reader.header().map_err(|e| malformed(&self.name, &e))?;
        let mut replayer = Replayer::new(&header).map_err(|e| malformed(&self.name, &e))?;
        let initial = *replayer.run();
        let mut log = AuditLog::open(args, &header)?;
        let (mut steps, mut accepted) = (0usize, 0usize);
        while let Some(step) = reader.next_step().map_err(|e| malformed(&self.name, &e))? {
            let s = replayer
                .step(&step)
                .map_err(|e| malformed(&self.name, &e))?;
            if steps == 0 && self.format == Format::Text {
                self.out
                    .write(trace::header_text(&header, &initial).as_bytes())?;
            }
            steps += 1;
            accepted += usize::from(s.verdict.is_ok());
            self.print(&header, &s)?;
            if let Some(log) = &mut log {
                log.record(&s)?;
            }
        }
        if steps == 0 {
            return Err(malformed(&self.name, &scenario::no_inputs(header_line)).into());
        }
        if self.format == Format::Text {
            let unmet = usize::try_from(self.unmet).unwrap_or(usize::MAX);
            let footer = trace::footer_text(steps, accepted, unmet, replayer.run());
            self.out.write(footer.as_bytes())?;
        }
        if let Some(log) = log {
            log.finish()?;
        }
        Ok(self.out.flush()?)
    }

    /// Prints one step, and reports on stderr a verdict that differs from the scenario's.
    fn print(&mut self, header: &Header, s: &TraceStep) -> Result<(), Stop> {
        match self.format {
            Format::Text => self.out.write(s.to_text().as_bytes())?,
            Format::Json => {
                let line = s.to_json_line(&header.scenario).map_err(|e| {
                    Error::new(
                        "cannot_write",
                        format!("cannot write the trace as JSON: {e}"),
                    )
                })?;
                self.out.write(line.as_bytes())?;
            }
        }
        if s.met() == Some(false) {
            self.unmet += 1;
            let what = format!(
                "{}:{}: step {} expected {}, the kernel answered {}",
                self.name,
                s.line,
                s.number,
                s.expect.as_deref().unwrap_or(""),
                s.verdict_name()
            );
            let report = match self.format {
                Format::Text => format!("unexpected: {what}\n"),
                Format::Json => {
                    let report = serde_json::json!({ "unexpected": what, "line": s.line });
                    format!("{report}\n")
                }
            };
            let _ = std::io::stderr().write_all(report.as_bytes());
        }
        Ok(())
    }
}

/// The audit log `replay --audit-log` writes as it goes, through the same writer a runtime
/// would use, so `validate` can check what `replay` wrote.
struct AuditLog {
    path: PathBuf,
    writer: audit::Writer<BufWriter<File>>,
    anchor: Option<PathBuf>,
}

fn cannot_write(path: &Path, e: impl std::fmt::Display) -> Error {
    let message = format!("{}: cannot write the audit log: {e}", path.display());
    Error::new("cannot_write", message)
}

impl AuditLog {
    fn open(args: &Args, header: &Header) -> Result<Option<AuditLog>, Stop> {
        let Some(path) = &args.audit_log else {
            return Ok(None);
        };
        let key = match &args.key_file {
            Some(k) => Some(crate::validate::key(k)?),
            None => None,
        };
        let file = File::create(path).map_err(|e| cannot_write(path, e))?;
        let spec = &header.run;
        let head = audit::Header {
            run: audit::RunHeader {
                identity: spec.identity(),
                policy: spec.policy(),
                created_at: spec.created_at,
            },
            // A scenario declares no tool policy; the report says what that leaves unchecked.
            tools: None,
        };
        let writer = audit::Writer::new(BufWriter::new(file), &head, key.as_ref())
            .map_err(|e| cannot_write(path, e))?;
        let anchor = args.audit_anchor.clone();
        Ok(Some(AuditLog {
            path: path.clone(),
            writer,
            anchor,
        }))
    }

    fn record(&mut self, s: &TraceStep) -> Result<(), Stop> {
        // The writer steps its own copy of the run, so the log holds the kernel's verdicts;
        // a rejection is a record like any other, not an error.
        let _verdict = (self.writer.step(&s.input)).map_err(|e| cannot_write(&self.path, e))?;
        Ok(())
    }

    fn finish(self) -> Result<(), Stop> {
        let anchor = self.writer.anchor();
        let mut file = (self.writer.into_inner()).map_err(|e| cannot_write(&self.path, e))?;
        file.flush().map_err(|e| cannot_write(&self.path, e))?;
        if let Some(path) = &self.anchor {
            std::fs::write(path, anchor.to_json()).map_err(|e| {
                let message = format!("{}: cannot write the anchor: {e}", path.display());
                Error::new("cannot_write", message)
            })?;
        }
        Ok(())
    }
}
