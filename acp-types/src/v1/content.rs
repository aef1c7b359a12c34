//! Constructors for the messages agents and clients build most often.

use super::*;

impl ContentBlock {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            annotations: None,
            text: text.into(),
            meta: None,
        })
    }
}

impl From<&str> for ContentBlock {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<String> for ContentBlock {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl ContentChunk {
    /// A chunk carrying one content block.
    pub fn new(content: impl Into<ContentBlock>) -> Self {
        Self {
            content: content.into(),
            message_id: None,
            meta: None,
        }
    }
}

impl SessionUpdate {
    /// An `agent_message_chunk` with text.
    pub fn agent_message_text(text: impl Into<String>) -> Self {
        Self::AgentMessageChunk(ContentChunk::new(ContentBlock::text(text)))
    }

    /// An `agent_thought_chunk` with text.
    pub fn agent_thought_text(text: impl Into<String>) -> Self {
        Self::AgentThoughtChunk(ContentChunk::new(ContentBlock::text(text)))
    }

    /// A `user_message_chunk` with text (used when replaying history).
    pub fn user_message_text(text: impl Into<String>) -> Self {
        Self::UserMessageChunk(ContentChunk::new(ContentBlock::text(text)))
    }
}

impl SessionNotification {
    /// A `session/update` for `session_id`.
    pub fn new(session_id: impl Into<SessionId>, update: SessionUpdate) -> Self {
        Self {
            session_id: session_id.into(),
            update,
            meta: None,
        }
    }
}

impl ToolCall {
    /// A pending tool call of kind `other` with no content yet.
    pub fn new(id: impl Into<ToolCallId>, title: impl Into<String>) -> Self {
        Self {
            tool_call_id: id.into(),
            title: title.into(),
            name: None,
            kind: ToolKind::default(),
            status: ToolCallStatus::default(),
            content: Vec::new(),
            locations: Vec::new(),
            raw_input: None,
            raw_output: None,
            meta: None,
        }
    }
}

impl RequestPermissionOutcome {
    /// The user picked the option `option_id`.
    pub fn selected(option_id: impl Into<PermissionOptionId>) -> Self {
        Self::Selected(SelectedPermissionOutcome {
            option_id: option_id.into(),
            meta: None,
        })
    }
}

impl PromptResponse {
    /// A prompt result with only a stop reason.
    pub fn new(stop_reason: StopReason) -> Self {
        Self {
            stop_reason,
            meta: None,
        }
    }
}
