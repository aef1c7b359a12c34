//! The unstable items against the official crate (`agent-client-protocol-schema` 1.17.0 with
//! the same features on): each sample reads through our type and theirs, and both write the
//! same JSON. Our side must also have read the item into its typed field (not kept it as an
//! unknown field in `extra`).
//!
//! `cargo test -p acp-types --features unstable --test differential_unstable`. gemini-cli's
//! model selection (`unstable_session_model`) is no longer in the official crate, so it is
//! checked against the shape written here instead.

#![cfg(feature = "unstable")]

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

mod beyond_sessions;

/// Reads `value` as ours (`O`) and theirs (`T`); both must accept it and write the same JSON.
fn both<O: DeserializeOwned + Serialize, T: DeserializeOwned + Serialize>(value: Value) -> O {
    let ours: O = serde_json::from_value(value.clone()).expect("ours reads it");
    let theirs: T = serde_json::from_value(value.clone()).expect("theirs reads it");
    assert_eq!(
        serde_json::to_value(&ours).unwrap(),
        serde_json::to_value(&theirs).unwrap(),
        "input: {value}"
    );
    ours
}

#[cfg(feature = "unstable_end_turn_token_usage")]
#[test]
fn prompt_results_carry_usage_like_the_official_crate() {
    use acp_types::v1::{PromptResponse, Usage};
    use agent_client_protocol_schema::v1 as official;
    let full = both::<PromptResponse, official::PromptResponse>(json!({
        "stopReason": "end_turn",
        "usage": {"totalTokens": 1500, "inputTokens": 1200, "outputTokens": 300,
                  "thoughtTokens": 40, "cachedReadTokens": 800, "cachedWriteTokens": 12}
    }));
    let usage = full.usage.as_ref().expect("usage is typed");
    assert_eq!(
        (usage.total_tokens, usage.cached_read_tokens),
        (1500, Some(800))
    );
    assert!(full.extra.is_empty());
    let short = both::<PromptResponse, official::PromptResponse>(json!({
        "stopReason": "max_tokens", "usage": {"totalTokens": 3, "inputTokens": 2, "outputTokens": 1}
    }));
    assert_eq!(short.usage.unwrap().thought_tokens, None);
    // A usage of the wrong shape is dropped by both, not a failed turn.
    let bad = both::<PromptResponse, official::PromptResponse>(
        json!({"stopReason": "end_turn", "usage": {"totalTokens": "many"}}),
    );
    assert!(bad.usage.is_none());
    // Built with the constructors, it writes what the official crate reads back unchanged.
    let built = PromptResponse::new(acp_types::v1::StopReason::EndTurn)
        .usage(Usage::new(10, 7, 3).thought_tokens(2));
    both::<PromptResponse, official::PromptResponse>(serde_json::to_value(&built).unwrap());
}

#[cfg(feature = "unstable_session_set_title")]
#[test]
fn set_title_and_its_capability_match_the_official_crate() {
    use acp_types::RequestMethod;
    use acp_types::v1::{
        InitializeResponse, SessionCapabilities, SessionTitleCapabilities, SetSessionTitleRequest,
        SetSessionTitleResponse,
    };
    use agent_client_protocol_schema::v1 as official;
    let request = both::<SetSessionTitleRequest, official::SetSessionTitleRequest>(
        json!({"sessionId": "s1", "title": "Refactor the parser"}),
    );
    assert_eq!(request.title, "Refactor the parser");
    let answer = both::<SetSessionTitleResponse, official::SetSessionTitleResponse>(
        json!({"title": "Refactor parser", "_meta": {"k": 1}}),
    );
    assert_eq!(answer.title, "Refactor parser");
    assert_eq!(SetSessionTitleRequest::METHOD, "session/set_title");
    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1,
        "agentCapabilities": {"sessionCapabilities": {"title": {}, "list": {}}}
    }));
    assert!(init.agent_capabilities.session_capabilities.title.is_some());
    let caps = SessionCapabilities::new().title(SessionTitleCapabilities::new());
    assert_eq!(serde_json::to_value(&caps).unwrap(), json!({"title": {}}));
}

