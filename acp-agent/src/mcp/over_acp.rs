//! `acp` MCP servers (feature `unstable_mcp_over_acp`): the MCP session is carried over the
//! ACP connection itself, each inner MCP request as one `mcp/message` request to the client
//! that declared the server, each inner notification as an `mcp/message` notification.
//!
//! rmcp's own client runs on top of [`AcpTransport`], so the handshake, tool listing, calls,
//! cancellation and tool-list changes are the same as for stdio and HTTP servers. Every
//! carried request is bounded by the call timeout: a client that never answers ends that
//! request with an MCP error, never a stuck call. An answer that is not an MCP result (a
//! client answering garbage) becomes an MCP error for that request only.
//!
//! Notifications the client sends for the server (`notifications/tools/list_changed`,
//! progress) reach the agent as `mcp/message` notifications, which the agent hands to
//! [`McpConnector::deliver`](super::McpConnector::deliver).
//!
//! Requests the server makes of the agent (`ping`, `roots/list`, `sampling/createMessage`,
//! `elicitation/create`) reach the agent as `mcp/message` requests, which the agent hands to
//! [`McpConnector::answer`](super::McpConnector::answer): they go into the rmcp client like
//! any message of the server, and rmcp's client handler answers them as it answers a stdio
//! server (`ping` with `{}`, `roots/list` with no roots, elicitation declined, sampling and
//! unknown methods with MCP's "method not found"). At most [`MAX_ASKED`] run at once per
//! server, each bounded by the call timeout.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::server::{Live, State, Watcher};
use super::{McpConfig, McpError};
use crate::types::{
    McpError as WireError, MessageMcpError, MessageMcpNotification, MessageMcpRequest,
    MessageMcpResponse, MessageMcpResult,
};
use crate::{ClientHandle, Error};

/// How many notifications from the client may wait for the rmcp client; more are dropped.
pub(super) const INBOX: usize = 64;

/// How many requests of one server (carried by the client's `mcp/message` requests) may wait
/// for the agent's answer at once; more are refused with an ACP error.
pub const MAX_ASKED: usize = 64;

/// JSON-RPC's internal error, for a carried request the client failed to answer.
const INTERNAL_ERROR: i32 = -32603;

/// JSON-RPC's invalid params, for a server request rmcp cannot read.
const INVALID_PARAMS: i32 = -32602;

/// The server's requests waiting for the agent's answer, by inner id (as JSON text).
pub(super) type Asked = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// The way into one `acp` server's MCP session, kept by the connector: the server's id, the
/// inbox of the rmcp client, and the server's requests waiting for their answers.
pub(super) struct Route {
    pub(super) server_id: String,
    pub(super) inbox: mpsc::Sender<ServerJsonRpcMessage>,
    pub(super) asked: Asked,
}

impl Route {
    /// Hands one request of the server (an `mcp/message` request of the client) to the rmcp
    /// client and returns its answer, result or MCP error. ACP errors: more than
    /// [`MAX_ASKED`] waiting, or an id that is already waiting.
    pub(super) async fn answer(
        &self,
        p: MessageMcpRequest,
        state: &watch::Receiver<State>,
        bound: Duration,
    ) -> Result<MessageMcpResponse, Error> {
        if let State::Failed(e) = &*state.borrow() {
            return Ok(mcp_error(INTERNAL_ERROR, format!("not connected: {e}")));
        }
        let id = inner_id(&p.request_id.0);
        let key = id.to_string();
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": p.method});
        if let Some(params) = p.params {
            message["params"] = Value::Object(params);
        }
        let message: ServerJsonRpcMessage = match serde_json::from_value(message) {
            Ok(message) => message,
            Err(e) => {
                return Ok(mcp_error(
                    INVALID_PARAMS,
                    format!("not an MCP request: {e}"),
                ));
            }
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut asked = lock(&self.asked);
            if asked.len() >= MAX_ASKED {
                return Err(Error::internal_error(format!(
                    "MCP server {}: {MAX_ASKED} requests already waiting for the agent",
                    self.server_id
                )));
            }
            if asked.contains_key(&key) {
                return Err(Error::invalid_params(format!(
                    "MCP request {key} of server {} is already running",
                    self.server_id
                )));
            }
            asked.insert(key.clone(), tx);
        }
        // Removes the entry however this ends (answered, timed out, this call dropped).
        let _forget = Forget {
            asked: &self.asked,
            key,
        };
        if self.inbox.try_send(message).is_err() {
            return Ok(mcp_error(
                INTERNAL_ERROR,
                "the agent's MCP client is busy".into(),
            ));
        }
        Ok(match tokio::time::timeout(bound, rx).await {
            Ok(Ok(answer)) => outcome(answer),
            Ok(Err(_)) => mcp_error(INTERNAL_ERROR, "the MCP session ended".into()),
            Err(_) => mcp_error(INTERNAL_ERROR, format!("no answer within {bound:?}")),
        })
    }
}

