//! The unstable session lifecycle and auth items a client uses behind features
//! (`unstable_session_fork`, `unstable_session_status`, `unstable_session_archive`,
//! `unstable_auth_status`; and, when on, `unstable_llm_providers`; plan operations and the
//! system prompt are stable v1 now), against a raw agent that answers
//! with the bytes an agent on the official crate's features writes.
//!
//! `cargo test -p acp-client --features unstable --test unstable_sessions`.
#![cfg(all(
    feature = "unstable_session_fork",
    feature = "unstable_session_status",
    feature = "unstable_session_archive",
    feature = "unstable_auth_status"
))]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::{Client, async_trait};
use acp_rpc::{Error, Handler, Params, RawValue, RequestContext};
use acp_types::v1::*;
use serde_json::{Value, json};

/// Keeps the `auth/status_update` notifications and session updates it receives.
#[derive(Clone, Default)]
struct Watcher(
    Arc<Mutex<Vec<AuthStatusUpdateNotification>>>,
    Arc<Mutex<Vec<SessionUpdate>>>,
);

#[async_trait]
impl Client for Watcher {
    async fn session_update(&self, params: SessionNotification) -> Result<(), Error> {
        self.1.lock().unwrap().push(params.update);
        Ok(())
    }

    async fn auth_status_update(&self, params: AuthStatusUpdateNotification) -> Result<(), Error> {
        self.0.lock().unwrap().push(params);
        Ok(())
    }
}

/// Answers with fixed bytes per method and records (method, params).
struct Scripted {
    seen: Arc<Mutex<Vec<(String, Value)>>>,
}

#[async_trait]
impl Handler for Scripted {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let value: Value = params.parse()?;
        self.seen.lock().unwrap().push((method.to_owned(), value));
        let answer = match method {
            "initialize" => {
                r#"{"protocolVersion":1,"agentCapabilities":{"auth":{"status":{}},"sessionCapabilities":{"list":{},"fork":{},"status":{},"archive":{},"systemPrompt":{"mode":{"override":{}}}}}}"#
            }
            "session/new" => r#"{"sessionId":"s1"}"#,
            "session/fork" => r#"{"sessionId":"s2","configOptions":[]}"#,
            "session/status" => r#"{"status":"saved"}"#,
            // Empty results, as some agents send them.
            "session/archive" => "null",
            "session/unarchive" => "{}",
            "session/list" => {
                r#"{"sessions":[{"sessionId":"s1","cwd":"/w","archived":true},{"sessionId":"s3","cwd":"/w","archived":false}]}"#
            }
            "auth/status" => {
                // The state changed while answering: the agent says so too.
                cx.peer()
                    .notify(
                        "auth/status_update",
                        &json!({"state": "unauthenticated", "accounts": [{"label": "Vertex AI"}]}),
                    )
                    .await?;
                r#"{"state":"authenticated","accounts":[{"label":"Claude Max","active":true,"email":"ada@example.org"}]}"#
            }
            "session/prompt" => {
                // Plans by id, as an agent streams them (stable v1 since schema 1.20.0).
                for update in [
                    json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p1",
                        "entries": [{"content": "Read", "priority": "high", "status": "pending"}]}}),
                    json!({"sessionUpdate": "plan_removed", "planId": "p1"}),
                ] {
                    cx.peer()
                        .notify(
                            "session/update",
                            &json!({"sessionId": "s1", "update": update}),
                        )
                        .await?;
                }
                r#"{"stopReason":"end_turn"}"#
            }
            "providers/list" => {
                r#"{"providers":[{"providerId":"main","supported":["openai","_local"],"required":false,"current":{"apiType":"openai","baseUrl":"https://api.openai.com/v1"}}]}"#
            }
            "providers/disable" => "null",
            "session/options" => {
                r#"{"configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"fast","options":[{"value":"fast","name":"Fast"}]}]}"#
            }
            _ => "{}",
        };
        Ok(RawValue::from_string(answer.to_owned()).expect("valid JSON"))
    }
}

