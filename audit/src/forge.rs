//! Forged logs: each way a forger with write access to a log, or a runtime covering its
//! tracks, might rewrite a history so that it still reads as conforming. Each [`Forgery`] is
//! a header and a list of inputs the forger writes instead of the original's; the forger
//! recomputes every `seq`, revision, verdict and MAC it can ([`Writer`] does it for them):
//!
//! - [`resealed`]: the forger keeps the original lines up to its first change and seals the
//!   rest with a key of its own, since it does not hold the run's key. Validated with the
//!   run's key, the first changed line is refused (a cut tail needs the anchor);
//! - [`rewritten_unkeyed`]: the forger rewrites the whole log as an unkeyed log, recomputing
//!   the SHA-256 chain.
//!
//! Where the kernel refuses an input the forger wants on record as done (a call made again,
//! which the run's call log refuses), the forger claims the acceptance outright: it writes
//! the verdict a kernel without that rule would have given, at the next revision. Validated without a key, the kernel and the whole-log properties
//!   still catch some forgeries; for the others, the report says what an unkeyed log cannot
//!   prove. With the run's key, the log is refused on line 1; with the anchor, at its end.

use crate::chain::{Anchor, Key};
use crate::history::History;
use crate::sample::{self, OPERATOR, STORE};
use crate::{Accepted, Commit, Header, Verdict, Writer};
use resumable_kernel::checkpoint::tool_key;
use resumable_kernel::{
    Decision, Digest, Dispatch, Event, EventKind, Identity, Input, Name, PhaseKind, Resolution,
    SpecId, Time,
};
use resumable_kernel::{HistoryEntry, IdempotencyKey, Prior};
use std::io;

/// A history as its runtime wrote it: the header, the inputs, the keyed log and its anchor.
#[derive(Clone, Debug)]
pub struct Original {
    /// The header.
    pub header: Header,
    /// The inputs, in order.
    pub inputs: Vec<Input>,
    /// The log, sealed with [`sample::key`].
    pub log: Vec<u8>,
    /// The anchor the runtime stored with the run.
    pub anchor: Anchor,
}

/// A forged history.
#[derive(Clone, Debug)]
pub struct Forgery {
    /// A short name.
    pub name: &'static str,
    /// What the forger did, in a sentence.
    pub what: &'static str,
    /// The history it was made from.
    pub original: Original,
    /// The header the forger writes.
    pub header: Header,
    /// The inputs the forger writes.
    pub inputs: Vec<Input>,
    /// The spec ID of the property that still catches the forgery in an unkeyed log, if one
    /// does; `None` when only the key or the anchor can.
    pub unkeyed_caught_by: Option<SpecId>,
    /// How many inputs, from the end but for the last, the forger claims accepted although
    /// the kernel refuses them (see the module documentation).
    pub claimed: usize,
}

impl Forgery {
    /// Whether the forger claims input `i` accepted whatever the kernel says.
    fn claims(&self, i: usize) -> bool {
        let n = self.inputs.len();
        i + 1 < n && i + 1 + self.claimed >= n
    }
}

/// The verdict a kernel that ignored the run's history would give a dispatch or a tool result
/// on a run that is idle, or has that very call in flight: the call bound, the key spent.
fn claimed(identity: &Identity, input: &Input, key: IdempotencyKey) -> Option<Verdict> {
    let accepted = |event| Accepted {
        event,
        decision: None,
        phase: PhaseKind::Running,
        reason: None,
        checkpoint: None,
        dispatch: None,
        query: None,
        committed: None,
        history: None,
        dispatch_more: Default::default(),
        history_more: Default::default(),
    };
    Some(Verdict::Accepted(match input.event {
        Event::Dispatch { call, .. } => Accepted {
            dispatch: Some(Dispatch {
                call_id: call.call_id,
                tool: call.tool,
                args: call.args,
                key: call.key,
                tool_key: tool_key(identity, &call.key),
                attempt: 0,
            }),
            history: Some(HistoryEntry::bound(&call)),
            ..accepted(EventKind::Dispatch)
        },
        Event::ToolResult {
            call_id,
            attempt,
            result,
        } => Accepted {
            committed: Some(Commit {
                call_id,
                key,
                attempt,
                result,
            }),
            history: Some(HistoryEntry::settled(&key)),
            ..accepted(EventKind::ToolResult)
        },
        _ => return None,
    }))
}

