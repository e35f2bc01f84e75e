//! The tool service: a process of its own that carries out tool calls against a durable
//! ledger, after a seeded random delay, whether or not the caller is still there to hear the
//! answer. Its ledger is the evidence the torture reads: every commit, every fence.
//!
//! The ledger is a file of JSON lines, appended and fsync'd before any answer leaves. A line
//! cut short by a crash of the service was never answered, and is ignored when the ledger is
//! read back.

use super::{ToolReply, ToolRequest, NOT_AUTHENTICATED};
use crate::auth::SharedKey;
use crate::bounded;
use crate::program::tool_spec;
use crate::rng::Rng;
use resumable_kernel::Digest;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Write};
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
        /// The resource the call acted on, whose version this commit moved by one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource: Option<String>,
    },
    /// An outside writer moved a resource by one version.
    Moved {
        /// The resource.
        resource: String,
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
    /// The key a client must prove it holds before any request; `None` serves anyone who
    /// can connect.
    pub key: Option<SharedKey>,
}

/// The ledger in memory, and its file.
struct Ledger {
    file: File,
    /// Commits per key: how many, and the first result.
    commits: HashMap<String, (u32, Digest)>,
    /// Committed (key, attempt) pairs.
    attempts: HashSet<(String, u8)>,
    fences: HashSet<(String, u8)>,
    /// Each resource's version: the commits that acted on it and the outside moves.
    versions: HashMap<String, u64>,
}

/// A ledger read back: its entries, in order, and the torn last line, if there is one.
#[derive(Clone, Debug, Default)]
pub struct Read {
    /// The entries of its whole lines.
    pub entries: Vec<Entry>,
    /// The length of its whole lines, in bytes: where a torn last line starts.
    pub whole_bytes: u64,
    /// The bytes of a last line without its LF (the service died writing it), if any.
    pub torn_bytes: u64,
}

/// Why a ledger cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The file could not be read or written.
    #[error("ledger {path}: {source}")]
    Io {
        /// The ledger.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// A whole line is not an entry: the ledger was edited or damaged, and the service
    /// refuses it rather than forget what it committed.
    #[error(
        "ledger {path}: line {line} is not a ledger entry ({why}); the ledger is damaged: \
             repair or restore it, the service does not start on it"
    )]
    Corrupt {
        /// The ledger.
        path: String,
        /// The line's number, from 1.
        line: u64,
        /// Why.
        why: String,
    },
    /// Another tool service holds the ledger.
    #[error(
        "ledger {path} is held by another tool service (its lock is taken); \
             one service per ledger"
    )]
    Held {
        /// The ledger.
        path: String,
    },
}

impl From<LedgerError> for io::Error {
    fn from(e: LedgerError) -> io::Error {
        io::Error::other(e.to_string())
    }
}

/// Reads a ledger back. Every whole line must be an entry; only the last line may be torn
/// (no LF: the service died writing it, and it was never answered).
pub fn read(path: &Path) -> Result<Read, LedgerError> {
    let shown = path.display().to_string();
    let io_error = |source| LedgerError::Io {
        path: shown.clone(),
        source,
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Read::default()),
        Err(e) => return Err(io_error(e)),
    };
    let mut reader = BufReader::new(file);
    let mut out = Read::default();
    let mut buf = Vec::new();
    for number in 1.. {
        let line = bounded::read_line(&mut reader, bounded::TOOL_LINE_BYTES, &mut buf);
        let corrupt = |why: String| LedgerError::Corrupt {
            path: shown.clone(),
            line: number,
            why,
        };
        match line {
            Ok(bounded::Line::Whole) => {
                let entry = serde_json::from_slice(&buf[..buf.len() - 1])
                    .map_err(|e| corrupt(e.to_string()))?;
                out.entries.push(entry);
                out.whole_bytes += buf.len() as u64;
            }
            Ok(bounded::Line::Cut(n)) => {
                out.torn_bytes = n as u64;
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidData => return Err(corrupt(e.to_string())),
            Err(e) => return Err(io_error(e)),
        }
    }
    Ok(out)
}

