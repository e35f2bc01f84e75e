//! What a party sends, judged: an approver's, an operator's or a callback's answer is a claim
//! about a checkpoint it holds. The core takes from it the decision and the checkpoint it was
//! made on, and nothing else: not the time (the driver's clock stamps the input), not the
//! facts (the driver observes them), not the arguments a tool receives (the book keeps them).
//!
//! The frameworks' decision words map onto the kernel's verdicts here, once, as
//! spec/frameworks.md lists them; any other word is refused by name. A human-in-the-loop
//! resume value is read here too, once ([`read_resume`]): what is a decision is decided by no
//! adapter.

use crate::book::{Args, Kept, Outcome};
use crate::plan::Request;
use resumable_kernel::{
    Approval, CallDecision, Checkpoint, Decision, Decisions, Digest, Event, Facts, Name, Resume,
    Time, Verdict,
};
use serde::{Deserialize, Serialize};

/// A party's answer: a decision on the checkpoint it was shown. Anything else the message
/// holds (a time it claims, facts, arguments) is not read.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Answer {
    /// The checkpoint the party decided on.
    pub checkpoint: Checkpoint,
    /// What it decided.
    pub decision: Decision,
}

/// Why a party's message is not an answer the core can feed. Nothing is fed and nothing is
/// written for it; the adapter asks again, saying why.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("not a decision: {0}")]
pub struct NotADecision(pub String);

impl Answer {
    /// Reads a party's message as an answer: its `checkpoint` and `decision`, anything else it
    /// holds ignored. What is not such a message is no decision, and nothing is fed for it.
    pub fn read(message: &str) -> Result<Answer, NotADecision> {
        serde_json::from_str(message)
            .map_err(|e| NotADecision(format!("the answer is not a decision on a checkpoint: {e}")))
    }

    /// The input that feeds this answer, with the facts the driver observed now (RES-7).
    pub fn event(&self, facts: Facts) -> Event {
        Event::Resume(Resume {
            checkpoint: self.checkpoint,
            decision: self.decision,
            facts,
        })
    }

    /// What the book keeps when the answer is fed for `request`: the answer counted against
    /// its calls.
    pub fn kept(request: &Request) -> Kept {
        Kept {
            answered: request.calls.first().map(|c| c.call_id),
            ..Kept::default()
        }
    }
}

/// The approval that binds a decision on the one call of `request` (or its `index`th) to what
/// the approver was shown: the call id, the argument digest, the requester, the checkpoint's
/// revision, and the approver's own expiry for the decision.
pub fn binding(
    request: &Request,
    index: usize,
    approver: Name,
    expires_at: Time,
) -> Option<Approval> {
    let c = request.calls.get(index)?;
    Some(Approval {
        call_id: c.call_id,
        args: c.args_digest,
        requester: c.requester,
        approver,
        revision: request.checkpoint.revision,
        expires_at,
    })
}

/// The approver's answer approving (or, with `approve` false, denying) the one call of
/// `request`. This is the approver's side; the driver judges what arrives.
pub fn approval(
    request: &Request,
    approve: bool,
    approver: Name,
    expires_at: Time,
) -> Option<Answer> {
    let a = binding(request, 0, approver, expires_at)?;
    Some(Answer {
        checkpoint: request.checkpoint,
        decision: if approve {
            Decision::Approve(a)
        } else {
            Decision::Deny(a)
        },
    })
}

/// A framework's decision on one call, in the framework's words (LangChain's HITL middleware,
/// the Agents SDKs' approve and reject, the seed's denial).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Word {
    /// Run the call as proposed.
    Approve,
    /// Run the call with other arguments (the tool's name unchanged): an edit, BAT-5.
    Edit {
        /// The edited call (`editedAction` in LangChain's JavaScript).
        #[serde(alias = "editedAction")]
        edited_action: EditedAction,
    },
    /// Do not run it; the agent is told `message` and goes on.
    Reject {
        /// What the agent is told.
        #[serde(default)]
        message: String,
    },
    /// Do not run it; the person answers in the tool's place.
    Respond {
        /// The answer.
        message: String,
    },
    /// Stop the run: it fails (APR-4).
    Deny,
}

/// An edit's call: the tool's name (which an edit may not change) and the new arguments.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditedAction {
    /// The tool's name.
    pub name: String,
    /// The arguments the call runs with, any JSON value.
    pub args: serde_json::Value,
}

