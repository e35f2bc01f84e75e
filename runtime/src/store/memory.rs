//! A store in one process's memory, keeping the same contract as the durable ones: one
//! commit is all or nothing, the compare-and-set refuses a writer that started from another
//! revision or log position, a request is answered once. For tests that need no files, and
//! for trying the driver in a single process. Nothing survives the process.
//!
//! Clones share one store, as two connections to one database would: two drivers, each with
//! its clone, race on the same runs.

use super::{
    status_of, wake_at, Answer, Answered, Cas, Commit, Inbox, NewRun, Request, Row, RunKey, Store,
    StoreError, Summary,
};
use resumable_audit::history::History;
use resumable_kernel::{Call, Digest, Prior};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A run as the memory store keeps it: its row, its log and its call history (the audit
/// crate's in-memory index, which keeps a key's first arguments and its spent mark as the
/// SQL stores' history table does).
#[derive(Clone, Debug)]
struct Stored {
    row: Row,
    log: Vec<Vec<u8>>,
    history: History,
}

#[derive(Debug, Default)]
struct Memory {
    runs: BTreeMap<RunKey, Stored>,
    /// Every request, in the order submitted: request `n` is at index `n - 1`.
    inbox: Vec<Inbox>,
}

/// The in-memory store; clones share it.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    shared: Arc<Mutex<Memory>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn memory(&self) -> Result<MutexGuard<'_, Memory>, StoreError> {
        // Every write checks first and changes after, so a writer that panicked left the
        // memory whole; still, say so rather than read on.
        self.shared.lock().map_err(|_| {
            StoreError::Backend("memory: a writer panicked while holding the store".to_string())
        })
    }
}

impl Store for MemoryStore {
    fn create(&mut self, new: &NewRun<'_>) -> Result<Cas, StoreError> {
        let mut memory = self.memory()?;
        if memory.runs.contains_key(new.key) {
            return Ok(Cas::Conflict);
        }
        let row = Row {
            key: new.key.clone(),
            run: *new.run,
            tail: new.tail,
            checkpoint: None,
            program: new.program.to_string(),
            pc: 0,
            lease: Default::default(),
            resource_version: new.resource_version,
        };
        let stored = Stored {
            row,
            log: vec![new.header.to_vec()],
            history: History::new(),
        };
        memory.runs.insert(new.key.clone(), stored);
        Ok(Cas::Done)
    }

    fn load(&mut self, key: &RunKey) -> Result<Option<Row>, StoreError> {
        Ok(self.memory()?.runs.get(key).map(|s| s.row.clone()))
    }

    fn commit(&mut self, c: &Commit<'_>) -> Result<Cas, StoreError> {
        let mut memory = self.memory()?;
        let Memory { runs, inbox } = &mut *memory;
        let Some(stored) = runs.get_mut(c.key) else {
            return Ok(Cas::Conflict);
        };
        if stored.row.run.revision() != c.expect.revision || stored.row.tail.seq != c.expect.seq {
            return Ok(Cas::Conflict);
        }
        // The request's answer is checked before anything changes: all or nothing.
        let answered = match c.consumed {
            Some(consumed) => {
                let slot = consumed
                    .request
                    .checked_sub(1)
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| inbox.get_mut(i))
                    .filter(|r| r.answer.is_none());
                match slot {
                    Some(request) => Some((request, consumed.answer)),
                    None => return Ok(Cas::Conflict),
                }
            }
            None => None,
        };
        if let Some((request, answer)) = answered {
            request.answer = Some(Answered {
                answer,
                seq: c.tail.seq,
            });
        }
        let row = &mut stored.row;
        row.run = *c.run;
        row.tail = c.tail;
        row.checkpoint = c.checkpoint.copied();
        row.pc = c.pc;
        row.lease = c.lease.clone();
        stored.log.push(c.line.to_vec());
        for entry in c.history {
            stored.history.apply(entry);
        }
        Ok(Cas::Done)
    }

    fn scan(&mut self, all: bool) -> Result<Vec<Summary>, StoreError> {
        let memory = self.memory()?;
        let mut pending: BTreeMap<&RunKey, u32> = BTreeMap::new();
        for request in memory.inbox.iter().filter(|r| r.answer.is_none()) {
            *pending.entry(&request.key).or_default() += 1;
        }
        let list = memory
            .runs
            .values()
            .map(|s| Summary {
                key: s.row.key.clone(),
                status: status_of(&s.row.run),
                wake_at: wake_at(&s.row.run),
                lease: s.row.lease.clone(),
                pending: pending.get(&s.row.key).copied().unwrap_or(0),
            })
            .filter(|s| all || !s.status.is_ended() || s.pending > 0)
            .collect();
        Ok(list)
    }

    fn submit_sealed(
        &mut self,
        key: &RunKey,
        party: &str,
        at_ms: u64,
        request: &Request,
        seal: Option<Digest>,
    ) -> Result<u64, StoreError> {
        let mut memory = self.memory()?;
        let id = memory.inbox.len() as u64 + 1;
        memory.inbox.push(Inbox {
            id,
            key: key.clone(),
            party: party.to_string(),
            submitted_ms: at_ms,
            request: *request,
            answer: None,
            seal,
        });
        Ok(id)
    }

    fn refuse_unauthenticated(&mut self, key: &RunKey, id: u64) -> Result<Cas, StoreError> {
        let mut memory = self.memory()?;
        let found = memory
            .inbox
            .iter_mut()
            .find(|r| r.id == id && &r.key == key && r.answer.is_none());
        Ok(match found {
            Some(request) => {
                request.answer = Some(Answered {
                    answer: Answer::Unauthenticated,
                    seq: 0,
                });
                Cas::Done
            }
            None => Cas::Conflict,
        })
    }

    fn inbox(&mut self, key: &RunKey, pending: bool) -> Result<Vec<Inbox>, StoreError> {
        let memory = self.memory()?;
        let requests = memory
            .inbox
            .iter()
            .filter(|r| &r.key == key && (!pending || r.answer.is_none()))
            .cloned()
            .collect();
        Ok(requests)
    }

    fn log(&mut self, key: &RunKey) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self
            .memory()?
            .runs
            .get(key)
            .map(|s| s.log.clone())
            .unwrap_or_default())
    }

    fn prior(&mut self, key: &RunKey, call: &Call) -> Result<Prior, StoreError> {
        let memory = self.memory()?;
        Ok(memory
            .runs
            .get(key)
            .map_or(Prior::NONE, |stored| stored.history.prior(call)))
    }
}
