//! Conveniences the schema cannot express. Everything with a rule behind it (`new` with the
//! required fields, builder methods, `Union::variant(...)`, `From<Body>`) is generated; what
//! stays here is a choice the generator could not make: which content block a bare string
//! means, the text-chunk updates agents send most, and how a tool call and its updates
//! fold into one another.

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

impl ToolCall {
    /// Folds a `tool_call_update` into the call it updates: the fields the update sets
    /// replace the call's, as a client showing the call applies them (the inverse of
    /// `From<ToolCall> for ToolCallUpdate`).
    pub fn apply_update(&mut self, update: &ToolCallUpdate) {
        if let Some(kind) = &update.kind {
            self.kind = kind.clone();
        }
        if let Some(status) = &update.status {
            self.status = status.clone();
        }
        if let Some(title) = &update.title {
            self.title.clone_from(title);
        }
        if let Some(name) = &update.name {
            self.name = Some(name.clone());
        }
        if let Some(content) = &update.content {
            self.content.clone_from(content);
        }
        if let Some(locations) = &update.locations {
            self.locations.clone_from(locations);
        }
        if let Some(raw) = &update.raw_input {
            self.raw_input = Some(raw.clone());
        }
        if let Some(raw) = &update.raw_output {
            self.raw_output = Some(raw.clone());
        }
    }
}

/// The update that states a whole tool call: what `session/request_permission` asks about and
/// what a client shows for a call it has not seen announced. Empty lists stay absent, so the
/// update carries exactly what the call says.
impl From<ToolCall> for ToolCallUpdate {
    fn from(call: ToolCall) -> Self {
        let mut update = ToolCallUpdate::new(call.tool_call_id)
            .title(call.title)
            .kind(call.kind)
            .status(call.status);
        update.name = call.name;
        update.content = non_empty(call.content);
        update.locations = non_empty(call.locations);
        update.raw_input = call.raw_input;
        update.raw_output = call.raw_output;
        update.meta = call.meta;
        update
    }
}

fn non_empty<T>(items: Vec<T>) -> Option<Vec<T>> {
    (!items.is_empty()).then_some(items)
}
