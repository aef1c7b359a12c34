//! The unstable methods and fields a client uses behind features, against a raw agent that
//! answers the way gemini-cli 0.61.0 and agents on the official crate's unstable features do.
//!
//! `cargo test -p acp-client --features unstable --test unstable_methods`.
#![cfg(all(
    feature = "unstable_session_set_title",
    feature = "unstable_session_model",
    feature = "unstable_end_turn_token_usage"
))]

mod common;

use std::sync::{Arc, Mutex};

use acp_client::{Client, async_trait};
use acp_rpc::{Error, Handler, Params, RawValue, RequestContext};
use acp_types::v1::*;
use serde_json::{Value, json};

struct Quiet;
impl Client for Quiet {}

/// Answers with fixed bytes per method and records (method, params).
struct Scripted {
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

#[async_trait]
impl Handler for Scripted {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let value: Value = params.parse()?;
        self.seen.lock().unwrap().push((method.to_owned(), value));
        let answer = match method {
            "initialize" => {
                r#"{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"title":{}}}}"#
            }
            "session/new" => {
                r#"{"sessionId":"g1","models":{"availableModels":[{"modelId":"gemini-2.5-pro","name":"gemini-2.5-pro"},{"modelId":"gemini-2.5-flash","name":"gemini-2.5-flash","description":"Fast"}],"currentModelId":"gemini-2.5-pro"}}"#
            }
            // gemini-cli answers `session/set_model` with `null`.
            "session/set_model" => "null",
            "session/set_title" => r#"{"title":"Parser work"}"#,
            "session/prompt" => {
                r#"{"stopReason":"end_turn","usage":{"totalTokens":12,"inputTokens":9,"outputTokens":3,"cachedReadTokens":4}}"#
            }
            _ => "{}",
        };
        Ok(RawValue::from_string(answer.to_owned()).expect("valid JSON"))
    }
}

#[tokio::test]
async fn models_title_and_usage_are_typed() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (client, _agent) = common::pair(Quiet, Scripted { seen: seen.clone() });
    let agent = client.agent();
    let init = agent
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    assert!(init.agent_capabilities.session_capabilities.title.is_some());

    let session = agent
        .new_session(NewSessionRequest::new("/w", []))
        .await
        .unwrap();
    let models = session.models.expect("models is typed");
    assert_eq!(models.current_model_id.0, "gemini-2.5-pro");
    assert_eq!(
        models.available_models[1].description.as_deref(),
        Some("Fast")
    );
    assert!(session.extra.is_empty());

    agent
        .set_session_model(SetSessionModelRequest::new("g1", "gemini-2.5-flash"))
        .await
        .expect("a null result reads as the empty one");
    let titled = agent
        .set_session_title(SetSessionTitleRequest::new("g1", "parser work"))
        .await
        .unwrap();
    assert_eq!(titled.title, "Parser work");
    let turn = agent
        .prompt(PromptRequest::new("g1", [ContentBlock::text("hi")]))
        .await
        .unwrap();
    let usage = turn.usage.expect("usage is typed");
    assert_eq!(
        (usage.total_tokens, usage.cached_read_tokens),
        (12, Some(4))
    );

    let seen = seen.lock().unwrap();
    let sent = |method: &str| {
        seen.iter()
            .find(|(m, _)| m == method)
            .map(|(_, p)| p.clone())
    };
    assert_eq!(
        sent("session/set_model"),
        Some(json!({"sessionId": "g1", "modelId": "gemini-2.5-flash"}))
    );
    assert_eq!(
        sent("session/set_title"),
        Some(json!({"sessionId": "g1", "title": "parser work"}))
    );
}
