//! What a validation that found nothing wrong says: the log's contents, what could not be
//! proven, and, for a log of rules this validator does not judge, from which line and why.

use resumable_kernel::{Identity, PhaseKind, Revision, RULES_VERSION};
use serde::Serialize;

use crate::chain::KeyId;

/// Something a conforming log was not shown to be, for want of a key, an anchor, a policy or
/// the kernel of its own rules. In JSON: `{"unproven": "unkeyed", "message": "..."}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unproven {
    /// The log is not sealed with a key (version 1, or a `sha256` chain).
    Unkeyed,
    /// The log is sealed with a key, but none was given: its MACs were not checked.
    KeyNotGiven,
    /// No anchor was given.
    NoAnchor,
    /// The header declares no tool policy (version 1, or no `tools`).
    NoToolPolicy,
    /// The log was not written under this validator's rules (or, in format 1, names none):
    /// its verdicts were read in the shapes of its rules and agreed with this validator's
    /// kernel, which does not prove them the verdicts of its own rules.
    OtherRules,
}

impl Serialize for Unproven {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Unproven", 2)?;
        st.serialize_field("unproven", self.code())?;
        st.serialize_field("message", self.message())?;
        st.end()
    }
}

impl Unproven {
    /// The stable snake_case name.
    pub fn code(self) -> &'static str {
        match self {
            Unproven::Unkeyed => "unkeyed",
            Unproven::KeyNotGiven => "key_not_given",
            Unproven::NoAnchor => "no_anchor",
            Unproven::NoToolPolicy => "no_tool_policy",
            Unproven::OtherRules => "other_rules",
        }
    }

    /// What the validation could not prove, in a sentence.
    pub fn message(self) -> &'static str {
        match self {
            Unproven::Unkeyed => {
                "the log is unkeyed: anyone can rewrite it and recompute its chain, so it \
                 cannot prove that no record was dropped, reordered, duplicated or edited (a \
                 refused attempt erased, a digest or a party changed, a resolution rewritten) \
                 as long as the kernel accepts the result, nor that the header's operator and \
                 policy are the runtime's; a keyed log with --key-file can"
            }
            Unproven::KeyNotGiven => {
                "the log is keyed, but no key was given: its MACs were not checked, so it \
                 proves no more than an unkeyed log, and an anchor can only check its record \
                 count (give --key-file)"
            }
            Unproven::NoAnchor => {
                "no anchor was given: a log cut at a line boundary cannot be told from a \
                 complete one, and without a key neither can an edited last line (give \
                 --anchor)"
            }
            Unproven::NoToolPolicy => {
                "the header declares no tool policy: a gated call dispatched without an \
                 approval, or a call under another contract than its tool's, cannot be told"
            }
            Unproven::OtherRules => {
                "the log was not written under this validator's rules (or names none): its \
                 verdicts were read in the shapes of its rules and each is the one this \
                 validator's kernel gives, but a verdict on which the two rules differ would \
                 have stopped the judging, so only a validator of the log's own rules proves \
                 them its rules' verdicts"
            }
        }
    }
}

/// Why the records of a log, from some line on, were not judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotJudged {
    /// The first line not judged: 1 when the header names rules this validator does not read.
    pub line: u64,
    /// The rules the log was written under, as its header names or implies them; `None` for a
    /// format 1 log, which names none.
    pub rules: Option<u16>,
    /// Why.
    pub reason: Unjudged,
}

/// Why a record was not judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unjudged {
    /// The header names rules whose shapes this validator does not read: newer than its own,
    /// or older ones it keeps no reader for.
    Rules,
    /// The record is in none of the shapes this validator reads for the log's rules.
    Shape {
        /// What the reader of each shape tried said, from serde_json, without the position.
        message: String,
    },
    /// This validator's kernel answers the record otherwise than the log, whose rules are not
    /// this validator's: a change of rules between them, or a forgery, which only the kernel
    /// of the log's rules could tell apart.
    Answer {
        /// The kernel's verdict, in the log's shapes, as JSON.
        expected: String,
        /// The log's verdict, as JSON.
        found: String,
    },
}

impl Unjudged {
    /// The stable snake_case name.
    pub fn code(&self) -> &'static str {
        match self {
            Unjudged::Rules => "rules",
            Unjudged::Shape { .. } => "shape",
            Unjudged::Answer { .. } => "answer",
        }
    }
}

impl NotJudged {
    /// The rules of the log in words: `rules 2`, or `unnamed rules` for a format 1 log.
    fn rules_words(&self) -> String {
        match self.rules {
            Some(r) => format!("rules {r}"),
            None => "unnamed rules (format 1 names none)".into(),
        }
    }

