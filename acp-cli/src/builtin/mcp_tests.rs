//! The built-in agent with `acp` MCP servers (MCP over ACP): a client hosting an rmcp server
//! in process through acp-client's `McpHost`, the agent listing and calling its tool with
//! `/mcp`, and answering the requests the client carries from its servers to the agent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::mcp::McpHost;
use acp_client::{Client, ClientConnection, async_trait};
use acp_types::v1::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpContent,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::BuiltinAgent;

/// The client's own MCP server: one tool, `echo {text}`.
struct EditorTools;

impl ServerHandler for EditorTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let Value::Object(schema) = json!({"type": "object"}) else {
            unreachable!("an object")
        };
        let echo = Tool::new("echo", "echoes its text", Arc::new(schema));
        Ok(ListToolsResult::with_all_items(vec![echo]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request.arguments.as_ref().and_then(|a| a.get("text"));
        let text = text.and_then(Value::as_str).unwrap_or_default();
        Ok(CallToolResult::success(vec![McpContent::text(format!("editor says {text}"))]).into())
    }
}

/// A client that hosts its MCP servers with an `McpHost`, allows every permission and keeps
/// the session updates as JSON text.
#[derive(Clone)]
struct HostingClient {
    host: McpHost,
    updates: Arc<Mutex<String>>,
}

#[async_trait]
impl Client for HostingClient {
    async fn request_permission(
        &self,
        p: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, acp_rpc::Error> {
        Ok(RequestPermissionResponse::new(
            RequestPermissionOutcome::selected(p.options[0].option_id.clone()),
        ))
    }

    async fn session_update(&self, p: SessionNotification) -> Result<(), acp_rpc::Error> {
        let text = serde_json::to_string(&p).unwrap_or_default();
        self.updates.lock().unwrap().push_str(&text);
        Ok(())
    }

    async fn mcp_message(
        &self,
        p: MessageMcpRequest,
    ) -> Result<MessageMcpResponse, acp_rpc::Error> {
        self.host.handle_message(p).await
    }

    async fn mcp_message_notification(
        &self,
        p: MessageMcpNotification,
    ) -> Result<(), acp_rpc::Error> {
        self.host.handle_notification(p);
        Ok(())
    }
}

/// The built-in agent and a hosting client over an in-memory pipe, with a session given the
/// client's server; returns the client connection, the client, the session id and the
/// server's id.
async fn session() -> (ClientConnection, HostingClient, SessionId, String) {
    let (client_io, agent_io) = tokio::io::duplex(1 << 20);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    acp_agent::Builder::new(BuiltinAgent::default()).io(agent_read, agent_write);
    let host = McpHost::new();
    let client = HostingClient {
        host: host.clone(),
        updates: Arc::default(),
    };
    let conn = acp_client::Builder::new(client.clone()).io(client_read, client_write);
    host.attach(conn.agent().clone());
    let init = conn
        .agent()
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    assert!(init.agent_capabilities.mcp_capabilities.acp);
    let offered = host.offer("editor", EditorTools);
    let McpServer::Acp(acp) = &offered else {
        panic!("an acp server")
    };
    let server_id = acp.server_id.0.clone();
    let session = conn
        .agent()
        .new_session(NewSessionRequest::new("/tmp", vec![offered]))
        .await
        .unwrap();
    (conn, client, session.session_id, server_id)
}

async fn prompt(conn: &ClientConnection, id: &SessionId, text: &str) -> StopReason {
    let request = PromptRequest::new(id.clone(), vec![ContentBlock::from(text.to_owned())]);
    let answer = tokio::time::timeout(Duration::from_secs(20), conn.agent().prompt(request));
    answer.await.expect("the turn ends").unwrap().stop_reason
}

#[tokio::test]
async fn mcp_lists_and_calls_the_tools_of_a_server_the_client_hosts_over_acp() {
    let (conn, client, id, _) = session().await;
    assert_eq!(prompt(&conn, &id, "/mcp").await, StopReason::EndTurn);
    let listed = client.updates.lock().unwrap().clone();
    assert!(listed.contains("- editor: echo"), "{listed}");

    let call = r#"/mcp editor echo {"text": "hi"}"#;
    assert_eq!(prompt(&conn, &id, call).await, StopReason::EndTurn);
    let called = client.updates.lock().unwrap().clone();
    assert!(called.contains("editor says hi"), "{called}");
    assert!(called.contains(r#""status":"completed""#), "{called}");
}

#[tokio::test]
async fn requests_of_the_clients_servers_are_answered_by_the_agent() {
    let (conn, _client, id, server_id) = session().await;
    // The server is connected once `/mcp` lists it.
    assert_eq!(prompt(&conn, &id, "/mcp").await, StopReason::EndTurn);
    let ask = |request_id: &str, method: &str, params: Option<Value>| {
        let mut p = MessageMcpRequest::new(server_id.clone(), request_id, method);
        p.params = params.and_then(|v| v.as_object().cloned());
        let agent = conn.agent().clone();
        async move {
            let answer = tokio::time::timeout(Duration::from_secs(10), agent.mcp_message(p));
            answer.await.expect("answered within 10 s")
        }
    };
    let result = |answer: MessageMcpResponse| match answer {
        MessageMcpResponse::Result(r) => Ok(r.result),
        MessageMcpResponse::Error(e) => Err(e.error.code),
    };
    assert_eq!(result(ask("1", "ping", None).await.unwrap()), Ok(json!({})));
    let roots = result(ask("2", "roots/list", None).await.unwrap());
    assert_eq!(roots, Ok(json!({"roots": []})));
    let sampling = json!({"messages": [], "maxTokens": 10});
    let sampled = ask("3", "sampling/createMessage", Some(sampling))
        .await
        .unwrap();
    assert_eq!(result(sampled), Err(-32601));
    assert_eq!(
        result(ask("x", "no/such", None).await.unwrap()),
        Err(-32601)
    );
    // A server of no session is an ACP error, and the connection keeps serving.
    let mut elsewhere = MessageMcpRequest::new("elsewhere", "4", "ping");
    elsewhere.params = None;
    let refused = conn.agent().mcp_message(elsewhere).await.unwrap_err();
    assert_eq!(refused.code, acp_rpc::ErrorCode::INVALID_PARAMS);
    assert_eq!(result(ask("5", "ping", None).await.unwrap()), Ok(json!({})));
}
