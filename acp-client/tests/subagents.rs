//! Subagents (stable v1 since the official schema crate 1.20.0) on the client side: a raw agent reports a child
//! session, its states and the messages between sessions; the client receives them typed,
//! with absent, `null` and a value kept apart in every patch field.
//!
//! `cargo test -p acp-client --test subagents`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::{Client, async_trait};
use acp_rpc::Error;
use acp_types::v1::*;
use serde_json::json;

#[derive(Clone, Default)]
struct Watcher {
    updates: Arc<Mutex<Vec<SessionUpdate>>>,
}

#[async_trait]
impl Client for Watcher {
    async fn session_update(&self, n: SessionNotification) -> Result<(), Error> {
        self.updates.lock().unwrap().push(n.update);
        Ok(())
    }
}

#[tokio::test]
async fn subagent_updates_arrive_typed_and_a_malformed_one_is_dropped_alone() {
    let watcher = Watcher::default();
    let (agent, _) = common::fake_agent();
    let (_client, conn) = common::pair(watcher.clone(), agent);
    // Wire bytes on purpose: what an agent on the official crate writes.
    for update in [
        json!({"sessionUpdate": "subagent_update", "sessionId": "child", "title": "Reviewer",
               "description": null, "capabilities": {"cancel": {}},
               "state": {"state": "idle", "stopReason": "error",
                         "error": {"code": -32603, "message": "model crashed"}},
               "cwd": "/w/child"}),
        // A known kind with a bad body: dropped, the connection goes on.
        json!({"sessionUpdate": "subagent_update", "title": "no session id"}),
        json!({"sessionUpdate": "subagent_update", "sessionId": "child", "state": {"state": "unknown"},
               "additionalDirectories": null}),
        json!({"sessionUpdate": "session_message", "messageId": "m1", "senderSessionId": "child",
               "senderMessageId": "c-7", "content": [{"type": "text", "text": "Found 2 bugs"}]}),
        json!({"sessionUpdate": "session_message_chunk", "messageId": "m1",
               "content": {"type": "text", "text": " and a typo"}}),
    ] {
        conn.peer()
            .notify(
                "session/update",
                &json!({"sessionId": "parent", "update": update}),
            )
            .await
            .unwrap();
    }
    let got = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let got = watcher.updates.lock().unwrap().clone();
            if got.len() >= 4 {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the well-formed updates arrive");
    assert_eq!(got.len(), 4, "{got:?}");
    let SessionUpdate::SubagentUpdate(child) = &got[0] else {
        panic!("typed: {:?}", got[0])
    };
    assert_eq!(child.title.as_ref(), Some(&Some("Reviewer".to_owned())));
    assert_eq!(child.description, Some(None));
    assert_eq!(child.additional_directories, None);
    assert_eq!(child.cwd, Some(Some("/w/child".to_owned())));
    let Some(Some(StateUpdate::Idle(idle))) = &child.state else {
        panic!("idle: {:?}", child.state)
    };
    assert_eq!(idle.stop_reason, Some(IdleStopReason::Error));
    assert_eq!(
        idle.error.as_ref().map(|e| e.message.as_str()),
        Some("model crashed")
    );
    let SessionUpdate::SubagentUpdate(later) = &got[1] else {
        panic!("typed: {:?}", got[1])
    };
    assert!(matches!(
        later.state,
        Some(Some(StateUpdate::Undetermined(_)))
    ));
    assert_eq!(later.additional_directories, Some(None));
    assert_eq!(later.title, None);
    let SessionUpdate::SessionMessage(message) = &got[2] else {
        panic!("typed: {:?}", got[2])
    };
    assert_eq!(
        message.sender_message_id,
        Some(Some(MessageId("c-7".into())))
    );
    assert_eq!(message.recipient_session_id, None);
    let SessionUpdate::SessionMessageChunk(chunk) = &got[3] else {
        panic!("typed: {:?}", got[3])
    };
    assert_eq!(chunk.message_id.0, "m1");
}
