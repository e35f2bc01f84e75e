//! `resumable explore`, run as a user runs it and as a hostile page would reach it: the binary
//! serves the Explorer on loopback, refuses another site's Host (DNS rebinding) and another
//! origin's POST, and bounds the search `POST /.runtocompletion` starts.

#[path = "explorer/server.rs"]
mod server;

use server::start;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Sends a request with these header lines and returns the status and the body.
fn request(port: u16, line: &str, headers: &[&str]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut text = format!("{line}\r\n");
    for h in headers {
        text.push_str(&format!("{h}\r\n"));
    }
    text.push_str("Connection: close\r\n\r\n");
    stream.write_all(text.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn status_json(port: u16) -> serde_json::Value {
    let host = format!("Host: 127.0.0.1:{port}");
    let (status, body) = request(port, "GET /.status HTTP/1.1", &[&host]);
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn the_explorer_answers_its_own_host_and_refuses_another_sites() {
    let server = start(2_000);
    let port = server.port;
    let status = status_json(port);
    assert!(
        status["model"].as_str().unwrap().contains("World"),
        "{status}"
    );
    let host = format!("Host: localhost:{port}");
    assert_eq!(request(port, "GET / HTTP/1.1", &[&host]).0, 200);
    let rebound = format!("Host: attacker.example:{port}");
    let (code, body) = request(port, "GET /.status HTTP/1.1", &[&rebound]);
    assert_eq!(code, 403);
    assert!(body.contains("DNS rebinding"), "{body}");
    let own = format!("Host: 127.0.0.1:{port}");
    assert_eq!(
        request(port, "GET /../../etc/passwd HTTP/1.1", &[&own]).0,
        404
    );
    assert_eq!(request(port, "GET / HTTP/1.1", &[]).0, 400);
}

#[test]
fn run_to_completion_is_refused_from_another_origin_and_bounded_from_ours() {
    let server = start(2_000);
    let port = server.port;
    let own = format!("Host: 127.0.0.1:{port}");
    let post = "POST /.runtocompletion HTTP/1.1";
    let cross = request(port, post, &[&own, "Origin: http://attacker.example"]);
    assert_eq!(cross.0, 403);
    let blind = request(port, post, &[&own, "Sec-Fetch-Site: cross-site"]);
    assert_eq!(blind.0, 403);
    assert!(status_json(port)["state_count"].as_u64().unwrap() <= 1);

    let origin = format!("Origin: http://127.0.0.1:{port}");
    assert_eq!(request(port, post, &[&own, &origin]).0, 200);
    // The default world has about 190,000 unique states; the search stops near 2,000 (it
    // checks the bound after each block of 1,500 states).
    let started = Instant::now();
    let mut last = 0;
    while started.elapsed() < Duration::from_secs(20) {
        let count = status_json(port)["state_count"].as_u64().unwrap();
        if count > 0 && count == last {
            break;
        }
        last = count;
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!((2_000..=2_000 + 3 * 1_500).contains(&last), "{last} states");
}
