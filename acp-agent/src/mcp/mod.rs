//! MCP servers of a session, connected through rmcp (the official Rust MCP SDK): the
//! `mcpServers` an editor passes in `session/new`, started, supervised, listed and called
//! (feature `mcp`), and what a remote client may ask a hosted agent for ([`McpPolicy`], in
//! every build: a transport serving an agent over the network applies it, see the
//! [`policy`] module).
//!
//! [`McpConnector::start`] takes the session's [`McpServer`](crate::types::McpServer) list and
//! returns at once: every server starts concurrently in the background, so `session/new` is
//! never held up. The first use ([`McpConnector::tools`], [`McpConnector::call_tool`]) waits
//! for the server it needs, within [`McpConfig::start_timeout`].
//!
//! - **stdio servers** are child processes in their own process group, with exactly the
//!   environment variables the client gave added to the agent's, less `ACP_TOKEN` and
//!   `ACP_STORE` (the credential and the session store of `acp serve`: a server is someone
//!   else's program and gets neither, unless the client's entry sets them itself). Their stderr is read into a
//!   bounded tail that failures quote. A server that exits after it was ready is restarted with
//!   a doubling backoff, at most [`McpConfig::max_restarts`] times; a server that fails to start
//!   (no such program, no `initialize` answer in time) is not retried.
//! - **http servers** (feature `mcp-http`) are reached over rmcp's streamable HTTP client with
//!   their headers, `http://` and `https://` (rustls with ring, trusting the OS's roots and
//!   [`McpConfig::root_certificates`]). With [`McpConfig::policy`] every address the client
//!   connects to (after resolving, so a name that changed its answer is caught) and every
//!   redirect is held to the policy; a server whose MCP session ends is marked
//!   unavailable, not retried. Without the feature they are refused with
//!   [`McpError::Unsupported`].
//! - **sse servers** are always refused (SSE is deprecated by the MCP spec).
//! - **acp servers** (MCP over ACP, feature `unstable_mcp_over_acp`) are served by the client
//!   itself: started with [`McpConnector::start_with_client`], every inner MCP message goes
//!   over the ACP connection as an `mcp/message` (each request bounded by
//!   [`McpConfig::call_timeout`]), and the agent hands the client's `mcp/message`
//!   notifications to [`McpConnector::deliver`] and its `mcp/message` requests (the server's
//!   requests of the agent: `ping`, `roots/list`...) to [`McpConnector::answer`], finding
//!   the session's connector with [`McpConnector::serves`]. Not restarted. Without the feature, or
//!   started with [`McpConnector::start`], they are refused with [`McpError::Unsupported`].
//!   [`mcp_capabilities`] advertises what this build connects.
//! - **Tool-list changes**: on `notifications/tools/list_changed` the connector lists the
//!   server's tools again; [`McpConnector::tools`] and calls see the new list.
//! - **Tools** are named `server/tool` ([`McpTool::qualified`]). Server names are made unique
//!   within a session: a second server called `fs` becomes `fs~2`, and so on. A tool name may
//!   itself contain `/`: [`McpConnector::resolve`] matches the longest server-name prefix.
//! - **Calls** are bounded by [`McpConfig::call_timeout`] and [`McpConfig::max_output_bytes`]
//!   and end early when their [`CancellationToken`](tokio_util::sync::CancellationToken) fires
//!   (tie it to `session/cancel`, see [`PromptContext::cancellation_token`](crate::PromptContext::cancellation_token)):
//!   rmcp then sends the server `notifications/cancelled`.
//! - **Failures** come back as [`McpError`], never as a panic or a dead session.
//! - **Shutdown**: [`McpConnector::close`] (or dropping the connector) kills every server's
//!   process group and reaps the processes.
//!
//! [`run_as_tool_call`] shows one MCP tool call to the client as an ACP tool call;
//! [`mcp_command`] is the `/mcp` prompt command of the demo agents built on it.

// Without the feature only the policy is here: the links above name the connector.
#![cfg_attr(not(feature = "mcp"), allow(rustdoc::broken_intra_doc_links))]

#[cfg(feature = "mcp")]
mod acp_tool;
#[cfg(feature = "mcp")]
mod command;
#[cfg(feature = "mcp")]
mod connector;
#[cfg(feature = "mcp")]
mod error;
#[cfg(feature = "mcp-http")]
mod http;
#[cfg(feature = "unstable_mcp_over_acp")]
mod over_acp;
pub mod policy;
#[cfg(feature = "mcp")]
mod server;
#[cfg(feature = "mcp-http")]
mod tls;

