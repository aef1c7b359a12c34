//! The v2 session-state reducer (`acp_client::v2::SessionState::apply`, generated from the
//! schema's `x-state` annotations): one golden case per update kind, and properties over
//! interleavings of patches for distinct entities.
#![cfg(feature = "v2")]

use acp_client::v2::types::*;
use acp_client::v2::{MessageRole, SessionState};
use acp_types::Patch;
use proptest::prelude::*;
use serde_json::{Value, json};

fn update(v: Value) -> SessionUpdate {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
}

fn fold(updates: &[Value]) -> SessionState {
    let mut state = SessionState::default();
    for u in updates {
        assert!(state.apply(&update(u.clone())), "not applied: {u}");
    }
    state
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

#[test]
fn message_chunks_append_and_message_updates_replace_content_per_role() {
    let state = fold(&[
        json!({"sessionUpdate": "user_message_chunk", "messageId": "u", "content": text("Hi")}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": text("Hel")}),
        json!({"sessionUpdate": "agent_thought_chunk", "messageId": "t", "content": text("hmm")}),
        json!({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": text("lo")}),
        json!({"sessionUpdate": "user_message", "messageId": "u", "content": [text("Hi!")]}),
        json!({"sessionUpdate": "agent_thought", "messageId": "t"}),
        json!({"sessionUpdate": "agent_message", "messageId": "b", "content": null}),
    ]);
    let summary: Vec<(&str, MessageRole, String)> = state
        .messages
        .iter()
        .map(|m| (m.id.0.as_str(), m.role, m.text()))
        .collect();
    assert_eq!(
        summary,
        [
            ("u", MessageRole::User, "Hi!".to_string()),
            ("a", MessageRole::Agent, "Hello".to_string()),
            // An absent `content` keeps it.
            ("t", MessageRole::Thought, "hmm".to_string()),
            // A message first seen with `null` content starts empty.
            ("b", MessageRole::Agent, String::new()),
        ]
    );
}

#[test]
fn tool_call_updates_patch_fields_and_content_chunks_append() {
    let state = fold(&[
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Read", "kind": "read", "status": "in_progress"}),
        json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c", "content": {"type": "content", "content": text("line 1")}}),
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": null, "status": "completed", "rawOutput": {"ok": true}}),
    ]);
    let call = &state.tool_calls["c"];
    assert_eq!(call.title, None, "null clears");
    assert_eq!(call.kind, Some(ToolKind::Read), "absent keeps");
    assert_eq!(call.status, Some(ToolCallStatus::Completed));
    assert_eq!(call.content.len(), 1);
    assert_eq!(call.raw_output, Some(json!({"ok": true})));
}

#[test]
fn terminal_output_chunks_append_decoded_bytes_and_an_output_snapshot_replaces_them() {
    let state = fold(&[
        json!({"sessionUpdate": "terminal_update", "terminalId": "x", "command": "ls"}),
        json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "x", "data": "aGVs"}),
        json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "x", "data": "bG8="}),
        json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "x", "data": "not base64!"}),
    ]);
    let term = &state.terminals["x"];
    assert_eq!(term.output, b"hello");
    assert_eq!(term.bad_chunks, 1);
    assert_eq!(term.command.as_deref(), Some("ls"));
    let mut state = state;
    state.apply(&update(json!({"sessionUpdate": "terminal_update", "terminalId": "x", "output": {"data": "Ynll"}, "exitStatus": {"exitCode": 0}})));
    assert_eq!(state.terminals["x"].output, b"bye");
    assert_eq!(
        state.terminals["x"].exit_status.as_ref().unwrap().exit_code,
        Some(0)
    );
}

#[test]
fn plans_are_replaced_whole_by_id() {
    let entry = json!({"content": "step", "priority": "high", "status": "pending"});
    let state = fold(&[
        json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": [entry.clone(), entry.clone()]}}),
        json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": [entry]}}),
        json!({"sessionUpdate": "plan_update", "plan": {"type": "_acme_graph", "planId": "q", "nodes": []}}),
    ]);
    let PlanUpdateContent::Items(items) = &state.plans["p"] else {
        panic!("items")
    };
    assert_eq!(items.entries.len(), 1);
    assert!(matches!(state.plans["q"], PlanUpdateContent::Unknown(_)));
}

#[test]
fn the_foreground_state_is_replaced_and_a_new_session_is_idle() {
    assert!(matches!(
        SessionState::default().foreground,
        StateUpdate::Idle(_)
    ));
    let state = fold(&[
        json!({"sessionUpdate": "state_update", "state": "running"}),
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ]);
    let StateUpdate::Idle(idle) = &state.foreground else {
        panic!("{:?}", state.foreground)
    };
    assert_eq!(
        idle.stop_reason.as_ref().map(|r| r.as_str()),
        Some("end_turn")
    );
}