struct Forget<'a> {
    asked: &'a Asked,
    key: String,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(self.asked).remove(&self.key);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn mcp_error(code: i32, message: String) -> MessageMcpResponse {
    MessageMcpError::new(WireError::new(code, message)).into()
}

/// rmcp's answer (a JSON-RPC response) as an `mcp/message` result.
fn outcome(mut answer: Value) -> MessageMcpResponse {
    if let Some(result) = answer.get_mut("result") {
        return MessageMcpResult::new(result.take()).into();
    }
    answer
        .get_mut("error")
        .map(Value::take)
        .and_then(|e| serde_json::from_value::<WireError>(e).ok())
        .map(|e| MessageMcpError::new(e).into())
        .unwrap_or_else(|| mcp_error(INTERNAL_ERROR, "an MCP answer with no result".into()))
}

/// The client's inner id as rmcp reads it: a number when it is one.
fn inner_id(text: &str) -> Value {
    text.parse::<i64>()
        .map(Value::from)
        .unwrap_or_else(|_| Value::from(text))
}

/// What the supervisor of one `acp` server needs, shared with the connector.
pub(super) struct AcpSupervisor {
    pub(super) name: String,
    pub(super) server_id: String,
    pub(super) client: ClientHandle,
    pub(super) config: McpConfig,
    pub(super) state: watch::Sender<State>,
    pub(super) inbox: mpsc::Receiver<ServerJsonRpcMessage>,
    pub(super) asked: Asked,
    pub(super) shutdown: CancellationToken,
}

impl AcpSupervisor {
    /// Does the handshake over `mcp/message`, then watches the MCP session until it ends or
    /// the connector closes. Not restarted: the client's server lives as long as the ACP
    /// connection.
    pub(super) async fn run(self) {
        let closed = self.shutdown.child_token();
        let (replies_tx, replies_rx) = mpsc::channel(INBOX);
        let transport = AcpTransport {
            carrier: Arc::new(Carrier {
                server_id: self.server_id.clone(),
                client: self.client.clone(),
                bound: self.config.call_timeout,
                replies: replies_tx,
                asked: self.asked.clone(),
                closed: closed.clone(),
            }),
            replies: replies_rx,
            inbox: self.inbox,
        };
        let name = self.name.clone();
        let error = |reason: String| McpError::Initialize {
            server: name.clone(),
            reason,
            stderr: String::new(),
        };
        let handshake = async {
            let service = Watcher::new(&self.name, &self.config)
                .serve(transport)
                .await
                .map_err(|e| error(e.to_string()))?;
            service
                .service()
                .list(service.peer())
                .await
                .map_err(error)?;
            Ok::<_, McpError>(service)
        };
        let bound = self.config.start_timeout;
        let started = tokio::select! {
            started = tokio::time::timeout(bound, handshake) => started,
            _ = self.shutdown.cancelled() => {
                closed.cancel();
                self.state.send_replace(State::Failed(McpError::Closed));
                return;
            }
        };
        let service = match started {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                closed.cancel();
                self.state.send_replace(State::Failed(e));
                return;
            }
            Err(_) => {
                closed.cancel();
                self.state
                    .send_replace(State::Failed(McpError::StartTimeout {
                        server: self.name.clone(),
                        after: bound,
                        stderr: String::new(),
                    }));
                return;
            }
        };
        self.state.send_replace(State::Ready(Arc::new(Live {
            peer: service.peer().clone(),
            tools: service.service().tools.clone(),
        })));
        tokio::select! {
            _ = service.waiting() => {
                self.state.send_replace(State::Failed(McpError::Exited {
                    server: self.name.clone(),
                    stderr: String::new(),
                }));
            }
            _ = self.shutdown.cancelled() => {
                self.state.send_replace(State::Failed(McpError::Closed));
            }
        }
        closed.cancel();
    }
}

