//! The 0.0.9 dialect on the client side: the `pushToolCall` protocol Gemini CLI spoke before
//! v1, with a string `protocolVersion`, one implicit conversation, and no notifications (see
//! `acp_types::legacy` for who serves what).
//!
//! * Native: implement [`Client`] and [`connect`] it; [`AgentHandle`] calls the agent's
//!   methods.

mod native;

pub use native::{AgentHandle, Client, Connection, connect, connect_with};
