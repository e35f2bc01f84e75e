//! The runtime's commands as an operator (and a careless or hostile local user) meets them:
//! the tool ledger kept whole and held by one service, a worker refusing a run sealed under
//! another key, every file input bounded, key files private, passwords never shown, zero and
//! absurd durations refused, names the store cannot address refused, a full disk reported,
//! reading commands that never create a store, and a status that shows who must act.

use resumable_kernel::Digest;
use resumable_runtime::tool::service::Entry;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const EXE: &str = env!("CARGO_BIN_EXE_resumable");

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resumable-cli-rt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the binary with `args`: its exit status, stdout and stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(EXE)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    report(&out)
}

fn report(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A tool service on `ledger`, killed when dropped, its address and its key file.
struct Service(Child, String, PathBuf);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn service(ledger: &Path) -> Service {
    let key = ledger.with_file_name("tools.key");
    let mut child = Command::new(EXE)
        .args(["tool-service", "--listen", "127.0.0.1:0", "--ledger"])
        .arg(ledger)
        .arg("--key")
        .arg(&key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("not started: {line:?}"))
        .to_string();
    Service(child, address, key)
}

fn commit_line(key: &str) -> String {
    serde_json::to_string(&Entry::Commit {
        tool: "charge:card".into(),
        key: key.into(),
        attempt: 0,
        result: Digest::of(key.as_bytes()),
        resource: None,
    })
    .unwrap()
}

#[test]
fn the_tool_service_refuses_a_ledger_with_a_damaged_line_naming_it_and_keeps_it_whole() {
    let d = dir("damaged");
    let ledger = d.join("tools.ledger");
    let text = format!(
        "{}\n{{\"entry\":\"commit\",\"tool\n{}\n",
        commit_line("k1"),
        commit_line("k3")
    );
    std::fs::write(&ledger, &text).unwrap();
    let (code, _, err) = run(&[
        "tool-service",
        "--no-auth",
        "--listen",
        "127.0.0.1:0",
        "--ledger",
        path(&ledger),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("line 2 is not a ledger entry"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&ledger).unwrap(),
        text,
        "nothing cut"
    );
}

#[test]
fn a_second_tool_service_on_one_ledger_is_refused() {
    let d = dir("two");
    let ledger = d.join("tools.ledger");
    let _first = service(&ledger);
    let (code, _, err) = run(&[
        "tool-service",
        "--no-auth",
        "--listen",
        "127.0.0.1:0",
        "--ledger",
        path(&ledger),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("held by another tool service"), "{err}");
}

#[test]
fn a_worker_without_the_runs_audit_key_or_with_another_refuses_it_with_exit_2() {
    let d = dir("key");
    let (store, key, other) = (d.join("runs.db"), d.join("a.key"), d.join("b.key"));
    let parties = d.join("parties");
    let (code, _, err) = run(&[
        "start",
        "--store",
        path(&store),
        "--audit-key",
        path(&key),
        "--party-keys",
        path(&parties),
    ]);
    assert_eq!(code, 0, "{err}");
    run(&[
        "start",
        "--store",
        path(&d.join("other.db")),
        "--audit-key",
        path(&other),
    ]);
    let text = std::fs::read_to_string(&key).unwrap();
    let id = resumable_audit::Key::from_hex(&text)
        .unwrap()
        .id()
        .to_string();
    let worker = |extra: &[&str]| {
        let mut args = vec![
            "worker",
            "--store",
            path(&store),
            "--tools",
            "127.0.0.1:1",
            "--party-keys",
            path(&parties),
            "--until-quiescent",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    for extra in [&[][..], &["--audit-key", path(&other)][..]] {
        let (code, _, err) = worker(extra);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("sealed under audit key {id}")),
            "{err}"
        );
    }
    let (code, log, err) = run(&["log", "--store", path(&store), "--run", "run-approval"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(log.lines().count(), 1, "the header alone: nothing written");
}

#[test]
fn every_file_input_is_bounded_dev_zero_is_refused_at_once() {
    let d = dir("zero");
    let store = d.join("runs.db");
    let parties = d.join("parties");
    let approver = parties.join("approver.key");
    let start = [
        "start",
        "--store",
        path(&store),
        "--party-keys",
        path(&parties),
    ];
    assert_eq!(run(&start).0, 0);
    // A directory of parties' keys in which one key file is /dev/zero.
    let zeroes = d.join("zeroes");
    std::fs::create_dir_all(&zeroes).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zeroes.join("ops.key")).unwrap();
    for args in [
        &[
            "start",
            "--store",
            path(&store),
            "--run",
            "r2",
            "--audit-key",
            "/dev/zero",
        ][..],
        &[
            "worker",
            "--store",
            path(&store),
            "--tools",
            "127.0.0.1:1",
            "--party-keys",
            path(&parties),
            "--audit-key",
            "/dev/zero",
        ],
        &[
            "worker",
            "--store",
            path(&store),
            "--tools",
            "127.0.0.1:1",
            "--party-keys",
            path(&zeroes),
        ],
        &[
            "approve",
            "--store",
            path(&store),
            "--run",
            "run-approval",
            "--party-key",
            path(&approver),
            "--checkpoint",
            "/dev/zero",
        ],
        &[
            "approve",
            "--store",
            path(&store),
            "--run",
            "run-approval",
            "--party-key",
            "/dev/zero",
        ],
        &[
            "deny",
            "--store",
            path(&store),
            "--run",
            "run-approval",
            "--party-key",
            path(&approver),
            "--checkpoint",
            "/dev/zero",
        ],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("longer than"), "{args:?}: {err}");
    }
}

#[test]
fn a_new_key_file_is_readable_by_its_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("mode");
    let key = d.join("audit.key");
    let parties = d.join("parties");
    // A party's key that exists already is kept.
    std::fs::create_dir_all(&parties).unwrap();
    let ops = format!("{}\n", "ab".repeat(32));
    std::fs::write(parties.join("ops.key"), &ops).unwrap();
    let (code, _, err) = run(&[
        "start",
        "--store",
        path(&d.join("runs.db")),
        "--audit-key",
        path(&key),
        "--party-keys",
        path(&parties),
    ]);
    assert_eq!(code, 0, "{err}");
    for made in [
        key,
        parties.join("approver.key"),
        parties.join("payments.key"),
    ] {
        let mode = std::fs::metadata(&made).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}: {mode:o}", made.display());
    }
    assert_eq!(
        std::fs::read_to_string(parties.join("ops.key")).unwrap(),
        ops
    );
}

#[test]
fn a_password_in_the_store_address_is_never_printed() {
    for address in [
        "host=127.0.0.1 port=1 user=ops password=hunter2 dbname=runs",
        "postgres://ops:hunter2@127.0.0.1:1/runs",
    ] {
        let (code, _, err) = run(&["start", "--store", address]);
        assert_eq!(code, 1, "{err}");
        assert!(!err.contains("hunter2") && err.contains("***"), "{err}");
    }
}

#[test]
fn schema_names_postgres_would_shorten_or_owns_are_refused_before_connecting() {
    let long = format!("host=127.0.0.1 port=1#{}", "s".repeat(64));
    for address in ["host=127.0.0.1 port=1#information_schema", long.as_str()] {
        let (code, _, err) = run(&["start", "--store", address]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("schema name"), "{err}");
    }
}

#[test]
fn zero_and_absurd_durations_and_an_overflowing_validity_are_misuse() {
    let d = dir("durations");
    let store = d.join("runs.db");
    let parties = d.join("parties");
    let start = [
        "start",
        "--store",
        path(&store),
        "--party-keys",
        path(&parties),
    ];
    assert_eq!(run(&start).0, 0);
    let worker = [
        "worker",
        "--store",
        path(&store),
        "--tools",
        "127.0.0.1:1",
        "--party-keys",
        path(&parties),
    ];
    for extra in [
        &["--lease-ms", "0"][..],
        &["--tool-timeout-ms", "0"],
        &["--lease-ms", "1000", "--tool-timeout-ms", "1000"],
        &["--lease-ms", "18446744073709551615"],
        &["--poll-ms", "0"],
    ] {
        let args: Vec<&str> = worker.iter().chain(extra).copied().collect();
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{extra:?}: {err}");
    }
    let (code, _, err) = run(&[
        "approve",
        "--store",
        path(&store),
        "--run",
        "run-approval",
        "--party-key",
        path(&parties.join("approver.key")),
        "--valid-ms",
        "18446744073709551615",
    ]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_run_name_the_store_cannot_address_is_refused() {
    let d = dir("slash");
    let (code, _, err) = run(&["start", "--store", path(&d.join("runs.db")), "--run", "a/b"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no '/'"), "{err}");
}

#[test]
fn start_and_status_writing_to_a_full_disk_exit_2() {
    let d = dir("full");
    let store = d.join("runs.db");
    for args in [
        &["start", "--store", path(&store)][..],
        &["status", "--store", path(&store)],
        &[
            "status",
            "--store",
            path(&store),
            "--run",
            "run-approval",
            "--checkpoint",
        ],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(EXE).args(args).stdout(full).output().unwrap();
        let (code, _, err) = report(&out);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("cannot write"), "{args:?}: {err}");
    }
}

#[test]
fn reading_commands_refuse_a_missing_store_and_never_create_one() {
    let d = dir("missing");
    let store = d.join("typo.db");
    for args in [
        &["status", "--store", path(&store)][..],
        &["log", "--store", path(&store), "--run", "run-approval"],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("no store at"), "{err}");
        assert!(!store.exists(), "{args:?} created the store");
    }
}

#[test]
fn a_torture_without_kills_is_unexercised_and_one_past_its_deadline_incomplete() {
    let d = dir("torture");
    let (code, _, err) = run(&["torture", "--kills", "0", "--dir", path(&d)]);
    assert_eq!(code, 4, "{err}");
    let (code, out, err) = run(&[
        "torture",
        "--kills",
        "100000",
        "--deadline-s",
        "1",
        "--workers",
        "1",
        "--dir",
        path(&d),
        "--fresh",
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains("INCOMPLETE: the deadline of 1 s passed"),
        "{out}"
    );
    assert!(!out.contains("VIOLATION"), "{out}");
}

#[test]
fn status_shows_who_must_act_filtered_with_dates_and_causes_in_words() {
    let d = dir("status");
    let store = d.join("runs.db");
    let s = path(&store);
    let tools = service(&d.join("tools.ledger"));
    let parties = d.join("parties");
    let p = path(&parties);
    for args in [
        &["start", "--store", s, "--party-keys", p][..],
        &["start", "--store", s, "--program", "order"],
        &[
            "start",
            "--store",
            s,
            "--program",
            "order",
            "--run",
            "order-2",
        ],
    ] {
        assert_eq!(run(args).0, 0, "{args:?}");
    }
    let ops = parties.join("ops.key");
    let cancel = [
        "cancel",
        "--store",
        s,
        "--run",
        "order-2",
        "--party-key",
        path(&ops),
    ];
    let (code, out, err) = run(&cancel);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("queued, not yet decided"), "{out}");
    let (code, _, err) = run(&[
        "worker",
        "--store",
        s,
        "--tools",
        &tools.1,
        "--tools-key",
        path(&tools.2),
        "--party-keys",
        p,
        "--until-quiescent",
    ]);
    assert_eq!(code, 0, "{err}");
    let status = |extra: &[&str]| {
        let mut args = vec!["status", "--store", s];
        args.extend_from_slice(extra);
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .filter(|l| !l.starts_with("  "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let all = status(&[]);
    assert_eq!(all.len(), 3, "{all:?}");
    let failed = all.iter().find(|l| l.contains("order-2")).unwrap();
    assert!(failed.ends_with("failed, cancelled by ops"), "{failed}");
    let waiting = status(&["--waiting"]);
    assert_eq!(waiting.len(), 2, "{waiting:?}");
    let seed = &waiting[0];
    assert!(
        seed.contains("waits for approver") && seed.contains("expires 20"),
        "{seed}"
    );
    assert!(seed.contains(" UTC (in 9m "), "{seed}");
    let payments = status(&["--party", "payments"]);
    assert_eq!(payments.len(), 1, "{payments:?}");
    assert!(payments[0].contains("order-1"), "{payments:?}");
    assert!(status(&["--expiring-ms", "0"]).is_empty());
    assert_eq!(status(&["--expiring-ms", "86400000"]).len(), 2);
}

/// Starts `args`, collects its stderr until `wanted` appears in it or `within` passes, kills
/// it, and returns the stderr seen.
fn stderr_until(args: &[&str], wanted: &str, within: std::time::Duration) -> String {
    let mut child = Command::new(EXE)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let started = std::time::Instant::now();
    let mut seen = String::new();
    while started.elapsed() < within && !seen.contains(wanted) {
        if let Ok(line) = rx.recv_timeout(std::time::Duration::from_millis(100)) {
            seen.push_str(&line);
            seen.push('\n');
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    seen
}

#[test]
fn a_worker_says_with_its_address_that_the_tool_service_is_unreachable() {
    let d = dir("unreachable");
    let store = d.join("runs.db");
    let parties = d.join("parties");
    let start = ["start", "--store", path(&store), "--program", "order"];
    assert_eq!(
        run(&[&start[..], &["--party-keys", path(&parties)]].concat()).0,
        0
    );
    let seen = stderr_until(
        &[
            "worker",
            "--store",
            path(&store),
            "--tools",
            "127.0.0.1:1",
            "--party-keys",
            path(&parties),
        ],
        "tool service at 127.0.0.1:1 unreachable",
        std::time::Duration::from_secs(20),
    );
    assert!(
        seen.contains("tool service at 127.0.0.1:1 unreachable"),
        "{seen}"
    );
}

#[test]
fn postgres_a_worker_waits_out_a_lost_session_and_goes_on() {
    let Some(store) = resumable_runtime::store::postgres::test_address("cli_lost") else {
        return;
    };
    let d = dir("lost");
    let tools = service(&d.join("tools.ledger"));
    // The worker's sessions carry a name of their own, so that only they are ended.
    let name = format!("cli_lost_{}", std::process::id());
    let (conn, schema) = resumable_runtime::store::postgres::split_address(&store);
    let worker_store = format!("{conn} application_name={name}#{schema}");
    let parties = d.join("parties");
    let p = path(&parties);
    assert_eq!(run(&["start", "--store", &store, "--party-keys", p]).0, 0);
    let mut worker = Command::new(EXE)
        .args([
            "worker",
            "--store",
            &worker_store,
            "--tools",
            &tools.1,
            "--party-keys",
            p,
            "--tools-key",
        ])
        .arg(&tools.2)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // Every session of the worker ends, as in a restart of the server.
    let mut admin = postgres::Client::connect(conn, postgres::NoTls).unwrap();
    let ended = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .unwrap();
    assert!(!ended.is_empty(), "the worker has a session");
    // The worker is still there, and drives the approved run to its end.
    let (code, _, err) = run(&[
        "approve",
        "--store",
        &store,
        "--run",
        "run-approval",
        "--party-key",
        path(&parties.join("approver.key")),
        "--wait-ms",
        "20000",
    ]);
    let alive = worker.try_wait().unwrap().is_none();
    let _ = worker.kill();
    let _ = worker.wait();
    assert!(alive, "the worker died with its session");
    assert_eq!(code, 0, "{err}");
    let _ = resumable_runtime::store::postgres::PgStore::drop_schema(&store);
}

#[test]
fn the_tool_service_serves_only_clients_that_prove_they_hold_its_key() {
    use std::io::Write;
    let d = dir("auth");
    let ledger = d.join("tools.ledger");
    let tools = service(&ledger);
    let key = std::fs::metadata(&tools.2).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&key.permissions()) & 0o777,
        0o600
    );
    let zeros = "0".repeat(64);
    let dispatch = format!(
        "{{\"op\":\"dispatch\",\"tool\":\"charge:card\",\"key\":\"k1\",\"attempt\":0,\"args\":\"{zeros}\"}}\n"
    );
    let wrong_proof = format!("{{\"op\":\"auth\",\"proof\":\"{}\"}}\n", "1".repeat(64));
    for first in [&dispatch, &wrong_proof] {
        let mut conn = std::net::TcpStream::connect(&tools.1).unwrap();
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let mut challenge = String::new();
        reader.read_line(&mut challenge).unwrap();
        assert!(challenge.contains("\"challenge\""), "{challenge}");
        conn.write_all(first.as_bytes()).unwrap();
        let mut replies = String::new();
        let _ = std::io::Read::read_to_string(&mut reader, &mut replies);
        assert!(
            replies.starts_with("{\"reply\":\"refused\",\"why\":\"not authenticated"),
            "{replies}"
        );
        assert_eq!(replies.lines().count(), 1, "closed after it: {replies}");
    }
    assert_eq!(
        std::fs::read_to_string(&ledger).unwrap(),
        "",
        "nothing committed"
    );
    // A worker without the key says why it cannot use the service.
    let store = d.join("runs.db");
    let parties = d.join("parties");
    let p = path(&parties);
    let start = ["start", "--store", path(&store), "--program", "order"];
    assert_eq!(run(&[&start[..], &["--party-keys", p]].concat()).0, 0);
    let seen = stderr_until(
        &[
            "worker",
            "--store",
            path(&store),
            "--tools",
            &tools.1,
            "--party-keys",
            p,
        ],
        "authenticates its clients",
        std::time::Duration::from_secs(20),
    );
    assert!(
        seen.contains(&format!("tool service at {}", tools.1)),
        "{seen}"
    );
    // Without a key, the service starts only when told to serve anyone.
    let (code, _, err) = run(&["tool-service", "--ledger", path(&d.join("other.ledger"))]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_callback_typed_as_another_party_or_unsealed_never_reaches_the_kernel() {
    let d = dir("parties");
    let store = d.join("runs.db");
    let s = path(&store);
    let tools = service(&d.join("tools.ledger"));
    let keys = d.join("parties");
    std::fs::create_dir_all(&keys).unwrap();
    for party in ["payments", "mallory"] {
        let key = keys.join(format!("{party}.key"));
        resumable_runtime::lifecycle::write_key(&key, [party.len() as u8; 32]).unwrap();
    }
    let worker = || {
        let (code, _, err) = run(&[
            "worker",
            "--store",
            s,
            "--tools",
            &tools.1,
            "--tools-key",
            path(&tools.2),
            "--party-keys",
            path(&keys),
            "--until-quiescent",
        ]);
        assert_eq!(code, 0, "{err}");
        err
    };
    assert_eq!(run(&["start", "--store", s, "--program", "order"]).0, 0);
    worker();
    let mallory = keys.join("mallory.key");
    let payments = keys.join("payments.key");
    let callback = |party: &str, key: Option<&Path>| {
        let mut args = vec!["callback", "--store", s, "--run", "order-1", "--as", party];
        match key {
            Some(key) => args.extend(["--party-key", path(key)]),
            None => args.push("--unauthenticated-parties"),
        }
        assert_eq!(run(&args).0, 0, "{args:?}");
    };
    // Mallory, with her own key; someone typing "payments" without its key; payments with it.
    callback("mallory", Some(&mallory));
    callback("payments", None);
    callback("payments", Some(&mallory));
    let err = worker();
    assert!(err.contains("speaks for payments"), "{err}");
    let (_, out, _) = run(&["status", "--store", s, "--run", "order-1"]);
    assert!(
        out.contains("waits for callback payment-settled from payments"),
        "{out}"
    );
    assert_eq!(out.matches("refused: unauthenticated").count(), 3, "{out}");
    let (_, log, _) = run(&["log", "--store", s, "--run", "order-1"]);
    callback("payments", Some(&payments));
    worker();
    let (_, out, _) = run(&["status", "--store", s, "--run", "order-1"]);
    assert!(!out.contains("waits for callback"), "{out}");
    assert!(
        out.contains("request #4 from payments") && out.contains("accepted"),
        "{out}"
    );
    let (_, after, _) = run(&["log", "--store", s, "--run", "order-1"]);
    assert!(
        after.starts_with(&log),
        "the refused requests left no record"
    );
}

#[test]
fn without_party_keys_or_the_opt_out_a_worker_and_every_request_refuse_saying_what_to_do() {
    let d = dir("nokeys");
    let store = d.join("runs.db");
    let s = path(&store);
    assert_eq!(run(&["start", "--store", s]).0, 0);
    let worker = ["worker", "--store", s, "--tools", "127.0.0.1:1"];
    let (code, out, err) = run(&[&worker[..], &["--until-quiescent"]].concat());
    assert_eq!(code, 2, "{out}{err}");
    for told in [
        "a worker needs --party-keys DIR",
        "`start --party-keys DIR` makes a key for each party",
        "--unauthenticated-parties goes without",
    ] {
        assert!(err.contains(told), "{err}");
    }
    let approver_key = d.join("approver.key");
    resumable_runtime::lifecycle::write_key(&approver_key, [7; 32]).unwrap();
    let target = ["--store", s, "--run", "run-approval"];
    for (args, told) in [
        (
            &["approve"][..],
            "a request sent as approver needs --party-key FILE",
        ),
        (
            &["deny"],
            "a request sent as approver needs --party-key FILE",
        ),
        (
            &["callback"],
            "a request sent as payments needs --party-key FILE",
        ),
        (
            &["intervene", "--resolution", "continue"],
            "a request sent as ops needs --party-key FILE",
        ),
        (
            &["cancel", "--as", "alice"],
            "a request sent as alice needs",
        ),
    ] {
        let (code, out, err) = run(&[args, &target[..]].concat());
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(told), "{args:?}: {err}");
        assert!(err.contains("--unauthenticated-parties"), "{args:?}: {err}");
    }
    let approver = ["approver", "--store", s, "--rounds", "1"];
    let (code, _, err) = run(&approver);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("sent as approver needs --party-key FILE"),
        "{err}"
    );
    let key = ["--party-key", path(&approver_key)];
    let callbacks = ["--callbacks", "--callback-as", "payments"];
    let (code, _, err) = run(&[&approver[..], &key, &callbacks].concat());
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("sent as payments needs --callback-key FILE"),
        "{err}"
    );
    // Nothing reached the inbox, and the worker wrote nothing.
    let (code, out, err) = run(&["status", "--store", s]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("revision 0") && !out.contains("request #"),
        "{out}"
    );
    let (_, log, _) = run(&["log", "--store", s, "--run", "run-approval"]);
    assert_eq!(log.lines().count(), 1, "the header alone: {log}");
}

#[test]
fn a_worker_told_to_take_unauthenticated_parties_warns_and_feeds_an_unsealed_request() {
    let d = dir("optout");
    let store = d.join("runs.db");
    let s = path(&store);
    let tools = service(&d.join("tools.ledger"));
    assert_eq!(run(&["start", "--store", s]).0, 0);
    let worker = || {
        let (code, _, err) = run(&[
            "worker",
            "--store",
            s,
            "--tools",
            &tools.1,
            "--tools-key",
            path(&tools.2),
            "--unauthenticated-parties",
            "--until-quiescent",
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("WARNING: feeding unauthenticated decisions (--unauthenticated-parties)"),
            "{err}"
        );
    };
    worker();
    let approve = ["approve", "--store", s, "--run", "run-approval"];
    let (code, _, err) = run(&[&approve[..], &["--unauthenticated-parties"]].concat());
    assert_eq!(code, 0, "{err}");
    worker();
    let (_, out, _) = run(&["status", "--store", s, "--run", "run-approval"]);
    assert!(out.contains(": completed"), "{out}");
    assert!(
        out.contains("request #1 from approver") && out.contains("accepted (revision 2)"),
        "{out}"
    );
}
