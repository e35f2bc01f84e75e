//! The rules a log was written under, and the kernel values of older rules read as they were
//! written.
//!
//! A kernel value in a record (an input, a rejection, a dispatch, a checkpoint digest) has the
//! shape of the rules of the kernel that wrote it (`resumable_kernel::RULES_VERSION`). This
//! validator judges a log by re-running its own kernel, so it can judge a log of other rules
//! only where it can read their shapes and its kernel still agrees with them. It reads:
//!
//! - its own rules' shapes ([`Dialect::Current`]), which are also those of rules 4 and 5;
//! - those of rules 3 ([`Dialect::Rules3`]): a call proposed without the `prior` its history
//!   holds (the kernel kept the history itself, so the validator states the prior its own
//!   history holds, which is what that kernel checked) and a verdict without the `history`
//!   effect;
//! - those of rules 1 and 2 ([`Dialect::Rules2`]): a dispatch and a query without the tool key
//!   (KEY-3 came with rules 3), and checkpoints of schema 2, current then, digested in the
//!   schema 2 encoding and without a pending cancel.
//!
//! Rules of which it reads no shapes (newer ones, or older ones it keeps no reader for) are not
//! judged at all. Where its kernel answers a record of older rules otherwise than the log, the
//! rules may have changed between them or the log may be forged, and without the older kernel
//! the validator cannot tell which: it stops judging there and says so (`not_judged`), rather
//! than calling an honest log tampered. The envelope (the chain, `seq`, the revisions, the
//! anchor) is the format's, the same under every rules, and is checked to the end in any case.

use crate::finding::Older;
use crate::{Accepted, Claim, Commit, Verdict};
use resumable_kernel::checkpoint::{tool_key, CheckpointV2, SCHEMA_V2, SCHEMA_VERSION};
use resumable_kernel::{
    Checkpoint, DecisionKind, Digest, Dispatch, Effect, Event, EventKind, IdempotencyKey, Identity,
    Input, Name, PhaseKind, ReasonKind, Rejection, Run, Transition, RULES_VERSION,
};
use serde::{Deserialize, Serialize};

/// The rules every release that wrote format 2 decided by: format 2 came with rules 3, and
/// format 3, which names its rules, replaced it while they held.
pub(crate) const RULES_OF_FORMAT_2: u16 = 3;

/// How a log's kernel values are shaped and its checkpoint digests computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// As this validator's kernel writes them.
    Current,
    /// As the kernel of rules 3 wrote them.
    Rules3,
    /// As the kernels of rules 1 and 2 wrote them.
    Rules2,
}

impl Dialect {
    /// The dialect the kernel values of `rules` are written in, if this validator reads it.
    fn of_rules(rules: u16) -> Option<Dialect> {
        // Rules 5 added batches and optional fields only, and rules 6 changed verdicts, not
        // shapes: logs of rules 4 and 5 read as written.
        if rules == RULES_VERSION || rules == 4 || rules == 5 {
            Some(Dialect::Current)
        } else if rules == 3 {
            Some(Dialect::Rules3)
        } else if rules == 1 || rules == 2 {
            Some(Dialect::Rules2)
        } else {
            None
        }
    }
}

/// The dialects a log may be written in: one, for a log whose header names or implies its
/// rules; for a format 1 log, which names none, those of every rules version that wrote it,
/// until its records tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dialects {
    current: bool,
    rules3: bool,
    rules2: bool,
}

impl Dialects {
    /// Every dialect this validator reads: a format 1 log names no rules (the releases of
    /// rules 1 and 2 wrote it, and a format 1 rendering of a later log is one too), so it is
    /// read in each until its records tell them apart.
    pub(crate) fn all() -> Dialects {
        Dialects {
            current: true,
            rules3: true,
            rules2: true,
        }
    }

    /// The dialect of `rules`, or none if this validator does not read it.
    pub(crate) fn of_rules(rules: u16) -> Dialects {
        let mut d = Dialects {
            current: false,
            rules3: false,
            rules2: false,
        };
        if let Some(dialect) = Dialect::of_rules(rules) {
            d.set(dialect, true);
        }
        d
    }

    fn set(&mut self, dialect: Dialect, on: bool) {
        match dialect {
            Dialect::Current => self.current = on,
            Dialect::Rules3 => self.rules3 = on,
            Dialect::Rules2 => self.rules2 = on,
        }
    }

    /// Whether no dialect is left: the log's rules are not read.
    pub(crate) fn is_empty(self) -> bool {
        !self.current && !self.rules3 && !self.rules2
    }

