//! `acp trace`: a transparent proxy (bytes, exit status and signals pass through, every line
//! recorded in order) and `acp trace view` (summary, and a page checked in headless Chromium).

mod support;

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

/// Our client and our agent through the proxy, then the trace viewed as text and as a page.
#[test]
fn our_client_and_agent_through_the_proxy_and_the_page_in_chromium() {
    let dir = Scratch::new("trace-chat");
    let acp = acp();
    let trace = dir.0.join("chat.ndjson");
    let out = Command::new(&acp)
        .args(["chat", "--prompt", "traced turn", "--yes", "--"])
        .arg(&acp)
        .args(["trace", "--out"])
        .arg(&trace)
        .arg("--")
        .arg(&acp)
        .arg("agent")
        .current_dir(&dir.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("You said: traced turn"), "{stdout}");
    // Add a failing request to the trace so the views have an error to show.
    let mut text = std::fs::read_to_string(&trace).unwrap();
    let extra = [
        r#"{"ts":9999999999.0,"dir":"client_to_agent","seq":100000,"line":"{\"jsonrpc\":\"2.0\",\"id\":900,\"method\":\"session/set_mode\",\"params\":{\"sessionId\":\"builtin-1\",\"modeId\":\"nope\"}}"}"#,
        r#"{"ts":9999999999.002,"dir":"agent_to_client","seq":100001,"line":"{\"jsonrpc\":\"2.0\",\"id\":900,\"error\":{\"code\":-32602,\"message\":\"unknown mode\"}}"}"#,
    ];
    // Keep the exit record last.
    let exit_at = text.trim_end().rfind('\n').unwrap() + 1;
    let exit_line = text[exit_at..].to_owned();
    text.truncate(exit_at);
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&exit_line);
    std::fs::write(&trace, &text).unwrap();

    let view = Command::new(&acp)
        .args(["trace", "view"])
        .arg(&trace)
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&view.stdout);
    assert_eq!(
        view.status.code(),
        Some(0),
        "{summary}{}",
        String::from_utf8_lossy(&view.stderr)
    );
    for method in [
        "initialize",
        "session/new",
        "session/prompt",
        "session/request_permission",
        "terminal/create",
    ] {
        assert!(summary.contains(method), "{method} missing:\n{summary}");
    }
    assert!(summary.contains("session/update"), "{summary}");
    assert!(summary.contains("-32602 unknown mode"), "{summary}");
    assert!(summary.contains("builtin-1  ended"), "{summary}");
    // Every request of both sides found its response (the agent's too, though the client
    // answers so fast that the file may hold the answer first).
    assert!(!summary.contains("problems"), "{summary}");
    assert!(!summary.contains("to no request"), "{summary}");

    let page = dir.0.join("page.html");
    let view = Command::new(&acp)
        .args(["trace", "view"])
        .arg(&trace)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(view.status.code(), Some(0));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));

    if !have("chromium", "the trace page in headless Chromium") {
        return;
    }
    let profile = dir.0.join("chromium-profile");
    let chromium = |extra: &[&str]| {
        let mut c = Command::new("chromium");
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()));
        c.output().unwrap()
    };
    let dom = chromium(&["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("data-rendered=\"yes\""),
        "the script did not run:\n{dom}"
    );
    assert!(
        dom.contains("data-lane=\"client\"") && dom.contains("data-lane=\"agent\""),
        "lanes"
    );
    assert!(
        dom.matches("class=\"msg c2a request\"").count() >= 4,
        "client requests drawn"
    );
    assert!(
        dom.contains("class=\"msg a2c request\""),
        "agent requests drawn"
    );
    assert!(
        dom.contains("class=\"msg c2a error\"") || dom.contains("class=\"msg a2c error\""),
        "error arrow"
    );
    assert!(
        dom.contains("class=\"pair error\""),
        "error pair highlighted"
    );
    assert!(
        dom.matches("class=\"pair\"").count() >= 5,
        "request/response pairs"
    );
    assert!(dom.contains("unknown mode"), "error text");
    assert!(
        dom.contains("data-session=\"builtin-1\""),
        "notifications grouped by session"
    );
    assert!(dom.contains("agent_message_chunk"), "notification kinds");
    assert!(dom.contains("data-state=\"ended\""), "session health");
    assert!(
        dom.contains("class=\"histogram\" data-method=\"session/prompt\""),
        "histograms"
    );
    assert!(dom.contains("class=\"rate c2a\""), "message-rate timeline");
    let shot = dir.0.join("page.png");
    let out = chromium(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=1000,1400",
    ]);
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "screenshot of {} bytes",
        png.len()
    );
}

