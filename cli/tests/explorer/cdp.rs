//! Headless Chromium driven over its DevTools protocol: the browser started with a debugging
//! port, one page's WebSocket (a minimal client: masked text frames out, frames in), and the
//! two commands these tests need, navigating and evaluating JavaScript in the page.

#![allow(
    dead_code,
    reason = "shared by the Explorer's and the book's browser tests, each of which uses a part"
)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the page gets to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(20);

/// The browser, killed when dropped, and its page's socket.
pub struct Browser {
    child: Child,
    socket: TcpStream,
    next_id: u64,
    profile: PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Chromium on the `PATH` (Debian's `chromium`), or `None`.
pub fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// An HTTP GET on the browser's debugging port, for its list of pages. Its server keeps the
/// connection open, so the body is read by its length.
fn get_json(port: &str, path: &str) -> Value {
    let stream = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut writer = stream.try_clone().unwrap();
    write!(
        writer,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    serde_json::from_slice(&body).unwrap()
}

impl Browser {
    /// Starts the browser headless on a blank page and connects to that page.
    pub fn launch(chromium: &PathBuf) -> Browser {
        let profile =
            std::env::temp_dir().join(format!("resumable-chromium-{}", std::process::id()));
        let mut child = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .args([
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium.display()));
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let announced = stderr.lines().map_while(Result::ok).find_map(|l| {
            l.split_once("DevTools listening on ws://127.0.0.1:")
                .map(|(_, r)| r.to_string())
        });
        let Some(rest) = announced else {
            let _ = child.kill();
            panic!("{} did not open its debugging port", chromium.display());
        };
        let port = rest.split('/').next().unwrap().to_string();
        let pages = get_json(&port, "/json/list");
        let page = (pages.as_array().unwrap().iter())
            .find(|p| p["type"] == "page")
            .expect("the browser has a page");
        let url = page["webSocketDebuggerUrl"].as_str().unwrap();
        let path = url.split_once(&format!("127.0.0.1:{port}")).unwrap().1;
        let socket = handshake(&port, path);
        Browser {
            child,
            socket,
            next_id: 0,
            profile,
        }
    }

    /// Sends a command and waits for its answer, skipping the events in between.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({ "id": id, "method": method, "params": params });
        send(&mut self.socket, message.to_string().as_bytes());
        loop {
            let reply: Value = serde_json::from_slice(&receive(&mut self.socket)).unwrap();
            if reply["id"] == id {
                return match reply.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(reply["result"].clone()),
                };
            }
        }
    }

    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url })).unwrap();
    }

    /// The value of a JavaScript expression in the page, or why there is none (it threw, or
    /// the page was between documents).
    pub fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let params =
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true });
        let result = self
            .call("Runtime.evaluate", params)
            .map_err(|e| e.to_string())?;
        if let Some(thrown) = result.get("exceptionDetails") {
            return Err(thrown.to_string());
        }
        Ok(result["result"]["value"].clone())
    }

    /// Waits until the expression is true in the page; fails, saying what was awaited and what
    /// the page showed, after [`PATIENCE`].
    pub fn wait_for(&mut self, what: &str, expression: &str) {
        let started = Instant::now();
        while started.elapsed() < PATIENCE {
            if self.eval(expression) == Ok(Value::Bool(true)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let shown = self.eval("document.body ? document.body.innerText : ''");
        panic!("the page never showed {what} ({expression}); it shows:\n{shown:?}");
    }

    /// The text of the first element the selector finds, or `""`.
    pub fn text(&mut self, selector: &str) -> String {
        let expression =
            format!("(document.querySelector({selector:?}) || {{}}).textContent || ''");
        self.eval(&expression)
            .unwrap()
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// Opens the page's WebSocket: the HTTP upgrade, answered 101.
fn handshake(port: &str, path: &str) -> TcpStream {
    let mut socket = TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    socket.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        socket,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: cmVzdW1hYmxlLWV4cGxvcmU=\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        socket.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "no WebSocket: {head}");
    socket
}

/// One masked text frame (a client's frames are masked; the key need not be secret here).
fn send(socket: &mut TcpStream, payload: &[u8]) {
    let mask = [0x5a, 0x13, 0xc7, 0x2e];
    let mut frame = vec![0x81];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= 0xffff => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    socket.write_all(&frame).unwrap();
}

/// One message: its frames' payloads up to the final one (the server's are not masked).
fn receive(socket: &mut TcpStream) -> Vec<u8> {
    let mut message = Vec::new();
    loop {
        let mut head = [0u8; 2];
        socket.read_exact(&mut head).expect("the browser answers");
        let len = match head[1] & 0x7f {
            126 => {
                let mut n = [0u8; 2];
                socket.read_exact(&mut n).unwrap();
                u64::from(u16::from_be_bytes(n))
            }
            127 => {
                let mut n = [0u8; 8];
                socket.read_exact(&mut n).unwrap();
                u64::from_be_bytes(n)
            }
            n => u64::from(n),
        };
        let mut payload = vec![0u8; usize::try_from(len).unwrap()];
        socket.read_exact(&mut payload).unwrap();
        assert_ne!(head[0] & 0x0f, 0x8, "the browser closed its socket");
        message.extend_from_slice(&payload);
        if head[0] & 0x80 != 0 {
            return message;
        }
    }
}
