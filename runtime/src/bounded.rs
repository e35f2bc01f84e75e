//! Bounded reads: every file and socket this runtime reads goes through here, with a limit
//! on how many bytes it takes in, so that `/dev/zero` given as a key file or a line without
//! end sent to the tool service is refused after the limit, never read into memory whole.

use std::io::{self, BufRead, Read};
use std::path::Path;

/// Most bytes of a key file: 64 hex digits and a line ending, with room to spare.
pub const KEY_FILE_BYTES: u64 = 1024;

/// Most bytes of a checkpoint file (`approve --checkpoint`): a checkpoint's JSON is a few
/// kilobytes (names of at most 64 bytes, digests, no lists).
pub const CHECKPOINT_FILE_BYTES: u64 = 64 * 1024;

/// Most bytes of one line of the tool service's protocol (a request or a reply) or of its
/// ledger: a tool name, a key, an attempt and a digest take a few hundred bytes.
pub const TOOL_LINE_BYTES: usize = 16 * 1024;

/// Reads the whole of the file at `path` if it holds at most `max` bytes; a longer one (or
/// one without end, such as `/dev/zero`) is an error that says so, after reading `max + 1`
/// bytes of it.
pub fn read_file(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("longer than {max} bytes"),
        ));
    }
    Ok(bytes)
}

/// What [`read_line`] found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Line {
    /// A whole line, its LF included, now in the buffer.
    Whole,
    /// The input ended after these bytes without a LF (now in the buffer); 0: it had ended.
    Cut(usize),
}

/// Reads one line (up to and including its LF) into `buf`, cleared first, taking at most
/// `max` bytes: a longer line is an error (`InvalidData`), read no further than `max + 1`
/// bytes.
pub fn read_line(reader: &mut impl BufRead, max: usize, buf: &mut Vec<u8>) -> io::Result<Line> {
    buf.clear();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    reader.by_ref().take(limit).read_until(b'\n', buf)?;
    if buf.last() == Some(&b'\n') {
        if buf.len() > max {
            return Err(too_long(max));
        }
        return Ok(Line::Whole);
    }
    if buf.len() > max {
        return Err(too_long(max));
    }
    Ok(Line::Cut(buf.len()))
}

fn too_long(max: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a line longer than {max} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_end_is_refused_after_the_limit() {
        let e = read_file(Path::new("/dev/zero"), 100).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("longer than 100 bytes"), "{e}");
    }

    #[test]
    fn a_line_without_end_is_refused_after_the_limit() {
        let mut zero = io::BufReader::new(std::fs::File::open("/dev/zero").unwrap());
        let mut buf = Vec::new();
        let e = read_line(&mut zero, 1000, &mut buf).unwrap_err();
        assert!(e.to_string().contains("longer than 1000 bytes"), "{e}");
        assert_eq!(buf.len(), 1001);
    }

    #[test]
    fn lines_are_read_whole_and_a_last_one_without_lf_is_cut() {
        let mut input: &[u8] = b"ab\ncd";
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut input, 3, &mut buf).unwrap(), Line::Whole);
        assert_eq!(buf, b"ab\n");
        assert_eq!(read_line(&mut input, 3, &mut buf).unwrap(), Line::Cut(2));
        assert_eq!(read_line(&mut input, 3, &mut buf).unwrap(), Line::Cut(0));
        let mut long: &[u8] = b"abcd\n";
        assert!(read_line(&mut long, 3, &mut buf).is_err());
    }
}
