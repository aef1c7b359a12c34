//! The probe dialect: the form of the protocol the probe code-search agent shipped
//! (`--acp`). JSON-RPC 2.0 over newline-delimited stdio, `initialize` with the *string*
//! `protocolVersion: "1"`, un-namespaced camelCase methods (`newSession`, `prompt`), a
//! `prompt` answered with the whole reply, and the reply streamed meanwhile as
//! `messageChunk` notifications. Its own sides and its translations to and from v1 are laid
//! out as the crate docs say; the tables below map them. Negotiation recognises it by an
//! `initialize` whose `protocolVersion` is the string `"1"` or by a first message that is one
//! of its session methods (`newSession`, `loadSession`, `setSessionMode`, `prompt`), and
//! offers it with `initialize {"protocolVersion": "1"}` ([`crate::negotiation`]).
//!
//! Both translations wait at most 30 seconds for an answer to a request unless the
//! connection's [`acp_rpc::Config::default_timeout`] says otherwise (the dialect's own
//! default, [`acp_types::legacy::probe::DEFAULT_REQUEST_TIMEOUT`]): a `prompt` that runs
//! longer fails with a timeout. The native sides take their [`acp_rpc::Config`] as given:
//! pass it through [`with_dialect_timeout`] for the dialect's default.
//!
//! The tools a probe agent advertises (`capabilities.tools`, with their input schemas) are
//! data, not behaviour: they travel in the v1 `initialize` answer's `_meta` under
//! [`TOOLS_META_KEY`], both ways. A v1 agent author who wants a probe editor to see tools
//! puts them there; a v1 client driving a probe agent finds them there.
//!
//! # A v1 agent in front of a probe editor
//!
//! | probe (editor -> agent) | v1 |
//! | --- | --- |
//! | `initialize` `"1"` | `initialize` (version 1, `fs.readTextFile` and `fs.writeTextFile` advertised); answered `"1"` with `serverInfo` from `agentInfo` (else this crate's name and version), `tools` from `_meta[`[`TOOLS_META_KEY`]`]`, `sessionManagement` and `streaming` true, `permissions` false. Another version is refused with `-32001` |
//! | `newSession` | `session/new` with [`crate::AdapterOptions::cwd`] and no MCP servers; `mode` is the agent's current mode when it is `NORMAL` or `PLANNING`, else `NORMAL`; `createdAt` now |
//! | `loadSession` | a session of this connection: its recorded history. Otherwise `session/load` when the agent supports it (the agent replays it from its session store; the replayed user and agent text becomes `history`), else `-32002` |
//! | `setSessionMode` | `session/set_mode` with the mode as the mode id; then `sessionUpdated` with the new mode |
//! | `prompt` | `session/prompt` with one text block; answered with the reply's text as one `text` block and `timestamp` now, whatever the stop reason. An unknown session is `-32002` |
//! | `cancel` | `session/cancel`; answered `cancelled: true` when a prompt was running |
//!
//! | v1 (agent -> editor) | probe |
//! | --- | --- |
//! | `session/update` `agent_message_chunk` (text) during a `prompt` | `messageChunk`, `index` counting from 0 per prompt; also collected into the `prompt` answer |
//! | `session/update` `tool_call` / `tool_call_update` | `toolCallProgress`: `id`, `name` (the title), `kind`, `status`, `startTime` when first seen, `endTime` when completed or failed |
//! | `session/update` `current_mode_update` | `sessionUpdated` with the mode |
//! | `session/update` `user_message_chunk`, `agent_message_chunk` outside a prompt | recorded in the history `loadSession` answers |
//! | `fs/read_text_file` | `readTextFile` (`line` and `limit` applied to the answer here: the dialect reads whole files) |
//! | `fs/write_text_file` | `writeTextFile` |
//!
//! Dropped with a `warn` log (the dialect cannot show them): thoughts, plans, non-text
//! message chunks, command/config/usage updates. Refused with `-32601` and a message saying
//! why: `session/request_permission` (the probe editor advertises no permission prompt),
//! `terminal/*`, `elicitation/*` and extensions.
//!
//! # A probe agent behind a v1 client
//!
//! | v1 (client -> agent) | probe |
//! | --- | --- |
//! | `initialize` | `initialize` `"1"` (or the answer negotiation already got); answered version 1, `agentInfo` from `serverInfo`, `loadSession` from `sessionManagement`, the tools in `_meta[`[`TOOLS_META_KEY`]`]`. An answer that is not `"1"` is refused with `-32001` |
//! | `session/new` | `newSession {}` (`cwd` and MCP servers cannot be passed on); the modes are `NORMAL` and `PLANNING`, current as answered |
//! | `session/load` | `loadSession`, its `history` replayed as `user_message_chunk`/`agent_message_chunk` before the answer |
//! | `session/set_mode` | `setSessionMode` |
//! | `session/prompt` | `prompt`: text blocks joined with blank lines, resource links as `@<path>` mentions; other blocks are refused with `-32602` naming the block. The answer's content is sent as `agent_message_chunk` unless it was streamed already; `end_turn`, or `cancelled` after a `session/cancel` |
//! | `session/cancel` | `cancel` (a request: its answer or error is logged) |
//!
//! | probe (agent -> client) | v1 |
//! | --- | --- |
//! | `messageChunk` | `session/update` `agent_message_chunk` |
//! | `toolCallProgress` | `session/update` `tool_call` the first time an id is seen (`title` and `name` from `name`), `tool_call_update` after |
//! | `sessionUpdated` with a mode | `session/update` `current_mode_update` (without one: dropped with a `debug` log) |
//! | `readTextFile` / `writeTextFile` | `fs/read_text_file` / `fs/write_text_file` when the client advertised them, else [`crate::AdapterOptions::fs`], else `-32003` (permission denied); the session is the one named, else the last one prompted |
//!
//! Every other v1 method is refused with `-32601`.
//!
//! # Its own sides
//!
//! An agent implements [`Agent`] (requests run concurrently) and calls the editor through
//! [`ClientHandle`]; an editor implements [`Client`] (notifications handled in order) and
//! calls the agent through [`AgentHandle`].

