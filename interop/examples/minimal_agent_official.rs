//! The minimal agent with the official crate (`agent-client-protocol` 5.2.0): answers
//! `initialize`, `session/new`, and streams two text chunks for every prompt before ending the
//! turn. Served on stdio.
//!
//! `cargo run -p acp-interop --example minimal_agent_official`; its twin on acp-agent is
//! `acp-agent/examples/minimal_agent.rs`.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentChunk, Implementation, InitializeRequest, InitializeResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, SessionNotification, SessionUpdate,
    StopReason,
};
use agent_client_protocol::{Agent, Result, Stdio, on_receive_request};

#[tokio::main]
async fn main() -> Result<()> {
    Agent
        .v1()
        .name("minimal-agent")
        .on_receive_request(
            async |_: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_info(Implementation::new("minimal-agent", "0.1.0")),
                )
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async |_: NewSessionRequest, responder, _cx| {
                responder.respond(NewSessionResponse::new("session-1"))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async |request: PromptRequest, responder, cx| {
                for text in ["Hello, ", "world."] {
                    let chunk = ContentChunk::new(text.into());
                    cx.send_notification(SessionNotification::new(
                        request.session_id.clone(),
                        SessionUpdate::AgentMessageChunk(chunk),
                    ))?;
                }
                responder.respond(PromptResponse::new(StopReason::EndTurn))
            },
            on_receive_request!(),
        )
        .connect_to(Stdio::new())
        .await
}
