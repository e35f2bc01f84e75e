//! The driver core as pure functions over JSON text, for the Python and Node packages: what
//! they offer is written here once, so the two cannot drift. Every function takes what the
//! adapter's store holds (the held run and its book) and the driver's `now`, and returns what
//! to commit and what to carry out; it holds no state and reads no clock. An error is the
//! message a binding raises as its one error class; a rejection is a value.
//!
//! The forms:
//! - `held`: `{"run", "anchor", "checkpoint"}` ([`Held`]); `book`: [`Book`].
//! - a proposal: `{"call_id", "tool", "args": ANY JSON, "key", "contract", "requester",
//!   "approver": NAME | null, "expires_in": N}`.
//! - facts: `{"resource_version", "permitted", "within_budget"}`, as the driver observed them.
//! - what [`feed`] returns: `{"verdict": VERDICT, "held", "book", "line", "history": [...],
//!   "tool_calls": [ToolCall...], "query": DISPATCH | null}`, where `VERDICT` is the step's
//!   (`{"verdict": "accepted", "run", "effects"}` or `{"verdict": KIND, "rejection",
//!   "message"}`). Commit `held`, `book`, `line` and `history` in one transaction with
//!   compare-and-set on the held run's revision and anchor; only then carry out `tool_calls`
//!   and `query`.
//! - a human-in-the-loop resume value: [`party::read_resume`] says its forms; [`resume`] feeds
//!   it, [`read_resume`] and [`is_resume_decision`] read it without staging anything.
//!
//! An adapter that holds the run in its own memory between steps (a Temporal workflow) keeps
//! it as a [`Stored`] form instead: the same steps, the held run and the book kept native and
//! written out only when asked, so a long run's step does not read and write its whole book.

use crate::book::{Book, Kept, ToolCall};
use crate::held::Held;
use crate::party::{self, Answer, Word};
use crate::plan::{self, Proposal, Request, Todo};
use crate::stage::{Core, Staged};
use resumable_audit::forms::{parse, Verdict};
use resumable_audit::{Header, Key};
use resumable_kernel::{Dispatch, Event, Facts, Name, Time, ToolContract};
use serde::{Deserialize, Serialize};

/// What a binding raises: the message.
pub type Result<T> = std::result::Result<T, String>;

fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| format!("cannot write JSON: {e}"))
}

fn core(key: Option<&str>) -> Result<Core> {
    let key = key
        .map(|k| Key::from_hex(k.trim()).map_err(|e| format!("audit key: {e}")))
        .transpose()?;
    Ok(Core::new(key))
}

#[derive(Serialize)]
struct Opened<'a> {
    held: &'a Held,
    book: Book,
    line: String,
}

/// A new run from its log's header (`{"run": {"identity", "policy", "created_at"}, "tools":
/// [...] | null}`), sealed under `key` (64 hex digits) or chained by SHA-256: `{"held", "book",
/// "line"}`, `line` being line 1 of its audit log.
pub fn open(header: &str, key: Option<&str>) -> Result<String> {
    let (held, line) = opened(header, key)?;
    to_json(&Opened {
        held: &held,
        book: Book::default(),
        line,
    })
}

/// The held run a new run starts at, and line 1 of its audit log.
fn opened(header: &str, key: Option<&str>) -> Result<(Held, String)> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct LogHeader {
        run: resumable_audit::RunHeader,
        #[serde(default)]
        tools: Option<Vec<resumable_audit::ToolPolicy>>,
    }
    let h: LogHeader = parse("audit header", header)?;
    let header = Header {
        run: h.run,
        tools: h.tools,
    };
    let (held, line) = core(key)?.open(&header)?;
    Ok((held, String::from_utf8(line).map_err(|e| e.to_string())?))
}

/// A proposal as the bindings write it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProposalForm {
    call_id: String,
    tool: String,
    args: serde_json::Value,
    key: String,
    contract: ToolContract,
    requester: String,
    #[serde(default)]
    approver: Option<String>,
    #[serde(default)]
    expires_in: u64,
}

