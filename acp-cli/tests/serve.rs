//! `acp serve` and `acp chat --url`, end to end with real processes on loopback: the
//! built-in agent in process and a gateway to `acp agent`, over Streamable HTTP and
//! WebSocket; a wrong token refused; the URL printed with the real port.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{Scratch, acp};

/// A running `acp serve`, stopped (SIGTERM) on drop.
struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    fn start(scratch: &Scratch, token_file: &std::path::Path, agent: &[&str]) -> Serve {
        Serve::start_with(scratch, token_file, &[], agent)
    }

    fn start_with(
        scratch: &Scratch,
        token_file: &std::path::Path,
        options: &[&str],
        agent: &[&str],
    ) -> Serve {
        let mut cmd = Command::new(acp());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(token_file)
            .args(options)
            .current_dir(&scratch.0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if !agent.is_empty() {
            cmd.arg("--").args(agent);
        }
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut printed = Vec::new();
        let url = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(20))
                .expect("acp serve prints its URL");
            printed.push(line.clone());
            if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                break url.to_owned();
            }
        };
        // The connect hint follows: the chat command with the same URL and token file.
        let hint = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let hint = hint + &rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(
            hint.contains(&format!("acp chat --url {url} --token-file")),
            "{hint}"
        );
        assert!(!url.ends_with(":0/acp"), "the real port is printed: {url}");
        Serve { child, url }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(
                    status.success(),
                    "acp serve stops cleanly on SIGTERM: {status}"
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        panic!("acp serve did not stop on SIGTERM");
    }
}

/// `acp chat --url URL [extra] --prompt TEXT --yes` with a time limit.
fn chat(scratch: &Scratch, url: &str, extra: &[&str], token: Option<&str>) -> Output {
    let mut args = vec!["chat", "--url", url];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--prompt", "hello remote", "--yes"]);
    acp_run(scratch, &args, token)
}

/// `acp ARGS...` with ACP_TOKEN set to `token` (or unset) and a time limit.
fn acp_run(scratch: &Scratch, args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = Command::new(acp());
    cmd.args(args)
        .current_dir(&scratch.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("ACP_TOKEN");
    if let Some(token) = token {
        cmd.env("ACP_TOKEN", token);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("acp {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn check_turn(out: &Output, what: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{what}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("You said: hello remote"),
        "{what}: {stdout}"
    );
    assert!(stdout.contains("end_turn"), "{what}: {stdout}");
}

fn serve_and_chat(name: &str, agent: &[&str]) {
    let scratch = Scratch::new(name);
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let server = Serve::start(&scratch, &token_file, agent);
    let file = token_file.to_str().unwrap();
    check_turn(
        &chat(&scratch, &server.url, &["--token-file", file], None),
        "http",
    );
    check_turn(
        &chat(&scratch, &server.url, &["--ws"], Some("s3cret-token")),
        "ws flag",
    );
    let ws_url = server.url.replace("http://", "ws://");
    check_turn(
        &chat(&scratch, &ws_url, &["--token-file", file], None),
        "ws url",
    );
    let refused = chat(&scratch, &server.url, &[], Some("wrong"));
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stdout) + String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("401 Unauthorized"), "{said}");
}

#[test]
fn serve_the_builtin_agent_and_chat_over_both_profiles() {
    serve_and_chat("serve-builtin", &[]);
}

#[test]
fn serve_an_agent_command_as_a_gateway_and_chat_over_both_profiles() {
    let acp = acp();
    serve_and_chat("serve-gateway", &[acp.to_str().unwrap(), "agent"]);
}

/// `GET path` on the server of `url` with the bearer token: the status line and the body.
fn http_get(url: &str, path: &str, token: &str) -> (String, String) {
    use std::io::{Read, Write};
    let host = url.trim_start_matches("http://").trim_end_matches("/acp");
    let mut socket = std::net::TcpStream::connect(host).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
         Connection: close\r\n\r\n"
    );
    socket.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

