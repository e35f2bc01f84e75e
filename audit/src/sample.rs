//! Sample logs, all made by driving the kernel through a [`Writer`]: the short examples kept in
//! `spec/audit-examples/` (good ones, and tampered ones with the finding each must produce),
//! and a generator of long logs with a realistic mix of inputs, for benchmarks and tests.

use crate::history::History;
use crate::{Header, Key, RunHeader, ToolPolicy, Writer};
use resumable_kernel::Text;
use resumable_kernel::{
    Approval, Call, Checkpoint, Decision, Digest, Event, Facts, Identity, Input, Name, PendingCall,
    Policy, QueryAnswer, Rejection, Resolution, Resume, Revision, Time, ToolContract, Transition,
    Wait,
};
use std::io::{self, Write};

/// The key that seals the examples: 32 bytes anyone can read in this file and in
/// `spec/audit-examples/example.key`. A real runtime keeps its key secret.
pub fn key() -> Key {
    Key::from_bytes(*b"example key, public, never real!")
}

/// The party who approves in the samples.
pub const APPROVER: Name = Name::lit("alice");
/// The party who asks for gated calls in the samples.
pub const REQUESTER: Name = Name::lit("agent");
/// The run's operator in the samples.
pub const OPERATOR: Name = Name::lit("ops");

/// The header of a sample run named `run`, created at time 0, with the samples' tools.
pub fn header(run: Name) -> Header {
    Header {
        run: RunHeader {
            identity: Identity {
                tenant: Name::lit("acme"),
                session: Name::lit("session-1"),
                run,
                definition: Name::lit("publisher@1"),
            },
            policy: Policy {
                operator: OPERATOR,
                reconcile_window: 100,
                allowed: resumable_kernel::Allowed::ALL,
            },
            created_at: Time(0),
        },
        tools: Some(TOOLS.to_vec()),
    }
}

/// Drives one run through a writer: a clock that ticks once per input, fresh call ids, and a
/// budget of records after which every further input is dropped (so a generated log has
/// exactly the length asked for).
pub struct Driver<W: Write> {
    log: Writer<W>,
    /// The run's call history, as the runtime's store would keep it: every prior the
    /// samples state comes from here.
    history: History,
    clock: u64,
    calls: u64,
    budget: u64,
    error: Option<io::Error>,
}

impl<W: Write> Driver<W> {
    /// A driver writing at most `budget` records of the run `header` describes, sealed with
    /// `key` if given.
    pub fn new(out: W, header: &Header, key: Option<&Key>, budget: u64) -> io::Result<Driver<W>> {
        Ok(Driver {
            log: Writer::new(out, header, key)?,
            history: History::new(),
            clock: header.run.created_at.0,
            calls: 0,
            budget,
            error: None,
        })
    }

    /// Feeds `event` at the next tick and records it; `None` once the budget is spent (or
    /// after a write failed, which [`Driver::finish`] reports).
    pub fn feed(&mut self, event: Event) -> Option<Result<Transition, Rejection>> {
        if self.error.is_some() || self.log.records() >= self.budget {
            return None;
        }
        self.clock += 1;
        let input = Input {
            at: Time(self.clock),
            event,
        };
        match self.log.step(&input) {
            Ok(result) => {
                for entry in result.iter().flat_map(|t| t.effects.histories()) {
                    self.history.apply(entry);
                }
                Some(result)
            }
            Err(e) => {
                self.error = Some(e);
                None
            }
        }
    }

    /// Feeds `event` and returns the checkpoint it persisted, if accepted with one.
    fn checkpoint(&mut self, event: Event) -> Option<Checkpoint> {
        self.feed(event)?.ok()?.effects.checkpoint().copied()
    }

    /// Feeds `event`, expecting the kernel to accept it: `None` if it refused (or the budget
    /// is spent), which ends the sample's current cycle.
    pub fn accept(&mut self, event: Event) -> Option<Transition> {
        self.feed(event)?.ok()
    }

