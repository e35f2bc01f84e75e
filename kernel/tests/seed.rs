//! The seed chapter's simulation, reproduced on the kernel: the same steps, the same verdicts
//! (the scenario is [`resumable_testkit::seed_simulation`], shared with the reference machine).
//!
//! The seed prints, in order: `suspended 1 idem-run-approval`; a refused second suspend; a
//! refused checkpoint of another run; of another action; of an older revision; the approved
//! action executed once; `running 2`; and `manual_intervention suspended` for an unknown
//! reconcile answer.

use resumable_testkit::{seed_simulation, KernelMachine};

#[test]
fn seed_simulation_verdicts_are_reproduced() {
    seed_simulation(&KernelMachine);
}
