//! Fixtures of the batch tests (spec 5.5): the run, its tools, and builders for proposals,
//! decisions and answers.

use resumable_kernel::*;

/// The agent that proposes the calls.
pub const AGENT: Name = Name::lit("agent");
/// The approver of every batch.
pub const ALICE: Name = Name::lit("alice");
/// The operator of the batch runs' policy.
pub const OPS: Name = Name::lit("ops");
/// The resource version every suspension and every honest fact states.
pub const VERSION: u64 = 7;

/// A tool that dedupes and whose query does not fence.
pub const DEDUPES: ToolContract = ToolContract {
    dedupes: true,
    query_fences: false,
    max_attempts: 3,
    allowed: Allowed::TOOL_DEFAULT,
};

/// A tool whose query fences and that does not dedupe.
pub const FENCES: ToolContract = ToolContract {
    dedupes: false,
    query_fences: true,
    max_attempts: 3,
    allowed: Allowed::TOOL_DEFAULT,
};

/// An "ask the user" tool: a person may answer in its place.
pub const ASKS: ToolContract = ToolContract {
    allowed: Allowed::ALL,
    ..DEDUPES
};

/// The batch run's identity.
pub fn identity() -> Identity {
    Identity {
        tenant: Name::lit("acme"),
        session: Name::lit("s-1"),
        run: Name::lit("run-1"),
        definition: Name::lit("agent@1"),
    }
}

/// A policy of [`OPS`], with a reconcile window of 10, allowing `allowed`.
pub fn policy(allowed: Allowed) -> Policy {
    Policy {
        operator: OPS,
        reconcile_window: 10,
        allowed,
    }
}

/// A call named `id` to the tool `tool` under `contract`, its arguments and key made from `id`.
pub fn call(id: &str, contract: ToolContract) -> Call {
    Call {
        call_id: Name::new(id).unwrap(),
        tool: Name::lit("tool"),
        args: Digest::of(id.as_bytes()),
        key: IdempotencyKey::new(&format!("key-{id}")).unwrap(),
        contract,
    }
}

/// [`AGENT`]'s proposal of `c`, with no earlier use of its id or key.
pub fn proposal(c: Call) -> Proposal {
    Proposal {
        call: c,
        requester: AGENT,
        prior: Prior::NONE,
    }
}

/// [`AGENT`]'s proposal of `c`, stating that its key was bound before, to `args`, and whether
/// that call was committed.
pub fn proposal_key_used(c: Call, args: Digest, committed: bool) -> Proposal {
    Proposal {
        prior: Prior {
            call_id_used: false,
            key: Some(KeyUse { args, committed }),
        },
        ..proposal(c)
    }
}

/// Facts that agree with every suspension: at [`VERSION`], permitted, within budget.
pub fn honest() -> Facts {
    Facts {
        resource_version: VERSION,
        permitted: true,
        within_budget: true,
    }
}

/// A suspend for the batch `calls`, decided by [`ALICE`], expiring at `expires_at`.
pub fn suspend_until(calls: &[Proposal], expires_at: u64) -> Event {
    Event::Suspend {
        wait: Wait::Batch {
            calls: Proposals::of(calls).unwrap(),
        },
        expires_at: Time(expires_at),
        responsible: ALICE,
        resource_version: VERSION,
    }
}

/// [`ALICE`]'s `verdict` on `c`, bound to `cp`'s revision.
pub fn decision(cp: &Checkpoint, c: &Call, verdict: Verdict) -> CallDecision {
    CallDecision {
        approval: Approval {
            call_id: c.call_id,
            args: c.args,
            requester: AGENT,
            approver: ALICE,
            revision: cp.revision,
            expires_at: Time(1_000),
        },
        verdict,
    }
}

/// A resume from `cp` carrying `decisions`, with honest facts.
pub fn decide(cp: &Checkpoint, decisions: &[CallDecision]) -> Event {
    decide_with(cp, decisions, honest())
}

/// A resume from `cp` carrying `decisions`, with the facts given.
pub fn decide_with(cp: &Checkpoint, decisions: &[CallDecision], facts: Facts) -> Event {
    Event::Resume(Resume {
        checkpoint: *cp,
        decision: Decision::Batch {
            decisions: Decisions::of(decisions).unwrap(),
        },
        facts,
    })
}

/// A resume from `cp` answering the reconcile query with `answer`, with honest facts.
pub fn reconcile(cp: &Checkpoint, answer: QueryAnswer) -> Event {
    Event::Resume(Resume {
        checkpoint: *cp,
        decision: Decision::Reconcile(answer),
        facts: honest(),
    })
}

/// The tool's answer `done` to `c` under `attempt`.
pub fn result(c: &Call, attempt: u8) -> Event {
    Event::ToolResult {
        call_id: c.call_id,
        attempt,
        result: Digest::of(b"done"),
    }
}

/// An approval with the arguments changed to `edited`.
pub fn edit() -> Verdict {
    Verdict::Edit {
        args: Digest::of(b"edited"),
    }
}

/// A rejection of the call, for the reason `no`.
pub fn reject() -> Verdict {
    Verdict::Reject {
        reason: Digest::of(b"no"),
    }
}

/// An answer `Tuesday` in the tool's place.
pub fn respond() -> Verdict {
    Verdict::Respond {
        result: Digest::of(b"Tuesday"),
    }
}

/// A slot dispatched once, under attempt 0, not yet answered.
pub fn in_flight() -> SlotState {
    SlotState::InFlight {
        attempt: 0,
        dispatches: 1,
    }
}

/// A slot whose one dispatch, under attempt 0, has an unknown outcome.
pub fn unknown() -> SlotState {
    SlotState::Unknown {
        attempt: 0,
        dispatches: 1,
    }
}
