//! The front of the Explorer: checks each request (its `Host`, its origin, its path, its size),
//! answers the page, the glossary and the states itself (`learn`), and forwards the checker's
//! status and search to stateright's server on the inner port.
//! See the threat model in the parent module.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The largest request head read, in bytes.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long a client may take to send its request, and to read the response.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; more are answered 503 at once.
const MAX_CONNECTIONS: usize = 32;

/// The paths the Explorer's page requests, by method: its own files, the glossary and the
/// states (answered by [`Local`]), and the checker's status and search (forwarded).
fn allowed(method: &str, path: &str) -> bool {
    match method {
        "GET" => {
            matches!(
                path,
                "/" | "/explorer.css" | "/explorer.js" | "/glossary" | "/.status"
            ) || path.starts_with("/.learn/")
        }
        "POST" => path == "/.runtocompletion",
        _ => false,
    }
}

/// What this server answers itself: the reply to a `GET` of a path, or `None` to forward it
/// to stateright's server.
pub type Local = Arc<dyn Fn(&str) -> Option<super::learn::Reply> + Send + Sync>;

/// Serves forever: one thread per connection, at most [`MAX_CONNECTIONS`] at once.
pub fn serve(listener: TcpListener, port: u16, inner: SocketAddr, local: Local) {
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let _ = respond(&mut stream, 503, "too many connections");
            continue;
        }
        let open = Arc::clone(&open);
        let local = Arc::clone(&local);
        std::thread::spawn(move || {
            let _ = handle(&mut stream, port, inner, &local);
            open.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

fn respond(stream: &mut TcpStream, status: u16, why: &str) -> io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        _ => "Service Unavailable",
    };
    let body = format!("{why}\n");
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A request head: the request line's method and path, and the headers that matter here.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Head {
    method: String,
    path: String,
    host: Vec<String>,
    origin: Option<String>,
    fetch_site: Option<String>,
    content_length: Option<String>,
    transfer_encoding: bool,
}

/// Parses a request head (up to the blank line), or says why it is refused.
pub fn parse(head: &str) -> Result<Head, &'static str> {
    let mut lines = head.split("\r\n");
    let request = lines.next().ok_or("no request line")?;
    let mut parts = request.split(' ');
    let (Some(method), Some(path), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("a malformed request line");
    };
    if !version.starts_with("HTTP/1.") {
        return Err("not HTTP/1");
    }
    let mut parsed = Head {
        method: method.into(),
        path: path.into(),
        ..Head::default()
    };
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or("a malformed header")?;
        let value = value.trim().to_string();
        match name.trim().to_ascii_lowercase().as_str() {
            "host" => parsed.host.push(value),
            "origin" => parsed.origin = Some(value),
            "sec-fetch-site" => parsed.fetch_site = Some(value),
            "content-length" => parsed.content_length = Some(value),
            "transfer-encoding" => parsed.transfer_encoding = true,
            _ => {}
        }
    }
    Ok(parsed)
}

