//! The unstable methods an agent serves behind features (`unstable_session_set_title`,
//! `unstable_session_model`; and, when on, `unstable_session_options`), driven by a raw client over a duplex pipe.
//!
//! `cargo test -p acp-agent --features unstable --test unstable_methods`.
#![cfg(all(
    feature = "unstable_session_set_title",
    feature = "unstable_session_model",
    feature = "unstable_end_turn_token_usage"
))]

mod common;
#[cfg(feature = "unstable_proxy_chains")]
#[path = "unstable_methods/proxy_chain.rs"]
mod proxy_chain;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use common::{Pair, Recorder};
use serde_json::json;

struct Titled;

#[acp_agent::async_trait]
impl Agent for Titled {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(
            InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(
                AgentCapabilities::new().session_capabilities(
                    SessionCapabilities::new().title(SessionTitleCapabilities::new()),
                ),
            ),
        )
    }

    async fn new_session(
        &self,
        _p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        Ok(NewSessionResponse::new("s1").models(SessionModelState::new(
            [
                ModelInfo::new("m-large", "Large"),
                ModelInfo::new("m-small", "Small"),
            ],
            "m-large",
        )))
    }

    async fn set_session_title(
        &self,
        p: SetSessionTitleRequest,
        _cx: &AgentContext,
    ) -> Result<SetSessionTitleResponse, Error> {
        if p.title.trim().is_empty() {
            return Err(Error::invalid_params("the title is empty"));
        }
        Ok(SetSessionTitleResponse::new(p.title.trim()))
    }

    async fn set_session_model(
        &self,
        p: SetSessionModelRequest,
        _cx: &AgentContext,
    ) -> Result<SetSessionModelResponse, Error> {
        assert_eq!(p.model_id.0, "m-small");
        Ok(SetSessionModelResponse::new())
    }

    async fn prompt(
        &self,
        _p: PromptRequest,
        _cx: &PromptContext,
    ) -> Result<PromptResponse, Error> {
        Ok(PromptResponse::new(StopReason::EndTurn).usage(Usage::new(30, 20, 10)))
    }
}

#[tokio::test]
async fn set_title_set_model_and_usage_reach_the_client_typed() {
    let pair = Pair::new(Titled, Recorder::default());
    let init = pair.init(json!({})).await;
    assert_eq!(
        init["agentCapabilities"]["sessionCapabilities"]["title"],
        json!({})
    );
    let session = pair
        .call("session/new", json!({"cwd": "/w", "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(session["models"]["currentModelId"], "m-large");
    assert_eq!(
        session["models"]["availableModels"][1]["modelId"],
        "m-small"
    );

    let titled = pair
        .call(
            "session/set_title",
            json!({"sessionId": "s1", "title": "  Parser  "}),
        )
        .await
        .unwrap();
    assert_eq!(titled, json!({"title": "Parser"}));
    let refused = pair
        .call(
            "session/set_title",
            json!({"sessionId": "s1", "title": " "}),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code, acp_agent::ErrorCode::INVALID_PARAMS);

    let set = pair
        .call(
            "session/set_model",
            json!({"sessionId": "s1", "modelId": "m-small"}),
        )
        .await
        .unwrap();
    assert_eq!(set, json!({}));
    // Like the other session methods, an unknown session is refused before the agent runs.
    let unknown = pair
        .call(
            "session/set_model",
            json!({"sessionId": "nope", "modelId": "m-small"}),
        )
        .await
        .unwrap_err();
    assert_ne!(unknown.code, acp_agent::ErrorCode::METHOD_NOT_FOUND);

    let turn = pair
        .call("session/prompt", json!({"sessionId": "s1", "prompt": []}))
        .await
        .unwrap();
    assert_eq!(
        turn,
        json!({"stopReason": "end_turn", "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}})
    );
}

/// An agent offering `session/options`: it answers a snapshot of one `select` option and
/// records the initial values `session/new` brings.
#[cfg(feature = "unstable_session_options")]
#[derive(Default)]
struct Options {
    initial: std::sync::Arc<std::sync::Mutex<Vec<InitialSessionConfigOption>>>,
}

#[cfg(feature = "unstable_session_options")]
#[acp_agent::async_trait]
impl Agent for Options {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        let sessions = SessionCapabilities::new().options(SessionOptionsCapabilities::new());
        Ok(InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(AgentCapabilities::new().session_capabilities(sessions)))
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        self.initial.lock().unwrap().extend(p.config_options);
        Ok(NewSessionResponse::new("s1"))
    }

    async fn session_options(
        &self,
        p: SessionOptionsRequest,
        _cx: &AgentContext,
    ) -> Result<SessionOptionsResponse, Error> {
        if p.session_id.is_some_and(|id| id.0 != "s1") {
            return Err(Error::resource_not_found("no such session"));
        }
        let fast = SessionConfigSelectOption::new(SessionConfigValueId("fast".into()), "Fast");
        let model = SessionConfigOption::new(
            SessionConfigId("model".into()),
            "Model",
            SessionConfigKind::select(
                SessionConfigValueId("fast".into()),
                SessionConfigSelectOptions::Ungrouped(vec![fast]),
            ),
        );
        Ok(SessionOptionsResponse::new().config_options([model]))
    }
}

#[cfg(feature = "unstable_session_options")]
#[tokio::test]
async fn session_options_and_initial_config_values_are_served() {
    let agent = Options::default();
    let initial = agent.initial.clone();
    let pair = Pair::new(agent, Recorder::default());
    let call = |method: &'static str, params: serde_json::Value| pair.call(method, params);
    let init = call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await
    .unwrap();
    assert_eq!(
        init["agentCapabilities"]["sessionCapabilities"]["options"],
        json!({})
    );
    let snapshot = call("session/options", json!({"cwd": "/w"})).await.unwrap();
    assert_eq!(snapshot["configOptions"][0]["currentValue"], "fast");
    let unknown = call("session/options", json!({"cwd": "/w", "sessionId": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, acp_agent::ErrorCode::RESOURCE_NOT_FOUND);
    let new = json!({"cwd": "/w", "mcpServers": [], "configOptions": [
        {"configId": "model", "value": "fast"}, {"configId": "web", "type": "boolean", "value": true}]});
    call("session/new", new).await.unwrap();
    let got = initial.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].value, SessionConfigOptionValue::boolean(true));
    // A malformed list rejects the request, as the official crate does.
    let bad = call(
        "session/new",
        json!({"cwd": "/w", "mcpServers": [], "configOptions": 7}),
    )
    .await
    .unwrap_err();
    assert_eq!(bad.code, acp_agent::ErrorCode::INVALID_PARAMS);
}
