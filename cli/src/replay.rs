//! `resumable replay FILE`: run a scenario through the kernel and print the trace.
//!
//! Exit status: 0 when the scenario ran (rejections are ordinary trace content), 1 when a
//! step's verdict differs from the `expect` the scenario wrote for it, 2 when the scenario
//! cannot be read or is malformed (one line on stderr: `error: FILE:LINE[:COL]: what`).

use clap::ValueEnum;
use resumable_conformance::{audit, scenario, trace};
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
    /// Also write the run's audit log (JSON lines, spec/audit-log.md) to this file:
    /// every input with the kernel's verdict, refused attempts included, digest-chained.
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
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
    if let Some(path) = &args.audit_log {
        if let Err(e) = write_audit_log(path, &trace) {
            return fail(&format!(
                "{}: cannot write the audit log: {e}",
                path.display()
            ));
        }
    }
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

/// Writes the trace's inputs and verdicts as an audit log, through the same writer a runtime
/// would use, so `validate` can check what `replay` wrote.
fn write_audit_log(path: &std::path::Path, trace: &trace::Trace) -> std::io::Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let header = audit::RunHeader {
        identity: *trace.initial.identity(),
        policy: *trace.initial.policy(),
        created_at: trace.initial.updated_at(),
    };
    let mut writer = audit::Writer::new(file, &header)?;
    for step in &trace.steps {
        // The writer steps its own copy of the run, so the log holds the kernel's verdicts;
        // a rejection is a record like any other, not an error.
        let _verdict = writer.step(&step.input)?;
    }
    writer.into_inner()?.flush()
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}
