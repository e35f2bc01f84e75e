//! The driving contract on the in-memory store: `feed` commits an accepted input, a refused
//! one and a party's request with its answer, and loses a race cleanly; `carry_out` acts
//! only after the commit and feeds every answer back; the broken flavours each break exactly
//! the rule they are named for.

use super::*;
use crate::store::memory::MemoryStore;
use crate::store::{Answered, Inbox, Request, Status, Summary};
use crate::testing::submit_sealed;
use crate::tool::MemoryTools;
use resumable_kernel::{Call, Digest, Name, Prior, Rejection};
use std::io;

/// Tools that keep every request sent, answer dispatches and queries as [`MemoryTools`]
/// does (a deduping tool), or leave either unanswered.
#[derive(Default)]
struct Recorder {
    inner: MemoryTools,
    /// The calls and queries sent, in order (the resource-version reads are not kept).
    sent: Vec<ToolRequest>,
    observing: bool,
    dispatches_unanswered: bool,
    queries_unanswered: bool,
}

impl Tools for Recorder {
    fn send(&mut self, request: &ToolRequest) -> io::Result<()> {
        self.observing = matches!(request, ToolRequest::Version { .. });
        if !self.observing {
            self.sent.push(request.clone());
        }
        self.inner.send(request)
    }

    fn receive(&mut self) -> io::Result<ToolReply> {
        let reply = self.inner.receive()?; // the tool commits, whether or not it answers
        if self.observing {
            return Ok(reply);
        }
        let unanswered = match self.sent.last() {
            Some(ToolRequest::Dispatch { .. }) => self.dispatches_unanswered,
            _ => self.queries_unanswered,
        };
        if unanswered {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer"));
        }
        Ok(reply)
    }
}

impl Recorder {
    fn kinds(&self) -> Vec<&'static str> {
        self.sent
            .iter()
            .map(|r| match r {
                ToolRequest::Dispatch { .. } => "dispatch",
                ToolRequest::Query { .. } => "query",
                ToolRequest::Auth { .. } => "auth",
                ToolRequest::Version { .. } => "version",
                ToolRequest::Move { .. } => "move",
            })
            .collect()
    }
}

/// What another writer does on the store, just before a commit.
type Race = Box<dyn FnOnce(&mut MemoryStore)>;

/// A store whose next commit first lets another writer commit `race` on a clone of it.
struct Racing {
    inner: MemoryStore,
    race: Option<Race>,
    /// How many times the run was loaded.
    loads: u32,
}

impl Store for Racing {
    fn create(&mut self, new: &NewRun<'_>) -> Result<Cas, StoreError> {
        self.inner.create(new)
    }
    fn load(&mut self, key: &RunKey) -> Result<Option<Row>, StoreError> {
        self.loads += 1;
        self.inner.load(key)
    }
    fn commit(&mut self, commit: &Commit<'_>) -> Result<Cas, StoreError> {
        if let Some(race) = self.race.take() {
            race(&mut self.inner.clone());
        }
        self.inner.commit(commit)
    }
    fn scan(&mut self, all: bool) -> Result<Vec<Summary>, StoreError> {
        self.inner.scan(all)
    }
    fn submit_sealed(
        &mut self,
        key: &RunKey,
        party: &str,
        at_ms: u64,
        request: &Request,
        seal: Option<Digest>,
    ) -> Result<u64, StoreError> {
        self.inner.submit_sealed(key, party, at_ms, request, seal)
    }
    fn refuse_unauthenticated(&mut self, key: &RunKey, id: u64) -> Result<Cas, StoreError> {
        self.inner.refuse_unauthenticated(key, id)
    }
    fn inbox(&mut self, key: &RunKey, pending: bool) -> Result<Vec<Inbox>, StoreError> {
        self.inner.inbox(key, pending)
    }
    fn log(&mut self, key: &RunKey) -> Result<Vec<Vec<u8>>, StoreError> {
        self.inner.log(key)
    }
    fn prior(&mut self, key: &RunKey, call: &Call) -> Result<Prior, StoreError> {
        self.inner.prior(key, call)
    }
}

fn config(flavor: Flavor) -> Config {
    Config {
        owner: "worker-1".to_string(),
        lease_ms: 60_000,
        timing: Timing::default(),
        flavor,
        crash: CrashPlan::none(),
        key: None,
        parties: crate::auth::Parties::Authenticated(crate::testing::party_keys()),
    }
}

fn driver<S: Store>(store: S, tools: Recorder, flavor: Flavor) -> (Driver<S, Recorder>, RunKey) {
    driver_of(store, tools, flavor, Program::Order)
}