impl Forgery {
    /// How many records the forgery keeps unchanged from the start of the original; `None`
    /// when its header differs.
    pub fn kept(&self) -> Option<usize> {
        if self.header != self.original.header {
            return None;
        }
        let same = (self.inputs.iter().zip(&self.original.inputs)).take_while(|(a, b)| a == b);
        Some(same.count())
    }

    /// The line a validation with the run's key and the original's anchor stops on: the first
    /// changed line, or for a cut tail the first missing one.
    pub fn caught_on_line(&self) -> u64 {
        match self.kept() {
            None => 1,
            Some(kept) => kept as u64 + 2,
        }
    }
}

/// Writes the forger's inputs from `from` on: stepped through the kernel, or claimed.
fn forge_from<W: io::Write>(w: &mut Writer<W>, forgery: &Forgery, from: usize) -> io::Result<()> {
    let mut revision = w.run().revision();
    let mut key = IdempotencyKey::lit("none");
    for (i, input) in forgery.inputs.iter().enumerate().skip(from) {
        if let Event::Dispatch { call, .. } = input.event {
            key = call.key;
        }
        let claim = forgery
            .claims(i)
            .then(|| claimed(&forgery.header.run.identity, input, key));
        match claim.flatten() {
            Some(verdict) => {
                revision = resumable_kernel::Revision(revision.0 + 1);
                w.claim(input, revision, verdict)?;
            }
            None => {
                let _verdict = w.step(input)?;
                revision = w.run().revision().max(revision);
            }
        }
    }
    Ok(())
}

/// The original history of a sample script: the inputs, read back from its log.
fn original(header: Header, log: Vec<u8>, anchor: Anchor) -> io::Result<Original> {
    let inputs = sample::records(&log)
        .ok_or_else(|| io::Error::other("a sample log did not parse"))?
        .into_iter()
        .map(|r| r.input)
        .collect();
    Ok(Original {
        header,
        inputs,
        log,
        anchor,
    })
}

/// The forgery, as a forger without the run's key writes it: the original lines up to the
/// first change, then lines sealed with `forger_key`, chained on from the last kept line.
pub fn resealed(forgery: &Forgery, forger_key: &Key) -> io::Result<Vec<u8>> {
    let Some(kept) = forgery.kept() else {
        let mut w = Writer::new(Vec::new(), &forgery.header, Some(forger_key))?;
        forge_from(&mut w, forgery, 0)?;
        return w.into_inner();
    };
    let mut w = Writer::new(Vec::new(), &forgery.header, Some(&sample::key()))?;
    for input in &forgery.inputs[..kept] {
        let _verdict = w.step(input)?;
    }
    let (run, anchor) = (*w.run(), w.anchor());
    let mut w = Writer::resume(w.into_inner()?, run, Some(forger_key), anchor);
    forge_from(&mut w, forgery, kept)?;
    w.into_inner()
}

/// The forgery written as a whole unkeyed log, its SHA-256 chain recomputed.
pub fn rewritten_unkeyed(forgery: &Forgery) -> io::Result<Vec<u8>> {
    let mut w = Writer::new(Vec::new(), &forgery.header, None)?;
    forge_from(&mut w, forgery, 0)?;
    w.into_inner()
}

fn approval() -> io::Result<Original> {
    let header = sample::header(Name::lit("run-approval"));
    let (log, anchor) =
        sample::approval_log_anchored(Name::lit("run-approval"), Some(&sample::key()))?;
    original(header, log, anchor)
}

fn reconcile() -> io::Result<Original> {
    let header = sample::header(Name::lit("run-reconcile"));
    let (log, anchor) = sample::reconcile_log_anchored(Some(&sample::key()))?;
    original(header, log, anchor)
}

/// `input` at another time.
fn at(input: Input, t: u64) -> Input {
    Input {
        at: Time(t),
        ..input
    }
}

