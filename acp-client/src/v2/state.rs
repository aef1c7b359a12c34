//! The session as a v2 client keeps it: what [`SessionState::apply`] (generated from the
//! schema's `x-state` annotations) folds each `session/update` into. Each operation below is
//! named `<op>_<collection>` after an annotation; the generated `apply` picks one per update
//! kind.
//!
//! Patches follow the protocol: an absent field keeps what is there, `null` clears it (back
//! to the protocol default), a value replaces it; a list value replaces the whole list.
//! Entities the state has not seen start from their defaults.

use std::collections::BTreeMap;

use acp_types::Patch;
use acp_types::v2::{
    AgentMessage, AgentThought, AvailableCommand, AvailableCommandsUpdate, CompactionStatus,
    CompactionSummaryChunk, CompactionUpdate, ConfigOptionUpdate, ContentBlock, ContentChunk,
    IdleStateUpdate, MessageId, Notice, PlanUpdate, PlanUpdateContent, SessionConfigOption,
    SessionInfoUpdate, SessionStateUpdate, StateUpdate, TerminalCapabilities, TerminalExitStatus,
    TerminalOutputChunk, TerminalSize, TerminalUpdate, ToolCallCapabilities, ToolCallContent,
    ToolCallContentChunk, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolKind, UsageUpdate,
    UserMessage,
};
use base64::Engine as _;
use serde_json::Value;

/// Who a message is from (the three message update kinds of v2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageRole {
    /// `user_message` and `user_message_chunk`.
    User,
    /// `agent_message` and `agent_message_chunk`.
    Agent,
    /// `agent_thought` and `agent_thought_chunk`: the agent's reasoning.
    Thought,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Its id (`messageId`), the key its updates and chunks name.
    pub id: MessageId,
    /// Who it is from.
    pub role: MessageRole,
    /// Its content: a `*_message` update's `content` replaces it, a chunk appends to it.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// The text of its text blocks, joined (what a plain-text view shows).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// One tool call with its content. `None` fields are at their protocol default (no name, no
/// title, kind `other`, status `pending`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCall {
    /// `name`.
    pub name: Option<String>,
    /// `title`.
    pub title: Option<String>,
    /// `kind` (`None`: `other`).
    pub kind: Option<ToolKind>,
    /// `status` (`None`: `pending`).
    pub status: Option<ToolCallStatus>,
    /// `content`, replaced by an update's list and appended to by `tool_call_content_chunk`.
    pub content: Vec<ToolCallContent>,
    /// `locations`.
    pub locations: Vec<ToolCallLocation>,
    /// `rawInput`.
    pub raw_input: Option<Value>,
    /// `rawOutput`.
    pub raw_output: Option<Value>,
    /// `capabilities`.
    pub capabilities: Option<ToolCallCapabilities>,
}

/// One terminal with its output.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Terminal {
    /// `command`.
    pub command: Option<String>,
    /// `cwd`.
    pub cwd: Option<String>,
    /// The output bytes: an update's `output` replaces them, `terminal_output_chunk` appends.
    /// Chunks that are not valid base64 are dropped (and counted in `bad_chunks`).
    pub output: Vec<u8>,
    /// Output chunks that were not valid base64.
    pub bad_chunks: usize,
    /// `exitStatus`, once it exited.
    pub exit_status: Option<TerminalExitStatus>,
    /// `size`.
    pub size: Option<TerminalSize>,
    /// `capabilities`.
    pub capabilities: Option<TerminalCapabilities>,
}

/// One context compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// `status`.
    pub status: CompactionStatus,
    /// The summary: replaced by an update's `summary`, appended to by summary chunks.
    pub summary: Vec<ContentBlock>,
    /// `error`, when it failed.
    pub error: Option<String>,
}

