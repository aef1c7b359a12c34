//! The agent side of the Agent Client Protocol.
//!
//! New here? [`cookbook`] has a whole agent (streaming, a tool call with a permission request,
//! a file read through the client) in about forty lines; the `acp-client` crate's `cookbook`
//! has the client that drives it.
//!
//! Implement [`Agent`] (only `initialize` is required), then run it with [`serve_stdio`] (or
//! [`serve`] over any reader/writer pair) for v1 clients, or with
//! [`negotiate::serve_stdio`] to serve clients of every dialect compiled in (v1,
//! legacy-0.0.9, threads, probe and crow; the dialect is detected from the client's first
//! message; [`legacy`] wires in the dialects of
//! acp-dialects, each with its mapping tables and native traits for agents that speak it
//! directly). The connection answers requests sent before
//! `initialize`, negotiates the protocol version, tracks sessions (`-32002` for unknown
//! ones), turns `session/cancel` into the prompt's cancellation token, refuses client calls
//! the client did not advertise, and keeps updates in order: an update for a new session is
//! never written before the `session/new` response (acp-rpc tells the connection when that
//! response is on the wire), and every update of a prompt is written before the prompt's
//! response.
//!
//! ```no_run
//! use acp_agent::{Agent, AgentContext, Error, PromptContext, serve_stdio};
//! use acp_agent::types::*;
//!
//! struct Echo;
//!
//! #[acp_agent::async_trait]
//! impl Agent for Echo {
//!     async fn initialize(&self, _p: InitializeRequest, _cx: &AgentContext)
//!         -> Result<InitializeResponse, Error> {
//!         Ok(InitializeResponse::new(ProtocolVersion::V1)
//!             .agent_info(Implementation::new("echo", "0.1.0")))
//!     }
//!     async fn new_session(&self, _p: NewSessionRequest, _cx: &AgentContext)
//!         -> Result<NewSessionResponse, Error> {
//!         Ok(NewSessionResponse::new("s1"))
//!     }
//!     async fn prompt(&self, _p: PromptRequest, cx: &PromptContext)
//!         -> Result<PromptResponse, Error> {
//!         cx.session().message_chunk("hello").await?;
//!         Ok(PromptResponse::new(StopReason::EndTurn))
//!     }
//! }
//!
//! # async fn run() {
//! let conn = serve_stdio(Echo);
//! conn.closed().await;
//! # }
//! ```
#![deny(missing_docs)]

mod agent;
/// The handle's old module path, kept for one release: use [`crate::handle`] (or the
/// items at the crate root).
#[doc(hidden)]
pub mod client {
    pub use crate::handle::{CAPABILITY_NOT_ADVERTISED, ClientHandle};
}
#[cfg(feature = "unstable_proxy_chains")]
pub mod conductor;
mod connection;
mod context;
pub mod cookbook;
mod dispatch;
#[rustfmt::skip]
mod generated;
pub mod handle;
pub mod legacy;
pub mod mcp;
pub mod negotiate;
#[cfg(feature = "unstable_proxy_chains")]
pub mod proxy;
mod record;
pub mod session;
mod state;
pub mod store;
#[cfg(feature = "test-support")]
mod store_measure;
mod sync;
#[cfg(feature = "v2")]
pub mod v2;

pub use agent::Agent;
pub use connection::{
    AgentConnection, serve, serve_as, serve_over_as, serve_stdio, serve_with, serve_with_store,
    serve_with_store_as, serve_with_store_over_as,
};
pub use context::{AgentContext, PromptContext};
pub use handle::{CAPABILITY_NOT_ADVERTISED, ClientHandle};
pub use session::{SessionHandle, ToolCallHandle};

/// Re-exported: connection configuration.
pub use acp_rpc::Config;
/// The error type of every call: a JSON-RPC error (code, message, optional data).
pub use acp_rpc::Error;
/// Re-exported: the code of an [`Error`], with the JSON-RPC and ACP codes as constants.
pub use acp_rpc::ErrorCode;
/// Re-exported: runs acp-store's conformance suite against a store (feature `test-support`).
#[cfg(feature = "test-support")]
pub use acp_store::session_store_conformance;
/// Re-exported: the protocol dialects, for pinning and negotiation ([`negotiate`]).
pub use acp_types::Dialect;
/// Re-exported: the v1 protocol types.
pub use acp_types::v1 as types;
/// Re-exported for implementing [`Agent`].
pub use async_trait::async_trait;
/// Re-exported: the cancellation token type of [`PromptContext`].
pub use tokio_util::sync::CancellationToken;
