//! Fixtures shared by the kernel's tests: the seed's run and call, and builders for inputs.
#![allow(dead_code)]

use resumable_kernel::*;

pub const OPERATOR: Name = Name::lit("ops");
pub const APPROVER: Name = Name::lit("approver");
pub const REQUESTER: Name = Name::lit("agent");
pub const WINDOW: u64 = 100;

pub fn identity(run: &str) -> Identity {
    Identity {
        tenant: Name::lit("tenant-a"),
        session: Name::lit("session-1"),
        run: Name::new(run).unwrap(),
        definition: Name::lit("demo@1"),
    }
}

pub fn new_run(run: &str) -> Run {
    Run::new(
        identity(run),
        Policy {
            operator: OPERATOR,
            reconcile_window: WINDOW,
        },
        Time(0),
    )
}

pub fn contract(dedupes: bool, query_fences: bool) -> ToolContract {
    ToolContract {
        dedupes,
        query_fences,
        max_attempts: 3,
    }
}

pub fn call(call_id: &str, tool: &str, key: &str) -> Call {
    Call {
        call_id: Name::new(call_id).unwrap(),
        tool: Name::new(tool).unwrap(),
        args: Digest::of(tool.as_bytes()),
        key: Name::new(key).unwrap(),
        contract: contract(true, false),
    }
}

pub fn at(t: u64, event: Event) -> Input {
    Input { at: Time(t), event }
}

pub fn suspend_for_approval(c: Call, expires_at: u64) -> Event {
    Event::Suspend {
        wait: Wait::Approval {
            call: c,
            requester: REQUESTER,
        },
        expires_at: Time(expires_at),
        responsible: APPROVER,
        resource_version: 1,
    }
}

pub fn facts() -> Facts {
    Facts {
        resource_version: 1,
        permitted: true,
        within_budget: true,
    }
}

pub fn approval(cp: &Checkpoint, c: &Call) -> Approval {
    Approval {
        call_id: c.call_id,
        args: c.args,
        requester: REQUESTER,
        approver: APPROVER,
        revision: cp.revision,
        expires_at: Time(1_000),
    }
}

/// A resume from `cp`, with facts that agree with it (current policy permits, the resource
/// is at the version the checkpoint saw).
pub fn resume(cp: Checkpoint, decision: Decision) -> Event {
    Event::Resume(Resume {
        checkpoint: cp,
        decision,
        facts: Facts {
            resource_version: cp.resource_version,
            ..facts()
        },
    })
}

/// Steps and expects acceptance; returns the next run and the effects.
pub fn accept(run: &Run, input: Input) -> (Run, Effects) {
    match step(run, &input) {
        Ok(t) => (t.next, t.effects),
        Err(r) => panic!("expected acceptance of {input:?}, got {r:?}"),
    }
}

/// Steps and expects a rejection.
pub fn reject(run: &Run, input: Input) -> Rejection {
    match step(run, &input) {
        Ok(t) => panic!("expected a rejection of {input:?}, got {t:?}"),
        Err(r) => r,
    }
}

/// A run suspended for approval of `call`, with its checkpoint.
pub fn pending(c: Call) -> (Run, Checkpoint) {
    let (run, fx) = accept(&new_run("run-approval"), at(1, suspend_for_approval(c, 50)));
    (run, *fx.checkpoint().unwrap())
}

/// A run whose dispatch of `c` was in flight when the worker restarted.
pub fn outcome_unknown(c: Call) -> (Run, Checkpoint) {
    let run = new_run("run-unknown");
    let (run, _) = accept(&run, at(1, Event::Dispatch { call: c }));
    let (run, fx) = accept(&run, at(2, Event::Recover));
    (run, *fx.checkpoint().unwrap())
}
