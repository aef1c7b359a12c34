//! The crow dialect: the form of the protocol the crow agent and IDE shipped. v1's methods
//! (`initialize`, `session/new`, `session/load`, `session/prompt`, `session/update`) with
//! their members spelled in snake_case (`protocol_version`, `client_capabilities`,
//! `session_id`, `stop_reason`, `tool_call_id`...), `session/update` updates tagged by
//! `@type` and carrying plain text, `cancel` as a request, a permission asked for by a
//! `permission_request` update and answered by a `permission_response` message, and the
//! seed's own mix of spellings (`sessionId` in `session/new`'s answer and in updates,
//! `session_id` elsewhere), either of which is accepted on input.
//!
//! # Its own dialect, not a spelling mode of v1
//!
//! Crow looks like v1 with its keys renamed, and a key-renaming layer in front of a v1
//! connection was the tempting design. It does not carry the dialect: the updates differ
//! in shape, not just in spelling (`{"@type": "agent_message_text", "text": ...}` against
//! v1's `{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", ...}}`);
//! permission is an update answered by a message of its own, where v1 has a request and
//! its answer; `cancel` is a request where v1 has a notification; the spelling of a session
//! id changes from one message to the next; and crow has stop reasons and capabilities v1
//! has not (`error`, `prompt_capabilities.text`) and lacks v1's. Each of those needs a
//! mapping with a reason to drop or refuse, which is what a dialect module is for. So crow
//! has its own schema, types and module, like every other dialect, and v1 stays untouched.
//!
//! Its own sides and its translations to and from v1 are laid out as the crate docs say; the
//! tables below map them. Negotiation recognises it by an `initialize` with a snake_case
//! `protocol_version` member, and offers it with the seed's `initialize`
//! ([`crate::negotiation`]).
//!
//! # A v1 agent in front of a crow editor
//!
//! | crow (editor -> agent) | v1 |
//! | --- | --- |
//! | `initialize` | `initialize` with the version and `client_info`, no client capabilities (a crow editor serves no file or terminal calls); answered with the agent's version, `agent_info`, `load_session`, `prompt_capabilities` (`text` true, `image`, `resource` from `embeddedContext`) and `mcp_capabilities` |
//! | `session/new` | `session/new` with `cwd` and the MCP servers that read as v1's (others dropped with a `warn` log); answered `sessionId` |
//! | `session/load` | `session/load` with `cwd` (else [`crate::AdapterOptions::cwd`]); the agent's replay becomes `session/update`s before the answer |
//! | `session/prompt` | `session/prompt` with the text blocks; `end_turn` and `cancelled` answered as they are, v1's other stop reasons as `end_turn` (crow has no word for them) |
//! | `cancel` | `session/cancel`; answered `{}` |
//! | `permission_response` | the answer to the `session/request_permission` it is about (`option_id` selected, none: cancelled) |
//!
//! | v1 (agent -> editor) | crow |
//! | --- | --- |
//! | `session/update` `agent_message_chunk` / `agent_thought_chunk` / `user_message_chunk` (text) | `agent_message_text` / `agent_thought_text` / `user_message_text` |
//! | `session/update` `tool_call` / `tool_call_update` | `tool_call_start` / `tool_call_update` (`tool_call_id`, `title`, `kind`, `status`) |
//! | `session/update` `plan` | `plan_update` |
//! | `session/request_permission` | a `permission_request` update (`title` from the tool call, `arguments` its raw input as text, `permission_options` with the first option primary); the request waits for the editor's `permission_response` and is answered `cancelled` when the prompt is cancelled |
//!
//! Dropped with a `warn` log: non-text chunks, mode/command/config/usage/info updates, and
//! the content and locations of tool calls. Refused with `-32601` and a message saying why:
//! `fs/*`, `terminal/*`, `elicitation/*` and extensions (a crow editor serves none).
//!
//! # A crow agent behind a v1 client
//!
//! | v1 (client -> agent) | crow |
//! | --- | --- |
//! | `initialize` | `initialize` with `protocol_version`, `client_capabilities: {}` and `client_info`; answered with the agent's version, `agentInfo`, `loadSession`, prompt and MCP capabilities |
//! | `session/new` | `session/new` with `cwd` and `mcpServers` as v1 wrote them |
//! | `session/load` | `session/load` with `session_id` and `cwd`; the replayed updates reach the client before the answer |
//! | `session/prompt` | `session/prompt` with the text blocks (other blocks are refused with `-32602` naming the block); `end_turn`/`cancelled` as they are; crow's `error` becomes a `-32603` error saying so |
//! | `session/cancel` | `cancel` (a request; its answer or error is logged) |
//!
//! | crow (agent -> client) | v1 |
//! | --- | --- |
//! | `session/update` text, tool-call and plan updates | the v1 updates of the first table, the other way |
//! | `session/update` `permission_request` | `session/request_permission` (option kinds guessed from the option: `reject`/`deny` in its id or title is `reject_once`, else `allow_once`), its answer sent back as `permission_response` |
//!
//! Every other v1 method is refused with `-32601`; an update of an unknown `@type` is
//! dropped with a `warn` log.

