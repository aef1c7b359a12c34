//! `session/update` kinds the schema reserves for clients that advertised a capability
//! (`notice` needs `session.notices`, `compaction_update` and `compaction_summary_chunk` need
//! `session.compaction`) are refused locally, never sent, when the client did not advertise
//! it: the official Python client (which cannot advertise them) drops them, as the interop
//! matrix showed.

mod common;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use common::*;
use serde_json::{Value, json};

/// Sends one update of each gated kind, then a message chunk listing what happened.
struct GatedAgent;

#[acp_agent::async_trait]
impl Agent for GatedAgent {
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
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(v(json!({"sessionId": "s1"})))
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let mut report = Vec::new();
        for update in [
            json!({"sessionUpdate": "notice", "severity": "info", "title": "heads up"}),
            json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1", "content": {"type": "text", "text": "sum"}}),
            json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"}),
        ] {
            let kind = update["sessionUpdate"].clone();
            match cx.session().send(v(update)).await {
                Ok(()) => report.push(format!("{kind} sent")),
                Err(e) => report.push(format!(
                    "{kind} {} {}",
                    e.code.0,
                    e.data.unwrap_or_default()["capability"]
                )),
            }
        }
        cx.session().message_chunk(report.join("; ")).await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

async fn run(caps: Value) -> (Vec<String>, String) {
    let pair = Pair::new(GatedAgent, Recorder::default());
    pair.init(caps).await;
    pair.call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    pair.call(
        "session/prompt",
        json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}),
    )
    .await
    .unwrap();
    let updates = pair.updates();
    let kinds = updates
        .iter()
        .map(|u| {
            u["update"]["sessionUpdate"]
                .as_str()
                .unwrap_or("?")
                .to_owned()
        })
        .collect();
    let report = updates.iter().find_map(chunk_text).unwrap_or_default();
    (kinds, report)
}

#[tokio::test]
async fn gated_updates_are_refused_without_the_capability_and_never_sent() {
    let (kinds, report) = run(json!({"fs": {"readTextFile": true}})).await;
    assert_eq!(kinds, ["agent_message_chunk"], "only the report went out");
    assert_eq!(
        report,
        r#""notice" -32601 "session.notices"; "compaction_summary_chunk" -32601 "session.compaction"; "compaction_update" -32601 "session.compaction""#
    );
}

#[tokio::test]
async fn gated_updates_are_sent_to_a_client_that_advertised_them() {
    let (kinds, report) = run(json!({"session": {"notices": {}, "compaction": {}}})).await;
    assert_eq!(
        kinds,
        [
            "notice",
            "compaction_summary_chunk",
            "compaction_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(
        report,
        r#""notice" sent; "compaction_summary_chunk" sent; "compaction_update" sent"#
    );
}

#[tokio::test]
async fn each_capability_unlocks_only_its_own_kinds() {
    let (kinds, _) = run(json!({"session": {"notices": {}}})).await;
    assert_eq!(kinds, ["notice", "agent_message_chunk"]);
    let (kinds, _) = run(json!({"session": {"compaction": {}}})).await;
    assert_eq!(
        kinds,
        [
            "compaction_summary_chunk",
            "compaction_update",
            "agent_message_chunk"
        ]
    );
}
