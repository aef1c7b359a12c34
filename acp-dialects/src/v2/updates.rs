//! `session/update` both ways: a v1 agent's updates as v2 upserts ([`ToV2`]), a v2
//! agent's upserts as v1 updates ([`ToV1`]). Each keeps what one session needs to map the
//! next update (message ids, the modes, the tool calls already shown).

use std::collections::{HashMap, HashSet};

use acp_types::{v1, v2};
use serde_json::{Value, json};

use super::map::{
    MODEL_OPTION, commands_to_v1, commands_to_v2, content_to_v1, content_to_v2, map_content,
    modes_of, option_to_v1, option_to_v2, options_with_modes, v1_facing, with_models,
};

/// Why an update was not passed on (logged at `warn` with the session and the kind).
pub(crate) type Dropped = String;

/// What [`ToV2::text_chunk`] made of a v1 update.
pub(crate) enum Streamed {
    /// A text chunk, mapped to v2's.
    Text(v2::SessionUpdate),
    /// Any other update, handed back as it came (for [`ToV2::update`]).
    Other(v1::SessionUpdate),
}

/// One v1 session as its v2 client sees it.
#[derive(Default)]
pub(crate) struct ToV2 {
    /// The v1 agent's modes (`SessionModeState`), shown as a config option.
    pub(crate) modes: Option<Value>,
    /// The v1 agent's models (`SessionModelState`, unstable), shown as a config option.
    pub(crate) models: Option<Value>,
    /// The v1 agent's own config options.
    pub(crate) config: Vec<Value>,
    /// The kind and id of the message the last chunk belonged to.
    message: Option<(String, String)>,
    seq: u64,
    /// Tool call titles, for a permission request's title.
    pub(crate) titles: HashMap<String, String>,
}

impl ToV2 {
    /// A fresh message id for the session (`<prefix>-<n>`).
    pub(crate) fn next_id(&mut self, prefix: &str) -> String {
        self.seq += 1;
        format!("{prefix}-{}", self.seq)
    }

    /// The id of the message a v1 chunk of `kind` without `messageId` belongs to: the
    /// previous chunk's when it was of the same kind with nothing between, else a new one.
    fn chunk_id(&mut self, kind: &str) -> String {
        if let Some((k, id)) = &self.message
            && k == kind
        {
            return id.clone();
        }
        let prefix = match kind {
            "user_message_chunk" => "user",
            "agent_thought_chunk" => "thought",
            _ => "agent",
        };
        let id = self.next_id(prefix);
        self.message = Some((kind.to_string(), id.clone()));
        id
    }

    /// Ends the current message: the next chunk starts a new one (a turn's end, a tool call).
    pub(crate) fn break_message(&mut self) {
        self.message = None;
    }

    /// The config options the v2 client sees (the agent's own, its modes and its models).
    pub(crate) fn options(&self) -> Vec<Value> {
        let own: Vec<Value> = self.config.iter().cloned().map(option_to_v2).collect();
        with_models(
            options_with_modes(&own, self.modes.as_ref()),
            self.models.as_ref(),
        )
    }

    /// Whether `config_id` names the option made of the v1 agent's models (not one of its
    /// own).
    pub(crate) fn is_models_option(&self, config_id: &Value) -> bool {
        *config_id == MODEL_OPTION
            && self.models.is_some()
            && !self.config.iter().any(|o| o["id"] == MODEL_OPTION)
            && !self
                .config
                .iter()
                .any(|o| o.get("category").and_then(Value::as_str) == Some("model"))
    }

