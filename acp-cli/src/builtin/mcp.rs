//! The built-in agent's `/mcp` command over the session's MCP servers (connected by
//! acp-agent's connector when the session starts, loads or resumes): acp-agent's
//! [`mcp_command`], which lists the servers with their tools or calls one tool as an ACP tool
//! call after asking permission (in every mode).
//!
//! `acp` servers (MCP over ACP, the client's own servers) are carried over this connection:
//! the client's `mcp/message` notifications and requests are handed to the connector of the
//! session that was given the server.

use acp_agent::mcp::mcp_command;
use acp_agent::types::*;
use acp_agent::{Error, PromptContext};

use super::{BuiltinAgent, SessionState};

use std::sync::Arc;

use acp_agent::mcp::McpConnector;

impl BuiltinAgent {
    /// Runs `/mcp` with the text after it; the turn ends normally whatever the servers do
    /// (`Cancelled` only when the turn was).
    pub(super) async fn mcp_command(
        &self,
        cx: &PromptContext,
        state: &SessionState,
        rest: &str,
    ) -> Result<StopReason, Error> {
        let s = cx.session();
        let connector = self.connector(s.id());
        let call_id = format!("mcp-{}", state.turns);
        let cancel = cx.cancellation_token();
        let cancelled = mcp_command(s, connector.as_deref(), call_id, rest, &cancel).await?;
        Ok(if cancelled {
            StopReason::Cancelled
        } else {
            StopReason::EndTurn
        })
    }
}

impl BuiltinAgent {
    /// The connector of the session that was given the `acp` server `server_id`.
    fn serving(&self, server_id: &str) -> Option<Arc<McpConnector>> {
        let mcp = self.mcp.lock().unwrap_or_else(|p| p.into_inner());
        mcp.values().find(|c| c.serves(server_id)).cloned()
    }

    /// An `mcp/message` request of the client: a request of one of its MCP servers to this
    /// agent (`ping`, `roots/list`...), answered by the connector of that server's session.
    pub(super) async fn mcp_request(
        &self,
        p: MessageMcpRequest,
    ) -> Result<MessageMcpResponse, Error> {
        match self.serving(&p.server_id.0) {
            Some(connector) => connector.answer(p).await,
            None => Err(Error::invalid_params(format!(
                "no MCP server {} in any session",
                p.server_id.0
            ))),
        }
    }

    /// An `mcp/message` notification of the client (`notifications/tools/list_changed`,
    /// progress), handed to the server's session; dropped for an unknown server.
    pub(super) fn mcp_notification(&self, p: MessageMcpNotification) {
        if let Some(connector) = self.serving(&p.server_id.0) {
            connector.deliver(&p);
        }
    }
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
