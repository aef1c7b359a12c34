//! The unstable items beyond a session's own: authentication status, plan operations,
//! provider configuration, MCP over ACP, subagent updates and proxy chain envelopes.

use super::*;

#[cfg(feature = "unstable_auth_status")]
#[test]
fn auth_status_its_update_and_its_capability_match_the_official_crate() {
    use acp_types::v1::{
        AgentAuthCapabilities, AuthAccount, AuthState, AuthStatusCapabilities, AuthStatusRequest,
        AuthStatusResponse, AuthStatusUpdateNotification, InitializeResponse,
    };
    use acp_types::{NotificationMethod, RequestMethod};
    use agent_client_protocol_schema::v1 as official;
    both::<AuthStatusRequest, official::AuthStatusRequest>(json!({}));
    const { assert!(<AuthStatusRequest as RequestMethod>::PARAMS_NULL_AS_DEFAULT) };
    let _: official::AuthStatusRequest = serde_json::from_value(Value::Null).unwrap();
    let answer = both::<AuthStatusResponse, official::AuthStatusResponse>(json!({
        "state": "authenticated",
        "accounts": [
            {"label": "Claude Max", "active": true, "name": "Ada", "email": "ada@example.org",
             "organization": "Analytical Engines"},
            {"label": "OpenAI API key"}
        ]
    }));
    assert_eq!(answer.state, AuthState::Authenticated);
    assert_eq!(answer.accounts[0].email.as_deref(), Some("ada@example.org"));
    for (wire, ours) in [
        ("unauthenticated", AuthState::Unauthenticated),
        ("not_required", AuthState::NotRequired),
        ("unknown", AuthState::Undetermined),
    ] {
        let update = both::<AuthStatusUpdateNotification, official::AuthStatusUpdateNotification>(
            json!({"state": wire}),
        );
        assert_eq!(update.state, ours);
    }
    // Accounts that do not parse are dropped by both.
    let lenient = both::<AuthStatusResponse, official::AuthStatusResponse>(
        json!({"state": "authenticated", "accounts": [{"label": 3}, {"label": "ok"}]}),
    );
    assert_eq!(lenient.accounts.len(), 1);
    assert_eq!(AuthStatusRequest::METHOD, "auth/status");
    assert_eq!(AuthStatusUpdateNotification::METHOD, "auth/status_update");
    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1, "agentCapabilities": {"auth": {"status": {}, "logout": {}}}
    }));
    assert!(init.agent_capabilities.auth.status.is_some());
    let built = AuthStatusResponse::new(AuthState::Authenticated)
        .accounts([AuthAccount::new("Vertex AI").active(true)]);
    both::<AuthStatusResponse, official::AuthStatusResponse>(serde_json::to_value(&built).unwrap());
    let caps = AgentAuthCapabilities::new().status(AuthStatusCapabilities::new());
    assert_eq!(serde_json::to_value(&caps).unwrap(), json!({"status": {}}));
}