/// Reads a ledger back: the entries of its whole lines, in order (see [`read`]).
pub fn read_ledger(path: &Path) -> io::Result<Vec<Entry>> {
    Ok(read(path)?.entries)
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
    /// Opens the ledger for one service: takes its lock (a second service on it is
    /// refused), reads it back (a damaged line is refused, naming it) and cuts a torn last
    /// line, saying so on stderr.
    fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let shown = path.display().to_string();
        let io_error = |source| LedgerError::Io {
            path: shown.clone(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io_error)?;
        // The lock lives as long as the file stays open, that is, as long as the service;
        // the kernel releases it when the process dies, however it dies.
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LedgerError::Held { path: shown })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_error(e)),
        }
        let read = read(path)?;
        if read.torn_bytes > 0 {
            // A torn last line (the service died writing it) was never answered: cut it off,
            // so the next entry starts on a line of its own.
            eprintln!(
                "ledger {shown}: cut a torn last line of {} bytes at byte {} (written by a \
                 service that died before answering it)",
                read.torn_bytes, read.whole_bytes
            );
            file.set_len(read.whole_bytes).map_err(io_error)?;
            file.sync_data().map_err(io_error)?;
        }
        let mut ledger = Ledger {
            file,
            commits: HashMap::new(),
            attempts: HashSet::new(),
            fences: HashSet::new(),
            versions: HashMap::new(),
        };
        for e in read.entries {
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
                resource,
                ..
            } => {
                self.commits.entry(key.clone()).or_insert((0, *result)).0 += 1;
                self.attempts.insert((key.clone(), *attempt));
                if let Some(r) = resource {
                    *self.versions.entry(r.clone()).or_insert(0) += 1;
                }
            }
            Entry::Moved { resource } => {
                *self.versions.entry(resource.clone()).or_insert(0) += 1;
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
        resource: Option<&str>,
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
            resource: resource.map(str::to_string),
        })?;
        Ok(ToolReply::Committed { result })
    }

    /// A resource's version now.
    fn version(&self, resource: &str) -> ToolReply {
        ToolReply::Version {
            version: self.versions.get(resource).copied().unwrap_or(0),
        }
    }

    /// An outside writer's move of a resource, durable before it is answered.
    fn moved(&mut self, resource: &str) -> io::Result<ToolReply> {
        self.append(Entry::Moved {
            resource: resource.to_string(),
        })?;
        Ok(self.version(resource))
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
    // The ledger first: a service refused its ledger never listens.
    let ledger = Ledger::open(&config.ledger)?;
    let listener = TcpListener::bind(&config.listen)?;
    let shared = Arc::new(Shared {
        ledger: Mutex::new(ledger),
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
/// A request line longer than [`bounded::TOOL_LINE_BYTES`] is refused and the connection
/// closed, having read no more than the limit of it.
fn connection(shared: &Shared, stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    if let Some(key) = &shared.config.key {
        if let Err(why) = authenticate(key, &mut reader, &mut out, &mut line)? {
            let refused = ToolReply::Refused {
                why: format!("{NOT_AUTHENTICATED}: {why}"),
            };
            let _ = write_reply(&mut out, &refused);
            return Ok(());
        }
    }
    loop {
        let reply = match bounded::read_line(&mut reader, bounded::TOOL_LINE_BYTES, &mut line) {
            Ok(bounded::Line::Whole) => {
                match serde_json::from_slice::<ToolRequest>(&line[..line.len() - 1]) {
                    Err(e) => ToolReply::Refused {
                        why: format!("malformed request: {e}"),
                    },
                    Ok(request) => handle(shared, &request)?,
                }
            }
            // The caller hung up, perhaps in the middle of a line: nothing to answer.
            Ok(bounded::Line::Cut(_)) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                let refused = ToolReply::Refused {
                    why: format!("request refused: {e}"),
                };
                let _ = write_reply(&mut out, &refused);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if write_reply(&mut out, &reply).is_err() {
            return Ok(()); // the caller is gone; what it asked for is done all the same
        }
    }
}

/// Sends a fresh challenge and reads the client's answer: `Ok(Err(why))` if it does not
/// prove the client holds `key`.
fn authenticate(
    key: &SharedKey,
    reader: &mut BufReader<TcpStream>,
    out: &mut TcpStream,
    line: &mut Vec<u8>,
) -> io::Result<Result<(), String>> {
    let challenge = Digest(crate::auth::random().map_err(io::Error::other)?);
    write_reply(out, &ToolReply::Challenge { challenge })?;
    Ok(
        match bounded::read_line(reader, bounded::TOOL_LINE_BYTES, line) {
            Ok(bounded::Line::Whole) => {
                match serde_json::from_slice::<ToolRequest>(&line[..line.len() - 1]) {
                    Ok(ToolRequest::Auth { proof }) if key.verify(&challenge, &proof) => Ok(()),
                    Ok(ToolRequest::Auth { .. }) => Err(
                        "the proof does not answer the challenge under this service's key"
                            .to_string(),
                    ),
                    _ => Err("answer the challenge first, with the service's key".to_string()),
                }
            }
            Ok(bounded::Line::Cut(_)) => Err("the client hung up".to_string()),
            Err(e) => Err(e.to_string()),
        },
    )
}

fn write_reply(out: &mut impl Write, reply: &ToolReply) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(reply)?;
    bytes.push(b'\n');
    out.write_all(&bytes)
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
            resource,
        } => {
            let delay = lock(&shared.rng).below(shared.config.max_delay_ms + 1);
            std::thread::sleep(Duration::from_millis(delay));
            lock(&shared.ledger).dispatch(tool, key, *attempt, *args, resource.as_deref())
        }
        ToolRequest::Version { resource } => Ok(lock(&shared.ledger).version(resource)),
        ToolRequest::Move { resource } => lock(&shared.ledger).moved(resource),
        ToolRequest::Query { tool, key, attempt } => {
            let unknown = lock(&shared.rng).percent(shared.config.unknown_percent);
            lock(&shared.ledger).query(tool, key, *attempt, unknown)
        }
        ToolRequest::Auth { .. } => Ok(ToolReply::Refused {
            why: "no challenge to answer".to_string(),
        }),
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
        let a = l
            .dispatch("charge:card", "k", 0, Digest::of(b"x"), None)
            .unwrap();
        let b = l
            .dispatch("charge:card", "k", 0, Digest::of(b"x"), None)
            .unwrap();
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
            l.dispatch("notify:email", "k", 0, Digest::of(b"x"), None)
                .unwrap(),
            ToolReply::Fenced
        );
        assert!(matches!(
            l.dispatch("notify:email", "k", 1, Digest::of(b"x"), None)
                .unwrap(),
            ToolReply::Committed { .. }
        ));
        // Read back after a restart: the fence and the commit are both there.
        drop(l);
        let mut again = Ledger::open(&path).unwrap();
        assert_eq!(
            again
                .dispatch("notify:email", "k", 0, Digest::of(b"x"), None)
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
        l.dispatch("notify:email", "k", 0, Digest::of(b"x"), None)
            .unwrap();
        l.dispatch("notify:email", "k", 0, Digest::of(b"x"), None)
            .unwrap();
        assert_eq!(commits_per_key(&read_ledger(&path).unwrap())["k"], 2);
        assert!(matches!(
            l.dispatch("nope", "k", 0, Digest::of(b"x"), None).unwrap(),
            ToolReply::Refused { .. }
        ));
    }

    #[test]
    fn a_torn_last_line_was_never_answered_and_is_cut_on_open() {
        let (mut l, path) = ledger("torn");
        l.dispatch("charge:card", "k", 0, Digest::of(b"x"), None)
            .unwrap();
        drop(l);
        let whole = std::fs::metadata(&path).unwrap().len();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"entry\":\"commit\",\"tool\":\"cha")
            .unwrap();
        let read = read(&path).unwrap();
        assert_eq!((read.entries.len(), read.whole_bytes), (1, whole));
        assert_eq!(read.torn_bytes, 29);
        let mut again = Ledger::open(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
        again
            .dispatch("charge:card", "k2", 0, Digest::of(b"x"), None)
            .unwrap();
        assert_eq!(read_ledger(&path).unwrap().len(), 2);
    }

    /// A ledger of `n` commits of keys `k0`, `k1`...
    fn ledger_of(name: &str, n: u32) -> PathBuf {
        let (mut l, path) = ledger(name);
        for i in 0..n {
            l.dispatch("charge:card", &format!("k{i}"), 0, Digest::of(b"x"), None)
                .unwrap();
        }
        path
    }

    #[test]
    fn a_damaged_line_in_the_middle_is_refused_naming_it_and_nothing_is_cut() {
        let path = ledger_of("damaged", 280);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[9] = "{\"entry\":\"commit\",\"tool\":\"charge:card\",\"key\":";
        let edited = lines.join("\n") + "\n";
        std::fs::write(&path, &edited).unwrap();
        let e = Ledger::open(&path)
            .err()
            .expect("a damaged ledger is refused");
        assert!(matches!(e, LedgerError::Corrupt { line: 10, .. }), "{e}");
        assert!(
            e.to_string().contains("line 10 is not a ledger entry"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), edited);
    }

    #[test]
    fn a_valid_line_spaced_differently_is_kept_whole() {
        let path = ledger_of("spaced", 3);
        let text = std::fs::read_to_string(&path).unwrap();
        let spaced = text.replacen("\"entry\":\"commit\"", "\"entry\" :  \"commit\"", 1);
        std::fs::write(&path, &spaced).unwrap();
        let mut l = Ledger::open(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), spaced);
        // The key of the spaced line is still committed: a repeat answers the first result.
        assert_eq!(l.commits["k0"].0, 1);
        l.dispatch("charge:card", "k0", 0, Digest::of(b"x"), None)
            .unwrap();
        assert_eq!(commits_per_key(&read_ledger(&path).unwrap())["k0"], 1);
    }

    #[test]
    fn a_second_service_on_a_held_ledger_is_refused() {
        let (first, path) = ledger("held");
        let e = Ledger::open(&path).err().expect("the ledger is held");
        assert!(matches!(e, LedgerError::Held { .. }), "{e}");
        assert!(
            e.to_string().contains("held by another tool service"),
            "{e}"
        );
        drop(first);
        assert!(
            Ledger::open(&path).is_ok(),
            "free again once the first is gone"
        );
    }

    #[test]
    fn a_request_line_longer_than_the_limit_is_refused_unread() {
        let path = ledger_of("long", 0);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            ledger: Mutex::new(Ledger::open(&path).unwrap()),
            rng: Mutex::new(Rng::new(0)),
            config: Config {
                ledger: path,
                listen: address.to_string(),
                seed: 0,
                max_delay_ms: 0,
                unknown_percent: 0,
                key: None,
            },
        });
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            connection(&shared, stream)
        });
        let mut client = TcpStream::connect(address).unwrap();
        // One byte past the limit, with no line end: the service answers having read no
        // further, and closes. (A longer line would be refused the same; sending exactly
        // this much keeps the close orderly, with nothing left unread to reset it.)
        client
            .write_all(&vec![b'x'; bounded::TOOL_LINE_BYTES + 1])
            .unwrap();
        let mut reply = String::new();
        let _ = io::Read::read_to_string(&mut client, &mut reply);
        assert!(reply.contains("longer than 16384 bytes"), "{reply}");
        server.join().unwrap().unwrap();
    }
}
