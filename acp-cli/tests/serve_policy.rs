//! What a remote client of `acp serve` may ask of the host, through the real binary over both
//! profiles on loopback: its stdio MCP servers are refused (a marker file never appears), its
//! http ones at loopback addresses too (a listener sees no connection), in process and
//! through the gateway in front of the echo agent (which, run directly, does start them);
//! what the operator allows works; a redirect from an allowed URL to a refused address is
//! not followed; sessions lie under the served root; the per-session bound holds; and the
//! connection keeps serving after each refusal. Bad flags are clear errors at start.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use acp_remote::{ConnectOptions, Profile};
use serde_json::{Value, json};
use support::{Scratch, Served, acp, echo_agent};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

const TOKEN: &str = "policy-test-token";

/// A running `acp serve`, stopped on drop.
struct Serve(Served);

impl Serve {
    fn start(scratch: &Scratch, options: &[&str], agent: &[&str]) -> Serve {
        let token_file = scratch.0.join("token");
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        let mut cmd = Command::new(acp());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&token_file)
            .args(options)
            .current_dir(&scratch.0)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit());
        if !agent.is_empty() {
            cmd.arg("--").args(agent);
        }
        Serve(Served::spawn(cmd))
    }

    /// The endpoint for `profile`.
    fn url(&self, profile: Profile) -> String {
        match profile {
            Profile::StreamableHttp => self.0.url.clone(),
            Profile::WebSocket => self.0.url.replace("http://", "ws://"),
        }
    }
}