#[test]
fn plan_operations_match_the_official_crate() {
    use acp_types::v1::{
        ClientCapabilities, InitializeRequest, PlanCapabilities, PlanEntry, PlanEntryPriority,
        PlanEntryStatus, PlanUpdateContent, SessionNotification, SessionUpdate,
    };
    use agent_client_protocol_schema::v1 as official;
    let items = both::<SessionNotification, official::SessionNotification>(json!({
        "sessionId": "s1",
        "update": {
            "sessionUpdate": "plan_update",
            "plan": {"type": "items", "planId": "p1", "entries": [
                {"content": "Read the parser", "priority": "high", "status": "in_progress"},
                {"content": "Fix it", "priority": "medium", "status": "pending"}
            ]}
        }
    }));
    let SessionUpdate::PlanUpdate(update) = &items.update else {
        panic!("plan_update is typed: {:?}", items.update)
    };
    let PlanUpdateContent::Items(list) = &update.plan else {
        panic!("items are typed: {:?}", update.plan)
    };
    assert_eq!((list.plan_id.0.as_str(), list.entries.len()), ("p1", 2));
    for content in [
        json!({"type": "file", "planId": "p2", "uri": "file:///w/PLAN.md"}),
        json!({"type": "markdown", "planId": "p3", "content": "# Plan\n- [ ] one"}),
    ] {
        let n = both::<SessionNotification, official::SessionNotification>(json!({
            "sessionId": "s1", "update": {"sessionUpdate": "plan_update", "plan": content}
        }));
        assert!(matches!(n.update, SessionUpdate::PlanUpdate(_)), "{n:?}");
    }
    let removed = both::<SessionNotification, official::SessionNotification>(json!({
        "sessionId": "s1", "update": {"sessionUpdate": "plan_removed", "planId": "p1"}
    }));
    let SessionUpdate::PlanRemoved(gone) = &removed.update else {
        panic!("plan_removed is typed: {:?}", removed.update)
    };
    assert_eq!(gone.plan_id.0, "p1");
    // The whole-list `plan` update is unchanged beside them.
    both::<SessionNotification, official::SessionNotification>(json!({
        "sessionId": "s1", "update": {"sessionUpdate": "plan", "entries": []}
    }));
    let init = both::<InitializeRequest, official::InitializeRequest>(
        json!({"protocolVersion": 1, "clientCapabilities": {"plan": {}}}),
    );
    assert!(init.client_capabilities.plan.is_some());
    // Built with the constructors, each writes what the official crate reads back unchanged.
    for update in [
        SessionUpdate::plan_update(PlanUpdateContent::items(
            "p1",
            [PlanEntry::new(
                "Ship",
                PlanEntryPriority::Low,
                PlanEntryStatus::Completed,
            )],
        )),
        SessionUpdate::plan_update(PlanUpdateContent::markdown("p2", "- x")),
        SessionUpdate::plan_removed("p1"),
    ] {
        both::<SessionNotification, official::SessionNotification>(
            serde_json::to_value(SessionNotification::new("s1", update)).unwrap(),
        );
    }
    let caps = ClientCapabilities::new().plan(PlanCapabilities::new());
    assert_eq!(serde_json::to_value(&caps).unwrap()["plan"], json!({}));
}

#[cfg(feature = "unstable_llm_providers")]
#[test]
fn provider_configuration_matches_the_official_crate() {
    use acp_types::RequestMethod;
    use acp_types::v1::{
        AgentCapabilities, DisableProviderRequest, DisableProviderResponse, InitializeResponse,
        ListProvidersRequest, ListProvidersResponse, LlmProtocol, ProvidersCapabilities,
        SetProviderRequest, SetProviderResponse,
    };
    use agent_client_protocol_schema::v1 as official;
    both::<ListProvidersRequest, official::ListProvidersRequest>(json!({}));
    let _: official::ListProvidersRequest = serde_json::from_value(Value::Null).unwrap();
    const { assert!(<ListProvidersRequest as RequestMethod>::PARAMS_NULL_AS_DEFAULT) };
    let list = both::<ListProvidersResponse, official::ListProvidersResponse>(json!({
        "providers": [
            {"providerId": "main", "supported": ["anthropic", "openai", "bedrock"], "required": true,
             "current": {"apiType": "anthropic", "baseUrl": "https://api.anthropic.com"}},
            {"providerId": "spare", "supported": ["vertex", "azure", "_local"], "required": false},
            {"providerId": "off", "supported": [], "required": false, "current": null}
        ]
    }));
    let main = &list.providers[0];
    assert_eq!(main.supported[1], LlmProtocol::OpenAi);
    assert_eq!(
        main.current.as_ref().map(|c| c.base_url.as_str()),
        Some("https://api.anthropic.com")
    );
    assert_eq!(list.providers[1].supported[2].as_str(), "_local");
    assert!(list.providers[2].current.is_none());
    let set = both::<SetProviderRequest, official::SetProviderRequest>(json!({
        "providerId": "main", "apiType": "openai", "baseUrl": "https://llm.example.org/v1",
        "headers": {"Authorization": "Bearer k", "X-Team": "a"}
    }));
    assert_eq!(set.headers.len(), 2);
    both::<SetProviderRequest, official::SetProviderRequest>(
        json!({"providerId": "main", "apiType": "azure", "baseUrl": "https://a"}),
    );
    both::<SetProviderResponse, official::SetProviderResponse>(json!({}));
    both::<DisableProviderRequest, official::DisableProviderRequest>(
        json!({"providerId": "spare"}),
    );
    both::<DisableProviderResponse, official::DisableProviderResponse>(json!({}));
    assert_eq!(
        [
            ListProvidersRequest::METHOD,
            SetProviderRequest::METHOD,
            DisableProviderRequest::METHOD
        ],
        ["providers/list", "providers/set", "providers/disable"]
    );
    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1, "agentCapabilities": {"providers": {}}
    }));
    assert!(init.agent_capabilities.providers.is_some());
    let built = SetProviderRequest::new("main", LlmProtocol::Bedrock, "https://b")
        .headers([("Authorization", "k")]);
    both::<SetProviderRequest, official::SetProviderRequest>(serde_json::to_value(&built).unwrap());
    let caps = AgentCapabilities::new().providers(ProvidersCapabilities::new());
    assert_eq!(serde_json::to_value(&caps).unwrap()["providers"], json!({}));
}

