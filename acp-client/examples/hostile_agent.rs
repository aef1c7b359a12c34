//! A hostile ACP agent for testing a client's sandbox: it answers `initialize`,
//! `session/new` and `session/prompt` like an agent, and during the prompt it attacks the
//! client with requests, in loops, under races it runs itself. The client's
//! `tests/sandbox_hostile_agent.rs` drives it (and it can be put behind the demo:
//! `cargo run -p acp-client --example demo -- -- target/debug/examples/hostile_agent`).
//!
//! Configured by environment variables:
//!
//! * `HOSTILE_ATTACKS`: comma-separated, from `fs-race`, `size-race`, `fifo`,
//!   `term-escape`, `term-burst`, `term-flood`, `term-setsid`, `agent-setsid` (default: all);
//! * `HOSTILE_OUTSIDE`: a directory outside the workspace holding `secret.txt` (the canary);
//!   `fs-race` puts a symlink to it in the workspace, `term-escape` tries to write into it;
//! * `HOSTILE_SECONDS`: how long each race runs (default 2);
//! * `HOSTILE_REPORT`: a file to append the reports to (default: stderr).
//!
//! Each attack writes one line `HOSTILE <json>` with what it saw: requests sent and
//! answered, how many answers carried the secret, how many writes landed outside, the
//! slowest answer, the client's peak RSS (`VmHWM` of the parent process, which is the
//! client when it spawned us directly).
//!
//! It speaks JSON-RPC itself, line by line, on purpose: it controls exactly when each request
//! goes out (hundreds in flight, races against its own file swaps), which a connection of
//! acp-agent would smooth over. The protocol values it sends (params and results) are still
//! built with acp-types' constructors; only the JSON-RPC envelope around them and its own
//! report lines are written as JSON here.

use std::collections::HashMap;
use std::ffi::CString;
use std::io::{BufRead, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acp_types::RequestMethod;
use acp_types::v1::*;
use serde::Serialize;
use serde_json::{Value, json};

// A path relative to this file, so it resolves the same when a test includes this file
// with `#[path]` (tests/sandbox_hostile_agent.rs).
#[path = "hostile_agent/terminal_attacks.rs"]
mod terminal_attacks;
use terminal_attacks::{agent_setsid, term_burst, term_escape, term_flood, term_setsid};

/// How long one request may take before it counts as hung.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Our side of the connection: requests we send, and where their answers go.
struct Peer {
    out: Mutex<std::io::Stdout>,
    pending: Mutex<HashMap<u64, Sender<Value>>>,
    next: AtomicU64,
}

impl Peer {
    fn send_line(&self, v: &Value) {
        let mut out = self.out.lock().unwrap();
        let _ = writeln!(out, "{v}");
        let _ = out.flush();
    }

    /// Sends a request; the answer (the whole response object) arrives on the receiver.
    fn request<R: RequestMethod>(&self, params: &R) -> Receiver<Value> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        self.pending.lock().unwrap().insert(id, tx);
        // The JSON-RPC envelope, written by hand (see the module docs); the params are typed.
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": R::METHOD, "params": to_json(params)}),
        );
        rx
    }

    /// Sends a request and waits for its answer (`None`: no answer within the timeout).
    fn call<R: RequestMethod>(&self, params: &R) -> Option<Value> {
        self.request(params).recv_timeout(ANSWER_TIMEOUT).ok()
    }

    /// Answers request `id` with `result`.
    fn answer(&self, id: Value, result: &impl Serialize) {
        self.send_line(&json!({"jsonrpc": "2.0", "id": id, "result": to_json(result)}));
    }
}

/// A protocol value as JSON (encoding a typed value cannot fail).
fn to_json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).expect("a protocol value encodes")
}

/// The terminal id in a `terminal/create` answer (`None` when it has none, or not a string).
fn terminal_id(answer: &Value) -> Option<TerminalId> {
    answer["result"]["terminalId"]
        .as_str()
        .map(|id| TerminalId(id.to_owned()))
}

/// What one attack saw, reported as one JSON line.
#[derive(Default)]
struct Tally {
    sent: u64,
    answered: u64,
    errors: u64,
    leaked: u64,
    unanswered: u64,
    max_answer_bytes: u64,
    slowest: Duration,
}

impl Tally {
    fn wait(&mut self, rx: Receiver<Value>, started: Instant, secret: &str) -> Option<Value> {
        self.sent += 1;
        let Ok(v) = rx.recv_timeout(ANSWER_TIMEOUT) else {
            self.unanswered += 1;
            return None;
        };
        self.answered += 1;
        self.slowest = self.slowest.max(started.elapsed());
        let text = v.to_string();
        self.max_answer_bytes = self.max_answer_bytes.max(text.len() as u64);
        if !secret.is_empty() && text.contains(secret) {
            self.leaked += 1;
        }
        if v.get("error").is_some() {
            self.errors += 1;
        }
        Some(v)
    }

