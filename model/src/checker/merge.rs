//! Folding the reports of independent checks (the cells of a grid run as separate CI jobs)
//! into one verdict per property, under the rules of a single check.
//!
//! Each cell checks one configuration, so a property's merged verdict says what the grid as
//! a whole shows about it: violated if any cell violated it; not established (incomplete or
//! unjudged) if any cell left it undecided; otherwise it holds in every configuration, and it
//! was exercised if each of its `sometimes` partners was reached in some cell. A property
//! only some configurations exercise is therefore exercised by the grid, as long as none of
//! them violates it. Properties are told apart by subject (`model`) and name: the kernel's
//! "RES-3" and the reference machine's are different rows.

use super::render;
use super::report::{Exploration, Kind, Outcome, Report, Stats, Verdict, SCHEMA};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// The `schema` field of a merged report.
pub const MERGE_SCHEMA: &str = "resumable-check-merge/1";

/// One check that went into the merge.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Where the report came from (its file name).
    pub source: String,
    /// The subject checked.
    pub model: String,
    /// Its configuration.
    pub config: serde_json::Value,
    /// Its outcome.
    pub outcome: Outcome,
    /// Its exit status.
    pub exit_code: u8,
    /// How much of its state space it covered.
    pub exploration: Exploration,
    /// Its figures.
    pub stats: Stats,
}

/// One property across the cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MergedProperty {
    /// The subject.
    pub model: String,
    /// The property's name.
    pub name: String,
    /// `always` or `sometimes`.
    pub kind: Kind,
    /// The verdict across the cells.
    pub verdict: Verdict,
    /// Its `sometimes` partners (for an `always`).
    pub partners: Vec<String>,
    /// Its verdict in each cell, in the order of `cells`; `None` where the cell checked
    /// another subject.
    pub cells: Vec<Option<Verdict>>,
}

/// The merged report. Serialises to the schema `resumable-check-merge/1`
/// (spec/check-output.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Merged {
    /// Always [`MERGE_SCHEMA`].
    pub schema: String,
    /// The checks, in the order given.
    pub cells: Vec<Cell>,
    /// One entry per subject and property, in order of first appearance.
    pub properties: Vec<MergedProperty>,
    /// The overall result, by the rules of a single check.
    pub outcome: Outcome,
    /// Its exit status.
    pub exit_code: u8,
}

/// Why reports could not be merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeError {
    /// Nothing to merge.
    Empty,
    /// A report is not a `resumable-check/2` document.
    Schema {
        /// Its source.
        source: String,
        /// Its schema, or why it has none.
        found: String,
    },
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeError::Empty => write!(f, "no reports to merge"),
            MergeError::Schema { source, found } => {
                write!(f, "{source}: expected a {SCHEMA} report, found {found}")
            }
        }
    }
}

impl std::error::Error for MergeError {}

/// Reads one report for merging, `source` naming it in errors.
pub fn parse(source: &str, text: &str) -> Result<Report, MergeError> {
    let schema_error = |found: String| MergeError::Schema {
        source: source.to_owned(),
        found,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| schema_error(format!("no JSON ({e})")))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => return Err(schema_error(format!("schema {other:?}"))),
        None => return Err(schema_error("no schema field".to_owned())),
    }
    serde_json::from_value(value).map_err(|e| schema_error(format!("a malformed report ({e})")))
}

/// The merge of `reports`, each with its source.
pub fn merge(reports: &[(String, Report)]) -> Result<Merged, MergeError> {
    if reports.is_empty() {
        return Err(MergeError::Empty);
    }
    let mut properties: Vec<MergedProperty> = Vec::new();
    for (n, (_, report)) in reports.iter().enumerate() {
        for p in &report.properties {
            let index = match (properties.iter())
                .position(|m| m.model == report.model && m.name == p.name)
            {
                Some(index) => index,
                None => {
                    properties.push(MergedProperty {
                        model: report.model.clone(),
                        name: p.name.clone(),
                        kind: p.kind,
                        verdict: Verdict::Holds,
                        partners: p.partners.clone(),
                        cells: vec![None; reports.len()],
                    });
                    properties.len() - 1
                }
            };
            properties[index].cells[n] = Some(p.verdict);
        }
    }
    let own: Vec<Verdict> = properties.iter().map(across).collect();
    let merged: Vec<Verdict> = (properties.iter().zip(&own))
        .map(|(p, &verdict)| {
            let reached = |name: &String| {
                (properties.iter().zip(&own))
                    .any(|(q, v)| q.model == p.model && &q.name == name && *v == Verdict::Holds)
            };
            // As in a single check, an `always` without partners is never taken for
            // exercised (a report from a list that paired it with none cannot be trusted).
            let exercised = !p.partners.is_empty() && p.partners.iter().all(reached);
            match verdict {
                Verdict::Holds if p.kind == Kind::Always && !exercised => Verdict::Unexercised,
                other => other,
            }
        })
        .collect();
    for (p, verdict) in properties.iter_mut().zip(merged) {
        p.verdict = verdict;
    }
    let outcome = Outcome::of(properties.iter().map(|p| p.verdict));
    let cells = (reports.iter())
        .map(|(source, r)| Cell {
            source: source.clone(),
            model: r.model.clone(),
            config: r.config.clone(),
            outcome: r.outcome,
            exit_code: r.exit_code,
            exploration: r.exploration.clone(),
            stats: r.stats.clone(),
        })
        .collect();
    Ok(Merged {
        schema: MERGE_SCHEMA.to_owned(),
        cells,
        properties,
        outcome,
        exit_code: outcome.exit_code(),
    })
}