#[test]
fn notices_append_and_commands_config_info_usage_are_kept_as_last_reported() {
    let state = fold(&[
        json!({"sessionUpdate": "notice", "severity": "warning", "title": "slow"}),
        json!({"sessionUpdate": "notice", "severity": "info", "title": "ok"}),
        json!({"sessionUpdate": "available_commands_update", "availableCommands": [{"type": "command", "name": "web", "description": "search"}]}),
        json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
        json!({"sessionUpdate": "config_option_update", "configOptions": [{"type": "boolean", "configId": "brave", "name": "Brave", "currentValue": true}]}),
        json!({"sessionUpdate": "session_info_update", "title": "Fix bug", "updatedAt": "2026-01-01T00:00:00Z"}),
        json!({"sessionUpdate": "session_info_update", "updatedAt": null}),
        json!({"sessionUpdate": "usage_update", "used": 10, "size": 100}),
    ]);
    assert_eq!(state.notices.len(), 2);
    assert!(state.commands.is_empty());
    assert_eq!(state.config_options.len(), 1);
    assert_eq!(state.title.as_deref(), Some("Fix bug"));
    assert_eq!(state.updated_at, None);
    assert_eq!(state.usage.as_ref().map(|u| u.used), Some(10));
}

#[test]
fn compactions_upsert_and_summary_chunks_append() {
    let state = fold(&[
        json!({"sessionUpdate": "compaction_update", "compactionId": "k", "status": "in_progress"}),
        json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k", "content": text("sum")}),
        json!({"sessionUpdate": "compaction_update", "compactionId": "k", "status": "completed"}),
    ]);
    let k = &state.compactions["k"];
    assert_eq!(k.status, CompactionStatus::Completed);
    assert_eq!(k.summary.len(), 1);
}

#[test]
fn an_unknown_update_kind_changes_nothing_and_says_so() {
    let mut state = SessionState::default();
    let unknown = update(json!({"sessionUpdate": "_acme_progress", "percent": 40}));
    assert!(!state.apply(&unknown));
    assert_eq!(state, SessionState::default());
}

/// One patch to tool call `id` (a title, a status or a content chunk).
fn tool_patch(id: usize, step: u8) -> SessionUpdate {
    let id = format!("call-{id}");
    update(match step % 4 {
        0 => {
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "title": format!("t{step}")})
        }
        1 => {
            json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress", "title": null})
        }
        2 => {
            json!({"sessionUpdate": "tool_call_content_chunk", "toolCallId": id, "content": {"type": "content", "content": text(&format!("c{step}"))}})
        }
        _ => json!({"sessionUpdate": "terminal_output_chunk", "terminalId": id, "data": "YQ=="}),
    })
}

proptest! {
    /// Per-entity order kept, any interleaving across entities gives the same state.
    #[test]
    fn interleaving_patches_of_distinct_entities_gives_the_same_state(
        steps in proptest::collection::vec(proptest::collection::vec(0u8..8, 0..6), 1..5),
        picks in proptest::collection::vec(0usize..5, 0..40),
    ) {
        let streams: Vec<Vec<SessionUpdate>> = steps
            .iter()
            .enumerate()
            .map(|(id, s)| s.iter().map(|&step| tool_patch(id, step)).collect())
            .collect();
        let mut sequential = SessionState::default();
        for u in streams.iter().flatten() {
            sequential.apply(u);
        }
        // Interleave: each pick takes the next update of one stream; the rest follow.
        let mut next = vec![0usize; streams.len()];
        let mut interleaved = SessionState::default();
        for pick in picks {
            let s = pick % streams.len();
            if let Some(u) = streams[s].get(next[s]) {
                interleaved.apply(u);
                next[s] += 1;
            }
        }
        for (s, stream) in streams.iter().enumerate() {
            for u in &stream[next[s]..] {
                interleaved.apply(u);
            }
        }
        prop_assert_eq!(interleaved, sequential);
    }

    /// Replaying a session's whole log into a fresh state (as a resumed session's replay
    /// does) rebuilds exactly the state the live session reached.
    #[test]
    fn replaying_the_log_into_a_fresh_state_rebuilds_it_exactly(
        steps in proptest::collection::vec((0usize..3, 0u8..8), 0..30),
    ) {
        let log: Vec<SessionUpdate> = steps.iter().map(|&(id, step)| tool_patch(id, step)).collect();
        let mut live = SessionState::default();
        for u in &log {
            live.apply(u);
        }
        let wire: Vec<String> = log.iter().map(|u| serde_json::to_string(u).unwrap()).collect();
        let mut replayed = SessionState::default();
        for line in &wire {
            replayed.apply(&serde_json::from_str(line).unwrap());
        }
        prop_assert_eq!(replayed, live);
    }
}

#[test]
fn patch_states_of_a_tool_call_title_map_to_keep_clear_replace() {
    let mut state = SessionState::default();
    state.apply(&update(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "a"}),
    ));
    let keep = ToolCallUpdate::new("c");
    assert_eq!(keep.title, Patch::Absent);
    state.apply(&SessionUpdate::ToolCallUpdate(Box::new(keep)));
    assert_eq!(state.tool_calls["c"].title.as_deref(), Some("a"));
    state.apply(&SessionUpdate::ToolCallUpdate(Box::new(
        ToolCallUpdate::new("c").title(Patch::Null),
    )));
    assert_eq!(state.tool_calls["c"].title, None);
}
