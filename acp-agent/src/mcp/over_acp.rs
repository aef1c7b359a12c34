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

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::server::{Live, State, Watcher};
use super::{McpConfig, McpError};
use crate::ClientHandle;
use crate::types::{MessageMcpNotification, MessageMcpRequest, MessageMcpResponse};

/// How many notifications from the client may wait for the rmcp client; more are dropped.
pub(super) const INBOX: usize = 64;

/// JSON-RPC's internal error, for a carried request the client failed to answer.
const INTERNAL_ERROR: i64 = -32603;

/// What the supervisor of one `acp` server needs, shared with the connector.
pub(super) struct AcpSupervisor {
    pub(super) name: String,
    pub(super) server_id: String,
    pub(super) client: ClientHandle,
    pub(super) config: McpConfig,
    pub(super) state: watch::Sender<State>,
    pub(super) inbox: mpsc::Receiver<ServerJsonRpcMessage>,
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
    closed: CancellationToken,
}

impl Carrier {
    /// Carries one message rmcp sends: a request as an `mcp/message` request whose answer
    /// comes back through `replies`, a notification as an `mcp/message` notification.
    /// Answers to requests of the server are dropped: the agent serves none of them.
    async fn carry(self: Arc<Self>, message: ClientJsonRpcMessage) {
        let Ok(Value::Object(mut message)) = serde_json::to_value(&message) else {
            return;
        };
        let Some(Value::String(method)) = message.remove("method") else {
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
