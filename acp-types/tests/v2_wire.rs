//! Protocol v2 on the wire: every example message of the official v2 pages reads and writes
//! back unchanged, patch fields keep their three states, and values this schema does not
//! know (`_`-prefixed extensions) survive byte for byte.
#![cfg(feature = "v2")]

use acp_types::Patch;
use acp_types::v2::*;
use acp_types::{MethodKind, Side};
use serde_json::{Value, json};

/// Reads `value` as the params or result of `method` through the message enums, exactly as a
/// connection reads it, and writes it back.
fn through_enums(method: &str, part: &str, value: &Value) -> Result<Value, String> {
    let info = METHODS
        .iter()
        .find(|m| m.name == method)
        .ok_or_else(|| format!("{method} is not in the v2 method table"))?;
    let value = value.clone();
    let out = match (info.served_by, info.kind, part) {
        (Side::Agent, MethodKind::Request, "params") => {
            ClientRequest::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Agent, MethodKind::Request, "result") => {
            AgentResponse::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Client, MethodKind::Request, "params") => {
            AgentRequest::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Client, MethodKind::Request, "result") => {
            ClientResponse::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Agent, MethodKind::Notification, "params") => {
            ClientNotification::decode(method, value).map(|m| m.payload_to_value())
        }
        (Side::Client | Side::Protocol, MethodKind::Notification, "params") => {
            AgentNotification::decode(method, value).map(|m| m.payload_to_value())
        }
        _ => return Err(format!("no {part} for {method}")),
    };
    out.map_err(|e| e.to_string())?.map_err(|e| e.to_string())
}

