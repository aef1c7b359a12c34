//! The legacy dialects' types read and write the exact JSON their peers put on the wire:
//! `null` payloads, the 0.0.9 crate's extra `"type"` tags, untagged chunks, fields that are
//! always written, and the method tables (who serves what).
#![cfg(all(feature = "legacy-0-0-9", feature = "legacy-threads"))]

use acp_types::Side;
use acp_types::legacy::{threads, v0_0_9};
use serde_json::{Value, json};

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(wire: &str) -> Value {
    let typed: T = serde_json::from_str(wire).unwrap_or_else(|e| panic!("{wire}: {e}"));
    serde_json::to_value(typed).unwrap()
}

#[test]
fn null_payloads_write_null_and_read_null_or_any_object() {
    assert_eq!(
        serde_json::to_string(&threads::GetThreadsParams).unwrap(),
        "null"
    );
    for accepted in ["null", "{}", r#"{"anything":1}"#] {
        let _: v0_0_9::CancelSendMessageParams = serde_json::from_str(accepted).unwrap();
    }
    for refused in ["1", r#""x""#, "[]", "true"] {
        let err = serde_json::from_str::<threads::OpenThreadResponse>(refused).unwrap_err();
        assert!(
            err.to_string().contains("expected null"),
            "{refused}: {err}"
        );
    }
}

