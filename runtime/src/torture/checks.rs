//! What must hold after a torture run, checked on what the store, the logs and the tool's
//! ledger show, not on what any process said:
//!
//! - every key committed at most once in the tool's ledger, and every result a run recorded
//!   as committed is one the tool committed;
//! - every key in the tool's ledger was dispatched by a committed record, and a call to a
//!   gated tool only as an accepted approval bound it (a batch's rejected or denied call
//!   never);
//! - no accepted decision lost: every request was answered, an accepted one by the very
//!   record that shows it in the log, and every decision in a log came from a request;
//! - no run stuck: every run ended or waits on a person, with its reason;
//! - every run's audit log passes the validator and ends where its anchor says.

use crate::lifecycle::{self, Verdict};
use crate::parties::describe;
use crate::program::Program;
use crate::store::{Answer, Answered, Request, Status, Store, StoreError};
use crate::tool::service::{commits_per_key, read_ledger, Entry};
use resumable_audit::Record;
use resumable_kernel::{Decision, Digest, Event, EventKind, Name, Resume, Verdict as BatchVerdict};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// Counts over all runs, from their logs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Runs.
    pub runs: u64,
    /// Runs completed.
    pub completed: u64,
    /// Runs failed.
    pub failed: u64,
    /// Runs waiting on a person, with why.
    pub waiting: Vec<String>,
    /// Lifecycle transitions committed (accepted records).
    pub commits: u64,
    /// Refused inputs recorded.
    pub rejections: u64,
    /// Recoveries (accepted `recover`).
    pub recoveries: u64,
    /// Reconciliations (accepted resumes with a `reconcile` decision).
    pub reconciles: u64,
    /// Requests from parties.
    pub requests: u64,
    /// Commits in the tool's ledger.
    pub tool_commits: u64,
    /// Fences in the tool's ledger.
    pub fences: u64,
    /// Resources moved by an outside writer, in the tool's ledger.
    pub outside_moves: u64,
    /// Decisions refused because the resource moved since their checkpoint (RES-3).
    pub resource_changed: u64,
}

/// The runs' logs, parsed, by key (for the recovery times).
pub type Logs = BTreeMap<String, Vec<Record>>;

/// Checks everything; returns the tally, the parsed logs and the violations found. With
/// `settled` false (the torture's deadline cut it short), only what must hold at every
/// instant is checked: a run still moving or a request still queued is no violation then.
pub fn check(
    store: &mut dyn Store,
    ledger: &Path,
    key: Option<&lifecycle::Key>,
    settled: bool,
) -> Result<(Tally, Logs, Vec<String>), StoreError> {
    let mut tally = Tally::default();
    let mut violations = Vec::new();
    let entries = read_ledger(ledger).map_err(|e| StoreError::Backend(format!("ledger: {e}")))?;
    let results = ledger_tally(&entries, &mut tally);
    let mut logs = Logs::new();
    let now = crate::rng::now_ms();
    // What each run's records dispatched, by the key the tool sees.
    let mut dispatched = Dispatched::new();
    for s in store.scan(true)? {
        let Some(row) = store.load(&s.key)? else {
            continue;
        };
        tally.runs += 1;
        match s.status {
            Status::Completed => tally.completed += 1,
            Status::Failed => tally.failed += 1,
            Status::Person => tally.waiting.push(describe(&row, now)),
            _ if settled => violations.push(format!("stuck: {}", describe(&row, now))),
            _ => {}
        }
        let lines = store.log(&s.key)?;
        let mut bytes = Vec::new();
        for line in &lines {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        if let Err(finding) = lifecycle::validate_log(&bytes, row.tail, key) {
            violations.push(format!("audit log of {}: {finding}", s.key));
        }
        let records: Vec<Record> = lines
            .iter()
            .skip(1)
            .filter_map(|l| lifecycle::parse_record(l).ok())
            .collect();
        count(&records, &mut tally);
        let run = Judged {
            row: &row,
            records: &records,
        };
        run.results(&results, &mut violations);
        run.dispatches(&mut dispatched, &mut violations);
        let inbox = store.inbox(&s.key, false)?;
        tally.requests += inbox.len() as u64;
        decisions(&s.key.0, &inbox, &records, settled, &mut violations);
        logs.insert(s.key.0.clone(), records);
    }
    ledger_dispatched(&entries, &dispatched, &mut violations);
    Ok((tally, logs, violations))
}

/// Each key the tool sees, with the run and idempotency key of the record that dispatched it,
/// for people to read.
type Dispatched = BTreeMap<String, String>;

/// One run's records, judged against the tool's ledger and the run's own approvals.
struct Judged<'a> {
    row: &'a crate::store::Row,
    records: &'a [Record],
}