/// A new run of `program` named `run-1`, created at t0, unsealed.
fn new_run(store: &mut dyn Store, program: Program) -> RunKey {
    create_run(store, program, "run-1", 0, &Timing::default(), None)
        .unwrap()
        .unwrap()
}

fn driver_of<S: Store>(
    mut store: S,
    tools: Recorder,
    flavor: Flavor,
    program: Program,
) -> (Driver<S, Recorder>, RunKey) {
    let key = new_run(&mut store, program);
    (Driver::new(store, tools, config(flavor)), key)
}

/// A driver of `flavor` on `inner`, whose next commit first lets `race` commit.
fn racing<T: Tools>(
    inner: MemoryStore,
    race: Option<Race>,
    tools: T,
    flavor: Flavor,
) -> Driver<Racing, T> {
    let racing = Racing {
        inner,
        race,
        loads: 0,
    };
    Driver::new(racing, tools, config(flavor))
}

/// The tool's answer `result` to a call `call_id` that is not in flight: refused (WAL-2).
fn stray_answer(call_id: &str, result: &[u8]) -> Event {
    Event::ToolResult {
        call_id: Name::new(call_id).unwrap(),
        attempt: 0,
        result: Digest::of(result),
    }
}

/// A correct driver on a fresh order run with `tools`, after it carried out the program's
/// first step (its dispatch).
fn carried_out(tools: Recorder) -> (Driver<MemoryStore, Recorder>, RunKey) {
    let (mut d, key) = driver(MemoryStore::new(), tools, Flavor::Correct);
    let moved = program_step(&mut d, &key);
    d.carry_out(Box::new(moved)).unwrap();
    (d, key)
}

/// The time one unit after the run's last input: what these tests feed their events at.
fn next_ms(row: &Row) -> u64 {
    row.run.updated_at().0 + 1
}

fn program_event(row: &Row) -> Event {
    let program = Program::parse(&row.program).unwrap();
    let at = row.run.updated_at().0 + 1;
    program.step(row.pc, at, 0, &Timing::default()).unwrap()
}

fn load<S: Store, T: Tools>(d: &mut Driver<S, T>, key: &RunKey) -> Row {
    d.store.load(key).unwrap().unwrap()
}

/// The accepted input's transition and row, or a failed test.
fn accepted(fed: Fed) -> Moved {
    match fed {
        Fed::Accepted(moved) => *moved,
        Fed::Rejected => panic!("refused"),
        Fed::Conflict => panic!("lost the compare-and-set"),
    }
}

/// The program's own next step on `key`, fed and accepted.
fn program_step<S: Store, T: Tools>(d: &mut Driver<S, T>, key: &RunKey) -> Moved {
    let row = load(d, key);
    let fed = d.feed(&row, next_ms(&row), program_event(&row), row.pc + 1, None);
    accepted(fed.unwrap())
}

/// The run's log, validated against its anchor: how many records it holds, accepted and
/// refused.
fn records<S: Store, T: Tools>(d: &mut Driver<S, T>, key: &RunKey) -> (u64, u64) {
    let row = load(d, key);
    let mut bytes = Vec::new();
    for line in d.store.log(key).unwrap() {
        bytes.extend_from_slice(&line);
        bytes.push(b'\n');
    }
    let summary = lifecycle::validate_log(&bytes, row.tail, None).unwrap();
    (summary.accepted, summary.rejected)
}

fn cancel(by: &str) -> Request {
    Request::Cancel { by: Name::lit(by) }
}

#[test]
fn feed_of_an_accepted_input_commits_the_row_it_returns() {
    let (mut d, key) = driver_of(
        MemoryStore::new(),
        Recorder::default(),
        Flavor::Correct,
        Program::Seed,
    );
    let moved = program_step(&mut d, &key);
    assert_eq!(
        load(&mut d, &key),
        *moved.row,
        "what feed returns is what is stored"
    );
    assert_eq!(moved.row.run, moved.transition().next);
    assert_eq!((moved.row.pc, moved.row.tail.seq), (1, 1));
    assert_eq!(
        moved.row.checkpoint,
        moved.transition().effects.checkpoint().copied()
    );
    assert_eq!(
        moved.row.lease,
        Lease::default(),
        "a run waiting on its approver is held by nobody"
    );
    assert_eq!(d.commits(), 1);
    assert_eq!(records(&mut d, &key), (1, 0));
    assert!(d.tools.sent.is_empty(), "feed alone never reaches a tool");
}

