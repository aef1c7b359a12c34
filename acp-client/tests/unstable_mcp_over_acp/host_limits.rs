//! `McpHost`'s bounds (feature `mcp`): a second request with the id of one still running is
//! refused, and so is one more than `MAX_IN_FLIGHT` running at once; both are ACP errors
//! answered at once, the running requests still finish, and the freed slots serve again.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acp_client::mcp::{MAX_IN_FLIGHT, McpHost};
use acp_rpc::ErrorCode;
use acp_types::v1::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpContent,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

/// A server whose every tool call waits until the test opens the gate, counting the calls
/// that arrived.
struct Gate {
    arrived: Arc<AtomicUsize>,
    open: watch::Receiver<bool>,
}

impl ServerHandler for Gate {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.clone();
        let _ = open.wait_for(|o| *o).await;
        Ok(CallToolResult::success(vec![McpContent::text("through")]).into())
    }
}

fn object(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

/// A host with the gate server, initialized the way the agent's MCP client would.
async fn initialized() -> (McpHost, String, Arc<AtomicUsize>, watch::Sender<bool>) {
    let host = McpHost::new();
    let arrived = Arc::new(AtomicUsize::new(0));
    let (gate, open) = watch::channel(false);
    let server = Gate {
        arrived: arrived.clone(),
        open,
    };
    let McpServer::Acp(offered) = host.offer("gate", server) else {
        panic!("an acp server")
    };
    let id = offered.server_id.0.clone();
    let init = object(json!({"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "1"}}));
    let answer = host
        .handle_message(MessageMcpRequest::new(id.clone(), "0", "initialize").params(init))
        .await
        .unwrap();
    assert!(
        matches!(answer, MessageMcpResponse::Result(_)),
        "{answer:?}"
    );
    host.handle_notification(MessageMcpNotification::new(
        id.clone(),
        "",
        "notifications/initialized",
    ));
    (host, id, arrived, gate)
}

fn call(server_id: &str, request_id: &str) -> MessageMcpRequest {
    MessageMcpRequest::new(server_id.to_owned(), request_id, "tools/call")
        .params(object(json!({"name": "wait"})))
}

/// Waits (bounded) until `n` calls reached the server.
async fn arrived(counter: &AtomicUsize, n: usize) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while counter.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{n} calls arrive, {} did", counter.load(Ordering::SeqCst)));
}

#[tokio::test]
async fn a_request_with_the_id_of_a_running_one_is_refused_and_the_first_still_finishes() {
    let (host, id, counter, gate) = initialized().await;
    let first = tokio::spawn({
        let host = host.clone();
        let request = call(&id, "7");
        async move { host.handle_message(request).await }
    });
    arrived(&counter, 1).await;
    let again = tokio::time::timeout(Duration::from_secs(5), host.handle_message(call(&id, "7")))
        .await
        .expect("refused at once")
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::INVALID_PARAMS);
    assert!(again.message.contains("already running"), "{again:?}");
    gate.send_replace(true);
    let first = first.await.unwrap().unwrap();
    assert!(matches!(first, MessageMcpResponse::Result(_)), "{first:?}");
    // The id is free again once its request ended.
    let reused = tokio::time::timeout(Duration::from_secs(5), host.handle_message(call(&id, "7")))
        .await
        .expect("answered")
        .unwrap();
    assert!(
        matches!(reused, MessageMcpResponse::Result(_)),
        "{reused:?}"
    );
}

#[tokio::test]
async fn one_request_more_than_max_in_flight_is_refused_and_the_slots_serve_again() {
    let (host, id, counter, gate) = initialized().await;
    let running: Vec<_> = (0..MAX_IN_FLIGHT)
        .map(|n| {
            let host = host.clone();
            let request = call(&id, &format!("r{n}"));
            tokio::spawn(async move { host.handle_message(request).await })
        })
        .collect();
    arrived(&counter, MAX_IN_FLIGHT).await;
    let over = tokio::time::timeout(
        Duration::from_secs(5),
        host.handle_message(call(&id, "over")),
    )
    .await
    .expect("refused at once")
    .unwrap_err();
    assert_eq!(over.code, ErrorCode::INTERNAL_ERROR);
    assert!(over.message.contains("already running"), "{over:?}");
    gate.send_replace(true);
    for task in running {
        let answer = tokio::time::timeout(Duration::from_secs(20), task)
            .await
            .expect("each running request finishes")
            .unwrap()
            .unwrap();
        assert!(
            matches!(answer, MessageMcpResponse::Result(_)),
            "{answer:?}"
        );
    }
    let after = tokio::time::timeout(
        Duration::from_secs(5),
        host.handle_message(call(&id, "over")),
    )
    .await
    .expect("answered")
    .unwrap();
    assert!(matches!(after, MessageMcpResponse::Result(_)), "{after:?}");
}
