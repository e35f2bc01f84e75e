//! The one row decoder, on cells made by hand: what each backend hands it decodes to the row
//! that was written, and every way a stored value can be wrong is an error naming the run
//! and the column, never a panic.

use super::*;
use crate::program::Program;
use crate::store::{Request, Status};
use crate::testing::{awaiting_approval, fresh, in_flight};
use resumable_kernel::{Name, Rejection, Revision};

/// The cells a backend returns for `row` under `sql::LOAD`, as the store wrote them.
fn cells_of(row: &Row) -> Vec<Cell> {
    vec![
        Cell::Int(row.tail.seq as i64),
        Cell::Text(row.tail.digest.to_string()),
        Cell::Text(to_json(&row.run).unwrap()),
        row.checkpoint
            .map_or(Cell::Null, |c| Cell::Text(to_json(&c).unwrap())),
        row.lease.owner.clone().map_or(Cell::Null, Cell::Text),
        Cell::Int(row.lease.until_ms as i64),
        Cell::Text(row.program.clone()),
        Cell::Int(i64::from(row.pc)),
        Cell::Int(row.resource_version as i64),
    ]
}

/// The column `what` of `err`, if it is a corrupt value of run `key`.
fn corrupt_column(err: StoreError, key: &str) -> &'static str {
    match err {
        StoreError::Corrupt { what, key: k, .. } if k == key => what,
        other => panic!("not a corrupt value of {key}: {other:?}"),
    }
}

/// The row awaiting approval, and what the decoder makes of its cells with the run (column 2,
/// JSON text) edited by `edit`.
fn run_edited(
    edit: impl FnOnce(&str) -> String,
) -> (Row, Result<(Row, Vec<HistoryEntry>), StoreError>) {
    let row = awaiting_approval();
    let mut cells = cells_of(&row);
    let Cell::Text(run) = &cells[2] else {
        unreachable!("the run is text")
    };
    cells[2] = Cell::Text(edit(run));
    let decoded = run_row(&row.key, cells);
    (row, decoded)
}

/// `run` as JSON with its inline call log set to `calls`, as runs were stored before their
/// history moved to the store.
fn with_call_log(run: &str, calls: serde_json::Value) -> String {
    let mut value: serde_json::Value = serde_json::from_str(run).unwrap();
    value["calls"] = calls;
    value.to_string()
}

#[test]
fn run_row_decodes_to_the_row_that_was_written_in_every_phase() {
    let mut held = in_flight();
    held.lease = Lease {
        owner: Some("worker-1".to_string()),
        until_ms: 1_700_000_000_000,
    };
    held.resource_version = 9;
    for row in [fresh(Program::Seed), awaiting_approval(), held] {
        assert_eq!(run_row(&row.key, cells_of(&row)).unwrap(), (row, vec![]));
    }
}

#[test]
fn run_row_with_a_value_out_of_place_names_its_column() {
    let row = awaiting_approval();
    let key = row.key.0.clone();
    let cases: [(usize, Cell, &str); 9] = [
        (0, Cell::Int(-1), "seq"),
        (0, Cell::Null, "seq"),
        (1, Cell::Text("not hex".to_string()), "anchor"),
        (2, Cell::Text("{\"revision\":\"x\"}".to_string()), "run"),
        (2, Cell::Int(3), "run"),
        (3, Cell::Text("{}".to_string()), "checkpoint"),
        (5, Cell::Text("soon".to_string()), "lease_until"),
        (7, Cell::Int(i64::from(u32::MAX) + 1), "pc"),
        (8, Cell::Bytes(vec![1]), "resource_version"),
    ];
    for (column, cell, name) in cases {
        let mut cells = cells_of(&row);
        cells[column] = cell.clone();
        let err = run_row(&row.key, cells).unwrap_err();
        assert_eq!(
            corrupt_column(err, &key),
            name,
            "{cell:?} in column {column}"
        );
    }
}

#[test]
fn run_row_whose_run_breaks_a_kernel_invariant_is_refused() {
    // The suspension now expires before it began (SUS-1): the run's own deserialiser checks
    // every invariant, so such a run is refused here and never reaches the kernel.
    let expires_at = awaiting_approval().run.suspension().unwrap().expires_at.0;
    let (row, decoded) = run_edited(|run| {
        let edited = run.replacen(
            &format!("\"expires_at\":{expires_at}"),
            "\"expires_at\":5",
            1,
        );
        assert_ne!(
            edited, run,
            "the fixture's suspension expires at {expires_at}"
        );
        edited
    });
    assert_eq!(corrupt_column(decoded.unwrap_err(), &row.key.0), "run");
}

