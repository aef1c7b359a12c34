//! `session/update` kinds the schema reserves for clients that advertised a capability
//! (`notice` needs `session.notices`, `compaction_update` and `compaction_summary_chunk` need
//! `session.compaction`, and since schema 1.20.0 `plan_update`/`plan_removed` need `plan` and
//! the subagent kinds `subagents`) are refused locally, never sent, when the client did not advertise
//! it: the official Python client (which cannot advertise them) drops them, as the interop
//! matrix showed. With their features on, so are `prompt_suggestions_update` (needs
//! `session.promptSuggestions`) and `cursor_update` (needs `session.cursors`).

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
            // Stable since schema 1.20.0: typed and gated with no feature on.
            json!({"sessionUpdate": "plan_removed", "planId": "p1"}),
            json!({"sessionUpdate": "subagent_update", "sessionId": "child"}),
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
    run_with(GatedAgent, caps).await
}

async fn run_with(agent: impl Agent + 'static, caps: Value) -> (Vec<String>, String) {
    let pair = Pair::new(agent, Recorder::default());
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
        r#""notice" -32601 "session.notices"; "compaction_summary_chunk" -32601 "session.compaction"; "compaction_update" -32601 "session.compaction"; "plan_removed" -32601 "plan"; "subagent_update" -32601 "subagents""#
    );
}

#[tokio::test]
async fn gated_updates_are_sent_to_a_client_that_advertised_them() {
    let (kinds, report) = run(json!({
        "session": {"notices": {}, "compaction": {}}, "plan": {}, "subagents": {}
    }))
    .await;
    assert_eq!(
        kinds,
        [
            "notice",
            "compaction_summary_chunk",
            "compaction_update",
            "plan_removed",
            "subagent_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(
        report,
        r#""notice" sent; "compaction_summary_chunk" sent; "compaction_update" sent; "plan_removed" sent; "subagent_update" sent"#
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

/// Sends each gated unstable kind its features turn on (typed), then the report.
#[cfg(any(
    feature = "unstable_prompt_suggestions",
    feature = "unstable_session_cursors"
))]
struct UnstableGatedAgent;

#[cfg(any(
    feature = "unstable_prompt_suggestions",
    feature = "unstable_session_cursors"
))]
#[acp_agent::async_trait]
// Each update is pushed behind its own feature, so `vec![..]` cannot list them.
#[allow(clippy::vec_init_then_push)]
impl Agent for UnstableGatedAgent {
    async fn initialize(
        &self,
        p: InitializeRequest,
        cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        GatedAgent.initialize(p, cx).await
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        GatedAgent.new_session(p, cx).await
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let mut updates: Vec<SessionUpdate> = Vec::new();
        #[cfg(feature = "unstable_prompt_suggestions")]
        updates.push(SessionUpdate::prompt_suggestions_update([
            PromptSuggestion::new([ContentBlock::text("run the tests")]),
        ]));
        #[cfg(feature = "unstable_session_cursors")]
        updates.push(
            CursorUpdate::new("cur_1")
                .anchor(CursorAnchor::user_message(
                    "m1",
                    CursorAnchorPosition::After,
                ))
                .into(),
        );
        let mut report = Vec::new();
        for update in updates {
            let kind = serde_json::to_value(&update).unwrap()["sessionUpdate"].clone();
            match cx.session().send(update).await {
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

#[cfg(feature = "unstable_prompt_suggestions")]
#[tokio::test]
async fn prompt_suggestions_go_only_to_a_client_advertising_session_prompt_suggestions() {
    let (kinds, report) = run_with(UnstableGatedAgent, json!({"session": {"notices": {}}})).await;
    assert!(!kinds.iter().any(|k| k == "prompt_suggestions_update"));
    assert!(
        report.contains(r#""prompt_suggestions_update" -32601 "session.promptSuggestions""#),
        "{report}"
    );
    let (kinds, report) = run_with(
        UnstableGatedAgent,
        json!({"session": {"promptSuggestions": {}}}),
    )
    .await;
    assert_eq!(kinds[0], "prompt_suggestions_update");
    assert!(
        report.contains(r#""prompt_suggestions_update" sent"#),
        "{report}"
    );
}

#[cfg(feature = "unstable_session_cursors")]
#[tokio::test]
async fn cursor_updates_go_only_to_a_client_advertising_session_cursors() {
    let (kinds, report) = run_with(UnstableGatedAgent, json!({"session": {}})).await;
    assert!(!kinds.iter().any(|k| k == "cursor_update"));
    assert!(
        report.contains(r#""cursor_update" -32601 "session.cursors""#),
        "{report}"
    );
    let (kinds, report) = run_with(UnstableGatedAgent, json!({"session": {"cursors": {}}})).await;
    assert!(kinds.iter().any(|k| k == "cursor_update"), "{kinds:?}");
    assert!(report.contains(r#""cursor_update" sent"#), "{report}");
}