/// The digest of a text as a JSON string (RFC 8785), as a rejection's reason and a response's
/// answer are bound.
fn text_digest(text: &str) -> Result<Digest, NotADecision> {
    let json = serde_json::to_string(text).map_err(|e| NotADecision(e.to_string()))?;
    resumable_audit::jcs::digest(&json).map_err(|e| NotADecision(e.to_string()))
}

/// One framework word on the call `asked` as the kernel's verdict, and what the book keeps of
/// it (the edited arguments, the rejection's message, the response), per spec/frameworks.md.
pub fn verdict(word: &Word, call_id: Name, tool: &Name) -> Result<(Verdict, Kept), NotADecision> {
    let mut kept = Kept::default();
    let verdict = match word {
        Word::Approve => Verdict::Approve,
        Word::Deny => Verdict::Deny,
        Word::Edit { edited_action } => {
            if edited_action.name != tool.as_str() {
                return Err(NotADecision(format!(
                    "an edit that renames {tool} to {:?} is another call",
                    edited_action.name
                )));
            }
            let text = serde_json::to_string(&edited_action.args)
                .map_err(|e| NotADecision(e.to_string()))?;
            let args = Args::parse(&text).map_err(NotADecision)?;
            let digest = args.digest;
            kept.edited.push((call_id, args));
            Verdict::Edit { args: digest }
        }
        Word::Reject { message } => {
            kept.outcomes.push((
                call_id,
                Outcome::Rejected {
                    message: message.clone(),
                },
            ));
            Verdict::Reject {
                reason: text_digest(message)?,
            }
        }
        Word::Respond { message } => {
            kept.outcomes.push((
                call_id,
                Outcome::Responded {
                    message: message.clone(),
                },
            ));
            Verdict::Respond {
                result: text_digest(message)?,
            }
        }
    };
    Ok((verdict, kept))
}

/// A framework's list of decisions on the calls of `request` (one word per call, in order),
/// bound to each call as the approver saw it, as one batch answer and what the book keeps.
pub fn decide(
    request: &Request,
    words: &[Word],
    approver: Name,
    expires_at: Time,
) -> Result<(Answer, Kept), NotADecision> {
    if words.len() != request.calls.len() {
        return Err(NotADecision(format!(
            "{} decisions for {} calls",
            words.len(),
            request.calls.len()
        )));
    }
    batch_answer(request, words.iter().enumerate(), approver, expires_at)
}

/// Decisions on some calls of `request`, each naming its call (`(call_id, word)`, in the
/// order given): the SDKs' approvals arrive one item at a time, or several together. Bound to
/// each call as the approver saw it, as one batch answer and what the book keeps; the kernel
/// dispatches once every call of the batch is decided (BAT-3).
pub fn decide_calls(
    request: &Request,
    words: &[(String, Word)],
    approver: Name,
    expires_at: Time,
) -> Result<(Answer, Kept), NotADecision> {
    if words.is_empty() {
        return Err(NotADecision("no decision".into()));
    }
    let mut picked = Vec::with_capacity(words.len());
    for (call_id, word) in words {
        let index = request
            .calls
            .iter()
            .position(|c| c.call_id.as_str() == call_id)
            .ok_or_else(|| NotADecision(format!("the request holds no call {call_id:?}")))?;
        picked.push((index, word));
    }
    batch_answer(request, picked.into_iter(), approver, expires_at)
}

/// The batch answer of `words` on the calls of `request` at the indices given: each word the
/// kernel's verdict on its call, bound as the approver saw the call.
fn batch_answer<'w>(
    request: &Request,
    words: impl Iterator<Item = (usize, &'w Word)>,
    approver: Name,
    expires_at: Time,
) -> Result<(Answer, Kept), NotADecision> {
    let mut decisions = Decisions::new();
    let mut kept = Answer::kept(request);
    for (index, word) in words {
        let asked = request
            .calls
            .get(index)
            .ok_or_else(|| NotADecision("no such call".into()))?;
        let (verdict, k) = verdict(word, asked.call_id, &asked.tool)?;
        let approval = binding(request, index, approver, expires_at)
            .ok_or_else(|| NotADecision("no such call".into()))?;
        decisions
            .push(CallDecision { approval, verdict })
            .map_err(|_| NotADecision("more decisions than a batch holds".into()))?;
        kept.edited.extend(k.edited);
        kept.outcomes.extend(k.outcomes);
    }
    let answer = Answer {
        checkpoint: request.checkpoint,
        decision: Decision::Batch { decisions },
    };
    Ok((answer, kept))
}

