//! The per-session connector: one supervised server per `mcpServers` entry, tools listed with
//! namespaced names, calls routed, bounded and cancellable.

use std::collections::HashSet;
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::server::{Group, Live, State, StderrTail, Supervisor};
use super::{McpConfig, McpError};
use crate::ClientHandle;
use crate::types::McpServer;

/// One tool of one server.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct McpTool {
    /// The (session-unique) name of the server offering it.
    pub server: String,
    /// The tool's name on its server.
    pub name: String,
    /// `server/tool`: the name to show to a model or a user.
    pub qualified: String,
    /// The tool's title, if it has one.
    pub title: Option<String>,
    /// What the tool does, as the server describes it.
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
}

/// One server of the session.
struct Slot {
    name: String,
    state: watch::Receiver<State>,
    group: Option<Group>,
    stderr: StderrTail,
    /// An `acp` server's way in for what the client sends about it.
    #[cfg(feature = "unstable_mcp_over_acp")]
    acp: Option<super::over_acp::Route>,
}

impl Slot {
    fn new(name: String, state: watch::Receiver<State>, stderr: StderrTail) -> Self {
        Self {
            name,
            state,
            group: None,
            stderr,
            #[cfg(feature = "unstable_mcp_over_acp")]
            acp: None,
        }
    }
}

/// The MCP servers of one session (see the [module docs](super)).
pub struct McpConnector {
    slots: Vec<Slot>,
    config: McpConfig,
    shutdown: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl McpConnector {
    /// Starts every server of `servers` in the background and returns at once. Needs a tokio
    /// runtime. Servers of transports this build does not connect are kept as failed slots, so
    /// using them says why; so are `acp` servers, which need the client: see
    /// [`McpConnector::start_with_client`].
    pub fn start(servers: &[McpServer], config: McpConfig) -> Self {
        Self::starting(servers, config, None)
    }

    /// [`McpConnector::start`], with `acp` servers (MCP over ACP, feature
    /// `unstable_mcp_over_acp`) reached through `client`: each inner MCP message travels as
    /// an `mcp/message` to the client that declared the server. The agent must advertise
    /// `mcpCapabilities.acp` (see [`mcp_capabilities`](super::mcp_capabilities)) and hand the
    /// client's `mcp/message` notifications to [`McpConnector::deliver`].
    pub fn start_with_client(
        servers: &[McpServer],
        config: McpConfig,
        client: &ClientHandle,
    ) -> Self {
        Self::starting(servers, config, Some(client))
    }

    fn starting(servers: &[McpServer], config: McpConfig, client: Option<&ClientHandle>) -> Self {
        #[cfg(not(feature = "unstable_mcp_over_acp"))]
        let _ = client;
        let shutdown = CancellationToken::new();
        let mut taken = HashSet::new();
        let mut slots = Vec::new();
        let mut tasks = Vec::new();
        for server in servers {
            let (base, transport) = describe(server);
            let name = unique_name(&mut taken, &base);
            let stderr = StderrTail::default();
            #[cfg(feature = "mcp-http")]
            if let McpServer::Http(spec) = server {
                let (tx, rx) = watch::channel(State::Starting);
                let supervisor = super::http::HttpSupervisor {
                    name: name.clone(),
                    spec: spec.clone(),
                    config: config.clone(),
                    state: tx,
                    shutdown: shutdown.child_token(),
                };
                tasks.push(tokio::spawn(supervisor.run()));
                slots.push(Slot::new(name, rx, stderr));
                continue;
            }
            #[cfg(feature = "unstable_mcp_over_acp")]
            if let (McpServer::Acp(spec), Some(client)) = (server, client) {
                let (tx, rx) = watch::channel(State::Starting);
                let (inbox_tx, inbox_rx) = tokio::sync::mpsc::channel(super::over_acp::INBOX);
                let asked = super::over_acp::Asked::default();
                let supervisor = super::over_acp::AcpSupervisor {
                    name: name.clone(),
                    server_id: spec.server_id.0.clone(),
                    client: client.clone(),
                    config: config.clone(),
                    state: tx,
                    inbox: inbox_rx,
                    asked: asked.clone(),
                    shutdown: shutdown.child_token(),
                };
                tasks.push(tokio::spawn(supervisor.run()));
                let mut slot = Slot::new(name, rx, stderr);
                slot.acp = Some(super::over_acp::Route {
                    server_id: spec.server_id.0.clone(),
                    inbox: inbox_tx,
                    asked,
                });
                slots.push(slot);
                continue;
            }
            let McpServer::Stdio(spec) = server else {
                let (_tx, rx) = watch::channel(State::Failed(McpError::Unsupported {
                    server: name.clone(),
                    transport,
                }));
                slots.push(Slot::new(name, rx, stderr));
                continue;
            };
            let (tx, rx) = watch::channel(State::Starting);
            let group = Group::default();
            let supervisor = Supervisor {
                name: name.clone(),
                spec: spec.clone(),
                config: config.clone(),
                state: tx,
                stderr: stderr.clone(),
                group: group.clone(),
                shutdown: shutdown.child_token(),
            };
            tasks.push(tokio::spawn(supervisor.run()));
            let mut slot = Slot::new(name, rx, stderr);
            slot.group = Some(group);
            slots.push(slot);
        }
        Self {
            slots,
            config,
            shutdown,
            tasks,
        }
    }

    /// The server names, in the order of `mcpServers`, made unique.
    pub fn servers(&self) -> Vec<String> {
        self.slots.iter().map(|s| s.name.clone()).collect()
    }

    /// The last bytes a server wrote to stderr (empty for an unknown server).
    pub fn stderr_tail(&self, server: &str) -> String {
        self.slot(server)
            .map(|s| s.stderr.text())
            .unwrap_or_default()
    }

    /// Every server with its tools or the reason it has none, in the order of `mcpServers`.
    /// Waits for the servers still starting (concurrently, each within the start bound).
    pub async fn tools(&self) -> Vec<(String, Result<Vec<McpTool>, McpError>)> {
        let waits = self.slots.iter().map(|slot| async move {
            let tools = self.ready(slot).await.map(|live| list(&slot.name, &live));
            (slot.name.clone(), tools)
        });
        futures::future::join_all(waits).await
    }

    /// Splits `server/tool` by the longest server name that is a prefix of it.
    pub fn resolve<'a>(&self, qualified: &'a str) -> Option<(String, &'a str)> {
        self.slots
            .iter()
            .filter_map(|s| {
                let rest = qualified.strip_prefix(s.name.as_str())?.strip_prefix('/')?;
                Some((s.name.clone(), rest))
            })
            .max_by_key(|(name, _)| name.len())
    }

