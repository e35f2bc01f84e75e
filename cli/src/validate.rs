//! `resumable validate FILE`: check a runtime's audit log against the kernel and the safety
//! properties (format: spec/audit-log.md).
//!
//! The log is streamed, in constant memory, and the first finding stops it. The report goes
//! to stdout, as text or as one JSON object; only a file that cannot be opened is reported on
//! stderr. Exit status: 0 conforming, 1 divergence or violated property, 2 malformed input
//! (or a file that cannot be read).

use clap::ValueEnum;
use resumable_conformance::audit;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// How the report is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A line for people (and the kernel's and the log's verdicts on a divergence).
    Text,
    /// One JSON object: file, status, exit_code, and the summary or the finding.
    Json,
}

/// Arguments of `validate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The audit log (JSON lines, see spec/audit-log.md), or `-` for stdin.
    pub file: PathBuf,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs the command and returns its exit status.
pub fn run(args: &Args) -> ExitCode {
    let stdin = args.file.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        args.file.display().to_string()
    };
    let options = audit::Options::default();
    let result = if stdin {
        audit::validate(std::io::stdin().lock(), &options)
    } else {
        match std::fs::File::open(&args.file) {
            Ok(file) => audit::validate(BufReader::new(file), &options),
            Err(e) => {
                eprintln!("error: {name}: cannot read: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let report = match args.format {
        Format::Text => audit::report_text(&name, &result),
        Format::Json => audit::report_json(&name, &result),
    };
    // A closed pipe (`| head`) is not worth a panic; the exit status still tells the verdict.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(report.as_bytes())
        .and_then(|()| stdout.flush());
    match &result {
        Ok(_) => ExitCode::SUCCESS,
        Err(finding) => ExitCode::from(finding.exit_code()),
    }
}
