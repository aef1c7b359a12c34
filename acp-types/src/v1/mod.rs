//! The stable ACP v1 protocol: every type of `acp-schema/schemas/v1.json`, the method table
//! ([`METHODS`], [`names`]) and the message enums ([`ClientRequest`], [`AgentResponse`], ...),
//! plus hand-written conveniences (constructors, `From` impls, error helpers, version
//! helpers) in the files next to this one.
//!
//! ```
//! use acp_types::v1::*;
//!
//! let update = SessionUpdate::agent_message_text("Hello");
//! let json = serde_json::to_value(SessionNotification::new("sess-1", update)).unwrap();
//! assert_eq!(json["update"]["sessionUpdate"], "agent_message_chunk");
//! assert_eq!(json["update"]["content"]["text"], "Hello");
//! ```

mod content;
mod errors;
mod ids;
mod streamed;
mod version;

pub use crate::generated::v1::methods::*;
pub use crate::generated::v1::types::*;