    /// Feeds `event`, expecting the kernel to refuse it: `None` if it accepted (or the budget
    /// is spent), which ends the sample's current cycle.
    pub fn refuse(&mut self, event: Event) -> Option<Rejection> {
        self.feed(event)?.err()
    }

    /// A dispatch of `call`, with what the run's history holds about it.
    pub fn dispatch(&self, call: Call) -> Event {
        Event::Dispatch {
            call,
            prior: self.history.prior(&call),
            resource_version: None,
        }
    }

    /// A suspension for approval of `call`, expiring at `expires_at`, with what the run's
    /// history holds about it.
    pub fn suspension(&self, call: Call, expires_at: Time) -> Event {
        Event::Suspend {
            wait: Wait::Approval {
                call,
                requester: REQUESTER,
                prior: self.history.prior(&call),
            },
            expires_at,
            responsible: APPROVER,
            resource_version: 7,
        }
    }

    /// The time of the next input.
    pub fn now(&self) -> Time {
        Time(self.clock + 1)
    }

    /// How many records have been written.
    pub fn records(&self) -> u64 {
        self.log.records()
    }

    /// Whether the budget is spent.
    pub fn full(&self) -> bool {
        self.log.records() >= self.budget
    }

    /// The log's anchor now.
    pub fn anchor(&self) -> crate::Anchor {
        self.log.anchor()
    }

    /// Flushes the log and returns the output, or the first write error.
    pub fn finish(self) -> io::Result<W> {
        match self.error {
            Some(e) => Err(e),
            None => self.log.into_inner(),
        }
    }

    /// A fresh call to `tool`, under the tool's contract.
    pub fn call(&mut self, tool: &ToolPolicy) -> Call {
        self.calls += 1;
        let n = self.calls;
        Call {
            call_id: name(&format!("call-{n}")),
            tool: tool.tool,
            args: Digest::of(format!("{{\"post\":{n}}}").as_bytes()),
            key: name(&format!("idem-{n}")),
            contract: tool.contract,
        }
    }

    /// Suspends for approval of `call`, expiring 50 ticks from now.
    pub fn suspend_for_approval(&mut self, call: Call) -> Option<Checkpoint> {
        let expires_at = self.now().after(50);
        self.checkpoint(self.suspension(call, expires_at))
    }

    /// Resumes from `checkpoint` with `decision`, with facts that agree with it.
    pub fn resume(
        &mut self,
        checkpoint: Checkpoint,
        decision: Decision,
    ) -> Option<Result<Transition, Rejection>> {
        self.feed(resume(checkpoint, decision))
    }
}

/// A resume from `checkpoint` with `decision`, with facts that agree with the checkpoint.
pub fn resume(checkpoint: Checkpoint, decision: Decision) -> Event {
    Event::Resume(Resume {
        checkpoint,
        decision,
        facts: Facts {
            resource_version: checkpoint.resource_version,
            permitted: true,
            within_budget: true,
        },
    })
}

/// A name or key from generated text. The generator makes only `call-N` and `idem-N` with
/// `N` a `u64`: at most 25 printable bytes, within every width. Anything else is a bug here,
/// so it is asserted rather than replaced by a made-up name that would hide it.
fn name<const N: usize>(s: &str) -> Text<N> {
    match Text::new(s) {
        Ok(name) => name,
        Err(e) => panic!("the generator made an invalid name {s:?}: {e}"),
    }
}

/// An approval of `call` on `checkpoint` by `approver`.
pub fn approval(checkpoint: &Checkpoint, call: &Call, approver: Name) -> Approval {
    Approval {
        call_id: call.call_id,
        args: call.args,
        requester: REQUESTER,
        approver,
        revision: checkpoint.revision,
        expires_at: Time(checkpoint.created_at.0 + 40),
    }
}

