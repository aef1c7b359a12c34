//! The `/mcp` prompt command of demo agents (acp's built-in agent, the `echo_agent`
//! example): `/mcp` lists every server of the session with its tools, `/mcp SERVER TOOL
//! {json}` calls one tool as an ACP tool call after asking permission.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{McpConnector, McpError, McpPermission, run_as_tool_call};
use crate::types::ToolCallId;
use crate::{Error, SessionHandle};

/// Runs `/mcp` with the text after it (`rest`) in `session`, over the session's connector
/// (`None`: the session has no MCP servers, which is said). Always asks permission before a
/// call, whatever mode the session is in: the tool belongs to someone else's server.
///
/// The outer `Err` is the ACP connection failing; `Ok(true)` when `cancel` ended the call
/// (the turn is then `cancelled`), `Ok(false)` otherwise: a failed call is shown to the
/// client as a failed tool call and the turn still ends.
pub async fn mcp_command(
    session: &SessionHandle,
    connector: Option<&McpConnector>,
    call_id: impl Into<ToolCallId>,
    rest: &str,
    cancel: &CancellationToken,
) -> Result<bool, Error> {
    let Some(connector) = connector else {
        session
            .message_chunk("No MCP servers in this session (pass some with `--mcp-config FILE`).\n")
            .await?;
        return Ok(false);
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
        session.message_chunk(text).await?;
        return Ok(false);
    }
    let mut words = rest.splitn(3, ' ');
    let (Some(server), Some(tool)) = (words.next(), words.next()) else {
        session
            .message_chunk("Usage: /mcp, or /mcp SERVER TOOL {json arguments}\n")
            .await?;
        return Ok(false);
    };
    let arguments = match words.next().map(str::trim).filter(|a| !a.is_empty()) {
        None => None,
        Some(json) => match serde_json::from_str::<Value>(json) {
            Ok(Value::Object(map)) => Some(map),
            _ => {
                session
                    .message_chunk("The arguments must be a JSON object.\n")
                    .await?;
                return Ok(false);
            }
        },
    };
    let outcome = run_as_tool_call(
        session,
        connector,
        call_id,
        server,
        tool,
        arguments,
        McpPermission::Ask,
        cancel,
    )
    .await?;
    Ok(matches!(outcome, Err(McpError::Cancelled)) && cancel.is_cancelled())
}