#[test]
fn every_example_of_the_official_v2_pages_reads_and_writes_back_unchanged() {
    let corpus: Value =
        serde_json::from_str(include_str!("corpus/v2/docs_examples.json")).expect("corpus JSON");
    let cases = corpus["cases"].as_array().expect("cases");
    assert!(cases.len() >= 60, "corpus too small: {}", cases.len());
    let mut failures = Vec::new();
    for case in cases {
        let (source, method, part) = (
            case["source"].as_str().unwrap(),
            case["method"].as_str().unwrap(),
            case["part"].as_str().unwrap(),
        );
        let value = &case["value"];
        let expect_accept = case["expect"] == "accept";
        let back = if part == "error" {
            serde_json::from_value::<Error>(value.clone())
                .and_then(|e| serde_json::to_value(&e))
                .map_err(|e| e.to_string())
        } else {
            through_enums(method, part, value)
        };
        match back {
            Ok(back) if expect_accept && same_but_empty_lists(value, &back) => {}
            Err(_) if !expect_accept => {}
            Ok(_) if !expect_accept => failures.push(format!(
                "{source} {method} {part}: accepted, expected a rejection ({})",
                case["note"]
            )),
            Ok(back) => failures.push(format!(
                "{source} {method} {part}:\n  in:  {value}\n  out: {back}"
            )),
            Err(e) => failures.push(format!("{source} {method} {part}: {e}\n  in: {value}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `output` equals `input`, except that an empty list `input` has may be absent from `output`:
/// an optional list that is not a patch is written only when it has items, and the schema
/// defines absent and empty as the same.
fn same_but_empty_lists(input: &Value, output: &Value) -> bool {
    match (input, output) {
        (Value::Object(a), Value::Object(b)) => {
            b.keys().all(|k| a.contains_key(k))
                && a.iter().all(|(k, v)| match b.get(k) {
                    Some(w) => same_but_empty_lists(v, w),
                    None => v.as_array().is_some_and(Vec::is_empty),
                })
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| same_but_empty_lists(v, w))
        }
        _ => input == output,
    }
}

fn tool_call(update: Value) -> ToolCallUpdate {
    match serde_json::from_value(update).expect("a session update") {
        SessionUpdate::ToolCallUpdate(call) => *call,
        other => panic!("not a tool call update: {other:?}"),
    }
}

#[test]
fn a_patch_field_keeps_absent_null_and_value_apart_and_writes_each_back() {
    let absent = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t"});
    let null = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": null, "content": null, "rawInput": null});
    let value = json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Read", "content": [], "rawInput": {"path": "/a"}});

    let call = tool_call(absent.clone());
    assert_eq!(call.title, Patch::Absent);
    assert_eq!(call.content, Patch::Absent);
    assert_eq!(call.raw_input, Patch::Absent);
    let call = tool_call(null.clone());
    assert_eq!(call.title, Patch::Null);
    assert_eq!(call.content, Patch::Null);
    assert_eq!(call.raw_input, Patch::Null);
    let call = tool_call(value.clone());
    assert_eq!(call.title, Patch::Value("Read".to_string()));
    assert_eq!(call.content, Patch::Value(vec![]));
    assert_eq!(call.raw_input, Patch::Value(json!({"path": "/a"})));

    for input in [absent, null, value] {
        let update: SessionUpdate = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(serde_json::to_value(&update).unwrap(), input);
    }
}

#[test]
fn a_patch_field_of_the_wrong_type_rejects_the_update() {
    for bad in [
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": 5}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "content": "text"}),
        json!({"sessionUpdate": "terminal_update", "terminalId": "x", "exitStatus": "zero"}),
    ] {
        let read = serde_json::from_value::<SessionUpdate>(bad.clone());
        // Either an error, or (for a tagged union that keeps what it cannot read) the raw
        // JSON in `Unknown`: never a value that applies the bad field as "keep".
        match read {
            Err(_) | Ok(SessionUpdate::Unknown(_)) => {}
            Ok(other) => panic!("{bad} read as {other:?}"),
        }
    }
}

#[test]
fn builders_set_patch_fields_from_a_value_or_a_null() {
    let call = ToolCallUpdate::new("t")
        .title("Read file".to_string())
        .kind(Patch::Null);
    let json = serde_json::to_value(SessionUpdate::ToolCallUpdate(Box::new(call))).unwrap();
    assert_eq!(
        json,
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Read file", "kind": null})
    );
}

#[test]
fn custom_enum_values_and_union_tags_survive_byte_for_byte() {
    let input = r#"{"sessionUpdate":"tool_call_update","toolCallId":"t","kind":"_acme_deploy","status":"_acme_queued","content":[{"type":"_acme_chart","data":{"x":[1,2]}}]}"#;
    let update: SessionUpdate = serde_json::from_str(input).unwrap();
    let SessionUpdate::ToolCallUpdate(call) = &update else {
        panic!("{update:?}")
    };
    assert_eq!(
        call.kind.value(),
        Some(&ToolKind::Unknown("_acme_deploy".into()))
    );
    assert_eq!(
        call.status.value(),
        Some(&ToolCallStatus::Unknown("_acme_queued".into()))
    );
    assert_eq!(serde_json::to_string(&update).unwrap(), input);

    let custom_kind = r#"{"sessionUpdate":"_acme_progress","percent":40,"label":"indexing"}"#;
    let update: SessionUpdate = serde_json::from_str(custom_kind).unwrap();
    assert!(matches!(update, SessionUpdate::Unknown(_)), "{update:?}");
    assert_eq!(serde_json::to_string(&update).unwrap(), custom_kind);
}

#[test]
fn the_method_table_has_the_v2_baseline_and_not_the_v1_only_methods() {
    for name in [
        "initialize",
        "auth/login",
        "auth/logout",
        "session/new",
        "session/list",
        "session/resume",
        "session/close",
        "session/prompt",
        "session/cancel",
        "session/update",
        "tool_call/cancel",
        "terminal/cancel",
        "elicitation/create",
        "elicitation/complete",
        "$/cancel_request",
    ] {
        assert!(METHODS.iter().any(|m| m.name == name), "{name} missing");
    }
    for gone in [
        "authenticate",
        "session/load",
        "session/set_mode",
        "fs/read_text_file",
        "terminal/create",
    ] {
        assert!(!METHODS.iter().any(|m| m.name == gone), "{gone} is v1 only");
    }
}

#[test]
fn the_prompt_answer_is_the_inserted_message_id() {
    let answer = AgentResponse::decode("session/prompt", json!({"messageId": "m1"})).unwrap();
    let AgentResponse::SessionPrompt(inserted) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(inserted.message_id.0, "m1");
}