#[test]
fn run_row_with_a_column_missing_or_one_too_many_is_refused() {
    let row = fresh(Program::Seed);
    let mut short = cells_of(&row);
    short.pop();
    assert_eq!(
        corrupt_column(run_row(&row.key, short).unwrap_err(), &row.key.0),
        "resource_version"
    );
    let mut long = cells_of(&row);
    long.push(Cell::Null);
    assert_eq!(
        corrupt_column(run_row(&row.key, long).unwrap_err(), &row.key.0),
        "row"
    );
}

fn summary_cells(status: &str, wake_at: Cell, pending: i64) -> Vec<Cell> {
    vec![
        Cell::Text("tenant-a/session-1/run-1".to_string()),
        Cell::Text(status.to_string()),
        wake_at,
        Cell::Null,
        Cell::Int(0),
        Cell::Int(pending),
    ]
}

#[test]
fn summary_decodes_every_status_with_or_without_a_wake_up() {
    for status in Status::ALL {
        let s = summary(summary_cells(status.as_str(), Cell::Null, 2)).unwrap();
        assert_eq!((s.status, s.wake_at, s.pending), (status, None, 2));
        assert_eq!(s.key.0, "tenant-a/session-1/run-1");
    }
    let s = summary(summary_cells("approval", Cell::Int(1_000), 0)).unwrap();
    assert_eq!(s.wake_at, Some(1_000));
}

#[test]
fn summary_with_an_unknown_status_names_the_run_and_the_status() {
    let err = summary(summary_cells("sleeping", Cell::Null, 0)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("tenant-a/session-1/run-1") && text.contains("sleeping"),
        "{text}"
    );
    assert_eq!(corrupt_column(err, "tenant-a/session-1/run-1"), "status");
}

#[test]
fn summary_with_a_negative_wake_up_is_refused() {
    let err = summary(summary_cells("approval", Cell::Int(-5), 0)).unwrap_err();
    assert_eq!(corrupt_column(err, "tenant-a/session-1/run-1"), "wake_at");
}

fn request_cells(answer: Cell, seq: Cell) -> Vec<Cell> {
    let request = Request::Cancel {
        by: Name::lit("ops"),
    };
    vec![
        Cell::Int(4),
        Cell::Text("ops".to_string()),
        Cell::Int(17),
        Cell::Text(to_json(&request).unwrap()),
        answer,
        seq,
    ]
}

#[test]
fn request_decodes_unanswered_and_answered_with_its_record() {
    let key = fresh(Program::Seed).key;
    let waiting = request(&key, request_cells(Cell::Null, Cell::Null)).unwrap();
    assert_eq!(
        (waiting.id, waiting.party.as_str(), waiting.submitted_ms),
        (4, "ops", 17)
    );
    assert_eq!(waiting.answer, None);
    let refused = Answer::Rejected(Rejection::StaleRevision {
        current: Revision(3),
        got: Revision(2),
    });
    let answer = Cell::Text(to_json(&refused).unwrap());
    let answered = request(&key, request_cells(answer, Cell::Int(6))).unwrap();
    assert_eq!(
        answered.answer,
        Some(Answered {
            answer: refused,
            seq: 6
        })
    );
}

#[test]
fn request_with_an_answer_but_no_record_or_a_record_but_no_answer_is_refused() {
    let key = fresh(Program::Seed).key;
    let accepted = Cell::Text(to_json(&Answer::Accepted(Revision(2))).unwrap());
    for (answer, seq) in [(accepted, Cell::Null), (Cell::Null, Cell::Int(3))] {
        let err = request(&key, request_cells(answer, seq)).unwrap_err();
        assert_eq!(corrupt_column(err, &key.0), "answer");
    }
}

#[test]
fn log_line_is_bytes_and_text_in_its_place_is_refused() {
    let key = fresh(Program::Seed).key;
    assert_eq!(
        log_line(&key, vec![Cell::Bytes(b"{}".to_vec())]).unwrap(),
        b"{}"
    );
    let err = log_line(&key, vec![Cell::Text("{}".to_string())]).unwrap_err();
    assert_eq!(corrupt_column(err, &key.0), "log line");
}

