//! The built-in agent's `/mcp` command over the session's MCP servers (connected by
//! acp-agent's connector when the session starts): `/mcp` lists every server with its tools,
//! `/mcp SERVER TOOL {json}` calls one tool as an ACP tool call, after asking permission
//! (in every mode).

use acp_agent::mcp::{McpError, McpPermission, run_as_tool_call};
use acp_agent::types::*;
use acp_agent::{Error, PromptContext};
use serde_json::Value;

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
        let Some(connector) = self.connector(s.id()) else {
            s.message_chunk(
                "No MCP servers in this session (pass some with `acp chat --mcp-config FILE`).\n",
            )
            .await?;
            return Ok(StopReason::EndTurn);
        };
        let rest = rest.trim();
        if rest.is_empty() {
            let mut text = String::from("MCP servers:\n");
            for (server, tools) in connector.tools().await {
                match tools {
                    Ok(tools) => {
                        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                        text.push_str(&format!("- {server}: {}\n", names.join(", ")));
                    }
                    Err(e) => text.push_str(&format!("- {server}: unavailable: {e}\n")),
                }
            }
            s.message_chunk(text).await?;
            return Ok(StopReason::EndTurn);
        }
        let mut words = rest.splitn(3, ' ');
        let (Some(server), Some(tool)) = (words.next(), words.next()) else {
            s.message_chunk("Usage: /mcp, or /mcp SERVER TOOL {json arguments}\n")
                .await?;
            return Ok(StopReason::EndTurn);
        };
        let arguments = match words.next().map(str::trim).filter(|a| !a.is_empty()) {
            None => None,
            Some(json) => match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(map)) => Some(map),
                _ => {
                    s.message_chunk("The arguments must be a JSON object.\n")
                        .await?;
                    return Ok(StopReason::EndTurn);
                }
            },
        };
        // Every mode asks: `code` skips the demo edit's question, not a tool of someone
        // else's server.
        let permission = McpPermission::Ask;
        let outcome = run_as_tool_call(
            s,
            &connector,
            format!("mcp-{}", state.turns),
            server,
            tool,
            arguments,
            permission,
            &cx.cancellation_token(),
        )
        .await?;
        Ok(match outcome {
            Err(McpError::Cancelled) if cx.is_cancelled() => StopReason::Cancelled,
            _ => StopReason::EndTurn,
        })
    }
}
