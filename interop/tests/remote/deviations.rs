//! Where the official `agent-client-protocol-http` 5.0.0 server departs from the RFD
//! "Streamable HTTP & WebSocket Transport", asked on the raw wire, beside what acp-remote's
//! server answers to the same bytes (README "Interop matrix", docs/DEPLOYMENT.md "Wire notes"):
//!
//! - a JSON-RPC batch: the RFD says `501`; theirs answers `400` with a `-32600` error body;
//! - a second GET for a stream already open: theirs answers `409`; ours replaces the first;
//! - HTTP/2: neither speaks it (HTTP/1.1 only), the RFD allows both.
//!
//! Both servers run as real processes (`acp-interop ours-server` / `rust-server`) on a free
//! 127.0.0.1 port, each a gateway to the official Rust agent; every read is bounded in time.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use acp_interop::matrix::REMOTE_TOKEN;
use acp_interop::server::ServerProcess;

fn exe() -> OsString {
    OsString::from(env!("CARGO_BIN_EXE_acp-interop"))
}

/// Starts `ours-server` or `rust-server` in front of the official Rust agent.
fn start(which: &str) -> ServerProcess {
    let command: Vec<OsString> = vec![
        exe(),
        which.into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--token".into(),
        REMOTE_TOKEN.into(),
        "--".into(),
        exe(),
        "rust-agent".into(),
    ];
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("interop-deviations");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    ServerProcess::start(&command, &dir.join(format!("{which}.stderr"))).expect("the server starts")
}

/// `host:port` of a server's URL.
fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/acp")
        .to_owned()
}

/// Sends `request` (raw bytes) and returns what came back within `wait` (the connection may
/// stay open: an SSE stream).
fn exchange(addr: &str, request: &[u8], wait: Duration) -> String {
    let mut socket = TcpStream::connect(addr).expect("connect to the server");
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("a read timeout");
    socket.write_all(request).expect("send the request");
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while start.elapsed() < wait && got.len() < 64 * 1024 {
        match socket.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if complete(&got) {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Whether a response with a `Content-Length` has all of its body.
fn complete(got: &[u8]) -> bool {
    let text = String::from_utf8_lossy(got);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .is_some_and(|len| body.len() >= len)
}

fn status(response: &str) -> Option<u16> {
    response
        .lines()
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn header<'a>(response: &'a str, name: &str) -> Option<&'a str> {
    response.split("\r\n\r\n").next()?.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn post(addr: &str, body: &str, extra: &str) -> String {
    let request = format!(
        "POST /acp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {REMOTE_TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    exchange(addr, request.as_bytes(), Duration::from_secs(10))
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;

#[test]
fn a_batch_is_501_from_ours_and_400_with_minus_32600_from_the_official_server() {
    let batch = format!("[{INITIALIZE}]");
    let ours = start("ours-server");
    let answer = post(&authority(&ours.url), &batch, "");
    assert_eq!(status(&answer), Some(501), "ours: {answer}");
    ours.stop();

    let theirs = start("rust-server");
    let answer = post(&authority(&theirs.url), &batch, "");
    assert_eq!(status(&answer), Some(400), "official: {answer}");
    assert!(answer.contains("-32600"), "official: {answer}");
    theirs.stop();
}

/// Opens the connection stream (GET with `Acp-Connection-Id`) twice on `url`'s server;
/// returns both answers' heads.
fn stream_twice(url: &str) -> (String, String) {
    let addr = authority(url);
    let init = post(&addr, INITIALIZE, "");
    assert_eq!(status(&init), Some(200), "initialize: {init}");
    let id = header(&init, "acp-connection-id")
        .unwrap_or_else(|| panic!("no Acp-Connection-Id in {init}"))
        .to_owned();
    let get = format!(
        "GET /acp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {REMOTE_TOKEN}\r\n\
         Accept: text/event-stream\r\nAcp-Connection-Id: {id}\r\n\r\n"
    );
    // The first stays open (kept by this socket) while the second is asked for.
    let mut first = TcpStream::connect(&addr).expect("connect");
    first.write_all(get.as_bytes()).expect("send the first GET");
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("a read timeout");
    let mut buf = [0u8; 1024];
    let n = first.read(&mut buf).unwrap_or(0);
    let head = String::from_utf8_lossy(&buf[..n]).into_owned();
    let second = exchange(&addr, get.as_bytes(), Duration::from_secs(2));
    drop(first);
    (head, second)
}

#[test]
fn a_second_stream_replaces_the_first_on_ours_and_is_409_on_the_official_server() {
    let ours = start("ours-server");
    let (first, second) = stream_twice(&ours.url);
    assert_eq!(status(&first), Some(200), "ours, first: {first}");
    assert_eq!(status(&second), Some(200), "ours, second: {second}");
    ours.stop();

    let theirs = start("rust-server");
    let (first, second) = stream_twice(&theirs.url);
    assert_eq!(status(&first), Some(200), "official, first: {first}");
    assert_eq!(status(&second), Some(409), "official, second: {second}");
    theirs.stop();
}

#[test]
fn neither_server_speaks_http2_with_prior_knowledge() {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";
    for which in ["ours-server", "rust-server"] {
        let server = start(which);
        let answer = exchange(&authority(&server.url), PREFACE, Duration::from_secs(2));
        // An HTTP/2 server answers the preface with a SETTINGS frame (type 4 at byte 3).
        let settings = answer.len() >= 9 && answer.as_bytes()[3] == 4;
        assert!(
            !settings && (answer.is_empty() || answer.starts_with("HTTP/1.1")),
            "{which} answered the HTTP/2 preface with {answer:?}"
        );
        server.stop();
    }
}