const DEDUPES: ToolContract = ToolContract {
    dedupes: true,
    query_fences: false,
    max_attempts: 3,
    allowed: resumable_kernel::Allowed::TOOL_DEFAULT,
};
const FENCES: ToolContract = ToolContract {
    dedupes: false,
    query_fences: true,
    max_attempts: 3,
    allowed: resumable_kernel::Allowed::TOOL_DEFAULT,
};
const NEITHER: ToolContract = ToolContract {
    dedupes: false,
    query_fences: false,
    max_attempts: 3,
    allowed: resumable_kernel::Allowed::TOOL_DEFAULT,
};

/// A gated tool that dedupes: its calls are dispatched only on an approval.
pub const PUBLISH: ToolPolicy = ToolPolicy {
    tool: Name::lit("publish"),
    gated: true,
    contract: DEDUPES,
};
/// An ungated tool that dedupes by key.
pub const STORE: ToolPolicy = ToolPolicy {
    tool: Name::lit("store"),
    gated: false,
    contract: DEDUPES,
};
/// An ungated tool whose status query fences the key.
pub const CHARGE: ToolPolicy = ToolPolicy {
    tool: Name::lit("charge"),
    gated: false,
    contract: FENCES,
};
/// An ungated tool that neither dedupes nor fences: an unknown outcome goes to a person.
pub const NOTIFY: ToolPolicy = ToolPolicy {
    tool: Name::lit("notify"),
    gated: false,
    contract: NEITHER,
};
/// The samples' tool policy.
pub const TOOLS: [ToolPolicy; 4] = [PUBLISH, STORE, CHARGE, NOTIFY];

/// The error for a sample whose script the kernel did not follow: a kernel change broke it.
fn off_script() -> io::Error {
    io::Error::other("the kernel did not follow the sample's script")
}

/// The seed's approval lifecycle, with the refused attempts it shows (SUS-2, ID-1, RES-4,
/// RES-3, RES-2), then the approved call's result and completion.
pub fn approval_log() -> io::Result<Vec<u8>> {
    approval_log_for(Name::lit("run-approval"))
}

/// [`approval_log`] for a run of another name.
pub fn approval_log_for(run: Name) -> io::Result<Vec<u8>> {
    Ok(approval_log_anchored(run, Some(&key()))?.0)
}

/// The approval log of a run named `run`, sealed with `key` if given, and its anchor.
pub fn approval_log_anchored(run: Name, key: Option<&Key>) -> io::Result<(Vec<u8>, crate::Anchor)> {
    let mut d = Driver::new(Vec::new(), &header(run), key, u64::MAX)?;
    approval_script(&mut d).ok_or_else(off_script)?;
    let anchor = d.anchor();
    Ok((d.finish()?, anchor))
}

fn approval_script<W: Write>(d: &mut Driver<W>) -> Option<()> {
    let call = d.call(&PUBLISH);
    let cp = d.suspend_for_approval(call)?;
    // SUS-2: a second suspend while one is pending is refused.
    let again = d.call(&PUBLISH);
    d.refuse(d.suspension(again, d.now().after(50)))?;
    // ID-1: a checkpoint of another run, resealed so that only the identity differs.
    let mut other_run = cp;
    other_run.identity.run = Name::lit("run-other");
    let other_run = other_run.seal();
    let decision = Decision::Approve(approval(&other_run, &call, APPROVER));
    d.refuse(resume(other_run, decision))?;
    // RES-4: a checkpoint naming another action than the one pending.
    let mut other_action = cp;
    other_action.pending = other_action.pending.map(|p| PendingCall {
        tool: Name::lit("delete"),
        ..p
    });
    let other_action = other_action.seal();
    let decision = Decision::Approve(approval(&other_action, &call, APPROVER));
    d.refuse(resume(other_action, decision))?;
    // RES-3: a checkpoint of an older revision.
    let mut old = cp;
    old.revision = Revision(0);
    let old = old.seal();
    d.refuse(resume(
        old,
        Decision::Approve(approval(&old, &call, APPROVER)),
    ))?;
    // APR-1, WAL-1: the approval binds to the call; the call is dispatched once.
    let approve = Decision::Approve(approval(&cp, &call, APPROVER));
    d.accept(resume(cp, approve))?;
    // RES-2: the same approval again is a duplicate of the winner.
    d.refuse(resume(cp, approve))?;
    d.accept(result_of(&call, 0))?;
    d.accept(Event::Complete {
        result: Digest::of(b"done"),
    })?;
    Some(())
}

