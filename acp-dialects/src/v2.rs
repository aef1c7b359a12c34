//! Draft protocol v2's two sides: an agent that serves a v2 client ([`serve`]) and a client
//! that drives a v2 agent ([`connect`]), generated from v2's method table (the file
//! `src/generated/v2.rs`), over the types of `acp_types::v2`.
//!
//! An agent implements [`Agent`] (requests run concurrently; `initialize` and every other
//! request answer `-32601` unless implemented) and calls its client through
//! [`ClientHandle`] (`session/update`, `session/request_permission`, `elicitation/*`); a
//! client implements [`Client`] (the agent's requests handled one at a time, in order) and
//! calls the agent through [`AgentHandle`]. The wire is JSON-RPC 2.0, one message per line,
//! as v1's; anything that carries lines or messages (stdio, acp-remote's transports) carries
//! it. acp-agent and acp-client re-export these as `acp_agent::v2` and `acp_client::v2`.
//!
//! v2 has no translation to or from v1 here: a peer speaks it natively.

#[path = "generated/v2.rs"]
#[rustfmt::skip]
mod native;

pub use native::{
    Agent, AgentConnection, AgentHandle, Client, ClientConnection, ClientHandle, Context, connect,
    connect_with, serve, serve_with,
};

/// The v2 wire: JSON-RPC 2.0 as v1's (`"jsonrpc"` required and written, notifications,
/// numeric request ids), and batches answered (of at most [`acp_rpc::DEFAULT_MAX_BATCH`]
/// messages; v1 refuses them, as the official SDKs do): the v2 draft's conformance suite
/// requires an agent to answer one as JSON-RPC 2.0 says. Neither side ever sends one.
pub fn framing() -> acp_rpc::Framing {
    acp_rpc::Framing::default().answer_batches(acp_rpc::DEFAULT_MAX_BATCH)
}