#[tokio::test]
async fn fork_status_archive_system_prompt_and_auth_status_are_typed() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let watcher = Watcher::default();
    let (client, _agent) = common::pair(watcher.clone(), Scripted { seen: seen.clone() });
    let agent = client.agent();
    let init = agent
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    let caps = &init.agent_capabilities;
    assert!(caps.auth.status.is_some());
    let sessions = &caps.session_capabilities;
    assert!(sessions.fork.is_some() && sessions.status.is_some() && sessions.archive.is_some());
    let system = sessions
        .system_prompt
        .as_ref()
        .expect("systemPrompt is typed");
    assert!(
        system
            .mode
            .as_ref()
            .and_then(|m| m.override_.as_ref())
            .is_some()
    );

    let prompt = SystemPrompt::new(
        SystemPromptMode::Override,
        [ContentBlock::text("You review Rust.")],
    );
    agent
        .new_session(NewSessionRequest::new("/w", []).system_prompt(prompt.clone()))
        .await
        .unwrap();
    let fork = agent
        .fork_session(ForkSessionRequest::new("s1", "/w").system_prompt(prompt))
        .await
        .unwrap();
    assert_eq!(fork.session_id.0, "s2");
    let status = agent
        .session_status(SessionStatusRequest::new("s2"))
        .await
        .unwrap();
    assert_eq!(status.status, SessionStatus::Saved);
    agent
        .archive_session(ArchiveSessionRequest::new("s1"))
        .await
        .expect("a null result reads as the empty one");
    agent
        .unarchive_session(UnarchiveSessionRequest::new("s1"))
        .await
        .unwrap();
    let listed = agent
        .list_sessions(ListSessionsRequest::new().archived(SessionArchiveFilter::Include))
        .await
        .unwrap();
    let flags: Vec<_> = listed.sessions.iter().map(|s| s.archived).collect();
    assert_eq!(flags, [Some(true), Some(false)]);

    let auth = agent.auth_status(AuthStatusRequest::new()).await.unwrap();
    assert_eq!(auth.state, AuthState::Authenticated);
    assert_eq!(auth.accounts[0].active, Some(true));
    tokio::time::timeout(Duration::from_secs(10), async {
        while watcher.0.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the auth/status_update reaches the client");
    let update = watcher.0.lock().unwrap()[0].clone();
    assert_eq!(update.state, AuthState::Unauthenticated);
    assert_eq!(update.accounts[0].label, "Vertex AI");

    {
        let turn = agent
            .prompt(PromptRequest::new("s1", [ContentBlock::text("plan")]))
            .await
            .unwrap();
        assert_eq!(turn.stop_reason, StopReason::EndTurn);
        let updates = watcher.1.lock().unwrap().clone();
        match &updates[..] {
            [
                SessionUpdate::PlanUpdate(update),
                SessionUpdate::PlanRemoved(removed),
            ] => {
                let PlanUpdateContent::Items(items) = &update.plan else {
                    panic!("items are typed: {update:?}")
                };
                assert_eq!(items.entries[0].content, "Read");
                assert_eq!(removed.plan_id.0, "p1");
            }
            other => panic!("the plan updates arrive typed, in order: {other:?}"),
        }
    }

    #[cfg(feature = "unstable_llm_providers")]
    {
        let providers = agent
            .list_providers(ListProvidersRequest::new())
            .await
            .unwrap();
        let main = &providers.providers[0];
        assert_eq!(
            main.supported,
            [LlmProtocol::OpenAi, LlmProtocol::Unknown("_local".into())]
        );
        agent
            .set_provider(
                SetProviderRequest::new("main", LlmProtocol::OpenAi, "https://llm.example.org")
                    .headers([("Authorization", "Bearer k")]),
            )
            .await
            .unwrap();
        agent
            .disable_provider(DisableProviderRequest::new("main"))
            .await
            .expect("a null result reads as the empty one");
    }

    let seen = seen.lock().unwrap();
    let sent = |method: &str| {
        seen.iter()
            .find(|(m, _)| m == method)
            .map(|(_, p)| p.clone())
    };
    let system =
        json!({"mode": "override", "content": [{"type": "text", "text": "You review Rust."}]});
    assert_eq!(
        sent("session/new"),
        Some(json!({"cwd": "/w", "mcpServers": [], "systemPrompt": system}))
    );
    assert_eq!(
        sent("session/fork"),
        Some(json!({"sessionId": "s1", "cwd": "/w", "systemPrompt": system}))
    );
    assert_eq!(sent("session/status"), Some(json!({"sessionId": "s2"})));
    assert_eq!(sent("session/archive"), Some(json!({"sessionId": "s1"})));
    assert_eq!(sent("session/unarchive"), Some(json!({"sessionId": "s1"})));
    assert_eq!(sent("session/list"), Some(json!({"archived": "include"})));
    assert_eq!(sent("auth/status"), Some(json!({})));
    #[cfg(feature = "unstable_llm_providers")]
    assert_eq!(
        sent("providers/set"),
        Some(
            json!({"providerId": "main", "apiType": "openai", "baseUrl": "https://llm.example.org",
                    "headers": {"Authorization": "Bearer k"}})
        )
    );
}

#[cfg(feature = "unstable_session_options")]
#[tokio::test]
async fn session_options_and_initial_config_values_are_typed() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (client, _agent) = common::pair(Watcher::default(), Scripted { seen: seen.clone() });
    let agent = client.agent();
    agent
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    let snapshot = agent
        .session_options(SessionOptionsRequest::new("/w").session_id(SessionId("s1".into())))
        .await
        .unwrap();
    let options = snapshot.config_options.expect("configOptions is typed");
    assert_eq!(options[0].id.0, "model");
    let initial = [InitialSessionConfigOption::new(
        SessionConfigId("web".into()),
        SessionConfigOptionValue::boolean(true),
    )];
    agent
        .new_session(NewSessionRequest::new("/w", []).config_options(initial))
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen[1],
        (
            "session/options".to_owned(),
            json!({"cwd": "/w", "sessionId": "s1"})
        )
    );
    assert_eq!(
        seen[2].1["configOptions"],
        json!([{"configId": "web", "type": "boolean", "value": true}])
    );
}
