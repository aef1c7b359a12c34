//! MCP over ACP end to end (feature `mcp`): our agent's MCP connector (acp-agent, an `acp`
//! server reached through `mcp/message`) against our client hosting an rmcp server in
//! process (`acp_client::mcp::McpHost`), over a duplex pipe. Tools listed, called, a tool
//! error, a tool-list change followed; and clients that answer garbage, an ACP error or
//! nothing at all, each ending as a typed error within the bounds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_agent::mcp::{McpConfig, McpConnector, McpError, mcp_capabilities};
use acp_agent::{Agent, AgentContext, PromptContext};
use acp_client::mcp::McpHost;
use acp_client::{Client, ClientConnection, async_trait};
use acp_rpc::Error;
use acp_types::v1::*;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock as McpContent,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, ServerNotification,
    Tool, ToolListChangedNotification,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The rmcp server the client hosts: `echo {text}`, `fail` (a tool error) and `grow`, which
/// adds the tool `extra` and says the list changed.
#[derive(Default)]
struct EditorTools {
    grown: AtomicBool,
}

fn tool(name: &'static str) -> Tool {
    let Value::Object(schema) = json!({"type": "object"}) else {
        unreachable!("an object")
    };
    Tool::new(name, "a test tool", Arc::new(schema))
}

