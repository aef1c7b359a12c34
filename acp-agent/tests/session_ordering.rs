//! The two ordering guarantees, checked on the raw wire: updates for a new session are
//! written after the `session/new` response, and every update of a prompt before the
//! prompt's response.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn updates_for_a_new_session_are_written_after_its_response() {
    let mut wire = Wire::new();
    wire.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
    wire.until_response(1).await;
    for round in 0..5 {
        let id = 10 + round;
        let cwd = format!("/n{round}");
        wire.send(json!({"jsonrpc": "2.0", "id": id, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}))
            .await;
        let (before, response) = wire.until_response(id).await;
        let sid = response["result"]["sessionId"].as_str().unwrap().to_owned();
        assert_eq!(sid, format!("s-n{round}"));
        assert!(
            !before
                .iter()
                .any(|m| m["params"]["sessionId"] == sid.as_str()),
            "update for {sid} written before its session/new response: {before:?}"
        );
        // Both the awaited and the spawned update arrive afterwards, awaited one first.
        let mut texts = Vec::new();
        while texts.len() < 2 {
            let m = wire.next().await;
            if m["params"]["sessionId"] == sid.as_str() {
                texts.push(chunk_text(&m["params"]).unwrap());
            }
        }
        assert_eq!(texts[0], "welcome");
        assert!(texts.contains(&"spawned".to_owned()));
    }
}

#[tokio::test]
async fn every_update_of_a_prompt_is_written_before_its_response() {
    let mut wire = Wire::new();
    wire.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
    wire.until_response(1).await;
    wire.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/p", "mcpServers": []}}))
        .await;
    wire.until_response(2).await;
    wire.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "s-p", "prompt": [{"type": "text", "text": "stream"}]}}),
    )
    .await;
    // Let the agent's output pile up behind the small pipe before reading.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (before, response) = wire.until_response(3).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let kinds: Vec<&str> = before
        .iter()
        .filter(|m| m["params"]["sessionId"] == "s-p")
        .map(|m| m["params"]["update"]["sessionUpdate"].as_str().unwrap())
        .collect();
    let texts: Vec<String> = before
        .iter()
        .filter_map(|m| chunk_text(&m["params"]))
        .collect();
    for i in 0..20 {
        assert!(
            texts.contains(&format!("chunk {i}")),
            "chunk {i} missing before the response"
        );
    }
    for kind in [
        "agent_thought_chunk",
        "plan",
        "tool_call",
        "tool_call_update",
        "available_commands_update",
        "current_mode_update",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing: {kinds:?}");
    }
    // The tool call helpers each sent exactly one update, in order.
    let tool: Vec<&Value> = before
        .iter()
        .filter(|m| m["params"]["update"]["toolCallId"] == "t1")
        .map(|m| &m["params"]["update"])
        .collect();
    assert_eq!(tool.len(), 4);
    assert_eq!(tool[0]["sessionUpdate"], "tool_call");
    assert_eq!(tool[0]["title"], "Read file");
    assert_eq!(tool[1]["status"], "in_progress");
    assert_eq!(tool[2]["locations"], json!([{"path": "/a.txt", "line": 3}]));
    assert_eq!(tool[3]["status"], "completed");
    assert_eq!(tool[3]["content"][0]["content"]["text"], "done");
    assert!(tool[1].get("content").is_none() && tool[1].get("title").is_none());
}
