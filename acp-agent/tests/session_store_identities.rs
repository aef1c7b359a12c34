//! Identities on one shared store: each connection reaches only its own identity's
//! sessions (split from `session_store.rs`).

use std::sync::Arc;

use acp_agent::store::{MemoryStore, SessionStore};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use serde_json::{Value, json};

#[path = "session_store/wire.rs"]
mod wire;
use wire::{Wire, updates, v};

/// An agent that names its sessions after the identity it serves (`cx.identity()`).
struct Who;

#[acp_agent::async_trait]
impl Agent for Who {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({"protocolVersion": 1})))
    }

    async fn new_session(
        &self,
        _p: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let who = cx.identity().unwrap_or("unnamed");
        Ok(v(json!({"sessionId": format!("{who}-s")})))
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let who = cx.identity().unwrap_or("unnamed");
        cx.session().message_chunk(format!("hello {who}")).await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// The error code of a call, or `None` when it succeeded.
async fn code(wire: &mut Wire, method: &str, params: Value) -> Option<i64> {
    let (_, response) = wire.call(method, params).await;
    response["error"]["code"].as_i64()
}

/// The session ids `session/list` answers.
async fn listed(wire: &mut Wire) -> Vec<String> {
    let list = wire.ok("session/list", json!({})).await;
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

/// Connections served for different identities on one store: the agent reads its identity
/// from `cx.identity()`, the store records it as the owner, each lists only its own, and
/// another's session is answered as one that does not exist (`-32002` for load, resume,
/// prompt and close; delete succeeds and deletes nothing). A local connection (no identity)
/// has the sessions without an owner.
#[tokio::test]
async fn identities_reach_only_their_own_sessions_of_a_shared_store() {
    let store = Arc::new(MemoryStore::new());
    let mut alice = Wire::serve_as(Who, store.clone(), Some("alice"));
    let mut bob = Wire::serve_as(Who, store.clone(), Some("bob"));
    let mut local = Wire::serve_as(Who, store.clone(), None);
    let mut ids = Vec::new();
    for wire in [&mut alice, &mut bob, &mut local] {
        wire.init().await;
        let id = wire.new_session("/w").await;
        let (before, _) = wire
            .call(
                "session/prompt",
                json!({"sessionId": id, "prompt": [{"type": "text", "text": "hi"}]}),
            )
            .await;
        assert_eq!(updates(&before).len(), 1);
        ids.push(id);
    }
    assert_eq!(ids, ["alice-s", "bob-s", "unnamed-s"]);
    let owner = |id: &str| {
        let store = store.clone();
        let id = SessionId(id.into());
        async move { store.meta(&id).await.unwrap().unwrap().owner }
    };
    assert_eq!(owner("alice-s").await.as_deref(), Some("alice"));
    assert_eq!(owner("bob-s").await.as_deref(), Some("bob"));
    assert_eq!(owner("unnamed-s").await, None);
    assert_eq!(listed(&mut alice).await, ["alice-s"]);
    assert_eq!(listed(&mut bob).await, ["bob-s"]);
    assert_eq!(listed(&mut local).await, ["unnamed-s"]);

    for (wire, theirs) in [
        (&mut bob, "alice-s"),
        (&mut local, "alice-s"),
        (&mut alice, "unnamed-s"),
    ] {
        let opened = json!({"sessionId": theirs, "cwd": "/w", "mcpServers": []});
        assert_eq!(
            code(wire, "session/load", opened.clone()).await,
            Some(-32002)
        );
        assert_eq!(code(wire, "session/resume", opened).await, Some(-32002));
        let prompt = json!({"sessionId": theirs, "prompt": [{"type": "text", "text": "x"}]});
        assert_eq!(code(wire, "session/prompt", prompt).await, Some(-32002));
        let close = json!({"sessionId": theirs});
        assert_eq!(
            code(wire, "session/close", close.clone()).await,
            Some(-32002)
        );
        assert_eq!(wire.ok("session/delete", close).await, json!({}));
        assert_eq!(
            wire.ok("session/delete", json!({"sessionId": "ghost"}))
                .await,
            json!({}),
            "the same answer as for a session that does not exist"
        );
    }
    assert_eq!(
        owner("alice-s").await.as_deref(),
        Some("alice"),
        "not deleted"
    );
    assert_eq!(owner("unnamed-s").await, None, "not deleted");

    // Each loads its own on a new connection, with its history.
    let mut again = Wire::serve_as(Who, store.clone(), Some("alice"));
    again.init().await;
    let (before, response) = again
        .call(
            "session/load",
            json!({"sessionId": "alice-s", "cwd": "/w", "mcpServers": []}),
        )
        .await;
    assert!(response.get("error").is_none(), "{response}");
    let replayed = updates(&before);
    assert!(
        replayed
            .iter()
            .any(|u| u["content"]["text"] == "hello alice"),
        "{replayed:?}"
    );
    // Its owner deletes it.
    again
        .ok("session/delete", json!({"sessionId": "alice-s"}))
        .await;
    assert!(
        store
            .meta(&SessionId("alice-s".into()))
            .await
            .unwrap()
            .is_none()
    );
}
