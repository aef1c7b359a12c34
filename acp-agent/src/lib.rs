//! The agent side of the Agent Client Protocol.
//!
//! Implement [`Agent`] (only `initialize` is required; every other method answers "method
//! not found" until you implement it), then start it with the one front door, [`Builder`]:
//! what it speaks, what it keeps, where it runs.
//!
//! ```
//! use acp_agent::types::*;
//! use acp_agent::{Agent, AgentContext, Builder, Error, PromptContext};
//!
//! struct Echo;
//!
//! #[acp_agent::async_trait]
//! impl Agent for Echo {
//!     async fn initialize(&self, _: InitializeRequest, _: &AgentContext)
//!         -> Result<InitializeResponse, Error> {
//!         Ok(InitializeResponse::new(ProtocolVersion::V1)
//!             .agent_info(Implementation::new("echo", "0.1.0")))
//!     }
//!     async fn new_session(&self, _: NewSessionRequest, _: &AgentContext)
//!         -> Result<NewSessionResponse, Error> {
//!         Ok(NewSessionResponse::new("s1"))
//!     }
//!     async fn prompt(&self, _: PromptRequest, cx: &PromptContext)
//!         -> Result<PromptResponse, Error> {
//!         cx.session().message_chunk("hello").await?;
//!         Ok(PromptResponse::new(StopReason::EndTurn))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An editor runs the agent as a process: `Builder::new(Echo).stdio()`. Here the
//! // client is in this process, on the other end of an in-memory pipe.
//! let (conn, end) = Builder::new(Echo).pipe();
//! # struct Quiet;
//! # impl acp_client::Client for Quiet {}
//! # let client = acp_client::Builder::new(Quiet).over(end);
//! # client.agent().initialize(InitializeRequest::new(ProtocolVersion::V1)).await?;
//! # let s = client.agent().new_session(NewSessionRequest::new("/", [])).await?;
//! # let done = client.agent().prompt(PromptRequest::new(s.session_id, ["hi".into()])).await?;
//! # assert_eq!(done.stop_reason, StopReason::EndTurn);
//! # client.close();
//! conn.closed().await;
//! # Ok(()) }
//! ```
//!
//! The builder's other choices:
//!
//! * what it speaks: v1 (the default), [`Builder::negotiate`] for the dialects of a list
//!   (v1 and the legacy dialects compiled in: 0.0.9, threads, probe, crow; the dialect is
//!   detected from the client's first message, see [`negotiate`]), [`Builder::dialect`] for
//!   one legacy dialect ([`legacy`] has each one's mapping tables and native traits), and
//!   `Builder::v2` (feature `v2`) for v1 and draft v2 by the client's offer;
//! * what it keeps: [`Builder::store`], the sessions in a [`store::SessionStore`] (the
//!   embedded [`store::SqliteStore`] that every process on a machine can share, JSON Lines
//!   files, memory, or acp-store-postgres): `session/load`, `session/list` and the rest are
//!   then served by the connection;
//! * where it runs: [`Builder::stdio`], [`Builder::io`] (any reader/writer pair),
//!   [`Builder::over`] (any [`acp_rpc::transport::Transport`]) or [`Builder::pipe`] (in
//!   this process). Over WebSocket or HTTP, acp-remote's server runs the builder for each
//!   remote connection.
//!
//! [`cookbook`] has a longer agent (streaming, a tool call with a permission request, a file
//! read through the client); the `acp-client` crate's `cookbook` has the client that drives
//! it.
//!
//! The connection answers requests sent before `initialize`, negotiates the protocol
//! version, tracks sessions (`-32002` for unknown ones), turns `session/cancel` into the
//! prompt's cancellation token, refuses client calls the client did not advertise, and keeps
//! updates in order: an update for a new session is never written before the `session/new`
//! response (acp-rpc tells the connection when that response is on the wire), and every
//! update of a prompt is written before the prompt's response.
#![deny(missing_docs)]

mod agent;
pub mod builder;
#[cfg(feature = "unstable_proxy_chains")]
pub mod conductor;
mod connection;
mod context;
pub mod cookbook;
mod dispatch;
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
pub mod store_measure;
mod sync;
#[cfg(feature = "v2")]
pub mod v2;

pub use agent::Agent;
pub use builder::Builder;
pub use connection::AgentConnection;
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
