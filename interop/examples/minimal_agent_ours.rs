//! The minimal agent with acp-agent: answers `initialize`, `session/new`, and streams two text
//! chunks for every prompt before ending the turn. Served on stdio.
//!
//! `cargo run -p acp-interop --example minimal_agent_ours`; its twin on the official crate is
//! `minimal_agent_official.rs`.

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext, serve_stdio};

struct Minimal;

#[acp_agent::async_trait]
impl Agent for Minimal {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1)
            .agent_info(Implementation::new("minimal-agent", "0.1.0")))
    }

    async fn new_session(
        &self,
        _: NewSessionRequest,
        _: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("session-1"))
    }

    async fn prompt(&self, _: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        cx.session().message_chunk("Hello, ").await?;
        cx.session().message_chunk("world.").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::main]
async fn main() {
    serve_stdio(Minimal).closed().await;
}
