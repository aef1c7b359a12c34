//! The items `agent-client-protocol-schema` 1.20.0 adds to v1, against that crate with the
//! same features on: each sample reads through our type and theirs, and both write the same
//! JSON; our side must also have read the item into its typed field (not kept it in `extra`).
//! `unstable_plan_operations` and `unstable_subagents` are plain v1 in 1.20.0 (no features
//! there): their updates are compared with the official crate's ungated types.
//!
//! `cargo test --manifest-path differential/Cargo.toml --locked`

use acp_types::v1 as ours;
use agent_client_protocol_schema::v1 as official;
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

fn update(body: Value) -> ours::SessionUpdate {
    both::<ours::SessionNotification, official::SessionNotification>(
        json!({"sessionId": "s1", "update": body}),
    )
    .update
}

#[test]
fn prompt_suggestions_and_their_capability_match_the_official_crate() {
    let ours::SessionUpdate::PromptSuggestionsUpdate(body) = update(json!({
        "sessionUpdate": "prompt_suggestions_update",
        "suggestions": [
            {"prompt": [{"type": "text", "text": "run the tests"}]},
            {"prompt": [{"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"}], "_meta": {"k": 1}}
        ]
    })) else {
        panic!("not typed")
    };
    assert_eq!(body.suggestions.len(), 2);
    assert!(body.extra.is_empty());
    // An empty list withdraws the suggestions; a suggestion that does not parse is dropped by
    // both, not the update.
    update(json!({"sessionUpdate": "prompt_suggestions_update", "suggestions": []}));
    let ours::SessionUpdate::PromptSuggestionsUpdate(body) = update(json!({
        "sessionUpdate": "prompt_suggestions_update",
        "suggestions": [{"prompt": "not a list"}, {"prompt": [{"type": "text", "text": "ok"}]}]
    })) else {
        panic!("not typed")
    };
    assert_eq!(body.suggestions.len(), 1);
    // Built with the constructors, it writes what the official crate reads back unchanged.
    let built = ours::SessionUpdate::prompt_suggestions_update([ours::PromptSuggestion::new([
        ours::ContentBlock::text("next"),
    ])]);
    update(serde_json::to_value(&built).unwrap());
    let caps = both::<ours::ClientCapabilities, official::ClientCapabilities>(json!({
        "session": {"promptSuggestions": {"image": {}, "audio": {}, "embeddedContext": {"_meta": {"x": 1}}}}
    }));
    let suggestions = caps.session.unwrap().prompt_suggestions.expect("typed");
    assert!(suggestions.image.is_some() && suggestions.embedded_context.is_some());
    both::<ours::ClientCapabilities, official::ClientCapabilities>(
        json!({"session": {"promptSuggestions": {}}}),
    );
}

#[test]
fn cursor_updates_their_capability_and_fork_at_a_cursor_match_the_official_crate() {
    let ours::SessionUpdate::CursorUpdate(body) = update(json!({
        "sessionUpdate": "cursor_update", "cursorId": "cur_1",
        "anchor": {"type": "user_message", "messageId": "m1", "position": "after"},
        "capabilities": {"fork": {}}
    })) else {
        panic!("not typed")
    };
    assert!(matches!(
        body.anchor,
        Some(ours::CursorAnchor::UserMessage(ref a)) if a.position == ours::CursorAnchorPosition::After
    ));
    assert!(body.capabilities.unwrap().unwrap().fork.is_some());
    for anchor in [
        json!({"type": "agent_message", "messageId": "m2", "position": "before"}),
        json!({"type": "agent_thought", "messageId": "m3", "position": "after"}),
        json!({"type": "session_message", "messageId": "m4", "position": "after"}),
        json!({"type": "tool_call", "toolCallId": "t1", "position": "before", "_meta": {"k": 1}}),
        json!({"type": "compaction", "compactionId": "c1", "position": "after"}),
        // An anchor type and a position neither side knows are kept as sent.
        json!({"type": "_bookmark", "line": 3, "_meta": {"k": 2}}),
        json!({"type": "tool_call", "toolCallId": "t2", "position": "_middle"}),
    ] {
        update(json!({"sessionUpdate": "cursor_update", "cursorId": "c", "anchor": anchor}));
    }
    // Patches: `null` clears the capabilities and the metadata, absent keeps them.
    let ours::SessionUpdate::CursorUpdate(body) = update(json!({
        "sessionUpdate": "cursor_update", "cursorId": "cur_1", "capabilities": null, "_meta": null
    })) else {
        panic!("not typed")
    };
    assert_eq!(body.capabilities, Some(None));
    update(json!({"sessionUpdate": "cursor_update", "cursorId": "cur_1"}));
    let built = ours::CursorUpdate::new("cur_2")
        .anchor(ours::CursorAnchor::tool_call(
            "t9",
            ours::CursorAnchorPosition::Before,
        ))
        .capabilities(Some(ours::CursorCapabilities::new()));
    update(serde_json::to_value(ours::SessionUpdate::from(built)).unwrap());
    let caps = both::<ours::ClientCapabilities, official::ClientCapabilities>(
        json!({"session": {"cursors": {}}}),
    );
    assert!(caps.session.unwrap().cursors.is_some());
    let fork = both::<ours::ForkSessionRequest, official::ForkSessionRequest>(
        json!({"sessionId": "s1", "cwd": "/w", "cursorId": "cur_1"}),
    );
    assert_eq!(fork.cursor_id.as_ref().map(|c| c.0.as_str()), Some("cur_1"));
}

#[test]
fn the_speed_config_category_matches_the_official_crate() {
    let option = both::<ours::SessionConfigOption, official::SessionConfigOption>(json!({
        "id": "fast", "name": "Fast mode", "category": "speed", "type": "select",
        "currentValue": "on", "options": [{"value": "on", "name": "On"}, {"value": "off", "name": "Off"}]
    }));
    assert_eq!(
        option.category,
        Some(ours::SessionConfigOptionCategory::Speed)
    );
    assert_eq!(ours::SessionConfigOptionCategory::Speed.as_str(), "speed");
}

#[test]
fn plan_operations_and_subagents_stable_in_1_20_match_its_ungated_types() {
    for body in [
        json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p1", "entries": [
            {"content": "Read the parser", "priority": "high", "status": "in_progress"}
        ]}}),
        json!({"sessionUpdate": "plan_removed", "planId": "p1"}),
        json!({"sessionUpdate": "subagent_update", "sessionId": "child",
               "title": "Reviewer", "description": null, "capabilities": {"cancel": {}},
               "state": {"state": "running"}}),
        json!({"sessionUpdate": "session_message_chunk", "messageId": "m1",
               "content": {"type": "text", "text": "Done."}}),
    ] {
        let kind = body["sessionUpdate"].clone();
        let typed = serde_json::to_value(update(body)).unwrap();
        assert_eq!(typed["sessionUpdate"], kind);
    }
}