#[cfg(feature = "unstable_session_model")]
#[test]
fn gemini_models_are_typed_and_written_back_unchanged() {
    use acp_types::RequestMethod;
    use acp_types::v1::{NewSessionResponse, SetSessionModelRequest, SetSessionModelResponse};
    let input = json!({
        "sessionId": "s1",
        "models": {
            "availableModels": [
                {"modelId": "gemini-2.5-pro", "name": "gemini-2.5-pro", "description": "Most capable"},
                {"modelId": "gemini-2.5-flash", "name": "gemini-2.5-flash"}
            ],
            "currentModelId": "gemini-2.5-pro"
        }
    });
    let answer: NewSessionResponse = serde_json::from_value(input.clone()).unwrap();
    let models = answer.models.as_ref().expect("models is typed");
    assert_eq!(models.current_model_id.0, "gemini-2.5-pro");
    assert_eq!(models.available_models[1].model_id.0, "gemini-2.5-flash");
    assert!(answer.extra.is_empty());
    assert_eq!(serde_json::to_value(&answer).unwrap(), input);
    let set = SetSessionModelRequest::new("s1", "gemini-2.5-flash");
    assert_eq!(
        serde_json::to_value(&set).unwrap(),
        json!({"sessionId": "s1", "modelId": "gemini-2.5-flash"})
    );
    assert_eq!(SetSessionModelRequest::METHOD, "session/set_model");
    // A `null` result (as agents send for empty results) reads as the empty one.
    const { assert!(<SetSessionModelRequest as RequestMethod>::RESULT_NULL_AS_DEFAULT) };
    let _: SetSessionModelResponse = serde_json::from_value(json!({})).unwrap();
}

#[cfg(feature = "unstable_session_fork")]
#[test]
fn fork_and_its_capability_match_the_official_crate() {
    use acp_types::RequestMethod;
    use acp_types::v1::{
        ForkSessionRequest, ForkSessionResponse, InitializeResponse, SessionCapabilities,
        SessionForkCapabilities,
    };
    use agent_client_protocol_schema::v1 as official;
    let request = both::<ForkSessionRequest, official::ForkSessionRequest>(json!({
        "sessionId": "s1", "cwd": "/w", "additionalDirectories": ["/lib"],
        "mcpServers": [{"name": "fs", "command": "/bin/mcp-fs", "args": [], "env": []}]
    }));
    assert_eq!(
        (request.session_id.0.as_str(), request.mcp_servers.len()),
        ("s1", 1)
    );
    assert!(request.extra.is_empty());
    // Absent lists are empty and not written, by both.
    both::<ForkSessionRequest, official::ForkSessionRequest>(
        json!({"sessionId": "s1", "cwd": "/w"}),
    );
    let answer = both::<ForkSessionResponse, official::ForkSessionResponse>(json!({
        "sessionId": "s2",
        "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}]}
    }));
    assert_eq!(answer.session_id.0, "s2");
    assert!(answer.modes.is_some());
    assert_eq!(ForkSessionRequest::METHOD, "session/fork");
    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1, "agentCapabilities": {"sessionCapabilities": {"fork": {}}}
    }));
    assert!(init.agent_capabilities.session_capabilities.fork.is_some());
    let built = ForkSessionRequest::new("s1", "/w");
    both::<ForkSessionRequest, official::ForkSessionRequest>(serde_json::to_value(&built).unwrap());
    let caps = SessionCapabilities::new().fork(SessionForkCapabilities::new());
    assert_eq!(serde_json::to_value(&caps).unwrap(), json!({"fork": {}}));
}

#[cfg(feature = "unstable_session_status")]
#[test]
fn session_status_matches_the_official_crate() {
    use acp_types::RequestMethod;
    use acp_types::v1::{
        InitializeResponse, SessionStatus, SessionStatusRequest, SessionStatusResponse,
    };
    use agent_client_protocol_schema::v1 as official;
    let request =
        both::<SessionStatusRequest, official::SessionStatusRequest>(json!({"sessionId": "s1"}));
    assert_eq!(request.session_id.0, "s1");
    for (wire, ours) in [
        ("open", SessionStatus::Open),
        ("saved", SessionStatus::Saved),
    ] {
        let answer =
            both::<SessionStatusResponse, official::SessionStatusResponse>(json!({"status": wire}));
        assert_eq!(answer.status, ours);
    }
    // A status neither knows yet is kept as sent by both.
    let future = both::<SessionStatusResponse, official::SessionStatusResponse>(
        json!({"status": "evicting"}),
    );
    assert_eq!(future.status.as_str(), "evicting");
    assert_eq!(SessionStatusRequest::METHOD, "session/status");
    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1, "agentCapabilities": {"sessionCapabilities": {"status": {}}}
    }));
    assert!(
        init.agent_capabilities
            .session_capabilities
            .status
            .is_some()
    );
    let built = SessionStatusResponse::new(SessionStatus::Saved);
    both::<SessionStatusResponse, official::SessionStatusResponse>(
        serde_json::to_value(&built).unwrap(),
    );
}

