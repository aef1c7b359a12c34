//! The operators' endpoints: `/metrics` scraped while conversations run, read by a real
//! parser (`promtool check metrics`, from Debian's `prometheus` package) and checked against
//! the scripted turns; `/readyz` following the connection limit and a pluggable check; who
//! may read which.

mod support;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use acp_remote::{BearerToken, ConnectOptions, Limits, Metrics, Server, connect_client};
use support::raw::{request, send};
use support::{TestAgent, TestClient, converse, within};
use tokio::io::AsyncWriteExt;

const TOKEN: &str = "test-token-0123456789";
const AUTH: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");

/// `promtool check metrics` on `exposition`: `Err` with its complaint. `None` when promtool
/// is missing outside CI (the caller skips); under `CI=true` a missing promtool fails.
async fn promtool(exposition: &str) -> Option<Result<(), String>> {
    let spawned = tokio::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("promtool is required under CI (Debian package `prometheus`): {e}")
        }
        Err(e) => {
            eprintln!(
                "skipping the promtool check: promtool not found ({e}); apt install prometheus"
            );
            return None;
        }
    };
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(exposition.as_bytes()).await.unwrap();
    drop(stdin);
    let out = within(20, child.wait_with_output()).await.unwrap();
    Some(if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    })
}

/// The value of one series (`name{labels}` exactly as exposed), 0 when absent.
fn value(exposition: &str, series: &str) -> f64 {
    exposition
        .lines()
        .find_map(|line| {
            let (name, rest) = line.split_once(' ')?;
            (name == series).then(|| rest.trim().parse::<f64>().unwrap())
        })
        .unwrap_or(0.0)
}