impl ProposalForm {
    fn read(self) -> Result<Proposal> {
        let args = serde_json::to_string(&self.args).map_err(|e| e.to_string())?;
        Proposal::new(
            &self.call_id,
            &self.tool,
            &args,
            &self.key,
            self.contract,
            &self.requester,
            self.approver.as_deref(),
            self.expires_in,
        )
        .map_err(|e| e.to_string())
    }
}

/// [`Todo`] on the wire.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per call, written out at once"
)]
#[derive(Serialize)]
#[serde(tag = "todo", rename_all = "snake_case")]
enum TodoForm {
    Feed {
        event: Event,
        kept: Kept,
    },
    Ask {
        request: Request,
    },
    Query {
        dispatch: Dispatch,
    },
    Done {
        outcomes: Vec<crate::book::Outcome>,
        answers: u32,
    },
    Changed {
        recorded: resumable_kernel::Call,
        proposed: resumable_kernel::Call,
    },
    Waits {
        reason: resumable_kernel::ReasonKind,
        responsible: Name,
        expires_at: Time,
    },
    Busy {
        call_id: Name,
    },
    Ended {
        phase: resumable_kernel::PhaseKind,
        cause: Option<resumable_kernel::FailCause>,
    },
}

impl From<Todo> for TodoForm {
    fn from(todo: Todo) -> TodoForm {
        match todo {
            Todo::Feed(event, kept) => TodoForm::Feed { event, kept },
            Todo::Ask(request) => TodoForm::Ask { request: *request },
            Todo::Query(dispatch) => TodoForm::Query { dispatch },
            Todo::Done { outcomes, answers } => TodoForm::Done { outcomes, answers },
            Todo::Changed { recorded, proposed } => TodoForm::Changed {
                recorded: *recorded,
                proposed: *proposed,
            },
            Todo::Waits {
                reason,
                responsible,
                expires_at,
            } => TodoForm::Waits {
                reason,
                responsible,
                expires_at,
            },
            Todo::Busy { call_id } => TodoForm::Busy { call_id },
            Todo::Ended { phase, cause } => TodoForm::Ended { phase, cause },
        }
    }
}

/// The held run and its book, as an adapter's store gives them.
fn stored(held: &str, book: &str) -> Result<Stored> {
    Ok(Stored::of(parse("held", held)?, parse("book", book)?))
}

/// A turn's proposals as the bindings write them, read and bounded: one batch holds them all.
fn proposals_of(proposals: &str) -> Result<Vec<Proposal>> {
    let forms: Vec<ProposalForm> = parse("proposals", proposals)?;
    let proposals = forms
        .into_iter()
        .map(ProposalForm::read)
        .collect::<Result<Vec<_>>>()?;
    if proposals.is_empty() {
        return Err("proposals: at least one call".into());
    }
    if proposals.len() > resumable_kernel::BATCH_CAPACITY {
        // One batch holds them all or none: a turn is never cut short silently.
        return Err(format!(
            "proposals: {} calls in one turn, one batch holds at most {}",
            proposals.len(),
            resumable_kernel::BATCH_CAPACITY
        ));
    }
    Ok(proposals)
}

/// What to do now about `proposals` (a JSON list of one or more proposals, one model turn),
/// on the held run and its book, at `now`, with the facts observed now ([`plan::plan_batch`]).
pub fn plan(held: &str, book: &str, now: u64, proposals: &str, facts: &str) -> Result<String> {
    stored(held, book)?.plan(now, proposals, facts)
}

/// As [`plan`], for a turn a framework reviews as one batch even of one call
/// ([`plan::plan_turn`]: HITL's and the Agents SDKs' shape, where a call may be edited,
/// rejected or answered).
pub fn plan_turn(held: &str, book: &str, now: u64, proposals: &str, facts: &str) -> Result<String> {
    stored(held, book)?.plan_turn(now, proposals, facts)
}

type Planner = fn(&Held, &Book, Time, &[Proposal], Facts) -> Todo;

#[derive(Serialize)]
struct Fed<'a> {
    verdict: Verdict<'a>,
    held: &'a Held,
    book: &'a Book,
    line: String,
    history: Vec<resumable_kernel::HistoryEntry>,
    tool_calls: Vec<ToolCall>,
    query: Option<Dispatch>,
}

