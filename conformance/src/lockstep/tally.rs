//! The tally of a pair: what it compared and agreed on, as counts.

use resumable_kernel::{EventKind, RejectionKind};
use std::collections::BTreeMap;
use std::sync::Mutex;

use super::Disagreement;

/// A verdict both machines gave alike, as a tally counts it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Agreed {
    /// Both accepted the input.
    Accepted,
    /// Both refused it, with the same rejection.
    Refused(RejectionKind),
}

/// A tally of what a pair compared and agreed on: per input kind, how often both accepted and
/// how often both refused with each rejection. It shows a check was not vacuous: that the
/// inputs that must be refused were offered, and refused alike.
#[derive(Debug, Default)]
pub struct Tally {
    counts: Mutex<BTreeMap<(EventKind, Agreed), u64>>,
    disagreements: Mutex<BTreeMap<Disagreement, u64>>,
}

impl Tally {
    pub(super) fn add(&self, kind: EventKind, verdict: Agreed) {
        // A poisoned lock means another thread panicked while counting; the counts are only
        // statistics, so keep counting rather than spread the panic.
        let mut counts = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *counts.entry((kind, verdict)).or_insert(0) += 1;
    }

    pub(super) fn disagree(&self, kind: Disagreement) {
        let mut counts = self
            .disagreements
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *counts.entry(kind).or_insert(0) += 1;
    }

    /// The disagreements met so far, by kind, and how often: every step of a search that
    /// reached a divergence, not only the shortest.
    pub fn disagreements(&self) -> BTreeMap<Disagreement, u64> {
        self.disagreements
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The agreements counted so far: (input kind, the verdict both gave) and how often.
    pub fn counts(&self) -> BTreeMap<(EventKind, Agreed), u64> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The rejections both machines agreed on, sorted.
    pub fn agreed_rejections(&self) -> Vec<RejectionKind> {
        agreed_rejections(&self.counts())
    }
}

/// The rejections among counted agreements, sorted and without repeats.
pub fn agreed_rejections(counts: &BTreeMap<(EventKind, Agreed), u64>) -> Vec<RejectionKind> {
    let mut kinds: Vec<RejectionKind> = (counts.keys())
        .filter_map(|(_, verdict)| match verdict {
            Agreed::Accepted => None,
            Agreed::Refused(kind) => Some(*kind),
        })
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}
