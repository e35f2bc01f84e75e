//! The calls a run made, as an adapter that keeps their arguments records them: the history
//! index the kernel's entries build (the prior of a call, spec 4.9) and, for each call, the
//! arguments it was bound with and how it ended.
//!
//! The kernel binds a call by its argument digest alone; a tool needs the arguments
//! themselves. The book keeps them from the moment the call is proposed (or an approver edits
//! them) and hands them out only with a dispatch whose digest they match, so a tool never
//! receives arguments nobody approved.

use crate::stage::{Ledger, Staged};
use resumable_audit::history::History;
use resumable_audit::jcs;
use resumable_kernel::{
    Call, Digest, Dispatch, Event, Fingerprint, HistoryEntry, KeyUse, Name, Prior, Run, Time,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// How a recorded call ended, as the agent is told.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// The tool committed it with this result (JSON text).
    Result {
        /// The tool's result, as the tool returned it.
        result: String,
    },
    /// The approver rejected it, with this message for the agent (BAT-2: the run goes on).
    Rejected {
        /// The message.
        message: String,
    },
    /// The approver answered in the tool's place (the person is the tool).
    Responded {
        /// The answer.
        message: String,
    },
}

/// One call the run bound.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallRecord {
    /// The call as the kernel bound it: its tool, argument digest, key and contract.
    pub call: Call,
    /// The arguments the tool receives, as RFC 8785 canonical JSON: the proposed ones, or an
    /// approver's edit. Their digest is the dispatch's (`args_digest`).
    pub args: String,
    /// The digest of `args`.
    pub args_digest: Digest,
    /// How it ended, once it has.
    pub outcome: Option<Outcome>,
    /// How many party answers were fed while it waited, accepted or refused. A framework that
    /// hands a node's earlier answers back in order when the node runs again (LangGraph's
    /// `interrupt()`) skips that many before it reads a new one.
    pub answers: u32,
}

/// A call's arguments as JSON text, checked and made canonical (RFC 8785), with their digest.
/// On the wire, the canonical text alone; read back, it is checked and digested again.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Args {
    /// The canonical form.
    pub canonical: String,
    /// Its SHA-256: what an approval binds.
    pub digest: Digest,
}

impl Args {
    /// Reads `json` (any JSON value) and makes it canonical; refused with the reader's reason
    /// and byte offset (a repeated name, a lone surrogate, an integer beyond 2^53 - 1).
    pub fn parse(json: &str) -> Result<Args, String> {
        let canonical = jcs::canonical(json).map_err(|e| format!("arguments: {e}"))?;
        let digest = Digest::of(canonical.as_bytes());
        Ok(Args { canonical, digest })
    }
}

impl Serialize for Args {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.canonical)
    }
}

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Args::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// What an input carries that the kernel binds only by its digest, for the book to keep once
/// the input is accepted.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Kept {
    /// Calls proposed, with their arguments: kept when the transition binds them.
    pub proposed: Vec<(Call, Args)>,
    /// An approver's edits: the call id and the arguments it now runs with.
    pub edited: Vec<(Name, Args)>,
    /// Outcomes the transition records: a tool's result, a rejection's or a response's text.
    pub outcomes: Vec<(Name, Outcome)>,
    /// The call a party's answer was fed for, counted whether it was accepted or refused.
    pub answered: Option<Name>,
}

/// A call the driver hands to a tool: the kernel's dispatch with the arguments the book kept.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call.
    pub call_id: Name,
    /// The tool.
    pub tool: Name,
    /// The key the tool sees (KEY-3): the call's key bound to the run's identity.
    pub tool_key: Digest,
    /// The attempt (a fencing tool's retry carries the next one).
    pub attempt: u8,
    /// The arguments, canonical JSON, whose digest is the dispatch's.
    pub args: String,
    /// Their digest.
    pub args_digest: Digest,
}

