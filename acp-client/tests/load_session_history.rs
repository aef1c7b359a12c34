//! `load_session_history` against our agent served with a store: the whole replayed history
//! (thousands of updates, written back to back before the answer) arrives in order, none
//! lost to the race between the request and the session's route.

use std::sync::Arc;

use acp_agent::store::{MemoryStore, SessionMeta, SessionStore, StoredEvent};
use acp_agent::{Agent, AgentContext};
use acp_client::{Client, ClientConnection, Config, async_trait};
use acp_rpc::Error;
use acp_types::v1::*;

struct Minimal;

#[async_trait]
impl Agent for Minimal {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1))
    }
}

struct Quiet;

#[async_trait]
impl Client for Quiet {}

#[tokio::test]
async fn the_replayed_history_is_complete_and_in_order() {
    let store = Arc::new(MemoryStore::new());
    let id = SessionId("long".into());
    store
        .create(SessionMeta::new(id.clone(), "/w"))
        .await
        .unwrap();
    let events: Vec<StoredEvent> = (0..3000)
        .map(|i| StoredEvent::Update(SessionUpdate::agent_message_text(format!("#{i}"))))
        .collect();
    store.append(&id, events).await.unwrap();

    let (a, b) = tokio::io::duplex(1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let _agent = acp_agent::serve_with_store(Minimal, store, ar, aw, Config::default());
    let conn = ClientConnection::new(Quiet, br, bw, Config::default());
    let agent = conn.agent();
    let init = agent
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    assert!(init.agent_capabilities.load_session);
    let request = LoadSessionRequest::new(Vec::<McpServer>::new(), "/w", "long");
    let loaded = agent.load_session_history(request).await.unwrap();
    assert_eq!(loaded.history.len(), 3000);
    for (i, update) in loaded.history.iter().enumerate() {
        match update {
            SessionUpdate::AgentMessageChunk(c) => match &c.content {
                ContentBlock::Text(t) => assert_eq!(t.text, format!("#{i}")),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }
    // An unknown session is the agent's -32002, with no history.
    let ghost = LoadSessionRequest::new(Vec::<McpServer>::new(), "/w", "ghost");
    let err = agent.load_session_history(ghost).await.unwrap_err();
    assert_eq!(err.code.0, -32002);
}
