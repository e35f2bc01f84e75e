//! Evidence that the kernel is the machine the specification describes.
//!
//! - [`scenario`]: scenarios as data. A scenario is a file of JSON lines: a header naming the
//!   spec IDs it shows and the run to create, then one kernel input per line
//!   (format: `spec/scenario-format.md`).
//! - [`trace`]: replays a scenario through `resumable_kernel::step` and renders the trace,
//!   as text for people and as JSON lines for programs. Both are deterministic, so the
//!   teaching traces under `spec/scenarios/` are kept as snapshots.
//! - [`rule`]: the spec ID each rejection enforces, which every rejection in a trace names.
//! - [`lockstep`]: the kernel and the model's reference machine fed the same inputs, over the
//!   model's world and adversarial probes, compared on every verdict (CONF-1).
//!
//! Audit logs (their format, writer and validator) are the `resumable-audit` crate's, which
//! depends on the kernel alone; this crate takes its bounded JSON line reader from there.
//!
//! This crate reads files only where its caller hands it bytes; it never touches a clock.

pub mod lockstep;
pub mod rule;
pub mod scenario;
pub mod trace;

pub use resumable_kernel::SpecId;

/// The spec ID spelt `name` as spec/ writes it (`"RES-3"`), or `None` for a word that names
/// none. The list of IDs is the kernel's [`SpecId`]; this crate keeps no copy of it.
pub fn spec_id(name: &str) -> Option<SpecId> {
    SpecId::ALL.into_iter().find(|id| id.name() == name)
}
