//! `acp serve` and `acp chat --url`, end to end with real processes on loopback: the
//! built-in agent in process and a gateway to `acp agent`, over Streamable HTTP and
//! WebSocket; a wrong token refused; the URL printed with the real port; and two hosts on
//! one PostgreSQL store behind a real HAProxy (Debian's package), where a session made on
//! one host is listed by both and loaded through the balancer after its host went away.
//! Identities: a token file of `NAME:TOKEN` lines (re-read on SIGHUP; a malformed line an
//! error at start), each identity reaching only its own sessions on a directory store and
//! on two hosts sharing PostgreSQL, across a `kill -9`.

mod support;

#[path = "../../acp-store-postgres/tests/support/mod.rs"]
mod pg;

use std::io::BufReader;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::{Scratch, Served, acp};

/// A running `acp serve`, stopped (SIGTERM, and it must exit cleanly) on drop unless killed.
struct Serve {
    served: Served,
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
        Serve::start_logged(scratch, token_file, options, agent, Stdio::inherit())
    }

    /// [`Serve::start_with`], its stderr (the log) going to `stderr`.
    fn start_logged(
        scratch: &Scratch,
        token_file: &std::path::Path,
        options: &[&str],
        agent: &[&str],
        stderr: Stdio,
    ) -> Serve {
        let mut cmd = Command::new(acp());
        cmd.arg("serve");
        if !options.contains(&"--listen") {
            cmd.args(["--listen", "127.0.0.1:0"]);
        }
        cmd.arg("--token-file")
            .arg(token_file)
            .args(options)
            .current_dir(&scratch.0)
            .stdin(Stdio::null())
            .stderr(stderr);
        if !agent.is_empty() {
            cmd.arg("--").args(agent);
        }
        let served = Served::spawn(cmd);
        let url = served.url.clone();
        // The connect hint follows: the chat command with the same URL and token file (a
        // file of named identities is not a client's: then the token in ACP_TOKEN).
        let next = || served.next_line(Duration::from_secs(5)).unwrap();
        let hint = next() + &next();
        assert!(
            hint.contains(&format!("acp chat --url {url} --token-file"))
                || hint.contains(&format!("acp chat --url {url} (with ACP_TOKEN set to")),
            "{hint}"
        );
        assert!(!url.ends_with(":0/acp"), "the real port is printed: {url}");
        Serve { served, url }
    }

    /// `kill -9`: the host dies mid-whatever, as in a crash.
    fn kill_9(&mut self) {
        self.served.kill_9();
    }

    /// `host:port`.
    fn host(&self) -> String {
        let url = self.url.trim_start_matches("http://");
        url.trim_end_matches("/acp").to_owned()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        match self.served.stop() {
            Ok(Some(status)) => assert!(
                status.success(),
                "acp serve stops cleanly on SIGTERM: {status}"
            ),
            Ok(None) => {}
            Err(e) => panic!("acp serve: {e}"),
        }
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
    let child = cmd.spawn().unwrap();
    support::output_within(child, Duration::from_secs(30), &format!("acp {args:?}"))
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

/// The first event of the SSE stream at `path` (no Authorization header: the token, if any,
/// is in the query, as a browser page gives it).
fn first_event(url: &str, path: &str) -> serde_json::Value {
    use std::io::{BufRead, Write};
    let host = url.trim_start_matches("http://").trim_end_matches("/acp");
    let mut socket = std::net::TcpStream::connect(host).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n");
    socket.write_all(request.as_bytes()).unwrap();
    let mut lines = BufReader::new(socket).lines();
    let status = lines.next().unwrap().unwrap();
    assert!(status.contains(" 200 "), "{status}");
    for line in lines {
        let line = line.unwrap();
        // Chunked: the event's line is whole in one chunk.
        if let Some(data) = line.strip_prefix("data: ") {
            return serde_json::from_str(data).unwrap();
        }
    }
    panic!("the stream ended without an event");
}

/// `acp serve --metrics --dashboard` in front of a gateway: each chat starts an `acp agent`
/// process, `/metrics` counts them and their turns (the series as Prometheus text), and the
/// dashboard's events show both connections' turns, their ids told apart.
#[test]
fn serve_with_metrics_counts_the_gateway_agents_and_turns() {
    let scratch = Scratch::new("serve-metrics");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let acp = acp();
    let agent = [acp.to_str().unwrap(), "agent"];
    let server = Serve::start_with(&scratch, &token_file, &["--metrics", "--dashboard"], &agent);
    // The connection ends with the chat: its close frame over WebSocket, its goodbye
    // `DELETE` over HTTP (which the chat waits to get out before it exits), and the agent
    // process with it.
    for profile in [&["--ws"][..], &[][..]] {
        let out = chat(&scratch, &server.url, profile, Some("s3cret-token"));
        check_turn(&out, "ws");
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
        // The agents end with their connections (reaped in the background), well before the
        // idle timeout (10 minutes).
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

    // The dashboard: behind the token, which a browser gives in the query.
    let (status, _) = http_get(&server.url, "/", "wrong");
    assert!(status.contains(" 401 "), "{status}");
    let (status, _) = http_get(&server.url, "/events?token=wrong", "");
    assert!(status.contains(" 401 "), "{status}");
    let (status, page) = http_get(&server.url, "/?token=s3cret-token", "");
    assert!(status.contains(" 200 "), "{status}");
    assert!(page.contains("<title>acp live: acp serve"), "{page}");
    assert!(page.contains("EventSource('events'+location.search)"));
    let data = first_event(&server.url, "/events?token=s3cret-token");
    assert_eq!(data["requests"]["session/prompt"]["requests"], 2, "{data}");
    assert_eq!(data["requests"]["session/prompt"]["errors"], 0, "{data}");
    assert!(data["live"]["total"].as_u64().unwrap() >= 10, "{data}");
    let ids: Vec<&str> = data["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["method"] == "session/prompt" && m["kind"] == "request")
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.len() == 2 && ids[0].starts_with("\"1:") && ids[1].starts_with("\"2:"),
        "prompt ids by connection: {ids:?}"
    );
    assert_eq!(data["problems"], serde_json::json!([]), "{data}");
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
    let child = Command::new(acp())
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
    support::output_within(
        child,
        Duration::from_secs(120),
        &format!("acp check --url {url} {extra:?}"),
    )
}

/// The conformance kit through the gateway gives the verdicts it gives over stdio: no check
/// fails over either profile (malformed lines, unknown sessions and cancellation included).
#[test]
fn check_grades_a_gateway_agent_over_both_profiles_as_over_stdio() {
    let scratch = Scratch::new("serve-check");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let acp = acp();
    // acp check's workspace is a fresh directory in the temporary directory, and its MCP
    // capability check names an http server on the discard port, which the host must allow.
    let tmp = std::env::temp_dir();
    let root = [
        "--root",
        tmp.to_str().unwrap(),
        "--mcp-allow-url",
        "http://127.0.0.1:9/",
    ];
    let agent = [acp.to_str().unwrap(), "agent"];
    let server = Serve::start_with(&scratch, &token_file, &root, &agent);
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
/// (`acp chat --url --load`: `session/load` with `Acp-Session-Id`, its stream opened after);
/// `/metrics` counts the store's operations (no session id in a label).
#[test]
fn serve_with_a_store_lists_and_loads_sessions_over_both_profiles() {
    let scratch = Scratch::new("serve-store");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let store = scratch.0.join("sessions");
    let server = Serve::start_with(
        &scratch,
        &token_file,
        &["--store", store.to_str().unwrap(), "--metrics"],
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
    let missing = chat(&scratch, &server.url, &["--load", "no-such-session"], token);
    assert!(!missing.status.success());
    let (status, text) = http_get(&server.url, "/metrics", "s3cret-token");
    assert!(status.contains(" 200 "), "{status}");
    let count = |series: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map_or(0.0, |v| v.trim().parse::<f64>().unwrap())
    };
    let ops = "acp_store_operations_total";
    assert!(
        count(&format!("{ops}{{operation=\"create\",outcome=\"ok\"}}")) == 1.0,
        "{text}"
    );
    assert!(
        count(&format!("{ops}{{operation=\"append\",outcome=\"ok\"}}")) >= 3.0,
        "{text}"
    );
    assert!(
        count(&format!("{ops}{{operation=\"list\",outcome=\"ok\"}}")) >= 1.0,
        "{text}"
    );
    // Its `meta` answered "no such session": a lookup that worked (errors are counted by
    // their kind, acp-remote's metered_store tests).
    assert!(
        count(&format!("{ops}{{operation=\"meta\",outcome=\"ok\"}}")) >= 3.0,
        "{text}"
    );
    assert!(
        !text.contains("no-such-session"),
        "no session id as a label"
    );
}

/// A running HAProxy in front of `hosts` (`127.0.0.1:PORT` each): round robin, a cookie
/// that keeps one client's HTTP requests on one host, `/readyz` checks, and requests sent
/// elsewhere when a host is gone. Killed on drop.
struct Balancer {
    child: Child,
    url: String,
}

impl Balancer {
    fn start(scratch: &Scratch, hosts: &[&str]) -> Option<Balancer> {
        let servers: String = hosts
            .iter()
            .enumerate()
            .map(|(i, host)| format!("  server h{i} {host} check cookie h{i}\n"))
            .collect();
        Balancer::launch(scratch, "http", |port| {
            format!(
                "global\n  maxconn 256\n\
                 defaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  \
                 timeout server 60s\n  timeout tunnel 60s\n  option redispatch\n  retries 3\n\
                 frontend acp\n  bind 127.0.0.1:{port}\n  default_backend hosts\n\
                 backend hosts\n  balance roundrobin\n  cookie ACPHOST insert indirect nocache\n  \
                 option httpchk GET /readyz\n  default-server inter 200ms fall 1 rise 1\n{servers}"
            )
        })
    }

    /// HAProxy terminating TLS in front of `host`, as docs/DEPLOYMENT.md has it, with a
    /// certificate for 127.0.0.1 issued by a throwaway certificate authority (Debian's
    /// `openssl`); returns the proxy and the authority's certificate (PEM) to trust.
    fn tls(scratch: &Scratch, host: &str) -> Option<(Balancer, std::path::PathBuf)> {
        let dir = &scratch.0;
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .expect("openssl runs (Debian's openssl package)");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=acp test CA"];
        ca.extend_from_slice(&ec);
        ca.extend_from_slice(&["-keyout", "ca.key", "-out", "ca.pem"]);
        openssl(&ca);
        let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
        csr.extend_from_slice(&ec);
        csr.extend_from_slice(&["-keyout", "host.key", "-out", "host.csr"]);
        openssl(&csr);
        std::fs::write(
            dir.join("host.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "host.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "host.ext",
            "-out",
            "host.crt",
        ]);
        let mut pem = std::fs::read(dir.join("host.crt")).unwrap();
        pem.extend(std::fs::read(dir.join("host.key")).unwrap());
        let pem_file = dir.join("host.pem");
        std::fs::write(&pem_file, pem).unwrap();
        let pem_file = pem_file.display().to_string();
        let balancer = Balancer::launch(scratch, "https", |port| {
            format!(
                "global\n  maxconn 64\n\
                 defaults\n  mode http\n  timeout connect 2s\n  timeout client 60s\n  \
                 timeout server 60s\n  timeout tunnel 60s\n\
                 frontend tls\n  bind 127.0.0.1:{port} ssl crt {pem_file} alpn http/1.1\n  \
                 default_backend host\n\
                 backend host\n  server h0 {host}\n"
            )
        })?;
        Some((balancer, dir.join("ca.pem")))
    }

    /// Runs HAProxy with the configuration `config` makes for its port; `None` (the test
    /// skipped) when HAProxy is not installed outside CI.
    fn launch(
        scratch: &Scratch,
        scheme: &str,
        config: impl FnOnce(u16) -> String,
    ) -> Option<Balancer> {
        let installed = Command::new("haproxy")
            .arg("-v")
            .output()
            .is_ok_and(|o| o.status.success());
        if !installed {
            let msg = "haproxy is not installed (`apt-get install haproxy`; .ci/run installs it)";
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{msg}");
            }
            eprintln!("\n!!! SKIPPED the load-balanced deployment test: {msg} !!!\n");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let file = scratch.0.join("haproxy.cfg");
        std::fs::write(&file, config(port)).unwrap();
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("haproxy starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "haproxy did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Balancer {
            child,
            url: format!("{scheme}://127.0.0.1:{port}/acp"),
        })
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `acp chat` reaches an `acp serve` behind a TLS-terminating proxy at `https://` and
/// `wss://`, trusting the proxy's certificate authority given with `--ca-file`; without it
/// the certificate is refused, with a reason, before any credential is sent.
#[test]
fn chat_over_tls_through_a_terminating_proxy_with_a_private_certificate_authority() {
    let scratch = Scratch::new("serve-tls");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let server = Serve::start(&scratch, &token_file, &[]);
    let host = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/acp")
        .to_owned();
    let Some((proxy, ca)) = Balancer::tls(&scratch, &host) else {
        return;
    };
    let ca = ca.to_str().unwrap();
    let token = Some("s3cret-token");
    check_turn(
        &chat(&scratch, &proxy.url, &["--ca-file", ca], token),
        "https",
    );
    let wss = proxy.url.replace("https://", "wss://");
    check_turn(&chat(&scratch, &wss, &["--ca-file", ca], token), "wss");
    check_turn(
        &chat(&scratch, &proxy.url, &["--ws", "--ca-file", ca], token),
        "https with --ws",
    );
    for url in [&proxy.url, &wss] {
        let refused = chat(&scratch, url, &[], token);
        assert_eq!(refused.status.code(), Some(1), "{url}");
        let said =
            String::from_utf8_lossy(&refused.stdout) + String::from_utf8_lossy(&refused.stderr);
        assert!(
            said.contains("certificate") && said.contains("UnknownIssuer"),
            "{url}: {said}"
        );
    }
}

/// The session ids `acp sessions --url url` lists, newest first.
fn listed(scratch: &Scratch, url: &str, token: Option<&str>) -> Vec<String> {
    let out = acp_run(scratch, &["sessions", "--url", url], token);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The deployment docs/DEPLOYMENT.md describes, for real: two `acp serve` hosts sharing one
/// PostgreSQL store behind HAProxy. Sessions made through the balancer (over both profiles)
/// are listed by each host; after the host that made them stops, the balancer sends the
/// client to the other, which loads them with their history.
#[test]
fn two_hosts_behind_a_load_balancer_share_sessions_and_survive_one_going_away() {
    let Some(postgres) = pg::shared() else { return };
    let scratch = Scratch::new("serve-balanced");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let db = postgres.fresh_db();
    let store = ["--store", db.as_str()];
    let first = Serve::start_with(&scratch, &token_file, &store, &[]);
    let second = Serve::start_with(&scratch, &token_file, &store, &[]);
    let host = |url: &str| {
        url.trim_start_matches("http://")
            .trim_end_matches("/acp")
            .to_owned()
    };
    let (first_host, second_host) = (host(&first.url), host(&second.url));
    let Some(balancer) = Balancer::start(&scratch, &[&first_host, &second_host]) else {
        return;
    };
    let token = Some("s3cret-token");
    // Four turns, so that round robin gives each host some, over both profiles (the HTTP
    // profile's requests stay on one host through the balancer's cookie).
    for profile in [&[][..], &["--ws"][..], &[][..], &["--ws"][..]] {
        check_turn(
            &chat(&scratch, &balancer.url, profile, token),
            "through the balancer",
        );
    }
    let on_first = listed(&scratch, &first.url, token);
    let on_second = listed(&scratch, &second.url, token);
    assert_eq!(
        on_first.len(),
        4,
        "every session in the shared store: {on_first:?}"
    );
    assert_eq!(on_first, on_second, "both hosts list the same sessions");

    drop(first);
    for (id, profile) in on_second.iter().zip([&[][..], &["--ws"][..]]) {
        let mut extra = profile.to_vec();
        extra.extend_from_slice(&["--load", id]);
        let out = chat(&scratch, &balancer.url, &extra, token);
        check_turn(&out, "loaded after a host went away");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("earlier turn"), "{profile:?}: {stdout}");
    }
    drop(balancer);
    drop(second);
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// An ACP connection through the balancer (Streamable HTTP, cookies kept), initialized.
/// While the balancer has no host up yet (`503`: a host just joined and its first health
/// check is still to come), the client tries again, as a reconnecting editor would.
async fn through(balancer: &Balancer, log: &support::UpdateLog) -> acp_rpc::Connection {
    connect_as(&balancer.url, "s3cret-token", log).await
}

/// An ACP connection to `url` (a host or a balancer) as the holder of `token`, initialized
/// (tried again while the balancer answers `503`, as in [`through`]).
async fn connect_as(url: &str, token: &str, log: &support::UpdateLog) -> acp_rpc::Connection {
    let options = acp_remote::ConnectOptions::new().token(token);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let link = acp_remote::connect(url, &options).await.unwrap();
        let config = acp_rpc::Config::default().with_default_timeout(Some(Duration::from_secs(30)));
        let conn = acp_rpc::Connection::new(link.reader, link.writer, log.clone(), config);
        let initialized: Result<serde_json::Value, _> = conn
            .peer()
            .request("initialize", &serde_json::json!({"protocolVersion": 1}))
            .await;
        match initialized {
            Ok(_) => return conn,
            Err(e) if e.message.contains("503") && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("initialize through the balancer: {e:?}"),
        }
    }
}

/// The crash the deployment exists for: the host running a turn is killed with `kill -9`
/// while a second host joins the balancer. The client's next connection lands on the new
/// host, which lists the session, replays every chunk the client had seen (the turn marked
/// interrupted) and runs a new turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_turn_leaves_its_session_to_a_host_that_joined_the_balancer() {
    use serde_json::{Value, json};
    let Some(postgres) = pg::shared() else { return };
    let scratch = Scratch::new("serve-crash");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let db = postgres.fresh_db();
    let joining = format!("127.0.0.1:{}", free_port());
    let mut first = Serve::start_with(&scratch, &token_file, &["--store", &db], &[]);
    // The second host is in the balancer's list but not running yet: all goes to the first.
    let Some(balancer) = Balancer::start(&scratch, &[&first.host(), &joining]) else {
        return;
    };
    let log = support::UpdateLog::default();
    let conn = through(&balancer, &log).await;
    let cwd = scratch.0.to_str().unwrap();
    let created: Value = conn
        .peer()
        .request("session/new", &json!({"cwd": cwd, "mcpServers": []}))
        .await
        .unwrap();
    let id = created["sessionId"].as_str().unwrap().to_owned();
    let peer = conn.peer().clone();
    let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": "/count 200"}]});
    let running = tokio::spawn(async move {
        let _ = peer.request::<_, Value>("session/prompt", &prompt).await;
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while log.texts().len() < 5 {
        assert!(tokio::time::Instant::now() < deadline, "the turn streams");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = Serve::start_with(
        &scratch,
        &token_file,
        &["--listen", &joining, "--store", &db],
        &[],
    );
    first.kill_9();
    let seen = log.texts();
    tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the cut-off turn ends for the client")
        .unwrap();

    let log = support::UpdateLog::default();
    let conn = through(&balancer, &log).await;
    let list: Value = conn
        .peer()
        .request("session/list", &json!({"cwd": cwd}))
        .await
        .unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], id.as_str(), "{list}");
    let _: Value = conn
        .peer()
        .request(
            "session/load",
            &json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
        )
        .await
        .unwrap();
    let replayed = log.texts();
    assert!(
        replayed.len() >= seen.len(),
        "saw {seen:?}, replayed {replayed:?}"
    );
    assert_eq!(
        replayed[..seen.len()],
        seen[..],
        "every chunk the client saw"
    );
    let last = log.0.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last["_meta"]["acp-rs/turnInterrupted"], true, "{last}");
    let done: Value = conn
        .peer()
        .request(
            "session/prompt",
            &json!({"sessionId": id, "prompt": [{"type": "text", "text": "/count 2"}]}),
        )
        .await
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    drop(conn);
    drop(balancer);
    drop(second);
}

/// The status of `GET path` on `host` (`127.0.0.1:PORT`), without credentials.
fn status_of(host: &str, path: &str) -> u16 {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(host).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        socket,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = socket.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"))
}

/// `/readyz` of `acp serve --store postgres://` follows the database: 503 while it is
/// stopped (so a load balancer sends clients elsewhere), 200 again when it is back, while
/// `/healthz` (alive) stays 200 throughout.
#[test]
fn readyz_follows_the_session_store() {
    // A server of its own: it is stopped here, which the other tests must not see.
    let Some(postgres) = pg::Server::start() else {
        return;
    };
    let scratch = Scratch::new("serve-readyz");
    let token_file = scratch.0.join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let db = postgres.fresh_db();
    let server = Serve::start_with(&scratch, &token_file, &["--store", &db], &[]);
    let host = server.host();
    assert_eq!(status_of(&host, "/readyz"), 200);
    postgres.stop();
    assert_eq!(status_of(&host, "/readyz"), 503);
    assert_eq!(status_of(&host, "/healthz"), 200);
    postgres.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    while status_of(&host, "/readyz") != 200 {
        assert!(
            Instant::now() < deadline,
            "ready again once the database is back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(server);
}

/// `acp serve` refuses a token file with a malformed line at start, naming the line and
/// never the token.
#[test]
fn serve_refuses_a_malformed_token_file_naming_the_line() {
    let scratch = Scratch::new("serve-bad-token-file");
    let token_file = scratch.0.join("tokens");
    for (text, line) in [
        ("alice:tok-a\n# ok\nal ice:secret-one\n", "line 3"),
        ("alice:tok-a\nbob:tok-a\n", "line 2"),
        ("alice:secret-one\nalice:secret-two\n", "line 2"),
        (":secret-one\n", "line 1"),
    ] {
        std::fs::write(&token_file, text).unwrap();
        let out = Command::new(acp())
            .args(["serve", "--listen", "127.0.0.1:0", "--token-file"])
            .arg(&token_file)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text:?}: {stderr}");
        assert!(stderr.contains(line), "{text:?}: {stderr}");
        assert!(stderr.contains("--token-file"), "{text:?}: {stderr}");
        assert!(
            !stderr.contains("secret") && !stderr.contains("tok-a"),
            "{text:?}: a token is echoed: {stderr}"
        );
    }
}

/// Waits (bounded) until `GET /metrics` with `token` answers `status`.
fn wait_for_status(url: &str, token: &str, status: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (line, _) = http_get(url, "/metrics", token);
        if line.contains(status) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{token}: still {line}, not {status}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `--token-file` is re-read on SIGHUP: added and changed tokens work from the next
/// request, removed ones are refused; a file that does not parse keeps the tokens before,
/// and the log (stderr) says why, naming the line, not the token.
#[test]
fn the_token_file_is_reloaded_on_sighup_and_a_bad_one_keeps_the_old_tokens() {
    let scratch = Scratch::new("serve-sighup");
    let token_file = scratch.0.join("tokens");
    std::fs::write(&token_file, "alice:tok-a\n").unwrap();
    let log_path = scratch.0.join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = Serve::start_logged(&scratch, &token_file, &["--metrics"], &[], log.into());
    let url = server.url.clone();
    let hup = || unsafe { libc::kill(server.served.child.id() as i32, libc::SIGHUP) };
    let status = |token: &str| http_get(&url, "/metrics", token).0;
    assert!(status("tok-a").contains(" 200 "));
    assert!(status("tok-b").contains(" 401 "));

    std::fs::write(&token_file, "alice:tok-a\nbob:tok-b\n").unwrap();
    assert_eq!(hup(), 0);
    wait_for_status(&url, "tok-b", " 200 ");
    assert!(status("tok-a").contains(" 200 "));

    // Alice removed, Bob's token changed.
    std::fs::write(&token_file, "# rotated\nbob:tok-b2\n").unwrap();
    assert_eq!(hup(), 0);
    wait_for_status(&url, "tok-b2", " 200 ");
    assert!(status("tok-a").contains(" 401 "));
    assert!(status("tok-b").contains(" 401 "));

    // A duplicate name: nothing changes, and the log says why.
    std::fs::write(&token_file, "carol:tok-c\ncarol:tok-d\n").unwrap();
    assert_eq!(hup(), 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let logged = loop {
        let text = std::fs::read_to_string(&log_path).unwrap();
        if text.contains("tokens before stay") {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no word of the failed reload: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(logged.contains("line 2"), "{logged}");
    assert!(!logged.contains("tok-"), "a token in the log: {logged}");
    assert!(status("tok-b2").contains(" 200 "));
    assert!(status("tok-c").contains(" 401 "));
    // A missing file neither: the tokens stay.
    std::fs::remove_file(&token_file).unwrap();
    assert_eq!(hup(), 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(status("tok-b2").contains(" 200 "));
    drop(server);
}

/// What `conn` gets for `session/load`, `session/resume`, a prompt, `session/close` and
/// `session/delete` of session `id`, in that order: each answer, or its error code.
async fn outcomes(
    conn: &acp_rpc::Connection,
    id: &str,
    cwd: &str,
) -> Vec<(&'static str, Result<serde_json::Value, i32>)> {
    use serde_json::json;
    let opened = json!({"sessionId": id, "cwd": cwd, "mcpServers": []});
    let calls = [
        ("session/load", opened.clone()),
        ("session/resume", opened),
        (
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "/echo hijack"}]}),
        ),
        ("session/close", json!({"sessionId": id})),
        ("session/delete", json!({"sessionId": id})),
    ];
    let mut out = Vec::new();
    for (method, params) in calls {
        let answer = conn.peer().request(method, &params).await;
        out.push((method, answer.map_err(|e| e.code.0)));
    }
    out
}

/// What one identity's connection gets for another identity's session `id` is what it gets
/// for a session that does not exist, call for call: `-32002` for `session/load`,
/// `session/resume`, a prompt and `session/close`, and for `session/delete` the same answer
/// (the spec's silent success when the agent is asked), which deletes nothing; and
/// `session/list` does not show it.
async fn cannot_reach(conn: &acp_rpc::Connection, id: &str, cwd: &str, who: &str) {
    let theirs = outcomes(conn, id, cwd).await;
    let nobodys = outcomes(conn, &format!("no-such-{id}"), cwd).await;
    assert_eq!(
        theirs, nobodys,
        "{who}: another's session is answered as none"
    );
    for (method, answer) in &theirs[..4] {
        assert_eq!(*answer, Err(-32002), "{who}: {method}");
    }
    assert!(
        !session_ids(conn, cwd).await.contains(&id.to_owned()),
        "{who} lists another's session"
    );
}

/// The ids `session/list` answers for `cwd`.
async fn session_ids(conn: &acp_rpc::Connection, cwd: &str) -> Vec<String> {
    let list: serde_json::Value = conn
        .peer()
        .request("session/list", &serde_json::json!({"cwd": cwd}))
        .await
        .unwrap();
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

/// A new session in `cwd` with one turn in which the agent says `text`; its id.
async fn session_with_a_turn(conn: &acp_rpc::Connection, cwd: &str, text: &str) -> String {
    use serde_json::{Value, json};
    let created: Value = conn
        .peer()
        .request("session/new", &json!({"cwd": cwd, "mcpServers": []}))
        .await
        .unwrap();
    let id = created["sessionId"].as_str().unwrap().to_owned();
    // `/echo`: the built-in agent streams the text back (no permission to ask).
    let echo = format!("/echo {text}");
    let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": echo}]});
    let done: Value = conn
        .peer()
        .request("session/prompt", &prompt)
        .await
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    id
}

/// `session/load` of `id` works for its owner and replays its turn (`said` in a chunk).
async fn loads_own(url: &str, token: &str, id: &str, cwd: &str, said: &str) {
    let log = support::UpdateLog::default();
    let conn = connect_as(url, token, &log).await;
    let _: serde_json::Value = conn
        .peer()
        .request(
            "session/load",
            &serde_json::json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
        )
        .await
        .unwrap_or_else(|e| panic!("{token}: loading its own session: {e:?}"));
    let replayed = log.texts().concat();
    assert!(replayed.contains(said), "{token}: {replayed}");
}

/// Two identities in one token file (and the unnamed one) on one `acp serve --store DIR`:
/// each lists, loads, resumes and prompts its own sessions, and neither lists, loads,
/// resumes, prompts, closes nor deletes the other's (each gets the answer for a session
/// that does not exist).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_identities_on_one_store_reach_only_their_own_sessions() {
    let scratch = Scratch::new("serve-identities");
    let token_file = scratch.0.join("tokens");
    std::fs::write(&token_file, "alice:tok-a\nbob:tok-b\ntok-unnamed\n").unwrap();
    let store = scratch.0.join("sessions");
    let server = Serve::start_with(
        &scratch,
        &token_file,
        &["--store", store.to_str().unwrap()],
        &[],
    );
    let url = server.url.clone();
    let cwd = scratch.0.to_str().unwrap();
    let log = support::UpdateLog::default();
    let alice = connect_as(&url, "tok-a", &log).await;
    let bob = connect_as(&url, "tok-b", &log).await;
    let unnamed = connect_as(&url, "tok-unnamed", &log).await;
    let a = session_with_a_turn(&alice, cwd, "hello from alice").await;
    let b = session_with_a_turn(&bob, cwd, "hello from bob").await;
    let u = session_with_a_turn(&unnamed, cwd, "hello from nobody").await;
    assert_eq!(session_ids(&alice, cwd).await, std::slice::from_ref(&a));
    assert_eq!(session_ids(&bob, cwd).await, std::slice::from_ref(&b));
    assert_eq!(session_ids(&unnamed, cwd).await, std::slice::from_ref(&u));

    cannot_reach(&bob, &a, cwd, "bob").await;
    cannot_reach(&unnamed, &a, cwd, "unnamed").await;
    cannot_reach(&alice, &b, cwd, "alice").await;
    cannot_reach(&alice, &u, cwd, "alice").await;
    cannot_reach(&bob, &u, cwd, "bob").await;
    // The same over the WebSocket profile.
    let ws = url.replace("http://", "ws://");
    let bob_ws = connect_as(&ws, "tok-b", &log).await;
    assert_eq!(session_ids(&bob_ws, cwd).await, std::slice::from_ref(&b));
    cannot_reach(&bob_ws, &a, cwd, "bob over WebSocket").await;
    drop(bob_ws);

    // Each still has its own, whole, on a new connection.
    loads_own(&url, "tok-a", &a, cwd, "hello from alice").await;
    loads_own(&url, "tok-b", &b, cwd, "hello from bob").await;
    loads_own(&url, "tok-unnamed", &u, cwd, "hello from nobody").await;
    let again = connect_as(&url, "tok-b", &log).await;
    let resumed: serde_json::Value = again
        .peer()
        .request(
            "session/resume",
            &serde_json::json!({"sessionId": b, "cwd": cwd, "mcpServers": []}),
        )
        .await
        .unwrap();
    assert!(resumed.is_object(), "{resumed}");
    let prompt =
        serde_json::json!({"sessionId": b, "prompt": [{"type": "text", "text": "/echo more"}]});
    let done: serde_json::Value = again
        .peer()
        .request("session/prompt", &prompt)
        .await
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn");
    // Its owner can delete it.
    let _: serde_json::Value = again
        .peer()
        .request("session/delete", &serde_json::json!({"sessionId": b}))
        .await
        .unwrap();
    assert!(session_ids(&bob, cwd).await.is_empty());
    assert_eq!(session_ids(&alice, cwd).await, [a]);
    drop((alice, bob, unnamed, again));
    drop(server);
}

/// The deployment of docs/DEPLOYMENT.md with two identities: two `acp serve` hosts on one
/// PostgreSQL store behind HAProxy. Neither identity lists, loads, resumes, prompts, closes
/// nor deletes the other's sessions, on either host; after one host is killed with
/// `kill -9`, each identity still lists and loads its own through the balancer, and still
/// cannot reach the other's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_identities_on_two_hosts_keep_to_their_own_sessions_across_a_kill_9() {
    let Some(postgres) = pg::shared() else { return };
    let scratch = Scratch::new("serve-balanced-identities");
    let token_file = scratch.0.join("tokens");
    std::fs::write(&token_file, "alice:tok-a\nbob:tok-b\n").unwrap();
    let db = postgres.fresh_db();
    let store = ["--store", db.as_str()];
    let mut first = Serve::start_with(&scratch, &token_file, &store, &[]);
    let second = Serve::start_with(&scratch, &token_file, &store, &[]);
    let Some(balancer) = Balancer::start(&scratch, &[&first.host(), &second.host()]) else {
        return;
    };
    let cwd = scratch.0.to_str().unwrap();
    let log = support::UpdateLog::default();
    // Sessions made on each host, for each identity.
    let mut made = Vec::new();
    for (host, n) in [(&first.url, 1), (&second.url, 2)] {
        for (token, who) in [("tok-a", "alice"), ("tok-b", "bob")] {
            let conn = connect_as(host, token, &log).await;
            let said = format!("{who} on host {n}");
            let id = session_with_a_turn(&conn, cwd, &said).await;
            made.push((token, who, id, said));
        }
    }
    let own = |token: &str| -> Vec<String> {
        let mut ids: Vec<String> = made
            .iter()
            .filter(|(t, ..)| *t == token)
            .map(|(_, _, id, _)| id.clone())
            .collect();
        ids.reverse();
        ids
    };
    // On each host, each identity lists its own (newest first) and reaches none of the other's.
    for host in [&first.url, &second.url] {
        for (token, who) in [("tok-a", "alice"), ("tok-b", "bob")] {
            let conn = connect_as(host, token, &log).await;
            assert_eq!(session_ids(&conn, cwd).await, own(token), "{who} on {host}");
            for (_, owner, id, _) in made.iter().filter(|(t, ..)| *t != token) {
                cannot_reach(&conn, id, cwd, &format!("{who} on {host}, {owner}'s")).await;
            }
        }
    }

    first.kill_9();
    for (token, who) in [("tok-a", "alice"), ("tok-b", "bob")] {
        let conn = connect_as(&balancer.url, token, &log).await;
        assert_eq!(
            session_ids(&conn, cwd).await,
            own(token),
            "{who} after kill -9"
        );
        for (_, _, id, _) in made.iter().filter(|(t, ..)| *t != token) {
            cannot_reach(&conn, id, cwd, &format!("{who} after kill -9")).await;
        }
        for (_, _, id, said) in made.iter().filter(|(t, ..)| *t == token) {
            loads_own(&balancer.url, token, id, cwd, said).await;
        }
    }
    drop(balancer);
    drop(second);
}
