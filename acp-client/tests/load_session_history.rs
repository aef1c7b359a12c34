//! `load_session_history` against our agent served with a store: the whole replayed history
//! (thousands of updates, written back to back before the answer) arrives in order, none
//! lost to the race between the request and the session's route.

use std::sync::Arc;

use acp_agent::store::{MemoryStore, SessionMeta, SessionStore, StoredEvent};
use acp_agent::{Agent, AgentContext};
use acp_client::{Client, async_trait};
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
    let _agent = acp_agent::Builder::new(Minimal).store(store).io(ar, aw);
    let conn = acp_client::Builder::new(Quiet).io(br, bw);
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

/// Answers every prompt with one chunk, `live`.
struct Live;

#[async_trait]
impl Agent for Live {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1))
    }

    async fn prompt(
        &self,
        _: PromptRequest,
        cx: &acp_agent::PromptContext,
    ) -> Result<PromptResponse, Error> {
        cx.session().message_chunk("live").await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn the_session_stream_starts_with_the_replay_then_carries_live_updates() {
    let store = Arc::new(MemoryStore::new());
    let id = SessionId("kept".into());
    store
        .create(SessionMeta::new(id.clone(), "/w"))
        .await
        .unwrap();
    // More than the stream's buffer: the replay is read while the load runs.
    let count = acp_client::PROMPT_STREAM_BUFFER * 2;
    let events: Vec<StoredEvent> = (0..count)
        .map(|i| StoredEvent::Update(SessionUpdate::agent_message_text(format!("#{i}"))))
        .collect();
    store.append(&id, events).await.unwrap();

    let (a, b) = tokio::io::duplex(1024);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let _agent = acp_agent::Builder::new(Live).store(store).io(ar, aw);
    let conn = acp_client::Builder::new(Quiet).io(br, bw);
    let agent = conn.agent().clone();
    agent
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    let request = LoadSessionRequest::new(Vec::<McpServer>::new(), "/w", "kept");
    let mut stream = agent.load_session_stream(request);
    let text = |update: &SessionUpdate| match update {
        SessionUpdate::AgentMessageChunk(c) => match &c.content {
            ContentBlock::Text(t) => t.text.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    for i in 0..count {
        match stream.next().await {
            Some(acp_client::SessionEvent::Update(update)) => {
                assert_eq!(text(&update), format!("#{i}"))
            }
            other => panic!("replayed update {i}: {other:?}"),
        }
    }
    assert!(matches!(
        stream.next().await,
        Some(acp_client::SessionEvent::Loaded(Ok(_)))
    ));
    // A later turn's updates come on the same stream, after the replay.
    let turn = tokio::spawn({
        let agent = agent.clone();
        async move {
            agent
                .prompt(PromptRequest::new("kept", [ContentBlock::text("more")]))
                .await
        }
    });
    match stream.next().await {
        Some(acp_client::SessionEvent::Update(update)) => assert_eq!(text(&update), "live"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        turn.await.unwrap().unwrap().stop_reason,
        StopReason::EndTurn
    );
    // A failed load ends its stream after the error.
    let ghost = LoadSessionRequest::new(Vec::<McpServer>::new(), "/w", "ghost");
    let mut failed = agent.load_session_stream(ghost);
    match failed.next().await {
        Some(acp_client::SessionEvent::Loaded(Err(e))) => assert_eq!(e.code.0, -32002),
        other => panic!("{other:?}"),
    }
    assert!(failed.next().await.is_none());
}
