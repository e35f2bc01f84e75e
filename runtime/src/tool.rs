//! Tools as the outside world: the wire protocol of the tool service, a client for it, and
//! an in-memory stand-in for benchmarks.
//!
//! The service ([`service`]) runs in its own process with its own durable ledger, so a
//! request sent by a worker that is then killed still commits later. It honours each tool's
//! contract ([`crate::program::TOOLS`]): a deduping tool commits a key at most once and
//! answers a repeat with the first result; a fencing tool's status query, once it answers
//! "not committed" for a key and attempt, makes a late request under them fail.

use crate::auth::SharedKey;
use crate::bounded;
use resumable_kernel::{Digest, QueryAnswer};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{self, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

pub mod service;

/// A request to the tool service: one JSON line.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ToolRequest {
    /// Carry out the call: commit it (or answer as the contract says).
    Dispatch {
        /// The tool.
        tool: String,
        /// The key the tool sees (namespaced by the run, see `lifecycle::tool_key`).
        key: String,
        /// The attempt.
        attempt: u8,
        /// The argument digest.
        args: Digest,
        /// The resource the call acts on, whose version its commit moves; absent from a
        /// client of an earlier release (the commit then moves none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resource: Option<String>,
    },
    /// The version of a resource, now: a fact the driver observes before a decision acts on
    /// it (RES-3, RES-7). A resource never moved is at version 0.
    Version {
        /// The resource.
        resource: String,
    },
    /// An outside writer moves a resource (another system edits what the run acts on):
    /// its version goes up by one, durably. Answered with the new version.
    Move {
        /// The resource.
        resource: String,
    },
    /// The status query: did this key and attempt commit?
    Query {
        /// The tool.
        tool: String,
        /// The key.
        key: String,
        /// The attempt.
        attempt: u8,
    },
    /// The answer to the service's challenge: the client holds the service's key.
    Auth {
        /// The HMAC of the challenge under the shared key ([`crate::auth::SharedKey`]).
        proof: Digest,
    },
}

/// The service's answer: one JSON line.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum ToolReply {
    /// The call committed (now, or earlier under the same key), with this result.
    Committed {
        /// The result's digest.
        result: Digest,
    },
    /// The status query: not committed (and, for a fencing tool, now never will be).
    NotCommitted,
    /// The status query could not tell.
    Unknown,
    /// A resource's version, now.
    Version {
        /// The version.
        version: u64,
    },
    /// A dispatch under a fenced key and attempt: it did not commit and never will.
    Fenced,
    /// The service refused the request (an unknown tool, a malformed line, a client that
    /// did not prove it holds the service's key).
    Refused {
        /// Why.
        why: String,
    },
    /// The first line of a connection to a service that authenticates its clients: answer
    /// with [`ToolRequest::Auth`] before any other request.
    Challenge {
        /// Fresh random bytes, never sent twice.
        challenge: Digest,
    },
}

impl ToolReply {
    /// The status query's answer as the kernel takes it; a reply that is not an answer to a
    /// query is unknown, never "not committed".
    pub fn as_answer(&self) -> QueryAnswer {
        match self {
            ToolReply::Committed { result } => QueryAnswer::Committed { result: *result },
            ToolReply::NotCommitted => QueryAnswer::NotCommitted,
            _ => QueryAnswer::Unknown,
        }
    }
}

/// How a driver reaches tools. A dispatch is two halves, so that a kill can land after the
/// request left and before its answer came back.
pub trait Tools {
    /// Sends a request.
    fn send(&mut self, request: &ToolRequest) -> io::Result<()>;
    /// Waits for the answer to the request sent last.
    fn receive(&mut self) -> io::Result<ToolReply>;
    /// Sends a request and waits for its answer.
    fn call(&mut self, request: &ToolRequest) -> io::Result<ToolReply> {
        self.send(request)?;
        self.receive()
    }
}

/// A client of the tool service over TCP. Any error drops the connection, so a late answer
/// to an abandoned request is never read as the answer to a newer one.
pub struct TcpTools {
    address: String,
    timeout: Duration,
    key: Option<SharedKey>,
    conn: Option<(BufReader<TcpStream>, TcpStream)>,
    /// Since when the service has been unreachable, and when that was last said.
    unreachable: Option<(Instant, Instant)>,
}

/// How often a worker says, while the tool service stays unreachable, that it still is.
pub const UNREACHABLE_NOTICE: Duration = Duration::from_secs(5);

impl TcpTools {
    /// A client of the service at `address`; an answer later than `timeout` is not waited for.
    /// With `key`, it answers the service's challenge on each connection.
    pub fn new(address: &str, timeout: Duration, key: Option<SharedKey>) -> TcpTools {
        TcpTools {
            address: address.to_string(),
            timeout,
            key,
            conn: None,
            unreachable: None,
        }
    }

