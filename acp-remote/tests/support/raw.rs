//! Raw HTTP/1.1 over a TCP socket, so the tests see exactly the statuses and headers the
//! server writes (no client library in between to mend or hide them).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One response: status, header block (lowercased), body (by Content-Length only).
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<String> {
        let prefix = format!("{}:", name.to_ascii_lowercase());
        self.headers
            .lines()
            .find_map(|l| l.strip_prefix(&prefix).map(|v| v.trim().to_owned()))
    }
}

/// A request's bytes: method, path, headers, body (Content-Length added when a body is
/// given and no Transfer-Encoding is).
pub fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    let chunked = headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("transfer-encoding"));
    if !chunked && (method == "POST" || !body.is_empty()) {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

/// Sends `bytes` on a new socket and reads one response's status, headers and (sized) body.
pub async fn send(addr: SocketAddr, bytes: &[u8]) -> Raw {
    let (raw, _) = open(addr, bytes).await;
    raw
}

/// Like [`send`], returning the socket too (an SSE stream stays open on it).
pub async fn open(addr: SocketAddr, bytes: &[u8]) -> (Raw, TcpStream) {
    let socket = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(addr))
        .await
        .expect("no connection in time")
        .unwrap();
    exchange(socket, bytes).await
}

/// Sends `bytes` on `socket` (a kept-alive one: its next request) and reads one response.
pub async fn exchange(mut socket: TcpStream, bytes: &[u8]) -> (Raw, TcpStream) {
    tokio::time::timeout(Duration::from_secs(10), async {
        // A server refusing a large body may answer and close before reading all of it.
        let _ = socket.write_all(bytes).await;
        let mut buf = Vec::new();
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            let mut chunk = [0u8; 4096];
            let n = socket.read(&mut chunk).await.unwrap();
            assert!(
                n > 0,
                "closed before the headers: {:?}",
                String::from_utf8_lossy(&buf)
            );
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let mut lines = head.lines();
        let status: u16 = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers = lines
            .map(str::to_ascii_lowercase)
            .collect::<Vec<_>>()
            .join("\n");
        let mut body = buf[head_end + 4..].to_vec();
        let length = headers
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse::<usize>().unwrap());
        if let Some(length) = length {
            while body.len() < length {
                let mut chunk = [0u8; 4096];
                let n = socket.read(&mut chunk).await.unwrap();
                assert!(n > 0);
                body.extend_from_slice(&chunk[..n]);
            }
        }
        let raw = Raw {
            status,
            headers,
            body: String::from_utf8_lossy(&body).to_string(),
        };
        (raw, socket)
    })
    .await
    .expect("no response in time")
}

/// Reads an SSE socket until a `data:` event containing `needle`; returns that event's data.
pub async fn event_with(socket: &mut TcpStream, needle: &str) -> String {
    tokio::time::timeout(Duration::from_secs(10), async {
        let mut seen = Vec::new();
        loop {
            let text = String::from_utf8_lossy(&seen).to_string();
            for event in text.split("data: ").skip(1) {
                let data = event.split("\n\n").next().unwrap_or_default();
                if event.contains("\n\n") && data.contains(needle) {
                    return data.to_owned();
                }
            }
            let mut chunk = [0u8; 4096];
            let n = socket.read(&mut chunk).await.unwrap();
            assert!(n > 0, "stream ended without {needle}: {text}");
            seen.extend_from_slice(&chunk[..n]);
        }
    })
    .await
    .expect("no event in time")
}
