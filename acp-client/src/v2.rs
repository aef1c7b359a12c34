//! Draft protocol v2 on the client side: drive an agent that speaks v2.
//!
//! Implement [`Client`] (its `session_update` receives the session's upserts; every request
//! answers `-32601` unless implemented) and start it with [`connect`] on the agent's stdout
//! and stdin (or any line transport); call the agent through the returned connection's
//! [`AgentHandle`]. The types are [`acp_types::v2`], re-exported here as [`types`].
//!
//! The sides are generated from v2's method table (acp-dialects' `v2` module).

pub use acp_dialects::v2::{AgentHandle, Client, ClientConnection, Context, connect, connect_with};
pub use acp_types::v2 as types;