/// The `Host` values this server answers to: its own address, by IP or as localhost.
fn own_hosts(port: u16) -> [String; 3] {
    [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
}

/// Whether the request may be forwarded: the status and reason to refuse it with otherwise.
pub fn check(head: &Head, port: u16) -> Result<(), (u16, String)> {
    let hosts = own_hosts(port);
    let host = match head.host.as_slice() {
        [one] => one.to_ascii_lowercase(),
        _ => return Err((400, "exactly one Host header is needed".into())),
    };
    if !hosts.contains(&host) {
        let why = format!(
            "Host {host:?} is not this server's address ({}): refused, as a page of another \
             site would send it (DNS rebinding)",
            hosts.join(", ")
        );
        return Err((403, why));
    }
    if head.transfer_encoding
        || head
            .content_length
            .as_deref()
            .is_some_and(|l| l.trim() != "0")
    {
        return Err((413, "the Explorer takes no request body".into()));
    }
    if !allowed(&head.method, &head.path) {
        return Err((
            404,
            format!("{} {} is not an Explorer request", head.method, head.path),
        ));
    }
    if head.method == "POST" {
        let same_origin = head.origin.as_deref().is_none_or(|o| {
            let o = o.to_ascii_lowercase();
            hosts.iter().any(|h| o == format!("http://{h}"))
        });
        let same_site = head
            .fetch_site
            .as_deref()
            .is_none_or(|s| s == "same-origin" || s == "none");
        if !same_origin || !same_site {
            return Err((403, "a POST from another origin is refused".into()));
        }
    }
    Ok(())
}

/// Reads the request head, within [`MAX_HEAD_BYTES`] and [`TIMEOUT`].
fn read_head(stream: &mut TcpStream) -> Result<String, (u16, &'static str)> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD_BYTES {
            return Err((431, "the request head is too long"));
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return Err((400, "the request ended early")),
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let end = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(head.len());
    String::from_utf8(head[..end].to_vec()).map_err(|_| (400, "the request head is not UTF-8"))
}

fn handle(stream: &mut TcpStream, port: u16, inner: SocketAddr, local: &Local) -> io::Result<()> {
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let text = match read_head(stream) {
        Ok(text) => text,
        Err((status, why)) => return respond(stream, status, why),
    };
    let head = match parse(&text) {
        Ok(head) => head,
        Err(why) => return respond(stream, 400, why),
    };
    if let Err((status, why)) = check(&head, port) {
        return respond(stream, status, &why);
    }
    if head.method == "GET" {
        if let Some((content_type, body)) = local(&head.path) {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
                 Cache-Control: no-store\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            stream.write_all(&body)?;
            return stream.flush();
        }
    }
    let Ok(mut upstream) = TcpStream::connect_timeout(&inner, TIMEOUT) else {
        return respond(stream, 502, "the Explorer is not answering");
    };
    upstream.set_read_timeout(Some(Duration::from_secs(600)))?;
    write!(
        upstream,
        "{} {} HTTP/1.1\r\nHost: {inner}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        head.method, head.path
    )?;
    io::copy(&mut upstream, stream)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(lines: &[&str]) -> Head {
        parse(&lines.join("\r\n")).unwrap()
    }

    #[test]
    fn only_this_servers_own_host_is_answered() {
        let ok = head(&["GET /.status HTTP/1.1", "Host: 127.0.0.1:3000"]);
        assert_eq!(check(&ok, 3000), Ok(()));
        let local = head(&["GET / HTTP/1.1", "host: LOCALHOST:3000"]);
        assert_eq!(check(&local, 3000), Ok(()));
        for host in [
            "evil.example:3000",
            "127.0.0.1:3001",
            "127.0.0.1",
            "0x7f.1:3000",
        ] {
            let h = head(&["GET /.status HTTP/1.1", &format!("Host: {host}")]);
            assert_eq!(check(&h, 3000).unwrap_err().0, 403, "{host}");
        }
        let none = head(&["GET / HTTP/1.1"]);
        assert_eq!(check(&none, 3000).unwrap_err().0, 400);
        let two = head(&["GET / HTTP/1.1", "Host: 127.0.0.1:3000", "Host: evil:3000"]);
        assert_eq!(check(&two, 3000).unwrap_err().0, 400);
    }

    #[test]
    fn a_post_from_another_origin_or_with_a_body_is_refused() {
        let base = ["POST /.runtocompletion HTTP/1.1", "Host: 127.0.0.1:3000"];
        assert_eq!(check(&head(&base), 3000), Ok(()));
        let same = [base[0], base[1], "Origin: http://127.0.0.1:3000"];
        assert_eq!(check(&head(&same), 3000), Ok(()));
        let other = [base[0], base[1], "Origin: http://evil.example"];
        assert_eq!(check(&head(&other), 3000).unwrap_err().0, 403);
        let site = [base[0], base[1], "Sec-Fetch-Site: cross-site"];
        assert_eq!(check(&head(&site), 3000).unwrap_err().0, 403);
        let body = [base[0], base[1], "Content-Length: 5"];
        assert_eq!(check(&head(&body), 3000).unwrap_err().0, 413);
        let chunked = [base[0], base[1], "Transfer-Encoding: chunked"];
        assert_eq!(check(&head(&chunked), 3000).unwrap_err().0, 413);
    }

    #[test]
    fn only_the_explorers_paths_are_forwarded() {
        let get = |p: &str| head(&[&format!("GET {p} HTTP/1.1"), "Host: 127.0.0.1:1"]);
        for path in ["/", "/.status", "/.learn/0/1", "/explorer.js", "/glossary"] {
            assert_eq!(check(&get(path), 1), Ok(()), "{path}");
        }
        for path in [
            "/etc/passwd",
            "/.runtocompletion",
            "/.states/0",
            "http://evil/",
        ] {
            assert_eq!(check(&get(path), 1).unwrap_err().0, 404, "{path}");
        }
        let delete = head(&["DELETE / HTTP/1.1", "Host: 127.0.0.1:1"]);
        assert_eq!(check(&delete, 1).unwrap_err().0, 404);
        assert!(parse("GET / HTTP/2\r\nHost: x").is_err());
        assert!(parse("GET  / HTTP/1.1").is_err());
    }
}
