//! Keeps spec/ in step with the kernel.
//!
//! The lifecycle diagram in `spec/lifecycle.md` must show exactly the transitions the kernel
//! accepts. The edge list is not written down here: the test drives the real kernel from
//! fixture runs in every state with representative inputs of every kind, collects the accepted
//! (from-state, event kind, to-state) triples and compares them with the diagram's edges, both
//! ways. The checkpoint examples in `spec/checkpoint.md` must decode and verify with the real
//! decoder and be what the kernel writes.
#![cfg(feature = "json")]

use resumable_kernel::checkpoint::{decode_json, Decoded};
use resumable_kernel::*;
use resumable_testkit::*;
use std::collections::BTreeSet;

/// A diagram edge: from-state, event kind, to-state.
type Edge = (String, String, String);

const DIAGRAM_START: &str = "<!-- diagram:start -->";
const DIAGRAM_END: &str = "<!-- diagram:end -->";
/// Mermaid's pseudo-state for the start of the lifecycle.
const INITIAL: &str = "[*]";

fn spec(file: &str) -> String {
    let path = format!("{}/../spec/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// The text between two marker lines of a spec document.
fn between<'a>(doc: &'a str, start: &str, end: &str) -> Result<&'a str, String> {
    let from = doc
        .find(start)
        .ok_or_else(|| format!("no marker {start}"))?
        + start.len();
    let to = doc[from..]
        .find(end)
        .ok_or_else(|| format!("no marker {end}"))?
        + from;
    Ok(&doc[from..to])
}

/// The name serde gives a kernel enum's unit variant: the spec speaks the wire vocabulary.
fn wire<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        other => panic!("expected a unit variant name, got {other:?}"),
    }
}

/// The diagram state a run is in. A dispatch in flight is drawn as its own state, and each
/// suspension reason as its own state, so the picture shows where each input leads.
fn state_of(run: &Run) -> String {
    match run.phase() {
        Phase::Running { in_flight: None } if matches!(run.next(), Next::Results { .. }) => {
            "dispatching_batch".to_string()
        }
        Phase::Running { in_flight: None } => "running".to_string(),
        Phase::Running { in_flight: Some(_) } => "dispatching".to_string(),
        Phase::Suspended(s) => format!("suspended_{}", wire(&s.reason.kind())),
        terminal => wire(&terminal.kind()),
    }
}

/// A run with `c` dispatched and its answer outstanding: running, with a call in flight.
fn dispatching(c: Call) -> Run {
    accept(&new_run("run-dispatch"), at(1, first_dispatch(c))).0
}

/// A run suspended on `wait`, with `responsible` as the party who must act.
fn suspended_on(wait: Wait, responsible: Name) -> Run {
    let suspend = Event::Suspend {
        wait,
        expires_at: Time(50),
        responsible,
        resource_version: 1,
    };
    accept(&new_run("run-suspended"), at(1, suspend)).0
}

/// A run whose unknown outcome for `c` was handed to a person: the reconcile answered unknown.
fn escalated(c: Call) -> Run {
    let (run, cp) = outcome_unknown(c);
    let reconcile = resume(cp, Decision::Reconcile(QueryAnswer::Unknown));
    accept(&run, at(3, reconcile)).0
}

/// A run cancelled while `c` was in flight: the cancel waits for the reconcile (CAN-1).
fn cancel_pending(c: Call) -> Run {
    accept(&dispatching(c), at(2, Event::Cancel { by: OPERATOR })).0
}

/// The two calls of the batch fixtures: a deduping tool and a fencing one.
fn batch_calls() -> [Call; 2] {
    [
        call("call-a", "publish:demo", "idem-a"),
        Call {
            contract: contract(false, true),
            ..call("call-b", "email:demo", "idem-b")
        },
    ]
}

