//! What the driver's store holds of one run between calls: the run, the end of its audit log
//! and its latest checkpoint. One row; every commit replaces it with compare-and-set on the
//! revision and the log's end.

use resumable_audit::{Anchor, Header, Key, Writer};
use resumable_kernel::{Checkpoint, Run};
use serde::{Deserialize, Serialize};

/// One run as the driver's store holds it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Held {
    /// The run.
    pub run: Run,
    /// The end of its audit log: the records written and the last line's MAC. Stored with the
    /// run, it anchors the log (a log cut short no longer ends where the anchor says).
    pub anchor: Anchor,
    /// The latest checkpoint a transition emitted, if any: what a party decides on, and what
    /// a reconcile resumes from.
    pub checkpoint: Option<Checkpoint>,
}

impl Held {
    /// A new run at revision 0 from its log's `header`, and line 1 of its audit log (without
    /// its LF), sealed under `key` (HMAC-SHA-256) or chained by SHA-256 alone.
    pub fn open(header: &Header, key: Option<&Key>) -> Result<(Held, Vec<u8>), String> {
        let writer = Writer::new(Vec::new(), header, key).map_err(|e| e.to_string())?;
        let held = Held {
            run: *writer.run(),
            anchor: writer.anchor(),
            checkpoint: None,
        };
        let mut line = writer.into_inner().map_err(|e| e.to_string())?;
        line.pop(); // the writer ends every line with LF; a store keeps lines without it
        Ok((held, line))
    }

    /// Whether `other` is what a compare-and-set against this row expects: the same revision
    /// and the same end of log (a refused input moves the log's end and not the revision).
    pub fn same_place(&self, other: &Held) -> bool {
        self.run.revision() == other.run.revision() && self.anchor == other.anchor
    }
}
