//! The unstable session lifecycle and auth items an agent serves behind features
//! (`unstable_session_fork`, `unstable_session_status`, `unstable_session_archive`,
//! `unstable_auth_status`; and, when on, `unstable_llm_providers`; plan operations and the
//! system prompt are stable v1 now), driven by a raw client over a
//! duplex pipe.
//!
//! `cargo test -p acp-agent --features unstable --test unstable_sessions`.
#![cfg(all(
    feature = "unstable_session_fork",
    feature = "unstable_session_status",
    feature = "unstable_session_archive",
    feature = "unstable_auth_status"
))]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, ErrorCode, PromptContext};
use acp_rpc::{Config, Connection, Handler, NotificationContext, Params, RawValue, RequestContext};
use serde_json::{Value, json};

/// An agent offering every lifecycle item; `advertise_auth` says whether it advertises
/// `auth.status`.
struct Lifecycle {
    advertise_auth: bool,
    /// The system prompts `session/new` and `session/fork` received.
    system_prompts: Arc<Mutex<Vec<Option<SystemPrompt>>>>,
    /// What `auth/status_update` gave when the agent tried to send it from `auth/status`.
    update_sent: Arc<Mutex<Option<Result<(), Error>>>>,
}

#[acp_agent::async_trait]
impl Agent for Lifecycle {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        let sessions = SessionCapabilities::new()
            .list(SessionListCapabilities::new())
            .fork(SessionForkCapabilities::new())
            .status(SessionStatusCapabilities::new())
            .archive(SessionArchiveCapabilities::new())
            .system_prompt(SessionSystemPromptCapabilities::new());
        let mut auth = AgentAuthCapabilities::new();
        if self.advertise_auth {
            auth = auth.status(AuthStatusCapabilities::new());
        }
        Ok(
            InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(
                AgentCapabilities::new()
                    .session_capabilities(sessions)
                    .auth(auth),
            ),
        )
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        _cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        self.system_prompts.lock().unwrap().push(p.system_prompt);
        Ok(NewSessionResponse::new("s1"))
    }

    async fn fork_session(
        &self,
        p: ForkSessionRequest,
        cx: &AgentContext,
    ) -> Result<ForkSessionResponse, Error> {
        if p.session_id.0 != "s1" {
            return Err(Error::resource_not_found("no such session"));
        }
        self.system_prompts.lock().unwrap().push(p.system_prompt);
        // Sent before the answer: the connection holds it until the answer is written.
        cx.client()
            .send_update("s1-fork", SessionUpdate::agent_message_text("forked"))
            .await?;
        Ok(ForkSessionResponse::new("s1-fork"))
    }

    async fn session_status(
        &self,
        p: SessionStatusRequest,
        _cx: &AgentContext,
    ) -> Result<SessionStatusResponse, Error> {
        match p.session_id.0.as_str() {
            "s1" | "s1-fork" => Ok(SessionStatusResponse::new(SessionStatus::Open)),
            "stored" => Ok(SessionStatusResponse::new(SessionStatus::Saved)),
            _ => Err(Error::resource_not_found("no such session")),
        }
    }

    async fn archive_session(
        &self,
        _p: ArchiveSessionRequest,
        _cx: &AgentContext,
    ) -> Result<ArchiveSessionResponse, Error> {
        Ok(ArchiveSessionResponse::new())
    }

    async fn unarchive_session(
        &self,
        _p: UnarchiveSessionRequest,
        _cx: &AgentContext,
    ) -> Result<UnarchiveSessionResponse, Error> {
        Ok(UnarchiveSessionResponse::new())
    }

    async fn auth_status(
        &self,
        _p: AuthStatusRequest,
        cx: &AgentContext,
    ) -> Result<AuthStatusResponse, Error> {
        let sent = cx
            .client()
            .auth_status_update(AuthStatusUpdateNotification::new(AuthState::Authenticated))
            .await;
        *self.update_sent.lock().unwrap() = Some(sent);
        Ok(AuthStatusResponse::new(AuthState::Authenticated)
            .accounts([AuthAccount::new("Claude Max").active(true)]))
    }

    async fn prompt(
        &self,
        _p: PromptRequest,
        _cx: &PromptContext,
    ) -> Result<PromptResponse, Error> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    #[cfg(feature = "unstable_llm_providers")]
    async fn list_providers(
        &self,
        _p: ListProvidersRequest,
        _cx: &AgentContext,
    ) -> Result<ListProvidersResponse, Error> {
        Ok(ListProvidersResponse::new([ProviderInfo::new(
            "main",
            [LlmProtocol::Anthropic, LlmProtocol::OpenAi],
            true,
        )
        .current(ProviderCurrentConfig::new(
            LlmProtocol::Anthropic,
            "https://api.anthropic.com",
        ))]))
    }

    #[cfg(feature = "unstable_llm_providers")]
    async fn set_provider(
        &self,
        p: SetProviderRequest,
        _cx: &AgentContext,
    ) -> Result<SetProviderResponse, Error> {
        if p.api_type != LlmProtocol::OpenAi || !p.headers.contains_key("Authorization") {
            return Err(Error::invalid_params("unexpected provider configuration"));
        }
        Ok(SetProviderResponse::new())
    }

    #[cfg(feature = "unstable_llm_providers")]
    async fn disable_provider(
        &self,
        _p: DisableProviderRequest,
        _cx: &AgentContext,
    ) -> Result<DisableProviderResponse, Error> {
        Err(Error::invalid_params("the provider main is required"))
    }
}

