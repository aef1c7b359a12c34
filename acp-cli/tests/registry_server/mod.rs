//! A small HTTP/1.1 server on a loopback port for the registry tests: serves files from a
//! map the test can change, logs every request path, and can cut a response off halfway.
//! Also builds the tar.gz archives it serves.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// What a path answers.
#[derive(Clone)]
pub enum Body {
    /// The whole body.
    Full(Vec<u8>),
    /// The full length announced, half the bytes sent, then the connection closed.
    Halfway(Vec<u8>),
}

/// The server; stops on drop.
pub struct Server {
    addr: std::net::SocketAddr,
    files: Arc<Mutex<HashMap<String, Body>>>,
    log: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Listens on 127.0.0.1, any free port.
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let files: Arc<Mutex<HashMap<String, Body>>> = Arc::default();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (f, l, s) = (files.clone(), log.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (f, l) = (f.clone(), l.clone());
                std::thread::spawn(move || answer(stream, &f, &l));
            }
        });
        Server {
            addr,
            files,
            log,
            stop,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves `body` at `/name`.
    pub fn put(&self, name: &str, body: Body) {
        self.files.lock().unwrap().insert(format!("/{name}"), body);
    }

    /// The paths requested so far, in order.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn answer(mut stream: TcpStream, files: &Mutex<HashMap<String, Body>>, log: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
    log.lock().unwrap().push(path.clone());
    let body = files.lock().unwrap().get(&path).cloned();
    let _ = match body {
        None => stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
        Some(Body::Full(bytes)) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                bytes.len()
            );
            stream
                .write_all(head.as_bytes())
                .and_then(|_| stream.write_all(&bytes))
        }
        Some(Body::Halfway(bytes)) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                bytes.len()
            );
            stream
                .write_all(head.as_bytes())
                .and_then(|_| stream.write_all(&bytes[..bytes.len() / 2]))
        }
    };
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
}

/// SHA-256 (hex).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A tar.gz of `(name, link target, data)` entries; a name ending in `/` is a directory.
/// Names and link targets are written raw, so `../` entries and links out can be made.
pub fn tar_gz(entries: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (name, link, data) in entries {
        let mut h = tar::Header::new_old();
        {
            let old = h.as_old_mut();
            old.name = [0; 100];
            old.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(link) = link {
                old.linkname = [0; 100];
                old.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
        }
        let (kind, mode) = if name.ends_with('/') {
            (tar::EntryType::Directory, 0o755)
        } else if link.is_some() {
            (tar::EntryType::Symlink, 0o777)
        } else {
            (tar::EntryType::Regular, 0o755)
        };
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(mode);
        h.set_cksum();
        builder.append(&h, *data).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}
