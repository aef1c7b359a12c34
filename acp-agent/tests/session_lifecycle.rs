//! Every v1 agent method reaches the agent; defaults answer -32601; sessions are tracked
//! and calls naming an unknown session get -32002 with the id in `data`; extensions.

mod common;

use std::time::Duration;

use acp_agent::types::*;
use acp_agent::{Agent, AgentContext, Error};
use common::*;
use serde_json::json;

#[tokio::test]
async fn every_agent_method_reaches_the_agent() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(json!({})).await;
    assert_eq!(
        pair.call("authenticate", json!({"methodId": "m"}))
            .await
            .unwrap()["_meta"]["by"],
        "authenticate"
    );
    assert_eq!(
        pair.call("logout", json!({})).await.unwrap()["_meta"]["by"],
        "logout"
    );
    let new = pair
        .call("session/new", json!({"cwd": "/a", "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(new["sessionId"], "s-a");
    let list = pair.call("session/list", json!({})).await.unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], "s-old");
    pair.call(
        "session/load",
        json!({"sessionId": "s-old", "cwd": "/old", "mcpServers": []}),
    )
    .await
    .unwrap();
    assert!(
        pair.updates()
            .iter()
            .any(|u| u["sessionId"] == "s-old"
                && u["update"]["sessionUpdate"] == "user_message_chunk")
    );
    pair.call("session/resume", json!({"sessionId": "s-r", "cwd": "/r"}))
        .await
        .unwrap();
    let mode = pair
        .call(
            "session/set_mode",
            json!({"sessionId": "s-r", "modeId": "code"}),
        )
        .await
        .unwrap();
    assert_eq!(mode["_meta"]["by"], "set_mode");
    let opt = pair
        .call(
            "session/set_config_option",
            json!({"sessionId": "s-a", "configId": "c", "value": "v"}),
        )
        .await
        .unwrap();
    assert_eq!(opt["configOptions"], json!([]));
    let p = pair
        .call(
            "session/prompt",
            json!({"sessionId": "s-a", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await
        .unwrap();
    assert_eq!(p["stopReason"], "end_turn");
    assert_eq!(
        pair.call("session/close", json!({"sessionId": "s-a"}))
            .await
            .unwrap()["_meta"]["by"],
        "close"
    );
    assert_eq!(
        pair.call("session/delete", json!({"sessionId": "s-old"}))
            .await
            .unwrap()["_meta"]["by"],
        "delete"
    );
    // Closed and deleted sessions are forgotten.
    for id in ["s-a", "s-old"] {
        let e = pair
            .call("session/prompt", json!({"sessionId": id, "prompt": []}))
            .await
            .unwrap_err();
        assert_eq!(e.code.0, -32002, "{id}");
    }
}

#[tokio::test]
async fn extension_methods_and_notifications_reach_the_catch_all() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(json!({})).await;
    let r = pair.call("_test/echo", json!({"x": [1, 2]})).await.unwrap();
    assert_eq!(r, json!({"method": "_test/echo", "params": {"x": [1, 2]}}));
    pair.client
        .peer()
        .notify("_test/note", &json!({"k": "v"}))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !EXT_SEEN
        .lock()
        .unwrap()
        .iter()
        .any(|s| s == r#"_test/note {"k":"v"}"#)
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "extension notification never arrived"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

struct Minimal;

#[acp_agent::async_trait]
impl Agent for Minimal {
    async fn initialize(
        &self,
        _p: InitializeRequest,
        _cx: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(v(json!({"protocolVersion": 1})))
    }
}

#[tokio::test]
async fn unimplemented_methods_answer_method_not_found() {
    let pair = Pair::new(Minimal, Recorder::default());
    pair.init(json!({})).await;
    let calls = [
        ("authenticate", json!({"methodId": "m"})),
        ("logout", json!({})),
        ("session/new", json!({"cwd": "/", "mcpServers": []})),
        (
            "session/load",
            json!({"sessionId": "s", "cwd": "/", "mcpServers": []}),
        ),
        ("session/list", json!({})),
        ("session/resume", json!({"sessionId": "s", "cwd": "/"})),
        ("session/delete", json!({"sessionId": "s"})),
        ("_vendor/thing", json!({})),
    ];
    for (method, params) in calls {
        let e = pair.call(method, params).await.unwrap_err();
        assert_eq!(e.code.0, -32601, "{method}");
        assert!(e.message.contains(method), "{method}: {}", e.message);
    }
    // A failed load does not leave the session behind.
    let e = pair
        .call("session/prompt", json!({"sessionId": "s", "prompt": []}))
        .await
        .unwrap_err();
    assert_eq!(e.code.0, -32002);
    // session/cancel (a notification) is a harmless no-op.
    pair.client
        .peer()
        .notify("session/cancel", &json!({"sessionId": "s"}))
        .await
        .unwrap();
    assert!(pair.call("session/list", json!({})).await.is_err());
}

#[tokio::test]
async fn calls_naming_an_unknown_session_get_resource_not_found_with_the_id() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(json!({})).await;
    let calls = [
        ("session/prompt", json!({"sessionId": "nope", "prompt": []})),
        (
            "session/set_mode",
            json!({"sessionId": "nope", "modeId": "m"}),
        ),
        (
            "session/set_config_option",
            json!({"sessionId": "nope", "configId": "c", "value": "v"}),
        ),
        ("session/close", json!({"sessionId": "nope"})),
    ];
    for (method, params) in calls {
        let e = pair.call(method, params).await.unwrap_err();
        assert_eq!(e.code.0, -32002, "{method}");
        assert_eq!(e.data.unwrap(), json!({"sessionId": "nope"}), "{method}");
    }
}

#[tokio::test]
async fn sessions_from_new_load_and_resume_are_known_to_the_context() {
    let pair = Pair::new(FullAgent, Recorder::default());
    pair.init(json!({})).await;
    pair.call("session/new", json!({"cwd": "/n", "mcpServers": []}))
        .await
        .unwrap();
    pair.call(
        "session/load",
        json!({"sessionId": "s-l", "cwd": "/", "mcpServers": []}),
    )
    .await
    .unwrap();
    pair.call("session/resume", json!({"sessionId": "s-r", "cwd": "/"}))
        .await
        .unwrap();
    for id in ["s-n", "s-l", "s-r"] {
        let r = pair
            .call("session/prompt", json!({"sessionId": id, "prompt": []}))
            .await
            .unwrap();
        assert_eq!(r["stopReason"], "end_turn", "{id}");
    }
}