    /// The attack's report line (the example's own output, not a protocol value).
    fn report(&self, attack: &str, extra: Value) {
        let mut v = json!({
            "attack": attack,
            "sent": self.sent,
            "answered": self.answered,
            "errors": self.errors,
            "leaked": self.leaked,
            "unanswered": self.unanswered,
            "maxAnswerBytes": self.max_answer_bytes,
            "slowestMs": self.slowest.as_millis() as u64,
            "clientPeakRssKiB": parent_peak_rss_kib(),
        });
        if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
            v.extend(extra);
        }
        report_line(&v);
    }
}

/// Writes `HOSTILE <json>` to stderr, or appends it to the file `HOSTILE_REPORT` names.
fn report_line(v: &Value) {
    match std::env::var_os("HOSTILE_REPORT") {
        Some(path) => {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
            {
                let _ = writeln!(f, "HOSTILE {v}");
            }
        }
        None => eprintln!("HOSTILE {v}"),
    }
}

/// `VmHWM` of our parent (the client, when it spawned us directly), in KiB.
fn parent_peak_rss_kib() -> u64 {
    let ppid = std::os::unix::process::parent_id();
    std::fs::read_to_string(format!("/proc/{ppid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("no NUL in test paths")
}

/// Swaps `a` and `b` atomically (`renameat2(RENAME_EXCHANGE)`) until `stop`; returns how
/// many swaps were made.
fn swapper(a: PathBuf, b: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let (a, b) = (cstr(&a), cstr(&b));
        let mut swaps = 0;
        while !stop.load(Ordering::Relaxed) {
            // SAFETY: two valid NUL-terminated paths.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            if r == 0 {
                swaps += 1;
            }
        }
        swaps
    })
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

struct Ctx {
    peer: Arc<Peer>,
    session: String,
    workspace: PathBuf,
    outside: PathBuf,
    secret: String,
    seconds: Duration,
}

impl Ctx {
    fn read(&self, path: &Path) -> Receiver<Value> {
        self.peer
            .request(&ReadTextFileRequest::new(self.session(), path_str(path)))
    }
    fn write(&self, path: &Path, content: &str) -> Receiver<Value> {
        self.peer.request(&WriteTextFileRequest::new(
            self.session(),
            path_str(path),
            content,
        ))
    }
    fn session(&self) -> SessionId {
        SessionId(self.session.clone())
    }
    fn outside_entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.outside)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