    /// A v1 streamed chunk of plain text (a text block without annotations: what a turn
    /// streams by the thousand) as the v2 chunk, typed, without [`ToV2::update`]'s detour
    /// through JSON; the same mapping (the chunk's `messageId`, or the current message's).
    /// Any other update is handed back, for [`ToV2::update`].
    pub(crate) fn text_chunk(&mut self, update: v1::SessionUpdate) -> Streamed {
        use v1::SessionUpdate as V1;
        use v1::{ContentBlock::Text, ContentChunk as Chunk};
        let plain = |t: &v1::TextContent, extra: &acp_types::Extra| {
            t.annotations.is_none() && t.extra.is_empty() && extra.is_empty()
        };
        // A field v1's chunk gains later (the type is non-exhaustive) must be mapped here too:
        // `the_typed_text_chunk_path_maps_as_the_json_path_does` compares the two paths.
        let (kind, text, message_id, meta) = match update {
            V1::UserMessageChunk(Chunk {
                content: Text(text),
                message_id,
                meta,
                extra,
                ..
            }) if plain(&text, &extra) => ("user_message_chunk", text, message_id, meta),
            V1::AgentMessageChunk(Chunk {
                content: Text(text),
                message_id,
                meta,
                extra,
                ..
            }) if plain(&text, &extra) => ("agent_message_chunk", text, message_id, meta),
            V1::AgentThoughtChunk(Chunk {
                content: Text(text),
                message_id,
                meta,
                extra,
                ..
            }) if plain(&text, &extra) => ("agent_thought_chunk", text, message_id, meta),
            other => return Streamed::Other(other),
        };
        let message_id = match message_id {
            Some(id) => {
                self.break_message();
                id.0
            }
            None => self.chunk_id(kind),
        };
        let mut content = v2::TextContent::new(text.text);
        content.meta = text.meta;
        let mut chunk = v2::ContentChunk::new(message_id, v2::ContentBlock::Text(content));
        chunk.meta = meta;
        Streamed::Text(match kind {
            "user_message_chunk" => v2::SessionUpdate::UserMessageChunk(chunk),
            "agent_thought_chunk" => v2::SessionUpdate::AgentThoughtChunk(chunk),
            _ => v2::SessionUpdate::AgentMessageChunk(chunk),
        })
    }

    /// A v1 update (as JSON) as the v2 update (as JSON) the client gets.
    pub(crate) fn update(&mut self, mut u: Value) -> Result<Value, Dropped> {
        let kind = u["sessionUpdate"].as_str().unwrap_or_default().to_string();
        match kind.as_str() {
            "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
                if u.get("messageId").is_none_or(Value::is_null) {
                    u["messageId"] = json!(self.chunk_id(&kind));
                } else {
                    self.break_message();
                }
                return Ok(u);
            }
            "tool_call" | "tool_call_update" => {
                u["sessionUpdate"] = json!("tool_call_update");
                map_content(&mut u, content_to_v2);
                if let (Some(id), Some(title)) = (u["toolCallId"].as_str(), u["title"].as_str()) {
                    self.titles.insert(id.to_string(), title.to_string());
                }
            }
            "plan" => {
                let entries = u.get("entries").cloned().unwrap_or_else(|| json!([]));
                u = json!({"sessionUpdate": "plan_update",
                    "plan": {"type": "items", "planId": "plan", "entries": entries}});
            }
            "available_commands_update" => commands_to_v2(&mut u["availableCommands"]),
            "current_mode_update" => {
                let Some(modes) = &mut self.modes else {
                    return Err("current_mode_update for a session with no modes".into());
                };
                modes["currentModeId"] = u["currentModeId"].clone();
                u = json!({"sessionUpdate": "config_option_update", "configOptions": self.options()});
            }
            "config_option_update" => {
                let config = u["configOptions"].as_array().cloned().unwrap_or_default();
                self.config = config;
                u["configOptions"] = json!(self.options());
            }
            "plan_update"
            | "session_info_update"
            | "usage_update"
            | "notice"
            | "compaction_update"
            | "compaction_summary_chunk" => {}
            other => return Err(format!("v2 has no `{other}` session update")),
        }
        self.break_message();
        Ok(u)
    }
}

/// The most of an agent-owned terminal's output a v1 client is shown (the end is kept).
pub(crate) const TERMINAL_TEXT_LIMIT: usize = 64 * 1024;

/// The most agent-owned terminals one session keeps for its v1 client; past that, further
/// terminals are not shown (a `warn` log).
pub(crate) const MAX_TERMINALS: usize = 256;

/// A v2 agent's own terminal as its v1 client is shown it: v1 shows only terminals the
/// client runs, so a tool call's `terminal` content becomes a text block of the command,
/// its output (the last [`TERMINAL_TEXT_LIMIT`] bytes) and how it exited, sent again when
/// the terminal exits.
#[derive(Default)]
struct AgentTerminal {
    command: Option<String>,
    output: String,
    /// Whether the start of the output was cut.
    cut: bool,
    /// `exitStatus`, once it exited.
    exit: Option<Value>,
}

impl AgentTerminal {
    fn append(&mut self, bytes: &[u8]) {
        self.output.push_str(&String::from_utf8_lossy(bytes));
        if self.output.len() > TERMINAL_TEXT_LIMIT {
            let mut start = self.output.len() - TERMINAL_TEXT_LIMIT;
            while !self.output.is_char_boundary(start) {
                start += 1;
            }
            self.output.drain(..start);
            self.cut = true;
        }
    }

