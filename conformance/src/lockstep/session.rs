//! A pair and one run of it, driven input by input.

use resumable_kernel::{Identity, Input, Policy, PolicyError, Time};
use resumable_model::Lifecycle;

use super::{render, Divergence, Observable, Observation, Pair, PairRun, Said};

/// One input fed to both machines by a [`Session`], with both verdicts.
#[derive(Clone, Debug)]
pub struct Row {
    /// The input.
    pub input: Input,
    /// What the first machine said.
    pub a: Said,
    /// What the second machine said.
    pub b: Said,
    /// Whether the two agreed (before this input, the pair had not diverged).
    pub agreed: bool,
}

/// A pair and one run of it, driven input by input: for named cases, property tests and
/// side-by-side tables.
#[derive(Clone, Debug)]
pub struct Session<A: Observable, B: Observable> {
    pair: Pair<A, B>,
    run: PairRun<A::Run, B::Run>,
    rows: Vec<Row>,
}

impl<A: Observable, B: Observable> Session<A, B> {
    /// A new run of `pair`, or why the policy cannot govern one.
    pub fn new(
        pair: Pair<A, B>,
        identity: Identity,
        policy: Policy,
        at: Time,
    ) -> Result<Session<A, B>, PolicyError> {
        let run = pair.create(identity, policy, at)?;
        Ok(Session {
            pair,
            run,
            rows: Vec::new(),
        })
    }

    /// Feeds one input to both machines; returns the row it adds.
    pub fn feed(&mut self, input: &Input) -> &Row {
        let before = self.run.divergence.is_none();
        let compared = self.pair.compare(&self.run, input);
        if let Ok((next, _)) = &compared.next {
            self.run = next.clone();
        }
        let agreed = before && self.run.divergence.is_none();
        self.rows.push(Row {
            input: *input,
            a: compared.a,
            b: compared.b,
            agreed,
        });
        // The row was just pushed, so the vector is not empty.
        let last = self.rows.len() - 1;
        &self.rows[last]
    }

    /// The rows so far.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The pair's run now.
    pub fn run(&self) -> &PairRun<A::Run, B::Run> {
        &self.run
    }

    /// The pair.
    pub fn pair(&self) -> &Pair<A, B> {
        &self.pair
    }

    /// The first disagreement, if any.
    pub fn divergence(&self) -> Option<&Divergence> {
        self.run.divergence.as_deref()
    }

    /// The run as both machines see it (the leading machine's, after a divergence).
    pub fn observation(&self) -> Observation {
        self.pair.observe(&self.run)
    }

    /// The rows as a side-by-side table (see [`render::rows`]).
    pub fn to_text(&self) -> String {
        render::rows(self.pair.names(), &self.rows)
    }
}