#[test]
fn a_truncated_or_foreign_trace_is_reported_by_line() {
    let dir = Scratch::new("trace-bad");
    let path = dir.0.join("bad.ndjson");
    std::fs::write(
        &path,
        "{\"ts\":1.0,\"dir\":\"client_to_agent\",\"seq\":0,\"line\":\"{}\"}\nhello world\n{\"ts\":2.0,\"dir\":\"agent_to",
    )
    .unwrap();
    let out = Command::new(acp())
        .args(["trace", "view"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2: not a trace record"), "{stderr}");
    assert!(
        stderr.contains("line 3: truncated (the file ends inside a record)"),
        "{stderr}"
    );
    let out = Command::new(acp())
        .args(["trace", "view", "/nonexistent.ndjson"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("acp trace view: cannot read /nonexistent.ndjson")
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

/// A JSON-RPC client on the stdio of `acp trace --serve ... -- acp agent`: it answers the
/// agent's permission requests with "reject" and anything else it asks with an error.
struct Wire {
    child: std::process::Child,
    stdin: std::sync::Arc<std::sync::Mutex<std::process::ChildStdin>>,
    answers: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl Wire {
    fn start(dir: &std::path::Path) -> (Wire, String) {
        use std::io::BufRead;
        let mut child = Command::new(acp())
            .args(["trace", "--serve", "127.0.0.1:0", "--out"])
            .arg(dir.join("live.ndjson"))
            .arg("--")
            .arg(acp())
            .arg("agent")
            .current_dir(dir)
            .env_remove("ACP_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        stderr.read_line(&mut first).unwrap();
        let url = first
            .trim()
            .strip_prefix("acp trace: live page at ")
            .unwrap_or_else(|| panic!("no address on stderr: {first:?}"))
            .to_owned();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let stdin = std::sync::Arc::new(std::sync::Mutex::new(child.stdin.take().unwrap()));
        let answers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (to_agent, seen) = (stdin.clone(), answers.clone());
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                match (message.get("method"), message.get("id")) {
                    (Some(method), Some(id)) => {
                        let reply = if method == "session/request_permission" {
                            serde_json::json!({"jsonrpc": "2.0", "id": id, "result":
                                {"outcome": {"outcome": "selected", "optionId": "reject"}}})
                        } else {
                            serde_json::json!({"jsonrpc": "2.0", "id": id, "error":
                                {"code": -32601, "message": "not in this test"}})
                        };
                        let mut stdin = to_agent.lock().unwrap();
                        let _ = writeln!(stdin, "{reply}");
                    }
                    (None, Some(_)) => seen.lock().unwrap().push(message),
                    _ => {}
                }
            }
        });
        (
            Wire {
                child,
                stdin,
                answers,
            },
            url,
        )
    }

    /// Sends a request and waits (up to 20 s) for its answer.
    fn call(&self, id: u64, method: &str, params: serde_json::Value) -> serde_json::Value {
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin.lock().unwrap(), "{request}").unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(answer) = self.answers.lock().unwrap().iter().find(|a| a["id"] == id) {
                return answer.clone();
            }
            assert!(Instant::now() < deadline, "no answer to {method}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn new_session(&self, id: u64, cwd: &std::path::Path) -> String {
        let answer = self.call(
            id,
            "session/new",
            serde_json::json!({"cwd": cwd, "mcpServers": []}),
        );
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_owned()
    }

    fn prompt(&self, id: u64, session: &str, text: &str) {
        let prompt =
            serde_json::json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        self.call(id, "session/prompt", prompt);
    }
}

impl Drop for Wire {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `acp trace --serve`: headless Chromium keeps the live page open while the built-in agent
/// runs turns through the proxy; the page shows each step without a reload, pauses and
/// follows again.
#[test]
fn the_live_page_follows_turns_as_they_happen() {
    if !have("chromium", "the live trace page in headless Chromium") {
        return;
    }
    let dir = Scratch::new("trace-live");
    let (wire, url) = Wire::start(&dir.0);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let init = wire.call(
        1,
        "initialize",
        serde_json::json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let first = wire.new_session(2, &dir.0);

    let mut page = devtools::Browser::open(&url, &dir.0.join("chromium-profile"));
    page.wait_for(
        &format!("!!document.querySelector('#sessions [data-session=\"{first}\"]')"),
        "the first session",
    );
    // Set on the drawn page: still there at the end means no reload happened.
    page.eval("window.loadedOnce = 'yes'");
    page.wait_for(
        "document.querySelectorAll('#pairs tr.pair').length === 2",
        "initialize and session/new paired",
    );
    let count = |page: &mut devtools::Browser, selector: &str| {
        page.eval(&format!("document.querySelectorAll('{selector}').length"))
            .as_u64()
            .unwrap()
    };

    // Mid-run: a turn streams in.
    wire.prompt(3, &first, "hello live page");
    page.wait_for(
        "document.querySelectorAll('#pairs tr.pair').length >= 3 && document.getElementById('notifications').textContent.includes('agent_message_chunk')",
        "the turn's pair and its chunks",
    );
    let mid = count(&mut page, "#sequence g.msg");
    assert!(mid >= 6, "{mid} messages drawn");
    assert_eq!(count(&mut page, "#errors tr.error"), 0);

    // Paused: more traffic, the view stays as it was.
    page.eval("document.getElementById('follow').click()");
    assert_eq!(page.eval("document.body.dataset.live"), "paused");
    let second = wire.new_session(4, &dir.0);
    let bad = wire.call(
        5,
        "session/set_mode",
        serde_json::json!({"sessionId": second, "modeId": "no-such-mode"}),
    );
    assert!(bad.get("error").is_some(), "{bad}");
    page.wait_for(
        "document.getElementById('live-status').textContent.startsWith('paused')",
        "the status says paused",
    );
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        count(&mut page, "#sequence g.msg"),
        mid,
        "drawn while paused"
    );
    assert_eq!(
        count(&mut page, "#errors tr.error"),
        0,
        "drawn while paused"
    );

    // Following again: the new session and the error appear, highlighted.
    page.eval("document.getElementById('follow').click()");
    page.wait_for(
        &format!("!!document.querySelector('#sessions [data-session=\"{second}\"]')"),
        "the second session",
    );
    page.wait_for(
        "document.querySelectorAll('#errors tr.error').length === 1 && document.querySelectorAll('#pairs tr.pair.error').length === 1 && document.querySelectorAll('#sequence g.msg.error').length === 1",
        "the error, highlighted in the errors, the pairs and the sequence",
    );
    assert!(
        page.eval("document.getElementById('errors').textContent")
            .as_str()
            .unwrap()
            .contains("-32602"),
        "the error's code"
    );

    // After more turns: counts grow, still without a reload.
    wire.prompt(6, &second, "and another turn");
    page.wait_for(
        &format!("document.querySelectorAll('#sequence g.msg').length > {mid} + 4"),
        "more messages",
    );
    page.wait_for(
        "document.querySelector('#histograms [data-method=\"session/prompt\"] h3').textContent.includes('2 request(s)')",
        "both prompts in the latency histogram",
    );
    assert_eq!(
        page.eval("window.loadedOnce"),
        "yes",
        "the page was reloaded"
    );
    assert_eq!(page.eval("document.body.dataset.live"), "following");
    let links = page.eval(
        "[...document.querySelectorAll('[src],[href]')].map(e => e.getAttribute('src') || e.getAttribute('href')).join(' ')",
    );
    assert_eq!(links, "", "the page loads nothing");
}

/// `GET path` with `Host: host` on `addr`: the status line.
fn status(addr: &str, path: &str, host: &str) -> String {
    use std::io::{BufRead, BufReader};
    let mut socket = std::net::TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        socket,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(socket).read_line(&mut line).unwrap();
    line
}

/// `acp trace --serve ADDR [--token-file F] -- cat`: the address it printed.
fn live_proxy(
    dir: &std::path::Path,
    serve: &str,
    token: Option<&str>,
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut cmd = Command::new(acp());
    cmd.args(["trace", "--serve", serve]);
    if let Some(token) = token {
        let file = dir.join("token");
        std::fs::write(&file, format!("{token}\n")).unwrap();
        cmd.arg("--token-file").arg(file);
    }
    let mut child = cmd
        .args(["--", "cat"])
        .env_remove("ACP_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    (child, first)
}

/// Who may see the live page: loopback callers naming a loopback host when there is no
/// token (a DNS-rebound page names another), token holders when there is one, and nobody
/// beyond loopback without a token.
#[test]
fn the_live_page_is_loopback_only_unless_a_token_is_given() {
    let dir = Scratch::new("trace-live-auth");
    let (mut open, printed) = live_proxy(&dir.0, "0.0.0.0:0", None);
    assert!(printed.contains("refusing to serve"), "{printed}");
    assert_eq!(wait(&mut open).code(), Some(127));

    let (mut child, printed) = live_proxy(&dir.0, "127.0.0.1:0", None);
    let addr = printed
        .trim()
        .trim_start_matches("acp trace: live page at http://")
        .trim_end_matches('/')
        .to_owned();
    assert!(status(&addr, "/", &addr).contains(" 200 "));
    assert!(status(&addr, "/", "localhost:1").contains(" 200 "));
    assert!(status(&addr, "/", "evil.example:80").contains(" 401 "));
    assert!(status(&addr, "/nothing", &addr).contains(" 404 "));
    drop(child.stdin.take());
    assert_eq!(wait(&mut child).code(), Some(0));

    let (mut child, printed) = live_proxy(&dir.0, "127.0.0.1:0", Some("t0ken/+x"));
    assert!(printed.trim().ends_with("/?token=TOKEN"), "{printed}");
    let addr = printed
        .trim()
        .trim_start_matches("acp trace: live page at http://")
        .trim_end_matches("/?token=TOKEN")
        .to_owned();
    assert!(status(&addr, "/", &addr).contains(" 401 "));
    assert!(status(&addr, "/?token=wrong", &addr).contains(" 401 "));
    assert!(status(&addr, "/?token=t0ken%2F%2Bx", &addr).contains(" 200 "));
    assert!(status(&addr, "/events?token=t0ken%2F%2Bx", &addr).contains(" 200 "));
    drop(child.stdin.take());
    assert_eq!(wait(&mut child).code(), Some(0));
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
