//! `acp trace`: a transparent proxy (bytes, exit status and signals pass through, every line
//! recorded in order) and `acp trace view` (summary, and a page checked in headless Chromium).

#[path = "../support/mod.rs"]
mod support;

mod live;
mod page;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Scratch, acp, have};

fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

fn wait(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "acp trace hung");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bytes_pass_unchanged_both_ways_and_every_line_is_recorded_in_order() {
    let dir = Scratch::new("trace-bytes");
    let input: Vec<u8> =
        b"{\"a\":1}\nsecond line\r\n\xff\xfe not utf-8\n\nno newline at the end".to_vec();
    let reply: Vec<u8> = b"{\"b\":2}\nreply \xc3\xa9\n\xff raw\nlast".to_vec();
    std::fs::write(dir.0.join("reply.bin"), &reply).unwrap();
    let out = dir.0.join("t.ndjson");
    let mut child = Command::new(acp())
        .args(["trace", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", "cat > got.bin; cat reply.bin; exit 7"])
        .current_dir(&dir.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let status = wait(&mut child);
    let mut got_out = Vec::new();
    std::io::Read::read_to_end(&mut child.stdout.take().unwrap(), &mut got_out).unwrap();
    assert_eq!(
        status.code(),
        Some(7),
        "the agent's exit status passes through"
    );
    assert_eq!(
        std::fs::read(dir.0.join("got.bin")).unwrap(),
        input,
        "client -> agent bytes"
    );
    assert_eq!(got_out, reply, "agent -> client bytes");
    let recs = records(&out);
    assert_eq!(recs.first().unwrap()["dir"], "start");
    assert_eq!(recs.last().unwrap()["dir"], "exit");
    assert_eq!(recs.last().unwrap()["code"], 7);
    let lines: Vec<(String, String)> = recs
        .iter()
        .filter(|r| r["line"].is_string())
        .map(|r| {
            (
                r["dir"].as_str().unwrap().to_owned(),
                r["line"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let c2a: Vec<&str> = lines
        .iter()
        .filter(|(d, _)| d == "client_to_agent")
        .map(|(_, l)| l.as_str())
        .collect();
    let a2c: Vec<&str> = lines
        .iter()
        .filter(|(d, _)| d == "agent_to_client")
        .map(|(_, l)| l.as_str())
        .collect();
    assert_eq!(
        c2a,
        [
            "{\"a\":1}",
            "second line",
            "\u{fffd}\u{fffd} not utf-8",
            "",
            "no newline at the end"
        ]
    );
    assert_eq!(a2c, ["{\"b\":2}", "reply é", "\u{fffd} raw", "last"]);
    // Each direction is in file order (checked above); seq orders both, without gaps.
    let mut seqs: Vec<u64> = recs.iter().filter_map(|r| r["seq"].as_u64()).collect();
    seqs.sort();
    assert_eq!(
        seqs,
        (0..9).collect::<Vec<_>>(),
        "seq numbers every line once"
    );
    let ts: Vec<f64> = recs.iter().map(|r| r["ts"].as_f64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "timestamps in order");
}

#[test]
fn the_trace_file_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("trace-mode");
    let fresh = dir.0.join("fresh.ndjson");
    let old = dir.0.join("old.ndjson");
    std::fs::write(&old, "an earlier trace\n").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
    for out in [&fresh, &old] {
        let mut child = Command::new(acp())
            .args(["trace", "--out"])
            .arg(out)
            .args(["--", "sh", "-c", "exit 0"])
            .current_dir(&dir.0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        assert!(wait(&mut child).success());
        let mode = std::fs::metadata(out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}: {mode:o}", out.display());
        assert!(!std::fs::read_to_string(out).unwrap().contains("earlier"));
    }
}

#[test]
fn signals_are_forwarded_and_a_death_by_signal_passes_through() {
    let dir = Scratch::new("trace-signals");
    let out = dir.0.join("t.ndjson");
    // The agent turns SIGTERM into exit 42: the proxy forwarded it.
    let mut child = Command::new(acp())
        .args(["trace", "--out"])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            "trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 6];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    assert_eq!(&first, b"ready\n");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(wait(&mut child).code(), Some(42));
    // An agent killed by a signal: the proxy dies of the same signal.
    let mut child = Command::new(acp())
        .args(["trace", "--out"])
        .arg(&out)
        .args(["--", "sh", "-c", "echo ready; kill -USR1 $$; sleep 5"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait(&mut child);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGUSR1)
    );
    assert_eq!(records(&out).last().unwrap()["signal"], libc::SIGUSR1);
}

/// Issue 32: behind the proxy the agent runs in a process group of its own, so a helper it
/// started is outside the group `AgentProcess` signals; once the agent is gone the helper
/// is an orphan of the client, which must stop it the way it stops the group: SIGTERM and
/// time to clean up (here: write a marker) before any SIGKILL.
#[tokio::test]
async fn an_agents_helper_behind_the_proxy_gets_sigterm_before_sigkill() {
    use acp_client::process::{AgentCommand, AgentProcess};
    let dir = Scratch::new("trace-helper");
    let marker = dir.0.join("cleaned");
    let pidfile = dir.0.join("helper.pid");
    let helper = format!(
        "trap \"echo cleaned > {}; exit 0\" TERM; echo $$ > {}; while :; do sleep 0.05; done",
        marker.display(),
        pidfile.display()
    );
    // The helper lets go of the agent's stdout, or the proxy would wait for it to close.
    let agent = format!("sh -c '{helper}' > /dev/null 2>&1 & cat > /dev/null");
    let command = AgentCommand::new(acp())
        .arg("trace")
        .arg("--out")
        .arg(dir.0.join("t.ndjson"))
        .args(["--", "sh", "-c", &agent]);
    let process = AgentProcess::spawn(&command).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the helper never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    process.shutdown(Duration::from_secs(2)).await.unwrap();
    // SAFETY: kill(2) with signal 0 only asks whether the helper still exists.
    let survived = unsafe { libc::kill(pid, 0) } == 0
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        });
    if survived {
        // SAFETY: killing the escaped test process by its pid.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(!survived, "the helper {pid} outlived shutdown");
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default().trim(),
        "cleaned",
        "the helper got SIGKILL without a SIGTERM and a grace period first"
    );
}

#[test]
fn a_missing_agent_is_a_clear_error() {
    let dir = Scratch::new("trace-missing");
    let out = Command::new(acp())
        .args(["trace", "--out", "t.ndjson", "--", "/nonexistent/agent"])
        .current_dir(&dir.0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("acp trace: cannot start `/nonexistent/agent`"),
        "{stderr}"
    );
}

/// Talks to headless Chromium over the DevTools protocol: the page stays open (no reload)
/// while the test asks what its DOM shows.
mod devtools {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::path::Path;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    pub struct Browser {
        child: Child,
        socket: tungstenite::WebSocket<TcpStream>,
        next_id: u64,
    }

    impl Drop for Browser {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    impl Browser {
        /// Chromium showing `url`, with its profile in `profile`.
        pub fn open(url: &str, profile: &Path) -> Browser {
            let child = Command::new("chromium")
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--remote-debugging-port=0",
                ])
                .arg(format!("--user-data-dir={}", profile.display()))
                .arg(url)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            let port_file = profile.join("DevToolsActivePort");
            let port = loop {
                if let Some(port) = std::fs::read_to_string(&port_file)
                    .ok()
                    .and_then(|t| t.lines().next()?.trim().parse::<u16>().ok())
                {
                    break port;
                }
                assert!(Instant::now() < deadline, "chromium gave no DevTools port");
                std::thread::sleep(Duration::from_millis(50));
            };
            let page = loop {
                let list = http_get(port, "/json/list");
                let pages: Vec<Value> = serde_json::from_str(&list).unwrap_or_default();
                let found = pages.into_iter().find(|p| {
                    p["type"] == "page" && p["url"].as_str().is_some_and(|u| u.starts_with(url))
                });
                if let Some(page) = found {
                    break page;
                }
                assert!(Instant::now() < deadline, "no page for {url}: {list}");
                std::thread::sleep(Duration::from_millis(50));
            };
            let ws = page["webSocketDebuggerUrl"].as_str().unwrap().to_owned();
            let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let (socket, _) = tungstenite::client::client(ws.as_str(), stream).unwrap();
            Browser {
                child,
                socket,
                next_id: 0,
            }
        }

        /// The value of a JavaScript expression in the page.
        pub fn eval(&mut self, expression: &str) -> Value {
            self.next_id += 1;
            let id = self.next_id;
            let call = json!({"id": id, "method": "Runtime.evaluate",
                "params": {"expression": expression, "returnByValue": true}});
            self.socket
                .send(tungstenite::Message::text(call.to_string()))
                .unwrap();
            loop {
                let message = self.socket.read().unwrap();
                let Ok(text) = message.to_text() else {
                    continue;
                };
                let Ok(reply) = serde_json::from_str::<Value>(text) else {
                    continue;
                };
                if reply["id"] == id {
                    return reply["result"]["result"]["value"].clone();
                }
            }
        }

        /// Waits (up to 10 s) until `expression` is true in the page; the page's text on
        /// failure.
        pub fn wait_for(&mut self, expression: &str, what: &str) {
            let deadline = Instant::now() + Duration::from_secs(10);
            while self.eval(expression) != Value::Bool(true) {
                if Instant::now() > deadline {
                    let text = self.eval("document.body.innerText");
                    panic!("{what}: `{expression}` never held; the page shows:\n{text}");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    fn http_get(port: u16, path: &str) -> String {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
            return String::new();
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        );
        // The answer has a Content-Length; read until the body is whole.
        let mut response = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let text = String::from_utf8_lossy(&response).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head.lines().find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")?
                        .trim()
                        .parse::<usize>()
                        .ok()
                });
                if length.is_some_and(|n| body.len() >= n) {
                    return body.to_owned();
                }
            }
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return String::new(),
                Ok(n) => response.extend_from_slice(&buf[..n]),
            }
        }
    }
}

/// Issue 52: a trace file could hold an answer before the request it answers (seq 2 before
/// seq 1): both directions numbered their lines, but queued their records apart. Here a
/// client sends 2,000 requests one at a time, each sent as soon as `cat` (the agent)
/// answered the one before, while other processes load the machine; the file holds the
/// records in `seq` order and every answer after its request.
#[test]
fn a_trace_of_fast_request_answer_pairs_is_written_in_seq_order() {
    use std::io::{BufRead, BufReader};
    let dir = Scratch::new("trace-order");
    let out = dir.0.join("t.ndjson");
    let mut child = Command::new(acp())
        .args(["trace", "--out"])
        .arg(&out)
        .args(["--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Load: busy loops on the machine's cores while the pairs cross, ended when the test
    // ends (also by a panic).
    struct Load(Vec<std::process::Child>);
    impl Drop for Load {
        fn drop(&mut self) {
            for busy in &mut self.0 {
                let _ = busy.kill();
                let _ = busy.wait();
            }
        }
    }
    let load = Load(
        (0..4)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = BufReader::new(child.stdout.take().unwrap());
    let started = Instant::now();
    let mut line = String::new();
    for id in 0..2000 {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).unwrap();
        stdin.flush().unwrap();
        line.clear();
        answers.read_line(&mut line).unwrap();
        assert!(line.contains(&format!(r#""id":{id},"#)), "{line}");
        assert!(started.elapsed() < Duration::from_secs(60), "too slow");
    }
    drop(stdin);
    drop(load);
    assert!(wait(&mut child).success());
    let records = records(&out);
    let seqs: Vec<u64> = records.iter().filter_map(|r| r["seq"].as_u64()).collect();
    assert_eq!(seqs.len(), 4000);
    let disorder = seqs.windows(2).filter(|w| w[0] > w[1]).count();
    assert_eq!(disorder, 0, "{disorder} records out of seq order");
    // Seq order is request, answer, request, answer...
    for pair in records[1..records.len() - 1].chunks(2) {
        assert_eq!(pair[0]["dir"], "client_to_agent", "{pair:?}");
        assert_eq!(pair[1]["dir"], "agent_to_client", "{pair:?}");
    }
}

/// A v2 run through the proxy reads as v2: `acp chat --protocol 2` against the echo agent
/// (which speaks v2) with `acp trace` between them, then `acp trace view` names the version,
/// and shows the turn's end from the idle state.
#[test]
fn a_v2_run_is_viewed_as_v2() {
    let dir = Scratch::new("trace-v2");
    let out = dir.0.join("v2.ndjson");
    let chat = Command::new(acp())
        .args([
            "chat",
            "--protocol",
            "2",
            "--prompt",
            "hello over v2",
            "--yes",
            "--",
        ])
        .arg(acp())
        .args(["trace", "--out"])
        .arg(&out)
        .arg("--")
        .arg(support::echo_agent())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        chat.status.success(),
        "acp chat over v2: {}\n{}",
        String::from_utf8_lossy(&chat.stdout),
        String::from_utf8_lossy(&chat.stderr)
    );
    let view = Command::new(acp())
        .args(["trace", "view"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&view.stdout);
    assert!(view.status.success(), "{text}");
    assert!(text.contains("protocol: v2\n"), "{text}");
    assert!(text.contains("last turn: end_turn"), "{text}");
    let sessions = text.split("\nsessions\n").nth(1).unwrap_or_default();
    // The idle state ended the turn; the agent's exit then ended the session.
    assert!(
        sessions.contains("  ended  1 prompt(s), 0 error(s), last turn: end_turn"),
        "{text}"
    );
}