    /// The text block a v1 client is shown in place of the terminal.
    fn as_text(&self) -> Value {
        let mut text = String::new();
        if let Some(command) = &self.command {
            text.push_str(&format!("$ {command}\n"));
        }
        if self.cut {
            text.push_str("…\n");
        }
        text.push_str(&self.output);
        match &self.exit {
            None => text.push_str(if self.output.is_empty() {
                "(running)"
            } else {
                ""
            }),
            Some(exit) => match (exit["exitCode"].as_i64(), exit["signal"].as_str()) {
                (Some(0), _) => {}
                (Some(code), _) => text.push_str(&format!("[exit {code}]")),
                (None, Some(signal)) => text.push_str(&format!("[killed by {signal}]")),
                (None, None) => {}
            },
        }
        json!({"type": "content", "content": {"type": "text", "text": text}})
    }
}

/// One v2 session as its v1 client sees it.
#[derive(Default)]
pub(crate) struct ToV1 {
    /// The id of the agent's mode config option and the current mode shown.
    pub(crate) mode: Option<(String, Value)>,
    /// The config options the v1 client was last shown.
    shown_config: Option<Vec<Value>>,
    /// The tool calls shown, with their content so far (v2's `terminal` items kept as they
    /// are: they are shown as text, [`AgentTerminal`]).
    tools: HashMap<String, Vec<Value>>,
    /// The agent's own terminals, by id.
    terminals: HashMap<String, AgentTerminal>,
    /// The messages shown (chunks or whole).
    messages: HashSet<String>,
    /// A v1 prompt is running (its own `user_message` echo is not shown again).
    pub(crate) prompting: bool,
}

impl ToV1 {
    /// Records the agent's config options (from a session's answer): the mode option, if
    /// any, and its current value; returns v1's `SessionModeState` for it.
    pub(crate) fn config(&mut self, options: &[Value]) -> Option<Value> {
        let (id, modes) = modes_of(options)?;
        self.mode = Some((id, modes["currentModeId"].clone()));
        Some(modes)
    }

    /// The config options the v1 client is shown for `options` ([`v1_facing`]), recorded as
    /// shown.
    pub(crate) fn shown(&mut self, options: &[Value]) -> Vec<Value> {
        let facing: Vec<Value> = v1_facing(options).into_iter().map(option_to_v1).collect();
        self.shown_config = Some(facing.clone());
        facing
    }