impl Judged<'_> {
    /// Every result the run recorded as committed is one the tool committed (REC-4).
    fn results(&self, results: &HashSet<(String, Digest)>, violations: &mut Vec<String>) {
        for r in self.records {
            let Verdict::Accepted(a) = &r.verdict else {
                continue;
            };
            if let Some(c) = a.committed {
                let tool_key = lifecycle::tool_key(self.row.run.identity(), &c.key);
                if !results.contains(&(tool_key.clone(), c.result)) {
                    violations.push(format!(
                        "{}: record {} shows a result for {tool_key} the tool never committed",
                        self.row.key, r.seq
                    ));
                }
            }
        }
    }

    /// Notes every dispatch the run's records command (a batch's several in one record),
    /// and checks that a call to a gated tool is dispatched only as an accepted approval
    /// bound it: its call id and arguments, approved or edited (APR-1, BAT-2, BAT-3). A call
    /// rejected, answered or denied is never dispatched.
    fn dispatches(&self, dispatched: &mut Dispatched, violations: &mut Vec<String>) {
        let gated: HashSet<Name> = Program::parse(&self.row.program)
            .map(|p| p.tools())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t.gated)
            .map(|t| t.tool)
            .collect();
        let approved = approved(self.records);
        for r in self.records {
            let Verdict::Accepted(a) = &r.verdict else {
                continue;
            };
            for d in a.dispatch.iter().chain(a.dispatch_more.iter()) {
                dispatched.insert(
                    d.tool_key.to_string(),
                    format!("{}/{}", self.row.key, d.key),
                );
                if gated.contains(&d.tool) && !approved.contains(&(d.call_id, d.args)) {
                    violations.push(format!(
                        "APR-1: {}: record {} dispatches {} ({}) with arguments no accepted \
                         approval bound",
                        self.row.key, r.seq, d.call_id, d.tool
                    ));
                }
            }
        }
    }
}

