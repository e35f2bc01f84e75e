//! Planned kills: the points in the driver where a torture run can have a worker killed
//! with SIGKILL, exactly there. Which point, and at which visit, comes from the torture's
//! seed; the kill itself is a real `kill -9` of the worker's process, sent by a shell it
//! starts, so nothing in the worker gets to run after it (no destructor, no flush, no
//! unwinding).

use std::io::Write;
use std::process::Command;
use std::time::Duration;

/// Where in the driving loop a planned kill lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CrashPoint {
    /// The step is decided and its record written down, the commit not yet made.
    BeforeCommit,
    /// The commit is made; its effects (the dispatch, the query) are not yet carried out.
    AfterCommit,
    /// The dispatch has left for the tool; its answer has not come back. The request still
    /// commits, later, at the tool.
    AfterSend,
    /// The tool committed and answered; the answer is not yet recorded.
    AfterAnswer,
    /// A batch's calls are in flight together: one call's answer is recorded, the next
    /// call has not left. The kernel holds both in flight; the next has never reached the
    /// tool.
    BetweenDispatches,
    /// The status query answered; the reconcile is not yet recorded.
    AfterQuery,
}

impl CrashPoint {
    /// Every point.
    pub const ALL: [CrashPoint; 6] = [
        CrashPoint::BeforeCommit,
        CrashPoint::AfterCommit,
        CrashPoint::AfterSend,
        CrashPoint::AfterAnswer,
        CrashPoint::BetweenDispatches,
        CrashPoint::AfterQuery,
    ];

    /// The point's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            CrashPoint::BeforeCommit => "before-commit",
            CrashPoint::AfterCommit => "after-commit",
            CrashPoint::AfterSend => "after-send",
            CrashPoint::AfterAnswer => "after-answer",
            CrashPoint::BetweenDispatches => "between-dispatches",
            CrashPoint::AfterQuery => "after-query",
        }
    }

    /// The point named `s`.
    pub fn parse(s: &str) -> Option<CrashPoint> {
        CrashPoint::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A plan to be killed at the `nth` visit of a point, or never.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashPlan {
    target: Option<(CrashPoint, u32)>,
    seen: u32,
}

impl CrashPlan {
    /// Never killed by plan.
    pub fn none() -> CrashPlan {
        CrashPlan::default()
    }

    /// Killed at the `nth` (from 1) visit of `point`.
    pub fn at_visit(point: CrashPoint, nth: u32) -> CrashPlan {
        CrashPlan {
            target: Some((point, nth.max(1))),
            seen: 0,
        }
    }

    /// Parses `POINT:N` (e.g. `after-commit:3`).
    pub fn parse(s: &str) -> Option<CrashPlan> {
        let (point, nth) = s.split_once(':')?;
        Some(CrashPlan::at_visit(
            CrashPoint::parse(point)?,
            nth.parse().ok()?,
        ))
    }

    /// The planned point and visit.
    pub fn target(&self) -> Option<(CrashPoint, u32)> {
        self.target
    }

    /// Called at each point: dies here if this is the planned visit.
    pub fn at(&mut self, point: CrashPoint) {
        if let Some((p, nth)) = self.target {
            if p == point {
                self.seen += 1;
                if self.seen == nth {
                    die(point);
                }
            }
        }
    }
}

/// Has this process killed with SIGKILL, from outside, and waits for it.
fn die(point: CrashPoint) -> ! {
    let pid = std::process::id();
    let _ = writeln!(
        std::io::stderr(),
        "killed at {} (pid {pid})",
        point.as_str()
    );
    let _ = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -KILL {pid}"))
        .status();
    // The signal is on its way; if it never arrives (no shell?), stop hard all the same.
    std::thread::sleep(Duration::from_secs(10));
    std::process::abort()
}