// The dialect's own sides, generated from the method table of its schema.
#[path = "generated/probe.rs"]
#[rustfmt::skip]
mod native;
pub(crate) mod v1_agent;
pub(crate) mod v1_client;

use acp_rpc::{Config, Error, ErrorCode};
use acp_types::legacy::probe as p;
use acp_types::v1;
use serde_json::json;

use crate::translate::{prompt_pieces, text_or_mention};

pub use native::{
    Agent, AgentConnection, AgentHandle, Client, ClientConnection, ClientHandle, Context, connect,
    connect_with, serve, serve_with,
};

/// The probe wire: JSON-RPC 2.0 with `"jsonrpc"` required and written, notifications, and
/// requests numbered from 1 (as the dialect's own client does).
pub fn framing() -> acp_rpc::Framing {
    acp_rpc::Framing::default()
}

/// `config` with the dialect's 30 second request timeout when it sets none.
pub fn with_dialect_timeout(config: Config) -> Config {
    if config.default_timeout.is_some() {
        config
    } else {
        config.with_default_timeout(Some(p::DEFAULT_REQUEST_TIMEOUT))
    }
}

/// The `_meta` key of a v1 `initialize` answer that holds the tools a probe agent
/// advertises (an array of probe tool definitions), in both translations.
pub const TOOLS_META_KEY: &str = "probe.tools";

// What both translations share, each mapping next to its inverse.

