//! `session/cancel` mid-prompt: the prompt's token fires, the pending permission request
//! resolves as cancelled (and is withdrawn), and the prompt answers `cancelled`.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use tokio::sync::mpsc;

#[tokio::test]
async fn cancel_mid_prompt_resolves_the_pending_permission_and_stops_with_cancelled() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rec = Recorder {
        permission_tx: Some(tx),
        ..Recorder::default()
    };
    let pair = Pair::new(FullAgent, rec);
    pair.init(json!({})).await;
    pair.call("session/new", json!({"cwd": "/k", "mcpServers": []}))
        .await
        .unwrap();
    let peer = pair.client.peer().clone();
    let prompt = tokio::spawn(async move {
        peer.request::<_, serde_json::Value>(
            "session/prompt",
            &json!({"sessionId": "s-k", "prompt": [{"type": "text", "text": "permission then wait"}]}),
        )
        .await
    });
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("permission request arrives");
    pair.client
        .peer()
        .notify("session/cancel", &json!({"sessionId": "s-k"}))
        .await
        .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), prompt)
        .await
        .expect("prompt ends")
        .unwrap()
        .unwrap();
    assert_eq!(r["stopReason"], "cancelled");
    let texts: Vec<String> = pair.updates().iter().filter_map(chunk_text).collect();
    assert!(
        texts.contains(&"permission: cancelled".to_owned()),
        "{texts:?}"
    );
}

#[tokio::test]
async fn a_cancel_for_another_session_does_not_touch_the_prompt() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rec = Recorder {
        permission_tx: Some(tx),
        ..Recorder::default()
    };
    let pair = Pair::new(FullAgent, rec);
    pair.init(json!({})).await;
    pair.call("session/new", json!({"cwd": "/k", "mcpServers": []}))
        .await
        .unwrap();
    pair.call("session/new", json!({"cwd": "/o", "mcpServers": []}))
        .await
        .unwrap();
    let peer = pair.client.peer().clone();
    let prompt = tokio::spawn(async move {
        peer.request::<_, serde_json::Value>(
            "session/prompt",
            &json!({"sessionId": "s-k", "prompt": [{"type": "text", "text": "permission then wait"}]}),
        )
        .await
    });
    rx.recv().await.unwrap();
    pair.client
        .peer()
        .notify("session/cancel", &json!({"sessionId": "s-o"}))
        .await
        .unwrap();
    pair.client
        .peer()
        .notify("session/cancel", &json!({"sessionId": "unknown"}))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!prompt.is_finished());
    pair.client
        .peer()
        .notify("session/cancel", &json!({"sessionId": "s-k"}))
        .await
        .unwrap();
    let r = tokio::time::timeout(Duration::from_secs(5), prompt)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(r["stopReason"], "cancelled");
}

#[tokio::test]
async fn a_later_prompt_starts_with_a_fresh_token() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let rec = Recorder {
        permission_tx: Some(tx),
        ..Recorder::default()
    };
    let pair = Pair::new(FullAgent, rec);
    pair.init(json!({})).await;
    pair.call("session/new", json!({"cwd": "/k", "mcpServers": []}))
        .await
        .unwrap();
    pair.client
        .peer()
        .notify("session/cancel", &json!({"sessionId": "s-k"}))
        .await
        .unwrap();
    let r = pair
        .call(
            "session/prompt",
            json!({"sessionId": "s-k", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await
        .unwrap();
    assert_eq!(r["stopReason"], "end_turn");
    assert!(rx.try_recv().is_err());
}

fn prompt(id: i64, text: &str) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": "s-w", "prompt": [{"type": "text", "text": text}]}})
}

fn cancel() -> serde_json::Value {
    json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-w"}})
}

#[tokio::test]
async fn a_cancel_read_right_after_its_prompt_still_cancels_it() {
    for round in 0..10 {
        let mut wire = Wire::new();
        wire.start().await;
        wire.send_all(&[prompt(3, "wait"), cancel()]).await;
        let (_, response) = wire.until_response(3).await;
        assert_eq!(
            response["result"]["stopReason"], "cancelled",
            "round {round}"
        );
    }
}

#[tokio::test]
async fn a_stale_cancel_does_not_hit_the_prompt_read_after_it() {
    let mut wire = Wire::new();
    wire.start().await;
    wire.send_all(&[cancel(), prompt(3, "wait")]).await;
    let (_, response) = wire.until_response(3).await;
    assert_eq!(response["result"]["stopReason"], "end_turn");
}