#[test]
fn feed_of_an_input_that_leaves_a_call_in_flight_leases_the_run_to_this_driver() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let before = crate::rng::now_ms();
    let moved = program_step(&mut d, &key);
    assert_eq!(status_of(&moved.row.run), Status::InFlight);
    assert_eq!(moved.row.lease.owner.as_deref(), Some("worker-1"));
    assert!(moved.row.lease.until_ms >= before + 60_000);
    assert!(
        d.tools.sent.is_empty(),
        "the dispatch is carry_out's, after the commit"
    );
}

#[test]
fn feed_of_a_refused_input_records_the_refusal_and_changes_nothing_else() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let row = load(&mut d, &key);
    // A tool's answer with no call in flight: the kernel refuses it (WAL-2).
    let answer = stray_answer("charge-1", b"charged");
    assert!(matches!(
        d.feed(&row, next_ms(&row), answer, 7, None).unwrap(),
        Fed::Rejected
    ));
    let after = load(&mut d, &key);
    assert_eq!(after.run, row.run, "the run is untouched (REJ-2)");
    assert_eq!(
        (after.pc, after.checkpoint, &after.lease),
        (0, None, &row.lease)
    );
    assert_eq!(after.tail.seq, 1, "but the refusal is recorded (REJ-1)");
    assert_eq!(records(&mut d, &key), (0, 1));
}

#[test]
fn feed_after_another_writer_moved_the_run_is_a_conflict_and_writes_nothing() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let stale = load(&mut d, &key);
    let mut other = Driver::new(
        d.store.clone(),
        Recorder::default(),
        config(Flavor::Correct),
    );
    let fresh = load(&mut other, &key);
    let cancel = Event::Cancel {
        by: Name::lit("ops"),
    };
    accepted(
        other
            .feed(&fresh, next_ms(&fresh), cancel, 0, None)
            .unwrap(),
    );
    let event = program_event(&stale);
    assert!(matches!(
        d.feed(&stale, next_ms(&stale), event, 1, None).unwrap(),
        Fed::Conflict
    ));
    assert_eq!(d.commits(), 0);
    assert_eq!(
        records(&mut d, &key),
        (1, 0),
        "the other writer's record alone"
    );
    assert_eq!(status_of(&load(&mut d, &key).run), Status::Failed);
}

#[test]
fn feed_of_a_party_request_stores_the_kernels_answer_with_the_record_accepted_or_refused() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let first = submit_sealed(&mut d.store, &key, "ops", 1, &cancel("ops"));
    let second = submit_sealed(&mut d.store, &key, "ops", 2, &cancel("ops"));
    let row = load(&mut d, &key);
    let event = Event::Cancel {
        by: Name::lit("ops"),
    };
    let moved = accepted(d.feed(&row, next_ms(&row), event, 0, Some(first)).unwrap());
    let row = moved.row;
    assert!(matches!(
        d.feed(&row, next_ms(&row), event, 0, Some(second)).unwrap(),
        Fed::Rejected
    ));
    let answers: Vec<Option<Answered>> = d
        .store
        .inbox(&key, false)
        .unwrap()
        .into_iter()
        .map(|r| r.answer)
        .collect();
    let Some(Answered {
        answer: Answer::Rejected(refusal),
        seq: 2,
    }) = answers[1]
    else {
        panic!("the second cancel is refused by record 2: {answers:?}");
    };
    assert!(matches!(refusal, Rejection::Terminal { .. }), "{refusal:?}");
    assert_eq!(
        answers[0],
        Some(Answered {
            answer: Answer::Accepted(row.run.revision()),
            seq: 1
        })
    );
}

#[test]
fn feed_of_a_request_answered_already_is_a_conflict() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let id = submit_sealed(&mut d.store, &key, "ops", 1, &cancel("ops"));
    let row = load(&mut d, &key);
    let event = Event::Cancel {
        by: Name::lit("ops"),
    };
    let moved = accepted(d.feed(&row, next_ms(&row), event, 0, Some(id)).unwrap());
    // A second worker that read the same request feeds it again on the run as it now is.
    let again = d.feed(&moved.row, next_ms(&moved.row), event, 0, Some(id));
    assert!(matches!(again.unwrap(), Fed::Conflict));
    assert_eq!(records(&mut d, &key), (1, 0));
}