/// A session as it is now, folded from its `session/update`s with [`SessionState::apply`].
#[derive(Debug, Clone, PartialEq)]
pub struct SessionState {
    /// The conversation, in the order messages first appeared.
    pub messages: Vec<Message>,
    /// Tool calls by id.
    pub tool_calls: BTreeMap<String, ToolCall>,
    /// Terminals by id.
    pub terminals: BTreeMap<String, Terminal>,
    /// Plans by id (each update replaces its plan whole).
    pub plans: BTreeMap<String, PlanUpdateContent>,
    /// Notices, in arrival order.
    pub notices: Vec<Notice>,
    /// The foreground state (`running`, `requires_action`, `idle` with its stop reason); a
    /// new session is idle.
    pub foreground: StateUpdate,
    /// The commands the agent offers now.
    pub commands: Vec<AvailableCommand>,
    /// The session's configuration options now.
    pub config_options: Vec<SessionConfigOption>,
    /// The session's title.
    pub title: Option<String>,
    /// When the session was last updated (as the agent reports it).
    pub updated_at: Option<String>,
    /// The latest context usage report.
    pub usage: Option<UsageUpdate>,
    /// Compactions by id.
    pub compactions: BTreeMap<String, Compaction>,
}

impl Default for SessionState {
    fn default() -> Self {
        SessionState {
            messages: Vec::new(),
            tool_calls: BTreeMap::new(),
            terminals: BTreeMap::new(),
            plans: BTreeMap::new(),
            notices: Vec::new(),
            foreground: StateUpdate::Idle(IdleStateUpdate::new()),
            commands: Vec::new(),
            config_options: Vec::new(),
            title: None,
            updated_at: None,
            usage: None,
            compactions: BTreeMap::new(),
        }
    }
}

/// The message update kinds' shared shape (`user_message`, `agent_message`, `agent_thought`).
pub(crate) trait MessagePatch {
    fn id(&self) -> &MessageId;
    fn content(&self) -> &Patch<Vec<ContentBlock>>;
}

macro_rules! message_patch {
    ($($ty:ty),*) => {$(
        impl MessagePatch for $ty {
            fn id(&self) -> &MessageId {
                &self.message_id
            }
            fn content(&self) -> &Patch<Vec<ContentBlock>> {
                &self.content
            }
        }
    )*};
}
message_patch!(UserMessage, AgentMessage, AgentThought);

fn list<T: Clone>(patch: &Patch<Vec<T>>, current: &mut Vec<T>) {
    match patch {
        Patch::Absent => {}
        Patch::Null => current.clear(),
        Patch::Value(v) => current.clone_from(v),
    }
}