/// A run suspended for a batch of two calls, with `decided` of them approved already.
fn batch_pending(decided: usize) -> Run {
    let [a, b] = batch_calls();
    let proposals = [a, b].map(|c| Proposal {
        call: c,
        requester: REQUESTER,
        prior: Prior::NONE,
    });
    let suspend = Event::Suspend {
        wait: Wait::Batch {
            calls: Proposals::of(&proposals).unwrap(),
        },
        expires_at: Time(50),
        responsible: APPROVER,
        resource_version: 1,
    };
    let (mut run, fx) = accept(&new_run("run-batch"), at(1, suspend));
    let cp = *fx.checkpoint().unwrap();
    for (i, c) in [a, b].iter().take(decided).enumerate() {
        let decision = batch_decision(&cp, &[(*c, Verdict::Approve)]);
        run = accept(&run, at(2 + i as u64, resume(cp, decision))).0;
    }
    run
}

/// A batch decision on `cp` giving each call its verdict.
fn batch_decision(cp: &Checkpoint, verdicts: &[(Call, Verdict)]) -> Decision {
    let each: Vec<CallDecision> = verdicts
        .iter()
        .map(|(c, verdict)| CallDecision {
            approval: approval(cp, c),
            verdict: *verdict,
        })
        .collect();
    Decision::Batch {
        decisions: Decisions::of(&each).unwrap(),
    }
}

/// A run with the batch's calls in flight together: both, or only the second left.
fn batch_in_flight(both: bool) -> Run {
    let run = batch_pending(2);
    if both {
        return run;
    }
    let [a, _] = batch_calls();
    let answer = Event::ToolResult {
        call_id: a.call_id,
        attempt: 0,
        result: Digest::of(b"ok"),
    };
    accept(&run, at(5, answer)).0
}

/// A run that ended with `event` straight away: completed or failed.
fn ended(event: Event) -> Run {
    accept(&new_run("run-ended"), at(1, event)).0
}

/// One or more runs in every state the lifecycle has, built by driving the kernel. States
/// whose inputs depend on data get one run per variant of that data: the tool contract and
/// attempt budget of an unknown outcome, a pending cancel, an intervention with and without an
/// unresolved effect.
fn fixtures() -> Vec<Run> {
    let with = |contract| Call {
        contract,
        ..call("call-1", "publish:demo", "idem-1")
    };
    let exhausted = ToolContract {
        max_attempts: 1,
        ..contract(true, false)
    };
    vec![
        new_run("run-fresh"),
        dispatching(with(contract(true, false))),
        pending(with(contract(true, false))).0,
        suspended_on(
            Wait::Callback {
                callback: Name::lit("cb-1"),
            },
            OPERATOR,
        ),
        suspended_on(
            Wait::Resource {
                resource: Name::lit("gpu-1"),
            },
            OPERATOR,
        ),
        suspended_on(Wait::Intervention, OPERATOR),
        escalated(with(contract(true, false))),
        outcome_unknown(with(contract(true, false))).0,
        outcome_unknown(with(contract(false, true))).0,
        outcome_unknown(with(contract(true, true))).0,
        outcome_unknown(with(contract(false, false))).0,
        outcome_unknown(with(exhausted)).0,
        cancel_pending(with(contract(true, false))),
        batch_pending(0),
        batch_pending(1),
        batch_in_flight(true),
        batch_in_flight(false),
        ended(Event::Complete {
            result: Digest::of(b"done"),
        }),
        ended(Event::Fail {
            code: Name::lit("E-boom"),
        }),
    ]
}

/// The checkpoint a resume of `run` carries: the one the kernel wrote, or, for a run that is
/// not suspended, a sealed checkpoint naming the run at its current revision, so that the
/// resume gets past identity, schema, digest and revision and meets the phase guard.
fn checkpoint_for(run: &Run, now: u64) -> Checkpoint {
    Checkpoint::of(run).unwrap_or_else(|| {
        Checkpoint {
            schema_version: SCHEMA_VERSION,
            identity: *run.identity(),
            revision: run.revision(),
            resource_version: run.resource_version(),
            reason: ReasonKind::ExternalCallback,
            next_intent: Intent::Continue,
            pending: None,
            key_digest: None,
            requester: None,
            waiting_on: Some(Name::lit("cb-1")),
            expires_at: Time(now + 10),
            responsible: OPERATOR,
            created_at: Time(now),
            batch: None,
            cancel_requested_by: None,
            digest: Digest::default(),
        }
        .seal()
    })
}

