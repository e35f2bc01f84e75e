//! `resumable explore` started for a test on a free loopback port, and stopped when the test
//! ends (it serves until interrupted).

use resumable_testkit::process::{start as spawn, Background, Stream};
use std::net::TcpListener;
use std::process::Command;

/// The server, stopped when dropped, and its port.
pub struct Server {
    _process: Background,
    pub port: u16,
}

/// Starts the Explorer with this bound on its search, once it has announced itself.
pub fn start(max_states: u32) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_resumable"));
    command.args(["explore", "--port", &port.to_string()]);
    command.args(["--max-states", &max_states.to_string()]);
    let (process, mut stderr) = spawn(&mut command, Stream::Stderr);
    let server = Server {
        _process: process,
        port,
    };
    let ready = stderr.find("Explorer on http://127.0.0.1:");
    assert!(ready, "the Explorer announced itself");
    server
}
