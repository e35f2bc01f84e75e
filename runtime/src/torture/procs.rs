//! The torture's processes: the tool service, the approvers and the workers, each a child
//! process of the command's own binary, and the kills.

use crate::driver::{CrashPlan, CrashPoint, Flavor};
use crate::rng::{now_ms, Rng};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running child, stopped (SIGKILL) and reaped when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn log_file(dir: &Path, name: &str) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{name}.log")))
}

/// Starts the tool service on `listen` (port 0: any free port), its clients authenticated by
/// the key in `tools.key`, and returns it with the address it listens on.
pub fn tool_service(
    exe: &Path,
    dir: &Path,
    listen: &str,
    seed: u64,
    max_delay_ms: u64,
    unknown_percent: u64,
) -> std::io::Result<(Proc, String)> {
    let mut child = Command::new(exe)
        .args(["tool-service", "--listen", listen, "--ledger"])
        .arg(dir.join("tools.ledger"))
        .arg("--key")
        .arg(dir.join("tools.key"))
        .args(["--seed", &seed.to_string()])
        .args(["--max-delay-ms", &max_delay_ms.to_string()])
        .args(["--unknown-percent", &unknown_percent.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file(dir, "tool-service")?)
        .spawn()?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        BufReader::new(out).read_line(&mut line)?;
    }
    let proc = Proc(child);
    match line.trim().strip_prefix("listening on ") {
        Some(address) => Ok((proc, address.to_string())),
        None => Err(std::io::Error::other(format!(
            "the tool service did not start (see {})",
            dir.join("tool-service.log").display()
        ))),
    }
}

/// Starts the tool service again on `address`, where the one killed listened, trying for a
/// few seconds while the address is still taken.
pub fn tool_service_again(
    exe: &Path,
    dir: &Path,
    address: &str,
    seed: u64,
    max_delay_ms: u64,
    unknown_percent: u64,
) -> std::io::Result<Proc> {
    let mut last = None;
    for _ in 0..50 {
        match tool_service(exe, dir, address, seed, max_delay_ms, unknown_percent) {
            Ok((proc, _)) => return Ok(proc),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("not started")))
}

/// The key file of `party` in the torture's directory of parties' keys.
pub fn party_key(dir: &Path, party: &str) -> PathBuf {
    dir.join("parties").join(format!("{party}.key"))
}

/// Starts an approver that also sends callbacks (as the payment system), each request
/// sealed with the key of the party it speaks as.
pub fn approver(
    exe: &Path,
    dir: &Path,
    store: &str,
    index: u32,
    seed: u64,
) -> std::io::Result<Proc> {
    let child = Command::new(exe)
        .args([
            "approver",
            "--store",
            store,
            "--callbacks",
            "--poll-ms",
            "10",
        ])
        .args(["--seed", &seed.wrapping_add(u64::from(index)).to_string()])
        .args(["--deny-percent", "5", "--duplicate-percent", "20"])
        .args(["--as", crate::program::APPROVER, "--party-key"])
        .arg(party_key(dir, crate::program::APPROVER))
        .args(["--callback-as", crate::program::PAYMENTS, "--callback-key"])
        .arg(party_key(dir, crate::program::PAYMENTS))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file(dir, &format!("approver-{index}"))?)
        .spawn()?;
    Ok(Proc(child))
}

/// How one worker incarnation is to die: at a planned point, or by the supervisor's timer.
#[derive(Clone, Debug)]
pub struct Fate {
    /// The planned point and visit, if any.
    pub plan: Option<(CrashPoint, u32)>,
    /// When the supervisor kills it if it is still alive (ms since the epoch).
    pub timer_at_ms: Option<u64>,
}