    /// Calls `tool` of `server` with `arguments`, within the call timeout and output bound;
    /// ends with [`McpError::Cancelled`] (and tells the server) when `cancel` fires first.
    /// A result with `isError` is an `Ok`: the tool ran and reported a failure.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, McpError> {
        let slot = self
            .slot(server)
            .ok_or_else(|| McpError::UnknownServer(server.to_owned()))?;
        let live = tokio::select! {
            live = self.ready(slot) => live?,
            _ = cancel.cancelled() => return Err(McpError::Cancelled),
        };
        if !live.tools().iter().any(|t| t.name == tool) {
            return Err(McpError::UnknownTool {
                server: slot.name.clone(),
                tool: tool.to_owned(),
            });
        }
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let bound = self.config.call_timeout;
        // Dropping rmcp's call future (on cancel or timeout) sends `notifications/cancelled`.
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(bound, live.peer.call_tool(params)) => outcome,
            _ = cancel.cancelled() => return Err(McpError::Cancelled),
        };
        let result = match outcome {
            Err(_) => {
                return Err(McpError::CallTimeout {
                    server: slot.name.clone(),
                    tool: tool.to_owned(),
                    after: bound,
                });
            }
            Ok(Ok(result)) => result,
            Ok(Err(rmcp::ServiceError::TransportClosed)) => {
                // Let the stderr reader catch the server's last words.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                return Err(McpError::Exited {
                    server: slot.name.clone(),
                    stderr: slot.stderr.text(),
                });
            }
            Ok(Err(e)) => {
                return Err(McpError::Protocol {
                    server: slot.name.clone(),
                    message: e.to_string(),
                });
            }
        };
        let size = serde_json::to_vec(&result).map_or(0, |v| v.len());
        if size > self.config.max_output_bytes {
            return Err(McpError::OutputTooLarge {
                server: slot.name.clone(),
                tool: tool.to_owned(),
                size,
                limit: self.config.max_output_bytes,
            });
        }
        Ok(result)
    }

    /// Hands an `mcp/message` notification the client sent (`notifications/tools/list_changed`,
    /// progress) to the `acp` server it names; `false` when no server of this connector has
    /// that id (another session's, perhaps). Never waits: when the server's inbox is full the
    /// notification is dropped.
    #[cfg(feature = "unstable_mcp_over_acp")]
    pub fn deliver(&self, notification: &crate::types::MessageMcpNotification) -> bool {
        let Some(route) = self.route(&notification.server_id.0) else {
            return false;
        };
        match super::over_acp::inner_notification(notification) {
            Some(message) => {
                if route.inbox.try_send(message).is_err() {
                    tracing::warn!(server = %notification.server_id.0, "MCP notification dropped");
                }
            }
            None => tracing::debug!(method = %notification.method, "not an MCP notification"),
        }
        true
    }

    /// Whether `server_id` is the id of an `acp` server of this connector: the agent asks each
    /// session's connector, to find the one an `mcp/message` of the client is for.
    #[cfg(feature = "unstable_mcp_over_acp")]
    pub fn serves(&self, server_id: &str) -> bool {
        self.route(server_id).is_some()
    }

    /// Answers an `mcp/message` request the client sent: a request of one of this connector's
    /// `acp` servers to the agent (`ping`, `roots/list`, sampling, elicitation). The agent's
    /// MCP client answers it as it does for any server: `ping` with `{}`, `roots/list` with no
    /// roots, elicitation declined, anything else with MCP's "method not found"; a server no
    /// longer connected, or no answer within [`McpConfig::call_timeout`], is an MCP error.
    /// ACP errors: no `acp` server with that id here (`-32602`), a request id already waiting
    /// (`-32602`), more than [`MAX_ASKED`](super::MAX_ASKED) waiting (`-32603`).
    #[cfg(feature = "unstable_mcp_over_acp")]
    pub async fn answer(
        &self,
        request: crate::types::MessageMcpRequest,
    ) -> Result<crate::types::MessageMcpResponse, crate::Error> {
        let server_id = request.server_id.0.clone();
        let slot = self
            .slots
            .iter()
            .find(|s| s.acp.as_ref().is_some_and(|r| r.server_id == server_id));
        let Some((slot, route)) = slot.and_then(|s| Some((s, s.acp.as_ref()?))) else {
            return Err(crate::Error::invalid_params(format!(
                "no MCP server {server_id} in this session"
            )));
        };
        route
            .answer(request, &slot.state, self.config.call_timeout)
            .await
    }

    #[cfg(feature = "unstable_mcp_over_acp")]
    fn route(&self, server_id: &str) -> Option<&super::over_acp::Route> {
        self.slots
            .iter()
            .filter_map(|s| s.acp.as_ref())
            .find(|r| r.server_id == server_id)
    }

    /// Stops every server: kills their process groups and waits until the processes are
    /// reaped.
    pub async fn close(mut self) {
        self.shutdown.cancel();
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
    }

    fn slot(&self, server: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.name == server)
    }

    /// Waits (within the start bound) until the server is ready or given up on.
    async fn ready(&self, slot: &Slot) -> Result<Arc<Live>, McpError> {
        let mut rx = slot.state.clone();
        let bound = self.config.start_timeout;
        let waited = tokio::time::timeout(bound, rx.wait_for(|s| !matches!(s, State::Starting)));
        match waited.await {
            Err(_) => Err(McpError::StartTimeout {
                server: slot.name.clone(),
                after: bound,
                stderr: slot.stderr.text(),
            }),
            Ok(Err(_)) => Err(McpError::Closed),
            Ok(Ok(state)) => match &*state {
                State::Ready(live) => Ok(live.clone()),
                State::Failed(e) => Err(e.clone()),
                State::Starting => Err(McpError::Closed),
            },
        }
    }
}

