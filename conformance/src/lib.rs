//! Evidence that the kernel is the machine the specification describes.
//!
//! - [`scenario`]: scenarios as data. A scenario is a file of JSON lines: a header naming the
//!   spec IDs it shows and the run to create, then one kernel input per line
//!   (format: `spec/scenario-format.md`).
//! - [`trace`]: replays a scenario through `resumable_kernel::step` and renders the trace,
//!   as text for people and as JSON lines for programs. Both are deterministic, so the
//!   teaching traces under `spec/scenarios/` are kept as snapshots.
//!
//! This crate reads files only where its caller hands it bytes; it never touches a clock.

pub mod audit;
pub mod json;
pub mod lockstep;
pub mod scenario;
pub mod trace;

/// Every stable spec ID. A scenario header may cite only these (see `spec/`).
pub const SPEC_IDS: &[&str] = &[
    "ID-1", "CLK-1", "INV-1", "REV-1", "AUD-1", "REJ-1", "REJ-2", "SUS-1", "SUS-2", "CKP-1",
    "CKP-2", "CKP-3", "RES-1", "RES-2", "RES-3", "RES-4", "RES-5", "RES-6", "RES-7", "APR-1",
    "APR-2", "APR-3", "APR-4", "KEY-1", "KEY-2", "KEY-3", "WAL-1", "WAL-2", "REC-1", "REC-2",
    "REC-3", "REC-4", "EXP-1", "CAN-1", "CAN-2", "EFF-1", "EFF-2", "LIVE-1", "LIVE-2", "CONF-1",
];
