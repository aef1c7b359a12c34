//! The stable ACP v1 protocol: every type of `acp-schema/schemas/v1.json`, the method table and
//! the message enums, plus hand-written conveniences.

pub use crate::generated::v1::methods::*;
pub use crate::generated::v1::types::*;