impl Drop for McpConnector {
    /// Kills every server's process group at once; the supervisors reap the processes.
    fn drop(&mut self) {
        self.shutdown.cancel();
        for slot in &self.slots {
            if let Some(group) = &slot.group {
                group.kill();
            }
        }
    }
}

/// The name a server asked for and its transport's name.
fn describe(server: &McpServer) -> (String, String) {
    match server {
        McpServer::Stdio(s) => (s.name.clone(), "stdio".into()),
        McpServer::Http(s) => (s.name.clone(), "http".into()),
        McpServer::Sse(s) => (s.name.clone(), "sse".into()),
        #[cfg(feature = "unstable_mcp_over_acp")]
        McpServer::Acp(s) => (s.name.clone(), "acp".into()),
        McpServer::Unknown(v) => {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("unnamed");
            let kind = v.get("type").and_then(Value::as_str).unwrap_or("unknown");
            (name.to_owned(), kind.to_owned())
        }
        // A variant acp-types has from another crate's feature (`acp` when acp-types'
        // `unstable_mcp_over_acp` is on but this crate's is not): refused as unsupported.
        #[allow(unreachable_patterns)]
        _ => ("unnamed".to_owned(), "unknown".to_owned()),
    }
}

/// `base`, or `base~2`, `base~3`... if taken; `/` is replaced so names split cleanly.
fn unique_name(taken: &mut HashSet<String>, base: &str) -> String {
    let base = if base.is_empty() { "server" } else { base }.replace('/', "_");
    let mut name = base.clone();
    let mut n = 1;
    while !taken.insert(name.clone()) {
        n += 1;
        name = format!("{base}~{n}");
    }
    name
}

fn list(server: &str, live: &Live) -> Vec<McpTool> {
    live.tools()
        .iter()
        .map(|t| McpTool {
            server: server.to_owned(),
            name: t.name.to_string(),
            qualified: format!("{server}/{}", t.name),
            title: t.title.clone(),
            description: t.description.as_ref().map(|d| d.to_string()),
            input_schema: Value::Object((*t.input_schema).clone()),
        })
        .collect()
}
