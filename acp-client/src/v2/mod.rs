//! Draft protocol v2 on the client side: drive an agent that speaks v2.
//!
//! Implement [`Client`] (its `session_update` receives the session's upserts; every request
//! answers `-32601` unless implemented) and start it with [`connect`] on the agent's stdout
//! and stdin (or any line transport); call the agent through the returned connection's
//! [`AgentHandle`]. The types are [`acp_types::v2`], re-exported here as [`types`].
//!
//! The sides are generated from v2's method table (acp-dialects' `v2` module).
//!
//! [`SessionState`] folds a session's `session/update`s into the session as it is now
//! (messages, tool calls with their content, terminals with their output, plans, notices,
//! the foreground state); its `apply` is generated from the schema's `x-state` annotations.
//!
//! ```
//! use acp_client::v2::{MessageRole, SessionState};
//! use acp_client::v2::types::SessionUpdate;
//!
//! let mut state = SessionState::default();
//! for line in [
//!     r#"{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"Hel"}}"#,
//!     r#"{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"lo"}}"#,
//! ] {
//!     let update: SessionUpdate = serde_json::from_str(line).unwrap();
//!     state.apply(&update);
//! }
//! assert_eq!(state.messages[0].role, MessageRole::Agent);
//! assert_eq!(state.messages[0].text(), "Hello");
//! ```

#[path = "../generated/v2_state.rs"]
#[rustfmt::skip]
mod generated_state;
mod state;

pub use state::{Compaction, Message, MessageRole, SessionState, Terminal, ToolCall};

pub use acp_dialects::v2::{AgentHandle, Client, ClientConnection, Context, connect, connect_with};
pub use acp_types::v2 as types;

pub(crate) mod versions;

pub use versions::{Connected, Offer, VersionError};

/// Drives an agent that speaks v2 (its stdout is `reader`, its stdin `writer`) with a v1
/// `client` (the crate's [`crate::Client`]), through acp-dialects' v1<->v2 translation, and
/// gives back an ordinary v1 [`crate::ClientConnection`]. The mapping, and what cannot be
/// mapped, is in `acp_dialects::v2`'s module docs.
pub fn connect_v1<C: crate::Client>(
    client: C,
    reader: impl acp_dialects::Input,
    writer: impl acp_dialects::Output,
    options: acp_dialects::AdapterOptions,
) -> crate::ClientConnection {
    let mut user = None;
    let start = |end| {
        let conn = user.insert(crate::Builder::new(client).over(end));
        conn.peer().clone()
    };
    acp_dialects::v2::drive_for_v1_client(start, reader, writer, options);
    user.expect("the translation starts the v1 client before it returns")
}