#[cfg(feature = "mcp")]
pub use acp_tool::{McpPermission, result_content, run_as_tool_call};
#[cfg(feature = "mcp")]
pub use command::mcp_command;
#[cfg(feature = "mcp")]
pub use connector::{McpConnector, McpTool};
#[cfg(feature = "mcp")]
pub use error::McpError;
#[cfg(feature = "unstable_mcp_over_acp")]
pub use over_acp::MAX_ASKED;
pub use policy::{McpPolicy, PolicyError};
#[cfg(feature = "mcp")]
pub use rmcp::model::{CallToolResult, JsonObject};

#[cfg(feature = "mcp")]
use std::time::Duration;

#[cfg(feature = "mcp")]
use crate::types::McpCapabilities;

#[cfg(feature = "mcp")]
/// The MCP transports this build of acp-agent connects, as the agent advertises them in
/// `agentCapabilities.mcpCapabilities` (stdio is always supported and not listed).
pub fn mcp_capabilities() -> McpCapabilities {
    // sse is never connected; http only with the `mcp-http` feature.
    let mut caps = McpCapabilities::new();
    caps.http = cfg!(feature = "mcp-http");
    #[cfg(feature = "unstable_mcp_over_acp")]
    {
        caps.acp = true;
    }
    caps
}

#[cfg(feature = "mcp")]
/// The bounds of a connector: how long servers may take, how much they may send, how often
/// they are restarted.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct McpConfig {
    /// How long a server has to start, answer `initialize` and list its tools (10 s).
    pub start_timeout: Duration,
    /// How long one tool call may take (60 s).
    pub call_timeout: Duration,
    /// The largest tool result accepted, in bytes of JSON (1 MiB).
    pub max_output_bytes: usize,
    /// The largest single message read from a server; longer lines are dropped (4 MiB).
    pub max_message_bytes: usize,
    /// How many times a crashed server is restarted over the connector's life (3).
    pub max_restarts: u32,
    /// The wait before the first restart, doubled for each further one (100 ms).
    pub restart_backoff: Duration,
    /// How many bytes of a server's stderr are kept for error messages (4 KiB).
    pub stderr_tail_bytes: usize,
    /// PEM certificates trusted for `https://` servers besides the OS's roots (a private
    /// CA); none by default. Feature `mcp-http`.
    pub root_certificates: Vec<Vec<u8>>,
    /// What `http` servers may be reached (feature `mcp-http`): with a policy, every address
    /// the HTTP client connects to is checked after resolving
    /// ([`McpPolicy::connect_allowed`]), and every redirect is held to
    /// [`McpPolicy::check_url_now`] (and resolved and checked in turn). `None` (the default,
    /// for an agent whose servers are its own user's): no check.
    pub policy: Option<std::sync::Arc<McpPolicy>>,
}

#[cfg(feature = "mcp")]
impl Default for McpConfig {
    fn default() -> Self {
        Self {
            start_timeout: Duration::from_secs(10),
            call_timeout: Duration::from_secs(60),
            max_output_bytes: 1 << 20,
            max_message_bytes: 4 << 20,
            max_restarts: 3,
            restart_backoff: Duration::from_millis(100),
            stderr_tail_bytes: 4096,
            root_certificates: Vec::new(),
            policy: None,
        }
    }
}

#[cfg(feature = "mcp")]
impl McpConfig {
    /// Sets [`McpConfig::start_timeout`].
    pub fn start_timeout(mut self, value: Duration) -> Self {
        self.start_timeout = value;
        self
    }

    /// Sets [`McpConfig::call_timeout`].
    pub fn call_timeout(mut self, value: Duration) -> Self {
        self.call_timeout = value;
        self
    }

    /// Sets [`McpConfig::max_output_bytes`].
    pub fn max_output_bytes(mut self, value: usize) -> Self {
        self.max_output_bytes = value;
        self
    }

    /// Sets [`McpConfig::max_restarts`].
    pub fn max_restarts(mut self, value: u32) -> Self {
        self.max_restarts = value;
        self
    }

    /// Adds PEM certificates to [`McpConfig::root_certificates`].
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates.push(pem.into());
        self
    }

    /// Sets [`McpConfig::policy`].
    pub fn policy(mut self, policy: McpPolicy) -> Self {
        self.policy = Some(std::sync::Arc::new(policy));
        self
    }

    /// Sets [`McpConfig::restart_backoff`].
    pub fn restart_backoff(mut self, value: Duration) -> Self {
        self.restart_backoff = value;
        self
    }
}
