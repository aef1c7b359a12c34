//! An agent served with a session store: automatic recording, `session/load` replay before
//! the answer, resume without replay, list pages and the cwd filter, close, delete, the
//! advertised capabilities, an agent's own override, `-32002` for unknown sessions, and
//! identities that reach only their own sessions of a shared store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use acp_agent::store::{
    Durability, INTERRUPTED_META, MemoryStore, SessionMeta, SessionStore, StoredEvent,
};
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error, PromptContext};
use serde_json::{Value, json};
#[path = "session_store/wire.rs"]
mod wire;
use wire::{Wire, updates, v};

/// An agent that leaves every session method to the store; its prompt streams a thought,
/// a plan twice, a tool call with two updates and the prompt's words one chunk each.
#[derive(Default)]
struct Streamer {
    next: AtomicU64,
    /// Answers `session/list` itself (the override check).
    own_list: bool,
}

#[acp_agent::async_trait]
impl Agent for Streamer {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({"protocolVersion": 1})))
    }

    async fn new_session(
        &self,
        _p: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let id = format!("s{}", self.next.fetch_add(1, Ordering::Relaxed));
        // Sent while the session is being created: recorded once it exists.
        cx.client()
            .send_update(
                id.as_str(),
                SessionUpdate::AvailableCommandsUpdate(v(json!({"availableCommands": [
                    {"name": "echo", "description": "Echo"}
                ]}))),
            )
            .await?;
        Ok(v(json!({
            "sessionId": id,
            "modes": {"currentModeId": "ask", "availableModes": [
                {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}
            ]}
        })))
    }

    async fn set_session_mode(
        &self,
        _p: SetSessionModeRequest,
        _cx: &AgentContext,
    ) -> Result<SetSessionModeResponse, Error> {
        Ok(v(json!({})))
    }

    async fn list_sessions(
        &self,
        _p: ListSessionsRequest,
        _cx: &AgentContext,
    ) -> Result<ListSessionsResponse, Error> {
        if self.own_list {
            Ok(v(json!({"sessions": [], "_meta": {"by": "agent"}})))
        } else {
            Err(Error::method_not_found("session/list"))
        }
    }

    async fn prompt(&self, p: PromptRequest, cx: &PromptContext) -> Result<PromptResponse, Error> {
        let s = cx.session();
        let text = match p.prompt.first() {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        s.thought_chunk("thinking ").await?;
        s.thought_chunk("hard").await?;
        s.plan(vec![v(
            json!({"content": "echo", "priority": "high", "status": "pending"}),
        )])
        .await?;
        s.plan(vec![v(
            json!({"content": "echo", "priority": "high", "status": "completed"}),
        )])
        .await?;
        let tool = s.start_tool_call(ToolCall::new("t1", "Echo")).await?;
        tool.status(ToolCallStatus::InProgress).await?;
        tool.complete(vec![v(
            json!({"type": "content", "content": {"type": "text", "text": "done"}}),
        )])
        .await?;
        for word in text.split_whitespace() {
            s.message_chunk(format!("{word} ")).await?;
        }
        s.send(SessionUpdate::SessionInfoUpdate(v(
            json!({"title": format!("About {text}")}),
        )))
        .await?;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

/// A conversation recorded on one connection is replayed on another (the restart stand-in;
/// the on-disk store across real processes is in `session_store_process.rs`): every update
/// before the load response, text chunks coalesced, the tool call in its final state, the
/// last plan, the prompt as a user message, and the mode chosen since in the answer (with
/// `Durability::Turn`, which condenses a turn before writing it).
#[tokio::test]
async fn load_replays_the_recorded_conversation_before_the_answer() {
    let store = Arc::new(MemoryStore::new().with_durability(Durability::Turn));
    let mut first = Wire::serve(Streamer::default(), store.clone());
    first.init().await;
    let id = first.new_session("/w").await;
    first
        .ok(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "hello big world"}]}),
        )
        .await;
    first
        .ok(
            "session/set_mode",
            json!({"sessionId": id, "modeId": "code"}),
        )
        .await;

    let mut second = Wire::serve(Streamer::default(), store.clone());
    second.init().await;
    let (before, response) = second
        .call(
            "session/load",
            json!({"sessionId": id, "cwd": "/w", "mcpServers": []}),
        )
        .await;
    assert!(response.get("error").is_none(), "{response}");
    assert_eq!(response["result"]["modes"]["currentModeId"], "code");
    let replay = updates(&before);
    assert_eq!(
        replay.len(),
        before.len(),
        "only updates come before the answer"
    );
    let expected = json!([
        {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "echo", "description": "Echo"}]},
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hello big world"}},
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "thinking hard"}},
        {"sessionUpdate": "plan", "entries": [{"content": "echo", "priority": "high", "status": "completed"}]},
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Echo", "status": "completed",
         "content": [{"type": "content", "content": {"type": "text", "text": "done"}}]},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello big world "}},
        {"sessionUpdate": "session_info_update", "title": "About hello big world"},
    ]);
    let replay = Value::Array(replay);
    // Compare the fields the expectation names (serializers may add defaults).
    for (got, want) in replay
        .as_array()
        .unwrap()
        .iter()
        .zip(expected.as_array().unwrap())
    {
        for (k, w) in want.as_object().unwrap() {
            assert_eq!(&got[k], w, "field {k} of {got}");
        }
    }
    assert_eq!(replay.as_array().unwrap().len(), 7, "{replay:#}");

    // The loaded session is live: a new prompt is recorded after the old history.
    second
        .ok(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "again"}]}),
        )
        .await;
    let mut third = Wire::serve(Streamer::default(), store.clone());
    third.init().await;
    let (before, _) = third
        .call(
            "session/load",
            json!({"sessionId": id, "cwd": "/w", "mcpServers": []}),
        )
        .await;
    let replay = updates(&before);
    assert_eq!(replay.len(), 13);
    assert_eq!(replay[7]["content"]["text"], "again");
    assert_eq!(replay[11]["content"]["text"], "again ");

    // The listing shows the title and updatedAt.
    let list = third.ok("session/list", json!({})).await;
    assert_eq!(list["sessions"][0]["sessionId"], id);
    assert_eq!(list["sessions"][0]["title"], "About again");
    assert!(
        list["sessions"][0]["updatedAt"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
}

/// `session/resume` reopens a stored session with no replay, and prompts work after it.
#[tokio::test]
async fn resume_restores_without_replay() {
    let store = Arc::new(MemoryStore::new());
    let mut first = Wire::serve(Streamer::default(), store.clone());
    first.init().await;
    let id = first.new_session("/w").await;
    first
        .ok(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "one"}]}),
        )
        .await;
    let mut second = Wire::serve(Streamer::default(), store.clone());
    second.init().await;
    let (before, response) = second
        .call("session/resume", json!({"sessionId": id, "cwd": "/w"}))
        .await;
    assert!(before.is_empty(), "no replay on resume: {before:?}");
    assert_eq!(response["result"]["modes"]["currentModeId"], "ask");
    let (streamed, response) = second
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "two"}]}),
        )
        .await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(!streamed.is_empty());
}

