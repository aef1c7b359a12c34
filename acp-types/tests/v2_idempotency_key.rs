//! `session/prompt`'s `idempotencyKey` (v2): optional, omitted and `null` mean no key, and a
//! present key is 1 to 255 characters (not bytes); anything else fails the whole request
//! instead of being read as "no key" (agent-client-protocol-schema 1.20.0, "Retrying a prompt").
#![cfg(feature = "v2")]

use acp_types::v2::*;
use serde_json::{Value, json};

fn prompt_with_key(key: Value) -> Value {
    json!({"sessionId": "sess-1", "idempotencyKey": key, "prompt": [{"type": "text", "text": "hi"}]})
}

#[test]
fn a_key_round_trips_and_the_builder_sets_it() {
    let key = "0b6f3c1e-8d2a-4c57-9a41-5e2f7d90c3ab";
    let value = prompt_with_key(json!(key));
    let request: PromptRequest = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(
        request.idempotency_key.as_deref().map(String::as_str),
        Some(key)
    );
    assert_eq!(serde_json::to_value(&request).unwrap(), value);
    let built = PromptRequest::new("sess-1", [ContentBlock::text("hi")])
        .idempotency_key(IdempotencyKey::try_from(key).unwrap());
    assert_eq!(serde_json::to_value(&built).unwrap(), value);
    // Through the message enum, as a connection reads it.
    let decoded = ClientRequest::decode("session/prompt", value.clone()).unwrap();
    assert_eq!(decoded.payload_to_value().unwrap(), value);
}

#[test]
fn omitted_and_null_mean_no_key_and_no_key_is_not_written() {
    let omitted = json!({"sessionId": "sess-1", "prompt": [{"type": "text", "text": "hi"}]});
    let request: PromptRequest = serde_json::from_value(omitted.clone()).unwrap();
    assert_eq!(request.idempotency_key, None);
    assert_eq!(serde_json::to_value(&request).unwrap(), omitted);
    let null: PromptRequest = serde_json::from_value(prompt_with_key(Value::Null)).unwrap();
    assert_eq!(null.idempotency_key, None);
}

#[test]
fn a_malformed_key_fails_the_request_instead_of_meaning_no_key() {
    let too_long = "k".repeat(IdempotencyKey::MAX_LENGTH + 1);
    for (what, key) in [
        ("an empty string", json!("")),
        ("256 characters", json!(too_long)),
        ("a number", json!(7)),
        ("zero", json!(0)),
        ("a boolean", json!(true)),
        ("an object", json!({"key": "k"})),
        ("an array", json!(["k"])),
    ] {
        let err = serde_json::from_value::<PromptRequest>(prompt_with_key(key.clone()));
        assert!(
            err.is_err(),
            "{what} must fail the request, not mean no key"
        );
        assert!(
            ClientRequest::decode("session/prompt", prompt_with_key(key)).is_err(),
            "{what} must fail the request read through the message enum"
        );
    }
    let err = serde_json::from_value::<PromptRequest>(prompt_with_key(json!(too_long)))
        .unwrap_err()
        .to_string();
    assert!(err.contains("longer than 255 characters"), "{err}");
    let err = serde_json::from_value::<PromptRequest>(prompt_with_key(json!("")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("shorter than 1"), "{err}");
}

#[test]
fn the_length_is_counted_in_characters_not_bytes() {
    let longest = "é".repeat(IdempotencyKey::MAX_LENGTH); // 510 bytes
    let request: PromptRequest = serde_json::from_value(prompt_with_key(json!(longest))).unwrap();
    assert_eq!(request.idempotency_key.unwrap().as_str(), longest);
    assert!(IdempotencyKey::try_from("k".repeat(255)).is_ok());
    assert!(IdempotencyKey::try_from(format!("{longest}é")).is_err());
    assert!(IdempotencyKey::try_from("").is_err());
    // Case-sensitive and opaque: kept exactly as sent.
    let a = IdempotencyKey::try_from("Key").unwrap();
    let b = IdempotencyKey::try_from("key").unwrap();
    assert_ne!(a, b);
}
