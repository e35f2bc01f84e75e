//! Scenarios as data: parsing the JSON-lines format of `spec/scenario-format.md`.
//!
//! The first non-blank line is a [`Header`]; every further non-blank line is one kernel
//! [`Input`] in the kernel's serde form, with a few conveniences for writing by hand:
//!
//! - a digest may be written `{"text": "..."}` (the SHA-256 of the text) instead of 64 hex;
//! - a resume's checkpoint may be a [`CheckpointRef`] to a checkpoint the trace emitted
//!   (`"latest"`, `{"latest": {changes}}`, `{"emitted": 1}`), resolved during replay;
//! - an approval's `revision` may be omitted (it is the checkpoint's), and so may a resume's
//!   `facts` or any of their fields (the resource is unchanged since the checkpoint, current
//!   policy permits, the budget covers);
//! - any line may carry a `"note"` that the trace prints, and an input may carry an
//!   `"expect"` (`"accepted"` or a rejection's name) that the replay checks.
//!
//! Parsing never panics: every malformed line is a [`ScenarioError`] naming the line and,
//! where the JSON parser gives one, the column.

mod input;
mod read;
mod references;
#[cfg(test)]
mod tests;

pub use read::{Reader, MAX_LINE_BYTES};

use crate::SpecId;
use resumable_audit::history::History;
use resumable_kernel::{Checkpoint, Event, Identity, Input, Name, Policy, Revision, Run, Time};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The scenario format version this crate reads and documents.
pub const FORMAT_VERSION: u32 = 1;

/// A malformed scenario: where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1, where the JSON parser gives one.
    pub column: Option<usize>,
    /// What is wrong, as one line of text.
    pub message: String,
}

impl ScenarioError {
    pub(crate) fn at(line: usize, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            line,
            column: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.column {
            Some(c) => write!(f, "{}:{}: {}", self.line, c, self.message),
            None => write!(f, "{}: {}", self.line, self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The serde form of a list of spec IDs: their names, as spec/ writes them. A name that is
/// no spec ID is refused, by name.
mod spec_ids {
    use crate::SpecId;
    use serde::{de::Error as _, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ids: &[SpecId], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ids.iter().map(|id| id.name()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<SpecId>, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        (names.iter())
            .map(|name| {
                crate::spec_id(name).ok_or_else(|| {
                    D::Error::custom(format!("\"shows\" names `{name}`, which is not a spec ID"))
                })
            })
            .collect()
    }
}

/// The first line of a scenario: what it is called, what it shows, and the run it creates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The scenario's name (by convention, the file's stem).
    pub scenario: String,
    /// The format version: [`FORMAT_VERSION`].
    pub format: u32,
    /// The spec IDs the scenario shows; at least one. On the wire, each as spec/ writes it.
    #[serde(with = "spec_ids")]
    pub shows: Vec<SpecId>,
    /// One sentence saying what the scenario shows.
    pub description: String,
    /// The run the inputs are fed to.
    pub run: RunSpec,
    /// A remark the trace prints under the description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The run a scenario creates: its identity, its policy and when it was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// The tenant that owns the run.
    pub tenant: Name,
    /// The session.
    pub session: Name,
    /// The run's identifier.
    pub run: Name,
    /// The run's definition fingerprint.
    pub definition: Name,
    /// The party who reconciles unknown outcomes.
    pub operator: Name,
    /// How long a reconciliation or an escalated intervention may wait.
    pub reconcile_window: u64,
    /// When the run was created.
    pub created_at: Time,
    /// The decisions an approver may give on the run (spec POL-1); every one if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<resumable_kernel::Allowed>,
}

impl RunSpec {
    /// The run's identity.
    pub fn identity(&self) -> Identity {
        Identity {
            tenant: self.tenant,
            session: self.session,
            run: self.run,
            definition: self.definition,
        }
    }

    /// The run's policy.
    pub fn policy(&self) -> Policy {
        Policy {
            operator: self.operator,
            reconcile_window: self.reconcile_window,
            allowed: self.allowed.unwrap_or(resumable_kernel::Allowed::ALL),
        }
    }

    /// A new run, running at revision 0, or why its policy cannot govern one.
    pub fn create(&self) -> Result<Run, resumable_kernel::PolicyError> {
        Run::new(self.identity(), self.policy(), self.created_at)
    }
}

/// A parsed scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The header.
    pub header: Header,
    /// The header's line number.
    pub header_line: usize,
    /// The inputs, in order.
    pub steps: Vec<Step>,
}

/// Which checkpoint a [`CheckpointRef`] starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The last checkpoint the trace emitted.
    Latest,
    /// The checkpoint the trace emitted at this revision.
    Emitted(Revision),
}

/// A resume's checkpoint, written as a reference to one the trace emitted, optionally with
/// fields changed (to show what a forged, tampered or misdirected checkpoint meets).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointRef {
    /// The emitted checkpoint it starts from.
    pub source: Source,
    /// Fields to change, as a partial checkpoint in serde form (nested objects merge).
    pub changes: Map<String, Value>,
    /// Whether to recompute the digest after the changes. `false` keeps the emitted digest,
    /// which then no longer matches: a tampered checkpoint (spec CKP-2).
    pub reseal: bool,
}

/// What replay fills in from the resolved checkpoint, because the line left it out.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Fill {
    /// The checkpoint is a reference, resolved against the checkpoints emitted so far.
    pub checkpoint: Option<CheckpointRef>,
    /// The approval's `revision` is the checkpoint's.
    pub approval_revision: bool,
    /// For a batch's decisions, bit `i` set: the `i`-th decision's approval `revision` is the
    /// checkpoint's.
    pub batch_revisions: u8,
    /// The facts' `resource_version` is the checkpoint's.
    pub facts_resource_version: bool,
    /// The call's `prior` is what the run's history holds of it: replay keeps the history,
    /// as a driver's store does.
    pub prior: bool,
}

