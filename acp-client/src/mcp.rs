//! Hosting MCP servers for the agent (feature `mcp`, MCP over ACP): an application offers
//! its own [rmcp](https://docs.rs/rmcp) server, running in process, to the agent as an `acp`
//! entry of `mcpServers`, and answers the agent's `mcp/message`s with it.
//!
//! ```no_run
//! # use acp_client::mcp::McpHost;
//! # async fn demo<S: rmcp::ServerHandler>(tools: S, agent: acp_client::AgentHandle) -> Result<(), acp_client::Error> {
//! let host = McpHost::new();
//! let server = host.offer("editor", tools); // an `McpServer::Acp`, for `session/new`
//! host.attach(agent.clone()); // the server's notifications reach the agent
//! // In the `Client` impl: `mcp_message` -> `host.handle_message(p).await`,
//! // `mcp_message_notification` -> `host.handle_notification(p)`.
//! # Ok(()) }
//! ```
//!
//! Each [`McpHost::offer`] starts one rmcp service (one MCP session) under a fresh
//! `serverId`, so offer a server once per ACP session that gets it. Inner request ids are the
//! agent's, turned back into numbers when they read as one; a second request with the id of
//! one still running, more than [`MAX_IN_FLIGHT`] requests at once, an unknown server or a
//! message that is not MCP are ACP errors, and whatever the MCP server answers (errors
//! included) is the result. Requests the server makes of the agent (`ping`, `roots/list`)
//! are carried to it as `mcp/message` requests when an agent is attached, and answered with
//! an MCP error otherwise.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::AgentHandle;
use acp_rpc::Error;
use acp_types::v1::{
    McpError, McpServer, McpServerAcp, MessageMcpError, MessageMcpNotification, MessageMcpRequest,
    MessageMcpResponse, MessageMcpResult,
};

/// How many inner requests one hosted server may have running at once.
pub const MAX_IN_FLIGHT: usize = 256;

/// JSON-RPC's "method not found", for a request of the server no agent can answer.
const METHOD_NOT_FOUND: i64 = -32601;

/// The MCP servers an application hosts for its agent (see the [module docs](self)).
#[derive(Clone, Default)]
pub struct McpHost {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    servers: Mutex<HashMap<String, Hosted>>,
    agent: OnceLock<AgentHandle>,
    next: AtomicU64,
}

/// One hosted server: the way into its rmcp service and its running requests.
#[derive(Clone)]
struct Hosted {
    to_server: mpsc::Sender<ClientJsonRpcMessage>,
    pending: Pending,
}

/// Running inner requests by id (the id as JSON), each waiting for the server's answer.
type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

impl McpHost {
    /// A host with no server yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts `server` (needs a tokio runtime) and returns its `mcpServers` entry: an `acp`
    /// server called `name` with a `serverId` unique within this host.
    pub fn offer<S: ServerHandler>(&self, name: &str, server: S) -> McpServer {
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed) + 1;
        let server_id = format!("{name}-{n}");
        let (to_server, from_agent) = mpsc::channel(MAX_IN_FLIGHT);
        let pending = Pending::default();
        let transport = HostTransport {
            server_id: server_id.clone(),
            host: Arc::downgrade(&self.inner),
            from_agent,
            to_server: to_server.downgrade(),
            pending: pending.clone(),
        };
        let name_for_log = server_id.clone();
        tokio::spawn(async move {
            match server.serve(transport).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => tracing::warn!(server = %name_for_log, "hosted MCP server ended: {e}"),
            }
        });
        self.servers()
            .insert(server_id.clone(), Hosted { to_server, pending });
        McpServer::Acp(McpServerAcp::new(name, server_id))
    }

    /// The agent the hosted servers' notifications and requests go to (the first attached
    /// stays).
    pub fn attach(&self, agent: AgentHandle) {
        let _ = self.inner.agent.set(agent);
    }

    /// Answers one `mcp/message` request of the agent with the hosted server's answer.
    pub async fn handle_message(&self, p: MessageMcpRequest) -> Result<MessageMcpResponse, Error> {
        let hosted = self.hosted(&p.server_id.0)?;
        let id = inner_id(&p.request_id.0);
        let key = id.to_string();
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": p.method});
        if let Some(params) = p.params {
            message["params"] = Value::Object(params);
        }
        let message: ClientJsonRpcMessage = serde_json::from_value(message)
            .map_err(|e| Error::invalid_params(format!("not an MCP request: {e}")))?;
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&hosted.pending);
            if pending.len() >= MAX_IN_FLIGHT {
                return Err(Error::internal_error(format!(
                    "MCP server {}: {MAX_IN_FLIGHT} requests already running",
                    p.server_id.0
                )));
            }
            if pending.contains_key(&key) {
                return Err(Error::invalid_params(format!(
                    "MCP request {key} is already running"
                )));
            }
            pending.insert(key.clone(), tx);
        }
        // Removes the entry however this ends (answered, the server gone, this call dropped).
        let _guard = Forget {
            pending: &hosted.pending,
            key,
        };
        if hosted.to_server.send(message).await.is_err() {
            return Err(gone(&p.server_id.0));
        }
        let answer = rx.await.map_err(|_| gone(&p.server_id.0))?;
        Ok(outcome(answer))
    }

    /// Hands one `mcp/message` notification of the agent (`notifications/cancelled`,
    /// `notifications/initialized`) to the hosted server; unknown servers and messages that
    /// are not MCP notifications are ignored, and a full inbox drops it.
    pub fn handle_notification(&self, p: MessageMcpNotification) {
        let Ok(hosted) = self.hosted(&p.server_id.0) else {
            return;
        };
        let mut message = json!({"jsonrpc": "2.0", "method": p.method});
        if let Some(params) = p.params {
            message["params"] = Value::Object(params);
        }
        if let Ok(message) = serde_json::from_value(message) {
            let _ = hosted.to_server.try_send(message);
        }
    }

    /// Stops serving `server_id`: its rmcp service ends once its running requests are.
    pub fn withdraw(&self, server_id: &str) {
        self.servers().remove(server_id);
    }

    fn hosted(&self, server_id: &str) -> Result<Hosted, Error> {
        self.servers()
            .get(server_id)
            .cloned()
            .ok_or_else(|| Error::invalid_params(format!("no MCP server {server_id} here")))
    }

    fn servers(&self) -> std::sync::MutexGuard<'_, HashMap<String, Hosted>> {
        self.inner.servers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn gone(server_id: &str) -> Error {
    Error::internal_error(format!("MCP server {server_id} has stopped"))
}

