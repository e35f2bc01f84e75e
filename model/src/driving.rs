//! How the world's workers drive a run: the rules of the driving contract that no lifecycle
//! can check for itself, because they are decided outside the step (spec/lifecycle.md section
//! 7, spec/driving.md). Honest by default: the worker applies the driver core's own functions
//! (`resumable_driver`). Each broken [`Driving`] replaces one of those rules the way an old
//! adapter did, so that the property guarding it can be shown to bite while the lifecycle
//! under check, the kernel itself, stays correct: however well the kernel is checked, an
//! adapter that breaks one of these rules gives its guarantee away.
//!
//! The driving is part of the world's configuration (`Config::driving`), not of the lifecycle:
//! a broken driving is never a [`crate::Lifecycle`] and never a flag inside the kernel. The
//! world's run may be the reference machine's own type, so where a core function takes the
//! kernel's `Run` the world calls the generic rule it is written with
//! (`resumable_driver::clock::stamp_after` for `clock::stamp`).

use resumable_kernel::SpecId;
use std::fmt;

/// How a worker drives: honestly, or with one rule of the driving contract replaced.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Default)]
pub enum Driving {
    /// The driver core's rules: every input stamped with the driver's clock
    /// (`resumable_driver::clock::stamp_after`); a tool handed only the arguments the book
    /// kept for its call, and only if their digest is the dispatch's
    /// (`resumable_driver::book::released`); a proposal answered from the record only by
    /// the very call recorded (`resumable_driver::plan::same_call`); a resume planned on the
    /// run the store holds, so a recorded call proposed again gets its result
    /// (`resumable_driver::plan::plan`'s answer from the book); the node's next interrupt
    /// handed the value after those the core counted for its recorded calls
    /// (`resumable_driver::plan::Todo::Done`'s `answers`).
    #[default]
    Honest,
    /// CLK-2 broken: a party's decision is stamped with the time its message says it was
    /// written, not with the driver's clock, so an approval written in time and delivered
    /// after its expiry is judged in time. The old adapters took the time of a resume from the
    /// resume value's `at`, which the approver writes.
    DecisionTimeFromMessage,
    /// APR-5 broken: the tool is handed the arguments the agent's state holds when the
    /// dispatch is carried out, not the ones the driver kept with the call, whose digest the
    /// approval bound. The old adapters called the tool with the node's current arguments
    /// (`call.args`), so a graph whose state was changed before the resume paid another amount
    /// than the one approved.
    ToolGetsNodeArguments,
    /// REC-5 broken: a call the agent proposes is matched against the recorded calls by its
    /// call id alone, so a new call under an old call id is answered with the old call's
    /// result: never run, never asked. The old adapters found a recorded call by call id, so
    /// a new payment to another payee under the same call id returned the first receipt.
    RecordedCallByIdOnly,
    /// REC-6 broken: the run is kept in the framework's own state, with the facts it had
    /// observed, so a resume from an old config (a checkpoint the framework took while the
    /// call waited for approval) resumes the run as it was then: the approval given then is
    /// accepted again and the call, whose result is recorded, is dispatched a second time. An
    /// adapter that keeps the kernel's run in the graph's state, not in a store of its own,
    /// does this. (Fed the resource version observed now, the kernel itself refuses that
    /// resume where the call's commit moved the resource, RES-3; a tool that reports no
    /// version leaves REC-6 to the driver alone.)
    RunFromOldConfig,
    /// RES-8 broken: when the call is already recorded, the gate skips its interrupt and
    /// consumes none of the resume values the framework replays to the node, so the node's
    /// next question is handed the first value fed to the gated call: the approval. The old
    /// LangGraph gates did this, so "notify the payee?" was answered with the approval object.
    RecordedCallSkipsItsInterrupt,
}

impl Driving {
    /// Every broken driving, in a stable order.
    pub const BROKEN: [Driving; 5] = [
        Driving::DecisionTimeFromMessage,
        Driving::ToolGetsNodeArguments,
        Driving::RecordedCallByIdOnly,
        Driving::RunFromOldConfig,
        Driving::RecordedCallSkipsItsInterrupt,
    ];

    /// The kebab-case name, as `check --variant` takes it.
    pub const fn name(self) -> &'static str {
        match self {
            Driving::Honest => "honest",
            Driving::DecisionTimeFromMessage => "decision-time-from-message",
            Driving::ToolGetsNodeArguments => "tool-gets-node-arguments",
            Driving::RecordedCallByIdOnly => "recorded-call-by-id-only",
            Driving::RunFromOldConfig => "run-from-old-config",
            Driving::RecordedCallSkipsItsInterrupt => "recorded-call-skips-its-interrupt",
        }
    }

    /// The broken driving with this name, if any.
    pub fn from_name(name: &str) -> Option<Driving> {
        Driving::BROKEN.into_iter().find(|d| d.name() == name)
    }

    /// One line saying what the driving does wrong.
    pub const fn description(self) -> &'static str {
        match self {
            Driving::Honest => "the driver core's rules",
            Driving::DecisionTimeFromMessage => {
                "a decision is stamped with the time its message claims, not the driver's clock"
            }
            Driving::ToolGetsNodeArguments => {
                "the tool is handed the agent's current arguments, not the ones the approval bound"
            }
            Driving::RecordedCallByIdOnly => {
                "a proposed call is matched by call id alone: an old call's result answers a new one"
            }
            Driving::RunFromOldConfig => {
                "a resume from an old config resumes the run it held: a recorded call runs again"
            }
            Driving::RecordedCallSkipsItsInterrupt => {
                "a recorded call consumes no replayed value: the next question gets the approval"
            }
        }
    }

    /// The spec IDs the driving breaks: the properties that must catch it.
    pub const fn targets(self) -> &'static [SpecId] {
        match self {
            Driving::Honest => &[],
            Driving::DecisionTimeFromMessage => &[SpecId::Clk2],
            Driving::ToolGetsNodeArguments => &[SpecId::Apr5],
            Driving::RecordedCallByIdOnly => &[SpecId::Rec5],
            Driving::RunFromOldConfig => &[SpecId::Rec6],
            Driving::RecordedCallSkipsItsInterrupt => &[SpecId::Res8],
        }
    }

    /// The spec IDs it breaks as spec/ writes them, comma-separated.
    pub fn targets_named(self) -> String {
        let names: Vec<&str> = self.targets().iter().map(|id| id.name()).collect();
        names.join(", ")
    }
}

impl fmt::Display for Driving {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
