//! `acp trace --serve`: the live page follows turns as they happen, loopback only unless a
//! token is given.

use super::*;

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
