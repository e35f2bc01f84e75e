//! The writer: one sealed line per input, chained to the line before.

use crate::chain::{Anchor, Chain, Key};
use crate::{verdict_of, Header, HeaderLine, Record, FORMAT, VERSION};
use resumable_kernel::RULES_VERSION;
use resumable_kernel::{step, Input, Rejection, Run, Transition};
use serde::Serialize;
use std::io::{self, Write};

/// Writes a version 2 audit log: the header, then one record per input, each line sealed with
/// its MAC (keyed with the run's audit key, or plain SHA-256 without one). It keeps the run it
/// describes, so it knows the revision and the attempt of a commit; its memory stays constant
/// however long the log grows.
///
/// Feed it inputs ([`Writer::step`] runs the kernel itself), or inputs with the answer the
/// kernel already gave on [`Writer::run`] ([`Writer::record`]).
///
/// A runtime that commits each record in its own store transaction stores [`Writer::anchor`]
/// with the run in that transaction, and after a restart continues the log with
/// [`Writer::resume`] from the stored run and anchor. The key is read from a file the runtime
/// holds and is never written anywhere by the writer.
pub struct Writer<W: Write> {
    out: W,
    run: Run,
    chain: Chain,
    seq: u64,
    object: Vec<u8>,
    line: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Starts a log for the run `header` describes, at revision 0, and writes the header. With
    /// `key`, every line is sealed with HMAC-SHA-256 under it and the header names its id.
    pub fn new(out: W, header: &Header, key: Option<&Key>) -> io::Result<Writer<W>> {
        let chain = Chain::new(key);
        let mut writer = Writer {
            out,
            run: (header.run.run()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            seq: 0,
            object: Vec::with_capacity(1024),
            line: Vec::with_capacity(1024),
            chain,
        };
        writer.write_line(&HeaderLine {
            format: FORMAT,
            version: VERSION,
            rules: Some(RULES_VERSION),
            chain: writer.chain.kind(),
            key_id: key.map(Key::id),
            run: header.run,
            tools: header.tools.clone(),
        })?;
        Ok(writer)
    }

    /// Goes on with a log that holds `anchor.records` records and ends with the line whose MAC
    /// is `anchor.mac`, for `run` as it is after those records: what a runtime does after a
    /// restart, from the run and the anchor it stored together. Writes nothing yet.
    pub fn resume(out: W, run: Run, key: Option<&Key>, anchor: Anchor) -> Writer<W> {
        Writer {
            out,
            run,
            chain: Chain::resume(key, anchor.mac),
            seq: anchor.records,
            object: Vec::with_capacity(1024),
            line: Vec::with_capacity(1024),
        }
    }

    /// Steps the log's run with `input`, records the verdict, and returns the kernel's answer.
    pub fn step(&mut self, input: &Input) -> io::Result<Result<Transition, Rejection>> {
        let result = step(&self.run, input);
        self.record(input, &result)?;
        Ok(result)
    }

    /// Records `input` with `result`, the kernel's answer for it on [`Writer::run`], and
    /// moves the run on when it was accepted. On a write error the record counts as not
    /// written: the run, the sequence and the anchor stay where they were.
    pub fn record(
        &mut self,
        input: &Input,
        result: &Result<Transition, Rejection>,
    ) -> io::Result<()> {
        let revision = match result {
            Ok(t) => t.next.revision(),
            Err(_) => self.run.revision(),
        };
        let record = Record {
            seq: self.seq + 1,
            revision,
            input: *input,
            verdict: verdict_of(&self.run, result),
        };
        let before = self.chain.clone();
        if let Err(e) = self.write_line(&record) {
            self.chain = before;
            return Err(e);
        }
        self.seq += 1;
        if let Ok(t) = result {
            self.run = t.next;
        }
        Ok(())
    }

    /// Writes a record whose verdict is `verdict`, whatever the kernel would say, at
    /// `revision`, without moving the run: what a forger does (see `forge`), never a runtime.
    /// Only the fixtures forge.
    #[cfg(feature = "fixtures")]
    pub(crate) fn claim(
        &mut self,
        input: &Input,
        revision: resumable_kernel::Revision,
        verdict: crate::Verdict,
    ) -> io::Result<()> {
        let record = Record {
            seq: self.seq + 1,
            revision,
            input: *input,
            verdict,
        };
        self.write_line(&record)?;
        self.seq += 1;
        Ok(())
    }

    /// The run as the log describes it so far.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// How many records have been written (the header not counted).
    pub fn records(&self) -> u64 {
        self.seq
    }

    /// The log's anchor now: the record count and the last line's MAC. Store it with the run.
    pub fn anchor(&self) -> Anchor {
        Anchor {
            records: self.seq,
            mac: self.chain.last(),
        }
    }

    /// The output, for a driver that moves each line elsewhere as it is written.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }

    fn write_line<T: Serialize>(&mut self, value: &T) -> io::Result<()> {
        self.object.clear();
        serde_json::to_writer(&mut self.object, value)?;
        self.line.clear();
        self.chain.seal(&self.object, &mut self.line);
        self.out.write_all(&self.line)
    }
}
