//! The draft ACP v2 protocol: every type of `acp-schema/schemas/v2.json` and its method
//! table ([`METHODS`], [`names`]) and message enums.
//!
//! v2 is what the official SDKs ship as a preview (`unstable_protocol_v2` in the Rust schema
//! crate 1.20.0, `experimental/v2` in the TypeScript SDK 2.4.0). What it changes from v1:
//! a role-neutral `initialize` (`info`, `capabilities`), `auth/login` and `auth/logout`,
//! `session/resume` with `replayFrom` instead of `session/load`, prompts answered when
//! inserted (`{messageId}`) with the turn's end reported by a `state_update`, and session
//! updates as upserts whose changed fields are [`Patch`](crate::Patch)es (absent keeps,
//! `null` clears, a value replaces).
//!
//! Every enum and union is open: a value this schema does not know (such as a `_`-prefixed
//! extension value) is kept in its `Unknown` variant and written back byte for byte.
//!
//! ```
//! use acp_types::{Patch, v2::*};
//!
//! let update: SessionUpdate = serde_json::from_str(
//!     r#"{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":null,"status":"_paused_by_hook"}"#,
//! ).unwrap();
//! let SessionUpdate::ToolCallUpdate(call) = &update else { panic!() };
//! assert_eq!(call.title, Patch::Null);
//! assert_eq!(call.name, Patch::Absent);
//! assert_eq!(call.status.value().map(|s| s.as_str()), Some("_paused_by_hook"));
//! ```

mod streamed;

pub use crate::generated::v2::methods::*;
pub use crate::generated::v2::types::*;

impl IdempotencyKey {
    /// The longest key, in characters (not bytes): the schema's `maxLength`, checked by
    /// [`IdempotencyKey::try_from`] and when a `session/prompt` is read.
    pub const MAX_LENGTH: usize = 255;

    /// The key as text.
    pub fn as_str(&self) -> &str {
        self
    }
}