// The dialect's own sides are written by hand, not generated from the method table like
// the other dialects': every incoming message is read accepting either spelling of its
// session id (`respelled`), which the table has no way to say.
mod native;
pub(crate) mod v1_agent;
pub(crate) mod v1_client;

use acp_rpc::Error;
use acp_types::legacy::crow as c;
use acp_types::legacy::crow::convert;
use acp_types::v1;

use crate::translate::prompt_pieces;

pub use native::{
    Agent, AgentConnection, AgentHandle, Client, ClientConnection, ClientHandle, Context, connect,
    connect_with, framing, respelled, serve, serve_with,
};

// What both translations share, each mapping next to its inverse.

/// A crow prompt as v1 blocks (a block of an unknown type is kept as its JSON text).
fn prompt_to_v1(prompt: &[c::ContentBlock]) -> Vec<v1::ContentBlock> {
    prompt
        .iter()
        .map(|b| match b {
            c::ContentBlock::Text(t) => v1::ContentBlock::text(t.text.clone()),
            c::ContentBlock::Unknown(raw) => v1::ContentBlock::text(raw.to_string()),
        })
        .collect()
}

/// A v1 prompt as crow blocks: text only; anything else is refused, naming the block.
fn prompt_from_v1(prompt: &[v1::ContentBlock]) -> Result<Vec<c::ContentBlock>, Error> {
    prompt_pieces(prompt, "a crow agent takes text blocks only", |b| match b {
        v1::ContentBlock::Text(t) => Some(c::ContentBlock::text(t.text.clone())),
        _ => None,
    })
}

/// The text of a v1 chunk, if it is text.
fn text_of(chunk: &v1::ContentChunk) -> Option<String> {
    match &chunk.content {
        v1::ContentBlock::Text(t) => Some(t.text.clone()),
        _ => None,
    }
}

/// A v1 update as crow's, `None` (logged) when crow cannot show it. Permission requests
/// are not updates in v1: the translation builds those itself.
fn update_from_v1(update: &v1::SessionUpdate) -> Option<c::SessionUpdate> {
    use v1::SessionUpdate as U;
    let crow = match update {
        U::AgentMessageChunk(chunk) => text_of(chunk).map(c::SessionUpdate::agent_message_text),
        U::AgentThoughtChunk(chunk) => text_of(chunk).map(c::SessionUpdate::agent_thought_text),
        U::UserMessageChunk(chunk) => text_of(chunk).map(c::SessionUpdate::user_message_text),
        U::ToolCall(call) => Some(c::SessionUpdate::ToolCallStart(
            c::ToolCallStart::new(call.tool_call_id.0.clone(), call.title.clone())
                .kind(convert::kind_from_v1(&call.kind))
                .status(convert::status_from_v1(&call.status)),
        )),
        U::ToolCallUpdate(update) => {
            let mut crow = c::ToolCallUpdate::new(update.tool_call_id.0.clone());
            if let Some(status) = &update.status {
                crow = crow.status(convert::status_from_v1(status));
            }
            if let Some(title) = &update.title {
                crow = crow.title(title.clone());
            }
            Some(c::SessionUpdate::ToolCallUpdate(crow))
        }
        U::Plan(plan) => Some(c::SessionUpdate::plan_update(
            plan.entries.iter().map(convert::plan_entry_from_v1),
        )),
        _ => None,
    };
    if crow.is_none() {
        tracing::warn!(
            "the crow dialect has no way to show this session/update (or it is not text); dropped"
        );
    }
    crow
}

