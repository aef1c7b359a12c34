//! The minimal agent: answers `initialize` and `session/new`, and streams two text chunks for
//! every prompt, on stdio. `cargo run -p acp-agent --example minimal_agent`; its client is
//! acp-client's `minimal_client`, its twin on the official crate `minimal_agent_official.rs`.

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Builder, Error, PromptContext};

struct Minimal;

#[acp_agent::async_trait]
impl Agent for Minimal {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        let info = Implementation::new("minimal-agent", "0.1.0");
        Ok(InitializeResponse::new(ProtocolVersion::V1).agent_info(info))
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
    Builder::new(Minimal).stdio().closed().await;
}
