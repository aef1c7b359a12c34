//! How each kind of `session/update` is drawn on the transcript ([`Term::update`]): agent
//! text streamed behind the gutter, tool calls as one line rewritten as they change, plans as
//! checklists, and one line each for commands, modes, titles and notices.

use acp_types::v1::*;

use crate::sanitize::terminal_safe;

use super::block_text;
use super::term::{Block, Term, Tool};

impl Term {
    /// Draws one update.
    pub(super) fn update(&mut self, update: &SessionUpdate) {
        match update {
            SessionUpdate::AgentMessageChunk(c) => {
                self.stream(Block::Message, &block_text(&c.content))
            }
            SessionUpdate::AgentThoughtChunk(c) => {
                self.stream(Block::Thought, &block_text(&c.content))
            }
            SessionUpdate::UserMessageChunk(c) => match self.replayed_turns {
                // A prompt of the loaded conversation: shown as it was typed, after the
                // line that ended the turn before it.
                Some(turns) => {
                    if turns > 0 {
                        let line = format!("{}──{}", self.style("dim"), self.style("reset"));
                        self.ui_line(&line);
                    }
                    self.replayed_turns = Some(turns + 1);
                    let text = block_text(&c.content);
                    self.ui_line(&format!("you> {}", terminal_safe(&text).replace('\n', " ")));
                }
                None => self.stream(Block::User, &block_text(&c.content)),
            },
            SessionUpdate::ToolCall(call) => {
                let id = call.tool_call_id.0.clone();
                self.newline_if_needed();
                self.block = Block::None;
                let tool = Tool::new(
                    call.title.clone(),
                    call.kind.to_string(),
                    call.status.clone(),
                    self.row,
                );
                let header = self.tool_header(&tool);
                self.tools.insert(id.clone(), tool);
                self.raw(&header);
                self.raw("\n");
                self.tool_content(&id, &call.content);
            }
            SessionUpdate::ToolCallUpdate(u) => {
                let id = u.tool_call_id.0.clone();
                let known = self.tools.contains_key(&id);
                if !known {
                    // An update for a call never announced: show it as one.
                    self.newline_if_needed();
                    self.block = Block::None;
                    let tool = Tool::new(
                        u.title.clone().unwrap_or_else(|| id.clone()),
                        u.kind
                            .as_ref()
                            .map(|k| k.to_string())
                            .unwrap_or_else(|| "other".into()),
                        u.status.clone().unwrap_or(ToolCallStatus::Pending),
                        self.row,
                    );
                    let header = self.tool_header(&tool);
                    self.tools.insert(id.clone(), tool);
                    self.raw(&header);
                    self.raw("\n");
                } else {
                    let mut status_changed = false;
                    if let Some(tool) = self.tools.get_mut(&id) {
                        if let Some(title) = &u.title {
                            tool.title = title.clone();
                        }
                        if let Some(status) = &u.status {
                            status_changed = *status != tool.status;
                            tool.status = status.clone();
                        }
                    }
                    self.tool_status(&id, status_changed);
                }
                // `content` replaces the call's content; absent, it is unchanged.
                if let Some(content) = &u.content {
                    self.tool_content(&id, content);
                }
            }
            SessionUpdate::Plan(plan) => self.plan(plan),
            SessionUpdate::AvailableCommandsUpdate(c) => {
                let names: Vec<String> = c
                    .available_commands
                    .iter()
                    .map(|c| format!("/{}", terminal_safe(&c.name)))
                    .collect();
                if names != self.commands {
                    self.commands = names.clone();
                    let line = format!(
                        "{}commands: {}{}",
                        self.style("dim"),
                        names.join(" "),
                        self.style("reset")
                    );
                    self.ui_line(&line);
                }
            }
            SessionUpdate::CurrentModeUpdate(m) => {
                let line = format!(
                    "{}mode: {}{}",
                    self.style("cyan"),
                    terminal_safe(&m.current_mode_id.0),
                    self.style("reset")
                );
                self.ui_line(&line);
            }
            SessionUpdate::ConfigOptionUpdate(_) => {}
            SessionUpdate::SessionInfoUpdate(info) => {
                // Only a title change is worth a line (`updatedAt` moves with every turn).
                if let Some(title) = &info.title {
                    let text = match title {
                        Some(title) => format!("title: {}", crate::offers::title_text(title)),
                        None => "title cleared".to_owned(),
                    };
                    let line = format!("{}{text}{}", self.style("cyan"), self.style("reset"));
                    self.ui_line(&line);
                }
            }
            SessionUpdate::UsageUpdate(_) => {}
            SessionUpdate::Notice(n) => {
                let text = serde_json::to_value(n)
                    .ok()
                    .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
                    .unwrap_or_else(|| "notice".into());
                let line = format!(
                    "{}notice: {}{}",
                    self.style("yellow"),
                    terminal_safe(&text).replace('\n', " "),
                    self.style("reset")
                );
                self.ui_line(&line);
            }
            SessionUpdate::CompactionUpdate(_) | SessionUpdate::CompactionSummaryChunk(_) => {}
            SessionUpdate::Unknown(_) => {}
            // Kinds an unstable feature adds (e.g. `unstable_session_cursors`' cursor updates)
            // when something else in the build turns it on: not shown yet.
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
}