/// Turns one inner notification the client sent into what rmcp reads, or `None` when it is
/// not a notification rmcp can parse.
pub(super) fn inner_notification(p: &MessageMcpNotification) -> Option<ServerJsonRpcMessage> {
    let mut message = json!({"jsonrpc": "2.0", "method": p.method});
    if let Some(params) = &p.params {
        message["params"] = Value::Object(params.clone());
    }
    serde_json::from_value(message).ok()
}

/// The ACP side of one `acp` server's MCP session.
struct Carrier {
    server_id: String,
    client: ClientHandle,
    bound: Duration,
    replies: mpsc::Sender<ServerJsonRpcMessage>,
    asked: Asked,
    closed: CancellationToken,
}

impl Carrier {
    /// Carries one message rmcp sends: a request as an `mcp/message` request whose answer
    /// comes back through `replies`, a notification as an `mcp/message` notification, and an
    /// answer to a request of the server to the [`Route::answer`] waiting for it.
    async fn carry(self: Arc<Self>, message: ClientJsonRpcMessage) {
        let Ok(Value::Object(mut message)) = serde_json::to_value(&message) else {
            return;
        };
        let Some(Value::String(method)) = message.remove("method") else {
            if let Some(id) = message.get("id") {
                let waiting = lock(&self.asked).remove(&id.to_string());
                if let Some(waiting) = waiting {
                    let _ = waiting.send(Value::Object(message));
                }
            }
            return;
        };
        let params = match message.remove("params") {
            Some(Value::Object(params)) => Some(params),
            _ => None,
        };
        match message.remove("id") {
            Some(id) => {
                tokio::spawn(self.request(id, method, params));
            }
            None => {
                let about = params.as_ref().and_then(about_request).unwrap_or_default();
                let mut note = MessageMcpNotification::new(self.server_id.as_str(), about, method);
                note.params = params;
                if let Err(e) = self.client.mcp_message_notification(note).await {
                    tracing::debug!(server = %self.server_id, "mcp/message notification not sent: {e}");
                }
            }
        }
    }

    /// One carried request, answered (with an MCP error at worst) unless the session closed.
    async fn request(
        self: Arc<Self>,
        id: Value,
        method: String,
        params: Option<Map<String, Value>>,
    ) {
        let mut call = MessageMcpRequest::new(self.server_id.as_str(), id_text(&id), method);
        call.params = params;
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.bound, self.client.mcp_message(call)) => answer,
            _ = self.closed.cancelled() => return,
        };
        let message = match answer {
            Ok(Ok(MessageMcpResponse::Result(r))) => {
                json!({"jsonrpc": "2.0", "id": id, "result": r.result})
            }
            Ok(Ok(MessageMcpResponse::Error(e))) => {
                json!({"jsonrpc": "2.0", "id": id, "error": e.error})
            }
            Ok(Err(e)) => error(&id, format!("mcp/message failed: {e}")),
            Err(_) => error(
                &id,
                format!("mcp/message: no answer within {:?}", self.bound),
            ),
        };
        let message = serde_json::from_value(message)
            .or_else(|e| serde_json::from_value(error(&id, format!("not an MCP answer: {e}"))));
        if let Ok(message) = message {
            let _ = self.replies.send(message).await;
        }
    }
}

fn error(id: &Value, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": INTERNAL_ERROR, "message": message}})
}

/// An inner request id as `mcp/message` carries it (a string).
fn id_text(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The inner request a notification is about (`requestId` of a cancellation, the progress
/// token of a progress report); `""` for none.
fn about_request(params: &Map<String, Value>) -> Option<String> {
    params
        .get("requestId")
        .or_else(|| params.get("progressToken"))
        .map(id_text)
}

/// rmcp's transport over `mcp/message`.
struct AcpTransport {
    carrier: Arc<Carrier>,
    replies: mpsc::Receiver<ServerJsonRpcMessage>,
    inbox: mpsc::Receiver<ServerJsonRpcMessage>,
}

impl Transport<RoleClient> for AcpTransport {
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "mcp/message".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let carrier = self.carrier.clone();
        async move {
            if carrier.closed.is_cancelled() {
                return Err(std::io::Error::other("the MCP session over ACP is closed"));
            }
            carrier.carry(item).await;
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        tokio::select! {
            biased;
            _ = self.carrier.closed.cancelled() => None,
            reply = self.replies.recv() => reply,
            note = self.inbox.recv() => note,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.carrier.closed.cancel();
        Ok(())
    }
}
