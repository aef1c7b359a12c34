//! The recorder: condensing a turn, and when each durability writes.

use super::*;
use acp_types::v1::{ToolCall, ToolCallStatus, ToolCallUpdate};

fn texts(events: &[StoredEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

/// Chunks of one message become one; a change of kind starts a new event; a tool call
/// absorbs its updates in place; consecutive plans keep the last.
#[test]
fn a_turn_is_condensed_without_changing_what_it_renders() {
    let mut turn = Turn::default();
    turn.push(&SessionUpdate::agent_thought_text("think "));
    turn.push(&SessionUpdate::agent_thought_text("more"));
    turn.push(&SessionUpdate::agent_message_text("Hel"));
    turn.push(&SessionUpdate::ToolCall(Box::new(ToolCall::new(
        "t1", "Read",
    ))));
    turn.push(&SessionUpdate::agent_message_text("lo"));
    let mut done = ToolCallUpdate::new("t1");
    done.status = Some(ToolCallStatus::Completed);
    turn.push(&SessionUpdate::ToolCallUpdate(Box::new(done)));
    turn.push(&SessionUpdate::agent_message_text(" world"));
    let stray: ToolCallUpdate = ToolCallUpdate::new("t9");
    turn.push(&SessionUpdate::ToolCallUpdate(Box::new(stray.clone())));
    let events = turn.take();
    let mut call = ToolCall::new("t1", "Read");
    call.status = ToolCallStatus::Completed;
    let expected = vec![
        StoredEvent::Update(SessionUpdate::agent_thought_text("think more")),
        StoredEvent::Update(SessionUpdate::agent_message_text("Hel")),
        StoredEvent::Update(SessionUpdate::ToolCall(Box::new(call))),
        StoredEvent::Update(SessionUpdate::agent_message_text("lo world")),
        StoredEvent::Update(SessionUpdate::ToolCallUpdate(Box::new(stray))),
    ];
    assert_eq!(texts(&events), texts(&expected));
    assert!(turn.tools.is_empty());
}

/// `Interval`: updates of a turn wait until the oldest unwritten is as old as the
/// interval; then all go at once, and the turn's end writes the rest.
#[tokio::test]
async fn interval_durability_writes_when_the_oldest_unwritten_event_is_due() {
    use crate::store::{HistoryCursor, MemoryStore};
    let interval = std::time::Duration::from_millis(100);
    let store = Arc::new(MemoryStore::new().with_durability(Durability::Interval(interval)));
    let recorder = Recorder::new(store.clone(), None);
    let id = SessionId("i".into());
    recorder
        .created(SessionMeta::new(id.clone(), "/w"))
        .await
        .unwrap();
    let stored = || async {
        store
            .history(&id, HistoryCursor::START, 100)
            .await
            .unwrap()
            .events
            .len()
    };
    let chunk =
        |t: &str| SessionNotification::new(id.clone(), SessionUpdate::agent_message_text(t));
    recorder.begin_prompt(&id, vec![ContentBlock::text("q")]);
    recorder.update(&chunk("a"), || false).await;
    recorder.update(&chunk("b"), || false).await;
    assert_eq!(stored().await, 0, "not due yet");
    // The turn pauses (a long tool call): the window's timer writes what it holds.
    tokio::time::sleep(interval + std::time::Duration::from_millis(50)).await;
    // The prompt and the two chunks, coalesced into one.
    assert_eq!(
        stored().await,
        2,
        "written when due, with no further update"
    );
    recorder.update(&chunk("c"), || false).await;
    assert_eq!(stored().await, 2, "a new window starts");
    recorder.update(&chunk("d"), || false).await;
    assert_eq!(stored().await, 2, "still within the window");
    recorder
        .end_prompt(&id, Some(&acp_types::v1::StopReason::EndTurn))
        .await;
    let events = store
        .history(&id, HistoryCursor::START, 100)
        .await
        .unwrap()
        .events;
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(matches!(events[3], StoredEvent::TurnEnd(_)));
}

/// Chunks with different message ids stay apart.
#[test]
fn chunks_of_different_messages_stay_apart() {
    let mut turn = Turn::default();
    let mut a = ContentChunk::new("a");
    a.message_id = Some("m1".into());
    let mut b = ContentChunk::new("b");
    b.message_id = Some("m2".into());
    turn.push(&SessionUpdate::AgentMessageChunk(a));
    turn.push(&SessionUpdate::AgentMessageChunk(b));
    assert_eq!(turn.events.len(), 2);
}
