//! The unstable items against the official crate (`agent-client-protocol-schema` 1.15.1 with
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