    /// The dialects, the current one first.
    pub(crate) fn each(self) -> impl Iterator<Item = Dialect> {
        [
            (self.current, Dialect::Current),
            (self.rules3, Dialect::Rules3),
            (self.rules2, Dialect::Rules2),
        ]
        .into_iter()
        .filter_map(|(on, d)| on.then_some(d))
    }

    /// Only those of `self` that are also in `keep`.
    pub(crate) fn only(self, keep: &[Dialect]) -> Dialects {
        let mut d = self;
        for dialect in self.each() {
            d.set(dialect, keep.contains(&dialect));
        }
        d
    }
}

/// A dispatch or query as rules 1 and 2 wrote it: without the tool key.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DispatchR2 {
    call_id: Name,
    tool: Name,
    args: Digest,
    key: IdempotencyKey,
    attempt: u8,
}

impl DispatchR2 {
    fn of(d: &Dispatch) -> DispatchR2 {
        DispatchR2 {
            call_id: d.call_id,
            tool: d.tool,
            args: d.args,
            key: d.key,
            attempt: d.attempt,
        }
    }

    /// The dispatch with the tool key this validator's kernel gives the run's key, so that the
    /// whole-log properties read it as they read any other.
    fn current(&self, identity: &Identity) -> Dispatch {
        Dispatch {
            call_id: self.call_id,
            tool: self.tool,
            args: self.args,
            key: self.key,
            tool_key: tool_key(identity, &self.key),
            attempt: self.attempt,
        }
    }
}

/// An accepted verdict as rules 1 and 2 wrote it: the checkpoint digest is a schema 2 digest,
/// dispatches carry no tool key.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AcceptedR2 {
    event: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    decision: Option<DecisionKind>,
    phase: PhaseKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<ReasonKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    checkpoint: Option<Digest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dispatch: Option<DispatchR2>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    query: Option<DispatchR2>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    committed: Option<Commit>,
}

/// A verdict as rules 1 and 2 wrote it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[expect(
    clippy::large_enum_variant,
    reason = "read one record at a time, like the current verdict"
)]
pub(crate) enum VerdictR2 {
    Accepted(AcceptedR2),
    Rejected(Rejection),
}

impl VerdictR2 {
    /// The verdict in this validator's shapes, for the whole-log properties: the same claim,
    /// with the tool keys of the run's identity.
    pub(crate) fn current(&self, identity: &Identity) -> Verdict {
        match self {
            VerdictR2::Rejected(r) => Verdict::Rejected(*r),
            VerdictR2::Accepted(a) => Verdict::Accepted(Accepted {
                event: a.event,
                decision: a.decision,
                phase: a.phase,
                reason: a.reason,
                checkpoint: a.checkpoint,
                dispatch: a.dispatch.map(|d| d.current(identity)),
                query: a.query.map(|d| d.current(identity)),
                committed: a.committed,
                history: None,
                dispatch_more: Default::default(),
                history_more: Default::default(),
            }),
        }
    }
}

#[expect(
    clippy::large_enum_variant,
    reason = "a verdict holds a batch's dispatches inline, as the kernel does"
)]
/// A verdict read in one dialect.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Read {
    /// In this validator's shapes.
    Current(Verdict),
    /// In the shapes of rules 1 and 2.
    Rules2(VerdictR2),
}

impl Read {
    /// The verdict as the log wrote it, for a finding.
    pub(crate) fn claim(self) -> Claim {
        match self {
            Read::Current(v) => Claim::Verdict(v),
            Read::Rules2(v) => Claim::Older(Older(v)),
        }
    }

    /// The verdict as the log wrote it, in JSON, for a report.
    pub(crate) fn to_json(self) -> String {
        match self {
            Read::Current(v) => serde_json::to_string(&v),
            Read::Rules2(v) => serde_json::to_string(&v),
        }
        .unwrap_or_default()
    }
}

/// Parses a record's verdict in `dialect`; the record's other fields are the envelope's, read
/// before.
pub(crate) fn read_verdict(text: &str, dialect: Dialect) -> Result<Read, serde_json::Error> {
    #[derive(Deserialize)]
    struct Body<V> {
        verdict: V,
    }
    Ok(match dialect {
        Dialect::Current | Dialect::Rules3 => {
            Read::Current(serde_json::from_str::<Body<Verdict>>(text)?.verdict)
        }
        Dialect::Rules2 => Read::Rules2(serde_json::from_str::<Body<VerdictR2>>(text)?.verdict),
    })
}

