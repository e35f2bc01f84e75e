//! `resumable replay FILE`: run a scenario through the kernel and print the trace.
//!
//! Exit status: 0 when the scenario ran (rejections are ordinary trace content), 1 when a
//! step's verdict differs from the `expect` the scenario wrote for it, 2 when the scenario
//! cannot be read or is malformed (one line on stderr: `error: FILE:LINE[:COL]: what`).

use clap::ValueEnum;
use resumable_conformance::{scenario, trace};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// How the trace is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Numbered steps for people.
    Text,
    /// One JSON object per step (schema in spec/scenario-format.md).
    Json,
}

/// Arguments of `replay`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario file (JSON lines, see spec/scenario-format.md), or `-` for stdin.
    pub file: PathBuf,
    /// Output format.
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
    let bytes = if stdin {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).map(|_| buf)
    } else {
        std::fs::read(&args.file)
    };
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => return fail(&format!("{name}: cannot read: {e}")),
    };
    let trace = match scenario::parse(&bytes).and_then(|s| trace::replay(&s)) {
        Ok(t) => t,
        Err(e) => return fail(&format!("{name}:{e}")),
    };
    let out = match args.format {
        Format::Text => trace.to_text(),
        Format::Json => match trace.to_json_lines() {
            Ok(s) => s,
            Err(e) => return fail(&format!("{name}: cannot write the trace as JSON: {e}")),
        },
    };
    // A closed pipe (`| head`) is not an error worth a panic: stop quietly.
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::SUCCESS;
    }
    let unmet: Vec<String> = trace
        .unmet()
        .map(|s| {
            format!(
                "{name}:{}: step {} expected {}, the kernel answered {}",
                s.line,
                s.number,
                s.expect.as_deref().unwrap_or(""),
                s.verdict_name()
            )
        })
        .collect();
    if unmet.is_empty() {
        ExitCode::SUCCESS
    } else {
        for line in unmet {
            eprintln!("unexpected: {line}");
        }
        ExitCode::from(1)
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}
