//! The runtime's commands as an operator (and a careless or hostile local user) meets them:
//! the tool ledger kept whole and held by one service, a worker refusing a run sealed under
//! another key, every file input bounded, key files private, passwords never shown, zero and
//! absurd durations refused, names the store cannot address refused, a full disk reported,
//! reading commands that never create a store, and a status that shows who must act.

use resumable_kernel::Digest;
use resumable_runtime::tool::service::Entry;
use resumable_testkit::process::{self, dev_full, listening, report, start, Background, Stream};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

// The runtime's own tests name and end PostgreSQL sessions the same way.
#[path = "../../runtime/tests/support/postgres.rs"]
mod sessions;

const EXE: &str = env!("CARGO_BIN_EXE_resumable");

/// The address of no tool service.
const NOWHERE: &str = "127.0.0.1:1";

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("resumable-cli-rt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the binary with `args`: its exit status, stdout and stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    report(&process::run(EXE, args, b""))
}

/// Runs the binary with `args` and asserts that it exits with `code` and that its stderr
/// says `says`; returns its stderr.
fn exits(args: &[&str], code: i32, says: &str) -> String {
    let (got, out, err) = run(args);
    assert_eq!(got, code, "{args:?}: {out}{err}");
    assert!(err.contains(says), "{args:?}: {says:?} missing from: {err}");
    err
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A store (`runs.db`) and a directory of parties' keys (`parties`) in a fresh directory, and
/// the arguments of the commands run on them.
struct Site {
    dir: PathBuf,
    store: String,
    parties: String,
}

impl Site {
    fn new(name: &str) -> Site {
        let dir = dir(name);
        let store = path(&dir.join("runs.db")).to_string();
        let parties = path(&dir.join("parties")).to_string();
        Site {
            dir,
            store,
            parties,
        }
    }

    /// The file `name` in the directory.
    fn file(&self, name: &str) -> String {
        path(&self.dir.join(name)).to_string()
    }

    /// The key file of `party`.
    fn key(&self, party: &str) -> String {
        path(&Path::new(&self.parties).join(format!("{party}.key"))).to_string()
    }

    /// `start` on the store, making the parties' keys, with `extra`; asserts it exits 0.
    fn start(&self, extra: &[&str]) {
        let args = [
            &[
                "start",
                "--store",
                &self.store,
                "--party-keys",
                &self.parties,
            ],
            extra,
        ];
        let (code, _, err) = run(&args.concat());
        assert_eq!(code, 0, "{extra:?}: {err}");
    }

    /// `worker` on the store with the parties' keys and the tools at `tools`, with `extra`.
    fn worker<'a>(&'a self, tools: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        self.worker_keyed(tools, &self.parties, extra)
    }

    /// [`Site::worker`] with the parties' keys in `parties`.
    fn worker_keyed<'a>(
        &'a self,
        tools: &'a str,
        parties: &'a str,
        extra: &[&'a str],
    ) -> Vec<&'a str> {
        let mut args = vec!["worker", "--store", &self.store, "--tools", tools];
        args.extend(["--party-keys", parties]);
        args.extend_from_slice(extra);
        args
    }

    /// `worker` on the store with the parties' keys and `tools`, until nothing is left to do;
    /// asserts it exits 0 and returns its stderr.
    fn drive(&self, tools: &Service) -> String {
        let key = tools.key();
        let (code, _, err) =
            run(&self.worker(&tools.address, &["--tools-key", key, "--until-quiescent"]));
        assert_eq!(code, 0, "{err}");
        err
    }

    /// A party's `request` about the seed's run, sealed with `key`, with `extra`.
    fn request<'a>(&'a self, request: &'a str, key: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![request, "--store", &self.store, "--run", "run-approval"];
        args.extend(["--party-key", key]);
        args.extend_from_slice(extra);
        args
    }
}

/// A tool service, stopped when dropped.
struct Service {
    _process: Background,
    address: String,
    key_file: PathBuf,
}

impl Service {
    fn key(&self) -> &str {
        path(&self.key_file)
    }
}