/// Every decision a resume can carry, each aimed at `run`'s suspension: bound to its pending
/// call, naming what it waits on and coming from its responsible party.
fn decisions(run: &Run) -> Vec<(String, Decision)> {
    let responsible = run.suspension().map_or(OPERATOR, |s| s.responsible);
    let waiting_on = Checkpoint::of(run)
        .and_then(|cp| cp.waiting_on)
        .unwrap_or(Name::lit("cb-1"));
    let approval = match run.suspension().map(|s| s.reason) {
        Some(Reason::PendingApproval { call, requester }) => Approval {
            call_id: call.call.call_id,
            args: call.call.args,
            requester,
            approver: responsible,
            revision: run.revision(),
            expires_at: Time(1_000),
        },
        _ => Approval {
            call_id: Name::lit("call-x"),
            args: Digest::of(b"x"),
            requester: REQUESTER,
            approver: responsible,
            revision: run.revision(),
            expires_at: Time(1_000),
        },
    };
    let result = Digest::of(b"committed");
    let intervene = |resolution| Decision::Intervene {
        by: responsible,
        resolution,
    };
    vec![
        ("approve", Decision::Approve(approval)),
        ("deny", Decision::Deny(approval)),
        (
            "callback",
            Decision::Callback {
                callback: waiting_on,
                payload: Digest::of(b"payload"),
            },
        ),
        (
            "resource_ready",
            Decision::ResourceReady {
                resource: waiting_on,
            },
        ),
        (
            "intervene:committed",
            intervene(Resolution::Committed { result }),
        ),
        ("intervene:continue", intervene(Resolution::Continue)),
        ("intervene:abandon", intervene(Resolution::Abandon)),
        (
            "reconcile:committed",
            Decision::Reconcile(QueryAnswer::Committed { result }),
        ),
        (
            "reconcile:not_committed",
            Decision::Reconcile(QueryAnswer::NotCommitted),
        ),
        (
            "reconcile:unknown",
            Decision::Reconcile(QueryAnswer::Unknown),
        ),
    ]
    .into_iter()
    .map(|(label, d)| (label.to_string(), d))
    .collect()
}