/// What a [`Stored`] step answers: [`Fed`] without the held run and the book, which the
/// stored form keeps.
#[derive(Serialize)]
struct Stepped<'a> {
    verdict: Verdict<'a>,
    line: String,
    history: Vec<resumable_kernel::HistoryEntry>,
    tool_calls: Vec<ToolCall>,
    query: Option<Dispatch>,
}

/// What a step of a [`Stored`] run did: an input staged and committed to it, with the tool
/// calls its dispatches hand out, or refused before the kernel (the text of the refusal,
/// nothing committed).
enum Answered {
    Staged(Box<Staged>, Vec<ToolCall>),
    Refused(String),
}

/// Refused before the kernel: the party's message is not an answer. Nothing is written.
#[derive(Serialize)]
struct Refused {
    verdict: &'static str,
    rejection: Empty,
    message: String,
}

#[derive(Serialize)]
struct Empty {}

fn not_a_decision_text(message: String) -> Result<String> {
    to_json(&Refused {
        verdict: "not_a_decision",
        rejection: Empty {},
        message,
    })
}

fn not_a_decision(message: String) -> Result<Answered> {
    not_a_decision_text(message).map(Answered::Refused)
}

fn line_of(staged: &Staged) -> Result<String> {
    String::from_utf8(staged.line.clone()).map_err(|e| e.to_string())
}

/// One run's held run and book kept native between steps: what an adapter that holds the run
/// in its own memory (a Temporal workflow) steps, rather than reading and writing the whole
/// book as JSON at every step. Each step commits to it what the free functions would return
/// (the held run after the step, the book with what the step keeps) and answers the rest:
/// `{"verdict", "line", "history", "tool_calls", "query"}`. The held run and the book are
/// written out only when asked ([`Stored::dump`]: `{"held", "book"}`).
///
/// The free functions of this module are these steps on a form read from their arguments,
/// so the two cannot differ in what they decide.
///
/// A step that raises (input that is not the core's form) commits nothing, except when the
/// book's own arguments do not match a dispatch (a book altered in its store): the form is
/// then broken, and every later step on it raises that error; load it again from its store.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stored {
    held: Held,
    book: Book,
    #[serde(skip)]
    broken: Option<String>,
}

impl Stored {
    /// The form holding `held` and `book`.
    pub fn of(held: Held, book: Book) -> Stored {
        Stored {
            held,
            book,
            broken: None,
        }
    }

    /// A new run, as [`open`] opens it: the form, and line 1 of its audit log.
    pub fn open(header: &str, key: Option<&str>) -> Result<(Stored, String)> {
        let (held, line) = opened(header, key)?;
        Ok((Stored::of(held, Book::default()), line))
    }

    /// The form [`Stored::dump`] wrote: `{"held", "book"}`.
    pub fn load(text: &str) -> Result<Stored> {
        parse("stored run", text)
    }

    /// The held run and its book as JSON, `{"held", "book"}`: what a store keeps, or what a
    /// continued workflow carries.
    pub fn dump(&self) -> Result<String> {
        self.sound()?;
        to_json(self)
    }

    /// The held run as JSON, as the free functions take it.
    pub fn held_json(&self) -> Result<String> {
        to_json(&self.held)
    }

    /// The book as JSON, as the free functions take it.
    pub fn book_json(&self) -> Result<String> {
        to_json(&self.book)
    }

    /// The held run.
    pub fn held(&self) -> &Held {
        &self.held
    }

    /// The book.
    pub fn book(&self) -> &Book {
        &self.book
    }

    /// Drops the settled calls' records from the book, keeping its history index whole
    /// ([`Book::compact`]): how many were dropped.
    pub fn compact(&mut self) -> usize {
        self.book.compact(&self.held.run)
    }

    fn sound(&self) -> Result<()> {
        match &self.broken {
            Some(e) => Err(format!("the stored run is broken by an earlier step: {e}")),
            None => Ok(()),
        }
    }

    /// As [`plan`], on this form.
    pub fn plan(&self, now: u64, proposals: &str, facts: &str) -> Result<String> {
        self.planned(now, proposals, facts, plan::plan_batch)
    }