#[test]
fn the_009_crates_extra_type_tags_are_ignored_on_input() {
    let push: v0_0_9::PushToolCallResponse =
        serde_json::from_str(r#"{"type":"PushToolCallResponse","id":0}"#).unwrap();
    assert_eq!(push.id, v0_0_9::ToolCallId(0));
    let confirm: v0_0_9::RequestToolCallConfirmationResponse = serde_json::from_str(
        r#"{"type":"RequestToolCallConfirmationResponse","id":7,"outcome":"allow"}"#,
    )
    .unwrap();
    assert_eq!(confirm.outcome, v0_0_9::ToolCallConfirmationOutcome::Allow);
    let loc: v0_0_9::ToolCallLocation =
        serde_json::from_str(r#"{"type":"ToolCallLocation","path":"/a","line":1}"#).unwrap();
    assert_eq!(loc.line, Some(1));
}

#[test]
fn user_and_assistant_chunks_are_told_apart_by_their_key() {
    let p: v0_0_9::SendUserMessageParams =
        serde_json::from_str(r#"{"chunks":[{"text":"hi "},{"path":"src/main.rs"}]}"#).unwrap();
    assert!(matches!(&p.chunks[0], v0_0_9::UserMessageChunk::Text(t) if t.text == "hi "));
    assert!(matches!(&p.chunks[1], v0_0_9::UserMessageChunk::Path(t) if t.path == "src/main.rs"));
    // A chunk with both keys is text, as the crate reads it.
    let both: v0_0_9::AssistantMessageChunk =
        serde_json::from_str(r#"{"thought":"t","text":"x"}"#).unwrap();
    assert!(matches!(both, v0_0_9::AssistantMessageChunk::Text(t) if t.text == "x"));
    assert_eq!(
        round_trip::<v0_0_9::StreamAssistantMessageChunkParams>(r#"{"chunk":{"thought":"hmm"}}"#),
        json!({"chunk": {"thought": "hmm"}})
    );
}

#[test]
fn update_tool_call_content_and_diff_old_text_are_always_written() {
    assert_eq!(
        round_trip::<v0_0_9::UpdateToolCallParams>(r#"{"toolCallId":3,"status":"finished"}"#),
        json!({"toolCallId": 3, "status": "finished", "content": null})
    );
    assert_eq!(
        round_trip::<v0_0_9::ToolCallContent>(r#"{"type":"diff","path":"/a","newText":"n"}"#),
        json!({"type": "diff", "path": "/a", "oldText": null, "newText": "n"})
    );
}

#[test]
fn what_gemini_sends_explicitly_null_reads_as_absent() {
    let wire = r#"{"label":"Fetch","icon":"globe","content":null,"confirmation":{"type":"fetch","urls":["http://x"],"description":null},"locations":[]}"#;
    let p: v0_0_9::RequestToolCallConfirmationParams = serde_json::from_str(wire).unwrap();
    assert_eq!(p.content, None);
    assert!(
        matches!(p.confirmation, v0_0_9::ToolCallConfirmation::Fetch(ref f) if f.urls == ["http://x"] && f.description.is_none())
    );
    assert_eq!(
        serde_json::to_value(&p).unwrap(),
        json!({"label": "Fetch", "icon": "globe", "confirmation": {"type": "fetch", "urls": ["http://x"]}})
    );
}

#[test]
fn an_unknown_icon_is_kept_not_rejected() {
    let p: v0_0_9::PushToolCallParams =
        serde_json::from_str(r#"{"label":"x","icon":"rocket"}"#).unwrap();
    assert_eq!(serde_json::to_value(&p).unwrap()["icon"], "rocket");
}

#[test]
fn thread_entries_flatten_the_message_beside_the_tag() {
    let wire = json!({"entries": [
        {"type": "message", "role": "user", "chunks": [{"type": "text", "chunk": "Summarize"}]},
        {"type": "readFile", "path": "/p/README.md", "content": "# T\n"}
    ]});
    let typed: threads::GetThreadEntriesResponse = serde_json::from_value(wire.clone()).unwrap();
    assert!(
        matches!(&typed.entries[0], threads::ThreadEntry::Message(m) if m.role == threads::Role::User)
    );
    assert_eq!(serde_json::to_value(&typed).unwrap(), wire);
}

#[test]
fn optional_file_window_fields_are_omitted_when_unset() {
    let p = threads::ReadTextFileParams::new("t", "/a").line_limit(20);
    assert_eq!(
        serde_json::to_string(&p).unwrap(),
        r#"{"threadId":"t","path":"/a","lineLimit":20}"#
    );
}

#[test]
fn method_tables_say_who_serves_what() {
    let served = |table: &[acp_types::MethodInfo], side: Side| -> Vec<&str> {
        table
            .iter()
            .filter(|m| m.served_by == side)
            .map(|m| m.name)
            .collect()
    };
    assert_eq!(
        served(v0_0_9::METHODS, Side::Agent),
        [
            "initialize",
            "authenticate",
            "sendUserMessage",
            "cancelSendMessage"
        ]
    );
    assert_eq!(
        served(v0_0_9::METHODS, Side::Client),
        [
            "streamAssistantMessageChunk",
            "requestToolCallConfirmation",
            "pushToolCall",
            "updateToolCall",
            "writeTextFile",
            "readTextFile"
        ]
    );
    assert_eq!(
        served(threads::METHODS, Side::Agent),
        [
            "getThreads",
            "createThread",
            "openThread",
            "getThreadEntries",
            "sendMessage"
        ]
    );
    assert_eq!(
        served(threads::METHODS, Side::Client),
        [
            "streamMessageChunk",
            "readTextFile",
            "readBinaryFile",
            "stat",
            "globSearch"
        ]
    );
    // camelCase wire names get snake-case constants.
    assert_eq!(threads::names::GET_THREAD_ENTRIES, "getThreadEntries");
    assert_eq!(
        v0_0_9::names::STREAM_ASSISTANT_MESSAGE_CHUNK,
        "streamAssistantMessageChunk"
    );
    assert!(
        v0_0_9::METHODS
            .iter()
            .chain(threads::METHODS)
            .all(|m| m.kind == acp_types::MethodKind::Request),
        "neither legacy dialect has notifications"
    );
}

#[test]
fn a_v1_initialize_reads_as_an_empty_009_version_instead_of_failing() {
    let p: v0_0_9::InitializeParams =
        serde_json::from_str(r#"{"protocolVersion":1,"clientCapabilities":{}}"#).unwrap();
    assert_eq!(p.protocol_version.0, "");
    let p: v0_0_9::InitializeParams =
        serde_json::from_str(r#"{"protocolVersion":"0.0.9"}"#).unwrap();
    assert_eq!(p.protocol_version, v0_0_9::ProtocolVersion::current());
    // Still required.
    assert!(serde_json::from_str::<v0_0_9::InitializeParams>("{}").is_err());
}