/// The representative inputs offered to `run`, each labelled with what it stands for. Each is
/// built to pass the guards that are not about the transition itself (identity, clock,
/// checkpoint, party, expiry), so a rejection means the kernel forbids the move.
fn candidates(run: &Run) -> Vec<(String, Input)> {
    let now = run.updated_at().0 + 1;
    let input = |event| Input {
        at: Time(now),
        event,
    };
    let fresh = |contract| Call {
        contract,
        ..call("call-new", "tool:new", "key-new")
    };
    let mut out = Vec::new();
    let batch = Wait::Batch {
        calls: Proposals::of(&[Proposal {
            call: fresh(contract(true, false)),
            requester: REQUESTER,
            prior: Prior::NONE,
        }])
        .unwrap(),
    };
    for (label, wait, responsible) in [
        ("batch", batch, APPROVER),
        (
            "approval",
            Wait::Approval {
                call: fresh(contract(true, false)),
                requester: REQUESTER,
                prior: Prior::NONE,
            },
            APPROVER,
        ),
        (
            "callback",
            Wait::Callback {
                callback: Name::lit("cb-2"),
            },
            OPERATOR,
        ),
        ("intervention", Wait::Intervention, OPERATOR),
        (
            "resource",
            Wait::Resource {
                resource: Name::lit("gpu-2"),
            },
            OPERATOR,
        ),
    ] {
        let suspend = Event::Suspend {
            wait,
            expires_at: Time(now + 50),
            responsible,
            resource_version: 1,
        };
        out.push((format!("suspend:{label}"), input(suspend)));
    }
    for (label, c) in [
        ("dedupes", contract(true, false)),
        ("fences", contract(false, true)),
        ("neither", contract(false, false)),
    ] {
        let dispatch = first_dispatch(fresh(c));
        out.push((format!("dispatch:{label}"), input(dispatch)));
    }
    // A tool result answers the call in flight, when there is one (a batch's first).
    let (call_id, attempt) = match run.next() {
        Next::Results { dispatches } => dispatches
            .get(0)
            .map_or((Name::lit("call-x"), 0), |d| (d.call_id, d.attempt)),
        _ => run.in_flight().map_or((Name::lit("call-x"), 0), |f| {
            (f.call.call.call_id, f.attempt)
        }),
    };
    let answer = Event::ToolResult {
        call_id,
        attempt,
        result: Digest::of(b"ok"),
    };
    out.push(("tool_result".to_string(), input(answer)));
    out.push(("recover".to_string(), input(Event::Recover)));
    // An expire comes after the suspension's expiry, when there is one.
    let late = run
        .suspension()
        .map_or(now, |s| s.expires_at.0 + 1)
        .max(now);
    let expire = Input {
        at: Time(late),
        event: Event::Expire,
    };
    out.push(("expire".to_string(), expire));
    // And at the end of time, where no person can be given a passable expiry (EXP-1).
    let last = Input {
        at: Time::END,
        event: Event::Expire,
    };
    out.push(("expire:end_of_time".to_string(), last));
    out.push(("cancel".to_string(), input(Event::Cancel { by: OPERATOR })));
    let done = Event::Complete {
        result: Digest::of(b"done"),
    };
    out.push(("complete".to_string(), input(done)));
    let fail = Event::Fail {
        code: Name::lit("E-test"),
    };
    out.push(("fail".to_string(), input(fail)));
    let cp = checkpoint_for(run, now);
    for (label, decision) in decisions(run) {
        out.push((format!("resume:{label}"), input(resume(cp, decision))));
    }
    // A batch's decisions: on its calls still awaiting one, all approved, all rejected, the
    // first denied, or only the first approved.
    let awaiting: Vec<Call> = run
        .batch()
        .filter(|b| b.is_open())
        .map(|b| {
            b.slots
                .iter()
                .filter(|s| s.decided.is_none())
                .map(|s| s.call.call)
                .collect()
        })
        .unwrap_or_else(|| batch_calls().to_vec());
    let every = |verdict| awaiting.iter().map(|c| (*c, verdict)).collect::<Vec<_>>();
    let reason = Digest::of(b"no");
    for (label, verdicts) in [
        ("batch:approve", every(Verdict::Approve)),
        ("batch:reject", every(Verdict::Reject { reason })),
        ("batch:deny", every(Verdict::Deny)),
        ("batch:approve_first", every(Verdict::Approve)[..1].to_vec()),
    ] {
        let decision = batch_decision(&cp, &verdicts);
        out.push((label.to_string(), input(resume(cp, decision))));
    }
    out
}

/// What driving the kernel showed.
struct Explored {
    /// The accepted (from, event, to) triples, with the initial edge.
    edges: BTreeSet<Edge>,
    /// The states some fixture starts in.
    from_states: BTreeSet<String>,
    /// The labels of the candidate inputs accepted from at least one fixture.
    accepted: BTreeSet<String>,
    /// The labels of every candidate input offered.
    offered: BTreeSet<String>,
}

fn explore() -> Explored {
    let mut x = Explored {
        edges: BTreeSet::new(),
        from_states: BTreeSet::new(),
        accepted: BTreeSet::new(),
        offered: BTreeSet::new(),
    };
    // Every run starts where `Run::new` puts it.
    x.edges.insert((
        INITIAL.to_string(),
        String::new(),
        state_of(&new_run("run-new")),
    ));
    for run in fixtures() {
        let from = state_of(&run);
        x.from_states.insert(from.clone());
        for (label, input) in candidates(&run) {
            x.offered.insert(label.clone());
            if let Ok(t) = step(&run, &input) {
                x.accepted.insert(label);
                x.edges
                    .insert((from.clone(), wire(&input.event.kind()), state_of(&t.next)));
            }
        }
    }
    x
}