    /// As [`plan_turn`], on this form.
    pub fn plan_turn(&self, now: u64, proposals: &str, facts: &str) -> Result<String> {
        self.planned(now, proposals, facts, plan::plan_turn)
    }

    fn planned(&self, now: u64, proposals: &str, facts: &str, planner: Planner) -> Result<String> {
        self.sound()?;
        let proposals = proposals_of(proposals)?;
        let facts: Facts = parse("facts", facts)?;
        let todo = planner(&self.held, &self.book, Time(now), &proposals, facts);
        to_json(&TodoForm::from(todo))
    }

    /// Stages `event` at `now` and commits it to this form: the held run after it, and what
    /// it changes in the book (accepted or refused: a refused answer is counted too).
    fn staged(&mut self, core: &Core, now: u64, event: Event, kept: &Kept) -> Result<Answered> {
        self.sound()?;
        let staged: Box<Staged> = core
            .stage(&self.held, Time(now), event, &mut self.book)
            .map_err(|e| e.to_string())?;
        self.book.keep(&staged, kept);
        let tool_calls = staged
            .dispatches()
            .map(|d| self.book.tool_call(d).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>>>();
        let tool_calls = match tool_calls {
            Ok(calls) => calls,
            Err(e) => {
                // The book changed and the held run did not: nothing more is stepped on it.
                self.broken = Some(e.clone());
                return Err(e);
            }
        };
        self.held = staged.after(&self.held);
        Ok(Answered::Staged(staged, tool_calls))
    }

    /// What a step answers on this form: [`Stepped`], or the refusal.
    fn stepped(&self, answered: Answered) -> Result<String> {
        match answered {
            Answered::Refused(text) => Ok(text),
            Answered::Staged(staged, tool_calls) => to_json(&Stepped {
                verdict: Verdict::of(&staged.result),
                line: line_of(&staged)?,
                history: staged.history().copied().collect(),
                query: staged.query().copied(),
                tool_calls,
            }),
        }
    }

    /// What a free function answers: [`Fed`], with the held run and the book to commit, or
    /// the refusal.
    fn whole(&self, answered: Answered) -> Result<String> {
        match answered {
            Answered::Refused(text) => Ok(text),
            Answered::Staged(staged, tool_calls) => to_json(&Fed {
                verdict: Verdict::of(&staged.result),
                held: &self.held,
                book: &self.book,
                line: line_of(&staged)?,
                history: staged.history().copied().collect(),
                query: staged.query().copied(),
                tool_calls,
            }),
        }
    }

    fn fed(&mut self, now: u64, event: &str, kept: &str, key: Option<&str>) -> Result<Answered> {
        let event: Event = parse("event", event)?;
        let kept: Kept = parse("kept", kept)?;
        self.staged(&core(key)?, now, event, &kept)
    }

    /// As [`feed`], on this form.
    pub fn feed(&mut self, now: u64, event: &str, kept: &str, key: Option<&str>) -> Result<String> {
        let a = self.fed(now, event, kept, key)?;
        self.stepped(a)
    }

    /// Feeds the answer `read` makes of a party's message to `request` at the driver's `now`,
    /// with the facts observed now; what `read` finds no decision is `not_a_decision`, nothing
    /// to commit.
    fn feed_read(
        &mut self,
        now: u64,
        request: &str,
        facts: &str,
        key: Option<&str>,
        read: impl FnOnce(&Request) -> std::result::Result<(Answer, Kept), party::NotADecision>,
    ) -> Result<Answered> {
        self.sound()?;
        let request: Request = parse("request", request)?;
        let facts: Facts = parse("facts", facts)?;
        match read(&request) {
            Ok((answer, kept)) => self.staged(&core(key)?, now, answer.event(facts), &kept),
            Err(e) => not_a_decision(e.0),
        }
    }

    /// Reads the decisions `words` as `W` and feeds the batch answer `judge` makes of them;
    /// what is not such a list, or names an approver that is no name, is `not_a_decision`.
    fn decided<W: serde::de::DeserializeOwned>(
        &mut self,
        d: &Decided<'_>,
        words: &str,
        judge: impl FnOnce(
            &Request,
            W,
            Name,
            Time,
        ) -> std::result::Result<(Answer, Kept), party::NotADecision>,
    ) -> Result<Answered> {
        self.sound()?;
        let request: Request = parse("request", d.request)?;
        let facts: Facts = parse("facts", d.facts)?;
        let words: W = match serde_json::from_str(words) {
            Ok(w) => w,
            Err(e) => return not_a_decision(format!("the decisions are not the framework's: {e}")),
        };
        let approver = match Name::new(d.approver) {
            Ok(a) => a,
            Err(e) => return not_a_decision(format!("approver {:?}: {e}", d.approver)),
        };
        match judge(&request, words, approver, Time(d.expires_at)) {
            Ok((answer, kept)) => {
                let event = answer.event(facts);
                self.staged(&core(d.key)?, d.now, event, &kept)
            }
            Err(e) => not_a_decision(e.to_string()),
        }
    }

    fn decide_list(&mut self, d: &Decided<'_>, words: &str) -> Result<Answered> {
        self.decided(d, words, |request, words: Vec<Word>, approver, at| {
            party::decide(request, &words, approver, at)
        })
    }

    fn decide_named(&mut self, d: &Decided<'_>, words: &str) -> Result<Answered> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Named {
            call_id: String,
            decision: Word,
        }
        self.decided(d, words, |request, words: Vec<Named>, approver, at| {
            let words: Vec<(String, Word)> =
                words.into_iter().map(|n| (n.call_id, n.decision)).collect();
            party::decide_calls(request, &words, approver, at)
        })
    }