/// `input` as this validator's kernel reads it, written in `dialect` on `run`: under rules 1
/// and 2, a resume's checkpoint of schema 2 was current, so it is migrated explicitly, with
/// the pending cancel the run itself holds (schema 2 had no field for it). A checkpoint that
/// does not migrate (its schema 2 digest does not verify) is left as it is, for the kernel to
/// refuse.
pub(crate) fn input_in(dialect: Dialect, run: &Run, input: &Input) -> Input {
    let Event::Resume(resume) = &input.event else {
        return *input;
    };
    let cp = &resume.checkpoint;
    if dialect != Dialect::Rules2 || cp.schema_version != SCHEMA_V2 {
        return *input;
    }
    let cancel = Checkpoint::of(run).and_then(|c| c.cancel_requested_by);
    match as_v2(cp).migrate(cancel) {
        Ok(migrated) => {
            let mut resume = *resume;
            resume.checkpoint = migrated;
            Input {
                at: input.at,
                event: Event::Resume(resume),
            }
        }
        Err(_) => *input,
    }
}

/// The checkpoint's fields as a schema 2 checkpoint, its digest as it carries it.
fn as_v2(cp: &Checkpoint) -> CheckpointV2 {
    CheckpointV2 {
        schema_version: cp.schema_version,
        identity: cp.identity,
        revision: cp.revision,
        resource_version: cp.resource_version,
        reason: cp.reason,
        next_intent: cp.next_intent,
        pending: cp.pending,
        key_digest: cp.key_digest,
        requester: cp.requester,
        waiting_on: cp.waiting_on,
        expires_at: cp.expires_at,
        responsible: cp.responsible,
        created_at: cp.created_at,
        digest: cp.digest,
    }
}

/// The digest a kernel of rules 1 or 2 gave this checkpoint: schema 2's, over the same fields.
/// `None` for a checkpoint that schema 2 cannot hold (a pending cancel) or of another schema.
fn digest_v2(cp: &Checkpoint) -> Option<Digest> {
    if cp.schema_version != SCHEMA_VERSION || cp.cancel_requested_by.is_some() {
        return None;
    }
    let v2 = CheckpointV2 {
        schema_version: SCHEMA_V2,
        ..as_v2(cp)
    };
    Some(v2.seal().digest)
}

/// The verdict this validator's kernel gives, written in `dialect`: `expected` itself, or, for
/// rules 1 and 2, without tool keys and with the persisted checkpoint's schema 2 digest. `None`
/// when the answer has no form in the dialect (a checkpoint with a pending cancel).
pub(crate) fn expected_in(
    dialect: Dialect,
    expected: &Verdict,
    result: &Result<Transition, Rejection>,
) -> Option<Read> {
    let a = match (dialect, expected) {
        (Dialect::Current, v) => return Some(Read::Current(*v)),
        // Rules 3 kept the history in the run: no effect named it.
        (Dialect::Rules3, Verdict::Accepted(a)) => {
            return Some(Read::Current(Verdict::Accepted(Accepted {
                history: None,
                ..*a
            })))
        }
        (Dialect::Rules3, v) => return Some(Read::Current(*v)),
        (Dialect::Rules2, Verdict::Rejected(r)) => {
            return Some(Read::Rules2(VerdictR2::Rejected(*r)))
        }
        (Dialect::Rules2, Verdict::Accepted(a)) => a,
    };
    let checkpoint = match result {
        Ok(t) => t.effects.iter().find_map(|e| match e {
            Effect::PersistCheckpoint(cp) => Some(cp),
            _ => None,
        }),
        Err(_) => None,
    };
    let checkpoint = match checkpoint {
        Some(cp) => Some(digest_v2(&cp)?),
        None => None,
    };
    Some(Read::Rules2(VerdictR2::Accepted(AcceptedR2 {
        event: a.event,
        decision: a.decision,
        phase: a.phase,
        reason: a.reason,
        checkpoint,
        dispatch: a.dispatch.as_ref().map(DispatchR2::of),
        query: a.query.as_ref().map(DispatchR2::of),
        committed: a.committed,
    })))
}

/// The verdict as this validator's shapes read it, for the whole-log properties.
pub(crate) fn as_current(read: &Read, identity: &Identity) -> Verdict {
    match read {
        Read::Current(v) => *v,
        Read::Rules2(v) => v.current(identity),
    }
}