#[test]
fn numbers_beyond_the_stores_integers_are_refused_on_write_and_wake_ups_clamped() {
    assert_eq!(int("revision", i64::MAX as u64).unwrap(), i64::MAX);
    match int("revision", i64::MAX as u64 + 1) {
        Err(StoreError::TooLarge { what, value }) => {
            assert_eq!((what, value), ("revision", i64::MAX as u64 + 1))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(time(1_000), 1_000);
    assert_eq!(time(u64::MAX), i64::MAX);
}

#[test]
fn a_binding_writes_its_call_id_and_key_and_a_spent_key_one_row() {
    let call_id = resumable_kernel::Fingerprint([1; 8]);
    let key = resumable_kernel::Fingerprint([2; 8]);
    let args = resumable_kernel::Digest::of(b"amount=42");
    let bound = history_rows(&HistoryEntry::Bound { call_id, key, args });
    let kinds: Vec<_> = bound
        .iter()
        .map(|r| (r.kind, r.fp.as_str(), r.committed))
        .collect();
    assert_eq!(
        kinds,
        [
            ("call", "0101010101010101", false),
            ("key", "0202020202020202", false)
        ]
    );
    assert_eq!(bound[1].args, Some(args.to_string()));
    let spent = history_rows(&HistoryEntry::Settled { key });
    assert_eq!(spent.len(), 1);
    assert_eq!(
        (spent[0].kind, spent[0].args.as_deref(), spent[0].committed),
        ("key", None, true)
    );
}

fn history_cells(kind: &str, args: Option<&Digest>, committed: i64) -> Vec<Cell> {
    vec![
        Cell::Text(kind.to_string()),
        args.map_or(Cell::Null, |a| Cell::Text(a.to_string())),
        Cell::Int(committed),
    ]
}

#[test]
fn prior_reads_a_used_call_id_and_a_keys_binding_from_the_history_rows() {
    let key = fresh(Program::Seed).key;
    assert_eq!(prior(&key, vec![]).unwrap(), Prior::NONE);
    let args = Digest::of(b"amount=42");
    let rows = vec![
        history_cells("call", None, 0),
        history_cells("key", Some(&args), 1),
    ];
    assert_eq!(
        prior(&key, rows).unwrap(),
        Prior {
            call_id_used: true,
            key: Some(KeyUse {
                args,
                committed: true
            })
        }
    );
    // A key spent that was never seen bound has no arguments of its own.
    let spent = prior(&key, vec![history_cells("key", None, 1)]).unwrap();
    assert_eq!(
        spent.key.map(|k| (k.args, k.committed)),
        Some((Digest::default(), true))
    );
}

#[test]
fn prior_from_history_rows_that_do_not_decode_names_the_column() {
    let key = fresh(Program::Seed).key;
    let cases = [
        (history_cells("call", None, 2), "history committed"),
        (history_cells("token", None, 0), "history kind"),
        (
            vec![
                Cell::Text("key".into()),
                Cell::Text("zz".into()),
                Cell::Int(0),
            ],
            "history args",
        ),
    ];
    for (cells, column) in cases {
        let err = prior(&key, vec![cells]).unwrap_err();
        assert_eq!(corrupt_column(err, &key.0), column);
    }
}

#[test]
fn run_row_of_a_run_stored_with_its_call_log_inline_hands_the_log_over_as_history() {
    let logged = LoggedCall {
        call_id: resumable_kernel::Fingerprint([1; 8]),
        key: resumable_kernel::Fingerprint([2; 8]),
        args: Digest::of(b"amount=42"),
        committed: true,
    };
    let (row, decoded) = run_edited(|run| with_call_log(run, serde_json::json!([logged])));
    let (decoded, legacy) = decoded.unwrap();
    assert_eq!(decoded, row, "the run itself is the run without its log");
    assert_eq!(legacy, logged.entries().collect::<Vec<_>>());
    assert_eq!(legacy.len(), 2, "bound, then spent");
}

#[test]
fn run_row_with_an_inline_call_log_that_does_not_decode_is_refused() {
    let (row, decoded) = run_edited(|run| with_call_log(run, serde_json::json!([{"call_id": 7}])));
    let err = decoded.unwrap_err();
    assert!(err.to_string().contains("inline call log"), "{err}");
    assert_eq!(corrupt_column(err, &row.key.0), "run");
}