/// Records every notification (method and params) the agent sends.
#[derive(Clone, Default)]
struct Notes(Arc<Mutex<Vec<(String, Value)>>>);

#[acp_rpc::async_trait]
impl Handler for Notes {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        _params: Params,
    ) -> Result<Box<RawValue>, Error> {
        Err(Error::method_not_found(method))
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        self.0
            .lock()
            .unwrap()
            .push((method.to_owned(), params.parse()?));
        Ok(())
    }
}

struct Pair {
    _agent: acp_agent::AgentConnection,
    client: Connection,
    notes: Notes,
}

impl Pair {
    fn new(agent: Lifecycle) -> Pair {
        let (a, b) = tokio::io::duplex(64 * 1024);
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let notes = Notes::default();
        Pair {
            _agent: acp_agent::Builder::new(agent).io(ar, aw),
            client: Connection::new(br, bw, notes.clone(), Config::default()),
            notes,
        }
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, Error> {
        tokio::time::timeout(
            Duration::from_secs(10),
            self.client.peer().request(method, &params),
        )
        .await
        .expect("no answer within 10 s")
    }

    fn notes(&self) -> Vec<(String, Value)> {
        self.notes.0.lock().unwrap().clone()
    }
}

fn lifecycle(advertise_auth: bool) -> (Lifecycle, Arc<Mutex<Vec<Option<SystemPrompt>>>>) {
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let agent = Lifecycle {
        advertise_auth,
        system_prompts: prompts.clone(),
        update_sent: Arc::default(),
    };
    (agent, prompts)
}

#[tokio::test]
async fn fork_status_archive_and_system_prompts_are_served() {
    let (agent, prompts) = lifecycle(true);
    let pair = Pair::new(agent);
    let init = pair
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await
        .unwrap();
    let caps = &init["agentCapabilities"]["sessionCapabilities"];
    for name in ["fork", "status", "archive", "systemPrompt"] {
        assert_eq!(caps[name], json!({}), "{name} in {init}");
    }

    let system = json!({"mode": "append", "content": [{"type": "text", "text": "Be terse."}]});
    pair.call(
        "session/new",
        json!({"cwd": "/w", "mcpServers": [], "systemPrompt": system}),
    )
    .await
    .unwrap();

    let fork = pair
        .call(
            "session/fork",
            json!({"sessionId": "s1", "cwd": "/w", "systemPrompt": system}),
        )
        .await
        .unwrap();
    assert_eq!(fork, json!({"sessionId": "s1-fork"}));
    // The update sent while forking arrives (after the answer), and the forked session is
    // known to the connection: a prompt for it is served.
    tokio::time::timeout(Duration::from_secs(10), async {
        while !pair
            .notes()
            .iter()
            .any(|(m, p)| m == "session/update" && p["sessionId"] == "s1-fork")
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the fork's update arrives");
    let turn = pair
        .call(
            "session/prompt",
            json!({"sessionId": "s1-fork", "prompt": []}),
        )
        .await
        .unwrap();
    assert_eq!(turn["stopReason"], "end_turn");
    let failed = pair
        .call("session/fork", json!({"sessionId": "gone", "cwd": "/w"}))
        .await
        .unwrap_err();
    assert_eq!(failed.code, ErrorCode::RESOURCE_NOT_FOUND);

    let seen = prompts.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for prompt in seen {
        let prompt = prompt.expect("the system prompt reached the agent typed");
        assert_eq!(prompt.mode, SystemPromptMode::Append);
    }
    // A system prompt of the wrong shape is refused, not silently dropped.
    let bad = pair
        .call(
            "session/new",
            json!({"cwd": "/w", "mcpServers": [], "systemPrompt": {"mode": "append"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::INVALID_PARAMS);

    // `session/status` is reached for sessions this connection never loaded.
    let open = pair
        .call("session/status", json!({"sessionId": "s1"}))
        .await
        .unwrap();
    assert_eq!(open, json!({"status": "open"}));
    let saved = pair
        .call("session/status", json!({"sessionId": "stored"}))
        .await
        .unwrap();
    assert_eq!(saved, json!({"status": "saved"}));

    // Archiving closes the session on this connection: a prompt for it is then refused.
    let archived = pair
        .call("session/archive", json!({"sessionId": "s1"}))
        .await
        .unwrap();
    assert_eq!(archived, json!({}));
    let refused = pair
        .call("session/prompt", json!({"sessionId": "s1", "prompt": []}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::RESOURCE_NOT_FOUND);
    let unarchived = pair
        .call("session/unarchive", json!({"sessionId": "s1"}))
        .await
        .unwrap();
    assert_eq!(unarchived, json!({}));
}

#[tokio::test]
async fn auth_status_is_served_and_its_update_needs_the_agents_own_capability() {
    for advertised in [true, false] {
        let (agent, _) = lifecycle(advertised);
        let sent = agent.update_sent.clone();
        let pair = Pair::new(agent);
        pair.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await
        .unwrap();
        // `auth/status` takes no params; a `null` or absent params value is read as `{}`.
        let status = pair.call("auth/status", Value::Null).await.unwrap();
        assert_eq!(
            status,
            json!({"state": "authenticated", "accounts": [{"label": "Claude Max", "active": true}]})
        );
        let sent = sent
            .lock()
            .unwrap()
            .take()
            .expect("the agent tried to send");
        if advertised {
            sent.expect("sent when auth.status is advertised");
            tokio::time::timeout(Duration::from_secs(10), async {
                while !pair.notes().iter().any(|(m, p)| {
                    m == "auth/status_update" && p == &json!({"state": "authenticated"})
                }) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await
            .expect("the update arrives");
        } else {
            let refused = sent.expect_err("refused locally without auth.status");
            assert_eq!(refused.code, acp_agent::CAPABILITY_NOT_ADVERTISED);
            assert!(refused.message.contains("auth.status"), "{refused:?}");
            assert!(pair.notes().iter().all(|(m, _)| m != "auth/status_update"));
        }
    }
}

/// Sends a `plan_update` and a `plan_removed` from its prompt and keeps what sending gave.
struct Planner(Arc<Mutex<Vec<Result<(), Error>>>>);

#[acp_agent::async_trait]
impl Agent for Planner {
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
        Ok(NewSessionResponse::new("s1"))
    }

    async fn prompt(&self, _p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let client = cx.client();
        let update = SessionUpdate::plan_update(PlanUpdateContent::markdown("p1", "- [ ] read"));
        let sent = client.send_update("s1", update).await;
        self.0.lock().unwrap().push(sent);
        let sent = client
            .send_update("s1", SessionUpdate::plan_removed("p1"))
            .await;
        self.0.lock().unwrap().push(sent);
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

#[tokio::test]
async fn plan_operations_reach_only_clients_that_advertise_plan() {
    for advertised in [true, false] {
        let results = Arc::new(Mutex::new(Vec::new()));
        let (a, b) = tokio::io::duplex(64 * 1024);
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let notes = Notes::default();
        let pair = Pair {
            _agent: acp_agent::Builder::new(Planner(results.clone())).io(ar, aw),
            client: Connection::new(br, bw, notes.clone(), Config::default()),
            notes,
        };
        let caps = if advertised {
            json!({"plan": {}})
        } else {
            json!({})
        };
        pair.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": caps}),
        )
        .await
        .unwrap();
        pair.call("session/new", json!({"cwd": "/w", "mcpServers": []}))
            .await
            .unwrap();
        pair.call("session/prompt", json!({"sessionId": "s1", "prompt": []}))
            .await
            .unwrap();
        let results = std::mem::take(&mut *results.lock().unwrap());
        assert_eq!(results.len(), 2);
        let kinds: Vec<Value> = pair
            .notes()
            .into_iter()
            .filter(|(m, _)| m == "session/update")
            .map(|(_, p)| p["update"]["sessionUpdate"].clone())
            .collect();
        if advertised {
            assert!(results.iter().all(Result::is_ok), "{results:?}");
            // Every update of a prompt is written before its answer.
            assert_eq!(kinds, [json!("plan_update"), json!("plan_removed")]);
        } else {
            for refused in results {
                let refused = refused.expect_err("refused locally without `plan`");
                assert_eq!(refused.code, acp_agent::CAPABILITY_NOT_ADVERTISED);
            }
            assert!(kinds.is_empty(), "{kinds:?}");
        }
    }
}

#[cfg(feature = "unstable_llm_providers")]
#[tokio::test]
async fn provider_methods_are_served() {
    let (agent, _) = lifecycle(true);
    let pair = Pair::new(agent);
    pair.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await
    .unwrap();
    let list = pair.call("providers/list", json!({})).await.unwrap();
    assert_eq!(
        list,
        json!({"providers": [{"providerId": "main", "supported": ["anthropic", "openai"],
            "required": true, "current": {"apiType": "anthropic", "baseUrl": "https://api.anthropic.com"}}]})
    );
    let set = pair
        .call(
            "providers/set",
            json!({"providerId": "main", "apiType": "openai", "baseUrl": "https://llm.example.org",
                   "headers": {"Authorization": "Bearer k"}}),
        )
        .await
        .unwrap();
    assert_eq!(set, json!({}));
    let refused = pair
        .call("providers/disable", json!({"providerId": "main"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    // A configuration without its required base URL never reaches the agent.
    let bad = pair
        .call(
            "providers/set",
            json!({"providerId": "main", "apiType": "openai"}),
        )
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::INVALID_PARAMS);
}