/// The agent's inner id as rmcp reads it: a number when it is one.
fn inner_id(text: &str) -> Value {
    text.parse::<i64>()
        .map(Value::from)
        .unwrap_or_else(|_| Value::from(text))
}

/// The server's answer (a JSON-RPC response) as an `mcp/message` result.
fn outcome(mut answer: Value) -> MessageMcpResponse {
    if let Some(result) = answer.get_mut("result") {
        return MessageMcpResult::new(result.take()).into();
    }
    let error = answer
        .get_mut("error")
        .map(Value::take)
        .and_then(|e| serde_json::from_value::<McpError>(e).ok())
        .unwrap_or_else(|| McpError::new(-32603, "the MCP server's answer had no result"));
    MessageMcpError::new(error).into()
}

struct Forget<'a> {
    pending: &'a Pending,
    key: String,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(self.pending).remove(&self.key);
    }
}

/// rmcp's server transport over the host: reads what the agent sent, routes what the server
/// writes (answers to the waiting `handle_message`s, notifications and requests to the agent).
struct HostTransport {
    server_id: String,
    host: std::sync::Weak<Inner>,
    from_agent: mpsc::Receiver<ClientJsonRpcMessage>,
    /// Weak, so the service ends once the host withdraws the server (or is dropped).
    to_server: mpsc::WeakSender<ClientJsonRpcMessage>,
    pending: Pending,
}

impl Transport<RoleServer> for HostTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let server_id = self.server_id.clone();
        let agent = self.host.upgrade().and_then(|h| h.agent.get().cloned());
        let pending = self.pending.clone();
        let back = self.to_server.clone();
        async move {
            let Ok(Value::Object(mut message)) = serde_json::to_value(&item) else {
                return Ok(());
            };
            let id = message.remove("id");
            match (message.remove("method"), id) {
                // An answer to the agent's request.
                (None, Some(id)) => {
                    message.insert("id".into(), id.clone());
                    if let Some(waiting) = lock(&pending).remove(&id.to_string()) {
                        let _ = waiting.send(Value::Object(message));
                    }
                }
                (Some(Value::String(method)), None) => {
                    let params = params_of(&mut message);
                    if let Some(agent) = agent {
                        let about = params.as_ref().and_then(about_request).unwrap_or_default();
                        let mut note = MessageMcpNotification::new(server_id, about, method);
                        note.params = params;
                        let _ = agent.mcp_message_notification(note).await;
                    }
                }
                (Some(Value::String(method)), Some(id)) => {
                    let params = params_of(&mut message);
                    tokio::spawn(ask_agent(agent, server_id, id, method, params, back));
                }
                _ => {}
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        self.from_agent.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.from_agent.close();
        Ok(())
    }
}

fn params_of(message: &mut Map<String, Value>) -> Option<Map<String, Value>> {
    match message.remove("params") {
        Some(Value::Object(params)) => Some(params),
        _ => None,
    }
}

/// The inner request a notification is about (`requestId`, `progressToken`), as text.
fn about_request(params: &Map<String, Value>) -> Option<String> {
    let id = params
        .get("requestId")
        .or_else(|| params.get("progressToken"))?;
    Some(match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Carries one request of the server to the agent and gives the server the answer.
async fn ask_agent(
    agent: Option<AgentHandle>,
    server_id: String,
    id: Value,
    method: String,
    params: Option<Map<String, Value>>,
    back: mpsc::WeakSender<ClientJsonRpcMessage>,
) {
    let answer = match agent {
        None => error(
            &id,
            METHOD_NOT_FOUND,
            format!("{method}: no agent attached"),
        ),
        Some(agent) => {
            let text = match &id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let mut call = MessageMcpRequest::new(server_id, text, method);
            call.params = params;
            match agent.mcp_message(call).await {
                Ok(MessageMcpResponse::Result(r)) => {
                    json!({"jsonrpc": "2.0", "id": id, "result": r.result})
                }
                Ok(MessageMcpResponse::Error(e)) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": e.error})
                }
                Err(e) => error(&id, e.code.0.into(), e.message),
            }
        }
    };
    let answer = serde_json::from_value(answer)
        .or_else(|e| serde_json::from_value(error(&id, -32603, format!("not MCP: {e}"))));
    if let (Ok(answer), Some(back)) = (answer, back.upgrade()) {
        let _ = back.send(answer).await;
    }
}

fn error(id: &Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}