fn decode(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

impl SessionState {
    fn message(&mut self, role: MessageRole, id: &MessageId) -> &mut Message {
        let at = match self.messages.iter().position(|m| &m.id == id) {
            Some(at) => at,
            None => {
                self.messages.push(Message {
                    id: id.clone(),
                    role,
                    content: Vec::new(),
                });
                self.messages.len() - 1
            }
        };
        &mut self.messages[at]
    }

    /// The message with this id, if any update named it.
    pub fn message_by_id(&self, id: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.id.0 == id)
    }

    pub(crate) fn append_messages(&mut self, role: MessageRole, chunk: &ContentChunk) {
        let content = chunk.content.clone();
        self.message(role, &chunk.message_id).content.push(content);
    }

    pub(crate) fn upsert_messages(&mut self, role: MessageRole, patch: &impl MessagePatch) {
        let message = self.message(role, patch.id());
        list(patch.content(), &mut message.content);
    }

    pub(crate) fn upsert_tool_calls(&mut self, u: &ToolCallUpdate) {
        let call = self.tool_calls.entry(u.tool_call_id.0.clone()).or_default();
        u.name.clone().apply_to(&mut call.name);
        u.title.clone().apply_to(&mut call.title);
        u.kind.clone().apply_to(&mut call.kind);
        u.status.clone().apply_to(&mut call.status);
        list(&u.content, &mut call.content);
        list(&u.locations, &mut call.locations);
        u.raw_input.clone().apply_to(&mut call.raw_input);
        u.raw_output.clone().apply_to(&mut call.raw_output);
        u.capabilities.clone().apply_to(&mut call.capabilities);
    }

    pub(crate) fn append_tool_calls(&mut self, chunk: &ToolCallContentChunk) {
        let call = self
            .tool_calls
            .entry(chunk.tool_call_id.0.clone())
            .or_default();
        call.content.push(chunk.content.clone());
    }

    pub(crate) fn upsert_terminals(&mut self, u: &TerminalUpdate) {
        let terminal = self.terminals.entry(u.terminal_id.0.clone()).or_default();
        u.command.clone().apply_to(&mut terminal.command);
        u.cwd.clone().map(|p| p.0).apply_to(&mut terminal.cwd);
        match &u.output {
            Patch::Absent => {}
            Patch::Null => terminal.output.clear(),
            Patch::Value(out) => match decode(&out.data) {
                Some(bytes) => terminal.output = bytes,
                None => terminal.bad_chunks += 1,
            },
        }
        u.exit_status.clone().apply_to(&mut terminal.exit_status);
        u.size.clone().apply_to(&mut terminal.size);
        u.capabilities.clone().apply_to(&mut terminal.capabilities);
    }

    pub(crate) fn append_terminals(&mut self, chunk: &TerminalOutputChunk) {
        let terminal = self
            .terminals
            .entry(chunk.terminal_id.0.clone())
            .or_default();
        match decode(&chunk.data) {
            Some(bytes) => terminal.output.extend(bytes),
            None => terminal.bad_chunks += 1,
        }
    }

    pub(crate) fn replace_plans(&mut self, u: &PlanUpdate) {
        let id = match &u.plan {
            PlanUpdateContent::Items(items) => Some(items.plan_id.0.clone()),
            PlanUpdateContent::Unknown(raw) => raw["planId"].as_str().map(str::to_string),
        };
        // A plan update without an id cannot name a plan: nothing to replace.
        if let Some(id) = id {
            self.plans.insert(id, u.plan.clone());
        }
    }

    pub(crate) fn append_notices(&mut self, notice: &Notice) {
        self.notices.push(notice.clone());
    }

    pub(crate) fn replace_foreground(&mut self, u: &SessionStateUpdate) {
        self.foreground = u.state.clone();
    }

    pub(crate) fn replace_commands(&mut self, u: &AvailableCommandsUpdate) {
        self.commands.clone_from(&u.available_commands);
    }

    pub(crate) fn replace_config_options(&mut self, u: &ConfigOptionUpdate) {
        self.config_options.clone_from(&u.config_options);
    }

    pub(crate) fn upsert_info(&mut self, u: &SessionInfoUpdate) {
        u.title.clone().apply_to(&mut self.title);
        u.updated_at.clone().apply_to(&mut self.updated_at);
    }

    pub(crate) fn upsert_usage(&mut self, u: &UsageUpdate) {
        self.usage = Some(u.clone());
    }

    pub(crate) fn upsert_compactions(&mut self, u: &CompactionUpdate) {
        let entry = self
            .compactions
            .entry(u.compaction_id.0.clone())
            .or_insert_with(|| Compaction {
                status: u.status.clone(),
                summary: Vec::new(),
                error: None,
            });
        entry.status = u.status.clone();
        // Absent keeps, `null` clears, a value replaces (the fields are `x-null-clears`).
        if let Some(summary) = &u.summary {
            entry.summary = summary.clone().unwrap_or_default();
        }
        if let Some(error) = &u.error {
            entry.error.clone_from(error);
        }
    }

    pub(crate) fn append_compactions(&mut self, chunk: &CompactionSummaryChunk) {
        let entry = self
            .compactions
            .entry(chunk.compaction_id.0.clone())
            .or_insert_with(|| Compaction {
                status: CompactionStatus::InProgress,
                summary: Vec::new(),
                error: None,
            });
        entry.summary.push(chunk.content.clone());
    }
}
