//! The tool's ledger, one for the whole world (spec KEY-3). The tool keeps its records (a
//! commit, a fence, a "not committed" answer) by the tool key a dispatch carries, not by the
//! run that sent it: two runs whose dispatches carry one tool key share one record, so a
//! request of one is deduped, or refused, by what the other did, and a query of one answers
//! with the other's commit. The kernel binds the tool key to the run's identity, so its runs
//! never meet there; a lifecycle that sends the bare key lets them.
//!
//! Each run slot keeps what the tool did with that run's own requests ([`RunSlot::tool`]:
//! the world's truth about the run's calls, by which EFF-1 and BAT-4 judge them) and the tool
//! key each of its keys went out under ([`RunSlot::tool_keys`]). What the tool answers a run
//! is its own records joined with those of every other key, of any run, sent under the same
//! tool key ([`World::ledger`]); an answer the run's own records alone would not give came
//! from another run's record, and breaks KEY-3. A key is kept under the tool key of its first
//! dispatch: a lifecycle that sends one key under two tool keys is judged by the first.

use super::{ToolMsg, ToolOutcome, ToolSide, World, WorldState, KEYS};
use crate::Lifecycle;
use resumable_kernel::Digest;

impl ToolSide {
    /// The records of key `from`, moved to the bits of key `to`.
    fn moved(self, from: usize, to: usize) -> ToolSide {
        let shift = |bits: u16| {
            let of_key = (bits >> (usize::from(super::ATTEMPTS) * from)) & 0xf;
            of_key << (usize::from(super::ATTEMPTS) * to)
        };
        ToolSide {
            committed: shift(self.committed),
            fenced: shift(self.fenced),
            denied_commit: shift(self.denied_commit),
        }
    }

    fn join(self, other: ToolSide) -> ToolSide {
        ToolSide {
            committed: self.committed | other.committed,
            fenced: self.fenced | other.fenced,
            denied_commit: self.denied_commit | other.denied_commit,
        }
    }
}

// A key's four attempts fit the nibble `moved` shifts.
const _: () = assert!(super::ATTEMPTS == 4 && KEYS * 4 <= u16::BITS as usize);

impl<L: Lifecycle> World<L> {
    /// The tool's records as run `r`'s keys see them: the run's own, joined with those of
    /// every other key of any run sent under the same tool key, and with the commits the run
    /// left out of a per-run reduction made under it ([`RunSlot::foreign`]).
    pub(super) fn ledger(&self, state: &WorldState<L::Run>, r: usize) -> ToolSide {
        let Some(slot) = state.runs.get(r) else {
            return ToolSide::default();
        };
        let mut ledger = slot.tool.join(slot.foreign);
        for (k, tool_key) in slot.tool_keys.iter().enumerate() {
            let Some(tool_key) = tool_key else {
                continue;
            };
            for (r2, other) in state.runs.iter().enumerate() {
                for (k2, key2) in other.tool_keys.iter().enumerate() {
                    if (r2, k2) != (r, k) && *key2 == Some(*tool_key) {
                        ledger = ledger.join(other.tool.moved(k2, k));
                    }
                }
            }
        }
        ledger
    }

    /// What the tool does with `msg`, given the records it reads.
    pub(super) fn outcome_on(&self, records: ToolSide, msg: &ToolMsg) -> ToolOutcome {
        let Some(key) = self.cast.key_of(msg.call) else {
            return ToolOutcome::Refuses;
        };
        let bit = ToolSide::bit(key, msg.attempt);
        if self.config.query_fences && records.fenced & bit != 0 {
            ToolOutcome::Refuses
        } else if self.config.dedupes && records.committed & bit != 0 {
            ToolOutcome::Dedupes
        } else {
            ToolOutcome::Commits
        }
    }

    /// Whether `tool_key` is run `r`'s key `k` bound to the run's identity, as KEY-3 binds it.
    pub(super) fn bound(&self, r: usize, k: usize, tool_key: &Digest) -> bool {
        let identity = usize::from(self.config.identity) + r;
        (self.cast.bound_keys.get(identity)).and_then(|keys| keys.get(k)) == Some(tool_key)
    }

    /// The witness of KEY-3's partner: the tool handles run `r`'s request under key `k`
    /// after another run's request under the same key committed. In a per-run reduction's
    /// world (`Config::foreign_commits`), any request the tool handles: the run left out makes
    /// the same calls, under the same keys, and commits each on a path with no fault and no
    /// tick, before this run starts, so the whole world reaches the state with that commit
    /// first (spec/check-output.md, "The per-run reduction").
    pub(super) fn met_at_tool(&self, state: &WorldState<L::Run>, r: usize, k: u8) -> bool {
        let every = ToolSide::every_attempt(k);
        let other =
            (state.runs.iter().enumerate()).any(|(r2, s)| r2 != r && s.tool.committed & every != 0);
        other || self.config.foreign_commits > 0
    }

    /// Whether run `r`'s records at the tool are its own alone: no other key, of any run, went
    /// out under one of its tool keys, and no record of a run left out can be made under one
    /// (the partial-order reduction's condition for a quiet run, `world/reduce.rs`).
    pub(super) fn ledger_alone(&self, state: &WorldState<L::Run>, r: usize) -> bool {
        let Some(slot) = state.runs.get(r) else {
            return true;
        };
        let shared = slot.tool_keys.iter().enumerate().any(|(k, t)| {
            t.is_some_and(|t| {
                (state.runs.iter().enumerate()).any(|(r2, other)| {
                    (other.tool_keys.iter().enumerate())
                        .any(|(k2, t2)| (r2, k2) != (r, k) && *t2 == Some(t))
                })
            })
        });
        !shared && self.foreign_records(state, r).is_empty()
    }

    /// The records the run left out of a per-run reduction's world may make now under run
    /// `r`'s tool keys (`Config::foreign_commits`): under a tool key not bound to the run's
    /// identity (a bound one is no other run's), at an attempt the run sent, while the run
    /// has not ended and the tool holds neither a commit nor a fence there: a commit, and
    /// with a fencing query a fence. Each is `(key, attempt, fence)`.
    pub(super) fn foreign_records(
        &self,
        state: &WorldState<L::Run>,
        r: usize,
    ) -> Vec<(u8, u8, bool)> {
        let mut out = Vec::new();
        let Some(slot) = state.runs.get(r) else {
            return out;
        };
        if state.budgets.foreign == 0 || slot.run.view.ending.is_some() {
            return out;
        }
        let ledger = self.ledger(state, r);
        for (k, tool_key) in slot.tool_keys.iter().enumerate() {
            let (Some(tool_key), Ok(key)) = (tool_key, u8::try_from(k)) else {
                continue;
            };
            if self.bound(r, k, tool_key) {
                continue;
            }
            for attempt in 0..super::ATTEMPTS {
                let bit = ToolSide::bit(key, attempt);
                let taken = (ledger.committed | ledger.fenced) & bit != 0;
                if slot.dispatched & bit != 0 && !taken {
                    out.push((key, attempt, false));
                    if self.config.query_fences {
                        out.push((key, attempt, true));
                    }
                }
            }
        }
        out
    }
}