#[test]
fn carry_out_dispatches_after_the_commit_and_records_the_result() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let moved = program_step(&mut d, &key);
    let commanded = *moved.transition().effects.dispatch().unwrap();
    d.carry_out(Box::new(moved)).unwrap();
    // Exactly the commanded call, under the tool key bound to the run (KEY-3).
    let expected = ToolRequest::Dispatch {
        tool: "charge:card".to_string(),
        key: commanded.tool_key.to_string(),
        attempt: 0,
        args: Digest::of(b"amount=42"),
        resource: Some(key.0.clone()),
    };
    assert_eq!(d.tools.sent, [expected]);
    let after = load(&mut d, &key);
    assert_eq!(status_of(&after.run), Status::Ready, "the answer landed");
    assert_eq!(after.lease.owner.as_deref(), Some("worker-1"));
    assert_eq!(records(&mut d, &key), (2, 0));
}

#[test]
fn carry_out_without_an_answer_recovers_and_asks_the_query_never_dispatching_again() {
    let tools = Recorder {
        dispatches_unanswered: true,
        queries_unanswered: true,
        ..Recorder::default()
    };
    let (mut d, key) = carried_out(tools);
    assert_eq!(d.tools.kinds(), ["dispatch", "query"]);
    assert_eq!(
        status_of(&load(&mut d, &key).run),
        Status::Unknown,
        "the query could not answer: the outcome stays unknown, for a later turn"
    );
    assert_eq!(
        records(&mut d, &key),
        (2, 0),
        "the dispatch and the recover"
    );
}

#[test]
fn carry_out_reuses_a_result_the_query_reports_committed() {
    let tools = Recorder {
        dispatches_unanswered: true,
        ..Recorder::default()
    };
    let (mut d, key) = carried_out(tools);
    // The tool committed though its answer was lost; the query says so (REC-4).
    assert_eq!(d.tools.kinds(), ["dispatch", "query"]);
    let after = load(&mut d, &key);
    assert_eq!(status_of(&after.run), Status::Ready);
    // The memory tool commits the arguments' digest as the result: the one committed, reused.
    let committed = after.run.last_call().map(|c| c.result);
    assert_eq!(committed, Some(Digest::of(b"amount=42")));
    assert_eq!(
        records(&mut d, &key),
        (3, 0),
        "dispatch, recover, reconcile"
    );
}

/// Another worker's refused input on `key`: the revision stays, the log moves.
fn refusal_by_another_worker(key: RunKey) -> Race {
    Box::new(move |other: &mut MemoryStore| {
        let mut w = Driver::new(other.clone(), Recorder::default(), config(Flavor::Correct));
        let row = load(&mut w, &key);
        let stray = stray_answer("stray", b"stray");
        assert!(matches!(
            w.feed(&row, next_ms(&row), stray, row.pc, None).unwrap(),
            Fed::Rejected
        ));
    })
}

/// A correct driver on a copy of `store`, whose next commit first lets another worker's
/// refusal on `key` commit.
fn refused_meanwhile(store: &MemoryStore, key: &RunKey) -> Driver<Racing, Recorder> {
    let race = Some(refusal_by_another_worker(key.clone()));
    racing(store.clone(), race, Recorder::default(), Flavor::Correct)
}

#[test]
fn an_answer_that_loses_a_race_is_stepped_again_on_the_run_as_it_now_is() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let moved = program_step(&mut d, &key);
    // Before the tool's answer is committed, another worker records a refusal: the answer's
    // first commit loses, and it is stepped again on the run as it now is (rule 4).
    let mut d = refused_meanwhile(&d.store, &key);
    d.carry_out(Box::new(moved)).unwrap();
    assert_eq!(
        d.tools.kinds(),
        ["dispatch"],
        "sent once, whatever the race"
    );
    let after = load(&mut d, &key);
    assert_eq!(status_of(&after.run), Status::Ready, "the answer landed");
    assert_eq!(d.commits(), 1, "on its second try");
    assert_eq!(
        records(&mut d, &key),
        (2, 1),
        "dispatch, the other's refusal, result"
    );
}

#[test]
fn turn_goes_on_from_the_row_its_own_commit_wrote_without_loading_it_again() {
    let mut store = MemoryStore::new();
    let key = new_run(&mut store, Program::Bench);
    let mut d = racing(store, None, MemoryTools::default(), Flavor::Correct);
    assert!(d.turn(&key, false).unwrap());
    assert!(d.commits() > 1, "a bench run's turn commits several steps");
    assert_eq!(
        d.store.loads, 1,
        "the run is loaded once, at the turn's start"
    );
    let landed = d.landed.clone().expect("the last commit took");
    assert_eq!(
        load(&mut d, &key),
        *landed,
        "and the row gone on from is the stored one"
    );
}