/// The advertised tools a v1 `initialize` answer carries in its `_meta`.
fn tools_of(meta: Option<&acp_types::Meta>) -> Vec<p::ToolDefinition> {
    meta.and_then(|m| m.get(TOOLS_META_KEY))
        .and_then(|tools| match serde_json::from_value(tools.clone()) {
            Ok(tools) => Some(tools),
            Err(e) => {
                tracing::warn!(error = %e, "the agent's advertised probe tools do not read as tool definitions: none advertised");
                None
            }
        })
        .unwrap_or_default()
}

/// The `_meta` of a v1 `initialize` answer carrying advertised probe tools (none when
/// there are none).
fn meta_of(tools: &[p::ToolDefinition]) -> Option<acp_types::Meta> {
    if tools.is_empty() {
        return None;
    }
    let tools = serde_json::to_value(tools).ok()?;
    Some([(TOOLS_META_KEY.to_string(), tools)].into_iter().collect())
}

/// `-32001`: the peer's protocol version is not the dialect's `"1"`.
fn unsupported_version(version: &str) -> Error {
    Error::new(
        ErrorCode(p::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0),
        format!(
            "unsupported protocol version {version:?}: this peer speaks probe {:?}",
            p::PROTOCOL_VERSION
        ),
    )
    .with_data(json!({ "supported": [p::PROTOCOL_VERSION], "requested": version }))
}

/// `-32002`: no session has that id.
fn session_not_found(id: &str) -> Error {
    Error::new(
        ErrorCode(p::ErrorCode::SESSION_NOT_FOUND.0),
        format!("session not found: {id}"),
    )
    .with_data(json!({ "sessionId": id }))
}

/// The v1 prompt as one probe message: text blocks joined by blank lines, resource links as
/// `@<path>` mentions; anything else is refused, naming the block.
fn message_of(prompt: &[v1::ContentBlock]) -> Result<String, Error> {
    let takes = "a probe agent takes text (and resource links, sent as @mentions) only";
    Ok(prompt_pieces(prompt, takes, text_or_mention)?.join("\n\n"))
}

/// The text of a probe reply's content blocks, in order (unknown blocks are skipped).
fn text_of(content: &[p::ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            p::ContentBlock::Text(t) => Some(t.text.as_str()),
            p::ContentBlock::Unknown(_) => None,
        })
        .collect()
}

/// Milliseconds since the Unix epoch, for `startTime`/`endTime`.
fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_become_one_message_or_are_refused() {
        let prompt = [
            v1::ContentBlock::text("look at"),
            v1::ContentBlock::from(v1::ResourceLink::new("main.rs", "file:///src/main.rs")),
        ];
        assert_eq!(message_of(&prompt).unwrap(), "look at\n\n@/src/main.rs");
        let image = [v1::ContentBlock::from(v1::ImageContent::new(
            "AAAA",
            "image/png",
        ))];
        let err = message_of(&image).unwrap_err();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(err.message.contains("prompt[0]"), "{}", err.message);
    }

    #[test]
    fn the_dialect_timeout_applies_unless_the_config_sets_one() {
        let default = with_dialect_timeout(Config::default());
        assert_eq!(default.default_timeout, Some(p::DEFAULT_REQUEST_TIMEOUT));
        let mine = Config::default().with_default_timeout(Some(std::time::Duration::from_secs(2)));
        assert_eq!(
            with_dialect_timeout(mine).default_timeout,
            Some(std::time::Duration::from_secs(2))
        );
    }

    #[test]
    fn advertised_tools_travel_in_meta_both_ways() {
        let tools = vec![
            p::ToolDefinition::new("search")
                .kind("search")
                .input_schema(json!({"required": ["query"]})),
        ];
        let meta = meta_of(&tools);
        assert_eq!(tools_of(meta.as_ref()), tools);
        assert_eq!(meta_of(&[]), None);
        let odd: acp_types::Meta = [(TOOLS_META_KEY.to_string(), json!(3))]
            .into_iter()
            .collect();
        assert!(tools_of(Some(&odd)).is_empty());
    }
}