/// A restart with a call in flight (REC-1), reconciled: "not committed" on a fencing tool
/// retries under a fresh attempt key (REC-3); "unknown" hands the run to a person (REC-2), who
/// records the committed result (REC-4).
pub fn reconcile_log() -> io::Result<Vec<u8>> {
    Ok(reconcile_log_anchored(Some(&key()))?.0)
}

/// The reconcile log, sealed with `key` if given, and its anchor.
pub fn reconcile_log_anchored(key: Option<&Key>) -> io::Result<(Vec<u8>, crate::Anchor)> {
    let header = header(Name::lit("run-reconcile"));
    let mut d = Driver::new(Vec::new(), &header, key, u64::MAX)?;
    reconcile_script(&mut d).ok_or_else(off_script)?;
    let anchor = d.anchor();
    Ok((d.finish()?, anchor))
}

fn reconcile_script<W: Write>(d: &mut Driver<W>) -> Option<()> {
    reconcile_retry(d, true)?;
    reconcile_unknown(d)?;
    d.accept(Event::Complete {
        result: Digest::of(b"done"),
    })?;
    Some(())
}

/// A generated log of exactly `records` records (when `records` is at least the header's
/// worth of nothing: every count works), one long-lived run with a realistic mix: plain
/// dispatches and results, approvals with refused attempts around them, restarts reconciled
/// every way, callbacks, resource waits, stale resumes and stray inputs. Deterministic for a
/// given `seed`. The run never ends, so any length can be generated. Sealed with `key` if
/// given.
pub fn generate<W: Write>(out: W, records: u64, seed: u64, key: Option<&Key>) -> io::Result<W> {
    let mut d = Driver::new(out, &header(Name::lit("run-generated")), key, records)?;
    let mut rng = SplitMix(seed);
    while !d.full() {
        // The run's history lives beside it (in the driver's store), so a run makes any
        // number of calls.
        match rng.next() % 100 {
            0..=29 => plain(&mut d),
            30..=49 => approve(&mut d, rng.next()),
            50..=61 => reconcile_committed(&mut d),
            62..=71 => reconcile_retry(&mut d, rng.next().is_multiple_of(2)),
            72..=76 => reconcile_unknown(&mut d),
            77..=88 => callback(&mut d, rng.next()),
            89..=97 => resource(&mut d),
            _ => stray(&mut d),
        };
    }
    d.finish()
}

/// A small, fast deterministic generator (SplitMix64): enough to vary the mix.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn result_of(call: &Call, attempt: u8) -> Event {
    Event::ToolResult {
        call_id: call.call_id,
        attempt,
        result: call.args,
    }
}

// Each cycle below returns `None` as soon as an input is not answered as the script expects
// (or the budget is spent); the generator then starts the next cycle. Its tests check that
// the generated mix is what the weights say, so a drifting script does not go unseen.

fn plain<W: Write>(d: &mut Driver<W>) -> Option<()> {
    let call = d.call(&STORE);
    d.accept(d.dispatch(call))?;
    d.accept(result_of(&call, 0))?;
    Some(())
}

fn approve<W: Write>(d: &mut Driver<W>, dice: u64) -> Option<()> {
    let call = d.call(&PUBLISH);
    let cp = d.suspend_for_approval(call)?;
    if dice.is_multiple_of(3) {
        // The requester tries to approve its own call (APR-3).
        d.refuse(resume(
            cp,
            Decision::Approve(approval(&cp, &call, REQUESTER)),
        ))?;
    }
    if dice.is_multiple_of(5) {
        // A second suspend while this one is pending (SUS-2).
        let again = d.call(&PUBLISH);
        d.refuse(d.suspension(again, d.now().after(50)))?;
    }
    let decision = Decision::Approve(approval(&cp, &call, APPROVER));
    d.accept(resume(cp, decision))?;
    if dice.is_multiple_of(4) {
        // The approver's retry after a lost reply: already applied (RES-2).
        d.refuse(resume(cp, decision))?;
    }
    d.accept(result_of(&call, 0))?;
    Some(())
}