/// A tool service on `ledger`, with its key file beside it.
fn service(ledger: &Path) -> Service {
    let key = ledger.with_file_name("tools.key");
    let mut command = Command::new(EXE);
    command.args(["tool-service", "--listen", "127.0.0.1:0", "--ledger"]);
    let (process, address) = listening(command.arg(ledger).arg("--key").arg(&key));
    Service {
        _process: process,
        address,
        key_file: key,
    }
}

/// The arguments of a tool service that serves anyone, on `ledger`.
fn open_service_args(ledger: &Path) -> Vec<&str> {
    let listen = ["tool-service", "--no-auth", "--listen", "127.0.0.1:0"];
    [&listen[..], &["--ledger", path(ledger)]].concat()
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

/// Starts `args`, collects its stderr until `wanted` appears in it or 20 s pass, stops it,
/// and returns the stderr seen.
fn stderr_until(args: &[&str], wanted: &str) -> String {
    let (process, lines) = start(Command::new(EXE).args(args), Stream::Stderr);
    let seen = lines.until(wanted, Duration::from_secs(20));
    drop(process);
    seen
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
    exits(
        &open_service_args(&ledger),
        1,
        "line 2 is not a ledger entry",
    );
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
    exits(
        &open_service_args(&ledger),
        1,
        "held by another tool service",
    );
}

#[test]
fn a_worker_without_the_runs_audit_key_or_with_another_refuses_it_with_exit_2() {
    let site = Site::new("key");
    let (key, other) = (site.file("a.key"), site.file("b.key"));
    site.start(&["--audit-key", &key]);
    let other_store = site.file("other.db");
    run(&["start", "--store", &other_store, "--audit-key", &other]);
    let text = std::fs::read_to_string(&key).unwrap();
    let id = resumable_audit::Key::from_hex(&text)
        .unwrap()
        .id()
        .to_string();
    for extra in [&[][..], &["--audit-key", &other][..]] {
        let args = [&site.worker(NOWHERE, &["--until-quiescent"])[..], extra].concat();
        exits(&args, 2, &format!("sealed under audit key {id}"));
    }
    let (code, log, err) = run(&["log", "--store", &site.store, "--run", "run-approval"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(log.lines().count(), 1, "the header alone: nothing written");
}

#[test]
fn every_file_input_is_bounded_dev_zero_is_refused_at_once() {
    let site = Site::new("zero");
    site.start(&[]);
    let approver = site.key("approver");
    // A directory of parties' keys in which one key file is /dev/zero.
    let zeroes = site.file("zeroes");
    std::fs::create_dir_all(&zeroes).unwrap();
    std::os::unix::fs::symlink("/dev/zero", Path::new(&zeroes).join("ops.key")).unwrap();
    let zero_key = ["--audit-key", "/dev/zero"];
    let zero_checkpoint = ["--checkpoint", "/dev/zero"];
    let s = site.store.as_str();
    for args in [
        [&["start", "--store", s, "--run", "r2"][..], &zero_key].concat(),
        site.worker(NOWHERE, &zero_key),
        site.worker_keyed(NOWHERE, &zeroes, &[]),
        site.request("approve", &approver, &zero_checkpoint),
        site.request("approve", "/dev/zero", &[]),
        site.request("deny", &approver, &zero_checkpoint),
    ] {
        exits(&args, 2, "longer than");
    }
}

#[test]
fn a_new_key_file_is_readable_by_its_owner_alone() {
    use std::os::unix::fs::PermissionsExt;
    let site = Site::new("mode");
    let key = site.file("audit.key");
    // A party's key that exists already is kept.
    std::fs::create_dir_all(&site.parties).unwrap();
    let ops = format!("{}\n", "ab".repeat(32));
    std::fs::write(site.key("ops"), &ops).unwrap();
    site.start(&["--audit-key", &key]);
    for made in [key, site.key("approver"), site.key("payments")] {
        let mode = std::fs::metadata(&made).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{made}: {mode:o}");
    }
    assert_eq!(std::fs::read_to_string(site.key("ops")).unwrap(), ops);
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
        exits(&["start", "--store", address], 2, "schema name");
    }
}

#[test]
fn zero_and_absurd_durations_and_an_overflowing_validity_are_misuse() {
    let site = Site::new("durations");
    site.start(&[]);
    for extra in [
        &["--lease-ms", "0"][..],
        &["--tool-timeout-ms", "0"],
        &["--lease-ms", "1000", "--tool-timeout-ms", "1000"],
        &["--lease-ms", "18446744073709551615"],
        &["--poll-ms", "0"],
    ] {
        let (code, _, err) = run(&site.worker(NOWHERE, extra));
        assert_eq!(code, 2, "{extra:?}: {err}");
    }
    let approver = site.key("approver");
    let valid = ["--valid-ms", "18446744073709551615"];
    let (code, _, err) = run(&site.request("approve", &approver, &valid));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_run_name_the_store_cannot_address_is_refused() {
    let d = dir("slash");
    exits(
        &["start", "--store", path(&d.join("runs.db")), "--run", "a/b"],
        2,
        "no '/'",
    );
}

#[test]
fn start_and_status_writing_to_a_full_disk_exit_2() {
    let d = dir("full");
    let store = d.join("runs.db");
    let checkpoint = ["--run", "run-approval", "--checkpoint"];
    for args in [
        vec!["start", "--store", path(&store)],
        vec!["status", "--store", path(&store)],
        [&["status", "--store", path(&store)][..], &checkpoint].concat(),
    ] {
        let full = dev_full().expect("/dev/full");
        let out = Command::new(EXE).args(&args).stdout(full).output().unwrap();
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
        exits(args, 2, "no store at");
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
    let site = Site::new("status");
    let s = site.store.as_str();
    let tools = service(&site.dir.join("tools.ledger"));
    site.start(&[]);
    for args in [
        &["start", "--store", s, "--program", "order"][..],
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
    let ops = site.key("ops");
    let cancel = [
        "cancel",
        "--store",
        s,
        "--run",
        "order-2",
        "--party-key",
        &ops,
    ];
    let (code, out, err) = run(&cancel);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("queued, not yet decided"), "{out}");
    site.drive(&tools);
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

#[test]
fn a_worker_says_with_its_address_that_the_tool_service_is_unreachable() {
    let site = Site::new("unreachable");
    site.start(&["--program", "order"]);
    let wanted = "tool service at 127.0.0.1:1 unreachable";
    let seen = stderr_until(&site.worker(NOWHERE, &[]), wanted);
    assert!(seen.contains(wanted), "{seen}");
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
    let worker_store = sessions::named(&store, &name);
    let parties = d.join("parties");
    let p = path(&parties);
    assert_eq!(run(&["start", "--store", &store, "--party-keys", p]).0, 0);
    let mut worker = Command::new(EXE);
    worker.args([
        "worker",
        "--store",
        &worker_store,
        "--tools",
        &tools.address,
    ]);
    worker.args(["--party-keys", p, "--tools-key", tools.key()]);
    let (mut worker, _stderr) = start(&mut worker, Stream::Stderr);
    std::thread::sleep(Duration::from_millis(500));
    // Every session of the worker ends, as in a restart of the server.
    sessions::terminate_sessions(&store, &name);
    // The worker is still there, and drives the approved run to its end.
    let approver = path(&parties.join("approver.key")).to_string();
    let approve = ["approve", "--store", &store, "--run", "run-approval"];
    let wait = ["--party-key", &approver, "--wait-ms", "20000"];
    let (code, _, err) = run(&[&approve[..], &wait].concat());
    let alive = worker.0.try_wait().unwrap().is_none();
    drop(worker);
    assert!(alive, "the worker died with its session");
    assert_eq!(code, 0, "{err}");
    let _ = resumable_runtime::store::postgres::PgStore::drop_schema(&store);
}

#[test]
fn the_tool_service_serves_only_clients_that_prove_they_hold_its_key() {
    use std::io::Write;
    let site = Site::new("auth");
    let ledger = site.dir.join("tools.ledger");
    let tools = service(&ledger);
    let key = std::fs::metadata(&tools.key_file).unwrap();
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
        let mut conn = std::net::TcpStream::connect(&tools.address).unwrap();
        let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
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
    site.start(&["--program", "order"]);
    let seen = stderr_until(
        &site.worker(&tools.address, &[]),
        "authenticates its clients",
    );
    assert!(
        seen.contains(&format!("tool service at {}", tools.address)),
        "{seen}"
    );
    // Without a key, the service starts only when told to serve anyone.
    let other = site.file("other.ledger");
    let (code, _, err) = run(&["tool-service", "--ledger", &other]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_callback_typed_as_another_party_or_unsealed_never_reaches_the_kernel() {
    let site = Site::new("parties");
    let s = site.store.as_str();
    let tools = service(&site.dir.join("tools.ledger"));
    std::fs::create_dir_all(&site.parties).unwrap();
    for party in ["payments", "mallory"] {
        let key = Path::new(&site.key(party)).to_path_buf();
        resumable_runtime::lifecycle::write_key(&key, [party.len() as u8; 32]).unwrap();
    }
    assert_eq!(run(&["start", "--store", s, "--program", "order"]).0, 0);
    site.drive(&tools);
    let (mallory, payments) = (site.key("mallory"), site.key("payments"));
    let callback = |party: &str, key: Option<&str>| {
        let mut args = vec!["callback", "--store", s, "--run", "order-1", "--as", party];
        match key {
            Some(key) => args.extend(["--party-key", key]),
            None => args.push("--unauthenticated-parties"),
        }
        assert_eq!(run(&args).0, 0, "{args:?}");
    };
    // Mallory, with her own key; someone typing "payments" without its key; payments with it.
    callback("mallory", Some(&mallory));
    callback("payments", None);
    callback("payments", Some(&mallory));
    let err = site.drive(&tools);
    assert!(err.contains("speaks for payments"), "{err}");
    let (_, out, _) = run(&["status", "--store", s, "--run", "order-1"]);
    assert!(
        out.contains("waits for callback payment-settled from payments"),
        "{out}"
    );
    assert_eq!(out.matches("refused: unauthenticated").count(), 3, "{out}");
    let (_, log, _) = run(&["log", "--store", s, "--run", "order-1"]);
    callback("payments", Some(&payments));
    site.drive(&tools);
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
    let site = Site::new("nokeys");
    let s = site.store.as_str();
    assert_eq!(run(&["start", "--store", s]).0, 0);
    let worker = ["worker", "--store", s, "--tools", NOWHERE];
    let (code, out, err) = run(&[&worker[..], &["--until-quiescent"]].concat());
    assert_eq!(code, 2, "{out}{err}");
    for told in [
        "a worker needs --party-keys DIR",
        "`start --party-keys DIR` makes a key for each party",
        "--unauthenticated-parties goes without",
    ] {
        assert!(err.contains(told), "{err}");
    }
    let approver_key = site.file("approver.key");
    resumable_runtime::lifecycle::write_key(Path::new(&approver_key), [7; 32]).unwrap();
    let target = ["--store", s, "--run", "run-approval"];
    let approver_needs = "a request sent as approver needs --party-key FILE";
    for (args, told) in [
        (&["approve"][..], approver_needs),
        (&["deny"], approver_needs),
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
    exits(&approver, 2, "sent as approver needs --party-key FILE");
    let key = ["--party-key", &approver_key];
    let callbacks = ["--callbacks", "--callback-as", "payments"];
    exits(
        &[&approver[..], &key, &callbacks].concat(),
        2,
        "sent as payments needs --callback-key FILE",
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
    let site = Site::new("optout");
    let s = site.store.as_str();
    let tools = service(&site.dir.join("tools.ledger"));
    assert_eq!(run(&["start", "--store", s]).0, 0);
    let worker = || {
        let mut args = vec!["worker", "--store", s, "--tools", &tools.address];
        args.extend(["--tools-key", tools.key(), "--unauthenticated-parties"]);
        exits(
            &[&args[..], &["--until-quiescent"]].concat(),
            0,
            "WARNING: feeding unauthenticated decisions (--unauthenticated-parties)",
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
