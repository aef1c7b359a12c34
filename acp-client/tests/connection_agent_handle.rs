//! Every `AgentHandle` call reaches the agent with the right method and params, and its
//! result decodes; `cancel` and extension notifications arrive as notifications.

mod common;

use std::time::Duration;

use acp_client::Client;
use acp_types::v1::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

struct Nothing;
impl Client for Nothing {}

fn typed<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("test params decode")
}

fn last(log: &common::Log) -> (String, Value) {
    log.lock()
        .unwrap()
        .last()
        .cloned()
        .expect("agent received something")
}

fn check<P: Serialize>(log: &common::Log, method: &str, params: &P) {
    let (m, p) = last(log);
    assert_eq!(m, method);
    assert_eq!(p, serde_json::to_value(params).unwrap());
}

#[tokio::test]
async fn every_agent_method_reaches_the_agent_and_decodes_its_result() {
    let (agent, log) = common::fake_agent();
    let (conn, _agent_conn) = common::pair(Nothing, agent);
    let a = conn.agent().clone();

    let p: InitializeRequest = typed(json!({"protocolVersion": 1}));
    let r = a.initialize(p.clone()).await.unwrap();
    check(&log, "initialize", &p);
    assert_eq!(r.protocol_version, typed(json!(1)));

    let p: AuthenticateRequest = typed(json!({"methodId": "key"}));
    a.authenticate(p.clone()).await.unwrap();
    check(&log, "authenticate", &p);

    let p: LogoutRequest = typed(json!({}));
    a.logout(p.clone()).await.unwrap();
    check(&log, "logout", &p);

    let p: NewSessionRequest = typed(json!({"cwd": "/tmp", "mcpServers": []}));
    let r = a.new_session(p.clone()).await.unwrap();
    check(&log, "session/new", &p);
    assert_eq!(r.session_id.0, "s1");

    let p: LoadSessionRequest = typed(json!({"sessionId": "s1", "cwd": "/tmp", "mcpServers": []}));
    a.load_session(p.clone()).await.unwrap();
    check(&log, "session/load", &p);

    let p: ListSessionsRequest = typed(json!({}));
    let r = a.list_sessions(p.clone()).await.unwrap();
    check(&log, "session/list", &p);
    assert_eq!(r.sessions.len(), 1);
    assert_eq!(r.sessions[0].session_id.0, "s1");

    let p: ResumeSessionRequest = typed(json!({"sessionId": "s1", "cwd": "/tmp"}));
    a.resume_session(p.clone()).await.unwrap();
    check(&log, "session/resume", &p);

    let p: CloseSessionRequest = typed(json!({"sessionId": "s1"}));
    a.close_session(p.clone()).await.unwrap();
    check(&log, "session/close", &p);

    let p: DeleteSessionRequest = typed(json!({"sessionId": "s1"}));
    a.delete_session(p.clone()).await.unwrap();
    check(&log, "session/delete", &p);

    let p: SetSessionModeRequest = typed(json!({"sessionId": "s1", "modeId": "ask"}));
    a.set_session_mode(p.clone()).await.unwrap();
    check(&log, "session/set_mode", &p);

    let p: SetSessionConfigOptionRequest =
        typed(json!({"sessionId": "s1", "configId": "model", "value": "fast"}));
    let r = a.set_session_config_option(p.clone()).await.unwrap();
    check(&log, "session/set_config_option", &p);
    assert!(r.config_options.is_empty());

    let p: PromptRequest =
        typed(json!({"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}));
    let r = a.prompt(p.clone()).await.unwrap();
    check(&log, "session/prompt", &p);
    assert_eq!(r.stop_reason, StopReason::EndTurn);

    let r = a.ext_method("_vendor/echo", json!({"x": 1})).await.unwrap();
    assert_eq!(last(&log), ("_vendor/echo".to_owned(), json!({"x": 1})));
    assert_eq!(r, json!({"echo": true}));
}

async fn wait_for_entry(log: &common::Log, method: &str) -> Value {
    for _ in 0..200 {
        if let Some((_, p)) = log.lock().unwrap().iter().find(|(m, _)| m == method) {
            return p.clone();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{method} never reached the agent");
}

#[tokio::test]
async fn cancel_and_ext_notification_are_sent_as_notifications() {
    let (agent, log) = common::fake_agent();
    let (conn, _agent_conn) = common::pair(Nothing, agent);
    let p: CancelNotification = typed(json!({"sessionId": "s1"}));
    conn.agent().cancel(p).await.unwrap();
    assert_eq!(
        wait_for_entry(&log, "session/cancel").await,
        json!({"sessionId": "s1"})
    );
    conn.agent()
        .ext_notification("_vendor/ping", json!({"n": 2}))
        .await
        .unwrap();
    assert_eq!(wait_for_entry(&log, "_vendor/ping").await, json!({"n": 2}));
}

#[tokio::test]
async fn a_result_that_does_not_decode_is_an_internal_error_naming_the_method() {
    struct Bad;
    #[acp_rpc::async_trait]
    impl acp_rpc::Handler for Bad {
        async fn handle_request(
            &self,
            _cx: acp_rpc::RequestContext,
            _method: &str,
            _params: acp_rpc::Params,
        ) -> Result<Box<acp_rpc::RawValue>, acp_rpc::Error> {
            acp_rpc::to_raw(&json!({"stopReason": 42}))
        }
    }
    let (conn, _agent_conn) = common::pair(Nothing, Bad);
    let p: PromptRequest = typed(json!({"sessionId": "s1", "prompt": []}));
    let err = conn.agent().prompt(p).await.unwrap_err();
    assert_eq!(err.code, acp_client::ErrorCode::INTERNAL_ERROR);
    assert!(err.message.contains("session/prompt"), "{}", err.message);
}