/// A directory inside the workspace swapped with a symlink to the outside directory while
/// reads and writes below it are pipelined.
fn fs_race(cx: &Ctx) {
    let base = cx.workspace.join("race");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("dir")).unwrap();
    std::fs::write(base.join("dir/secret.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink(&cx.outside, base.join("link")).unwrap();
    let before = cx.outside_entries();
    let stop = Arc::new(AtomicBool::new(false));
    let racer = swapper(base.join("dir"), base.join("link"), stop.clone());
    let mut tally = Tally::default();
    let (mut reads_inside, mut writes_ok) = (0u64, 0u64);
    let end = Instant::now() + cx.seconds;
    let mut n = 0u64;
    while Instant::now() < end {
        let started = Instant::now();
        let batch: Vec<(bool, Receiver<Value>)> = (0..32)
            .map(|i| {
                n += 1;
                if i % 2 == 0 {
                    (true, cx.read(&base.join("dir/secret.txt")))
                } else {
                    let name = format!("dir/w-{n}.txt");
                    (false, cx.write(&base.join(name), "written by the agent\n"))
                }
            })
            .collect();
        for (is_read, rx) in batch {
            let v = tally.wait(rx, started, &cx.secret);
            let ok = v.as_ref().is_some_and(|v| v.get("result").is_some());
            match (is_read, ok) {
                (true, true) => reads_inside += 1,
                (false, true) => writes_ok += 1,
                _ => {}
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = racer.join().unwrap_or(0);
    let after = cx.outside_entries();
    let created_outside = after.iter().filter(|e| !before.contains(e)).count();
    tally.report(
        "fs-race",
        json!({"swaps": swaps, "readsOk": reads_inside - tally.leaked.min(reads_inside), "writesOk": writes_ok, "createdOutside": created_outside}),
    );
}

/// A file swapped between 6 bytes and 100 MiB while it is read.
fn size_race(cx: &Ctx) {
    let base = cx.workspace.join("size");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    std::fs::write(base.join("a"), "small\n").unwrap();
    // Sparse: 100 MiB of NUL bytes (valid UTF-8) that cost no disk.
    let huge = std::fs::File::create(base.join("b")).unwrap();
    huge.set_len(100 * 1024 * 1024).unwrap();
    drop(huge);
    let stop = Arc::new(AtomicBool::new(false));
    let racer = swapper(base.join("a"), base.join("b"), stop.clone());
    let mut tally = Tally::default();
    let mut oversized = 0u64;
    let end = Instant::now() + cx.seconds;
    while Instant::now() < end {
        let started = Instant::now();
        let batch: Vec<Receiver<Value>> = (0..16).map(|_| cx.read(&base.join("a"))).collect();
        for rx in batch {
            if let Some(v) = tally.wait(rx, started, &cx.secret) {
                let len = v["result"]["content"].as_str().map_or(0, str::len);
                if len > 10 * 1024 * 1024 {
                    oversized += 1;
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = racer.join().unwrap_or(0);
    let _ = std::fs::remove_dir_all(&base);
    tally.report("size-race", json!({"swaps": swaps, "oversized": oversized}));
}

/// Reads and writes of a FIFO nobody else opens.
fn fifo(cx: &Ctx) {
    let base = cx.workspace.join("fifo");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let p = base.join("pipe");
    // SAFETY: a valid NUL-terminated path.
    unsafe { libc::mkfifo(cstr(&p).as_ptr(), 0o600) };
    let mut tally = Tally::default();
    let mut messages = Vec::new();
    for i in 0..20 {
        let started = Instant::now();
        let rx = if i % 2 == 0 {
            cx.write(&p, "blocked?\n")
        } else {
            cx.read(&p)
        };
        if let Some(v) = tally.wait(rx, started, &cx.secret)
            && let Some(m) = v["error"]["message"].as_str()
            && messages.len() < 2
        {
            messages.push(m.to_owned());
        }
    }
    tally.report("fifo", json!({"messages": messages}));
}

fn run_attacks(cx: &Ctx, attacks: &[String]) {
    for attack in attacks {
        match attack.as_str() {
            "fs-race" => fs_race(cx),
            "size-race" => size_race(cx),
            "fifo" => fifo(cx),
            "term-escape" => term_escape(cx),
            "term-burst" => term_burst(cx),
            "term-flood" => term_flood(cx),
            "term-setsid" => term_setsid(cx),
            "agent-setsid" => agent_setsid(cx),
            other => report_line(&json!({"attack": other, "unknown": true})),
        }
    }
}

pub fn main() {
    let attacks: Vec<String> = std::env::var("HOSTILE_ATTACKS")
        .unwrap_or_else(|_| {
            "fs-race,size-race,fifo,term-escape,term-burst,term-flood,term-setsid,agent-setsid"
                .into()
        })
        .split(',')
        .map(str::to_owned)
        .collect();
    let outside = PathBuf::from(std::env::var("HOSTILE_OUTSIDE").unwrap_or_else(|_| {
        let p = std::env::temp_dir().join(format!("hostile-outside-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&p);
        let _ = std::fs::write(p.join("secret.txt"), "HOSTILE-CANARY-SECRET\n");
        p.to_string_lossy().into_owned()
    }));
    let secret = std::fs::read_to_string(outside.join("secret.txt"))
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let seconds = Duration::from_secs_f64(
        std::env::var("HOSTILE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2.0),
    );
    let peer = Arc::new(Peer {
        out: Mutex::new(std::io::stdout()),
        pending: Mutex::new(HashMap::new()),
        next: AtomicU64::new(1_000_000),
    });
    let mut workspace = std::env::current_dir().unwrap_or_default();
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").cloned();
        match (method, id) {
            (None, Some(id)) => {
                // An answer to one of our requests.
                if let Some(n) = id.as_u64()
                    && let Some(tx) = peer.pending.lock().unwrap().remove(&n)
                {
                    let _ = tx.send(msg);
                }
            }
            (Some("initialize"), Some(id)) => peer.answer(
                id,
                &InitializeResponse::new(ProtocolVersion::V1)
                    .agent_info(Implementation::new("hostile-agent", "0")),
            ),
            (Some("session/new"), Some(id)) => {
                if let Some(cwd) = msg["params"]["cwd"].as_str() {
                    workspace = PathBuf::from(cwd);
                }
                peer.answer(id, &NewSessionResponse::new("hostile-1"));
            }
            (Some("session/prompt"), Some(id)) => {
                let cx = Ctx {
                    peer: peer.clone(),
                    session: "hostile-1".into(),
                    workspace: workspace.clone(),
                    outside: outside.clone(),
                    secret: secret.clone(),
                    seconds,
                };
                let attacks = attacks.clone();
                std::thread::spawn(move || {
                    run_attacks(&cx, &attacks);
                    cx.peer.answer(id, &PromptResponse::new(StopReason::EndTurn));
                });
            }
            // A JSON-RPC error envelope, written by hand like every envelope here.
            (Some(_), Some(id)) => peer.send_line(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})),
            (Some(_), None) => {}
            (None, None) => {}
        }
    }
}
