//! `resumable digest FILE|-`: the argument digest of one JSON document, SHA-256 over its
//! RFC 8785 (JCS) canonical form, in hex: what an approval binds (spec APR-1), computed
//! without any library so that an approver's tooling agrees with the runtime byte for byte.
//!
//! The document is read whole, up to [`MAX_DOCUMENT_BYTES`] (a longer one is refused after
//! that much, never read whole). Exit status: 0 printed, 2 the file cannot be read, is not
//! UTF-8, is not one JSON value, or holds what RFC 8785 cannot canonicalise (a repeated name,
//! a lone surrogate, an integer beyond 2^53 - 1, a number beyond a double), with the byte
//! offset. In `--format json` the answer is `{"digest": HEX, "canonical": TEXT}` and every
//! error one JSON object on stderr.

use crate::output::{self, status, Error, Format};
use resumable_audit::jcs;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

/// The longest document read: arguments are small; 16 MiB leaves room and bounds memory.
pub const MAX_DOCUMENT_BYTES: u64 = 16 * 1024 * 1024;

/// Arguments of `digest`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The JSON document, or `-` for stdin.
    pub file: PathBuf,
    /// Output format: the hex digest alone, or a JSON object with the canonical form too.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// Runs the command and returns its exit status.
pub fn run(args: &Args) -> ExitCode {
    match answer(args) {
        Ok(text) => output::finish(args.format, &text, status::PASS),
        Err(e) => output::fail(args.format, &e),
    }
}

fn answer(args: &Args) -> Result<String, Error> {
    let stdin = args.file.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        args.file.display().to_string()
    };
    let cannot_read =
        |e: std::io::Error| Error::new("cannot_read", format!("{name}: cannot read: {e}"));
    let reader: Box<dyn Read> = if stdin {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(&args.file).map_err(cannot_read)?)
    };
    let mut bytes = Vec::new();
    (reader.take(MAX_DOCUMENT_BYTES + 1).read_to_end(&mut bytes)).map_err(cannot_read)?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        let message = format!("{name}: longer than {MAX_DOCUMENT_BYTES} bytes; not read further");
        return Err(Error::new("malformed", message).with("file", name));
    }
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let message = format!("{name}: at byte {}: not UTF-8 text", e.valid_up_to());
        Error::new("malformed", message)
            .with("file", name.clone())
            .with("offset", e.valid_up_to())
    })?;
    let canonical = jcs::canonical(text).map_err(|e| {
        Error::new("malformed", format!("{name}: {e}"))
            .with("file", name.clone())
            .with("offset", e.offset)
            .with("what", e.what.clone())
    })?;
    let digest = resumable_kernel::Digest::of(canonical.as_bytes());
    Ok(match args.format {
        Format::Text => format!("{digest}\n"),
        Format::Json => {
            let report =
                serde_json::json!({ "digest": digest.to_string(), "canonical": canonical });
            format!("{report}\n")
        }
    })
}