    /// Connects within the timeout, to the first of the address's addresses that answers.
    fn connect(&self) -> io::Result<TcpStream> {
        let mut last = io::Error::new(io::ErrorKind::NotFound, "the address names no host");
        for address in self.address.to_socket_addrs()? {
            match TcpStream::connect_timeout(&address, self.timeout) {
                Ok(stream) => return Ok(stream),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Says on stderr, at most every [`UNREACHABLE_NOTICE`], that the service is
    /// unreachable and why; and once, when it answers again.
    fn notice(&mut self, failure: Option<&io::Error>) {
        let now = Instant::now();
        match (failure, self.unreachable) {
            (Some(e), None) => {
                eprintln!(
                    "tool service at {} unreachable: {e}; its calls fail until it answers",
                    self.address
                );
                self.unreachable = Some((now, now));
            }
            (Some(e), Some((since, said))) if now - said >= UNREACHABLE_NOTICE => {
                eprintln!(
                    "tool service at {} still unreachable after {} s: {e}",
                    self.address,
                    (now - since).as_secs()
                );
                self.unreachable = Some((since, now));
            }
            (None, Some((since, _))) => {
                eprintln!(
                    "tool service at {} answers again after {} s",
                    self.address,
                    (now - since).as_secs()
                );
                self.unreachable = None;
            }
            _ => {}
        }
    }

    /// Answers the service's challenge, if this client holds a key.
    fn authenticate(&self, conn: &mut (BufReader<TcpStream>, TcpStream)) -> io::Result<()> {
        let Some(key) = &self.key else {
            return Ok(());
        };
        let challenge = match read_reply(&mut conn.0) {
            Ok(ToolReply::Challenge { challenge }) => challenge,
            Ok(other) => {
                return Err(io::Error::other(format!(
                    "sent no challenge but {other:?}: is it started with --key?"
                )))
            }
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("sent no challenge ({e}): is it started with --key?"),
                ))
            }
        };
        let mut line = serde_json::to_vec(&ToolRequest::Auth {
            proof: key.prove(&challenge),
        })?;
        line.push(b'\n');
        conn.1.write_all(&line)
    }

    fn connection(&mut self) -> io::Result<&mut (BufReader<TcpStream>, TcpStream)> {
        if self.conn.is_none() {
            let stream = match self.connect() {
                Ok(stream) => stream,
                Err(e) => {
                    self.notice(Some(&e));
                    return Err(e);
                }
            };
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(self.timeout))?;
            stream.set_write_timeout(Some(self.timeout))?;
            let mut conn = (BufReader::new(stream.try_clone()?), stream);
            if let Err(e) = self.authenticate(&mut conn) {
                self.notice(Some(&e));
                return Err(e);
            }
            self.notice(None);
            self.conn = Some(conn);
        }
        self.conn
            .as_mut()
            .ok_or_else(|| io::Error::other("no connection"))
    }
}

impl Tools for TcpTools {
    fn send(&mut self, request: &ToolRequest) -> io::Result<()> {
        let mut line = serde_json::to_vec(request)?;
        line.push(b'\n');
        let result = self.connection().and_then(|(_, w)| w.write_all(&line));
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    fn receive(&mut self) -> io::Result<ToolReply> {
        let reply = match self.connection().and_then(|(r, _)| read_reply(r)) {
            Ok(ToolReply::Challenge { .. }) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the tool service authenticates its clients: give its key (--tools-key)",
            )),
            Ok(ToolReply::Refused { why }) if why.starts_with(NOT_AUTHENTICATED) => {
                Err(io::Error::new(io::ErrorKind::PermissionDenied, why))
            }
            reply => reply,
        };
        if let Err(e) = &reply {
            if e.kind() == io::ErrorKind::PermissionDenied {
                self.notice(Some(e));
            }
        }
        if reply.is_err() {
            self.conn = None;
        }
        reply
    }
}

/// The start of the service's refusal of a client that did not prove it holds its key.
pub const NOT_AUTHENTICATED: &str = "not authenticated";

/// Reads one reply line, bounded.
fn read_reply(reader: &mut impl io::BufRead) -> io::Result<ToolReply> {
    let mut line = Vec::new();
    match bounded::read_line(reader, bounded::TOOL_LINE_BYTES, &mut line)? {
        bounded::Line::Cut(_) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "tool service closed the connection",
        )),
        bounded::Line::Whole => {
            serde_json::from_slice(&line[..line.len() - 1]).map_err(io::Error::other)
        }
    }
}

/// Tools answered in memory at once, honouring the same contracts: for measuring the
/// runtime's own cost without a network hop, and for tests. Not durable.
#[derive(Default)]
pub struct MemoryTools {
    committed: HashMap<String, Digest>,
    versions: HashMap<String, u64>,
    pending: Option<ToolRequest>,
}

impl Tools for MemoryTools {
    fn send(&mut self, request: &ToolRequest) -> io::Result<()> {
        self.pending = Some(request.clone());
        Ok(())
    }

    fn receive(&mut self) -> io::Result<ToolReply> {
        match self.pending.take() {
            Some(ToolRequest::Dispatch {
                key,
                args,
                resource,
                ..
            }) => {
                if !self.committed.contains_key(&key) {
                    if let Some(r) = resource {
                        *self.versions.entry(r).or_insert(0) += 1;
                    }
                }
                let result = *self.committed.entry(key).or_insert(args);
                Ok(ToolReply::Committed { result })
            }
            Some(ToolRequest::Version { resource }) => Ok(ToolReply::Version {
                version: self.versions.get(&resource).copied().unwrap_or(0),
            }),
            Some(ToolRequest::Move { resource }) => {
                let v = self.versions.entry(resource).or_insert(0);
                *v += 1;
                Ok(ToolReply::Version { version: *v })
            }
            Some(ToolRequest::Query { key, .. }) => Ok(match self.committed.get(&key) {
                Some(result) => ToolReply::Committed { result: *result },
                None => ToolReply::NotCommitted,
            }),
            Some(ToolRequest::Auth { .. }) => Ok(ToolReply::Refused {
                why: "no authentication in memory".to_string(),
            }),
            None => Err(io::Error::other("nothing sent")),
        }
    }
}
