//! Subagents (stable v1 since the official schema crate 1.20.0): the agent reports a child session, its work
//! state and the messages between the sessions as `session/update`s, which reach a client
//! advertising `subagents` and are refused locally (never sent) for one that does not.
//!
//! `cargo test -p acp-agent --test subagents`.

mod common;

use std::sync::{Arc, Mutex};

use acp_agent::CAPABILITY_NOT_ADVERTISED;
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use common::{Pair, Recorder};
use serde_json::json;

/// Starts a child on each prompt and reports it; keeps what each send gave.
#[derive(Default)]
struct Parent {
    sent: Arc<Mutex<Vec<Result<(), Error>>>>,
}

#[acp_agent::async_trait]
impl Agent for Parent {
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
        Ok(NewSessionResponse::new("parent"))
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let session = cx.session();
        let updates = [
            SessionUpdate::from(
                SubagentUpdate::new("child")
                    .title(Some("Reviewer".to_owned()))
                    .description(None)
                    .state(Some(RunningStateUpdate::new().into())),
            ),
            SessionUpdate::from(
                SessionMessage::new("m1")
                    .sender_session_id(Some("parent".into()))
                    .recipient_session_id(Some("child".into()))
                    .content(Some(vec![ContentBlock::text("Review the parser")])),
            ),
            SessionUpdate::session_message_chunk("m1", ContentBlock::text(" please")),
            SessionUpdate::from(
                SubagentUpdate::new("child").state(Some(
                    IdleStateUpdate::new()
                        .stop_reason(IdleStopReason::EndTurn)
                        .into(),
                )),
            ),
            // The state `unknown`, and a cleared state: not the same thing.
            SessionUpdate::from(
                SubagentUpdate::new("child").state(Some(UndeterminedStateUpdate::new().into())),
            ),
            SessionUpdate::from(SubagentUpdate::new("child").state(None)),
        ];
        for update in updates {
            let sent = session.send(update).await;
            self.sent.lock().unwrap().push(sent);
        }
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

async fn run(caps: serde_json::Value) -> (Pair, Vec<Result<(), Error>>) {
    let parent = Parent::default();
    let sent = parent.sent.clone();
    let pair = Pair::new(parent, Recorder::default());
    pair.init(caps).await;
    pair.call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    let turn = pair
        .call(
            "session/prompt",
            json!({"sessionId": "parent", "prompt": [{"type": "text", "text": "go"}]}),
        )
        .await
        .unwrap();
    assert_eq!(turn["stopReason"], "end_turn");
    let sent = std::mem::take(&mut *sent.lock().unwrap());
    (pair, sent)
}

#[tokio::test]
async fn a_client_advertising_subagents_gets_the_child_its_states_and_messages() {
    let (pair, sent) = run(json!({"subagents": {}})).await;
    assert!(sent.iter().all(Result::is_ok), "{sent:?}");
    // Written before the prompt's answer, in order, with absent and `null` kept apart.
    let updates: Vec<_> = pair
        .updates()
        .into_iter()
        .map(|n| n["update"].clone())
        .collect();
    assert_eq!(
        updates,
        [
            json!({"sessionUpdate": "subagent_update", "sessionId": "child", "title": "Reviewer",
                   "description": null, "state": {"state": "running"}}),
            json!({"sessionUpdate": "session_message", "messageId": "m1",
                   "senderSessionId": "parent", "recipientSessionId": "child",
                   "content": [{"type": "text", "text": "Review the parser"}]}),
            json!({"sessionUpdate": "session_message_chunk", "messageId": "m1",
                   "content": {"type": "text", "text": " please"}}),
            json!({"sessionUpdate": "subagent_update", "sessionId": "child",
                   "state": {"state": "idle", "stopReason": "end_turn"}}),
            json!({"sessionUpdate": "subagent_update", "sessionId": "child",
                   "state": {"state": "unknown"}}),
            json!({"sessionUpdate": "subagent_update", "sessionId": "child", "state": null}),
        ]
    );
}

#[tokio::test]
async fn a_client_without_subagents_is_sent_none_of_them() {
    let (pair, sent) = run(json!({})).await;
    assert_eq!(sent.len(), 6);
    for refused in &sent {
        let error = refused.as_ref().unwrap_err();
        assert_eq!(error.code, CAPABILITY_NOT_ADVERTISED);
        assert!(error.message.contains("subagents"), "{error:?}");
    }
    assert!(pair.updates().is_empty(), "{:?}", pair.updates());
}
