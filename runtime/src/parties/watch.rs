//! An approver that watches the store and decides, as a person at a console would: for the
//! torture, and for trying the runtime by hand. It can also play the payment system that
//! sends the order program's callback.

use super::{approval, callback, decision, undecided, PartyError};
use crate::lifecycle::Word;
use crate::rng::{now_ms, Rng};
use crate::store::{Answer, Request, Row, RunKey, Status, Store};
use resumable_kernel::{Rejection, Revision};
use std::collections::HashMap;
use std::time::Duration;

/// How the watching approver behaves.
#[derive(Clone, Debug)]
pub struct Watch {
    /// Its name: the approver the programs name, or another (whose decisions are refused).
    pub name: String,
    /// Seed of its choices.
    pub seed: u64,
    /// Share of decisions, in percent, that deny.
    pub deny_percent: u64,
    /// Share of decisions, in percent, sent twice (a second tab, a retried request).
    pub duplicate_percent: u64,
    /// Also send the callbacks runs wait for.
    pub callbacks: bool,
    /// How long its approvals stay valid.
    pub valid_ms: u64,
    /// Pause between looks at the store.
    pub poll: Duration,
    /// Its key, to seal each request with (see [`crate::auth::SharedKey::seal`]).
    pub key: Option<crate::auth::SharedKey>,
    /// Who it sends callbacks as (the payment system's name and key), when not as itself.
    pub callback_as: Option<(String, Option<crate::auth::SharedKey>)>,
}

/// Decides on every suspension it sees, once (a batch's calls each on its own, see
/// [`BATCH_REJECT_PERCENT`] and [`BATCH_SPLIT_PERCENT`]), until the process is stopped (or, with
/// `rounds`, for that many looks). Returns how many requests it sent.
pub fn watch(store: &mut dyn Store, w: &Watch, rounds: Option<u64>) -> Result<u64, PartyError> {
    let mut rng = Rng::new(w.seed);
    let mut decided = HashMap::new();
    let mut sent = 0;
    let mut round = 0;
    let mut backoff = crate::backoff::Backoff::new();
    while rounds.is_none_or(|r| round < r) {
        round += 1;
        match look(store, w, &mut rng, &mut decided, &mut sent) {
            Ok(()) => backoff.succeeded(&w.name),
            // The store failed (a PostgreSQL restart): wait, saying why, and look again.
            Err(PartyError::Store(e)) if crate::backoff::transient(&e) => {
                backoff.failed(&w.name, &e);
                continue;
            }
            Err(e) => return Err(e),
        }
        std::thread::sleep(w.poll);
    }
    Ok(sent)
}

/// What the approver did about one checkpoint.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Decided {
    /// Decided once, as the seed drew it.
    Once,
    /// Its approval was refused because the resource moved since the checkpoint (RES-3), and
    /// it denied: the call it approved no longer acts on what it was shown, and no approval
    /// of that checkpoint can be accepted any more.
    DeniedAfterMove,
}

/// Whether a decision on the checkpoint of `key` at `revision` was refused because the
/// resource moved since (`resource_changed`).
fn refused_for_a_moved_resource(
    store: &mut dyn Store,
    key: &RunKey,
    revision: Revision,
) -> Result<bool, PartyError> {
    Ok(store.inbox(key, false)?.iter().any(|r| {
        let on_it = matches!(&r.request, Request::Resume { checkpoint, .. }
            if checkpoint.revision == revision);
        on_it
            && matches!(
                r.answer.map(|a| a.answer),
                Some(Answer::Rejected(Rejection::ResourceChanged { .. }))
            )
    }))
}

/// One look at the store: a decision on each suspension not yet decided, and a denial where
/// an approval was refused for a moved resource.
fn look(
    store: &mut dyn Store,
    w: &Watch,
    rng: &mut Rng,
    decided: &mut HashMap<(RunKey, Revision), Decided>,
    sent: &mut u64,
) -> Result<(), PartyError> {
    for s in store.scan(false)? {
        let wanted = match s.status {
            Status::Approval => true,
            Status::Callback => w.callbacks,
            _ => false,
        };
        if !wanted || s.pending > 0 {
            continue;
        }
        let Some(row) = store.load(&s.key)? else {
            continue;
        };
        let Some(cp) = row.checkpoint else { continue };
        let at = (s.key.clone(), cp.revision);
        let moved = s.status == Status::Approval
            && refused_for_a_moved_resource(store, &s.key, cp.revision)?;
        let (requests, now_decided) = match decided.get(&at) {
            Some(Decided::DeniedAfterMove) => continue,
            // Read from the store, not remembered: an approver started again denies too.
            _ if moved => {
                let deny = approval(&row, None, &w.name, false, w.valid_ms)?;
                (vec![deny], Decided::DeniedAfterMove)
            }
            Some(Decided::Once) => continue,
            None if s.status == Status::Approval && cp.batch.is_some() => {
                (batch_requests(&row, w, rng)?, Decided::Once)
            }
            None if s.status == Status::Approval => {
                let approve = !rng.percent(w.deny_percent);
                let request = approval(&row, None, &w.name, approve, w.valid_ms)?;
                (vec![request], Decided::Once)
            }
            None => (vec![callback(&row, "settled")?], Decided::Once),
        };
        let (party, key) = match (&w.callback_as, s.status) {
            (Some((name, key)), Status::Callback) => (name, key),
            _ => (&w.name, &w.key),
        };
        for request in &requests {
            let seal = key.as_ref().map(|k| k.seal(&s.key, party, request));
            store.submit_sealed(&s.key, party, now_ms(), request, seal)?;
            *sent += 1;
            if rng.percent(w.duplicate_percent) {
                store.submit_sealed(&s.key, party, now_ms(), request, seal)?;
                *sent += 1;
            }
        }
        // Decided once it is in the inbox: a submit the store lost is made again next look.
        decided.insert(at, now_decided);
    }
    Ok(())
}

/// The share of a batch's calls, in percent, that the watching approver rejects (the call
/// never runs, the run goes on); the rest it approves, but for the denials drawn at
/// [`Watch::deny_percent`] (the run fails).
pub const BATCH_REJECT_PERCENT: u64 = 30;

/// The share of batches, in percent, whose decisions the watching approver sends as two
/// requests (the first call's, then the others'), as the SDKs send approvals one item at a
/// time: the first leaves the batch waiting for the rest.
pub const BATCH_SPLIT_PERCENT: u64 = 25;

/// The decisions on a batch's calls not yet decided, each drawn from the seed: deny, reject
/// or approve; as one request, or split in two.
fn batch_requests(row: &Row, w: &Watch, rng: &mut Rng) -> Result<Vec<Request>, PartyError> {
    let words: Vec<(String, Word)> = undecided(row)
        .into_iter()
        .map(|call_id| {
            let word = if rng.percent(w.deny_percent) {
                Word::Deny
            } else if rng.percent(BATCH_REJECT_PERCENT) {
                Word::Reject {
                    message: format!("{call_id}: not in this turn"),
                }
            } else {
                Word::Approve
            };
            (call_id, word)
        })
        .collect();
    let split = words.len() > 1 && rng.percent(BATCH_SPLIT_PERCENT);
    let parts: Vec<&[(String, Word)]> = if split {
        let (first, rest) = words.split_at(1);
        vec![first, rest]
    } else {
        vec![words.as_slice()]
    };
    parts
        .into_iter()
        .map(|part| decision(row, None, &w.name, part, w.valid_ms))
        .collect()
}