/// `acp serve --metrics` in front of a gateway: each chat starts an `acp agent` process, and
/// `/metrics` counts them and their turns (the series as Prometheus text).
#[test]
fn serve_with_metrics_counts_the_gateway_agents_and_turns() {
    let scratch = Scratch::new("serve-metrics");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let acp = acp();
    let agent = [acp.to_str().unwrap(), "agent"];
    let server = Serve::start_with(&scratch, &token_file, &["--metrics"], &agent);
    for _ in 0..2 {
        let out = chat(&scratch, &server.url, &[], Some("s3cret-token"));
        check_turn(&out, "http");
    }
    let (status, _) = http_get(&server.url, "/readyz", "");
    assert!(status.contains(" 200 "), "{status}");
    let (status, _) = http_get(&server.url, "/metrics", "wrong");
    assert!(status.contains(" 401 "), "{status}");
    let value = |text: &str, series: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map(|v| v.trim().parse::<f64>().unwrap())
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let (status, text) = http_get(&server.url, "/metrics", "s3cret-token");
        assert!(status.contains(" 200 "), "{status}");
        // The agents end with their connections (reaped in the background).
        if value(&text, "acp_agent_processes") == Some(0.0) || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(value(&text, "acp_agent_processes"), Some(0.0), "{text}");
    assert_eq!(
        value(&text, "acp_agent_processes_started_total"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(value(&text, "acp_connections_total"), Some(2.0), "{text}");
    let prompts = "acp_requests_total{method=\"session/prompt\",outcome=\"ok\"}";
    assert_eq!(value(&text, prompts), Some(2.0), "{text}");
}

#[test]
fn serve_refuses_an_empty_token_file() {
    let scratch = Scratch::new("serve-empty-token");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "\n").unwrap();
    let out = Command::new(acp())
        .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("empty"));
}

/// `acp check --url URL [--ws] --token-file F` with a time limit.
fn check(scratch: &Scratch, url: &str, extra: &[&str], token_file: &str) -> Output {
    let mut child = Command::new(acp())
        .args([
            "check",
            "--timing-misses-ok",
            "--url",
            url,
            "--token-file",
            token_file,
        ])
        .args(extra)
        .current_dir(&scratch.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("acp check --url {url} {extra:?} hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The conformance kit through the gateway gives the verdicts it gives over stdio: no check
/// fails over either profile (malformed lines, unknown sessions and cancellation included).
#[test]
fn check_grades_a_gateway_agent_over_both_profiles_as_over_stdio() {
    let scratch = Scratch::new("serve-check");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let acp = acp();
    let server = Serve::start(&scratch, &token_file, &[acp.to_str().unwrap(), "agent"]);
    let file = token_file.to_str().unwrap();
    for extra in [&[][..], &["--ws"][..]] {
        let out = check(&scratch, &server.url, extra, file);
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{extra:?}: {report}");
        assert!(report.contains(" 0 failed"), "{extra:?}: {report}");
    }
}

/// `acp serve --store DIR`: a session made over one connection is listed over another
/// (`acp sessions --url`) and loaded, with its history, over either profile
/// (`acp chat --url --load`: `session/load` with `Acp-Session-Id`, its stream opened after).
#[test]
fn serve_with_a_store_lists_and_loads_sessions_over_both_profiles() {
    let scratch = Scratch::new("serve-store");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let store = scratch.0.join("sessions");
    let server = Serve::start_with(
        &scratch,
        &token_file,
        &["--store", store.to_str().unwrap()],
        &[],
    );
    let token = Some("s3cret-token");
    check_turn(&chat(&scratch, &server.url, &[], token), "first turn");
    let listed = acp_run(&scratch, &["sessions", "--url", &server.url], token);
    let listing = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.status.success(), "{listing}");
    let id = listing
        .split_whitespace()
        .next()
        .expect("one session listed")
        .to_owned();
    assert!(listing.contains("hello remote"), "{listing}");
    for profile in [&[][..], &["--ws"][..]] {
        let mut extra = profile.to_vec();
        extra.extend_from_slice(&["--load", &id]);
        let out = chat(&scratch, &server.url, &extra, token);
        check_turn(&out, "loaded");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("earlier turn"), "{profile:?}: {stdout}");
    }
}
