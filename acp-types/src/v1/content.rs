//! Conveniences the schema cannot express. Everything with a rule behind it (`new` with the
//! required fields, builder methods, `Union::variant(...)`, `From<Body>`) is generated; what
//! stays here is a choice the generator could not make: which content block a bare string
//! means, and the text-chunk updates agents send most.

use super::*;

/// A bare string is a text block: the prompt and message content people write most.
impl From<&str> for ContentBlock {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

/// A bare string is a text block: the prompt and message content people write most.
impl From<String> for ContentBlock {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl SessionUpdate {
    /// An `agent_message_chunk` with text.
    pub fn agent_message_text(text: impl Into<String>) -> Self {
        Self::agent_message_chunk(ContentBlock::text(text))
    }

    /// An `agent_thought_chunk` with text.
    pub fn agent_thought_text(text: impl Into<String>) -> Self {
        Self::agent_thought_chunk(ContentBlock::text(text))
    }

    /// A `user_message_chunk` with text (used when replaying history).
    pub fn user_message_text(text: impl Into<String>) -> Self {
        Self::user_message_chunk(ContentBlock::text(text))
    }
}