/// The edges of the Mermaid block between the diagram markers. Every line must be an edge,
/// the header, a fence, a comment or blank: anything else is refused so that a typo cannot
/// hide an edge from the comparison.
fn diagram_edges(doc: &str) -> Result<BTreeSet<Edge>, String> {
    let block = between(doc, DIAGRAM_START, DIAGRAM_END)?;
    let first_line = doc[..doc.find(DIAGRAM_START).unwrap_or(0)].lines().count();
    let mut edges = BTreeSet::new();
    let mut header = false;
    for (i, raw) in block.lines().enumerate() {
        let line = raw.trim();
        let at = first_line + i;
        if line.is_empty() || line.starts_with("%%") || line.starts_with("```") {
            continue;
        }
        if line == "stateDiagram-v2" {
            header = true;
            continue;
        }
        let (arrow, label) = match line.split_once(':') {
            Some((arrow, label)) => (arrow, label.trim()),
            None => (line, ""),
        };
        let (from, to) = arrow
            .split_once("-->")
            .ok_or_else(|| format!("line {at}: not an edge: {line}"))?;
        let (from, to) = (from.trim(), to.trim());
        let word = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
        if !word(from) || !word(to) || label.contains(char::is_whitespace) {
            return Err(format!("line {at}: malformed edge: {line}"));
        }
        if !edges.insert((from.to_string(), label.to_string(), to.to_string())) {
            return Err(format!("line {at}: duplicate edge: {line}"));
        }
    }
    if !header {
        return Err("the diagram block has no stateDiagram-v2 header".to_string());
    }
    Ok(edges)
}

fn mermaid(edges: &BTreeSet<Edge>) -> String {
    edges
        .iter()
        .map(|(from, event, to)| match event.as_str() {
            "" => format!("    {from} --> {to}\n"),
            _ => format!("    {from} --> {to}: {event}\n"),
        })
        .collect()
}

#[test]
fn lifecycle_diagram_shows_exactly_the_transitions_the_kernel_accepts() {
    let x = explore();

    // The harness is representative, not vacuous: every kind of input it offers is accepted
    // from some state (each resume decision, each intervention resolution, each reconcile
    // answer, a cancel, an expire...).
    let never: Vec<_> = x.offered.difference(&x.accepted).collect();
    assert!(
        never.is_empty(),
        "inputs accepted from no fixture: {never:?}"
    );

    // Closure: every state the kernel leads to has a fixture, so its edges are explored too.
    let unexplored: Vec<_> = x
        .edges
        .iter()
        .map(|(_, _, to)| to)
        .filter(|to| !x.from_states.contains(*to))
        .collect();
    assert!(
        unexplored.is_empty(),
        "states reached but never explored: {unexplored:?}"
    );

    let diagram = diagram_edges(&spec("lifecycle.md")).unwrap_or_else(|e| panic!("{e}"));
    let missing: BTreeSet<Edge> = x.edges.difference(&diagram).cloned().collect();
    let extra: BTreeSet<Edge> = diagram.difference(&x.edges).cloned().collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "spec/lifecycle.md's diagram and the kernel disagree.\n\
         missing from the diagram (the kernel accepts these):\n{}\
         extra in the diagram (the kernel accepts no such transition):\n{}",
        mermaid(&missing),
        mermaid(&extra),
    );
}

#[test]
fn diagram_parser_reads_edges_and_refuses_any_other_line() {
    let doc = "x\n<!-- diagram:start -->\n```mermaid\nstateDiagram-v2\n    %% note\n    \
               [*] --> running\n    running --> dispatching: dispatch\n```\n<!-- diagram:end -->\n";
    let edges = diagram_edges(doc).unwrap();
    let expected: BTreeSet<Edge> = [
        ("[*]", "", "running"),
        ("running", "dispatch", "dispatching"),
    ]
    .into_iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(edges, expected);

    let typo = doc.replace("running --> dispatching", "running -> dispatching");
    assert!(diagram_edges(&typo).is_err(), "a malformed edge is refused");
    let twice = doc.replace(
        "    running --> dispatching: dispatch\n",
        "    running --> dispatching: dispatch\n    running --> dispatching: dispatch\n",
    );
    assert!(
        diagram_edges(&twice).is_err(),
        "a duplicate edge is refused"
    );
    let headless = doc.replace("stateDiagram-v2\n", "");
    assert!(diagram_edges(&headless).is_err(), "the header is required");
}

