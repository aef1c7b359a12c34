//! `acp serve` and `acp chat --url`, end to end with real processes on loopback: the
//! built-in agent in process and a gateway to `acp agent`, over Streamable HTTP and
//! WebSocket; a wrong token refused; the URL printed with the real port; and two hosts on
//! one PostgreSQL store behind a real HAProxy (Debian's package), where a session made on
//! one host is listed by both and loaded through the balancer after its host went away.
//! Identities: a token file of `NAME:TOKEN` lines (re-read on SIGHUP; a malformed line an
//! error at start), each identity reaching only its own sessions on a directory store and
//! on two hosts sharing PostgreSQL, across a `kill -9`.

#[path = "../support/mod.rs"]
mod support;

mod balanced;
mod gateway;
mod tokens;
mod versions;

#[path = "../../../acp-store-postgres/tests/support/mod.rs"]
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

/// A running HAProxy in front of `hosts` (`127.0.0.1:PORT` each): round robin, a cookie
/// that keeps one client's HTTP requests on one host, `/readyz` checks, and requests sent
/// elsewhere when a host is gone. Killed on drop.
///
/// A check runs every 200 ms and one failure takes a host out: a killed host refuses the
/// connection at once. A host that answers slowly (a loaded CI machine) is given 2 s
/// (`timeout check`), or its check's own 200 ms would take the last live host out and the
/// balancer would answer 503 in the middle of a test (as it did in a CI run).
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
                 timeout server 60s\n  timeout tunnel 60s\n  timeout check 2s\n  \
                 option redispatch\n  retries 3\n\
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