#[cfg(feature = "unstable_session_options")]
#[test]
fn session_options_initial_values_and_the_capability_match_the_official_crate() {
    use acp_types::RequestMethod;
    use acp_types::v1::{
        InitialSessionConfigOption, InitializeResponse, LoadSessionRequest, NewSessionRequest,
        ResumeSessionRequest, SessionCapabilities, SessionConfigOptionValue,
        SessionOptionsCapabilities, SessionOptionsRequest, SessionOptionsResponse,
    };
    use agent_client_protocol_schema::v1 as official;
    let request = both::<SessionOptionsRequest, official::SessionOptionsRequest>(json!({
        "cwd": "/w", "additionalDirectories": ["/lib"], "sessionId": "s1"
    }));
    assert_eq!(request.additional_directories, ["/lib"]);
    assert_eq!(request.session_id.map(|id| id.0).as_deref(), Some("s1"));
    // `null` directories mean none, as absent does.
    let bare = both::<SessionOptionsRequest, official::SessionOptionsRequest>(
        json!({"cwd": "/w", "additionalDirectories": null}),
    );
    assert!(bare.additional_directories.is_empty() && bare.session_id.is_none());
    assert_eq!(SessionOptionsRequest::METHOD, "session/options");
    let answer = both::<SessionOptionsResponse, official::SessionOptionsResponse>(json!({
        "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}]},
        "configOptions": [{"id": "model", "name": "Model", "type": "select",
            "currentValue": "fast", "options": [{"value": "fast", "name": "Fast"}]}]
    }));
    assert!(answer.modes.is_some());
    assert_eq!(answer.config_options.map(|o| o.len()), Some(1));
    both::<SessionOptionsResponse, official::SessionOptionsResponse>(json!({}));

    // Initial values on the three session setup requests: a select value (no `type`) and a
    // boolean one, in order.
    let initial = json!([
        {"configId": "model", "value": "fast"},
        {"configId": "web", "type": "boolean", "value": true}
    ]);
    let new = both::<NewSessionRequest, official::NewSessionRequest>(
        json!({"cwd": "/w", "mcpServers": [], "configOptions": initial}),
    );
    assert_eq!(new.config_options.len(), 2);
    assert!(new.extra.is_empty());
    assert!(matches!(
        new.config_options[1].value,
        SessionConfigOptionValue::Boolean(_)
    ));
    both::<LoadSessionRequest, official::LoadSessionRequest>(
        json!({"sessionId": "s1", "cwd": "/w", "mcpServers": [], "configOptions": initial}),
    );
    both::<ResumeSessionRequest, official::ResumeSessionRequest>(
        json!({"sessionId": "s1", "cwd": "/w", "configOptions": null}),
    );
    let built = NewSessionRequest::new("/w", []).config_options([
        InitialSessionConfigOption::new("model", SessionConfigOptionValue::value_id("fast")),
        InitialSessionConfigOption::new("web", SessionConfigOptionValue::boolean(false)),
    ]);
    both::<NewSessionRequest, official::NewSessionRequest>(serde_json::to_value(&built).unwrap());

    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1, "agentCapabilities": {"sessionCapabilities": {"options": {}}}
    }));
    assert!(
        init.agent_capabilities
            .session_capabilities
            .options
            .is_some()
    );
    assert_eq!(
        serde_json::to_value(SessionCapabilities::new().options(SessionOptionsCapabilities::new()))
            .unwrap(),
        json!({"options": {}})
    );
}