/// The forgery: `what` the forger did to the original, named `name`.
fn forgery(
    name: &'static str,
    what: &'static str,
    original: &Original,
    edit: impl FnOnce(&mut Header, &mut Vec<Input>) -> Option<()>,
    unkeyed_caught_by: Option<SpecId>,
) -> io::Result<Forgery> {
    let (mut header, mut inputs) = (original.header.clone(), original.inputs.clone());
    edit(&mut header, &mut inputs)
        .ok_or_else(|| io::Error::other(format!("forgery {name}: the sample changed")))?;
    stating_priors(&header, &mut inputs);
    Ok(Forgery {
        name,
        what,
        original: original.clone(),
        header,
        inputs,
        unkeyed_caught_by,
        claimed: 0,
    })
}

/// The forger's runtime states, for every call its inputs propose, what its history holds
/// (every call it bound in the records the kernel accepted): the forgeries lie about what
/// happened, not about the history index, which the validator checks on its own.
fn stating_priors(header: &Header, inputs: &mut [Input]) {
    let Ok(mut run) = resumable_kernel::Run::new(
        header.run.identity,
        header.run.policy,
        header.run.created_at,
    ) else {
        return;
    };
    let mut history = History::new();
    for input in inputs.iter_mut() {
        match &mut input.event {
            Event::Dispatch {
                call,
                prior,
                resource_version: None,
            }
            | Event::Suspend {
                wait: resumable_kernel::Wait::Approval { call, prior, .. },
                ..
            } => *prior = history.prior(call),
            _ => {}
        }
        if let Ok(t) = resumable_kernel::step(&run, input) {
            for entry in t.effects.histories() {
                history.apply(entry);
            }
            run = t.next;
        }
    }
}

/// Every forgery, made from the approval and reconcile samples. In the approval sample,
/// record 1 suspends for approval of call-1 (tool `publish`, gated); 2 to 5 are refused
/// attempts (a second suspend, another run's checkpoint, another action's, a stale one);
/// 6 approves and dispatches; 7 is the approver's duplicate, refused; 8 the result; 9 the
/// completion. In the reconcile sample, call-1 (tool `charge`) is retried after "not
/// committed" and commits on record 4; call-2 (tool `notify`) is unknown after a restart, and
/// the operator records it committed on record 8; 9 completes.
pub fn all() -> io::Result<Vec<Forgery>> {
    let a = approval()?;
    let r = reconcile()?;
    let mut out = vec![
        forgery("refused-dropped", "two refused records dropped (a stale approval and the approver's duplicate): the evidence of refused attempts erased", &a, |_, i| {
            i.remove(6);
            i.remove(4);
            Some(())
        }, None)?,
        forgery("refused-swapped", "two refused records swapped", &a, |_, i| {
            i.swap(2, 3);
            Some(())
        }, None)?,
        forgery("refused-duplicated", "a refused record duplicated", &a, |_, i| {
            let copy = *i.get(4)?;
            i.insert(5, copy);
            Some(())
        }, None)?,
        forgery("approval-erased", "the suspension and its approval erased, and the gated call recorded as dispatched directly", &a, |_, i| {
            let Event::Suspend { wait: resumable_kernel::Wait::Approval { call, .. }, .. } = i.first()?.event else { return None };
            let rest = i.split_off(7);
            *i = vec![at(Input { at: Time(0), event: Event::Dispatch { call, prior: Prior::NONE, resource_version: None } }, 1)];
            i.extend(rest);
            Some(())
        }, Some(SpecId::Apr1))?,
        forgery("result-digest-changed", "the tool result's digest changed", &a, |_, i| {
            let Event::ToolResult { result, .. } = &mut i.get_mut(7)?.event else { return None };
            *result = Digest::of(b"forged result");
            Some(())
        }, None)?,
        forgery("completion-digest-changed", "the run's completion digest changed", &a, |_, i| {
            let Event::Complete { result } = &mut i.get_mut(8)?.event else { return None };
            *result = Digest::of(b"forged completion");
            Some(())
        }, None)?,
        forgery("refused-party-renamed", "the approver of a refused (stale) approval renamed", &a, |_, i| {
            let Event::Resume(r) = &mut i.get_mut(4)?.event else { return None };
            let Decision::Approve(approval) = &mut r.decision else { return None };
            approval.approver = Name::lit("mallory");
            Some(())
        }, None)?,
        forgery("truncated", "the last two records cut off at a line boundary", &a, |_, i| {
            i.truncate(i.len().checked_sub(2)?);
            Some(())
        }, None)?,
    ];
    out.extend(reconcile_forgeries(&r)?);
    Ok(out)
}

