//! Draft protocol v2 on the agent side: serve a client that speaks v2.
//!
//! Implement [`Agent`] (at least `initialize`, answering `protocolVersion: 2`) and start it
//! with [`serve`] on the client's stdin and stdout (or any line transport). The agent calls
//! its client through the [`ClientHandle`] in each request's [`Context`]: `session_update`
//! for the session's upserts, `session_request_permission`, `elicitation_create`. The types
//! are [`acp_types::v2`], re-exported here as [`types`].
//!
//! The sides are generated from v2's method table (acp-dialects' `v2` module); v1's session
//! bookkeeping, store and prompt streams are v1 only.

pub use acp_dialects::v2::{Agent, AgentConnection, ClientHandle, Context, serve, serve_with};
pub use acp_types::v2 as types;

mod versions;

pub use versions::{Served, VersionError, serve_versions};
