//! The tool service: a process of its own that carries out tool calls against a durable
//! ledger, after a seeded random delay, whether or not the caller is still there to hear the
//! answer. Its ledger is the evidence the torture reads: every commit, every fence.
//!
//! The ledger is a file of JSON lines, appended and fsync'd before any answer leaves. A line
//! cut short by a crash of the service was never answered, and is ignored when the ledger is
//! read back.

use super::{ToolReply, ToolRequest};
use crate::program::tool_spec;
use crate::rng::Rng;
use resumable_kernel::Digest;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One line of the ledger.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum Entry {
    /// A call committed.
    Commit {
        /// The tool.
        tool: String,
        /// The key.
        key: String,
        /// The attempt it came with.
        attempt: u8,
        /// The result.
        result: Digest,
    },
    /// The status query fenced a key and attempt: a late request under them cannot commit.
    Fence {
        /// The tool.
        tool: String,
        /// The key.
        key: String,
        /// The attempt.
        attempt: u8,
    },
}

/// How the service behaves.
#[derive(Clone, Debug)]
pub struct Config {
    /// The ledger file.
    pub ledger: PathBuf,
    /// Where to listen, e.g. `127.0.0.1:0`.
    pub listen: String,
    /// The seed of the delays and of the unknown answers.
    pub seed: u64,
    /// Each dispatch commits after a delay in `0..=max_delay_ms`.
    pub max_delay_ms: u64,
    /// The share of status queries, in percent, answered "unknown" (a status backend that
    /// cannot always tell).
    pub unknown_percent: u64,
}

/// The ledger in memory, and its file.
struct Ledger {
    file: File,
    /// Commits per key: how many, and the first result.
    commits: HashMap<String, (u32, Digest)>,
    /// Committed (key, attempt) pairs.
    attempts: HashSet<(String, u8)>,
    fences: HashSet<(String, u8)>,
}

/// Reads a ledger back: its complete lines, in order.
pub fn read_ledger(path: &Path) -> io::Result<Vec<Entry>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for line in BufReader::new(file).split(b'\n') {
        let line = line?;
        // A torn last line was never acknowledged; any other bad line is corruption.
        match serde_json::from_slice(&line) {
            Ok(entry) => out.push(entry),
            Err(_) => break,
        }
    }
    Ok(out)
}

/// What a ledger shows: commits per key.
pub fn commits_per_key(entries: &[Entry]) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for e in entries {
        if let Entry::Commit { key, .. } = e {
            *out.entry(key.clone()).or_insert(0) += 1;
        }
    }
    out
}

impl Ledger {
    fn open(path: &Path) -> io::Result<Ledger> {
        let entries = read_ledger(path)?;
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        // A torn last line (the service died writing it) was never answered: cut it off, so
        // the next entry starts on a line of its own. The service wrote every entry as serde_json
        // writes it, so the complete lines are exactly the entries, re-encoded.
        let mut valid = 0;
        for e in &entries {
            valid += serde_json::to_vec(e)?.len() as u64 + 1;
        }
        if file.metadata()?.len() > valid {
            file.set_len(valid)?;
            file.sync_data()?;
        }
        let mut ledger = Ledger {
            file,
            commits: HashMap::new(),
            attempts: HashSet::new(),
            fences: HashSet::new(),
        };
        for e in entries {
            ledger.remember(&e);
        }
        Ok(ledger)
    }

    fn remember(&mut self, entry: &Entry) {
        match entry {
            Entry::Commit {
                key,
                attempt,
                result,
                ..
            } => {
                self.commits.entry(key.clone()).or_insert((0, *result)).0 += 1;
                self.attempts.insert((key.clone(), *attempt));
            }
            Entry::Fence { key, attempt, .. } => {
                self.fences.insert((key.clone(), *attempt));
            }
        }
    }

    fn append(&mut self, entry: Entry) -> io::Result<()> {
        let mut line = serde_json::to_vec(&entry)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()?;
        self.remember(&entry);
        Ok(())
    }

    /// A dispatch, by the tool's contract.
    fn dispatch(
        &mut self,
        tool: &str,
        key: &str,
        attempt: u8,
        args: Digest,
    ) -> io::Result<ToolReply> {
        let Some(spec) = tool_spec(tool) else {
            return Ok(ToolReply::Refused {
                why: format!("no tool {tool}"),
            });
        };
        if spec.query_fences && self.fences.contains(&(key.to_string(), attempt)) {
            return Ok(ToolReply::Fenced);
        }
        if spec.dedupes {
            if let Some((_, result)) = self.commits.get(key) {
                return Ok(ToolReply::Committed { result: *result });
            }
        }
        let n = self.commits.get(key).map_or(0, |c| c.0);
        let result = Digest::of(format!("{tool}|{key}|{attempt}|{n}|{args}").as_bytes());
        self.append(Entry::Commit {
            tool: tool.to_string(),
            key: key.to_string(),
            attempt,
            result,
        })?;
        Ok(ToolReply::Committed { result })
    }