impl ServerHandler for EditorTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![tool("echo"), tool("fail"), tool("grow")];
        if self.grown.load(Ordering::SeqCst) {
            tools.push(tool("extra"));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match request.name.as_ref() {
            "echo" => {
                let text = request.arguments.as_ref().and_then(|a| a.get("text"));
                let text = text.and_then(Value::as_str).unwrap_or_default();
                CallToolResult::success(vec![McpContent::text(format!("editor: {text}"))])
            }
            "fail" => CallToolResult::error(vec![McpContent::text("failed on purpose")]),
            "grow" => {
                self.grown.store(true, Ordering::SeqCst);
                let changed = ToolListChangedNotification {
                    method: Default::default(),
                    extensions: Default::default(),
                };
                let _ = context
                    .peer
                    .send_notification(ServerNotification::ToolListChangedNotification(changed))
                    .await;
                CallToolResult::success(vec![McpContent::text("grown")])
            }
            "extra" => CallToolResult::success(vec![McpContent::text("extra ran")]),
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

type Shared = Arc<Mutex<Option<Arc<McpConnector>>>>;

/// An agent that advertises what acp-agent's connector connects and connects the servers of
/// `session/new` with it, handing the client's `mcp/message` notifications to it.
struct ConnectingAgent {
    connector: Shared,
    config: McpConfig,
}

#[async_trait]
impl Agent for ConnectingAgent {
    async fn initialize(
        &self,
        _: InitializeRequest,
        _: &AgentContext,
    ) -> Result<InitializeResponse, Error> {
        Ok(InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(AgentCapabilities::new().mcp_capabilities(mcp_capabilities())))
    }

    async fn new_session(
        &self,
        p: NewSessionRequest,
        cx: &AgentContext,
    ) -> Result<NewSessionResponse, Error> {
        let connector =
            McpConnector::start_with_client(&p.mcp_servers, self.config.clone(), cx.client());
        *self.connector.lock().unwrap() = Some(Arc::new(connector));
        Ok(NewSessionResponse::new("s1"))
    }

    async fn prompt(&self, _: PromptRequest, _: &PromptContext) -> Result<PromptResponse, Error> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    async fn mcp_message_notification(&self, p: MessageMcpNotification) {
        if let Some(c) = self.connector.lock().unwrap().clone() {
            c.deliver(&p);
        }
    }
}

/// How the test client answers `mcp/message`.
#[derive(Clone)]
enum Answer {
    /// Through its `McpHost`.
    Host(McpHost),
    /// A result that is no MCP answer at all.
    Garbage,
    /// An ACP error.
    Refuse,
    /// Never.
    Silence,
}

#[derive(Clone)]
struct HostingClient(Answer);

#[async_trait]
impl Client for HostingClient {
    async fn mcp_message(&self, p: MessageMcpRequest) -> Result<MessageMcpResponse, Error> {
        match &self.0 {
            Answer::Host(host) => host.handle_message(p).await,
            Answer::Garbage => Ok(MessageMcpResult::new(json!("not an MCP result")).into()),
            Answer::Refuse => Err(Error::invalid_params("no such MCP server")),
            Answer::Silence => std::future::pending().await,
        }
    }

    async fn mcp_message_notification(&self, p: MessageMcpNotification) -> Result<(), Error> {
        if let Answer::Host(host) = &self.0 {
            host.handle_notification(p);
        }
        Ok(())
    }
}

/// Connects our agent and our client, offers `servers` in `session/new` and returns the
/// agent's connector for them.
async fn session(
    answer: Answer,
    servers: Vec<McpServer>,
    config: McpConfig,
) -> (
    Arc<McpConnector>,
    ClientConnection,
    acp_agent::AgentConnection,
) {
    let (client_io, agent_io) = tokio::io::duplex(64 * 1024);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let shared = Shared::default();
    let agent = ConnectingAgent {
        connector: shared.clone(),
        config,
    };
    let served = acp_agent::Builder::new(agent).io(agent_read, agent_write);
    let conn =
        acp_client::Builder::new(HostingClient(answer.clone())).io(client_read, client_write);
    if let Answer::Host(host) = &answer {
        host.attach(conn.agent().clone());
    }
    let init = conn
        .agent()
        .initialize(InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    assert!(init.agent_capabilities.mcp_capabilities.acp);
    conn.agent()
        .new_session(NewSessionRequest::new("/work", servers))
        .await
        .unwrap();
    let connector = shared
        .lock()
        .unwrap()
        .clone()
        .expect("session/new connected");
    (connector, conn, served)
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_agents_connector_lists_and_calls_the_tools_of_an_rmcp_server_the_client_hosts() {
    let host = McpHost::new();
    let offered = host.offer("editor", EditorTools::default());
    let (connector, _conn, _agent) = session(
        Answer::Host(host.clone()),
        vec![offered],
        McpConfig::default(),
    )
    .await;
    let listed = connector.tools().await;
    let (server, tools) = &listed[0];
    assert_eq!(server, "editor");
    let names: Vec<String> = tools
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| t.qualified.clone())
        .collect();
    assert_eq!(names, ["editor/echo", "editor/fail", "editor/grow"]);

    let cancel = CancellationToken::new();
    let args = json!({"text": "hi"}).as_object().cloned();
    let echoed = connector
        .call_tool("editor", "echo", args, &cancel)
        .await
        .unwrap();
    assert_eq!(text(&echoed), "editor: hi");

    // A tool error is the tool's answer, not a failure of the carrying.
    let failed = connector
        .call_tool("editor", "fail", None, &cancel)
        .await
        .unwrap();
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(text(&failed), "failed on purpose");

    // The server's list_changed travels back as an `mcp/message` notification.
    connector
        .call_tool("editor", "grow", None, &cancel)
        .await
        .unwrap();
    let grown = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let tools = connector.tools().await.remove(0).1.unwrap();
            if tools.iter().any(|t| t.name == "extra") {
                return tools.len();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the tool list is refreshed after list_changed");
    assert_eq!(grown, 4);
    let extra = connector
        .call_tool("editor", "extra", None, &cancel)
        .await
        .unwrap();
    assert_eq!(text(&extra), "extra ran");

    let unknown = connector.call_tool("editor", "nope", None, &cancel).await;
    assert!(
        matches!(unknown, Err(McpError::UnknownTool { .. })),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn the_host_refuses_unknown_servers_and_passes_on_the_servers_own_errors() {
    let host = McpHost::new();
    let McpServer::Acp(offered) = host.offer("editor", EditorTools::default()) else {
        panic!("an acp server")
    };
    let unknown = host
        .handle_message(MessageMcpRequest::new("elsewhere", "1", "tools/list"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, acp_rpc::ErrorCode::INVALID_PARAMS);
    let params = serde_json::Map::from_iter([("name".to_owned(), json!(42))]);
    let malformed =
        MessageMcpRequest::new(offered.server_id.clone(), "2", "tools/call").params(params);
    // What the MCP server answers, errors included, is the result (here: not initialized).
    let answered = host.handle_message(malformed).await.unwrap();
    assert!(
        matches!(answered, MessageMcpResponse::Error(_)),
        "{answered:?}"
    );
    // A notification for no server is dropped, not a panic.
    host.handle_notification(MessageMcpNotification::new(
        "elsewhere",
        "",
        "notifications/x",
    ));
}

#[tokio::test]
async fn clients_that_answer_garbage_an_error_or_nothing_end_as_typed_errors() {
    let config = McpConfig::default()
        .start_timeout(Duration::from_secs(2))
        .call_timeout(Duration::from_millis(300));
    for (answer, what) in [
        (Answer::Garbage, "garbage"),
        (Answer::Refuse, "an ACP error"),
        (Answer::Silence, "nothing"),
    ] {
        let server = McpServer::Acp(McpServerAcp::new("tools", "srv"));
        let started = std::time::Instant::now();
        let (connector, conn, _agent) = session(answer, vec![server], config.clone()).await;
        let listed = connector.tools().await.remove(0).1;
        assert!(
            matches!(
                listed,
                Err(McpError::Initialize { .. } | McpError::StartTimeout { .. })
            ),
            "a client answering {what}: {listed:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what}: {:?}",
            started.elapsed()
        );
        // The connection still serves after it.
        conn.agent()
            .new_session(NewSessionRequest::new("/work", vec![]))
            .await
            .unwrap();
    }
}
