//! Counterexamples in the Informal Trace Format, read back with the `itf` crate (the reader
//! of Apalache's and Quint's traces): what the checker writes is what a tool reads, value
//! for value, 64-bit numbers and Quint's sum types included.

// Every field is read from the document, so its presence and its type are checked even where
// no assertion looks at its value.
#![allow(
    dead_code,
    reason = "fields read back from ITF are checked by deserialising them, not all read"
)]

use resumable_model::checker::{check, Kind, Options, Report, Trace};
use resumable_model::config::Config;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::World;
use resumable_model::Kernel;
use serde::Deserialize;

/// A world state as the checker writes it, read with the `itf` crate.
#[derive(Debug, Deserialize)]
struct State {
    action: String,
    now: u64,
    budgets: Budgets,
    runs: Vec<Run>,
    workers: Vec<Worker>,
    requests: Vec<ToolMsg>,
    responses: Vec<ToolMsg>,
    decisions: Vec<Decision>,
    violated: u32,
    seen: u16,
}

#[derive(Debug, Deserialize)]
struct Budgets {
    crashes: u8,
    losses: u8,
    duplicates: u8,
    cancels: u8,
}

/// Quint's option, as ITF writes it.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(tag = "tag", content = "value")]
enum Maybe<T> {
    Some(T),
    None,
}

#[derive(Debug, Deserialize)]
struct Run {
    phase: String,
    revision: u64,
    reason: Maybe<String>,
    expires_at: Maybe<u64>,
    ending: Maybe<String>,
    in_flight: bool,
    checkpoints: u64,
    audited: u8,
    waiting_since: Maybe<u64>,
    orphaned: bool,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "tag", content = "value")]
enum Worker {
    Idle,
    Staged { run: u8, from: u64, input: String },
    Dispatching { run: u8, queue: Vec<Key> },
}

#[derive(Debug, Deserialize)]
struct Key {
    call: u8,
    attempt: u8,
}

#[derive(Debug, Deserialize)]
struct ToolMsg {
    run: u8,
    call: u8,
    attempt: u8,
}

#[derive(Debug, Deserialize)]
struct Decision {
    target: u8,
    source: u8,
    checkpoint: u8,
    revision: u64,
    party: String,
    verdict: String,
    expires_at: u64,
    delivered: u8,
}

fn with_itf() -> Options<<World<Reference> as stateright::Model>::State> {
    Options {
        itf: true,
        witnesses: true,
        ..Options::default()
    }
}

/// The ITF document of a trace, as text, read back as world states.
fn read_back(trace: &Trace) -> itf::Trace<State> {
    let document = trace.itf.as_ref().expect("asked for ITF");
    let text = serde_json::to_string(document).expect("serialises");
    itf::trace_from_str::<State>(&text).expect("the itf crate reads it")
}

fn violated(report: &Report) -> &Trace {
    (report.properties.iter())
        .filter(|p| p.kind == Kind::Always)
        .find_map(|p| p.counterexample.as_ref())
        .expect("a counterexample")
}

#[test]
fn a_counterexample_in_itf_reads_back_step_for_step() {
    let variant = Variant::RetryUnknownWithoutReconcile;
    let world = World::new(
        Reference {
            variant: Some(variant),
        },
        Config::exposing(variant),
    )
    .unwrap();
    let report = check(world, &with_itf()).unwrap();
    let trace = violated(&report);
    let read = read_back(trace);

    assert_eq!(read.meta.format.as_deref(), Some("ITF"));
    assert!(read
        .meta
        .description
        .as_deref()
        .unwrap_or("")
        .starts_with("counterexample to"));
    assert_eq!(read.vars[0], "action");
    assert_eq!(read.states.len(), trace.steps + 1);
    for (index, (state, step)) in read.states.iter().zip(&trace.trace).enumerate() {
        assert_eq!(state.meta.index, Some(index as u64));
        let action = step.action.clone().unwrap_or_else(|| "init".to_owned());
        assert_eq!(state.value.action, action);
        // The text trace's summary names each run's revision: the ITF one must agree.
        for (n, run) in state.value.runs.iter().enumerate() {
            let summary = &step.state;
            assert!(
                summary.contains(&format!("run {n}: "))
                    && summary.contains(&format!("r{}", run.revision)),
                "step {index}: {summary} vs {run:?}"
            );
        }
    }
    let first = &read.states[0].value;
    assert_eq!(first.now, 0);
    assert_eq!(first.runs[0].revision, 0);
    assert_eq!(first.runs[0].phase, "running");
    assert_eq!(first.runs[0].reason, Maybe::None);
    assert!(first.workers.iter().all(|w| matches!(w, Worker::Idle)));
    assert!(first.requests.is_empty() && first.responses.is_empty());
    assert_eq!(first.violated, 0);
    // The last state is where the property broke: the world recorded the violation.
    let last = &read.states.last().expect("states").value;
    assert_ne!(last.violated, 0);
}

#[test]
fn witnesses_read_back_with_every_kind_of_value() {
    // The kernel in a small world, with witnesses: approvals (decisions in flight), an
    // unknown outcome (a staged recover), expiry (an option with a value).
    let small = Config {
        losses: 0,
        duplicates: 0,
        query_unknown: false,
        max_time: 3,
        ..Config::default()
    };
    let world = World::new(Kernel, small).unwrap();
    let options = Options {
        itf: true,
        witnesses: true,
        ..Options::default()
    };
    let report = check(world, &options).unwrap();
    let mut seen_decision = false;
    let mut seen_expiry = false;
    let mut seen_staged = false;
    for p in report
        .properties
        .iter()
        .filter(|p| p.kind == Kind::Sometimes)
    {
        let Some(trace) = &p.witness else { continue };
        let read = read_back(trace);
        assert_eq!(read.states.len(), trace.steps + 1, "{}", p.name);
        for state in &read.states {
            let s = &state.value;
            seen_decision |= s
                .decisions
                .iter()
                .any(|d| d.revision > 0 && d.target == d.source);
            seen_expiry |= s
                .runs
                .iter()
                .any(|r| matches!(r.expires_at, Maybe::Some(t) if t > 0));
            seen_staged |= (s.workers.iter()).any(|w| match w {
                Worker::Staged { run, from, input } => {
                    usize::from(*run) < s.runs.len()
                        && *from <= s.runs[0].revision
                        && !input.is_empty()
                }
                _ => false,
            });
            assert!(s.budgets.crashes <= 1 && s.budgets.losses <= 1 && s.seen < 1 << 9);
        }
    }
    assert!(seen_decision && seen_expiry && seen_staged);
}