/// The JSON inside a fenced block between two markers of spec/checkpoint.md.
fn example(name: &str) -> String {
    let doc = spec("checkpoint.md");
    let start = format!("<!-- example:{name}:start -->");
    let end = format!("<!-- example:{name}:end -->");
    between(&doc, &start, &end)
        .unwrap_or_else(|e| panic!("{e}"))
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The checkpoint the examples show: the seed's approval, suspended at revision 1.
fn seed_checkpoint() -> Checkpoint {
    pending(call("call-1", "publish:demo", "idem-run-approval")).1
}

#[test]
fn checkpoint_v3_example_in_the_spec_verifies_and_is_what_the_kernel_writes() {
    match decode_json(example("checkpoint-v3").as_bytes()) {
        Ok(Decoded::Current(cp)) => assert_eq!(cp, seed_checkpoint()),
        other => panic!("the v3 example must decode as current, got {other:?}"),
    }
}

/// The version 2 example of the spec, decoded.
fn v2_example() -> CheckpointV2 {
    match decode_json(example("checkpoint-v2").as_bytes()) {
        Ok(Decoded::Version2(v2)) => v2,
        other => panic!("the v2 example must decode as needing migration, got {other:?}"),
    }
}

#[test]
fn checkpoint_v2_example_in_the_spec_needs_migration_and_migrates_to_the_v3_example() {
    assert_eq!(v2_example().migrate(None), Ok(seed_checkpoint()));
}

#[test]
fn checkpoint_v1_example_in_the_spec_needs_migration_and_migrates_to_the_v2_example() {
    let v1 = match decode_json(example("checkpoint-v1").as_bytes()) {
        Ok(Decoded::Version1(v1)) => v1,
        other => panic!("the v1 example must decode as needing migration, got {other:?}"),
    };
    let expected = seed_checkpoint();
    let migrated = v1.migrate(expected.identity.definition, expected.resource_version);
    assert_eq!(migrated, Ok(v2_example()));
}

/// One rejection of every variant. The test fails until every [`RejectionKind`] has a sample
/// here and a row in the spec's table.
fn every_rejection() -> Vec<Rejection> {
    use Rejection::*;
    let (n, d, r, t) = (Name::lit("x"), Digest::default(), Revision(1), Time(1));
    let k = IdempotencyKey::lit("k");
    vec![
        Terminal {
            phase: PhaseKind::Completed,
        },
        IdentityMismatch {
            field: IdentityField::Run,
        },
        ClockRegressed { last: t, got: t },
        SchemaTooNew {
            supported: 3,
            got: 4,
        },
        UnknownSchema { got: 0 },
        MigrationRequired { got: 2, current: 3 },
        DigestMismatch {
            expected: d,
            found: d,
        },
        StaleRevision { current: r, got: r },
        FutureRevision { current: r, got: r },
        AlreadyApplied { from: r, to: r },
        AlreadyResumed { from: r, to: r },
        ResourceChanged {
            checkpoint: 1,
            current: 2,
        },
        NotSuspended {
            phase: PhaseKind::Running,
        },
        CheckpointMismatch {
            field: CheckpointField::Reason,
        },
        Expired {
            expires_at: t,
            now: t,
        },
        DecisionMismatch {
            reason: ReasonKind::ResourceWait,
            decision: DecisionKind::Approve,
        },
        ApprovalMismatch {
            field: ApprovalField::Args,
        },
        ApprovalExpired {
            expires_at: t,
            now: t,
        },
        SelfApproval { party: n },
        Unauthorised {
            expected: n,
            got: n,
        },
        WaitMismatch {
            expected: n,
            got: n,
        },
        PermissionRevoked,
        BudgetExhausted,
        NotRunning {
            phase: PhaseKind::Suspended,
        },
        AlreadySuspended {
            reason: ReasonKind::PendingApproval,
        },
        ExpiryNotInFuture {
            expires_at: t,
            now: t,
        },
        ExpiryUnreachable { expires_at: t },
        ClockExhausted { at: t },
        NoAttemptsAllowed,
        KeyConflict { key: k },
        KeyCommitted { key: k },
        CallIdReused { call_id: n },
        DispatchInFlight { call_id: n },
        NoDispatchInFlight {
            phase: PhaseKind::Running,
        },
        ResultMismatch {
            call_id: n,
            attempt: 0,
            got_call: n,
            got_attempt: 1,
        },
        NothingInFlight {
            phase: PhaseKind::Running,
        },
        NothingUnresolved,
        NotExpired {
            expires_at: t,
            now: t,
        },
        CancelPending,
        RevisionExhausted,
        EmptyBatch,
        DuplicateInBatch { call_id: n },
        NoDecision,
        DuplicateDecision { call_id: n },
        DecisionNotAllowed {
            decision: VerdictKind::Deny,
        },
        EditKeyBound { key: k },
        NoDecisionAllowed { call_id: n },
    ]
}

/// A row of the spec's rejection table: fault and the evidence fields named in backticks.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    fault: String,
    evidence: BTreeSet<String>,
}