    /// As [`decide`], on this form.
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per input of the step"
    )]
    pub fn decide(
        &mut self,
        now: u64,
        request: &str,
        words: &str,
        approver: &str,
        expires_at: u64,
        facts: &str,
        key: Option<&str>,
    ) -> Result<String> {
        let d = Decided {
            now,
            request,
            approver,
            expires_at,
            facts,
            key,
        };
        let a = self.decide_list(&d, words)?;
        self.stepped(a)
    }

    /// As [`decide_calls`], on this form.
    #[expect(
        clippy::too_many_arguments,
        reason = "one argument per input of the step"
    )]
    pub fn decide_calls(
        &mut self,
        now: u64,
        request: &str,
        words: &str,
        approver: &str,
        expires_at: u64,
        facts: &str,
        key: Option<&str>,
    ) -> Result<String> {
        let d = Decided {
            now,
            request,
            approver,
            expires_at,
            facts,
            key,
        };
        let a = self.decide_named(&d, words)?;
        self.stepped(a)
    }

    fn tool_answer(
        &mut self,
        now: u64,
        tool_call: &str,
        result: &str,
        key: Option<&str>,
    ) -> Result<Answered> {
        self.sound()?;
        let call: ToolCall = parse("tool call", tool_call)?;
        let (event, kept) = Book::tool_result(&call, result)?;
        self.staged(&core(key)?, now, event, &kept)
    }

    /// As [`tool_result`], on this form.
    pub fn tool_result(
        &mut self,
        now: u64,
        tool_call: &str,
        result: &str,
        key: Option<&str>,
    ) -> Result<String> {
        let a = self.tool_answer(now, tool_call, result, key)?;
        self.stepped(a)
    }

    fn reconciled(
        &mut self,
        now: u64,
        dispatch: &str,
        found: Option<&str>,
        facts: &str,
        key: Option<&str>,
    ) -> Result<Answered> {
        self.sound()?;
        let d: Dispatch = parse("dispatch", dispatch)?;
        let facts: Facts = parse("facts", facts)?;
        let found = match found {
            None => Err(()),
            Some("null") => Ok(None),
            Some(text) => Ok(Some(text)),
        };
        if !plan::waits_on(&self.held, &d) {
            // Another worker answered it first, or the run moved on: nothing to commit.
            return Ok(Answered::Refused(to_json(&Refused {
                verdict: "not_waiting",
                rejection: Empty {},
                message: format!(
                    "the run does not wait on the outcome of call {} attempt {}",
                    d.call_id, d.attempt
                ),
            })?));
        }
        let (event, kept) = plan::reconcile(&self.held, &d, found, facts)?;
        self.staged(&core(key)?, now, event, &kept)
    }

    /// As [`reconcile`], on this form.
    pub fn reconcile(
        &mut self,
        now: u64,
        dispatch: &str,
        found: Option<&str>,
        facts: &str,
        key: Option<&str>,
    ) -> Result<String> {
        let a = self.reconciled(now, dispatch, found, facts, key)?;
        self.stepped(a)
    }

    /// As [`wake_at`], on this form.
    pub fn wake_at(&self) -> Result<String> {
        to_json(&crate::clock::wake_at(&self.held.run))
    }
}

