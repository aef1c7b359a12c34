//! MCP over ACP (feature `unstable_mcp_over_acp`) on the client side: the client serves the
//! MCP servers it declared (`Client::mcp_message`) and calls the agent's
//! (`AgentHandle::mcp_message`), against a raw agent over a duplex pipe.
//!
//! `cargo test -p acp-client --features unstable --test unstable_mcp_over_acp`.
#![cfg(feature = "unstable_mcp_over_acp")]

mod common;
#[cfg(feature = "mcp")]
#[path = "unstable_mcp_over_acp/host_limits.rs"]
mod host_limits;
#[cfg(feature = "mcp")]
#[path = "unstable_mcp_over_acp/hosted.rs"]
mod hosted;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::{Client, async_trait};
use acp_rpc::{Error, ErrorCode, Handler, NotificationContext, Params, RawValue, RequestContext};
use acp_types::v1::*;
use serde_json::{Value, json};

/// A client hosting one MCP server over ACP (`editor-tools`), recording the inner
/// notifications it receives.
#[derive(Clone, Default)]
struct Host {
    notified: Arc<Mutex<Vec<MessageMcpNotification>>>,
}

#[async_trait]
impl Client for Host {
    async fn mcp_message(&self, p: MessageMcpRequest) -> Result<MessageMcpResponse, Error> {
        if p.server_id.0 != "editor-tools" {
            return Err(Error::invalid_params(format!(
                "no MCP server {} on this connection",
                p.server_id.0
            )));
        }
        Ok(match p.method.as_str() {
            "tools/list" => MessageMcpResult::new(json!({"tools": [{"name": "open_file"}]})).into(),
            // An MCP error with data, and one without: absent and `null` are kept apart.
            "tools/call" => MessageMcpError::new(
                McpError::new(-32602, "unknown tool").data(Some(json!({"tool": "x"}))),
            )
            .into(),
            _ => MessageMcpError::new(McpError::new(-32601, "unknown method")).into(),
        })
    }

    async fn mcp_message_notification(&self, p: MessageMcpNotification) -> Result<(), Error> {
        self.notified.lock().unwrap().push(p);
        Ok(())
    }
}

/// A raw agent hosting `agent-srv` (answers `null`, a valid MCP result), recording the
/// inner notifications it receives.
#[derive(Clone, Default)]
struct RawAgent {
    notes: Arc<Mutex<Vec<Value>>>,
}

#[acp_rpc::async_trait]
impl Handler for RawAgent {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        let p: Value = params.parse()?;
        // Wire bytes on purpose: the peer as an agent on any SDK would write them.
        let answer = match (method, p["serverId"].as_str()) {
            ("initialize", _) => {
                r#"{"protocolVersion":1,"agentCapabilities":{"mcpCapabilities":{"acp":true}}}"#
            }
            ("mcp/message", Some("agent-srv")) => r#"{"result":null,"_meta":{"trace":"t1"}}"#,
            ("mcp/message", _) => return Err(Error::invalid_params("no such MCP server")),
            _ => return Err(Error::method_not_found(method)),
        };
        Ok(RawValue::from_string(answer.to_owned()).expect("valid JSON"))
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        params: Params,
    ) -> Result<(), Error> {
        if method == "mcp/message" {
            self.notes.lock().unwrap().push(params.parse()?);
        }
        Ok(())
    }
}

async fn ask(agent: &acp_rpc::Connection, params: Value) -> Result<Value, Error> {
    tokio::time::timeout(
        Duration::from_secs(10),
        agent.peer().request("mcp/message", &params),
    )
    .await
    .expect("answered within 10 s")
}

