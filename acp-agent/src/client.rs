//! [`ClientHandle`]: typed calls to the methods the client serves, gated on the
//! capabilities the client advertised in `initialize`.

use std::sync::Arc;

use acp_types::v1::*;
use acp_types::{NotificationMethod, RequestMethod};

use crate::Error;
use crate::state::Inner;

/// The error code of a call refused locally because the client did not advertise the
/// capability it needs (`-32601`, as the client would answer; `data.capability` names it).
pub const CAPABILITY_NOT_ADVERTISED: acp_rpc::ErrorCode = acp_rpc::ErrorCode::METHOD_NOT_FOUND;

/// A cheap, cloneable, typed handle to the client.
#[derive(Clone)]
pub struct ClientHandle {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ClientHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientHandle")
            .field("initialized", &self.inner.capabilities().is_some())
            .finish()
    }
}

fn missing(method: &str, capability: &str) -> Error {
    Error::new(
        CAPABILITY_NOT_ADVERTISED,
        format!("{method} not sent: the client did not advertise the capability {capability}"),
    )
    // Error `data` is free-form JSON (no schema type): the method and the missing capability.
    .with_data(serde_json::json!({ "method": method, "capability": capability }))
}

/// The refusal of a call the agent's own `initialize` answer did not advertise (unstable
/// methods that only make sense when the agent offers them), shaped like [`missing`].
#[cfg(any(feature = "unstable_auth_status", feature = "unstable_mcp_over_acp"))]
fn not_offered(method: &str, capability: &str) -> Error {
    Error::new(
        CAPABILITY_NOT_ADVERTISED,
        format!(
            "{method} not sent: the agent did not advertise {capability} in its initialize answer"
        ),
    )
    .with_data(serde_json::json!({ "method": method, "capability": capability }))
}

impl ClientHandle {
    /// The client's capabilities, once `initialize` has succeeded (a repeated `initialize`
    /// replaces them).
    pub fn capabilities(&self) -> Option<std::sync::Arc<ClientCapabilities>> {
        self.inner.capabilities()
    }

    /// The underlying JSON-RPC peer (for anything not covered here).
    pub fn peer(&self) -> &acp_rpc::Peer {
        &self.inner.peer
    }

    fn require(
        &self,
        method: &str,
        capability: &str,
        has: fn(&ClientCapabilities) -> bool,
    ) -> Result<(), Error> {
        match self.capabilities() {
            Some(caps) if has(&caps) => Ok(()),
            _ => Err(missing(method, capability)),
        }
    }

    /// Sends any typed request and reads its typed result.
    pub async fn request<P: RequestMethod + Sync>(&self, params: &P) -> Result<P::Response, Error>
    where
        P::Response: Send + 'static,
    {
        self.inner.peer.typed_request(params).await
    }

    /// `session/update`. For a session whose `session/new` response is not written yet the
    /// update is queued and sent right after it.
    ///
    /// The kinds the schema reserves for clients that asked for them are refused locally
    /// (never sent) unless advertised: `notice` needs `session.notices`, `compaction_update`
    /// and `compaction_summary_chunk` need `session.compaction`, and (unstable, feature
    /// `unstable_plan_operations`) `plan_update` and `plan_removed` need `plan`, and (feature
    /// `unstable_subagents`) `subagent_update`, `session_message` and `session_message_chunk`
    /// need `subagents`. A client without them may not
    /// know these kinds at all (the official Python SDK's client drops them).
    pub async fn session_update(&self, notification: SessionNotification) -> Result<(), Error> {
        if let Some((capability, has)) = update_capability(&notification.update) {
            self.require(SessionNotification::METHOD, capability, has)?;
        }
        self.inner.send_update(notification).await
    }

    /// `session/update` from a session id and an update.
    pub async fn send_update(
        &self,
        session_id: impl Into<SessionId>,
        update: SessionUpdate,
    ) -> Result<(), Error> {
        self.session_update(SessionNotification::new(session_id, update))
            .await
    }