#[test]
fn a_lost_compare_and_set_leaves_no_row_to_go_on_from() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let row = load(&mut d, &key);
    let mut d = refused_meanwhile(&d.store, &key);
    d.landed = Some(std::sync::Arc::new(row.clone()));
    let event = program_event(&row);
    assert!(matches!(
        d.feed(&row, next_ms(&row), event, row.pc + 1, None)
            .unwrap(),
        Fed::Conflict
    ));
    assert!(d.landed.is_none(), "the next action loads the run again");
}

#[test]
fn turn_on_sqlite_goes_on_from_a_row_equal_to_the_one_it_would_load() {
    let path = std::env::temp_dir().join(format!("resumable-landed-{}.db", std::process::id()));
    let path = path.display().to_string();
    let mut store = crate::store::sqlite::SqliteStore::open(&path).unwrap();
    let key = new_run(&mut store, Program::Bench);
    let mut d = Driver::new(store, MemoryTools::default(), config(Flavor::Correct));
    assert!(d.turn(&key, false).unwrap());
    let landed = d.landed.clone().expect("the last commit took");
    let stored = load(&mut d, &key);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
    assert_eq!(
        stored, *landed,
        "the run and everything around it read back as written"
    );
}

#[test]
fn retry_unknown_blindly_dispatches_the_call_in_flight_again_where_the_correct_driver_queries() {
    for (flavor, sent, recovered) in [
        (Flavor::Correct, vec!["query", "dispatch"], true),
        (Flavor::RetryUnknownBlindly, vec!["dispatch"], false),
    ] {
        // A worker committed the dispatch and died before sending it; its lease has lapsed.
        let mut store = MemoryStore::new();
        let key = new_run(&mut store, Program::Order);
        let mut first = Driver::new(
            store.clone(),
            Recorder::default(),
            Config {
                lease_ms: 0,
                ..config(Flavor::Correct)
            },
        );
        program_step(&mut first, &key);
        let mut next = Driver::new(
            store,
            Recorder::default(),
            Config {
                owner: "worker-2".to_string(),
                ..config(flavor)
            },
        );
        assert!(next.turn(&key, false).unwrap());
        // The correct driver recovers and asks; the query says "not committed", and the
        // kernel retries the deduping tool under the same key. The broken one just resends.
        assert_eq!(next.tools.kinds(), sent, "{flavor:?}");
        let log = next.store.log(&key).unwrap();
        let recover = log
            .iter()
            .any(|line| String::from_utf8_lossy(line).contains("\"kind\":\"recover\""));
        assert_eq!(recover, recovered, "{flavor:?}");
        // Either way the charge settled, and the turn went on to the program's next step.
        assert_eq!(status_of(&load(&mut next, &key).run), Status::Callback);
    }
}

#[test]
fn dispatch_before_commit_sends_the_call_even_when_its_commit_is_lost() {
    for flavor in [Flavor::Correct, Flavor::DispatchBeforeCommit] {
        let mut store = MemoryStore::new();
        let key = new_run(&mut store, Program::Order);
        // Another worker records a refusal between this worker's load and its commit.
        let race = Some(refusal_by_another_worker(key.clone()));
        let mut d = racing(store, race, Recorder::default(), flavor);
        assert!(!d.turn(&key, false).unwrap(), "the commit was lost");
        let sent = d.tools.kinds();
        match flavor {
            Flavor::DispatchBeforeCommit => assert_eq!(sent, ["dispatch"], "WAL-1 broken"),
            _ => assert!(sent.is_empty(), "nothing leaves before its commit (WAL-1)"),
        }
        let row = load(&mut d, &key);
        assert_eq!(
            status_of(&row.run),
            Status::Ready,
            "the store never heard of it"
        );
    }
}

#[test]
fn turn_serves_a_waiting_request_before_the_runs_own_work() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    let id = submit_sealed(&mut d.store, &key, "ops", 1, &cancel("ops"));
    assert!(d.turn(&key, true).unwrap());
    assert!(
        d.tools.sent.is_empty(),
        "the cancel came first: the charge never left"
    );
    let answered = d.store.inbox(&key, false).unwrap();
    assert_eq!(
        (answered[0].id, answered[0].answer.map(|a| a.seq)),
        (id, Some(1))
    );
    assert_eq!(status_of(&load(&mut d, &key).run), Status::Failed);
}

