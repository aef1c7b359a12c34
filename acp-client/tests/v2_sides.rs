//! Draft protocol v2's sides talk to each other: an `acp_agent::v2` agent serves an
//! `acp_client::v2` client over a byte pipe (as over stdio), the handshake says version 2,
//! a prompt is answered with the inserted message's id while the agent streams upserts and
//! ends the turn with a `state_update`, and what an agent does not implement answers -32601.
#![cfg(feature = "v2")]

use std::sync::{Arc, Mutex};

use acp_agent::v2 as agent;
use acp_client::v2 as client;
use acp_rpc::{Error, ErrorCode};
use acp_types::v2::*;
use async_trait::async_trait;

struct EchoAgent;

#[async_trait]
impl agent::Agent for EchoAgent {
    async fn initialize(
        &self,
        params: InitializeRequest,
        _cx: &agent::Context,
    ) -> Result<InitializeResponse, Error> {
        assert_eq!(params.protocol_version, ProtocolVersion(2));
        Ok(InitializeResponse::new(
            ProtocolVersion(2),
            Implementation::new("echo", "0.1.0"),
        ))
    }

    async fn session_new(
        &self,
        _params: NewSessionRequest,
        _cx: &agent::Context,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("s1"))
    }

    async fn session_prompt(
        &self,
        params: PromptRequest,
        cx: &agent::Context,
    ) -> Result<PromptResponse, Error> {
        let updates = [
            SessionUpdate::UserMessage(Box::new(
                UserMessage::new("u1").content(params.prompt.clone()),
            )),
            SessionUpdate::AgentMessageChunk(ContentChunk::new("a1", params.prompt[0].clone())),
            SessionUpdate::StateUpdate(Box::new(SessionStateUpdate::new(StateUpdate::Idle(
                IdleStateUpdate::new(),
            )))),
        ];
        for update in updates {
            cx.client()
                .session_update(UpdateSessionNotification::new(
                    params.session_id.clone(),
                    update,
                ))
                .await?;
        }
        Ok(PromptResponse::new("u1"))
    }
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<SessionUpdate>>>);

#[async_trait]
impl client::Client for Recorder {
    async fn session_update(&self, params: UpdateSessionNotification) -> Result<(), Error> {
        self.0.lock().unwrap().push(params.update);
        Ok(())
    }
}

#[tokio::test]
async fn a_v2_client_drives_a_v2_agent_through_a_prompt_turn() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    agent::serve(EchoAgent, ar, aw);
    let recorder = Recorder::default();
    let conn = client::connect(recorder.clone(), br, bw);

    let init = conn
        .agent()
        .initialize(InitializeRequest::new(
            ProtocolVersion(2),
            Implementation::new("test-client", "0.1.0"),
        ))
        .await
        .unwrap();
    assert_eq!(init.protocol_version, ProtocolVersion(2));
    assert_eq!(init.info.name, "echo");

    let session = conn
        .agent()
        .session_new(NewSessionRequest::new("/tmp"))
        .await
        .unwrap();
    let text = ContentBlock::Text(TextContent::new("hello"));
    let inserted = conn
        .agent()
        .session_prompt(PromptRequest::new(session.session_id, [text.clone()]))
        .await
        .unwrap();
    assert_eq!(inserted.message_id, MessageId::from("u1"));

    // The client handles notifications in order, before the answer that followed them.
    let updates = recorder.0.lock().unwrap().clone();
    assert_eq!(updates.len(), 3, "{updates:?}");
    assert!(
        matches!(&updates[0], SessionUpdate::UserMessage(m) if m.content == acp_types::Patch::Value(vec![text.clone()]))
    );
    assert!(matches!(&updates[1], SessionUpdate::AgentMessageChunk(c) if c.content == text));
    assert!(matches!(
        &updates[2],
        SessionUpdate::StateUpdate(s) if matches!(s.state, StateUpdate::Idle(_))
    ));

    let missing = conn
        .agent()
        .session_list(ListSessionsRequest::new())
        .await
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::METHOD_NOT_FOUND);
}
