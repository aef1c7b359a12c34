//! Nothing an agent sends is silently lost: fields our v1 types do not name reach the
//! application through each value's `extra` map, with no cargo feature, and what the
//! application adds there reaches the agent.
//!
//! The agent here answers `session/new` the way gemini-cli 0.61.0 does: with `models` (the
//! models the session can use and the current one, the shape of the official schema's
//! `SessionModelState`) beside the stable `modes`.

mod common;

use std::sync::{Arc, Mutex};

use acp_client::{Client, async_trait};
use acp_rpc::{Error, Handler, Params, RawValue, RequestContext};
use acp_types::HasExtra;
use acp_types::v1::*;
#[cfg(not(feature = "unstable_session_model"))]
use serde::Deserialize;
use serde_json::{Value, json};

/// The `session/new` answer, byte for byte as the agent writes it.
const GEMINI_NEW_SESSION: &str = r#"{"sessionId":"0b6c1f6e-gemini","modes":{"availableModes":[{"id":"default","name":"Default","description":"Prompts for approval"},{"id":"yolo","name":"YOLO","description":"Auto-approves all actions"}],"currentModeId":"default"},"models":{"availableModels":[{"modelId":"gemini-2.5-pro","name":"gemini-2.5-pro","description":"Most capable"},{"modelId":"gemini-2.5-flash","name":"gemini-2.5-flash"}],"currentModelId":"gemini-2.5-pro"}}"#;

struct Quiet;
impl Client for Quiet {}

/// Answers `session/new` like gemini-cli and records the params of every request.
struct GeminiLike {
    seen: Arc<Mutex<Vec<Value>>>,
}

#[async_trait]
impl Handler for GeminiLike {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let value: Value = params.parse()?;
        self.seen.lock().unwrap().push(value);
        let answer = match method {
            "session/new" => GEMINI_NEW_SESSION.to_owned(),
            _ => "{}".to_owned(),
        };
        Ok(RawValue::from_string(answer).expect("valid JSON"))
    }
}

/// How an application that knows gemini's model list reads it, with its own types.
#[cfg(not(feature = "unstable_session_model"))]
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Models {
    available_models: Vec<Model>,
    current_model_id: String,
}

#[cfg(not(feature = "unstable_session_model"))]
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Model {
    model_id: String,
    name: String,
}

// With `unstable_session_model` on, `models` is a typed field instead (tests/unstable_methods.rs).
#[cfg(not(feature = "unstable_session_model"))]
#[tokio::test]
async fn the_client_reads_gemini_models_from_a_new_session_answer_without_any_feature() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (client, _agent) = common::pair(Quiet, GeminiLike { seen: seen.clone() });
    let answer = client
        .agent()
        .new_session(NewSessionRequest::new("/tmp", []))
        .await
        .expect("session/new succeeds");

    assert_eq!(answer.session_id.0, "0b6c1f6e-gemini");
    assert_eq!(
        answer.extra.len(),
        1,
        "only `models` is unknown: {:?}",
        answer.extra
    );
    let models: Models = answer
        .extra
        .parse("models")
        .expect("the answer has `models`")
        .expect("`models` has gemini's shape");
    assert_eq!(models.current_model_id, "gemini-2.5-pro");
    let ids: Vec<&str> = models
        .available_models
        .iter()
        .map(|m| m.model_id.as_str())
        .collect();
    assert_eq!(ids, ["gemini-2.5-pro", "gemini-2.5-flash"]);
    assert_eq!(models.available_models[1].name, "gemini-2.5-flash");

    // Written back, the answer is what the agent sent: the known fields and `models`.
    let expected: Value = serde_json::from_str(GEMINI_NEW_SESSION).unwrap();
    assert_eq!(serde_json::to_value(&answer).unwrap(), expected);
}

#[tokio::test]
async fn fields_the_application_adds_to_extra_reach_the_agent() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (client, _agent) = common::pair(Quiet, GeminiLike { seen: seen.clone() });
    let request =
        NewSessionRequest::new("/work", []).with_extra("model", json!("gemini-2.5-flash"));
    assert_eq!(
        request.extra_fields().get("model"),
        Some(&json!("gemini-2.5-flash"))
    );
    client
        .agent()
        .new_session(request)
        .await
        .expect("session/new succeeds");
    let params = seen
        .lock()
        .unwrap()
        .pop()
        .expect("the agent saw the request");
    assert_eq!(params["model"], "gemini-2.5-flash");
    assert_eq!(params["cwd"], "/work");
}