/// The exposition in the Prometheus text format (what a scraper that does not ask for
/// OpenMetrics gets, and what promtool reads).
async fn scrape(addr: std::net::SocketAddr) -> String {
    let r = send(addr, &request("GET", "/metrics", &[AUTH], "")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    r.body
}

/// The same in OpenMetrics, as Prometheus asks for it: the same samples.
async fn scrape_openmetrics(addr: std::net::SocketAddr) -> String {
    let accept = (
        "Accept",
        "application/openmetrics-text;version=1.0.0,text/plain;q=0.5",
    );
    let r = send(addr, &request("GET", "/metrics", &[AUTH, accept], "")).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("application/openmetrics-text")),
        "{r:?}"
    );
    assert!(r.body.ends_with("# EOF\n"), "{}", r.body);
    r.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_the_conversations_and_promtool_reads_them_mid_run() {
    let metrics = Metrics::new();
    let server = Server::in_process(TestAgent::default)
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .metrics(metrics.clone())
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.local_addr();
    // Who may read: not without the credential; the probes need none.
    let r = send(addr, &request("GET", "/metrics", &[], "")).await;
    assert_eq!(r.status, 401);
    let r = send(addr, &request("GET", "/readyz", &[], "")).await;
    assert_eq!((r.status, r.body.as_str()), (200, "ready\n"));

    // Three conversations (two over Streamable HTTP, one over WebSocket), scraped meanwhile.
    let http = server.url();
    let mut turns = Vec::new();
    for url in [http.clone(), http.replace("http://", "ws://"), http.clone()] {
        turns.push(tokio::spawn(async move {
            let options = ConnectOptions::new().token(TOKEN);
            let conn = connect_client(TestClient::default(), &url, &options, Default::default())
                .await
                .unwrap();
            within(10, converse(&conn)).await;
            conn.close();
        }));
    }
    let mut checked = 0;
    while !turns.iter().all(|t| t.is_finished()) && checked < 50 {
        let mid = scrape(addr).await;
        match promtool(&mid).await {
            Some(verdict) => verdict.unwrap_or_else(|e| panic!("promtool: {e}\n{mid}")),
            None => break,
        }
        checked += 1;
    }
    for turn in turns {
        within(20, turn).await.unwrap();
    }
    within(5, async {
        while server.connections() > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    let text = scrape(addr).await;
    if let Some(verdict) = promtool(&text).await {
        verdict.unwrap_or_else(|e| panic!("promtool: {e}\n{text}"));
    }
    let v = |series: &str| value(&text, series);
    assert_eq!(v("acp_connections_total"), 3.0, "{text}");
    assert_eq!(v("acp_connections_open"), 0.0, "{text}");
    assert_eq!(v("acp_sessions_total"), 3.0, "{text}");
    assert_eq!(v("acp_sessions_open"), 0.0, "{text}");
    for method in ["initialize", "session/new", "session/prompt"] {
        let series = format!("acp_requests_total{{method=\"{method}\",outcome=\"ok\"}}");
        assert_eq!(v(&series), 3.0, "{series}\n{text}");
        let series = format!("acp_request_duration_seconds_count{{method=\"{method}\"}}");
        assert_eq!(v(&series), 3.0, "{series}\n{text}");
    }
    let updates = |kind: &str| {
        v(&format!(
            "acp_notifications_total{{method=\"session/update\",kind=\"{kind}\"}}"
        ))
    };
    // Each turn: a tool call, its completion, then three message chunks.
    assert_eq!(updates("tool_call"), 3.0, "{text}");
    assert_eq!(updates("tool_call_update"), 3.0, "{text}");
    assert_eq!(updates("agent_message_chunk"), 9.0, "{text}");
    // The agent asked each client twice (permission, file read); each client answered.
    let messages = |direction: &str, kind: &str| {
        v(&format!(
            "acp_messages_total{{direction=\"{direction}\",kind=\"{kind}\"}}"
        ))
    };
    assert_eq!(messages("sent", "request"), 6.0, "{text}");
    assert_eq!(messages("received", "response"), 6.0, "{text}");
    assert_eq!(messages("received", "request"), 9.0, "{text}");
    assert_eq!(messages("sent", "response"), 9.0, "{text}");
    assert!(v("acp_message_bytes_total{direction=\"sent\"}") > 0.0);
    assert!(v("acp_message_bytes_total{direction=\"received\"}") > 0.0);
    // No session or connection id is a label.
    assert!(!text.contains("s-0"), "{text}");
    let open = scrape_openmetrics(addr).await;
    let samples = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(samples(&open), samples(&text));
    server.shutdown();
}

#[tokio::test]
async fn readyz_follows_the_connection_limit_and_the_readiness_checks() {
    let healthy = Arc::new(AtomicBool::new(true));
    let h = healthy.clone();
    let mut limits = Limits::default();
    limits.max_connections = 1;
    let server = Server::in_process(TestAgent::default)
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .limits(limits)
        .readiness(move || {
            let ok = h.load(Ordering::SeqCst);
            async move {
                if ok {
                    Ok(())
                } else {
                    Err("store unreachable".to_owned())
                }
            }
        })
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.local_addr();
    let ready = || async move { send(addr, &request("GET", "/readyz", &[], "")).await };
    assert_eq!(ready().await.status, 200);
    healthy.store(false, Ordering::SeqCst);
    let r = ready().await;
    // Not ready, and nothing of why (that goes to the log).
    assert_eq!((r.status, r.body.as_str()), (503, "not ready\n"));
    healthy.store(true, Ordering::SeqCst);
    assert_eq!(ready().await.status, 200);
    // The one connection allowed is taken: not ready until it ends.
    let options = ConnectOptions::new().token(TOKEN);
    let conn = connect_client(
        TestClient::default(),
        &server.url(),
        &options,
        Default::default(),
    )
    .await
    .unwrap();
    within(5, conn.agent().initialize(support::init()))
        .await
        .unwrap();
    assert_eq!(ready().await.status, 503);
    conn.close();
    within(5, async {
        while ready().await.status != 200 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    // Metrics are off on this server: 404 (behind the credential like the rest).
    let r = send(addr, &request("GET", "/metrics", &[AUTH], "")).await;
    assert_eq!(r.status, 404);
    server.shutdown();
}

/// An agent whose every prompt streams `CHUNKS` message chunks (acp-bench's scenario a, in
/// smaller).
#[derive(Default)]
struct Streamer;

const CHUNKS: usize = 50_000;

#[acp_agent::async_trait]
impl acp_agent::Agent for Streamer {
    async fn initialize(
        &self,
        _: acp_agent::types::InitializeRequest,
        _: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::InitializeResponse, acp_agent::Error> {
        Ok(acp_agent::types::InitializeResponse::new(
            acp_agent::types::ProtocolVersion::V1,
        ))
    }
    async fn new_session(
        &self,
        _: acp_agent::types::NewSessionRequest,
        _: &acp_agent::AgentContext,
    ) -> Result<acp_agent::types::NewSessionResponse, acp_agent::Error> {
        Ok(acp_agent::types::NewSessionResponse::new("s-1"))
    }
    async fn prompt(
        &self,
        _: acp_agent::types::PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<acp_agent::types::PromptResponse, acp_agent::Error> {
        for _ in 0..CHUNKS {
            cx.session().message_chunk("chunk of text ").await?;
        }
        Ok(acp_agent::types::PromptResponse::new(
            acp_agent::types::StopReason::EndTurn,
        ))
    }
}

/// One streamed turn over WebSocket through a server with or without metrics: seconds.
async fn streamed_turn(metrics: bool) -> f64 {
    use acp_agent::types::*;
    let mut builder = Server::in_process(Streamer::default);
    if metrics {
        builder = builder.metrics(Metrics::new());
    }
    let server = builder.bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let url = server.url().replace("http://", "ws://");
    let conn = connect_client(
        TestClient::default(),
        &url,
        &ConnectOptions::new(),
        Default::default(),
    )
    .await
    .unwrap();
    let agent = conn.agent();
    agent.initialize(support::init()).await.unwrap();
    let session = agent
        .new_session(NewSessionRequest::new("/w", []))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut turn = agent.prompt_stream(PromptRequest::new(session.session_id, ["go".into()]));
    let mut chunks = 0;
    while let Some(event) = turn.next().await {
        match event {
            acp_client::PromptEvent::Update(_) => chunks += 1,
            acp_client::PromptEvent::Done(done) => {
                done.unwrap();
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(chunks, CHUNKS);
    conn.close();
    server.shutdown();
    seconds
}

/// The cost of metrics on a stream through `acp serve`'s server (by hand, in release):
/// `cargo test --release -p acp-remote --test operations -- --ignored --nocapture metrics_overhead`.
/// Runs with and without metrics alternate; prints the medians and their ratio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, run by hand in release"]
async fn metrics_overhead_on_a_streamed_turn() {
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        off.push(streamed_turn(false).await);
        on.push(streamed_turn(true).await);
    }
    off.sort_by(f64::total_cmp);
    on.sort_by(f64::total_cmp);
    let (off, on) = (off[2], on[2]);
    println!(
        "{CHUNKS} chunks over WebSocket: metrics off {:.0} chunks/s, on {:.0} chunks/s, on/off {:.1}%",
        CHUNKS as f64 / off,
        CHUNKS as f64 / on,
        off / on * 100.0
    );
}

/// A page that never changes, for the dashboard's access rules.
struct StillPage;

impl acp_remote::LiveFeed for StillPage {
    fn page(&self) -> String {
        "<!doctype html><title>still</title>".to_owned()
    }

    fn next(
        &self,
        _seen: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = (u64, String)> + Send + '_>> {
        Box::pin(std::future::pending())
    }
}

/// A server without a credential (loopback only) serves its dashboard only to requests that
/// name a loopback host: a page of another site whose name resolves to 127.0.0.1 (DNS
/// rebinding) sends its own name as `Host` and is refused, with or without an `Origin`.
#[tokio::test]
async fn without_a_credential_the_dashboard_answers_only_loopback_host_names() {
    let server = Server::in_process(TestAgent::default)
        .dashboard(Arc::new(StillPage))
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.local_addr();
    let get = |host: String| async move {
        let bytes = format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n");
        send(addr, bytes.as_bytes()).await
    };
    for host in [
        format!("127.0.0.1:{}", addr.port()),
        format!("localhost:{}", addr.port()),
    ] {
        let r = get(host.clone()).await;
        assert_eq!(r.status, 200, "{host}: {}", r.body);
        assert!(r.body.contains("<title>still</title>"), "{}", r.body);
    }
    for host in [
        format!("rebound.example:{}", addr.port()),
        "10.0.0.1".to_owned(),
    ] {
        let r = get(host.clone()).await;
        assert_eq!(r.status, 401, "{host}: {}", r.body);
        assert!(!r.body.contains("still"), "{}", r.body);
    }
    // The health check of the same server is not affected.
    let r = send(addr, &request("GET", "/healthz", &[], "")).await;
    assert_eq!(r.status, 200);
    server.shutdown();
}

/// A socket the server accepted before it was shut down is still read (HTTP keep-alive),
/// but gets no new connection from a stopped server: `503`, and nothing registered. A
/// reconnecting client that raced the shutdown would otherwise have gone on talking to the
/// old server while a new one held the address.
#[tokio::test]
async fn a_shut_down_server_opens_no_connection_on_a_socket_it_accepted_before() {
    use support::raw::{exchange, open};
    use support::wire::{INIT, JSON};
    let server = Server::in_process(TestAgent::default)
        .authenticator(BearerToken::new(TOKEN).unwrap())
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = server.local_addr();
    let (r, socket) = open(addr, &request("GET", "/healthz", &[], "")).await;
    assert_eq!(r.status, 200);
    server.shutdown();
    let (r, _socket) = exchange(socket, &request("POST", "/acp", &[AUTH, JSON], INIT)).await;
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(server.connections(), 0);
}
