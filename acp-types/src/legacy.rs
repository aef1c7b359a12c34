//! The legacy dialects real agents and editors shipped before ACP v1, each behind its feature.
//!
//! 0.0.9 and threads have no notifications: every call is a request and is answered. Both
//! number requests per side from 0, so ids of the two directions collide (a message is a
//! request iff it has a `method`). probe is plain JSON-RPC 2.0 with notifications. Who
//! serves what:
//!
//! | dialect | the agent serves | the editor (client) serves |
//! | --- | --- | --- |
//! | [`v0_0_9`] | `initialize`, `authenticate`, `sendUserMessage`, `cancelSendMessage` | `streamAssistantMessageChunk`, `requestToolCallConfirmation`, `pushToolCall`, `updateToolCall`, `writeTextFile`, `readTextFile` |
//! | [`threads`] | `getThreads`, `createThread`, `openThread`, `getThreadEntries`, `sendMessage` | `streamMessageChunk`, `readTextFile`, `readBinaryFile`, `stat`, `globSearch` |
//! | [`crow`] | `initialize`, `session/new`, `session/load`, `session/prompt`, `cancel`; notification `permission_response` | notification `session/update` |
//! | [`probe`] | `initialize`, `newSession`, `loadSession`, `setSessionMode`, `prompt`, `cancel` | `readTextFile`, `writeTextFile`; notifications `toolCallProgress`, `messageChunk`, `sessionUpdated` |
//!
//! The first description of the threads protocol listed its thread methods as
//! "agent-initiated" and its file methods as "client-initiated". By what each method does (and
//! by the code of that time) it is the other way round: the editor calls the thread methods,
//! which the agent serves, and the agent calls the file methods, which the editor serves. These
//! types follow the code.

#[cfg(feature = "legacy-0-0-9")]
pub mod v0_0_9 {
    //! The 0.0.9 dialect: every type of `acp-schema/schemas/legacy-0.0.9.json`, its method
    //! table ([`METHODS`], [`names`]) and its message enums.
    //!
    //! ```
    //! use acp_types::legacy::v0_0_9::*;
    //!
    //! let push = PushToolCallResponse::new(ToolCallId(3));
    //! assert_eq!(serde_json::to_string(&push).unwrap(), r#"{"id":3}"#);
    //! ```
    pub use crate::generated::legacy_0_0_9::methods::*;
    pub use crate::generated::legacy_0_0_9::types::*;

    /// The version string of this dialect, as sent in `initialize`.
    pub const PROTOCOL_VERSION: &str = "0.0.9";

    /// The empty version: what an `initialize` whose `protocolVersion` is not a string (a
    /// v1 client's integer) reads as.
    impl Default for ProtocolVersion {
        fn default() -> Self {
            ProtocolVersion(String::new())
        }
    }

    impl ProtocolVersion {
        /// This dialect's version, `"0.0.9"`.
        pub fn current() -> Self {
            ProtocolVersion(PROTOCOL_VERSION.to_string())
        }
    }

    #[cfg(feature = "v1")]
    pub mod convert;
}

#[cfg(feature = "legacy-threads")]
pub mod threads {
    //! The threads dialect: every type of `acp-schema/schemas/threads.json`, its method table
    //! ([`METHODS`], [`names`]) and its message enums.
    //!
    //! ```
    //! use acp_types::legacy::threads::*;
    //!
    //! let chunk = StreamMessageChunkParams::new("t1", MessageChunk::text("hi"));
    //! assert_eq!(
    //!     serde_json::to_string(&chunk).unwrap(),
    //!     r#"{"threadId":"t1","chunk":{"type":"text","chunk":"hi"}}"#
    //! );
    //! ```
    pub use crate::generated::threads::methods::*;
    pub use crate::generated::threads::types::*;
}

#[cfg(feature = "probe")]
pub mod probe {
    //! The probe dialect: every type of `acp-schema/schemas/probe.json`, its method table
    //! ([`METHODS`], [`names`]) and its message enums. Unlike the other legacy dialects it
    //! is plain JSON-RPC 2.0 with notifications (`toolCallProgress`, `messageChunk`,
    //! `sessionUpdated`, which the editor receives).
    //!
    //! ```
    //! use acp_types::legacy::probe::*;
    //!
    //! let chunk = MessageChunkParams::new("abc123", "The authentication system", 0);
    //! assert_eq!(
    //!     serde_json::to_string(&chunk).unwrap(),
    //!     r#"{"sessionId":"abc123","chunk":"The authentication system","index":0}"#
    //! );
    //! ```
    pub use crate::generated::probe::methods::*;
    pub use crate::generated::probe::types::*;

    /// The version string of this dialect, as sent in `initialize`: the string `"1"`.
    pub const PROTOCOL_VERSION: &str = "1";

    /// How long a request waits for its answer unless the connection says otherwise: the
    /// dialect's own default.
    pub const DEFAULT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

    impl ProtocolVersion {
        /// This dialect's version, `"1"`.
        pub fn current() -> Self {
            ProtocolVersion(PROTOCOL_VERSION.to_string())
        }
    }

    #[cfg(feature = "v1")]
    pub mod convert;
}

#[cfg(feature = "crow")]
pub mod crow {
    //! The crow dialect: every type of `acp-schema/schemas/crow.json`, its method table
    //! ([`METHODS`], [`names`]) and its message enums. v1's methods in snake_case, with
    //! `@type`-tagged updates.
    //!
    //! ```
    //! use acp_types::legacy::crow::*;
    //!
    //! let update = SessionUpdateParams::new("uuid-string", SessionUpdate::agent_message_text("hi"));
    //! assert_eq!(
    //!     serde_json::to_string(&update).unwrap(),
    //!     r#"{"sessionId":"uuid-string","update":{"@type":"agent_message_text","text":"hi"}}"#
    //! );
    //! ```
    pub use crate::generated::crow::methods::*;
    pub use crate::generated::crow::types::*;

    #[cfg(feature = "v1")]
    pub mod convert;
}
