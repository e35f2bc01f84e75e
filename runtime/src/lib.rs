//! A reference runtime for the resumable lifecycle kernel: the kernel driven on a durable
//! store, tools as outside processes, and a torture harness that kills workers with SIGKILL.
//!
//! It is the worked example of the driving contract (`spec/lifecycle.md`, section 7;
//! `spec/driving.md` walks through this code):
//!
//! 1. load the run and its log's end from the [`store`];
//! 2. stage it through the driver core ([`lifecycle::stage`]: the driver's time, the priors
//!    the store's history holds, the kernel's step and the audit record); nothing is decided
//!    outside the kernel and the core;
//! 3. commit the next run, its audit record, its checkpoint and the verdict of the request it
//!    consumed in **one** transaction, with compare-and-set on the revision
//!    ([`store::Store::commit`]);
//! 4. only then carry out the effects (dispatch, query) and feed the answers back as inputs.
//!
//! Recovery after a kill, expiry, decisions of approvers and operators, and reconciliation
//! by query all come in as kernel inputs ([`driver`]). Tools live in their own process with
//! their own durable ledger ([`tool`]); the agent programs are in [`program`]; [`torture`]
//! starts workers, the tool service and approvers, kills workers at seeded points, and checks
//! what must hold afterwards.

pub mod auth;
pub mod backoff;
pub mod bounded;
pub mod driver;
pub mod lifecycle;
pub mod parties;
pub mod program;
pub mod rng;
pub mod store;
#[cfg(test)]
mod testing;
pub mod tool;
pub mod torture;