    /// The status query, by the tool's contract.
    fn query(
        &mut self,
        tool: &str,
        key: &str,
        attempt: u8,
        unknown: bool,
    ) -> io::Result<ToolReply> {
        let Some(spec) = tool_spec(tool) else {
            return Ok(ToolReply::Refused {
                why: format!("no tool {tool}"),
            });
        };
        // A status backend that cannot always tell: "unknown" says nothing about the call,
        // whether it committed or not, and never fences.
        if unknown {
            return Ok(ToolReply::Unknown);
        }
        let committed = if spec.dedupes {
            self.commits.get(key).map(|c| c.1)
        } else if self.attempts.contains(&(key.to_string(), attempt)) {
            self.commits.get(key).map(|c| c.1)
        } else {
            None
        };
        if let Some(result) = committed {
            return Ok(ToolReply::Committed { result });
        }
        if spec.query_fences {
            self.append(Entry::Fence {
                tool: tool.to_string(),
                key: key.to_string(),
                attempt,
            })?;
        }
        Ok(ToolReply::NotCommitted)
    }
}

struct Shared {
    ledger: Mutex<Ledger>,
    rng: Mutex<Rng>,
    config: Config,
}

/// Runs the service until the process is stopped. Prints `listening on ADDRESS` on stdout
/// once it accepts connections.
pub fn serve(config: Config) -> io::Result<()> {
    let listener = TcpListener::bind(&config.listen)?;
    let shared = Arc::new(Shared {
        ledger: Mutex::new(Ledger::open(&config.ledger)?),
        rng: Mutex::new(Rng::new(config.seed)),
        config,
    });
    println!("listening on {}", listener.local_addr()?);
    io::stdout().flush()?;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            let _ = connection(&shared, stream);
        });
    }
    Ok(())
}

/// Serves one connection: each request in turn. A dispatch commits after its delay even if
/// the caller has gone: the answer is written after the commit, and a failed write is ignored.
fn connection(shared: &Shared, stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    for line in BufReader::new(stream).lines() {
        let line = line?;
        let reply = match serde_json::from_str::<ToolRequest>(&line) {
            Err(e) => ToolReply::Refused {
                why: format!("malformed request: {e}"),
            },
            Ok(request) => handle(shared, &request)?,
        };
        let mut bytes = serde_json::to_vec(&reply)?;
        bytes.push(b'\n');
        if out.write_all(&bytes).is_err() {
            return Ok(()); // the caller is gone; what it asked for is done all the same
        }
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn handle(shared: &Shared, request: &ToolRequest) -> io::Result<ToolReply> {
    match request {
        ToolRequest::Dispatch {
            tool,
            key,
            attempt,
            args,
        } => {
            let delay = lock(&shared.rng).below(shared.config.max_delay_ms + 1);
            std::thread::sleep(Duration::from_millis(delay));
            lock(&shared.ledger).dispatch(tool, key, *attempt, *args)
        }
        ToolRequest::Query { tool, key, attempt } => {
            let unknown = lock(&shared.rng).percent(shared.config.unknown_percent);
            lock(&shared.ledger).query(tool, key, *attempt, unknown)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(name: &str) -> (Ledger, PathBuf) {
        let path =
            std::env::temp_dir().join(format!("resumable-ledger-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        (Ledger::open(&path).unwrap(), path)
    }

    #[test]
    fn a_deduping_tool_commits_a_key_once_and_answers_a_repeat_with_the_first_result() {
        let (mut l, path) = ledger("dedupe");
        let a = l.dispatch("charge:card", "k", 0, Digest::of(b"x")).unwrap();
        let b = l.dispatch("charge:card", "k", 0, Digest::of(b"x")).unwrap();
        assert_eq!(a, b);
        assert_eq!(commits_per_key(&read_ledger(&path).unwrap())["k"], 1);
        assert_eq!(l.query("charge:card", "k", 0, false).unwrap(), a);
    }

    #[test]
    fn a_fencing_query_makes_a_late_request_fail_and_the_next_attempt_commit() {
        let (mut l, path) = ledger("fence");
        assert_eq!(
            l.query("notify:email", "k", 0, false).unwrap(),
            ToolReply::NotCommitted
        );
        assert_eq!(
            l.dispatch("notify:email", "k", 0, Digest::of(b"x"))
                .unwrap(),
            ToolReply::Fenced
        );
        assert!(matches!(
            l.dispatch("notify:email", "k", 1, Digest::of(b"x"))
                .unwrap(),
            ToolReply::Committed { .. }
        ));
        // Read back after a restart: the fence and the commit are both there.
        let mut again = Ledger::open(&path).unwrap();
        assert_eq!(
            again
                .dispatch("notify:email", "k", 0, Digest::of(b"x"))
                .unwrap(),
            ToolReply::Fenced
        );
        assert_eq!(commits_per_key(&read_ledger(&path).unwrap())["k"], 1);
    }

    #[test]
    fn a_tool_that_does_not_dedupe_commits_every_request_and_an_unknown_answer_never_fences() {
        let (mut l, path) = ledger("nodedupe");
        assert_eq!(
            l.query("notify:email", "k", 0, true).unwrap(),
            ToolReply::Unknown
        );
        l.dispatch("notify:email", "k", 0, Digest::of(b"x"))
            .unwrap();
        l.dispatch("notify:email", "k", 0, Digest::of(b"x"))
            .unwrap();
        assert_eq!(commits_per_key(&read_ledger(&path).unwrap())["k"], 2);
        assert!(matches!(
            l.dispatch("nope", "k", 0, Digest::of(b"x")).unwrap(),
            ToolReply::Refused { .. }
        ));
    }

    #[test]
    fn a_torn_last_line_was_never_answered_and_is_ignored() {
        let (mut l, path) = ledger("torn");
        l.dispatch("charge:card", "k", 0, Digest::of(b"x")).unwrap();
        drop(l);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"entry\":\"commit\",\"tool\":\"cha")
            .unwrap();
        assert_eq!(read_ledger(&path).unwrap().len(), 1);
    }
}
