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
fn unknown_fields_are_kept_and_written_back_at_every_level() {
    let input = json!({
        "sessionId": "s", "futureField": {"x": 1},
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi", "alsoNew": true}}
    });
    let (n, back): (SessionNotification, _) = round_trip(input.clone());
    assert_eq!(n.session_id.0, "s");
    assert_eq!(n.extra.get("futureField"), Some(&json!({"x": 1})));
    let SessionUpdate::AgentMessageChunk(chunk) = &n.update else {
        panic!("a message chunk: {:?}", n.update)
    };
    let ContentBlock::Text(text) = &chunk.content else {
        panic!("a text block")
    };
    assert_eq!(text.extra.get("alsoNew"), Some(&json!(true)));
    assert_eq!(back, input);
}

#[test]
fn a_union_tag_that_is_not_the_first_key_is_not_kept_twice() {
    // The tag comes last, so the union buffers the object and reads the body from it: the
    // tag must not land in the body's unknown fields (it would be written twice).
    let input = json!({"sessionId": "s", "update": {"content": {"text": "hi", "type": "text", "n": 1}, "sessionUpdate": "agent_message_chunk", "later": 2}});
    let (n, _): (SessionNotification, _) = round_trip(input);
    let SessionUpdate::AgentMessageChunk(chunk) = &n.update else {
        panic!("a message chunk")
    };
    assert_eq!(chunk.extra.len(), 1, "{:?}", chunk.extra);
    assert_eq!(chunk.extra.get("later"), Some(&json!(2)));
    let text = serde_json::to_string(&n).unwrap();
    assert_eq!(text.matches("sessionUpdate").count(), 1, "{text}");
    assert_eq!(text.matches("\"type\"").count(), 1, "{text}");
}

#[test]
fn unknown_fields_of_marker_objects_and_embedded_unions_are_kept() {
    let input = json!({
        "protocolVersion": 1,
        "agentCapabilities": {"sessionCapabilities": {"list": {"paged": true}}, "futureCap": {"on": true}}
    });
    let (init, back): (InitializeResponse, _) = round_trip(input);
    assert_eq!(
        init.agent_capabilities.extra.get("futureCap"),
        Some(&json!({"on": true}))
    );
    assert_eq!(back["agentCapabilities"]["futureCap"], json!({"on": true}));
    assert_eq!(
        back["agentCapabilities"]["sessionCapabilities"]["list"],
        json!({"paged": true})
    );
}

#[test]
fn extra_fields_are_built_and_read_through_the_constructors() {
    let request = NewSessionRequest::new("/w", [])
        .with_extra("model", json!("m1"))
        .extra(acp_types::Extra::from_iter([("x", json!(1))]));
    // `extra` sets the whole map; `with_extra` adds to it.
    assert_eq!(request.extra.len(), 1);
    let request = request.with_extra("y", json!(2));
    assert_eq!(
        acp_types::HasExtra::extra_fields(&request).get("y"),
        Some(&json!(2))
    );
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({"cwd": "/w", "mcpServers": [], "x": 1, "y": 2})
    );
    assert!(NewSessionRequest::new("/w", []).extra.is_empty());
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