#[cfg(feature = "unstable_mcp_over_acp")]
#[test]
fn mcp_over_acp_matches_the_official_crate() {
    use acp_types::v1::{
        InitializeResponse, McpCapabilities, McpError, McpServer, McpServerAcp,
        MessageMcpNotification, MessageMcpRequest, MessageMcpResponse, MessageMcpResult,
        NewSessionRequest,
    };
    use acp_types::{NotificationMethod, RequestMethod};
    use agent_client_protocol_schema::v1 as official;
    // The `acp` transport sits beside the untagged stdio one; both are read as what they are.
    let new = both::<NewSessionRequest, official::NewSessionRequest>(json!({
        "cwd": "/w",
        "mcpServers": [
            {"type": "acp", "name": "project-tools", "serverId": "srv-1"},
            {"name": "fs", "command": "/bin/mcp-fs", "args": [], "env": []},
            {"type": "http", "name": "web", "url": "https://mcp.example.org", "headers": []}
        ]
    }));
    let McpServer::Acp(server) = &new.mcp_servers[0] else {
        panic!("acp is typed: {:?}", new.mcp_servers[0])
    };
    assert_eq!(
        (server.name.as_str(), server.server_id.0.as_str()),
        ("project-tools", "srv-1")
    );
    assert!(matches!(new.mcp_servers[1], McpServer::Stdio(_)));
    let built = NewSessionRequest::new("/w", [McpServer::from(McpServerAcp::new("t", "srv-2"))]);
    both::<NewSessionRequest, official::NewSessionRequest>(serde_json::to_value(&built).unwrap());
    // The capability: both write `acp` always, as they do `http` and `sse`.
    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1, "agentCapabilities": {"mcpCapabilities": {"acp": true}}
    }));
    assert!(init.agent_capabilities.mcp_capabilities.acp);
    both::<InitializeResponse, official::InitializeResponse>(
        json!({"protocolVersion": 1, "agentCapabilities": {"mcpCapabilities": {"http": true}}}),
    );
    assert_eq!(
        serde_json::to_value(McpCapabilities::new().acp(true)).unwrap(),
        json!({"http": false, "sse": false, "acp": true})
    );
    // The request and the notification: same fields, `params` absent or `null` means none.
    let request = both::<MessageMcpRequest, official::MessageMcpRequest>(json!({
        "serverId": "srv-1", "requestId": "7", "method": "tools/call",
        "params": {"name": "grep", "arguments": {"pattern": "fn main"}}
    }));
    assert_eq!(request.method, "tools/call");
    assert_eq!(request.params.as_ref().map(|p| p.len()), Some(2));
    let bare = both::<MessageMcpRequest, official::MessageMcpRequest>(
        json!({"serverId": "srv-1", "requestId": "8", "method": "tools/list", "params": null}),
    );
    assert!(bare.params.is_none());
    let progress = both::<MessageMcpNotification, official::MessageMcpNotification>(json!({
        "serverId": "srv-1", "requestId": "7", "method": "notifications/progress",
        "params": {"progressToken": "p", "progress": 0.5}
    }));
    assert_eq!(progress.request_id.0, "7");
    for missing in ["serverId", "requestId", "method"] {
        let mut value = json!({"serverId": "s", "requestId": "r", "method": "m"});
        value.as_object_mut().unwrap().remove(missing);
        assert!(serde_json::from_value::<MessageMcpRequest>(value.clone()).is_err());
        assert!(serde_json::from_value::<official::MessageMcpRequest>(value).is_err());
    }
    assert_eq!(
        (MessageMcpRequest::METHOD, MessageMcpNotification::METHOD),
        ("mcp/message", "mcp/message")
    );
    // The answer: an opaque result (`null` included) or an MCP error whose `data` keeps
    // absent, `null` and a value apart.
    for result in [
        Value::Null,
        json!(42),
        json!({"content": [{"type": "text", "text": "ok"}], "isError": false}),
    ] {
        let answer = both::<MessageMcpResponse, official::MessageMcpResponse>(
            json!({"result": result.clone()}),
        );
        let MessageMcpResponse::Result(inner) = &answer else {
            panic!("a result: {answer:?}")
        };
        assert_eq!(inner.result, result);
    }
    for (error, data) in [
        (json!({"code": -32602, "message": "no such tool"}), None),
        (
            json!({"code": -32602, "message": "no such tool", "data": null}),
            Some(None),
        ),
        (
            json!({"code": 1, "message": "x", "data": {"tool": "grep"}, "future": [1]}),
            Some(Some(json!({"tool": "grep"}))),
        ),
    ] {
        let answer = both::<MessageMcpResponse, official::MessageMcpResponse>(
            json!({"error": error, "_meta": {"k": 1}}),
        );
        let MessageMcpResponse::Error(inner) = &answer else {
            panic!("an error: {answer:?}")
        };
        assert_eq!(inner.error.data, data);
        assert!(inner.meta.is_some());
    }
    // Neither a missing outcome nor a malformed error is read, by either.
    for bad in [
        json!({}),
        json!({"_meta": {}}),
        json!({"error": null}),
        json!({"error": {"code": 1}}),
        json!({"error": {"code": "1", "message": "x"}}),
        Value::Null,
    ] {
        assert!(
            serde_json::from_value::<MessageMcpResponse>(bad.clone()).is_err(),
            "{bad}"
        );
        assert!(serde_json::from_value::<official::MessageMcpResponse>(bad.clone()).is_err());
    }
    // Built with the constructors, each writes what the official crate reads back unchanged.
    for built in [
        MessageMcpResponse::from(MessageMcpResult::new(Value::Null)),
        MessageMcpResponse::from(acp_types::v1::MessageMcpError::new(
            McpError::new(-32000, "boom").data(None),
        )),
    ] {
        both::<MessageMcpResponse, official::MessageMcpResponse>(
            serde_json::to_value(&built).unwrap(),
        );
    }
    let built = MessageMcpRequest::new("srv-1", "9", "tools/list");
    both::<MessageMcpRequest, official::MessageMcpRequest>(serde_json::to_value(&built).unwrap());
}

