//! What recording costs a streaming connection, for the measurements of each store and
//! [`crate::store::Durability`] (feature `test-support`; the ignored `store_durability_cost` tests
//! of acp-agent and acp-store-postgres call it, BENCHMARKS.md keeps the figures).
//!
//! One agent streams turns of text chunks to a client reading as fast as it can, over an
//! in-memory pipe, with the store given or none; the time the turns took is the figure.

use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_types::v1::{
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, ProtocolVersion, StopReason,
};

use crate::store::SessionStore;
use crate::{Agent, AgentContext, Config, Error, PromptContext};

/// The streaming agent: session `bench`, and `chunks` chunks of about 30 bytes per turn.
struct Streamer {
    chunks: usize,
}

#[async_trait::async_trait]
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
        Ok(NewSessionResponse::new(format!(
            "bench-{}",
            crate::store::now_rfc3339()
        )))
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let s = cx.session();
        for i in 0..self.chunks {
            s.message_chunk(format!("chunk {i} of a streamed answer "))
                .await?;
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// A client that drops what it receives and answers no request.
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

/// Streams `turns` turns of `chunks` chunks on one new session, recorded in `store` (or
/// not); returns the time the turns took (the handshake and `session/new` excluded).
/// Panics if a call fails: a measurement of a broken setup means nothing.
pub async fn streaming_time(
    store: Option<Arc<dyn SessionStore>>,
    turns: usize,
    chunks: usize,
) -> Duration {
    let (a, b) = tokio::io::duplex(1 << 20);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let agent = Streamer { chunks };
    let conn = crate::connection::serve_inner(agent, (ar, aw), Config::default(), store, None);
    let client = acp_rpc::Connection::new(br, bw, Sink, Config::default());
    let peer = client.peer();
    let _: serde_json::Value = peer
        .request("initialize", &serde_json::json!({"protocolVersion": 1}))
        .await
        .expect("initialize");
    let created: serde_json::Value = peer
        .request(
            "session/new",
            &serde_json::json!({"cwd": "/bench", "mcpServers": []}),
        )
        .await
        .expect("session/new");
    let params = serde_json::json!({
        "sessionId": created["sessionId"],
        "prompt": [{"type": "text", "text": "go"}],
    });
    let start = Instant::now();
    for _ in 0..turns {
        let _: serde_json::Value = peer
            .request("session/prompt", &params)
            .await
            .expect("session/prompt");
    }
    let took = start.elapsed();
    conn.close();
    conn.closed().await;
    took
}