/// Feeds `event` (as [`plan`] gave it, in `{"todo": "feed"}`) with what the book keeps of it,
/// at the driver's `now`, sealing its audit line under `key`.
pub fn feed(
    held: &str,
    book: &str,
    now: u64,
    event: &str,
    kept: &str,
    key: Option<&str>,
) -> Result<String> {
    let mut s = stored(held, book)?;
    let a = s.fed(now, event, kept, key)?;
    s.whole(a)
}

/// Feeds a party's answer to `request` (as [`plan`] put it): `message` is whatever the party
/// sent; only its `checkpoint` and `decision` are read, never a time or facts it claims. The
/// facts are the driver's, observed now. A message that is not an answer is refused as
/// `{"verdict": "not_a_decision", "message"}`, with nothing to commit.
pub fn answer(
    held: &str,
    book: &str,
    now: u64,
    request: &str,
    message: &str,
    facts: &str,
    key: Option<&str>,
) -> Result<String> {
    let read = |request: &Request| Answer::read(message).map(|a| (a, Answer::kept(request)));
    let mut s = stored(held, book)?;
    let a = s.feed_read(now, request, facts, key, read)?;
    s.whole(a)
}

/// Whether a party's message is an answer [`answer`] would feed (`true`), or no decision at
/// all (`false`: nothing would be fed or counted for it): for an adapter that must tell which
/// of the values a framework hands back were answers, without staging anything.
pub fn is_answer(message: &str) -> Result<String> {
    to_json(&Answer::read(message).is_ok())
}

#[derive(Serialize)]
struct Read {
    answer: Answer,
    kept: Kept,
}

fn adapters_approver(approver: &str) -> Result<Name> {
    Name::new(approver).map_err(|e| format!("approver {approver:?}: {e}"))
}

/// What [`resume`] would feed for the human-in-the-loop resume `value` (whatever the framework
/// handed back) answering `request` (as [`plan`] put it), staging nothing: `{"answer",
/// "kept"}`, or `{"verdict": "not_a_decision", "message"}` when it is no decision at all
/// ([`party::read_resume`], which says the value's forms). `approver` is the adapter's, for a
/// value that names none.
pub fn read_resume(request: &str, value: &str, approver: &str) -> Result<String> {
    let request: Request = parse("request", request)?;
    match party::read_resume(&request, value, adapters_approver(approver)?) {
        Ok((answer, kept)) => to_json(&Read { answer, kept }),
        Err(e) => not_a_decision_text(e.0),
    }
}

/// Whether [`resume`] would feed `value` as a decision on `request` (`true`, and count it), or
/// not (`false`: nothing fed, nothing counted): for an adapter skipping the values a framework
/// hands back to a node run again, without staging anything.
pub fn is_resume_decision(request: &str, value: &str, approver: &str) -> Result<String> {
    let request: Request = parse("request", request)?;
    to_json(&party::is_resume_decision(
        &request,
        value,
        adapters_approver(approver)?,
    ))
}

/// Feeds the human-in-the-loop resume `value` answering `request` as one batch answer
/// ([`read_resume`]), at the driver's `now`, with the facts observed now. A value that is no
/// decision is refused as `{"verdict": "not_a_decision", "message"}`, with nothing to commit.
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per input of the step"
)]
pub fn resume(
    held: &str,
    book: &str,
    now: u64,
    request: &str,
    value: &str,
    approver: &str,
    facts: &str,
    key: Option<&str>,
) -> Result<String> {
    let approver = adapters_approver(approver)?;
    let read = |request: &Request| party::read_resume(request, value, approver);
    let mut s = stored(held, book)?;
    let a = s.feed_read(now, request, facts, key, read)?;
    s.whole(a)
}