    /// Why, in a sentence.
    pub fn message(&self) -> String {
        let (log, own) = (self.rules_words(), RULES_VERSION);
        match &self.reason {
            Unjudged::Rules if self.rules.is_some_and(|r| r > own) => format!(
                "the log was written under {log}, newer than this validator's rules {own}: \
                 no verdict is judged; the chain, the record numbers, the revisions and the \
                 anchor were checked"
            ),
            Unjudged::Rules => format!(
                "the log was written under {log}, which this validator (rules {own}) does not \
                 judge: no verdict is judged; the chain, the record numbers, the revisions and \
                 the anchor were checked"
            ),
            Unjudged::Shape { message } => format!(
                "the record is in no shape this validator reads for {log} ({message}): from \
                 here on no verdict is judged; the chain, the record numbers, the revisions \
                 and the anchor were checked to the end"
            ),
            Unjudged::Answer { .. } => format!(
                "this validator's kernel (rules {own}) answers the record otherwise than the \
                 log, written under {log}: the rules may differ here or the record may be \
                 forged, and only the kernel of the log's rules could tell; from here on no \
                 verdict is judged; the chain, the record numbers, the revisions and the \
                 anchor were checked to the end"
            ),
        }
    }

    /// As JSON: `line`, `rules`, `reason` (its code), the reason's fields, `message`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "line": self.line,
            "rules": self.rules,
            "reason": self.reason.code(),
        });
        if let serde_json::Value::Object(map) = &mut value {
            match &self.reason {
                Unjudged::Rules => {}
                Unjudged::Shape { message } => {
                    map.insert("shape_error".into(), message.as_str().into());
                }
                Unjudged::Answer { expected, found } => {
                    map.insert("expected".into(), expected.as_str().into());
                    map.insert("found".into(), found.as_str().into());
                }
            }
            map.insert("message".into(), self.message().into());
        }
        value
    }
}

impl Serialize for NotJudged {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

/// What a log without a finding contained, what the validation could not prove, and whether
/// every record was judged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The run the log describes; `None` when the header is in the shapes of rules this
    /// validator does not read.
    pub identity: Option<Identity>,
    /// The log's format version.
    pub version: u64,
    /// The rules the log was written under, as its header names them (format 3) or its format
    /// implies them (format 2: rules 3); `None` for format 1, which names none.
    pub rules: Option<u16>,
    /// The rules of this validator's kernel.
    pub validator_rules: u16,
    /// How the lines are chained: `hmac-sha256`, `sha256`, or `prev-sha256` (version 1).
    pub chain: &'static str,
    /// The id of the key that sealed the log, when it is keyed.
    pub key_id: Option<KeyId>,
    /// Whether every line's MAC was verified under the key given.
    pub authenticated: bool,
    /// Whether the log ended exactly at the anchor given: its record count and its last MAC
    /// (not set for a keyed log read without its key, whose MACs were not checked).
    pub anchored: bool,
    /// Records read (the header not counted).
    pub records: u64,
    /// Records of accepted inputs.
    pub accepted: u64,
    /// Records of refused inputs.
    pub rejected: u64,
    /// Records whose verdict was judged against the kernel.
    pub judged: u64,
    /// Why the records from some line on were not judged; `None` when every one was.
    pub not_judged: Option<NotJudged>,
    /// The run's revision after the last record.
    pub revision: Revision,
    /// The run's phase after the last record; `None` when it was not judged.
    pub phase: Option<PhaseKind>,
    /// Calls dispatched (first dispatches and retries), among the records judged.
    pub dispatches: u64,
    /// Results recorded as committed, among the records judged.
    pub commits: u64,
    /// How many recent commits the REC-4/EFF-1 check remembered.
    pub commit_window: u64,
    /// Whether the log had more commits than the window, so that a key reused farther apart
    /// than the window would not have been seen.
    pub commit_window_exceeded: bool,
    /// What the validation could not prove, for want of a key, an anchor, a policy or the
    /// kernel of the log's rules.
    pub unproven: Vec<Unproven>,
}

/// The exit status of a log whose records were not all judged (the command line's `validate`).
pub const NOT_JUDGED_EXIT: u8 = 3;

impl Summary {
    /// Whether the log conforms: every record judged, none found wrong. A log not judged is
    /// not a conforming one, whatever its envelope showed.
    pub fn conforming(&self) -> bool {
        self.not_judged.is_none()
    }

    /// The command-line exit status: 0 conforming, 3 not judged.
    pub fn exit_code(&self) -> u8 {
        if self.conforming() {
            0
        } else {
            NOT_JUDGED_EXIT
        }
    }
}
