//! The reference machine as the testkit's scenarios drive it, and fixtures of its own: shared
//! by the reference's tests and the table of its broken variants.

#![allow(
    dead_code,
    reason = "shared by test binaries, each of which uses a part"
)]

use resumable_kernel::*;
use resumable_model::reference::{RefRun, Reference};
use resumable_model::Lifecycle;
use resumable_testkit::{
    self as kit, approval, at, call, first_dispatch, resume, Machine, APPROVER,
};

/// The reference machine itself.
pub const REF: Reference = Reference::new();

/// The reference machine, or one of its variants, as the testkit's scenarios drive it.
pub struct On<'a>(pub &'a Reference);

impl Machine for On<'_> {
    type Run = RefRun;

    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn create(&self, identity: Identity, policy: Policy, at: Time) -> Result<RefRun, PolicyError> {
        self.0.create(identity, policy, at)
    }

    fn step(&self, run: &RefRun, input: &Input) -> Result<(RefRun, Effects), Rejection> {
        self.0.step(run, input)
    }

    fn phase(&self, run: &RefRun) -> Phase {
        run.phase()
    }

    fn revision(&self, run: &RefRun) -> Revision {
        run.revision
    }
}

/// A new run named `run`, at t0 under the testkit's policy.
pub fn new_run(run: &str) -> RefRun {
    kit::new_run_on(&On(&REF), run)
}

/// Steps `m` and expects acceptance.
pub fn accept_on(m: &Reference, run: &RefRun, input: Input) -> (RefRun, Effects) {
    kit::accept_on(&On(m), run, input)
}

/// Steps `m` and expects a rejection.
pub fn reject_on(m: &Reference, run: &RefRun, input: Input) -> Rejection {
    kit::reject_on(&On(m), run, input)
}

/// Steps the reference and expects acceptance.
pub fn accept(run: &RefRun, input: Input) -> (RefRun, Effects) {
    accept_on(&REF, run, input)
}

/// Steps the reference and expects a rejection.
pub fn reject(run: &RefRun, input: Input) -> Rejection {
    reject_on(&REF, run, input)
}

/// A run suspended at t1 for approval of `c`, expiring at t50, with its checkpoint.
pub fn pending(c: Call) -> (RefRun, Checkpoint) {
    kit::pending_on(&On(&REF), c)
}

/// The call `c` (of the tool `t`, under the key `k`), and a run suspended at t1 for its
/// approval, expiring at t50, with its checkpoint.
pub fn pending_c() -> (Call, RefRun, Checkpoint) {
    let c = call("c", "t", "k");
    let (run, cp) = pending(c);
    (c, run, cp)
}

/// A run whose dispatch of `c` (at t1) was in flight when the worker restarted (at t2).
pub fn outcome_unknown(c: Call) -> (RefRun, Checkpoint) {
    kit::outcome_unknown_on(&On(&REF), c)
}

/// A run that dispatched `c` at t1 and recorded its result at t2.
pub fn after_result(c: Call) -> RefRun {
    let (run, _) = accept(&new_run("r"), at(1, first_dispatch(c)));
    accept(&run, at(2, tool_result(&c, 0, b"ok"))).0
}

/// The tool's answer `result` to `c` under `attempt`.
pub fn tool_result(c: &Call, attempt: u8, result: &[u8]) -> Event {
    Event::ToolResult {
        call_id: c.call_id,
        attempt,
        result: Digest::of(result),
    }
}

/// A dispatch of `c` stating `prior`, and no resource version.
pub fn dispatch_stating(c: Call, prior: Prior) -> Event {
    Event::Dispatch {
        call: c,
        prior,
        resource_version: None,
    }
}

/// A resume from `cp` by [`APPROVER`]'s approval of `c` at its revision, with facts that
/// agree with it.
pub fn approving(cp: Checkpoint, c: &Call) -> Event {
    resume(cp, Decision::Approve(approval(&cp, c)))
}

/// The reason the run is suspended for, if it is.
pub fn reason_of(run: &RefRun) -> Option<ReasonKind> {
    kit::reason_on(&On(&REF), run)
}

/// A suspend waiting for `callback` until `expires_at`, at resource version 1.
pub fn suspend_for_callback(callback: &str, expires_at: u64) -> Event {
    Event::Suspend {
        wait: Wait::Callback {
            callback: Name::new(callback).unwrap(),
        },
        expires_at: Time(expires_at),
        responsible: APPROVER,
        resource_version: 1,
    }
}

/// Facts that agree with `cp`: the resource as it saw it, policy permitting.
pub fn facts_for(cp: &Checkpoint) -> Facts {
    Facts {
        resource_version: cp.resource_version,
        permitted: true,
        within_budget: true,
    }
}

/// The dispatches among the effects.
pub fn dispatches(fx: &Effects) -> Vec<Dispatch> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Dispatch(d) => Some(d),
            _ => None,
        })
        .collect()
}

/// The effects' kinds, in order.
pub fn kinds(fx: &Effects) -> Vec<&'static str> {
    fx.iter()
        .map(|e| match e {
            Effect::Audit(_) => "audit",
            Effect::History(_) => "history",
            Effect::PersistCheckpoint(_) => "checkpoint",
            Effect::Dispatch(_) => "dispatch",
            Effect::Query(_) => "query",
        })
        .collect()
}

/// What the driver's history holds of `c` once it was bound and its result recorded.
pub fn spent(c: &Call) -> Prior {
    Prior {
        call_id_used: true,
        key: Some(KeyUse {
            args: c.args,
            committed: true,
        }),
    }
}