/// The rejection table of lifecycle.md, section 8, keyed by variant name.
fn rejection_table(doc: &str) -> std::collections::BTreeMap<String, Row> {
    let section = between(doc, "## 8. Rejections", "## 9.").unwrap_or_else(|e| panic!("{e}"));
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let mut table = std::collections::BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "| name | evidence | fault | raised by |" splits into six cells, empty at the ends.
        assert_eq!(cells.len(), 6, "malformed rejection row: {line}");
        let name = ticked(cells[1]).concat();
        let row = Row {
            fault: cells[3].to_string(),
            evidence: ticked(cells[2]).into_iter().collect(),
        };
        assert!(
            table.insert(name.clone(), row).is_none(),
            "{name} is listed twice"
        );
    }
    table
}

#[test]
fn rejection_table_in_the_spec_names_every_rejection_with_its_fault_and_evidence() {
    let samples = every_rejection();
    let kinds: BTreeSet<RejectionKind> = samples.iter().map(Rejection::kind).collect();
    assert_eq!(samples.len(), kinds.len(), "one sample per rejection kind");
    assert_eq!(
        kinds,
        RejectionKind::ALL.into_iter().collect(),
        "every rejection kind has a sample"
    );
    for r in &samples {
        // RejectionKind::name is the wire name: serde's tag of the variant.
        let tag = serde_json::to_value(r).unwrap()["rejection"].clone();
        assert_eq!(tag, serde_json::Value::from(r.kind().name()), "{r:?}");
    }

    let table = rejection_table(&spec("lifecycle.md"));
    let mut expected = std::collections::BTreeMap::new();
    for r in &samples {
        // The variant name is the first word of its Debug form.
        let debug = format!("{r:?}");
        let name = debug
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or_default()
            .to_string();
        let fields = match serde_json::to_value(r) {
            Ok(serde_json::Value::Object(map)) => map
                .keys()
                .filter(|k| k.as_str() != "rejection")
                .cloned()
                .collect(),
            other => panic!("a rejection serialises as an object, got {other:?}"),
        };
        let row = Row {
            fault: wire(&r.fault()),
            evidence: fields,
        };
        expected.insert(name, row);
    }
    let names: BTreeSet<&String> = table.keys().chain(expected.keys()).collect();
    let differences: Vec<String> = names
        .into_iter()
        .filter(|name| table.get(*name) != expected.get(*name))
        .map(|name| {
            format!(
                "    {name}: spec says {:?}, kernel says {:?}\n",
                table.get(name),
                expected.get(name)
            )
        })
        .collect();
    assert!(
        differences.is_empty(),
        "lifecycle.md section 8 must list every rejection with its fault and evidence \
         fields:\n{}",
        differences.concat()
    );
}