#[cfg(feature = "unstable_end_turn_token_usage")]
#[test]
fn subagent_updates_match_the_official_crate() {
    use acp_types::v1::{
        ClientCapabilities, ContentBlock, IdleStateUpdate, IdleStopReason, InitializeRequest,
        SessionCancelCapabilities, SessionMessage, SessionNotification, SessionUpdate, StateUpdate,
        SubagentCapabilities, SubagentSessionCapabilities, SubagentUpdate, UndeterminedStateUpdate,
        Usage,
    };
    use agent_client_protocol_schema::v1 as official;
    let note = |update: Value| json!({"sessionId": "parent", "update": update});
    // Each field of a subagent update is a patch: absent, `null` and a value stay apart.
    let full = both::<SessionNotification, official::SessionNotification>(note(json!({
        "sessionUpdate": "subagent_update", "sessionId": "child",
        "title": "Reviewer", "description": null,
        "capabilities": {"cancel": {}},
        "state": {"state": "running"},
        "cwd": "/w/sub", "additionalDirectories": ["/lib"],
        "_meta": null
    })));
    let SessionUpdate::SubagentUpdate(child) = &full.update else {
        panic!("subagent_update is typed: {:?}", full.update)
    };
    assert_eq!(child.session_id.0, "child");
    assert_eq!(child.title, Some(Some("Reviewer".to_owned())));
    assert_eq!(child.description, Some(None));
    assert_eq!(child.meta, Some(None));
    assert!(matches!(child.state, Some(Some(StateUpdate::Running(_)))));
    assert!(
        child
            .capabilities
            .as_ref()
            .and_then(|c| c.as_ref())
            .is_some_and(|c| c.cancel.is_some())
    );
    let bare = both::<SessionNotification, official::SessionNotification>(note(
        json!({"sessionUpdate": "subagent_update", "sessionId": "child", "state": null}),
    ));
    let SessionUpdate::SubagentUpdate(bare) = &bare.update else {
        panic!("typed")
    };
    assert_eq!((bare.title.clone(), bare.state.clone()), (None, Some(None)));
    // Every state, `unknown` included (ours: `Undetermined`), and a state neither knows.
    for (state, ours) in [
        (json!({"state": "idle", "stopReason": "end_turn"}), "idle"),
        (
            json!({"state": "idle", "stopReason": "error",
                "error": {"code": -32603, "message": "crashed"}}),
            "idle",
        ),
        (json!({"state": "idle", "stopReason": "_paused"}), "idle"),
        (
            json!({"state": "idle", "stopReason": "max_tokens",
                "usage": {"totalTokens": 9, "inputTokens": 5, "outputTokens": 4}}),
            "idle",
        ),
        (json!({"state": "idle"}), "idle"),
        (json!({"state": "requires_action"}), "requires_action"),
        (
            json!({"state": "unknown", "_meta": {"source": "worker"}}),
            "unknown",
        ),
        (
            json!({"state": "_waiting", "detail": {"ticket": 7}}),
            "other",
        ),
    ] {
        let n = both::<SessionNotification, official::SessionNotification>(note(json!({
            "sessionUpdate": "subagent_update", "sessionId": "child", "state": state
        })));
        let SessionUpdate::SubagentUpdate(u) = &n.update else {
            panic!("typed")
        };
        let got = match u.state.clone().flatten().expect("a state") {
            StateUpdate::Idle(_) => "idle",
            StateUpdate::RequiresAction(_) => "requires_action",
            StateUpdate::Undetermined(_) => "unknown",
            StateUpdate::Running(_) => "running",
            _ => "other",
        };
        assert_eq!(got, ours, "{state}");
    }
    // Messages between sessions and their chunks.
    let message = both::<SessionNotification, official::SessionNotification>(note(json!({
        "sessionUpdate": "session_message", "messageId": "m1",
        "senderSessionId": "parent", "recipientSessionId": "child",
        "recipientMessageId": null,
        "content": [{"type": "text", "text": "Review the parser"}]
    })));
    let SessionUpdate::SessionMessage(m) = &message.update else {
        panic!("session_message is typed: {:?}", message.update)
    };
    assert_eq!(m.recipient_message_id, Some(None));
    assert_eq!(m.sender_message_id, None);
    both::<SessionNotification, official::SessionNotification>(note(json!({
        "sessionUpdate": "session_message", "messageId": "m1", "content": null
    })));
    let chunk = both::<SessionNotification, official::SessionNotification>(note(json!({
        "sessionUpdate": "session_message_chunk", "messageId": "m1",
        "content": {"type": "text", "text": "Done."}
    })));
    assert!(matches!(
        chunk.update,
        SessionUpdate::SessionMessageChunk(_)
    ));
    let init = both::<InitializeRequest, official::InitializeRequest>(
        json!({"protocolVersion": 1, "clientCapabilities": {"subagents": {}}}),
    );
    assert!(init.client_capabilities.subagents.is_some());
    // Built with the constructors, each writes what the official crate reads back unchanged.
    for update in [
        SessionUpdate::from(
            SubagentUpdate::new("child")
                .title(Some("Tests".to_owned()))
                .description(None)
                .capabilities(Some(
                    SubagentSessionCapabilities::new().cancel(SessionCancelCapabilities::new()),
                ))
                .state(Some(StateUpdate::from(
                    IdleStateUpdate::new()
                        .stop_reason(IdleStopReason::EndTurn)
                        .usage(Usage::new(3, 2, 1)),
                ))),
        ),
        SessionUpdate::from(
            SubagentUpdate::new("child").state(Some(UndeterminedStateUpdate::new().into())),
        ),
        SessionUpdate::from(
            SessionMessage::new("m2")
                .sender_session_id(Some("child".into()))
                .content(Some(vec![ContentBlock::text("hi")])),
        ),
        SessionUpdate::session_message_chunk("m2", ContentBlock::text("more")),
    ] {
        both::<SessionNotification, official::SessionNotification>(
            serde_json::to_value(SessionNotification::new("parent", update)).unwrap(),
        );
    }
    let caps = ClientCapabilities::new().subagents(SubagentCapabilities::new());
    assert_eq!(serde_json::to_value(&caps).unwrap()["subagents"], json!({}));
}

