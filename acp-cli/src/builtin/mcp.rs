//! The built-in agent's `/mcp` command over the session's MCP servers (connected by
//! acp-agent's connector when the session starts, loads or resumes): acp-agent's
//! [`mcp_command`], which lists the servers with their tools or calls one tool as an ACP tool
//! call after asking permission (in every mode).

use acp_agent::mcp::mcp_command;
use acp_agent::types::*;
use acp_agent::{Error, PromptContext};

use super::{BuiltinAgent, SessionState};

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