/// One input line of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The line number, from 1.
    pub line: usize,
    /// A remark the trace prints with the step.
    pub note: Option<String>,
    /// The verdict the scenario claims: `accepted`, or a rejection's name.
    pub expect: Option<String>,
    /// The input as written. Where [`Step::fill`] says so, a resume holds a placeholder
    /// (checkpoint, approval revision, resource version) until [`Step::resolve`] runs.
    pub input: Input,
    /// What replay fills in.
    pub fill: Fill,
}

impl Step {
    /// The input with every reference resolved against the checkpoints emitted so far (in
    /// order), or a message saying why it cannot be.
    pub fn resolve(&self, emitted: &[Checkpoint]) -> Result<Input, String> {
        let mut input = self.input;
        let Event::Resume(resume) = &mut input.event else {
            return Ok(input);
        };
        if let Some(r) = &self.fill.checkpoint {
            resume.checkpoint = r.resolve(emitted)?;
        }
        if self.fill.approval_revision {
            if let resumable_kernel::Decision::Approve(a) | resumable_kernel::Decision::Deny(a) =
                &mut resume.decision
            {
                a.revision = resume.checkpoint.revision;
            }
        }
        if let resumable_kernel::Decision::Batch { decisions } = &mut resume.decision {
            for (i, d) in decisions.iter_mut().enumerate() {
                if self.fill.batch_revisions & (1 << i) != 0 {
                    d.approval.revision = resume.checkpoint.revision;
                }
            }
        }
        if self.fill.facts_resource_version {
            resume.facts.resource_version = resume.checkpoint.resource_version;
        }
        Ok(input)
    }

    /// `input` with its call's prior, where the line left it out, as `history` holds it.
    pub fn stating_prior(&self, mut input: Input, history: &History) -> Input {
        if !self.fill.prior {
            return input;
        }
        if let Event::Dispatch { call, prior, .. }
        | Event::Suspend {
            wait: resumable_kernel::Wait::Approval { call, prior, .. },
            ..
        } = &mut input.event
        {
            *prior = history.prior(call);
        }
        if let Event::Suspend {
            wait: resumable_kernel::Wait::Batch { calls },
            ..
        } = &mut input.event
        {
            for p in calls.iter_mut() {
                p.prior = history.prior(&p.call);
            }
        }
        input
    }
}

/// Parses a scenario from bytes.
pub fn parse(bytes: &[u8]) -> Result<Scenario, ScenarioError> {
    let mut reader = Reader::new(bytes);
    let (header, header_line) = reader.header()?;
    let mut steps = Vec::new();
    while let Some(step) = reader.next_step()? {
        steps.push(step);
    }
    if steps.is_empty() {
        return Err(no_inputs(header_line));
    }
    Ok(Scenario {
        header,
        header_line,
        steps,
    })
}

/// The error for a scenario whose header is followed by no input.
pub fn no_inputs(header_line: usize) -> ScenarioError {
    ScenarioError::at(header_line, "the scenario has a header but no inputs")
}
