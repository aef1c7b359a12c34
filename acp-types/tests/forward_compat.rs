//! Forward compatibility: messages from a newer or sloppier peer are read, not rejected, and
//! what we do not understand is kept rather than dropped.

use acp_types::v1::*;
use serde_json::{Value, json};

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(v: Value) -> (T, Value) {
    let typed: T = serde_json::from_value(v).unwrap();
    let back = serde_json::to_value(&typed).unwrap();
    (typed, back)
}

#[test]
fn unknown_fields_are_ignored() {
    let (n, back): (SessionNotification, _) = round_trip(json!({
        "sessionId": "s", "futureField": {"x": 1},
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi", "alsoNew": true}}
    }));
    assert_eq!(n.session_id.0, "s");
    assert_eq!(
        back,
        json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}})
    );
}

#[test]
fn meta_objects_survive_a_round_trip_at_every_level() {
    let input = json!({
        "sessionId": "s", "_meta": {"a": 1},
        "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "_meta": {"b": [1, 2]},
                   "content": [{"type": "content", "content": {"type": "text", "text": "y", "_meta": {"c": null}}, "_meta": {"d": "e"}}]}
    });
    let (_, back): (SessionNotification, _) = round_trip(input.clone());
    assert_eq!(back, input);
}

#[test]
fn unknown_session_update_kind_is_kept_as_raw_json() {
    let raw = json!({"sessionUpdate": "subagent_spawned", "child": "s2", "depth": 3});
    let (n, back): (SessionNotification, _) =
        round_trip(json!({"sessionId": "s", "update": raw.clone()}));
    assert_eq!(n.update, SessionUpdate::Unknown(raw.clone()));
    assert_eq!(back["update"], raw);
}

#[test]
fn unknown_content_block_type_is_kept_as_raw_json() {
    let raw = json!({"type": "video", "uri": "file:///a.mp4"});
    let (p, back): (PromptRequest, _) = round_trip(
        json!({"sessionId": "s", "prompt": [{"type": "text", "text": "see"}, raw.clone()]}),
    );
    assert_eq!(p.prompt[1], ContentBlock::Unknown(raw.clone()));
    assert_eq!(back["prompt"][1], raw);
}

#[test]
fn unknown_enum_values_are_kept_as_text() {
    let (r, back): (PromptResponse, _) = round_trip(json!({"stopReason": "paused"}));
    assert_eq!(r.stop_reason, StopReason::Unknown("paused".into()));
    assert_eq!(back, json!({"stopReason": "paused"}));
    assert_eq!(StopReason::EndTurn.to_string(), "end_turn");
}

#[test]
fn a_known_tag_with_a_broken_body_is_still_an_error() {
    let err =
        serde_json::from_value::<ContentBlock>(json!({"type": "image", "mimeType": "image/png"}))
            .unwrap_err();
    assert!(err.to_string().contains("data"), "{err}");
}

#[test]
fn request_ids_may_be_integers_strings_or_null() {
    for id in [json!(7), json!("req-7"), Value::Null] {
        let (_, back): (CancelRequestNotification, _) =
            round_trip(json!({"requestId": id.clone()}));
        assert_eq!(back["requestId"], id);
    }
    let (n, _): (CancelRequestNotification, _) = round_trip(json!({"requestId": "abc"}));
    assert_eq!(n.request_id, RequestId::Str("abc".into()));
}

#[test]
fn bad_optional_fields_fall_back_instead_of_failing_the_message() {
    let (i, _): (InitializeRequest, _) =
        round_trip(json!({"protocolVersion": 1, "clientCapabilities": {"fs": "yes"}, "_meta": 5}));
    assert!(!i.client_capabilities.fs.read_text_file);
    assert_eq!(i.meta, None);
}

#[test]
fn explicit_null_that_clears_a_value_is_written_back() {
    let input = json!({"sessionUpdate": "session_info_update", "title": null});
    let (u, back): (SessionUpdate, _) = round_trip(input.clone());
    let SessionUpdate::SessionInfoUpdate(info) = u else {
        panic!("wrong variant")
    };
    assert_eq!(info.title, Some(None));
    assert_eq!(back, input);
}