/// A loopback listener that counts connections (and, if `redirect` is given, answers each
/// HTTP request with a 307 to it).
struct Listener {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

impl Listener {
    fn start(redirect: Option<String>) -> Listener {
        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        socket.set_nonblocking(true).unwrap();
        let port = socket.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            // Bounded: the tests are over well within this.
            let deadline = Instant::now() + Duration::from_secs(120);
            while Instant::now() < deadline {
                match socket.accept() {
                    Ok((mut stream, _)) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        if let Some(to) = &redirect {
                            stream.set_nonblocking(false).unwrap();
                            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                            let mut buf = [0u8; 4096];
                            let _ = stream.read(&mut buf);
                            let answer = format!(
                                "HTTP/1.1 307 Temporary Redirect\r\nLocation: {to}\r\n\
                                 Content-Length: 0\r\nConnection: close\r\n\r\n"
                            );
                            let _ = stream.write_all(answer.as_bytes());
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Listener { port, accepted }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Waits up to `secs` for a first connection.
    fn wait_for_one(&self, secs: u64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if self.accepted() > 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

/// One raw JSON-RPC connection to `acp serve`, initialized.
struct Raw {
    lines: tokio::io::Lines<tokio::io::BufReader<acp_remote::LinkReader>>,
    writer: acp_remote::LinkWriter,
    next: u64,
}

impl Raw {
    async fn connect(url: &str, profile: Profile) -> Raw {
        let options = ConnectOptions::new().token(TOKEN).profile(profile);
        let link = acp_remote::connect(url, &options).await.unwrap();
        let mut raw = Raw {
            lines: tokio::io::BufReader::new(link.reader).lines(),
            writer: link.writer,
            next: 0,
        };
        let init = raw.call("initialize", json!({"protocolVersion": 1})).await;
        assert!(init.get("result").is_some(), "{init}");
        raw
    }

    /// Sends a request; its answer (other messages skipped), within 20 s.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.writer.write_all(&line).await.unwrap();
        self.writer.flush().await.unwrap();
        let read = async {
            loop {
                let line = self
                    .lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("connection open");
                let answer: Value = serde_json::from_str(&line).unwrap();
                if answer["id"] == id && answer.get("method").is_none() {
                    return answer;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), read)
            .await
            .unwrap_or_else(|_| panic!("no answer to {method}"))
    }

    async fn new_session(&mut self, cwd: &Path, servers: Value) -> Value {
        let params = json!({"cwd": cwd, "mcpServers": servers});
        self.call("session/new", params).await
    }
}

/// `answer` is the -32602 refusal, its message holding every one of `needles`.
fn refused(answer: &Value, needles: &[&str]) {
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(message.contains(needle), "{needle:?} not in {message:?}");
    }
}

fn accepted(answer: &Value) -> String {
    answer["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("not a session: {answer}"))
        .to_owned()
}

/// A stdio server entry whose program writes `marker`.
fn touching(marker: &Path) -> Value {
    let script = format!("touch {}", marker.display());
    json!({"name": "x", "command": "/bin/sh", "args": ["-c", script], "env": []})
}

fn http_server(name: &str, url: &str) -> Value {
    json!({"type": "http", "name": name, "url": url, "headers": []})
}

const PROFILES: [Profile; 2] = [Profile::StreamableHttp, Profile::WebSocket];

/// The refusals every served agent gets, on one connection of each profile.
async fn refuses_what_a_remote_client_names(serve: &Serve, root: &Path, marker: &Path) {
    let listener = Listener::start(None);
    let loopback = format!("http://127.0.0.1:{}/mcp", listener.port);
    for profile in PROFILES {
        let mut raw = Raw::connect(&serve.url(profile), profile).await;
        let answer = raw.new_session(root, json!([touching(marker)])).await;
        refused(&answer, &["\"x\"", "--mcp-allow-command /bin/sh"]);
        let answer = raw
            .new_session(root, json!([http_server("web", &loopback)]))
            .await;
        refused(&answer, &["\"web\"", "loopback", "--mcp-allow-url"]);
        let spelled = json!([http_server(
            "odd",
            &format!("http://2130706433:{}/", listener.port)
        )]);
        refused(&raw.new_session(root, spelled).await, &["\"odd\""]);
        let mapped = format!("http://[::ffff:127.0.0.1]:{}/", listener.port);
        let answer = raw
            .new_session(root, json!([http_server("v6", &mapped)]))
            .await;
        refused(&answer, &["\"v6\""]);
        // The same entries in `session/load` and `session/resume`.
        for method in ["session/load", "session/resume"] {
            let params = json!({"sessionId": "s", "cwd": root, "mcpServers": [touching(marker)]});
            refused(&raw.call(method, params).await, &["--mcp-allow-command"]);
        }
        // Nine servers is one over the default bound: its own error.
        let many: Vec<Value> = (0..9)
            .map(|i| json!({"type": "acp", "name": format!("a{i}"), "serverId": format!("i{i}")}))
            .collect();
        let answer = raw.new_session(root, Value::Array(many)).await;
        refused(&answer, &["at most 8", "--mcp-max-servers"]);
        // The served root.
        let root_text = root.display().to_string();
        refused(
            &raw.new_session(Path::new("/etc"), json!([])).await,
            &["/etc", &root_text, "--root"],
        );
        let above = root.join("../x");
        refused(&raw.new_session(&above, json!([])).await, &[&root_text]);
        let params = json!({"cwd": root, "mcpServers": [], "additionalDirectories": ["/tmp"]});
        refused(
            &raw.call("session/new", params).await,
            &["/tmp", &root_text],
        );
        // And the connection goes on.
        let inside = root.join("project");
        let params = json!({"cwd": inside, "mcpServers": [], "additionalDirectories": [root]});
        accepted(&raw.call("session/new", params).await);
    }
    // Anything started would have had time to act.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!marker.exists(), "a refused stdio server ran");
    assert_eq!(listener.accepted(), 0, "a refused http server was reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtin_agent_starts_and_reaches_nothing_a_remote_client_names() {
    let scratch = Scratch::new("policy-builtin");
    let serve = Serve::start(&scratch, &[], &[]);
    let marker = scratch.0.join("pwned");
    refuses_what_a_remote_client_names(&serve, &scratch.0, &marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_refuses_the_same_before_the_agent_sees_them() {
    let scratch = Scratch::new("policy-gateway");
    let echo = echo_agent();
    let marker = scratch.0.join("pwned");
    // Run directly, the echo agent does start a stdio server it is given.
    let direct = scratch.0.join("direct");
    run_echo_directly(&echo, &scratch.0, &touching(&direct));
    assert!(
        wait_for_file(&direct, 10),
        "the echo agent starts MCP servers"
    );
    let serve = Serve::start(&scratch, &[], &[echo.to_str().unwrap()]);
    refuses_what_a_remote_client_names(&serve, &scratch.0, &marker).await;
}

/// Runs the echo agent over stdio and sends `session/new` with `server`; returns once the
/// session exists (the agent is then ended).
fn run_echo_directly(echo: &Path, cwd: &Path, server: &Value) {
    let mut child = Command::new(echo)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": [server]}});
    writeln!(input, "{init}\n{new}").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let output = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx.recv_timeout(left).expect("the echo agent answers");
        if line.contains("\"id\":2") {
            assert!(line.contains("sessionId"), "{line}");
            break;
        }
    }
    // Time for the server to start, then the agent goes (and its servers with it).
    let _ = wait_for_file(&cwd.join("direct"), 10);
    drop(input);
    let _ = child.kill();
    let _ = child.wait();
}

fn wait_for_file(path: &Path, secs: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_operator_allows_is_started_and_reached() {
    let scratch = Scratch::new("policy-allowed");
    let listener = Listener::start(None);
    let allowed = format!("http://127.0.0.1:{}/", listener.port);
    // The host's own server, from an MCP config file: added to every session.
    let host_marker = scratch.0.join("host-server-ran");
    let config = scratch.0.join("mcp.json");
    let script = format!("touch {}", host_marker.display());
    let file = json!({"mcpServers": {"own": {"command": "/bin/sh", "args": ["-c", script]}}});
    std::fs::write(&config, file.to_string()).unwrap();
    let options = [
        "--mcp-allow-command",
        "/bin/sh",
        "--mcp-allow-url",
        &allowed,
        "--mcp-config",
        config.to_str().unwrap(),
        "--mcp-max-servers",
        "2",
    ];
    let serve = Serve::start(&scratch, &options, &[]);
    for (n, profile) in PROFILES.into_iter().enumerate() {
        let mut raw = Raw::connect(&serve.url(profile), profile).await;
        let marker = scratch.0.join(format!("allowed-{n}"));
        accepted(
            &raw.new_session(&scratch.0, json!([touching(&marker)]))
                .await,
        );
        assert!(wait_for_file(&marker, 10), "an allowed command runs");
        assert!(wait_for_file(&host_marker, 10), "the host's server runs");
        std::fs::remove_file(&host_marker).unwrap();
        // Another program is still refused, and so is the loader's environment.
        let other = json!({"name": "y", "command": "/bin/bash", "args": [], "env": []});
        refused(
            &raw.new_session(&scratch.0, json!([other])).await,
            &["--mcp-allow-command /bin/bash"],
        );
        let mut preload = touching(&marker);
        preload["env"] = json!([{"name": "LD_PRELOAD", "value": "/tmp/x.so"}]);
        refused(
            &raw.new_session(&scratch.0, json!([preload])).await,
            &["LD_PRELOAD"],
        );
        let three = json!([touching(&marker), touching(&marker), touching(&marker)]);
        refused(&raw.new_session(&scratch.0, three).await, &["at most 2"]);
    }
    let mut raw = Raw::connect(&serve.0.url, Profile::WebSocket).await;
    let url = format!("{allowed}mcp");
    accepted(
        &raw.new_session(&scratch.0, json!([http_server("web", &url)]))
            .await,
    );
    assert!(listener.wait_for_one(10), "an allowed URL is reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_from_an_allowed_url_to_a_refused_address_is_not_followed() {
    let scratch = Scratch::new("policy-redirect");
    let target = Listener::start(None);
    let to = format!("http://127.0.0.1:{}/mcp", target.port);
    let redirector = Listener::start(Some(to));
    let allowed = format!("http://127.0.0.1:{}/", redirector.port);
    let serve = Serve::start(&scratch, &["--mcp-allow-url", &allowed], &[]);
    for profile in PROFILES {
        let mut raw = Raw::connect(&serve.url(profile), profile).await;
        let url = format!("{allowed}mcp");
        accepted(
            &raw.new_session(&scratch.0, json!([http_server("web", &url)]))
                .await,
        );
    }
    assert!(redirector.wait_for_one(10), "the allowed URL is reached");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(target.accepted(), 0, "the redirect was followed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_identity_works_under_its_own_root() {
    let scratch = Scratch::new("policy-root");
    let root = scratch.0.join("served");
    std::fs::create_dir(&root).unwrap();
    let root_arg = root.to_str().unwrap();
    let serve = Serve::start(&scratch, &["--root", root_arg, "--root-per-identity"], &[]);
    for profile in PROFILES {
        let mut raw = Raw::connect(&serve.url(profile), profile).await;
        // The token's identity is `bearer`.
        let own = root.join("bearer").join("project");
        accepted(&raw.new_session(&own, json!([])).await);
        assert!(root.join("bearer").is_dir(), "created on first use");
        refused(&raw.new_session(&root, json!([])).await, &["bearer"]);
        refused(
            &raw.new_session(&root.join("other"), json!([])).await,
            &["bearer"],
        );
        refused(&raw.new_session(&scratch.0, json!([])).await, &["bearer"]);
        accepted(&raw.new_session(&own, json!([])).await);
    }
}

/// `acp serve OPTIONS` fails at start with a message holding `needle`.
fn fails_at_start(scratch: &Scratch, options: &[&str], needle: &str) {
    let mut child = Command::new(acp())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(options)
        .current_dir(&scratch.0)
        .env("ACP_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("acp serve {options:?} started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{options:?}: {said}");
    assert!(said.contains(needle), "{options:?}: {said}");
}

#[test]
fn bad_flags_are_clear_errors_at_start() {
    let scratch = Scratch::new("policy-bad");
    let missing: PathBuf = scratch.0.join("no-such.json");
    fails_at_start(
        &scratch,
        &["--mcp-config", missing.to_str().unwrap()],
        "--mcp-config",
    );
    let malformed = scratch.0.join("bad.json");
    std::fs::write(&malformed, "{\"mcpServers\": [").unwrap();
    fails_at_start(
        &scratch,
        &["--mcp-config", malformed.to_str().unwrap()],
        "not an MCP config",
    );
    fails_at_start(
        &scratch,
        &["--root", "/no/such/root"],
        "--root /no/such/root",
    );
    fails_at_start(
        &scratch,
        &["--mcp-allow-url", "file:///etc/"],
        "--mcp-allow-url",
    );
    fails_at_start(&scratch, &["--mcp-allow-command", "sh"], "absolute path");
}
