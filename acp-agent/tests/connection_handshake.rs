//! The handshake: requests before `initialize` are refused, the protocol version is
//! negotiated, bad params name the field, unknown methods answer -32601.

mod common;

use acp_agent::Error;
use acp_agent::types::*;
use acp_agent::{Agent, AgentContext};
use common::*;
use serde_json::json;

#[tokio::test]
async fn requests_before_initialize_are_refused_with_the_method_named() {
    let pair = Pair::new(FullAgent, Recorder::default());
    let e = pair
        .call("session/new", json!({"cwd": "/a", "mcpServers": []}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32600);
    assert!(e.message.contains("session/new"), "{}", e.message);
    assert!(e.message.contains("initialize"), "{}", e.message);
    let e = pair.call("_test/echo", json!({})).await.unwrap_err();
    assert_eq!(e.code.0, -32600);
    pair.init(json!({})).await;
    assert!(
        pair.call("session/new", json!({"cwd": "/a", "mcpServers": []}))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn protocol_version_echoes_a_supported_request_and_otherwise_offers_the_latest() {
    let pair = Pair::new(FullAgent, Recorder::default());
    let r = pair
        .call("initialize", json!({"protocolVersion": 1}))
        .await
        .unwrap();
    assert_eq!(r["protocolVersion"], 1);
    assert_eq!(r["agentCapabilities"]["loadSession"], true);
    let r = pair
        .call("initialize", json!({"protocolVersion": 7}))
        .await
        .unwrap();
    assert_eq!(r["protocolVersion"], 1);
}

#[tokio::test]
async fn a_failed_initialize_leaves_the_gate_closed() {
    struct Refuses;
    #[acp_agent::async_trait]
    impl Agent for Refuses {
        async fn initialize(
            &self,
            _p: InitializeRequest,
            _cx: &AgentContext,
        ) -> Result<InitializeResponse, Error> {
            Err(Error::internal_error("no"))
        }
    }
    let pair = Pair::new(Refuses, Recorder::default());
    assert!(
        pair.call("initialize", json!({"protocolVersion": 1}))
            .await
            .is_err()
    );
    let e = pair.call("session/list", json!({})).await.unwrap_err();
    assert_eq!(e.code.0, -32600);
}

#[tokio::test]
async fn bad_params_get_invalid_params_naming_the_field() {
    let pair = Pair::new(FullAgent, Recorder::default());
    let e = pair.call("initialize", json!({})).await.unwrap_err();
    assert_eq!(e.code.0, -32602);
    assert_eq!(e.data.unwrap()["field"], "protocolVersion");
    pair.init(json!({})).await;
    let e = pair
        .call("session/new", json!({"mcpServers": []}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32602);
    assert_eq!(e.data.unwrap()["field"], "cwd");
    let e = pair
        .call("session/prompt", json!({"sessionId": "s-a"}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32602);
    assert_eq!(e.data.unwrap()["field"], "prompt");
}

#[tokio::test]
async fn a_version_v1_cannot_read_is_answered_with_the_latest_not_refused() {
    let pair = Pair::new(FullAgent, Recorder::default());
    for requested in [json!("0.0.9"), json!("one"), json!(-1), json!(1.5)] {
        let answer = pair
            .call("initialize", json!({"protocolVersion": requested}))
            .await
            .unwrap();
        assert_eq!(answer["protocolVersion"], 1, "asked for {requested}");
    }
}

#[tokio::test]
async fn unknown_methods_answer_method_not_found() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(json!({})).await;
    let e = pair.call("session/bogus", json!({})).await.unwrap_err();
    assert_eq!(e.code.0, -32601);
    let e = pair.call("_test/other", json!({})).await.unwrap_err();
    assert_eq!(e.code.0, -32601);
}

#[tokio::test]
async fn malformed_notifications_are_ignored_and_the_connection_keeps_working() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(json!({})).await;
    let peer = pair.client.peer();
    peer.notify("session/cancel", &json!({"session": 5}))
        .await
        .unwrap();
    peer.notify("session/cancel", &json!(null)).await.unwrap();
    peer.notify("session/unknown_note", &json!({}))
        .await
        .unwrap();
    peer.notify("_test/note-bad", &json!("just a string"))
        .await
        .unwrap();
    let r = pair
        .call("session/new", json!({"cwd": "/m", "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(r["sessionId"], "s-m");
}
