//! What each `Durability` costs a streaming connection, measured (ignored by default: a
//! measurement, not a check; run it on a quiet machine, in release):
//!
//! `cargo test --release -p acp-agent --test store_durability -- --ignored --nocapture`
//!
//! One agent streams turns of `CHUNKS` text chunks to a client reading as fast as it can,
//! over an in-memory pipe: without a store, then with a `JsonlStore` (in the system's temp
//! directory) at each durability. Printed: chunks per second, and each row against the
//! row without a store. BENCHMARKS.md keeps the figures.

use std::time::{Duration, Instant};

use acp_agent::store::{Durability, JsonlStore};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Config, Error, PromptContext};
use serde_json::{Value, json};

const CHUNKS: usize = 2_000;
const TURNS: usize = 10;

struct Streamer;

#[acp_agent::async_trait]
impl Agent for Streamer {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1))
    }

    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("bench"))
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let s = cx.session();
        for i in 0..CHUNKS {
            s.message_chunk(format!("chunk {i} of a streamed answer "))
                .await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// Counts nothing, answers nothing: the client side costs the same in every row.
struct Sink;

#[acp_rpc::async_trait]
impl acp_rpc::Handler for Sink {
    async fn handle_request(
        &self,
        _cx: acp_rpc::RequestContext,
        method: &str,
        _params: acp_rpc::Params,
    ) -> Result<Box<acp_rpc::RawValue>, Error> {
        Err(Error::method_not_found(method))
    }

    async fn handle_notification(
        &self,
        _cx: acp_rpc::NotificationContext,
        _method: &str,
        _params: acp_rpc::Params,
    ) -> Result<(), Error> {
        Ok(())
    }
}

/// Streams `TURNS` turns; the time they took.
async fn run(store: Option<JsonlStore>) -> Duration {
    let (a, b) = tokio::io::duplex(1 << 20);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let agent = match store {
        Some(store) => acp_agent::serve_with_store(Streamer, store, ar, aw, Config::default()),
        None => acp_agent::serve_with(Streamer, ar, aw, Config::default()),
    };
    let client = acp_rpc::Connection::new(br, bw, Sink, Config::default());
    let peer = client.peer();
    let _: Value = peer
        .request("initialize", &json!({"protocolVersion": 1}))
        .await
        .unwrap();
    let _: Value = peer
        .request("session/new", &json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    let params = json!({"sessionId": "bench", "prompt": [{"type": "text", "text": "go"}]});
    let start = Instant::now();
    for _ in 0..TURNS {
        let _: Value = peer.request("session/prompt", &params).await.unwrap();
    }
    let took = start.elapsed();
    agent.close();
    agent.closed().await;
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture, in release"]
async fn store_durability_cost() {
    let rows: [(&str, Option<Durability>); 4] = [
        ("no store", None),
        ("turn", Some(Durability::Turn)),
        ("event", Some(Durability::Event)),
        ("event-sync-turn", Some(Durability::EventSyncTurn)),
    ];
    let base_dir = std::env::temp_dir().join(format!("acp-durability-{}", std::process::id()));
    // A warm-up run, then the best of three per row.
    let _ = run(None).await;
    let mut base = None;
    println!("{CHUNKS} chunks x {TURNS} turns per run, best of 3, JsonlStore in {base_dir:?}");
    for (name, durability) in rows {
        let mut best = Duration::MAX;
        for attempt in 0..3 {
            let store = durability.map(|d| {
                let dir = base_dir.join(format!("{name}-{attempt}"));
                let _ = std::fs::remove_dir_all(&dir);
                JsonlStore::open(&dir).unwrap().with_durability(d)
            });
            best = best.min(run(store).await);
        }
        let rate = (CHUNKS * TURNS) as f64 / best.as_secs_f64();
        let base = *base.get_or_insert(rate);
        println!(
            "{name:>16}: {:>9.0} chunks/s  {:>6.1}% of no store  ({:.1} ms per turn)",
            rate,
            100.0 * rate / base,
            best.as_secs_f64() * 1000.0 / TURNS as f64
        );
    }
    let _ = std::fs::remove_dir_all(&base_dir);
}