#[cfg(feature = "unstable_session_archive")]
#[test]
fn archive_the_list_filter_and_the_archived_flag_match_the_official_crate() {
    use acp_types::RequestMethod;
    use acp_types::v1::{
        ArchiveSessionRequest, ArchiveSessionResponse, InitializeResponse, ListSessionsRequest,
        ListSessionsResponse, SessionArchiveFilter, UnarchiveSessionRequest,
        UnarchiveSessionResponse,
    };
    use agent_client_protocol_schema::v1 as official;
    both::<ArchiveSessionRequest, official::ArchiveSessionRequest>(json!({"sessionId": "s1"}));
    both::<UnarchiveSessionRequest, official::UnarchiveSessionRequest>(
        json!({"sessionId": "s1", "_meta": {"k": true}}),
    );
    both::<ArchiveSessionResponse, official::ArchiveSessionResponse>(json!({}));
    both::<UnarchiveSessionResponse, official::UnarchiveSessionResponse>(json!({}));
    // Both read a `null` result as the empty one.
    const { assert!(<ArchiveSessionRequest as RequestMethod>::RESULT_NULL_AS_DEFAULT) };
    let _: official::ArchiveSessionResponse = serde_json::from_value(Value::Null).unwrap();
    assert_eq!(ArchiveSessionRequest::METHOD, "session/archive");
    assert_eq!(UnarchiveSessionRequest::METHOD, "session/unarchive");
    for (wire, ours) in [
        ("exclude", SessionArchiveFilter::Exclude),
        ("include", SessionArchiveFilter::Include),
        ("only", SessionArchiveFilter::Only),
    ] {
        let list =
            both::<ListSessionsRequest, official::ListSessionsRequest>(json!({"archived": wire}));
        assert_eq!(list.archived, Some(ours));
    }
    let unfiltered = both::<ListSessionsRequest, official::ListSessionsRequest>(json!({}));
    assert_eq!(unfiltered.archived, None);
    let page = both::<ListSessionsResponse, official::ListSessionsResponse>(json!({
        "sessions": [
            {"sessionId": "s1", "cwd": "/w", "archived": true},
            {"sessionId": "s2", "cwd": "/w", "archived": false},
            {"sessionId": "s3", "cwd": "/w"}
        ]
    }));
    let flags: Vec<_> = page.sessions.iter().map(|s| s.archived).collect();
    assert_eq!(flags, [Some(true), Some(false), None]);
    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1,
        "agentCapabilities": {"sessionCapabilities": {"archive": {}, "list": {}}}
    }));
    assert!(
        init.agent_capabilities
            .session_capabilities
            .archive
            .is_some()
    );
    let built = ListSessionsRequest::new().archived(SessionArchiveFilter::Only);
    both::<ListSessionsRequest, official::ListSessionsRequest>(
        serde_json::to_value(&built).unwrap(),
    );
}

#[cfg(feature = "unstable_session_fork")]
#[test]
fn system_prompts_and_their_capability_match_the_official_crate() {
    use acp_types::v1::{
        ContentBlock, ForkSessionRequest, InitializeResponse, LoadSessionRequest,
        NewSessionRequest, ResumeSessionRequest, SessionCapabilities,
        SessionSystemPromptCapabilities, SessionSystemPromptModeCapabilities,
        SessionSystemPromptOverrideCapabilities, SystemPrompt, SystemPromptMode,
    };
    use agent_client_protocol_schema::v1 as official;
    let prompt = json!({"mode": "override", "content": [{"type": "text", "text": "Be terse."}]});
    let new = both::<NewSessionRequest, official::NewSessionRequest>(
        json!({"cwd": "/w", "mcpServers": [], "systemPrompt": prompt}),
    );
    let system = new.system_prompt.as_ref().expect("systemPrompt is typed");
    assert_eq!(system.mode, SystemPromptMode::Override);
    assert!(new.extra.is_empty());
    both::<LoadSessionRequest, official::LoadSessionRequest>(json!({
        "sessionId": "s1", "cwd": "/w", "mcpServers": [],
        "systemPrompt": {"mode": "append", "content": [{"type": "text", "text": "x"}]}
    }));
    both::<ResumeSessionRequest, official::ResumeSessionRequest>(
        json!({"sessionId": "s1", "cwd": "/w", "systemPrompt": prompt}),
    );
    both::<ForkSessionRequest, official::ForkSessionRequest>(
        json!({"sessionId": "s1", "cwd": "/w", "systemPrompt": prompt}),
    );
    // A mode neither knows is kept, for the agent to refuse.
    let future = both::<NewSessionRequest, official::NewSessionRequest>(json!({
        "cwd": "/w", "mcpServers": [],
        "systemPrompt": {"mode": "prepend", "content": [{"type": "text", "text": "x"}]}
    }));
    assert_eq!(future.system_prompt.unwrap().mode.as_str(), "prepend");
    let init = both::<InitializeResponse, official::InitializeResponse>(json!({
        "protocolVersion": 1,
        "agentCapabilities": {"sessionCapabilities": {"systemPrompt": {"mode": {"override": {}}}}}
    }));
    let caps = init
        .agent_capabilities
        .session_capabilities
        .system_prompt
        .expect("typed");
    assert!(caps.mode.and_then(|m| m.override_).is_some());
    let built = NewSessionRequest::new("/w", []).system_prompt(SystemPrompt::new(
        SystemPromptMode::Append,
        [ContentBlock::text("Answer in French.")],
    ));
    both::<NewSessionRequest, official::NewSessionRequest>(serde_json::to_value(&built).unwrap());
    let caps = SessionCapabilities::new().system_prompt(
        SessionSystemPromptCapabilities::new().mode(
            SessionSystemPromptModeCapabilities::new()
                .override_(SessionSystemPromptOverrideCapabilities::new()),
        ),
    );
    assert_eq!(
        serde_json::to_value(&caps).unwrap(),
        json!({"systemPrompt": {"mode": {"override": {}}}})
    );
}