/// `session/list` pages with cursors (newest first, no row twice, none missing) and filters
/// by cwd; a cursor it did not hand out is `-32602`.
#[tokio::test]
async fn list_pages_with_cursors_and_filters_by_cwd() {
    let mut wire = Wire::serve(Streamer::default(), MemoryStore::new());
    wire.init().await;
    let mut made = Vec::new();
    for i in 0..230 {
        let cwd = if i % 2 == 0 { "/even" } else { "/odd" };
        made.push((wire.new_session(cwd).await, cwd));
    }
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let page = wire.ok("session/list", json!({"cursor": cursor})).await;
        pages += 1;
        for s in page["sessions"].as_array().unwrap() {
            seen.push(s["sessionId"].as_str().unwrap().to_owned());
        }
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, 3);
    let newest_first: Vec<String> = made.iter().rev().map(|(id, _)| id.clone()).collect();
    assert_eq!(seen, newest_first);

    let odd = wire.ok("session/list", json!({"cwd": "/odd"})).await;
    let odd = odd["sessions"].as_array().unwrap();
    assert_eq!(odd.len(), 100);
    assert!(odd.iter().all(|s| s["cwd"] == "/odd"));

    let (_, bad) = wire.call("session/list", json!({"cursor": "nope"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

/// Unknown sessions on load and resume: `-32002` with the id in `data` (delete is
/// [`deleting_a_session_that_is_not_there_succeeds_silently`]).
#[tokio::test]
async fn unknown_sessions_are_32002_with_the_session_id() {
    let mut wire = Wire::serve(Streamer::default(), MemoryStore::new());
    wire.init().await;
    for (method, params) in [
        (
            "session/load",
            json!({"sessionId": "ghost", "cwd": "/w", "mcpServers": []}),
        ),
        ("session/resume", json!({"sessionId": "ghost", "cwd": "/w"})),
    ] {
        let (_, response) = wire.call(method, params).await;
        assert_eq!(response["error"]["code"], -32002, "{method}: {response}");
        assert_eq!(response["error"]["data"]["sessionId"], "ghost", "{method}");
    }
    // The connection keeps serving, and a failed load leaves no session behind.
    let (_, prompt) = wire
        .call(
            "session/prompt",
            json!({"sessionId": "ghost", "prompt": []}),
        )
        .await;
    assert_eq!(prompt["error"]["code"], -32002);
}

/// The spec: deleting a session that never existed, or was already deleted, SHOULD succeed
/// silently (a client retrying a delete, or two clients deleting the same session, must not
/// see an error).
#[tokio::test]
async fn deleting_a_session_that_is_not_there_succeeds_silently() {
    let store = Arc::new(MemoryStore::new());
    let mut wire = Wire::serve(Streamer::default(), store.clone());
    wire.init().await;
    let ghost = wire
        .ok("session/delete", json!({"sessionId": "ghost"}))
        .await;
    assert_eq!(ghost, json!({}));
    let id = wire.new_session("/w").await;
    wire.ok("session/delete", json!({"sessionId": id})).await;
    let again = wire.ok("session/delete", json!({"sessionId": id})).await;
    assert_eq!(again, json!({}));
    assert!(store.meta(&SessionId(id.clone())).await.unwrap().is_none());
}

/// `session/close` forgets the session on the connection (it can be loaded again);
/// `session/delete` removes it from the store.
#[tokio::test]
async fn close_frees_and_delete_removes() {
    let store = Arc::new(MemoryStore::new());
    let mut wire = Wire::serve(Streamer::default(), store.clone());
    wire.init().await;
    let id = wire.new_session("/w").await;
    wire.ok("session/close", json!({"sessionId": id})).await;
    let (_, prompt) = wire
        .call("session/prompt", json!({"sessionId": id, "prompt": []}))
        .await;
    assert_eq!(prompt["error"]["code"], -32002, "closed: {prompt}");
    wire.ok("session/resume", json!({"sessionId": id, "cwd": "/w"}))
        .await;
    wire.ok("session/delete", json!({"sessionId": id})).await;
    assert!(store.meta(&SessionId(id.clone())).await.unwrap().is_none());
    let list = wire.ok("session/list", json!({})).await;
    assert_eq!(list["sessions"], json!([]));
    let (_, load) = wire
        .call(
            "session/load",
            json!({"sessionId": id, "cwd": "/w", "mcpServers": []}),
        )
        .await;
    assert_eq!(load["error"]["code"], -32002);
}

/// `initialize` advertises `loadSession` and the session capabilities the store provides;
/// an agent's own method wins over the store's.
#[tokio::test]
async fn capabilities_are_advertised_and_the_agent_can_override() {
    let agent = Streamer {
        own_list: true,
        ..Streamer::default()
    };
    let mut wire = Wire::serve(agent, MemoryStore::new());
    let init = wire.init().await;
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{init}");
    for cap in ["list", "resume", "close", "delete"] {
        assert!(
            caps["sessionCapabilities"][cap].is_object(),
            "{cap}: {init}"
        );
    }
    wire.new_session("/w").await;
    let list = wire.ok("session/list", json!({})).await;
    assert_eq!(list["_meta"]["by"], "agent");
    assert_eq!(list["sessions"], json!([]));
}

/// With the default `Durability::Event` every update is stored as it was sent: the replay
/// of a turn is its live updates one for one, in order, and the turn ends with a marker
/// (no interrupted chunk). A turn with no end marker (what a `kill -9` mid-turn leaves) is
/// replayed with its events and then a chunk marked `INTERRUPTED_META`, before the next
/// turn.
#[tokio::test]
async fn event_durability_replays_each_update_as_sent_and_marks_an_interrupted_turn() {
    let store = Arc::new(MemoryStore::new());
    let mut first = Wire::serve(Streamer::default(), store.clone());
    first.init().await;
    let id = first.new_session("/w").await;
    let (live, _) = first
        .call(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "hello big world"}]}),
        )
        .await;
    // (The commands update sent while the session was created may arrive here too.)
    let live: Vec<Value> = updates(&live)
        .into_iter()
        .filter(|u| u["sessionUpdate"] != "available_commands_update")
        .collect();
    let mut second = Wire::serve(Streamer::default(), store.clone());
    second.init().await;
    let (before, _) = second
        .call(
            "session/load",
            json!({"sessionId": id, "cwd": "/w", "mcpServers": []}),
        )
        .await;
    let replay = updates(&before);
    // The commands update sent while the session was created, the prompt, then the turn.
    assert_eq!(replay[1]["sessionUpdate"], "user_message_chunk");
    assert_eq!(replay[2..], live[..], "the turn replays as it streamed");
    assert!(!replay.iter().any(|u| u["_meta"][INTERRUPTED_META] == true));

    // A turn cut off mid-way (its prompt and two chunks, no end), then a later turn.
    let sid = SessionId(id.clone());
    let cut = vec![
        StoredEvent::Prompt(vec![ContentBlock::text("cut")]),
        StoredEvent::Update(SessionUpdate::agent_message_text("par")),
        StoredEvent::Update(SessionUpdate::agent_message_text("tial")),
    ];
    store.append(&sid, cut.clone()).await.unwrap();
    store.append(&sid, cut).await.unwrap();
    let mut third = Wire::serve(Streamer::default(), store.clone());
    third.init().await;
    let (before, _) = third
        .call(
            "session/load",
            json!({"sessionId": id, "cwd": "/w", "mcpServers": []}),
        )
        .await;
    let replay = updates(&before);
    let marks: Vec<usize> = replay
        .iter()
        .enumerate()
        .filter(|(_, u)| u["_meta"][INTERRUPTED_META] == true)
        .map(|(i, _)| i)
        .collect();
    let n = replay.len();
    // ... "cut", "par", "tial", (mark), "cut", "par", "tial", (mark)
    assert_eq!(marks, [n - 5, n - 1], "after each cut turn: {replay:#?}");
    assert_eq!(replay[n - 6]["content"]["text"], "tial");
    assert_eq!(replay[n - 4]["content"]["text"], "cut");

    // A session recorded before the markers existed: no turn is taken for interrupted.
    let old = SessionId("old".into());
    // (`SessionMeta::new` leaves `turn_markers` false, as such sessions have it.)
    store
        .create(SessionMeta::new(old.clone(), "/w"))
        .await
        .unwrap();
    store
        .append(
            &old,
            vec![StoredEvent::Prompt(vec![ContentBlock::text("q")])],
        )
        .await
        .unwrap();
    let (before, _) = third
        .call(
            "session/load",
            json!({"sessionId": "old", "cwd": "/w", "mcpServers": []}),
        )
        .await;
    assert_eq!(updates(&before).len(), 1);
}