#[cfg(feature = "unstable_proxy_chains")]
#[test]
fn proxy_chain_envelopes_match_the_official_crate() {
    use acp_types::v1::{
        InitializeProxyRequest, InitializeProxyResponse, InitializeRequest, InitializeResponse,
        ProxySuccessorNotification, ProxySuccessorRequest, ProxySuccessorResponse,
    };
    use acp_types::{NotificationMethod, RequestMethod};
    use agent_client_protocol_schema::v1 as official;
    // `proxy/initialize` carries exactly `initialize`'s params and result (upstream's
    // transparent wrappers), so ours reuses those types.
    let init = both::<InitializeProxyRequest, official::InitializeProxyRequest>(
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}}}),
    );
    let InitializeProxyRequest::Initialize(inner) = init;
    assert!(inner.client_capabilities.fs.read_text_file);
    both::<InitializeProxyResponse, official::InitializeProxyResponse>(
        json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}),
    );
    let built = InitializeProxyRequest::from(InitializeRequest::new(1));
    both::<InitializeProxyRequest, official::InitializeProxyRequest>(
        serde_json::to_value(&built).unwrap(),
    );
    // The chain's answer, any `initialize` answer.
    let answer = InitializeProxyResponse::from(InitializeResponse::new(1));
    assert_eq!(
        serde_json::to_value(&answer).unwrap()["protocolVersion"],
        json!(1)
    );
    // The request envelope: the wrapped params are forwarded as they are (object or array),
    // the hop's own `_meta` beside them.
    let request = both::<ProxySuccessorRequest, official::ProxySuccessorRequest>(json!({
        "method": "session/prompt",
        "params": {"sessionId": "s1", "prompt": [], "_meta": {"inner": 1}},
        "_meta": {"hop": "a"}
    }));
    assert_eq!(request.method, "session/prompt");
    assert_eq!(
        request.params.as_ref().unwrap()["_meta"],
        json!({"inner": 1})
    );
    assert_eq!(request.meta.as_ref().unwrap().get("hop"), Some(&json!("a")));
    assert!(request.extra.is_empty());
    let array = both::<ProxySuccessorRequest, official::ProxySuccessorRequest>(
        json!({"method": "_x/batch", "params": [1, 2]}),
    );
    assert_eq!(array.params, Some(json!([1, 2])));
    let bare = both::<ProxySuccessorRequest, official::ProxySuccessorRequest>(
        json!({"method": "session/list"}),
    );
    assert!(bare.params.is_none());
    // A `_meta` of the wrong shape is dropped by both, not a failed envelope.
    both::<ProxySuccessorRequest, official::ProxySuccessorRequest>(
        json!({"method": "session/list", "_meta": 5}),
    );
    // Without `method` neither reads it.
    assert!(serde_json::from_value::<ProxySuccessorRequest>(json!({"params": {}})).is_err());
    assert!(
        serde_json::from_value::<official::ProxySuccessorRequest>(json!({"params": {}})).is_err()
    );
    let note = both::<ProxySuccessorNotification, official::ProxySuccessorNotification>(json!({
        "method": "session/update",
        "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": "hi"}}}
    }));
    assert_eq!(note.method, "session/update");
    // The result is the wrapped request's result, whatever JSON it is.
    for result in [
        json!({"stopReason": "end_turn"}),
        json!(null),
        json!([1]),
        json!("x"),
    ] {
        let ours = both::<ProxySuccessorResponse, official::ProxySuccessorResponse>(result.clone());
        assert_eq!(ours, ProxySuccessorResponse::Value(result));
    }
    // Built with the constructors, they write what the official crate reads back unchanged.
    let built = ProxySuccessorRequest::new("session/cancel").params(json!({"sessionId": "s1"}));
    both::<ProxySuccessorRequest, official::ProxySuccessorRequest>(
        serde_json::to_value(&built).unwrap(),
    );
    // The method tables know both methods, the envelope both ways.
    assert_eq!(
        <InitializeProxyRequest as RequestMethod>::METHOD,
        "proxy/initialize"
    );
    assert_eq!(
        <ProxySuccessorRequest as RequestMethod>::METHOD,
        "proxy/successor"
    );
    assert_eq!(
        <ProxySuccessorNotification as NotificationMethod>::METHOD,
        "proxy/successor"
    );
}