#[tokio::test]
async fn the_client_serves_its_mcp_servers_to_the_agent() {
    let host = Host::default();
    let (_client, agent) = common::pair(host.clone(), RawAgent::default());
    let listed = ask(
        &agent,
        json!({"serverId": "editor-tools", "requestId": "1", "method": "tools/list"}),
    )
    .await
    .unwrap();
    assert_eq!(
        listed,
        json!({"result": {"tools": [{"name": "open_file"}]}})
    );
    let failed = ask(
        &agent,
        json!({"serverId": "editor-tools", "requestId": "2", "method": "tools/call",
               "params": {"name": "x"}}),
    )
    .await
    .unwrap();
    assert_eq!(
        failed,
        json!({"error": {"code": -32602, "message": "unknown tool", "data": {"tool": "x"}}})
    );
    let bare = ask(
        &agent,
        json!({"serverId": "editor-tools", "requestId": "3", "method": "ping"}),
    )
    .await
    .unwrap();
    assert_eq!(
        bare,
        json!({"error": {"code": -32601, "message": "unknown method"}})
    );
    let unknown = ask(
        &agent,
        json!({"serverId": "other", "requestId": "4", "method": "tools/list"}),
    )
    .await
    .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS);
    // Malformed: -32602, and the connection keeps serving.
    for bad in [
        json!({"serverId": "editor-tools", "method": "tools/list"}),
        json!({"serverId": "editor-tools", "requestId": "5", "method": "x", "params": "p"}),
        json!([1, 2]),
    ] {
        let error = ask(&agent, bad.clone()).await.unwrap_err();
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{bad}: {error:?}");
    }
    // The agent's inner notifications reach the client typed and in order.
    for id in ["1", "2"] {
        agent
            .peer()
            .notify(
                "mcp/message",
                &json!({"serverId": "editor-tools", "requestId": id,
                        "method": "notifications/cancelled", "params": {"reason": "user"}}),
            )
            .await
            .unwrap();
    }
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let seen: Vec<(String, String)> = host
                .notified
                .lock()
                .unwrap()
                .iter()
                .map(|n| (n.request_id.0.clone(), n.method.clone()))
                .collect();
            if seen.len() >= 2 {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("both notifications arrive");
    assert_eq!(seen[0], ("1".into(), "notifications/cancelled".into()));
    assert_eq!(seen[1].0, "2");
}

#[tokio::test]
async fn a_client_that_hosts_no_mcp_server_answers_method_not_found() {
    struct Quiet;
    impl Client for Quiet {}
    let (_client, agent) = common::pair(Quiet, RawAgent::default());
    let error = ask(
        &agent,
        json!({"serverId": "s", "requestId": "1", "method": "tools/list"}),
    )
    .await
    .unwrap_err();
    assert_eq!(error.code, ErrorCode::METHOD_NOT_FOUND);
}

#[tokio::test]
async fn the_client_calls_the_agents_mcp_server_typed() {
    let raw = RawAgent::default();
    let (client, _agent) = common::pair(Host::default(), raw.clone());
    let handle = client.agent();
    let init = handle
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    assert!(init.agent_capabilities.mcp_capabilities.acp);
    let answer = handle
        .mcp_message(MessageMcpRequest::new("agent-srv", "q1", "tools/list"))
        .await
        .unwrap();
    let MessageMcpResponse::Result(result) = answer else {
        panic!("a result: {answer:?}")
    };
    // A `null` MCP result is a result, not a missing one.
    assert_eq!(result.result, Value::Null);
    assert!(result.meta.is_some());
    let refused = handle
        .mcp_message(MessageMcpRequest::new("nowhere", "q2", "tools/list"))
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    handle
        .mcp_message_notification(
            MessageMcpNotification::new("agent-srv", "q1", "notifications/progress").params(
                serde_json::Map::from_iter([("progress".to_owned(), Value::from(1))]),
            ),
        )
        .await
        .unwrap();
    let notes = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let notes = raw.notes.lock().unwrap().clone();
            if !notes.is_empty() {
                return notes;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the notification arrives");
    assert_eq!(
        notes,
        [json!({"serverId": "agent-srv", "requestId": "q1",
                "method": "notifications/progress", "params": {"progress": 1}})]
    );
}
