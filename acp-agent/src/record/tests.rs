//! The recorder: condensing a turn, and when each durability writes.

use super::*;
use acp_types::v1::{ContentChunk, ToolCall, ToolCallStatus, ToolCallUpdate};

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
    turn.push(&SessionUpdate::agent_thought_text("think "), true);
    turn.push(&SessionUpdate::agent_thought_text("more"), true);
    turn.push(&SessionUpdate::agent_message_text("Hel"), true);
    turn.push(
        &SessionUpdate::ToolCall(Box::new(ToolCall::new("t1", "Read"))),
        true,
    );
    turn.push(&SessionUpdate::agent_message_text("lo"), true);
    let mut done = ToolCallUpdate::new("t1");
    done.status = Some(ToolCallStatus::Completed);
    turn.push(&SessionUpdate::ToolCallUpdate(Box::new(done)), true);
    turn.push(&SessionUpdate::agent_message_text(" world"), true);
    let stray: ToolCallUpdate = ToolCallUpdate::new("t9");
    turn.push(
        &SessionUpdate::ToolCallUpdate(Box::new(stray.clone())),
        true,
    );
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
    turn.push(&SessionUpdate::AgentMessageChunk(a), true);
    turn.push(&SessionUpdate::AgentMessageChunk(b), true);
    assert_eq!(turn.events.len(), 2);
}

/// Uncondensed (`Event`, written at the next transport flush): each update stays the event
/// it was sent as, so a replay shows the turn as it streamed.
#[test]
fn an_uncondensed_turn_keeps_each_update_as_sent() {
    let mut turn = Turn::default();
    turn.push(&SessionUpdate::agent_message_text("Hel"), false);
    turn.push(&SessionUpdate::agent_message_text("lo"), false);
    turn.push(
        &SessionUpdate::ToolCall(Box::new(ToolCall::new("t1", "Read"))),
        false,
    );
    let mut done = ToolCallUpdate::new("t1");
    done.status = Some(ToolCallStatus::Completed);
    turn.push(&SessionUpdate::ToolCallUpdate(Box::new(done)), false);
    assert_eq!(turn.take().len(), 4);
}

/// With the write barrier, a burst of updates across two sessions is written as one append
/// per session when the barrier runs, and nothing before.
#[tokio::test]
async fn the_write_barrier_appends_once_per_session() {
    use crate::store::{HistoryCursor, MemoryStore};
    let store = Arc::new(MemoryStore::new());
    let recorder = Recorder::new(store.clone(), None);
    let barrier = recorder.write_barrier().expect("Event has a barrier");
    let (a, b) = (SessionId("a".into()), SessionId("b".into()));
    for id in [&a, &b] {
        recorder
            .created(SessionMeta::new(id.clone(), "/w"))
            .await
            .unwrap();
    }
    assert!(!barrier.pending());
    for i in 0..10 {
        for id in [&a, &b] {
            let n = SessionNotification::new(
                id.clone(),
                SessionUpdate::agent_message_text(format!("{i}")),
            );
            assert!(recorder.note(&n, || false).is_none(), "nothing to await");
        }
    }
    assert!(barrier.pending());
    let stored = |id: SessionId| {
        let store = store.clone();
        async move {
            store
                .history(&id, HistoryCursor::START, 100)
                .await
                .unwrap()
                .events
                .len()
        }
    };
    assert_eq!(stored(a.clone()).await, 0);
    barrier.flush().await;
    assert!(!barrier.pending());
    assert_eq!(stored(a.clone()).await, 10);
    assert_eq!(stored(b.clone()).await, 10);
    // Turn and Interval write on their own schedule: no barrier.
    let turn = Recorder::new(
        Arc::new(MemoryStore::new().with_durability(Durability::Turn)),
        None,
    );
    assert!(turn.write_barrier().is_none());
}