/// The calls (call id and arguments) the run's accepted decisions approved: a single
/// approval's call, and a batch's approved and edited calls (an edit with the approver's
/// arguments). A batch input that denies records only its denials (spec 5.5): its
/// approvals approve nothing.
fn approved(records: &[Record]) -> HashSet<(Name, Digest)> {
    let mut out = HashSet::new();
    for r in records {
        let (Verdict::Accepted(_), Event::Resume(resume)) = (&r.verdict, &r.input.event) else {
            continue;
        };
        match &resume.decision {
            Decision::Approve(a) => {
                out.insert((a.call_id, a.args));
            }
            Decision::Batch { decisions } => {
                if decisions.iter().any(|d| d.verdict == BatchVerdict::Deny) {
                    continue;
                }
                for d in decisions.iter() {
                    match d.verdict {
                        BatchVerdict::Approve => {
                            out.insert((d.approval.call_id, d.approval.args));
                        }
                        BatchVerdict::Edit { args } => {
                            out.insert((d.approval.call_id, args));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Each key committed at most once in the tool's ledger (EFF-1), and only a key some run's
/// record dispatched: nothing reaches the tool before the transition that commands it is
/// committed (WAL-1), so a rejected or denied call's key is never there.
fn ledger_dispatched(entries: &[Entry], dispatched: &Dispatched, violations: &mut Vec<String>) {
    for (key, n) in commits_per_key(entries) {
        let name = dispatched.get(&key);
        let shown = name.map_or(String::new(), |n| format!(" ({n})"));
        if n > 1 {
            violations.push(format!(
                "EFF-1: tool key {key}{shown} was committed {n} times"
            ));
        }
        if name.is_none() {
            violations.push(format!(
                "WAL-1: tool key {key} was committed, and no record dispatched it"
            ));
        }
    }
}

/// Counts the ledger's entries; returns every (key, result) the tool committed.
fn ledger_tally(entries: &[Entry], tally: &mut Tally) -> HashSet<(String, Digest)> {
    let mut results = HashSet::new();
    for e in entries {
        match e {
            Entry::Commit { key, result, .. } => {
                tally.tool_commits += 1;
                results.insert((key.clone(), *result));
            }
            Entry::Fence { .. } => tally.fences += 1,
            Entry::Moved { .. } => tally.outside_moves += 1,
        }
    }
    results
}

fn count(records: &[Record], tally: &mut Tally) {
    for r in records {
        match &r.verdict {
            Verdict::Rejected(r) => {
                tally.rejections += 1;
                if r.kind() == resumable_kernel::RejectionKind::ResourceChanged {
                    tally.resource_changed += 1;
                }
            }
            Verdict::Accepted(a) => {
                tally.commits += 1;
                if a.event == EventKind::Recover {
                    tally.recoveries += 1;
                }
                if a.decision == Some(resumable_kernel::DecisionKind::Reconcile) {
                    tally.reconciles += 1;
                }
            }
        }
    }
}

/// Whether `event` is what `request` asks for.
fn same(request: &Request, event: &Event) -> bool {
    match (request, event) {
        (
            Request::Resume {
                checkpoint,
                decision,
            },
            Event::Resume(Resume {
                checkpoint: c,
                decision: d,
                ..
            }),
        ) => checkpoint == c && decision == d,
        (Request::Cancel { by }, Event::Cancel { by: b }) => by == b,
        _ => false,
    }
}

/// No accepted decision lost, none invented.
fn decisions(
    key: &str,
    inbox: &[crate::store::Inbox],
    records: &[Record],
    settled: bool,
    violations: &mut Vec<String>,
) {
    let mut claimed = HashSet::new();
    for request in inbox {
        let Some(Answered { answer, seq }) = request.answer else {
            if settled {
                violations.push(format!("{key}: request #{} was never answered", request.id));
            }
            continue;
        };
        if answer == Answer::Unauthenticated {
            continue; // refused before the kernel: no record carries it
        }
        let record = records.iter().find(|r| r.seq == seq);
        let matches = match (record, answer) {
            (Some(r), Answer::Accepted(rev)) => {
                matches!(r.verdict, Verdict::Accepted(_)) && r.revision == rev
            }
            (Some(r), Answer::Rejected(rej)) => r.verdict == Verdict::Rejected(rej),
            (Some(_), Answer::Unauthenticated) | (None, _) => false,
        };
        if !matches || !record.is_some_and(|r| same(&request.request, &r.input.event)) {
            violations.push(format!(
                "{key}: request #{} is answered {answer:?} by record {seq}, which does not show it",
                request.id
            ));
        }
        claimed.insert(seq);
    }
    for r in records {
        let from_outside = match &r.input.event {
            Event::Resume(res) => !matches!(res.decision, resumable_kernel::Decision::Reconcile(_)),
            Event::Cancel { .. } => true,
            _ => false,
        };
        if from_outside && matches!(r.verdict, Verdict::Accepted(_)) && !claimed.contains(&r.seq) {
            violations.push(format!(
                "{key}: record {} shows a decision no request made",
                r.seq
            ));
        }
    }
}