/// Why a dispatch could not be handed to its tool.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum HandOut {
    /// The book holds no arguments for the call: it was bound by a driver that kept none.
    #[error("call {call_id}: no arguments are kept for it")]
    Unknown {
        /// The call.
        call_id: Name,
    },
    /// The kept arguments are not the ones the dispatch carries: they are never sent.
    #[error(
        "call {call_id}: the kept arguments digest to {kept}, the dispatch carries {dispatched}"
    )]
    Mismatch {
        /// The call.
        call_id: Name,
        /// The digest of the kept arguments.
        kept: Digest,
        /// The dispatch's.
        dispatched: Digest,
    },
}

/// One run's calls: the history index and a record per call id. On the wire `{"call_ids",
/// "keys", "calls"}`, a field it does not have refused.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(into = "BookForm", from = "BookForm")]
pub struct Book {
    /// The history index the kernel's entries build: every call id and key bound, and
    /// whether a key is spent (KEY-1, KEY-2, REC-4).
    index: History,
    /// The calls, by call id.
    calls: BTreeMap<String, CallRecord>,
}

/// [`Book`] on the wire.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BookForm {
    call_ids: BTreeSet<Fingerprint>,
    keys: BTreeMap<Fingerprint, KeyUse>,
    calls: BTreeMap<String, CallRecord>,
}

impl From<Book> for BookForm {
    fn from(book: Book) -> BookForm {
        let (call_ids, keys) = book.index.parts();
        BookForm {
            call_ids: call_ids.clone(),
            keys: keys.clone(),
            calls: book.calls,
        }
    }
}

impl From<BookForm> for Book {
    fn from(form: BookForm) -> Book {
        Book {
            index: History::of_parts(form.call_ids, form.keys),
            calls: form.calls,
        }
    }
}

impl Ledger for Book {
    type Error = std::convert::Infallible;
    fn prior(&mut self, call: &Call) -> Result<Prior, Self::Error> {
        Ok(self.prior_of(call))
    }
}

impl Book {
    /// What the history holds of `call`'s id and key.
    pub fn prior_of(&self, call: &Call) -> Prior {
        self.index.prior(call)
    }

    /// The record of the call `call_id`, if the run bound one.
    pub fn record(&self, call_id: &Name) -> Option<&CallRecord> {
        self.calls.get(call_id.as_str())
    }

    /// How many calls the run bound.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether the run bound no call.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Drops the records of the calls that are settled, keeping the history index whole: a
    /// long run's book, carried from one store (or one continued workflow) to the next, then
    /// grows by two fingerprints a call rather than by its arguments and its outcome.
    ///
    /// Kept: every call with no outcome yet (waiting for a decision, in flight, unknown), and
    /// every call `run` names (the one in flight or suspended on, the slots of its last batch,
    /// its last recorded result), so a turn being decided or carried out reads its calls as
    /// before. Dropped: the others' arguments, outcomes and answer counts. The index still
    /// holds their call ids and keys, so the kernel refuses a call id or a key used again by
    /// name (KEY-1, KEY-2), as it refuses any reuse: a settled call proposed again after
    /// compaction is refused as a reused call id, where before it found its recorded outcome.
    /// Returns how many records were dropped.
    pub fn compact(&mut self, run: &Run) -> usize {
        let mut named: Vec<Name> = Vec::new();
        if let Some(f) = run.in_flight() {
            named.push(f.call.call.call_id);
        }
        if let Some((call, _)) = run.suspension().and_then(|s| s.reason.call()) {
            named.push(call.call.call_id);
        }
        if let Some(batch) = run.batch() {
            named.extend(batch.slots.iter().map(|slot| slot.call.call.call_id));
        }
        if let Some(last) = run.last_call() {
            named.push(last.call_id);
        }
        let before = self.calls.len();
        self.calls
            .retain(|_, r| r.outcome.is_none() || named.contains(&r.call.call_id));
        before - self.calls.len()
    }

    /// How many call ids the history index holds: every call the run ever bound, whether
    /// its record is kept or was dropped by [`Book::compact`].
    pub fn bound(&self) -> usize {
        self.index.calls()
    }

