//! Fixtures for the crate's unit tests: rows of runs in each of the phases a worker meets,
//! made by the kernel's own steps, with no store.

use crate::lifecycle::Tail;
use crate::program::{Program, Timing, APPROVER};
use crate::store::{Lease, Row};
use resumable_kernel::{
    step, Approval, Decision, Digest, Event, Input, Name, QueryAnswer, Resume, Time,
};

/// A new run of `program` named `run-1`, created at time 0, as a store would hold it.
pub(crate) fn fresh(program: Program) -> Row {
    let header = program.header("run-1", 0, &Timing::default()).unwrap();
    let run = header.run().unwrap();
    Row {
        key: crate::lifecycle::run_key(run.identity()),
        run,
        tail: Tail {
            seq: 0,
            digest: Digest::of(b"header"),
        },
        checkpoint: None,
        program: program.as_str().to_string(),
        pc: 0,
        lease: Lease::default(),
        resource_version: 0,
    }
}

/// `row` after the kernel accepted `event` at `at`, as the driver would store it (the
/// program's position moves only for the program's own steps: `pc`).
pub(crate) fn after(row: &Row, at: u64, event: Event, pc: u32) -> Row {
    let t = step(
        &row.run,
        &Input {
            at: Time(at),
            event,
        },
    )
    .unwrap();
    Row {
        run: t.next,
        checkpoint: t.effects.checkpoint().copied(),
        pc,
        ..row.clone()
    }
}

/// The program's own step at `row.pc`, accepted at `at`.
pub(crate) fn program_step(row: &Row, at: u64) -> Row {
    let program = Program::parse(&row.program).unwrap();
    let event = program
        .step(row.pc, at, row.resource_version, &Timing::default())
        .unwrap();
    after(row, at, event, row.pc + 1)
}

/// A seed run suspended for the approver's decision at time 10 (expires at 10 + the
/// default approval window).
pub(crate) fn awaiting_approval() -> Row {
    program_step(&fresh(Program::Seed), 10)
}

/// The approver's approval of the call `row` waits on, bound to its checkpoint.
pub(crate) fn approval_of(row: &Row) -> Event {
    let checkpoint = row.checkpoint.unwrap();
    let call = checkpoint.pending.unwrap();
    Event::Resume(Resume {
        checkpoint,
        decision: Decision::Approve(Approval {
            call_id: call.call_id,
            args: call.args,
            requester: checkpoint.requester.unwrap(),
            approver: Name::lit(APPROVER),
            revision: checkpoint.revision,
            expires_at: Time(u64::MAX / 2),
        }),
        facts: crate::driver::facts(row.resource_version),
    })
}

/// A batch run whose three calls are in flight together: the batch opened at 10, every call
/// approved at 20 by the approver's request (bound by the driver core).
pub(crate) fn batch_in_flight() -> Row {
    let row = program_step(&fresh(Program::Batch), 10);
    let request = crate::parties::approval(&row, None, APPROVER, true, 600_000).unwrap();
    let crate::store::Request::Resume {
        checkpoint,
        decision,
    } = request
    else {
        unreachable!("an approval is a resume")
    };
    let event = Event::Resume(Resume {
        checkpoint,
        decision,
        facts: crate::driver::facts(row.resource_version),
    });
    after(&row, 20, event, 1)
}

/// An order run whose first call (charge:card) is in flight since time 10.
pub(crate) fn in_flight() -> Row {
    program_step(&fresh(Program::Order), 10)
}

/// An order run whose first call's outcome is unknown: its worker was lost, recovered at 20.
pub(crate) fn outcome_unknown() -> Row {
    after(&in_flight(), 20, Event::Recover, 1)
}

/// A seed run that completed: approved at 20, the tool's result at 30, completed at 40.
pub(crate) fn completed() -> Row {
    let approved = after(
        &awaiting_approval(),
        20,
        approval_of(&awaiting_approval()),
        1,
    );
    let call_id = approved.run.in_flight().unwrap().call.call.call_id;
    let result = Event::ToolResult {
        call_id,
        attempt: 0,
        result: Digest::of(b"ok"),
    };
    program_step(&after(&approved, 30, result, 1), 40)
}

/// A seed run that failed: its suspension expired at the first instant `expire` is accepted.
pub(crate) fn failed() -> Row {
    let row = awaiting_approval();
    let due = row.run.deadline().unwrap().0;
    after(&row, due, Event::Expire, 1)
}

/// The order run of [`outcome_unknown`] after a query answered "not committed": the tool
/// dedupes, so the kernel retries under the same key (a call in flight again).
pub(crate) fn retried() -> Row {
    let row = outcome_unknown();
    let event = Event::Resume(Resume {
        checkpoint: row.checkpoint.unwrap(),
        decision: Decision::Reconcile(QueryAnswer::NotCommitted),
        facts: crate::driver::facts(row.resource_version),
    });
    after(&row, 30, event, 1)
}

/// The keys of the parties the programs name, each a fixed test key: what a driver under
/// test checks requests against.
pub(crate) fn party_keys() -> crate::auth::PartyKeys {
    crate::auth::PartyKeys::of(
        [
            crate::program::APPROVER,
            crate::program::PAYMENTS,
            crate::program::OPERATOR,
        ]
        .into_iter()
        .map(|p| (p.to_string(), party_key(p))),
    )
}

/// The test key of `party`: its bytes are its name's length, repeated.
pub(crate) fn party_key(party: &str) -> crate::auth::SharedKey {
    crate::auth::SharedKey::from_bytes([party.len() as u8; 32])
}

/// Puts `request` from `party` in the inbox of run `key`, sealed with the party's test key.
pub(crate) fn submit_sealed(
    store: &mut dyn crate::store::Store,
    key: &crate::store::RunKey,
    party: &str,
    at_ms: u64,
    request: &crate::store::Request,
) -> u64 {
    let seal = party_key(party).seal(key, party, request);
    store
        .submit_sealed(key, party, at_ms, request, Some(seal))
        .unwrap()
}
