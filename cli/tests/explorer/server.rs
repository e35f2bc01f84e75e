//! `resumable explore` started for a test on a free loopback port, and stopped when the test
//! ends (it serves until interrupted).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

/// The server and its port, killed when dropped.
pub struct Server(Child, pub u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the Explorer with this bound on its search, once it has announced itself.
pub fn start(max_states: u32) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_resumable"))
        .args(["explore", "--port", &port.to_string()])
        .args(["--max-states", &max_states.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let server = Server(child, port);
    let mut lines = BufReader::new(stderr).lines();
    let ready = lines.any(|l| l.is_ok_and(|l| l.starts_with("Explorer on http://127.0.0.1:")));
    assert!(ready, "the Explorer announced itself");
    server
}