    /// A v2 update (as JSON, not a `state_update`) as the v1 updates (as JSON) the client
    /// gets.
    pub(crate) fn update(&mut self, mut u: Value) -> Result<Vec<Value>, Dropped> {
        let kind = u["sessionUpdate"].as_str().unwrap_or_default().to_string();
        match kind.as_str() {
            "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
                if let Some(id) = u["messageId"].as_str() {
                    self.messages.insert(id.to_string());
                }
                Ok(vec![u])
            }
            "user_message" | "agent_message" | "agent_thought" => self.whole_message(&kind, u),
            "tool_call_update" => Ok(vec![self.tool_call(u)]),
            "tool_call_content_chunk" => {
                let id = u["toolCallId"].as_str().unwrap_or_default().to_string();
                let item = content_to_v1(u["content"].take());
                let mut call = json!({"sessionUpdate": "tool_call_update", "toolCallId": id});
                let content = self.tools.get(&id).cloned().unwrap_or_default();
                call["content"] = json!([content, vec![item]].concat());
                Ok(vec![self.tool_call(call)])
            }
            "plan_update" => {
                if u["plan"]["type"] != "items" {
                    return Err("a plan that is not a list of items has no v1 form".into());
                }
                let entries = u["plan"]["entries"].take();
                Ok(vec![json!({"sessionUpdate": "plan", "entries": entries})])
            }
            "available_commands_update" => {
                commands_to_v1(&mut u["availableCommands"]);
                Ok(vec![u])
            }
            "config_option_update" => {
                let before = self.mode.as_ref().map(|(_, current)| current.clone());
                let options = u["configOptions"].as_array().cloned().unwrap_or_default();
                self.config(&options);
                let mut out = Vec::new();
                let facing: Vec<Value> =
                    v1_facing(&options).into_iter().map(option_to_v1).collect();
                if self.shown_config.as_ref() != Some(&facing) {
                    u["configOptions"] = json!(self.shown(&options));
                    out.push(u);
                }
                match (&self.mode, before) {
                    (Some((_, now)), Some(before)) if *now != before => out.push(
                        json!({"sessionUpdate": "current_mode_update", "currentModeId": now}),
                    ),
                    _ => {}
                }
                Ok(out)
            }
            "session_info_update"
            | "usage_update"
            | "notice"
            | "compaction_update"
            | "compaction_summary_chunk" => Ok(vec![u]),
            "terminal_update" | "terminal_output_chunk" => self.terminal(&kind, u),
            other => Err(format!("v1 has no `{other}` session update")),
        }
    }

    /// A whole message upsert as v1 chunks (one per block), when the message is new.
    fn whole_message(&mut self, kind: &str, u: Value) -> Result<Vec<Value>, Dropped> {
        if kind == "user_message" && self.prompting {
            // The echo of the prompt the v1 client itself sent.
            return Ok(Vec::new());
        }
        let id = u["messageId"].as_str().unwrap_or_default().to_string();
        if !self.messages.insert(id.clone()) {
            return Err(format!(
                "{kind} replaces message {id}, which was shown: v1 cannot change a shown message"
            ));
        }
        let chunk = match kind {
            "user_message" => "user_message_chunk",
            "agent_thought" => "agent_thought_chunk",
            _ => "agent_message_chunk",
        };
        let blocks = u["content"].as_array().cloned().unwrap_or_default();
        Ok(blocks
            .into_iter()
            .map(|content| json!({"sessionUpdate": chunk, "messageId": id, "content": content}))
            .collect())
    }

    /// A v2 terminal's update, kept for the tool calls that show it; when it exits, those
    /// tool calls again, their terminal shown as text with its output (v1 has no
    /// agent-owned terminals: a v1 client shows only terminals it runs).
    fn terminal(&mut self, kind: &str, u: Value) -> Result<Vec<Value>, Dropped> {
        let id = u["terminalId"].as_str().unwrap_or_default().to_string();
        if !self.terminals.contains_key(&id) && self.terminals.len() >= MAX_TERMINALS {
            return Err(format!(
                "terminal {id}: the session already shows {MAX_TERMINALS} terminals"
            ));
        }
        let term = self.terminals.entry(id.clone()).or_default();
        if kind == "terminal_output_chunk" {
            use base64::Engine as _;
            let data = u["data"].as_str().unwrap_or_default();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|e| format!("terminal {id}: output that is not base64: {e}"))?;
            term.append(&bytes);
            return Ok(Vec::new());
        }
        if let Some(command) = u["command"].as_str() {
            term.command = Some(command.to_string());
        }
        let exited = u.get("exitStatus").is_some_and(|e| !e.is_null());
        if exited {
            term.exit = u.get("exitStatus").cloned();
        }
        if !exited {
            return Ok(Vec::new());
        }
        // Every tool call showing the terminal, with its content as it now reads.
        let showing: Vec<String> = self
            .tools
            .iter()
            .filter(|(_, content)| content.iter().any(|c| is_terminal(c, &id)))
            .map(|(call, _)| call.clone())
            .collect();
        Ok(showing
            .into_iter()
            .map(|call| {
                let content = self.rendered(&self.tools[&call]);
                json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "content": content})
            })
            .collect())
    }

    /// A tool call's content as a v1 client is shown it: an agent-owned terminal as text.
    fn rendered(&self, content: &[Value]) -> Vec<Value> {
        content
            .iter()
            .map(|item| match item["terminalId"].as_str() {
                Some(id) if item["type"] == "terminal" => match self.terminals.get(id) {
                    Some(term) => term.as_text(),
                    None => AgentTerminal::default().as_text(),
                },
                _ => item.clone(),
            })
            .collect()
    }

    /// A v2 tool call upsert as v1's `tool_call` (first time) or `tool_call_update`: `null`
    /// clears only `content` (to an empty list); v1 cannot clear other fields, which keep
    /// their value.
    fn tool_call(&mut self, mut u: Value) -> Value {
        let id = u["toolCallId"].as_str().unwrap_or_default().to_string();
        if let Some(o) = u.as_object_mut() {
            if o.get("content").is_some_and(Value::is_null) {
                o.insert("content".into(), json!([]));
            }
            o.retain(|_, v| !v.is_null());
        }
        map_content(&mut u, content_to_v1);
        let first = !self.tools.contains_key(&id);
        let content = u.get("content").and_then(Value::as_array).cloned();
        if let Some(content) = content {
            u["content"] = json!(self.rendered(&content));
            self.tools.insert(id.clone(), content);
        } else {
            self.tools.entry(id.clone()).or_default();
        }
        if first {
            u["sessionUpdate"] = json!("tool_call");
            if u.get("title").is_none() {
                u["title"] = u.get("name").cloned().unwrap_or_else(|| json!(id));
            }
        }
        u
    }
}

/// Whether a tool call content item is the terminal `id`.
fn is_terminal(item: &Value, id: &str) -> bool {
    item["type"] == "terminal" && item["terminalId"] == id
}

#[cfg(test)]
mod tests;
