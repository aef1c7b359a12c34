//! Rough figures for the remote transport, on loopback, client and server in this one
//! process: the time of a prompt turn (one streamed chunk) over an in-memory pipe (what stdio
//! costs without the kernel), Streamable HTTP and WebSocket; and the memory one idle
//! connection costs (both ends, since both live here), per profile.
//!
//! `cargo run -p acp-remote --example figures [TURNS] [IDLE]` (defaults 300 and 500). A debug
//! build gives debug figures: compare the rows with each other, not with other machines.

use std::time::{Duration, Instant};

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use acp_client::{Client, ClientConnection};
use acp_remote::{ConnectOptions, Limits, Server, connect_client};

struct Echo;

#[acp_agent::async_trait]
impl Agent for Echo {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1))
    }
    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("s"))
    }
    async fn prompt(&self, _: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        cx.session().message_chunk("pong").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

struct Quiet;
impl Client for Quiet {}

/// Median and p99 of `turns` prompt turns on `conn`, in microseconds.
async fn turns(conn: &ClientConnection, turns: usize) -> (u128, u128) {
    let agent = conn.agent();
    agent
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    let session = agent
        .new_session(NewSessionRequest::new("/", []))
        .await
        .unwrap();
    let mut times = Vec::with_capacity(turns);
    for _ in 0..turns {
        let start = Instant::now();
        let mut turn = agent.prompt_stream(PromptRequest::new(
            session.session_id.clone(),
            ["ping".into()],
        ));
        while turn.next().await.is_some() {}
        times.push(start.elapsed().as_micros());
    }
    times.sort_unstable();
    (times[turns / 2], times[turns * 99 / 100])
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().unwrap());
    let n = args.next().unwrap_or(300).max(10);
    let idle = args.next().unwrap_or(500).max(1);
    let mut limits = Limits::default();
    limits.max_connections = idle + 10;
    limits.max_sockets = 2 * idle + 20;
    let server = Server::in_process(|| Echo)
        .limits(limits)
        .bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let http = server.url();
    let ws = http.replace("http://", "ws://");
    let options = ConnectOptions::new();

    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(theirs);
    let _agent = acp_agent::Builder::new(Echo).io(r, w);
    let (r, w) = tokio::io::split(ours);
    let pipe = acp_client::Builder::new(Quiet).io(r, w);
    println!("prompt turn, {n} turns: median / p99 in us");
    let (m, p) = turns(&pipe, n).await;
    println!("  in-memory pipe   {m:>7} / {p:>7}");
    for (name, url) in [("streamable http", &http), ("websocket", &ws)] {
        let conn = connect_client(Quiet, url, &options, Default::default())
            .await
            .unwrap();
        let (m, p) = turns(&conn, n).await;
        println!("  {name:<16} {m:>7} / {p:>7}");
        conn.close();
    }

    println!("idle connections, {idle} each (both ends in this process): KiB per connection");
    for (name, url) in [("streamable http", &http), ("websocket", &ws)] {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = rss_kib();
        let mut held = Vec::with_capacity(idle);
        for _ in 0..idle {
            let conn = connect_client(Quiet, url, &options, Default::default())
                .await
                .unwrap();
            conn.agent()
                .initialize(InitializeRequest::new(ProtocolVersion::V1))
                .await
                .unwrap();
            held.push(conn);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let after = rss_kib();
        println!(
            "  {name:<16} {:>7.1}  ({} open on the server)",
            (after.saturating_sub(before)) as f64 / idle as f64,
            server.connections()
        );
        for conn in held {
            conn.close();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.connections() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    server.shutdown();
}