/// A resume value of LangChain's human-in-the-loop (what `Command(resume=...)` hands back to
/// the interrupt that asked), in either form the packages write (spec/frameworks.md,
/// "Resuming"). Anything else it holds (a time it claims, facts) is not read.
#[derive(Deserialize)]
struct ResumeValue {
    /// The checkpoint the decisions bind to (the Node package's form).
    #[serde(default)]
    checkpoint: Option<Checkpoint>,
    /// The request the approver was shown, whose checkpoint the decisions bind to (the Python
    /// package's form).
    #[serde(default)]
    request: Option<Shown>,
    /// One decision per call of the request, in order.
    decisions: Vec<Option<Word>>,
    #[serde(default)]
    approver: Option<String>,
    #[serde(default)]
    expires_at: Option<u64>,
}

/// Of the request a value names, its checkpoint alone is read: the calls bound are the ones
/// the driver asked about, and a checkpoint that is not theirs is the kernel's to refuse.
#[derive(Deserialize)]
struct Shown {
    checkpoint: Checkpoint,
}

/// The one reader of a human-in-the-loop resume value: what feeding `value` as the answer to
/// `request` (the request the driver asked, as [`crate::plan`] put it) feeds, the batch
/// answer and what the book keeps (the answer counted against the request, as every answer
/// is), or why it is no decision, in which case nothing is fed and nothing counted. Stages
/// nothing. `approver` is the adapter's, for a value that names none.
///
/// The two forms (spec/frameworks.md):
/// - `{"checkpoint", "decisions", "approver"?, "expires_at"?}`: a decision per call in order,
///   `null` (or the end of a shorter list) leaving a call for a later resume, at least one
///   given; the approver defaults to `approver`, the expiry to the request's;
/// - `{"request", "decisions", "approver", "expires_at"}`: the request the approver was shown
///   (its checkpoint the one bound), exactly one decision per call, none `null`.
pub fn read_resume(
    request: &Request,
    value: &str,
    approver: Name,
) -> Result<(Answer, Kept), NotADecision> {
    let v: ResumeValue = serde_json::from_str(value).map_err(|e| {
        NotADecision(format!(
            "the resume value is not a decision list on a checkpoint: {e}"
        ))
    })?;
    let (checkpoint, whole) = match (v.checkpoint, v.request) {
        (Some(c), None) => (c, false),
        (None, Some(shown)) => (shown.checkpoint, true),
        (Some(_), Some(_)) => {
            return Err(NotADecision(
                "the resume value names both a checkpoint and a request".into(),
            ))
        }
        (None, None) => {
            return Err(NotADecision(
                "the resume value names no checkpoint (nor a request)".into(),
            ))
        }
    };
    let (given, calls) = (v.decisions.len(), request.calls.len());
    if given > calls || (whole && given != calls) {
        return Err(NotADecision(format!("{given} decisions for {calls} calls")));
    }
    if whole && v.decisions.iter().any(Option::is_none) {
        return Err(NotADecision(
            "a value naming its request decides every call: a decision is null".into(),
        ));
    }
    let approver = match (v.approver, whole) {
        (Some(a), _) => Name::new(&a).map_err(|e| NotADecision(format!("approver {a:?}: {e}")))?,
        (None, false) => approver,
        (None, true) => {
            return Err(NotADecision(
                "a value naming its request names its approver".into(),
            ))
        }
    };
    let expires_at = match (v.expires_at, whole) {
        (Some(t), _) => Time(t),
        (None, false) => request.expires_at,
        (None, true) => {
            return Err(NotADecision(
                "a value naming its request names its expiry".into(),
            ))
        }
    };
    let words: Vec<(usize, &Word)> = v
        .decisions
        .iter()
        .enumerate()
        .filter_map(|(i, w)| w.as_ref().map(|w| (i, w)))
        .collect();
    if words.is_empty() {
        return Err(NotADecision("no decision".into()));
    }
    let shown = Request {
        checkpoint,
        ..request.clone()
    };
    batch_answer(&shown, words.into_iter(), approver, expires_at)
}

/// Whether [`read_resume`] reads `value` as a decision on `request`: what an adapter asks of
/// each value a framework hands back to a node run again, so that a value that was no
/// decision (and was never counted) is skipped without being counted.
pub fn is_resume_decision(request: &Request, value: &str, approver: Name) -> bool {
    read_resume(request, value, approver).is_ok()
}
