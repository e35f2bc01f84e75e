//! The driving contract of the resumable kernel, written once: what every driver (the reference
//! runtime, the Python and Node packages' adapters, the model's honest worker) does around
//! [`resumable_kernel::step`], so that no adapter decides any of it.
//!
//! This crate contains no I/O and reads no clock. The caller passes `now` into every call and
//! the facts it observed; the core answers with what to store (one commit, with
//! compare-and-set), what to carry out after the commit, and when to wake.
//!
//! # What the core owns
//!
//! - **Time is the driver's** ([`clock`]): every input is stamped with the `now` the caller
//!   passes, never earlier than the run's last input (CLK-1). A party's answer carries a
//!   decision, never the time it is judged at.
//! - **Facts are observed** ([`Facts`]): the resource version a call acts on, permission and
//!   budget are arguments the driver establishes itself, never copied from a party's message
//!   or a checkpoint it sends back (RES-3, RES-7).
//! - **A proposed call is matched** against what is recorded ([`book`]) by call id, tool,
//!   argument digest and key: the same call finds its own state and result; anything else is
//!   a new call or a clear refusal ([`plan::Todo::Changed`]), never another call's receipt.
//! - **The arguments a tool receives are the approved ones** ([`book::ToolCall`]): kept with
//!   their digest when proposed (or when an approver edits them), handed out with the
//!   dispatch, and never handed out when their digest differs from the dispatch's.
//! - **Expiry**: [`clock::wake_at`] says when the core must next be called, and
//!   [`plan::plan`] feeds `expire` itself once that time has come (EXP-1).
//! - **The history index** ([`Ledger`], [`book::Book`]): the prior of every call the input
//!   binds is stated from the driver's store, never by the caller (KEY-1, KEY-2, REC-4).
//! - **The audit line** of every input, accepted or refused (REJ-1), chained to the anchor
//!   stored with the run ([`Staged::line`]).
//! - **A lost compare-and-set**: [`stage`] is a pure function of what is stored, so the retry
//!   is to load the run again and stage the same event on it ([`RETRIES`] times at most);
//!   the kernel says what the answer means on the run as it now is.
//! - **The frameworks' decisions** ([`party`]): each framework word mapped onto one kernel
//!   verdict (spec/frameworks.md), anything else refused by name.
//!
//! # Driving a run, in order
//!
//! 1. Load what the store holds: the [`Held`] run (run, audit anchor, latest checkpoint) and,
//!    for an adapter that keeps calls' arguments, its [`book::Book`].
//! 2. Ask [`plan::plan`] (or, for a driver of its own programs, decide the event) with `now`
//!    and the observed facts.
//! 3. [`stage`] the event: the result, the audit line and the row after it.
//! 4. Commit the row, the line, the history entries and the book in one transaction, with
//!    compare-and-set on the revision and the anchor loaded in step 1. A conflict: go to 1.
//! 5. Only then carry out what the transition commands: each [`book::ToolCall`] (a dispatch
//!    with its arguments) or a status query; each answer is a new event, from step 1.
//!
//! ```
//! use resumable_driver::{book::Book, observed, plan, Core};
//! use resumable_kernel::{Allowed, Identity, Name, Policy, Time, ToolContract};
//! let header = resumable_audit::Header {
//!     run: resumable_audit::RunHeader {
//!         identity: Identity { tenant: Name::lit("acme"), session: Name::lit("s-1"),
//!             run: Name::lit("pay-1"), definition: Name::lit("payments@1") },
//!         policy: Policy { operator: Name::lit("ops"), reconcile_window: 600,
//!             allowed: Allowed::ALL },
//!         created_at: Time(0),
//!     },
//!     tools: None,
//! };
//! let core = Core::new(None);
//! let (mut held, _line_1) = core.open(&header)?;
//! let mut book = Book::default();
//! let contract = ToolContract { dedupes: true, max_attempts: 3, ..ToolContract::default() };
//! let proposal = plan::Proposal::new("call-1", "send_payment", r#"{"to":"bob","amount":50}"#,
//!     "pay-1:call-1", contract, "agent", Some("alice"), 60)?;
//!
//! // Nothing is recorded: the core asks to suspend for alice's approval, at the driver's time.
//! let plan::Todo::Feed(event, kept) = plan::plan(&held, &book, Time(1), &proposal, observed(7))
//! else { unreachable!() };
//! let staged = core.stage(&held, Time(1), event, &mut book)?;
//! // Commit staged.after(&held), staged.line, the history and the book with compare-and-set:
//! book.keep(&staged, &kept);
//! held = staged.after(&held);
//!
//! // alice is shown the arguments themselves beside their digest.
//! let plan::Todo::Ask(request) = plan::plan(&held, &book, Time(2), &proposal, observed(7))
//! else { unreachable!() };
//! assert_eq!(request.calls[0].args, r#"{"amount":50,"to":"bob"}"#);
//!
//! // The node is run again with the amount changed: refused, never paid.
//! let changed = plan::Proposal::new("call-1", "send_payment", r#"{"to":"bob","amount":999}"#,
//!     "pay-1:call-1", contract, "agent", Some("alice"), 60)?;
//! assert!(matches!(plan::plan(&held, &book, Time(3), &changed, observed(7)),
//!     plan::Todo::Changed { .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod book;
pub mod clock;
pub mod forms;
pub mod held;
pub mod party;
pub mod plan;
mod stage;

pub use held::Held;
pub use resumable_kernel::Facts;
pub use stage::{Core, Ledger, StageError, Staged, RETRIES};

/// Facts as most drivers observe them: the resource at `resource_version`, the step permitted
/// and within budget. A driver that checks permission or budget builds [`Facts`] itself.
pub fn observed(resource_version: u64) -> Facts {
    Facts {
        resource_version,
        permitted: true,
        within_budget: true,
    }
}
