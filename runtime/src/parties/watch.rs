//! An approver that watches the store and decides, as a person at a console would: for the
//! torture, and for trying the runtime by hand. It can also play the payment system that
//! sends the order program's callback.

use super::{approval, callback, PartyError};
use crate::rng::{now_ms, Rng};
use crate::store::{Answer, Request, RunKey, Status, Store};
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

/// Decides on every suspension it sees, once, until the process is stopped (or, with
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
        let (request, now_decided) = match decided.get(&at) {
            Some(Decided::DeniedAfterMove) => continue,
            // Read from the store, not remembered: an approver started again denies too.
            _ if moved => {
                let deny = approval(&row, None, &w.name, false, w.valid_ms)?;
                (deny, Decided::DeniedAfterMove)
            }
            Some(Decided::Once) => continue,
            None if s.status == Status::Approval => {
                let approve = !rng.percent(w.deny_percent);
                let request = approval(&row, None, &w.name, approve, w.valid_ms)?;
                (request, Decided::Once)
            }
            None => (callback(&row, "settled")?, Decided::Once),
        };
        let (party, key) = match (&w.callback_as, s.status) {
            (Some((name, key)), Status::Callback) => (name, key),
            _ => (&w.name, &w.key),
        };
        let seal = key.as_ref().map(|k| k.seal(&s.key, party, &request));
        store.submit_sealed(&s.key, party, now_ms(), &request, seal)?;
        // Decided once it is in the inbox: a submit the store lost is made again next look.
        decided.insert(at, now_decided);
        *sent += 1;
        if rng.percent(w.duplicate_percent) {
            store.submit_sealed(&s.key, party, now_ms(), &request, seal)?;
            *sent += 1;
        }
    }
    Ok(())
}