/// A property's verdict across the cells that checked it, before its partners are consulted.
fn across(p: &MergedProperty) -> Verdict {
    let verdicts: Vec<Verdict> = p.cells.iter().flatten().copied().collect();
    let any = |v: Verdict| verdicts.contains(&v);
    match p.kind {
        Kind::Always if any(Verdict::Violated) => Verdict::Violated,
        Kind::Sometimes if any(Verdict::Holds) => Verdict::Holds,
        _ if any(Verdict::Incomplete) => Verdict::Incomplete,
        _ if any(Verdict::Unjudged) => Verdict::Unjudged,
        Kind::Always => Verdict::Holds,
        Kind::Sometimes => Verdict::Unreached,
    }
}

impl Merged {
    /// The merged report as one JSON document (pretty-printed).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"schema\":\"{MERGE_SCHEMA}\",\"error\":\"{e}\"}}"))
    }

    /// The merged report as text: the cells, the property table, the result.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "merged {} checks:", self.cells.len());
        for cell in &self.cells {
            let outcome = match cell.outcome {
                Outcome::Pass => "pass",
                Outcome::Fail => "fail",
                Outcome::Incomplete => "incomplete",
                Outcome::Unexercised => "unexercised",
            };
            let _ = writeln!(
                out,
                "  {}: {}, {outcome}, exit {} ({} unique states, depth {})",
                cell.source, cell.model, cell.exit_code, cell.stats.unique, cell.stats.max_depth
            );
        }
        out.push('\n');
        let first = self.properties.first().map(|p| p.model.as_str());
        let several = (self.properties.iter()).any(|p| Some(p.model.as_str()) != first);
        let names: Vec<String> = (self.properties.iter())
            .map(|p| match several {
                true => format!("{}: {}", p.model, p.name),
                false => p.name.clone(),
            })
            .collect();
        let rows: Vec<(&str, Kind, Verdict)> = (names.iter().zip(&self.properties))
            .map(|(name, p)| (name.as_str(), p.kind, p.verdict))
            .collect();
        render::table(&mut out, &rows);
        let failing: Vec<String> = (rows.iter())
            .filter(|(_, _, v)| *v != Verdict::Holds)
            .map(|(name, _, v)| format!("{name} ({})", render::verdict_word(*v)))
            .collect();
        let _ = match self.outcome {
            Outcome::Pass => writeln!(
                out,
                "\nresult: pass: all {} properties hold in every configuration and each is \
                 exercised in one",
                self.properties.len()
            ),
            other => writeln!(
                out,
                "\nresult: {}: {}",
                match other {
                    Outcome::Fail => "FAIL",
                    Outcome::Unexercised => "UNEXERCISED",
                    _ => "incomplete",
                },
                failing.join("; ")
            ),
        };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::*;

    fn property(kind: Kind, cells: &[Option<Verdict>]) -> MergedProperty {
        MergedProperty {
            model: "kernel".to_owned(),
            name: "X-1 a property".to_owned(),
            kind,
            verdict: Holds,
            partners: Vec::new(),
            cells: cells.to_vec(),
        }
    }

    #[test]
    fn a_verdict_across_cells_is_the_worst_that_any_cell_proves() {
        let always = |cells: &[Option<Verdict>]| across(&property(Kind::Always, cells));
        assert_eq!(
            always(&[Some(Holds), Some(Violated), Some(Incomplete)]),
            Violated
        );
        assert_eq!(
            always(&[Some(Holds), Some(Incomplete), Some(Unjudged)]),
            Incomplete
        );
        assert_eq!(always(&[Some(Holds), Some(Unjudged)]), Unjudged);
        // Unexercised in one cell, holding in another: no cell violates it; whether it was
        // exercised is decided from its partners across the cells.
        assert_eq!(always(&[Some(Unexercised), Some(Holds), None]), Holds);
        let sometimes = |cells: &[Option<Verdict>]| across(&property(Kind::Sometimes, cells));
        assert_eq!(sometimes(&[Some(Unreached), Some(Holds)]), Holds);
        assert_eq!(sometimes(&[Some(Unreached), Some(Incomplete)]), Incomplete);
        assert_eq!(sometimes(&[Some(Unreached), None]), Unreached);
    }

    #[test]
    fn an_always_whose_report_names_no_partner_is_merged_unexercised() {
        let options = crate::checker::Options::default();
        let model = crate::twopc::TwoPhaseCommit::new(2);
        let mut report = crate::checker::check(model, &options).expect("the check runs");
        let consistent = |r: &Merged| -> Verdict {
            let p = r.properties.iter().find(|p| p.name == "consistent");
            p.map_or(Incomplete, |p| p.verdict)
        };
        let cells = [("a.json".to_owned(), report.clone())];
        assert_eq!(consistent(&merge(&cells).expect("merges")), Holds);
        // As a report from a list that paired it with nothing would say.
        for p in &mut report.properties {
            p.partners.clear();
        }
        let cells = [("a.json".to_owned(), report)];
        assert_eq!(consistent(&merge(&cells).expect("merges")), Unexercised);
    }
}