/// Draws a worker's fate from the seed: mostly a planned point (weighted towards the points
/// that matter most: between commit and dispatch, between the tool's commit and the recorded
/// answer; between two dispatches of a batch only batch runs visit), sometimes a kill at a random instant, which can land anywhere, a store commit
/// included.
pub fn fate(rng: &mut Rng, killing: bool) -> Fate {
    if !killing {
        return Fate {
            plan: None,
            timer_at_ms: None,
        };
    }
    if rng.percent(25) {
        return Fate {
            plan: None,
            timer_at_ms: Some(now_ms() + 5 + rng.below(150)),
        };
    }
    let roll = rng.below(100);
    let point = match roll {
        0..=17 => CrashPoint::BeforeCommit,
        18..=39 => CrashPoint::AfterCommit,
        40..=57 => CrashPoint::AfterSend,
        58..=79 => CrashPoint::AfterAnswer,
        80..=89 => CrashPoint::BetweenDispatches,
        _ => CrashPoint::AfterQuery,
    };
    Fate {
        plan: Some((point, 1 + rng.below(4) as u32)),
        // A planned point may not come soon (a query is rare): the timer settles it.
        timer_at_ms: Some(now_ms() + 1500),
    }
}

/// What the torture's workers share.
pub struct WorkerSpec<'a> {
    /// The binary.
    pub exe: &'a Path,
    /// Where logs go.
    pub dir: &'a Path,
    /// The store.
    pub store: &'a str,
    /// The tool service.
    pub tools: &'a str,
    /// The lease.
    pub lease_ms: u64,
    /// Correct or broken.
    pub flavor: Flavor,
    /// The audit key file the workers seal records with.
    pub key_file: &'a Path,
    /// The key in it (the supervisor seals the headers of the runs it starts).
    pub key: &'a crate::lifecycle::Key,
}

/// A worker slot: its current process and fate.
pub struct Slot {
    /// The slot's number.
    pub index: u32,
    /// The process.
    pub proc: Proc,
    /// Its holder name in leases (`w<slot>.<pid>`).
    pub owner: String,
    /// How it is to die.
    pub fate: Fate,
    /// Whether the supervisor sent the kill.
    pub timer_sent: bool,
}

/// Starts the worker of slot `index` with `fate`.
pub fn worker(spec: &WorkerSpec<'_>, index: u32, fate: Fate) -> std::io::Result<Slot> {
    let mut cmd = Command::new(spec.exe);
    cmd.args(["worker", "--store", spec.store, "--tools", spec.tools])
        .args(["--id", &format!("w{index}")])
        .args(["--lease-ms", &spec.lease_ms.to_string()])
        .args(["--flavor", spec.flavor.as_str(), "--poll-ms", "5"])
        .args(["--offset", &(index * 7).to_string()])
        .arg("--audit-key")
        .arg(spec.key_file)
        .arg("--tools-key")
        .arg(spec.dir.join("tools.key"))
        .arg("--party-keys")
        .arg(spec.dir.join("parties"));
    if let Some((point, nth)) = fate.plan {
        let plan = CrashPlan::at_visit(point, nth);
        debug_assert_eq!(plan.target(), Some((point, nth)));
        cmd.args(["--crash-at", &format!("{}:{nth}", point.as_str())]);
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file(spec.dir, &format!("worker-{index}"))?)
        .spawn()?;
    let owner = format!("w{index}.{}", child.id());
    Ok(Slot {
        index,
        proc: Proc(child),
        owner,
        fate,
        timer_sent: false,
    })
}

/// How a worker ended.
pub enum Ended {
    /// Killed with SIGKILL.
    Killed,
    /// Exited on its own, with this status and the end of its log.
    Exited(String),
}

/// Whether slot's worker has ended, and how.
pub fn reap(slot: &mut Slot, dir: &Path) -> std::io::Result<Option<Ended>> {
    let Some(status) = slot.proc.0.try_wait()? else {
        return Ok(None);
    };
    if status.signal() == Some(9) {
        return Ok(Some(Ended::Killed));
    }
    let log: PathBuf = dir.join(format!("worker-{}.log", slot.index));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(3).collect();
    Ok(Some(Ended::Exited(format!(
        "worker {} ended with {status}: {}",
        slot.owner,
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    ))))
}
