//! The threads dialect served from a session store: `getThreads` lists the stored
//! sessions and `openThread` reloads one, its history replayed into the thread's entries
//! (the adapter maps them to `session/list` and `session/load`).

mod common;

use std::sync::Arc;

use acp_agent::Dialect;
use acp_agent::legacy::AdapterOptions;
use acp_agent::store::{MemoryStore, SessionMeta, SessionStore, StoredEvent};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error};
use common::editor::Editor;
use serde_json::json;

struct Plain;

#[acp_agent::async_trait]
impl Agent for Plain {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(serde_json::from_value(json!({"protocolVersion": 1})).unwrap())
    }
}

#[tokio::test]
async fn a_threads_editor_lists_and_reopens_stored_sessions() {
    let store = Arc::new(MemoryStore::new());
    let id = SessionId("old-1".into());
    let mut meta = SessionMeta::new(id.clone(), "/p");
    meta.title = Some("Earlier work".into());
    store.create(meta).await.unwrap();
    store
        .append(
            &id,
            vec![
                StoredEvent::Prompt(vec![ContentBlock::text("hi")]),
                StoredEvent::Update(SessionUpdate::agent_message_text("hello there")),
            ],
        )
        .await
        .unwrap();
    let options = AdapterOptions::default().with_cwd("/p");
    let mut e = Editor::connect(|r, w| {
        acp_agent::Builder::new(Plain)
            .dialect(Dialect::Threads)
            .legacy(options)
            .store(store)
            .io(r, w);
    });
    e.send(r#"{"id":0,"method":"getThreads","params":null}"#)
        .await;
    e.expect_json(
        json!({"id": 0, "result": {"threads": [{"id": "old-1", "title": "Earlier work", "modifiedAt": null}]}}),
        &["/result/threads/0/modifiedAt"],
    )
    .await;
    e.send(r#"{"id":1,"method":"openThread","params":{"threadId":"old-1"}}"#)
        .await;
    e.expect(r#"{"id":1,"result":null}"#).await;
    e.send(r#"{"id":2,"method":"getThreadEntries","params":{"threadId":"old-1"}}"#)
        .await;
    e.expect(r#"{"id":2,"result":{"entries":[{"type":"message","role":"user","chunks":[{"type":"text","chunk":"hi"}]},{"type":"message","role":"assistant","chunks":[{"type":"text","chunk":"hello there"}]}]}}"#).await;
}
