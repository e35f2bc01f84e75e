//! Helpers shared by the checker's tests on the two-phase-commit yardstick.

#![allow(
    dead_code,
    reason = "shared by test binaries, each of which uses a part"
)]

use resumable_model::checker::{Options, Report, Verdict};
use resumable_model::twopc::TpcState;

/// The checker's default options, for the yardstick.
pub fn options() -> Options<TpcState> {
    Options::default()
}

/// The verdict the report gives the property `name`; panics if it names none.
pub fn verdict(report: &Report, name: &str) -> Verdict {
    match report.property(name) {
        Some(p) => p.verdict,
        None => panic!("no property named {name}"),
    }
}