    /// Writes what a staged input changes in the book, to be committed with it: the history
    /// entries of an accepted transition, the arguments of the calls it bound, the edits and
    /// outcomes it recorded, and the party answer it consumed (accepted or refused).
    pub fn keep(&mut self, staged: &Staged, kept: &Kept) {
        if let Some(call_id) = &kept.answered {
            if let Some(r) = self.calls.get_mut(call_id.as_str()) {
                r.answers = r.answers.saturating_add(1);
            }
        }
        let Some(t) = staged.accepted() else { return };
        for entry in t.effects.histories() {
            self.index.apply(entry);
        }
        for (call, args) in &kept.proposed {
            let bound = t
                .effects
                .histories()
                .any(|e| *e == HistoryEntry::bound(call));
            if bound && !self.calls.contains_key(call.call_id.as_str()) {
                self.calls.insert(
                    call.call_id.as_str().to_string(),
                    CallRecord {
                        call: *call,
                        args: args.canonical.clone(),
                        args_digest: args.digest,
                        outcome: None,
                        answers: 0,
                    },
                );
            }
        }
        for (call_id, args) in &kept.edited {
            if let Some(r) = self.calls.get_mut(call_id.as_str()) {
                r.args.clone_from(&args.canonical);
                r.args_digest = args.digest;
            }
        }
        for (call_id, outcome) in &kept.outcomes {
            if let Some(r) = self.calls.get_mut(call_id.as_str()) {
                r.outcome = Some(outcome.clone());
            }
        }
    }

    /// The call `d` commands, with the arguments the book kept for it; refused if none are
    /// kept or their digest is not the dispatch's ([`released`]).
    pub fn tool_call(&self, d: &Dispatch) -> Result<ToolCall, HandOut> {
        let record = self
            .record(&d.call_id)
            .ok_or(HandOut::Unknown { call_id: d.call_id })?;
        let digest = Digest::of(record.args.as_bytes());
        released(d, digest)?;
        // The digest kept beside the text is the text's: a book altered in between hands
        // nothing out either.
        if record.args_digest != digest {
            return Err(HandOut::Mismatch {
                call_id: d.call_id,
                kept: record.args_digest,
                dispatched: d.args,
            });
        }
        Ok(ToolCall {
            call_id: d.call_id,
            tool: d.tool,
            tool_key: d.tool_key,
            attempt: d.attempt,
            args: record.args.clone(),
            args_digest: digest,
        })
    }

    /// The tool's answer to `call` as the input that records it, and what the book keeps of
    /// it: the result's text, whose digest the run records (WAL-2).
    pub fn tool_result(call: &ToolCall, result: &str) -> Result<(Event, Kept), String> {
        let digest = jcs::digest(result).map_err(|e| format!("tool result: {e}"))?;
        let event = Event::ToolResult {
            call_id: call.call_id,
            attempt: call.attempt,
            result: digest,
        };
        let kept = Kept {
            outcomes: vec![(
                call.call_id,
                Outcome::Result {
                    result: result.to_string(),
                },
            )],
            ..Kept::default()
        };
        Ok((event, kept))
    }
}

/// Whether arguments kept for `d`'s call whose digest is `kept` may go to its tool: only if
/// `kept` is the dispatch's digest, the one its approval bound (APR-5). The rule of
/// [`Book::tool_call`], on digests alone, for a driver that keeps arguments its own way (the
/// model's world keeps them as digests).
pub fn released(d: &Dispatch, kept: Digest) -> Result<(), HandOut> {
    if kept == d.args {
        Ok(())
    } else {
        Err(HandOut::Mismatch {
            call_id: d.call_id,
            kept,
            dispatched: d.args,
        })
    }
}

/// The time a suspension asked for now, `expires_in` from now, ends.
pub fn expiry(now: Time, expires_in: u64) -> Time {
    Time(now.0.saturating_add(expires_in))
}