fn reconcile_forgeries(r: &Original) -> io::Result<Vec<Forgery>> {
    // Call-2, which the operator settles on record 8.
    let notify_call = |i: &[Input]| match i.get(4)?.event {
        Event::Dispatch { call, .. } => Some(call),
        _ => None,
    };
    Ok(vec![
        claiming(2, forgery("key-recommitted-no-dedupe", "the settled call's key and arguments dispatched again under a new call id, on a tool that does not dedupe, and committed a second time", r, |_, i| {
            let call = notify_call(i)?;
            let again = resumable_kernel::Call { call_id: Name::lit("call-9"), ..call };
            let done = i.pop()?;
            i.push(at(done, 9).with_event(Event::Dispatch { call: again, prior: Prior::NONE, resource_version: None }));
            i.push(at(done, 10).with_event(Event::ToolResult { call_id: again.call_id, attempt: 0, result: call.args }));
            i.push(at(done, 11));
            Some(())
        }, Some(SpecId::Rec4))?),
        claiming(2, forgery("key-recommitted-dedupe", "a call committed, then its key and arguments dispatched again under a new call id on a deduping tool, and recorded as committed twice", r, |_, i| {
            let done = i.pop()?;
            let call = resumable_kernel::Call { call_id: Name::lit("call-8"), tool: STORE.tool, args: Digest::of(b"{}"), key: IdempotencyKey::lit("idem-8"), contract: STORE.contract };
            let again = resumable_kernel::Call { call_id: Name::lit("call-9"), ..call };
            for (t, event) in [
                (9, Event::Dispatch { call, prior: Prior::NONE, resource_version: None }),
                (10, Event::ToolResult { call_id: call.call_id, attempt: 0, result: call.args }),
                (11, Event::Dispatch { call: again, prior: Prior::NONE, resource_version: None }),
                (12, Event::ToolResult { call_id: again.call_id, attempt: 0, result: call.args }),
            ] {
                i.push(at(done, t).with_event(event));
            }
            i.push(at(done, 13));
            Some(())
        }, Some(SpecId::Rec4))?),
        forgery("intervention-rewritten", "the operator's \"committed\" rewritten as \"continue\", and the call's key and arguments dispatched and committed again under a new call id", r, |_, i| {
            let call = notify_call(i)?;
            let Event::Resume(resume) = &mut i.get_mut(7)?.event else { return None };
            resume.decision = Decision::Intervene { by: OPERATOR, resolution: Resolution::Continue };
            let again = resumable_kernel::Call { call_id: Name::lit("call-9"), ..call };
            let done = i.pop()?;
            i.push(at(done, 9).with_event(Event::Dispatch { call: again, prior: Prior::NONE, resource_version: None }));
            i.push(at(done, 10).with_event(Event::ToolResult { call_id: again.call_id, attempt: 0, result: call.args }));
            i.push(at(done, 11));
            Some(())
        }, None)?,
        forgery("operator-changed", "the header's operator changed, and the intervention signed by the new one", r, |h, i| {
            h.run.policy.operator = Name::lit("mallory");
            let Event::Resume(resume) = &mut i.get_mut(7)?.event else { return None };
            let Decision::Intervene { by, .. } = &mut resume.decision else { return None };
            *by = Name::lit("mallory");
            Some(())
        }, None)?,
        forgery("last-line-edited", "the last line edited (the completion one tick later)", r, |_, i| {
            let last = i.last_mut()?;
            last.at = Time(last.at.0 + 1);
            Some(())
        }, None)?,
    ])
}

/// The forgery, with its last `n` inputs before the final one claimed accepted.
fn claiming(n: usize, forgery: Forgery) -> Forgery {
    Forgery {
        claimed: n,
        ..forgery
    }
}

trait WithEvent {
    fn with_event(self, event: Event) -> Self;
}

impl WithEvent for Input {
    fn with_event(self, event: Event) -> Input {
        Input { event, ..self }
    }
}
