//! Draft protocol v2 on the client side: drive an agent that speaks v2.
//!
//! Implement [`Client`] (its `session_update` receives the session's upserts; every request
//! answers `-32601` unless implemented) and start it with [`connect`] on the agent's stdout
//! and stdin (or any line transport); call the agent through the returned connection's
//! [`AgentHandle`]. The types are [`acp_types::v2`], re-exported here as [`types`].
//!
//! The sides are generated from v2's method table (acp-dialects' `v2` module).
//!
//! A prompt that may have to be sent again (the answer was lost with the connection) carries
//! an `idempotencyKey`: make one per submission with [`new_idempotency_key`] (or
//! `IdempotencyKey::try_from` your own, 1 to 255 characters), keep it with the pending input
//! and send it on every attempt; the agent answers a retry with the first attempt's
//! `messageId` and inserts nothing twice.
//!
//! ```
//! use acp_client::v2::{new_idempotency_key, types::{ContentBlock, PromptRequest}};
//!
//! let key = new_idempotency_key();
//! let prompt = PromptRequest::new("sess-1", [ContentBlock::text("hi")]).idempotency_key(key.clone());
//! assert_ne!(key, new_idempotency_key());
//! assert_eq!(serde_json::to_value(&prompt).unwrap()["idempotencyKey"], key.as_str());
//! ```
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

pub use acp_dialects::v2::{
    AgentHandle, Client, ClientConnection, Context, connect, connect_over, connect_with,
};
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
        // What `Builder::new(client).over(end)` makes, from below: the builder depends on v2.
        let conn = user.insert(crate::ClientConnection::start(
            std::sync::Arc::new(client),
            end,
            acp_rpc::Config::default(),
        ));
        conn.peer().clone()
    };
    acp_dialects::v2::drive_for_v1_client(start, reader, writer, options);
    user.expect("the translation starts the v1 client before it returns")
}

/// Drives an agent that speaks v1 (its stdout is `reader`, its stdin `writer`) with a v2
/// `client` (this module's [`Client`]), through acp-dialects' v1<->v2 translation (the
/// mapping of "A v1 agent in front of a v2 client" in `acp_dialects::v2`), and gives back
/// an ordinary v2 [`ClientConnection`]: prompts are answered when inserted and the turn ends
/// with `state_update` idle, modes are a config option. The agent's `fs/*` and `terminal/*`
/// calls (a v2 client has neither) are served with `options`' files and local terminals, or
/// refused.
pub fn connect_to_v1(
    client: impl Client,
    reader: impl acp_dialects::Input,
    writer: impl acp_dialects::Output,
    options: acp_dialects::AdapterOptions,
) -> ClientConnection {
    let mut user = None;
    let start = |end| {
        let conn = user.insert(connect_over(client, end, acp_rpc::Config::default()));
        conn.peer().clone()
    };
    acp_dialects::v2::drive_v1_agent_for_v2_client(start, reader, writer, options);
    user.expect("the translation starts the v2 client before it returns")
}

/// A fresh `idempotencyKey` for one prompt submission: the process id, the time in
/// nanoseconds and a per-process counter (`acp-rs-<pid>-<nanos>-<n>`, under 60 characters),
/// so keys differ within a process and, in practice, across processes and restarts. Send
/// the same key on every attempt of that submission.
pub fn new_idempotency_key() -> types::IdempotencyKey {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let key = format!("acp-rs-{:x}-{nanos:x}-{n:x}", std::process::id());
    types::IdempotencyKey::try_from(key).expect("a generated key is 1 to 255 characters")
}
