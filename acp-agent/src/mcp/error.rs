//! The typed failures of MCP servers and tool calls.

use std::time::Duration;

/// Why an MCP server or one of its tool calls failed. Server failures quote the tail of the
/// server's stderr (`stderr`, possibly empty).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The session has no server of that name.
    #[error("no MCP server named {0:?} in this session")]
    UnknownServer(String),
    /// The server's transport is not supported by this agent.
    #[error("MCP server {server:?}: {transport} servers are not supported by this agent")]
    Unsupported {
        /// The server's name.
        server: String,
        /// The transport (`http`, `sse`, `acp`, ...).
        transport: String,
    },
    /// The server's program could not be started.
    #[error("MCP server {server:?}: cannot start {command:?}: {reason}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program.
        command: String,
        /// The operating system's reason.
        reason: String,
    },
    /// The server did not answer `initialize` and list its tools in time.
    #[error("MCP server {server:?} did not start within {after:?}{}", tail(stderr))]
    StartTimeout {
        /// The server's name.
        server: String,
        /// The bound that passed.
        after: Duration,
        /// The tail of its stderr.
        stderr: String,
    },
    /// The MCP handshake or the tool listing failed.
    #[error("MCP server {server:?} failed to start: {reason}{}", tail(stderr))]
    Initialize {
        /// The server's name.
        server: String,
        /// What rmcp reported.
        reason: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// The server exited (and is not, or no longer, restarted).
    #[error("MCP server {server:?} exited{}", tail(stderr))]
    Exited {
        /// The server's name.
        server: String,
        /// The tail of its stderr.
        stderr: String,
    },
    /// The server has no tool of that name.
    #[error("MCP server {server:?} has no tool {tool:?}")]
    UnknownTool {
        /// The server's name.
        server: String,
        /// The tool asked for.
        tool: String,
    },
    /// The tool call took longer than the call timeout.
    #[error("MCP tool {server}/{tool} did not answer within {after:?}")]
    CallTimeout {
        /// The server's name.
        server: String,
        /// The tool.
        tool: String,
        /// The bound that passed.
        after: Duration,
    },
    /// The user rejected the call when asked for permission.
    #[error("MCP tool call rejected by the user")]
    Rejected,
    /// The tool call was cancelled (by `session/cancel` or the caller).
    #[error("MCP tool call cancelled")]
    Cancelled,
    /// The tool's result was larger than the output bound.
    #[error("MCP tool {server}/{tool} returned {size} bytes, over the {limit}-byte bound")]
    OutputTooLarge {
        /// The server's name.
        server: String,
        /// The tool.
        tool: String,
        /// The result's size in bytes of JSON.
        size: usize,
        /// The bound.
        limit: usize,
    },
    /// The server answered the call with a JSON-RPC error or something unexpected.
    #[error("MCP server {server:?}: {message}")]
    Protocol {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The connector was closed.
    #[error("the MCP connector is closed")]
    Closed,
}

fn tail(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {stderr})")
    }
}