#[test]
fn turn_answers_an_unsealed_request_unauthenticated_unless_told_to_take_every_party() {
    use crate::auth::Parties;
    for (parties, fed) in [
        (Parties::Authenticated(crate::testing::party_keys()), false),
        (Parties::Unauthenticated, true),
    ] {
        let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
        d.config.parties = parties;
        // "ops" typed by anyone: no seal.
        let id = d.store.submit(&key, "ops", 1, &cancel("ops")).unwrap();
        assert!(d.turn(&key, true).unwrap());
        let answered = d.store.inbox(&key, false).unwrap();
        assert_eq!(answered[0].id, id);
        let status = status_of(&load(&mut d, &key).run);
        let log = d.store.log(&key).unwrap();
        let recorded = log
            .iter()
            .any(|l| String::from_utf8_lossy(l).contains("cancel"));
        if fed {
            assert_eq!(answered[0].answer.map(|a| a.seq), Some(1));
            assert_eq!(status, Status::Failed, "cancelled");
            assert!(recorded, "the cancel is in the log");
        } else {
            assert_eq!(
                answered[0].answer.map(|a| a.answer),
                Some(Answer::Unauthenticated)
            );
            assert_ne!(status, Status::Failed, "not cancelled");
            assert!(!recorded, "no record of the cancel");
        }
    }
}

#[test]
fn work_until_quiescent_drives_the_order_to_its_callback_and_no_further() {
    let (mut d, key) = driver(MemoryStore::new(), Recorder::default(), Flavor::Correct);
    d.work(0, std::time::Duration::from_millis(1), true)
        .unwrap();
    assert_eq!(d.tools.kinds(), ["dispatch"]);
    let row = load(&mut d, &key);
    assert_eq!(status_of(&row.run), Status::Callback);
    assert_eq!(row.lease, Lease::default(), "held by nobody while it waits");
    assert!(Driver::<MemoryStore, Recorder>::quiescent(
        &d.store.scan(false).unwrap(),
        crate::rng::now_ms()
    ));
}

#[test]
fn a_run_sealed_under_another_key_or_none_is_refused_before_anything_is_written() {
    let (key_a, key_b) = (
        lifecycle::Key::from_bytes([1; 32]),
        lifecycle::Key::from_bytes([2; 32]),
    );
    let mut store = MemoryStore::new();
    let keyed = create_run(
        &mut store,
        Program::Order,
        "keyed",
        0,
        &Timing::default(),
        Some(&key_a),
    )
    .unwrap()
    .unwrap();
    let plain = new_run(&mut store, Program::Order);
    for (held, run, sealed) in [
        (None, &keyed, Some(key_a.id())),
        (Some(&key_b), &keyed, Some(key_a.id())),
        (Some(&key_a), &plain, None),
    ] {
        let mut d = Driver::new(
            store.clone(),
            Recorder::default(),
            Config {
                key: held.cloned(),
                ..config(Flavor::Correct)
            },
        );
        match d.turn(run, false) {
            Err(DriveError::Key {
                run: r,
                sealed: s,
                held: h,
            }) => {
                assert_eq!((&r, s, h), (run, sealed, held.map(lifecycle::Key::id)));
            }
            other => panic!("driven with the wrong key: {:?}", other.map(|_| ())),
        }
        let message = d.turn(run, false).err().unwrap().to_string();
        if let Some(sealed) = sealed {
            assert!(message.contains(&sealed.to_string()), "{message}");
        }
        assert_eq!(d.store.log(run).unwrap().len(), 1, "the header alone");
        assert!(d.tools.sent.is_empty());
    }
    // With its own key, each is driven.
    let mut d = Driver::new(
        store,
        Recorder::default(),
        Config {
            key: Some(key_a),
            ..config(Flavor::Correct)
        },
    );
    assert!(d.turn(&keyed, false).unwrap());
    assert!(d.store.log(&keyed).unwrap().len() > 1);
}

/// A seed run driven to its approval wait, and the approver's request for that checkpoint.
fn seed_awaiting_approval() -> (Driver<MemoryStore, Recorder>, RunKey, Request) {
    let (mut d, key) = driver_of(
        MemoryStore::new(),
        Recorder::default(),
        Flavor::Correct,
        Program::Seed,
    );
    assert!(d.turn(&key, false).unwrap());
    let row = load(&mut d, &key);
    assert_eq!(status_of(&row.run), Status::Approval);
    let Event::Resume(resume) = crate::testing::approval_of(&row) else {
        unreachable!("an approval is a resume")
    };
    let request = Request::Resume {
        checkpoint: resume.checkpoint,
        decision: resume.decision,
    };
    (d, key, request)
}

fn answer_of(d: &mut Driver<MemoryStore, Recorder>, key: &RunKey, id: u64) -> Answer {
    let inbox = d.store.inbox(key, false).unwrap();
    let request = inbox.iter().find(|r| r.id == id).expect("the request");
    request.answer.expect("answered").answer
}

