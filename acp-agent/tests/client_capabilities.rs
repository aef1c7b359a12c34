//! The typed client handle: every client-served call goes out and comes back typed; a call
//! the client did not advertise fails locally (never sent) with the capability named.

mod common;

use common::*;
use serde_json::json;

async fn prompt_text(pair: &Pair, session: &str, text: &str) -> String {
    let before = pair.updates().len();
    let r = pair
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
        .unwrap();
    assert_eq!(r["stopReason"], "end_turn");
    pair.updates()[before..]
        .iter()
        .filter_map(chunk_text)
        .collect::<Vec<_>>()
        .join("|")
}

#[tokio::test]
async fn advertised_client_calls_are_sent_and_typed() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(all_caps()).await;
    pair.call("session/new", json!({"cwd": "/c", "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(prompt_text(&pair, "s-c", "read").await, "ok: hello");
    let report = prompt_text(&pair, "s-c", "client calls").await;
    assert_eq!(
        report,
        r#"write true; output files; exit Some(0); elicitation ok; ext {"echo":{"n":1}}"#
    );
    let calls = pair.rec.calls.lock().unwrap().clone();
    assert_eq!(
        calls,
        [
            "fs/read_text_file",
            "fs/write_text_file",
            "terminal/create",
            "terminal/output",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/release",
            "elicitation/create",
            "_test/echo"
        ]
    );
}

#[tokio::test]
async fn unadvertised_calls_fail_locally_naming_the_capability() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": true}))
        .await;
    pair.call("session/new", json!({"cwd": "/c", "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(
        prompt_text(&pair, "s-c", "read").await,
        r#"err: -32601 "fs.readTextFile""#
    );
    let report = prompt_text(&pair, "s-c", "client calls").await;
    assert!(report.starts_with("write false; output files"), "{report}");
    assert!(report.contains("elicitation -32601"), "{report}");
    let calls = pair.rec.calls.lock().unwrap().clone();
    assert!(
        !calls
            .iter()
            .any(|c| c.starts_with("fs/") || c.starts_with("elicitation/")),
        "{calls:?}"
    );
}

#[tokio::test]
async fn terminal_calls_are_refused_without_the_terminal_capability() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(json!({"fs": {"readTextFile": true}})).await;
    pair.call("session/new", json!({"cwd": "/c", "mcpServers": []}))
        .await
        .unwrap();
    let e = pair
        .call(
            "session/prompt",
            json!({"sessionId": "s-c", "prompt": [{"type": "text", "text": "client calls"}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32601);
    assert!(
        e.message.contains("terminal/create") && e.message.contains("terminal"),
        "{}",
        e.message
    );
    assert_eq!(e.data.unwrap()["capability"], "terminal");
    assert!(
        !pair
            .rec
            .calls
            .lock()
            .unwrap()
            .iter()
            .any(|c| c.starts_with("terminal/"))
    );
}

#[tokio::test]
async fn a_repeated_initialize_replaces_the_capabilities_of_the_first() {
    // A client negotiating versions may first reach the agent with a legacy handshake that
    // carries no capabilities, then redo the handshake in v1.
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.call("initialize", json!({"protocolVersion": "0.0.9"}))
        .await
        .unwrap();
    let caps = pair.agent.client().capabilities().expect("initialized");
    assert!(!caps.fs.read_text_file);
    pair.init(all_caps()).await;
    let caps = pair.agent.client().capabilities().expect("initialized");
    assert!(caps.fs.read_text_file && caps.terminal);
    pair.call("session/new", json!({"cwd": "/c", "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(prompt_text(&pair, "s-c", "read").await, "ok: hello");
}
