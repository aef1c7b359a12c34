//! A field our v1 types do not name is kept, not dropped, when no feature names it: gemini-cli's
//! `models` on the `session/new` answer (typed only with `unstable_session_model`) is read from
//! the answer's `extra` map and written back unchanged.
//!
//! It lives here because this crate builds acp-types with a feature set of its own: in the
//! workspace's build every unstable item is on (the interop crate's dev-dependencies unify them
//! in), so `models` is a typed field there. acp-client's `tests/unknown_fields.rs` has the same
//! case through a client and an agent, run when acp-client is tested alone.
//!
//! `cargo test --manifest-path differential/Cargo.toml --locked`

use acp_types::HasExtra;
use acp_types::v1::NewSessionResponse;
use serde::Deserialize;
use serde_json::Value;

/// The `session/new` answer, byte for byte as gemini-cli 0.61.0 writes it.
const GEMINI_NEW_SESSION: &str = r#"{"sessionId":"0b6c1f6e-gemini","modes":{"availableModes":[{"id":"default","name":"Default","description":"Prompts for approval"},{"id":"yolo","name":"YOLO","description":"Auto-approves all actions"}],"currentModeId":"default"},"models":{"availableModels":[{"modelId":"gemini-2.5-pro","name":"gemini-2.5-pro","description":"Most capable"},{"modelId":"gemini-2.5-flash","name":"gemini-2.5-flash"}],"currentModelId":"gemini-2.5-pro"}}"#;

/// How an application that knows gemini's model list reads it, with its own types.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Models {
    available_models: Vec<Model>,
    current_model_id: String,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Model {
    model_id: String,
    name: String,
}

#[test]
fn gemini_models_are_read_from_extra_without_any_feature() {
    let answer: NewSessionResponse =
        serde_json::from_str(GEMINI_NEW_SESSION).expect("the answer reads");
    assert_eq!(answer.session_id.0, "0b6c1f6e-gemini");
    assert_eq!(
        answer.extra_fields().len(),
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