/// A crow update as v1's, `None` (logged) for a permission request (the translation turns
/// it into a request) and unknown updates.
fn update_to_v1(update: &c::SessionUpdate) -> Option<v1::SessionUpdate> {
    use c::SessionUpdate as U;
    let text = |t: &c::TextUpdate| v1::ContentBlock::text(t.text.clone());
    match update {
        U::AgentMessageText(t) => Some(v1::SessionUpdate::agent_message_chunk(text(t))),
        U::AgentThoughtText(t) => Some(v1::SessionUpdate::agent_thought_chunk(text(t))),
        U::UserMessageText(t) => Some(v1::SessionUpdate::user_message_chunk(text(t))),
        U::ToolCallStart(start) => {
            let mut call = v1::ToolCall::new(start.tool_call_id.clone(), start.title.clone());
            if let Some(kind) = &start.kind {
                call = call.kind(convert::kind_to_v1(kind));
            }
            if let Some(status) = &start.status {
                call = call.status(convert::status_to_v1(status));
            }
            Some(call.into())
        }
        U::ToolCallUpdate(u) => {
            let mut update = v1::ToolCallUpdate::new(u.tool_call_id.clone());
            if let Some(status) = &u.status {
                update = update.status(convert::status_to_v1(status));
            }
            if let Some(title) = &u.title {
                update = update.title(title.clone());
            }
            Some(update.into())
        }
        U::PlanUpdate(plan) => Some(v1::SessionUpdate::plan(
            plan.entries.iter().map(convert::plan_entry_to_v1),
        )),
        U::PermissionRequest(_) => None,
        U::Unknown(raw) => {
            tracing::warn!(update = %raw, "a crow update of an unknown @type was dropped");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_cross_both_ways() {
        let updates = [
            c::SessionUpdate::agent_message_text("hi"),
            c::SessionUpdate::agent_thought_text("hm"),
            c::SessionUpdate::user_message_text("q"),
            c::SessionUpdate::ToolCallStart(
                c::ToolCallStart::new("t", "terminal")
                    .kind("execute")
                    .status(c::ToolCallStatus::InProgress),
            ),
            c::SessionUpdate::ToolCallUpdate(
                c::ToolCallUpdate::new("t").status(c::ToolCallStatus::Completed),
            ),
            c::SessionUpdate::plan_update([c::PlanEntry::new(
                "Analyze",
                c::PlanPriority::High,
                c::PlanStatus::Completed,
            )]),
        ];
        for update in updates {
            let v1 = update_to_v1(&update).unwrap();
            assert_eq!(update_from_v1(&v1), Some(update));
        }
        let image = v1::SessionUpdate::agent_message_chunk(v1::ContentBlock::from(
            v1::ImageContent::new("AAAA", "image/png"),
        ));
        assert_eq!(update_from_v1(&image), None);
    }

    #[test]
    fn prompts_are_text_only() {
        let blocks = prompt_from_v1(&[v1::ContentBlock::text("a")]).unwrap();
        assert_eq!(prompt_to_v1(&blocks), vec![v1::ContentBlock::text("a")]);
        let image = v1::ContentBlock::from(v1::ImageContent::new("AAAA", "image/png"));
        let err = prompt_from_v1(&[v1::ContentBlock::text("a"), image]).unwrap_err();
        assert!(err.message.contains("prompt[1]"), "{}", err.message);
    }
}