#[test]
fn an_approval_on_a_resource_moved_from_outside_is_refused_with_resource_changed() {
    let approver = crate::program::APPROVER;
    // Nothing moved: the approval is accepted and the call dispatched.
    let (mut d, key, request) = seed_awaiting_approval();
    let id = submit_sealed(&mut d.store, &key, approver, 20, &request);
    assert!(d.turn(&key, true).unwrap());
    assert!(matches!(answer_of(&mut d, &key, id), Answer::Accepted(_)));
    assert!(d.tools.kinds().contains(&"dispatch"));
    // Another system moves the run's resource while the approver looks at the checkpoint:
    // the version the worker observes is no longer the checkpoint's, and the approval is
    // refused, never carried out (RES-3).
    let (mut d, key, request) = seed_awaiting_approval();
    let moved = ToolRequest::Move {
        resource: key.0.clone(),
    };
    assert_eq!(
        d.tools.inner.call(&moved).unwrap(),
        ToolReply::Version { version: 1 }
    );
    let id = submit_sealed(&mut d.store, &key, approver, 20, &request);
    assert!(d.turn(&key, true).unwrap());
    match answer_of(&mut d, &key, id) {
        Answer::Rejected(Rejection::ResourceChanged {
            checkpoint,
            current,
        }) => assert_eq!((checkpoint, current), (0, 1)),
        other => panic!("the approval must be refused for the moved resource: {other:?}"),
    }
    assert!(!d.tools.kinds().contains(&"dispatch"), "nothing was sent");
    assert_eq!(status_of(&load(&mut d, &key).run), Status::Approval);
}

/// A rejection of a batch's call: it never runs, and the run goes on.
fn reject() -> crate::lifecycle::Word {
    crate::lifecycle::Word::Reject {
        message: "not in this turn".to_string(),
    }
}

/// A batch run driven to its batch's suspension by a worker whose lease lapses at once, and
/// the approver's request deciding its three calls with `words`, in order, bound by the
/// driver core to the calls as the checkpoint shows them.
fn batch_awaiting(
    words: [crate::lifecycle::Word; 3],
) -> (Driver<MemoryStore, Recorder>, RunKey, Request) {
    let (mut d, key) = driver_of(
        MemoryStore::new(),
        Recorder::default(),
        Flavor::Correct,
        Program::Batch,
    );
    d.config.lease_ms = 0;
    assert!(d.turn(&key, false).unwrap());
    let row = load(&mut d, &key);
    assert_eq!(status_of(&row.run), Status::Approval);
    let words: Vec<(String, crate::lifecycle::Word)> = crate::program::BATCH
        .iter()
        .zip(words)
        .map(|((call_id, ..), word)| (call_id.to_string(), word))
        .collect();
    let approver = crate::program::APPROVER;
    let request = crate::parties::decision(&row, None, approver, &words, 600_000).unwrap();
    (d, key, request)
}

/// The tools and idempotency keys of the dispatches sent so far, in order.
fn dispatched(tools: &Recorder) -> Vec<(String, String)> {
    tools
        .sent
        .iter()
        .filter_map(|r| match r {
            ToolRequest::Dispatch { tool, key, .. } => Some((tool.clone(), key.clone())),
            _ => None,
        })
        .collect()
}

/// The key the tool sees for the batch program's key `key` on run `row`.
fn batch_tool_key(row: &Row, key: &str) -> String {
    let key = resumable_kernel::IdempotencyKey::new(key).unwrap();
    lifecycle::tool_key(row.run.identity(), &key)
}

#[test]
fn a_batch_runs_exactly_its_approved_calls_once_and_never_sends_the_rejected_one() {
    use crate::lifecycle::Word;
    use resumable_kernel::SlotState;
    let (mut d, key, request) = batch_awaiting([Word::Approve, Word::Approve, reject()]);
    let Request::Resume {
        decision: resumable_kernel::Decision::Batch { decisions },
        ..
    } = &request
    else {
        panic!("a batch's decisions are one batch decision: {request:?}")
    };
    assert_eq!(decisions.len(), 3, "one decision per call");
    let id = submit_sealed(&mut d.store, &key, crate::program::APPROVER, 20, &request);
    assert!(d.turn(&key, true).unwrap());
    assert!(matches!(answer_of(&mut d, &key, id), Answer::Accepted(_)));
    let row = load(&mut d, &key);
    // Both approved calls, each once, under its own tool key; the rejected notice never.
    assert_eq!(
        dispatched(&d.tools),
        [
            (
                "publish:demo".to_string(),
                batch_tool_key(&row, "batch-publish")
            ),
            ("ship:order".to_string(), batch_tool_key(&row, "batch-ship")),
        ]
    );
    assert_eq!(
        d.tools.kinds(),
        ["dispatch", "dispatch"],
        "no query: nothing unknown"
    );
    let states: Vec<SlotState> = row
        .run
        .batch()
        .unwrap()
        .slots
        .iter()
        .map(|s| s.state)
        .collect();
    assert!(
        matches!(
            states.as_slice(),
            [
                SlotState::Committed { .. },
                SlotState::Committed { .. },
                SlotState::Rejected { .. }
            ]
        ),
        "{states:?}"
    );
    assert_eq!(
        status_of(&row.run),
        Status::Completed,
        "the program went on"
    );
    // The batch, the decision, two answers, the completion: every one a record.
    assert_eq!(records(&mut d, &key), (5, 0));
}