fn reconcile_committed<W: Write>(d: &mut Driver<W>) -> Option<()> {
    let call = d.call(&NOTIFY);
    d.accept(d.dispatch(call))?;
    let cp = d.checkpoint(Event::Recover)?;
    let answer = QueryAnswer::Committed { result: call.args };
    d.accept(resume(cp, Decision::Reconcile(answer)))?;
    Some(())
}

fn reconcile_retry<W: Write>(d: &mut Driver<W>, fences: bool) -> Option<()> {
    let call = d.call(if fences { &CHARGE } else { &STORE });
    d.accept(d.dispatch(call))?;
    let cp = d.checkpoint(Event::Recover)?;
    d.accept(resume(cp, Decision::Reconcile(QueryAnswer::NotCommitted)))?;
    // A fencing query killed the old key: the retry is attempt 1. A deduping tool keeps it.
    d.accept(result_of(&call, u8::from(fences)))?;
    Some(())
}

fn reconcile_unknown<W: Write>(d: &mut Driver<W>) -> Option<()> {
    let call = d.call(&NOTIFY);
    d.accept(d.dispatch(call))?;
    let cp = d.checkpoint(Event::Recover)?;
    let t = d.accept(resume(cp, Decision::Reconcile(QueryAnswer::Unknown)))?;
    let cp = t.effects.checkpoint().copied()?;
    let decision = Decision::Intervene {
        by: OPERATOR,
        resolution: Resolution::Committed { result: call.args },
    };
    d.accept(resume(cp, decision))?;
    Some(())
}

fn callback<W: Write>(d: &mut Driver<W>, dice: u64) -> Option<()> {
    let hook = Name::lit("payment-hook");
    let expires_at = d.now().after(50);
    let cp = d.checkpoint(Event::Suspend {
        wait: Wait::Callback { callback: hook },
        expires_at,
        responsible: Name::lit("payments"),
        resource_version: 7,
    })?;
    if dice.is_multiple_of(2) {
        // A callback for something else arrives first (RES-6).
        let other = Decision::Callback {
            callback: Name::lit("other-hook"),
            payload: Digest::of(b"?"),
        };
        d.refuse(resume(cp, other))?;
    }
    let arrived = Decision::Callback {
        callback: hook,
        payload: Digest::of(b"paid"),
    };
    d.accept(resume(cp, arrived))?;
    Some(())
}

fn resource<W: Write>(d: &mut Driver<W>) -> Option<()> {
    let gpu = Name::lit("gpu-pool");
    let expires_at = d.now().after(50);
    let cp = d.checkpoint(Event::Suspend {
        wait: Wait::Resource { resource: gpu },
        expires_at,
        responsible: OPERATOR,
        resource_version: 7,
    })?;
    d.accept(resume(cp, Decision::ResourceReady { resource: gpu }))?;
    // A stale tab resumes from an older revision (RES-3).
    let mut old = cp;
    old.revision = Revision(cp.revision.0.saturating_sub(1));
    d.refuse(resume(
        old.seal(),
        Decision::ResourceReady { resource: gpu },
    ))?;
    Some(())
}

fn stray<W: Write>(d: &mut Driver<W>) -> Option<()> {
    d.refuse(Event::Recover)?;
    d.refuse(Event::Expire)?;
    d.refuse(Event::ToolResult {
        call_id: Name::lit("call-0"),
        attempt: 0,
        result: Digest::of(b"late"),
    })?;
    Some(())
}

pub use crate::examples::{examples, forged_stale_resume, parse_log, rechain, records, to_v1};
