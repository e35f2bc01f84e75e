//! `resumable validate FILE`: check a runtime's audit log against the kernel and the safety
//! properties (format: spec/audit-log.md).
//!
//! The log is streamed, in constant memory, and the first finding stops it. With
//! `--key-file`, every line's MAC must verify under the run's key; with `--anchor`, the log
//! must end exactly where the runtime's stored anchor says. The report goes to stdout, as text
//! or as one JSON object, and says what the validation could not prove (no key, no anchor, no
//! tool policy). Exit status: 0 conforming, 1 divergence or violated property, 2 malformed
//! input, a file that cannot be read, a bad key or anchor, or output that cannot be written,
//! 3 not judged (the log, or its tail, was written under rules this validator does not judge:
//! its chain, numbers, revisions and anchor were checked, its verdicts were not).
//! In `--format json` every error is one JSON object on stdout.

use crate::output::{self, status, Error, Format, Out};
use resumable_audit::{self as audit, Anchor, Key};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `validate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The audit log (JSON lines, see spec/audit-log.md), or `-` for stdin.
    pub file: PathBuf,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The run's audit key: a file holding 64 hex digits. Every line's MAC must verify under
    /// it; a log it did not seal, or an unkeyed one, is a divergence.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// The anchor the runtime stored with the run: `RECORDS:MAC` (a count, a colon, 64 hex
    /// digits), or the path of an anchor file holding {"records": N, "mac": "..."}. The log
    /// must end exactly there: a cut tail or an edited last line is a divergence.
    #[arg(long, value_name = "ANCHOR")]
    pub anchor: Option<String>,
}

/// The longest key or anchor file read: both are well under 200 bytes.
const SMALL_FILE_BYTES: u64 = 4096;

fn read_small(path: &Path, what: &str) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    let file = std::fs::File::open(path).map_err(|e| {
        Error::new(
            "cannot_read",
            format!("{}: cannot read the {what}: {e}", path.display()),
        )
    })?;
    file.take(SMALL_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::new("cannot_read", format!("{}: {e}", path.display())))?;
    if bytes.len() as u64 > SMALL_FILE_BYTES {
        let message = format!("{}: longer than a {what} can be", path.display());
        return Err(Error::new("misuse", message));
    }
    Ok(bytes)
}

/// Reads a key file: 64 hex digits, within a few bytes (`/dev/zero` is refused at once).
pub(crate) fn key(path: &Path) -> Result<Key, Error> {
    let bytes = read_small(path, "key file")?;
    let text = String::from_utf8_lossy(&bytes);
    Key::from_hex(&text).map_err(|e| Error::new("misuse", format!("{}: {e}", path.display())))
}

/// `RECORDS:MAC`, or else the path of an anchor file.
fn anchor(value: &str) -> Result<Anchor, Error> {
    if let Ok(anchor) = value.parse::<Anchor>() {
        return Ok(anchor);
    }
    let path = Path::new(value);
    if !path.exists() && value.contains(':') {
        let why = value.parse::<Anchor>().err().unwrap_or_default();
        return Err(Error::new("misuse", format!("--anchor {value:?}: {why}")));
    }
    let bytes = read_small(path, "anchor file")?;
    Anchor::from_json(&bytes).map_err(|e| Error::new("misuse", format!("{value}: {e}")))
}

/// Runs the command and returns its exit status.
pub fn run(args: &Args) -> ExitCode {
    let stdin = args.file.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        args.file.display().to_string()
    };
    let options = match options(args) {
        Ok(options) => options,
        Err(e) => return fail(args.format, &e),
    };
    let result = if stdin {
        audit::validate(std::io::stdin().lock(), &options)
    } else {
        match std::fs::File::open(&args.file) {
            Ok(file) => audit::validate(BufReader::with_capacity(64 * 1024, file), &options),
            Err(e) => {
                let message = format!("{name}: cannot read: {e}");
                return fail(
                    args.format,
                    &Error::new("cannot_read", message).with("file", name),
                );
            }
        }
    };
    let report = match args.format {
        Format::Text => audit::report_text(&name, &result),
        Format::Json => audit::report_json(&name, &result),
    };
    let status = match &result {
        Ok(summary) => ExitCode::from(summary.exit_code()),
        Err(finding) => ExitCode::from(finding.exit_code()),
    };
    // A closed pipe (`| head`) ends quietly; the exit status still tells the verdict.
    let mut out = Out::stdout();
    match out.write(report.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => status,
        Err(why) => output::ended(args.format, why, "the report", status),
    }
}

fn options(args: &Args) -> Result<audit::Options, Error> {
    Ok(audit::Options {
        key: args.key_file.as_deref().map(key).transpose()?,
        anchor: args.anchor.as_deref().map(anchor).transpose()?,
        ..audit::Options::default()
    })
}

/// In JSON, an error goes where the report would: one object on stdout. In text, on stderr.
fn fail(format: Format, error: &Error) -> ExitCode {
    match format {
        Format::Text => output::fail(format, error),
        Format::Json => {
            let mut out = Out::stdout();
            match out
                .write(error.to_json().as_bytes())
                .and_then(|()| out.flush())
            {
                Ok(()) => ExitCode::from(status::MISUSE),
                Err(why) => {
                    output::ended(format, why, "the report", ExitCode::from(status::MISUSE))
                }
            }
        }
    }
}