/// A framework's decision list (`words`: one decision per call of `request`, in the
/// framework's words, `{"type": "approve" | "edit" | "reject" | "respond" | "deny", ...}`) by
/// `approver`, valid until `expires_at`, fed as one batch answer (spec/frameworks.md). A list
/// that is not such a list is refused as `not_a_decision`, with nothing to commit.
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per input of the step"
)]
pub fn decide(
    held: &str,
    book: &str,
    now: u64,
    request: &str,
    words: &str,
    approver: &str,
    expires_at: u64,
    facts: &str,
    key: Option<&str>,
) -> Result<String> {
    let d = Decided {
        now,
        request,
        approver,
        expires_at,
        facts,
        key,
    };
    let mut s = stored(held, book)?;
    let a = s.decide_list(&d, words)?;
    s.whole(a)
}

/// What [`decide`] and [`decide_calls`] read besides the decisions themselves.
struct Decided<'a> {
    now: u64,
    request: &'a str,
    approver: &'a str,
    expires_at: u64,
    facts: &'a str,
    key: Option<&'a str>,
}

/// Decisions on some calls of `request`, each naming its call: `words` is a JSON list of
/// `{"call_id": ID, "decision": WORD}` (WORD as in [`decide`]), fed as one batch answer
/// (the Agents SDKs decide a turn's items one at a time or together). Refused as
/// `not_a_decision` when it is not such a list, with nothing to commit.
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per input of the step"
)]
pub fn decide_calls(
    held: &str,
    book: &str,
    now: u64,
    request: &str,
    words: &str,
    approver: &str,
    expires_at: u64,
    facts: &str,
    key: Option<&str>,
) -> Result<String> {
    let d = Decided {
        now,
        request,
        approver,
        expires_at,
        facts,
        key,
    };
    let mut s = stored(held, book)?;
    let a = s.decide_named(&d, words)?;
    s.whole(a)
}

/// Feeds the tool's answer to `tool_call` (as [`feed`] handed it out): `result` is the JSON
/// the tool returned, recorded by its digest in the run and kept whole in the book.
pub fn tool_result(
    held: &str,
    book: &str,
    now: u64,
    tool_call: &str,
    result: &str,
    key: Option<&str>,
) -> Result<String> {
    let mut s = stored(held, book)?;
    let a = s.tool_answer(now, tool_call, result, key)?;
    s.whole(a)
}

/// Feeds the status query's answer about `dispatch`: `found` the JSON result the tool
/// committed under the key, `null` for a firm "not committed", or absent (`None`) when the
/// query failed (the outcome stays unknown). The facts are the driver's, observed now. When
/// the run no longer waits on that dispatch (another worker reconciled it first), the answer
/// is refused as `{"verdict": "not_waiting", "message"}`, with nothing to commit.
pub fn reconcile(
    held: &str,
    book: &str,
    now: u64,
    dispatch: &str,
    found: Option<&str>,
    facts: &str,
    key: Option<&str>,
) -> Result<String> {
    let mut s = stored(held, book)?;
    let a = s.reconciled(now, dispatch, found, facts, key)?;
    s.whole(a)
}

/// When the driver must next call in for the held run if nothing else happens (the run's
/// deadline, ms or whatever unit its times are in), or `null`.
pub fn wake_at(held: &str) -> Result<String> {
    let held: Held = parse("held", held)?;
    to_json(&crate::clock::wake_at(&held.run))
}

/// The approver's answer approving (`approve` true) or denying the one call of `request`,
/// with the approver's name and the decision's own expiry: what an approver's UI sends.
pub fn approval(request: &str, approve: bool, approver: &str, expires_at: u64) -> Result<String> {
    let request: Request = parse("request", request)?;
    let approver = Name::new(approver).map_err(|e| format!("approver {approver:?}: {e}"))?;
    let answer = party::approval(&request, approve, approver, Time(expires_at))
        .ok_or_else(|| "request: no call to decide".to_string())?;
    to_json(&answer)
}