/// The run of [`batch_awaiting`] deciding `words`, committed by a first worker that then
/// carries out only its first dispatch (the answer recorded) and, with `second_sent`, sends
/// the second (which the tool commits) and dies before its answer comes back; otherwise it
/// dies between the two dispatches. Returns a second worker on the same store and tools,
/// after the first worker's lease has lapsed.
fn batch_killed_between_dispatches(second_sent: bool) -> (Driver<MemoryStore, Recorder>, RunKey) {
    use crate::lifecycle::Word;
    let (mut d, key, request) = batch_awaiting([Word::Approve, Word::Approve, reject()]);
    let id = submit_sealed(&mut d.store, &key, crate::program::APPROVER, 20, &request);
    let row = load(&mut d, &key);
    let Request::Resume {
        checkpoint,
        decision,
    } = request
    else {
        unreachable!("a decision is a resume")
    };
    let event = Event::Resume(resumable_kernel::Resume {
        checkpoint,
        decision,
        facts: facts(0),
    });
    let moved = accepted(
        d.feed(&row, next_ms(&row), event, row.pc, Some(id))
            .unwrap(),
    );
    let commanded: Vec<Dispatch> = moved.transition().effects.dispatches().copied().collect();
    assert_eq!(
        commanded.len(),
        2,
        "the approved calls, dispatched together"
    );
    let reply = d.dispatch(&moved.row.run, &commanded[0]);
    let first = d.answer_dispatch(&moved.row, &commanded[0], reply).unwrap();
    let first = first.expect("the first answer is recorded");
    assert!(super::plan::awaits_answer(&first.row.run, &commanded[1]));
    if second_sent {
        let _lost = d.dispatch(&first.row.run, &commanded[1]);
    }
    // Killed here: nothing more from this worker.
    let tools = std::mem::take(&mut d.tools);
    let next = Driver::new(
        d.store.clone(),
        tools,
        Config {
            owner: "worker-2".to_string(),
            ..config(Flavor::Correct)
        },
    );
    (next, key)
}

#[test]
fn a_kill_between_a_batchs_dispatches_is_recovered_by_query_never_by_sending_again() {
    for second_sent in [false, true] {
        let (mut d, key) = batch_killed_between_dispatches(second_sent);
        let before = d.tools.sent.len();
        assert!(d.turn(&key, false).unwrap());
        // The recovering worker feeds `recover` and asks the status query about the call
        // still in flight; it dispatches nothing.
        let asked: Vec<&ToolRequest> = d.tools.sent[before..].iter().collect();
        assert!(
            matches!(asked.as_slice(), [ToolRequest::Query { tool, .. }] if tool == "ship:order"),
            "{asked:?}"
        );
        let row = load(&mut d, &key);
        let ship = batch_tool_key(&row, "batch-ship");
        let sends = |tool_key: &str| {
            let all = dispatched(&d.tools);
            all.iter().filter(|(_, k)| k == tool_key).count()
        };
        assert_eq!(sends(&batch_tool_key(&row, "batch-publish")), 1);
        assert_eq!(sends(&batch_tool_key(&row, "batch-notify")), 0, "rejected");
        if second_sent {
            // The query found the commit: its result is recorded, and the run completes.
            assert_eq!(sends(&ship), 1);
            assert_eq!(status_of(&row.run), Status::Completed);
        } else {
            // "Not committed": the deduping tool would allow a retry under the same key, but
            // the first call's commit moved the run's resource since the batch's checkpoint,
            // so the retry's re-check fails (RES-3) and a person decides; never sent blindly.
            assert_eq!(sends(&ship), 0);
            assert_eq!(status_of(&row.run), Status::Person);
        }
    }
}