    /// `session/request_permission`. If the session is cancelled (`session/cancel`) while
    /// the request is pending, it resolves at once with the `cancelled` outcome (and the
    /// request is withdrawn with `$/cancel_request`).
    pub async fn request_permission(
        &self,
        params: RequestPermissionRequest,
    ) -> Result<RequestPermissionResponse, Error> {
        let token = self.inner.cancel_token(&params.session_id);
        let cancelled = RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled);
        match token {
            Some(token) => {
                if token.is_cancelled() {
                    return Ok(cancelled);
                }
                tokio::select! {
                    r = self.request(&params) => r,
                    _ = token.cancelled() => Ok(cancelled),
                }
            }
            None => self.request(&params).await,
        }
    }

    /// `fs/read_text_file` (needs `fs.readTextFile`).
    pub async fn read_text_file(
        &self,
        params: ReadTextFileRequest,
    ) -> Result<ReadTextFileResponse, Error> {
        self.require(ReadTextFileRequest::METHOD, "fs.readTextFile", |c| {
            c.fs.read_text_file
        })?;
        self.request(&params).await
    }

    /// `fs/write_text_file` (needs `fs.writeTextFile`).
    pub async fn write_text_file(
        &self,
        params: WriteTextFileRequest,
    ) -> Result<WriteTextFileResponse, Error> {
        self.require(WriteTextFileRequest::METHOD, "fs.writeTextFile", |c| {
            c.fs.write_text_file
        })?;
        self.request(&params).await
    }

    /// `terminal/create` (needs `terminal`).
    pub async fn create_terminal(
        &self,
        params: CreateTerminalRequest,
    ) -> Result<CreateTerminalResponse, Error> {
        self.require(CreateTerminalRequest::METHOD, "terminal", |c| c.terminal)?;
        self.request(&params).await
    }

    /// `terminal/output` (needs `terminal`).
    pub async fn terminal_output(
        &self,
        params: TerminalOutputRequest,
    ) -> Result<TerminalOutputResponse, Error> {
        self.require(TerminalOutputRequest::METHOD, "terminal", |c| c.terminal)?;
        self.request(&params).await
    }

    /// `terminal/release` (needs `terminal`).
    pub async fn release_terminal(
        &self,
        params: ReleaseTerminalRequest,
    ) -> Result<ReleaseTerminalResponse, Error> {
        self.require(ReleaseTerminalRequest::METHOD, "terminal", |c| c.terminal)?;
        self.request(&params).await
    }

    /// `terminal/wait_for_exit` (needs `terminal`).
    pub async fn wait_for_terminal_exit(
        &self,
        params: WaitForTerminalExitRequest,
    ) -> Result<WaitForTerminalExitResponse, Error> {
        self.require(WaitForTerminalExitRequest::METHOD, "terminal", |c| {
            c.terminal
        })?;
        self.request(&params).await
    }

    /// `terminal/kill` (needs `terminal`).
    pub async fn kill_terminal(
        &self,
        params: KillTerminalRequest,
    ) -> Result<KillTerminalResponse, Error> {
        self.require(KillTerminalRequest::METHOD, "terminal", |c| c.terminal)?;
        self.request(&params).await
    }

    /// `elicitation/create` (needs `elicitation`).
    pub async fn create_elicitation(
        &self,
        params: CreateElicitationRequest,
    ) -> Result<CreateElicitationResponse, Error> {
        self.require(CreateElicitationRequest::METHOD, "elicitation", |c| {
            c.elicitation.is_some()
        })?;
        self.request(&params).await
    }

    /// An extension request (`method` should start with `_`).
    pub async fn ext_method(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, Error> {
        self.inner.peer.request(method, &params).await
    }

    /// `auth/status_update` (unstable, feature `unstable_auth_status`): the agent's
    /// authentication state changed. Refused locally (never sent) unless the agent's own
    /// `initialize` answer advertised `auth.status`, as the protocol allows it only then.
    #[cfg(feature = "unstable_auth_status")]
    pub async fn auth_status_update(
        &self,
        notification: AuthStatusUpdateNotification,
    ) -> Result<(), Error> {
        if !self
            .inner
            .auth_status_advertised
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err(not_offered(
                AuthStatusUpdateNotification::METHOD,
                "auth.status",
            ));
        }
        self.inner
            .peer
            .notify(AuthStatusUpdateNotification::METHOD, &notification)
            .await
    }

    /// Refuses a call locally unless the agent's own `initialize` answer advertised
    /// `mcpCapabilities.acp` (the agent speaks MCP over ACP only then).
    #[cfg(feature = "unstable_mcp_over_acp")]
    fn require_mcp_over_acp(&self) -> Result<(), Error> {
        if self
            .inner
            .mcp_acp_advertised
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Ok(());
        }
        Err(not_offered(
            MessageMcpRequest::METHOD,
            "mcpCapabilities.acp",
        ))
    }

    /// `mcp/message` (request; unstable, feature `unstable_mcp_over_acp`): one inner MCP
    /// request to a server the client declared with an `acp` entry of `mcpServers`. The
    /// result is the MCP server's own answer, a result or an MCP error; an `Err` is an ACP
    /// failure (unknown server, malformed message). Refused locally (never sent) unless the
    /// agent's own `initialize` answer advertised `mcpCapabilities.acp`.
    #[cfg(feature = "unstable_mcp_over_acp")]
    pub async fn mcp_message(
        &self,
        params: MessageMcpRequest,
    ) -> Result<MessageMcpResponse, Error> {
        self.require_mcp_over_acp()?;
        self.request(&params).await
    }

    /// `mcp/message` (notification; unstable, feature `unstable_mcp_over_acp`): an inner MCP
    /// notification about a running inner request (for example a cancellation). Refused
    /// locally like [`ClientHandle::mcp_message`].
    #[cfg(feature = "unstable_mcp_over_acp")]
    pub async fn mcp_message_notification(
        &self,
        notification: MessageMcpNotification,
    ) -> Result<(), Error> {
        self.require_mcp_over_acp()?;
        self.inner
            .peer
            .notify(MessageMcpNotification::METHOD, &notification)
            .await
    }

    /// An extension notification (`method` should start with `_`).
    pub async fn ext_notification(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<(), Error> {
        self.inner.peer.notify(method, &params).await
    }
}

/// Whether a client's capabilities include one capability.
type HasCapability = fn(&ClientCapabilities) -> bool;

/// The client capability a `session/update` kind requires, if any.
fn update_capability(update: &SessionUpdate) -> Option<(&'static str, HasCapability)> {
    match update {
        SessionUpdate::Notice(_) => Some(("session.notices", |c| {
            c.session.as_ref().is_some_and(|s| s.notices.is_some())
        })),
        SessionUpdate::CompactionUpdate(_) | SessionUpdate::CompactionSummaryChunk(_) => {
            Some(("session.compaction", |c| {
                c.session.as_ref().is_some_and(|s| s.compaction.is_some())
            }))
        }
        #[cfg(feature = "unstable_plan_operations")]
        SessionUpdate::PlanUpdate(_) | SessionUpdate::PlanRemoved(_) => {
            Some(("plan", |c| c.plan.is_some()))
        }
        #[cfg(feature = "unstable_subagents")]
        SessionUpdate::SubagentUpdate(_)
        | SessionUpdate::SessionMessage(_)
        | SessionUpdate::SessionMessageChunk(_) => Some(("subagents", |c| c.subagents.is_some())),
        _ => None,
    }
}
