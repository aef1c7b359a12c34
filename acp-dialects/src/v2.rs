//! Draft protocol v2: its two sides and its translation to and from v1.
//!
//! **Its own sides**: an agent that serves a v2 client ([`serve`]) and a client that drives
//! a v2 agent ([`connect`]), generated from v2's method table (the file
//! `src/generated/v2.rs`), over the types of `acp_types::v2`. An agent implements [`Agent`]
//! (requests run concurrently; `initialize` and every other request answer `-32601` unless
//! implemented) and calls its client through [`ClientHandle`] (`session/update`,
//! `session/request_permission`, `elicitation/*`); a client implements [`Client`] (the
//! agent's requests handled one at a time, in order) and calls the agent through
//! [`AgentHandle`]. The wire is JSON-RPC 2.0, one message per line, as v1's. acp-agent and
//! acp-client re-export these as `acp_agent::v2` and `acp_client::v2`.
//!
//! **Its translation**, like the legacy dialects' (the crate docs): [`serve_v1_agent`] puts
//! an application's v1 agent in front of a v2 client, [`drive_for_v1_client`] puts a v2
//! agent behind an application's v1 client. The user's v1 side runs on an in-memory message
//! pair; the two versions share most object shapes (content blocks, plan entries,
//! permission options, config options, session infos), which pass as they are; the tables
//! below are everything else.
//!
//! The same two mappings serve a v2 application to a v1 peer: [`serve_v2_agent_to_v1`] puts
//! an application's v2 agent in front of a v1 client (the mapping of "A v2 agent behind a
//! v1 client"), [`drive_v1_agent_for_v2_client`] puts a v1 agent behind an application's v2
//! client (that of "A v1 agent in front of a v2 client"). There the user's v2 side runs on
//! the in-memory pair and the v1 peer is on the wire.
//!
//! # A v1 agent in front of a v2 client
//!
//! | v2 (client -> agent) | v1 |
//! | --- | --- |
//! | `initialize` | `initialize` with `protocolVersion` 1, `clientInfo` from `info`, `fs` when [`crate::AdapterOptions::fs`] is set, `terminal` with [`crate::AdapterOptions::local_terminals`], `auth.terminal` and `elicitation` as the client offers; the answer: `info` from `agentInfo`, capability flags as v2 markers (`true` is `{}`), `mcp.stdio` always, auth methods tagged (`type: agent`, `methodId`) |
//! | `auth/login`, `auth/logout` | `authenticate`, `logout` (refused `-32601` when the agent does not advertise `auth.logout`) |
//! | `session/new` | `session/new`; the answer's `modes` become a `select` config option of category `mode`, id `mode`, marked `_meta["acp-rs/v1Modes"]` (unless the agent has one of its own), and its `models` (unstable) one of category `model`, id `model` (unless it has one of category `model`) |
//! | `session/resume` with `replayFrom` | `session/load`: the replay reaches the client as v2 updates before the answer |
//! | `session/resume` without it | `session/resume` when advertised, else `session/load` with its replay held back, else (a session live on this connection) answered by the translation: nothing to restore |
//! | `session/list`, `session/close`, `session/delete` | the same v1 method (`session/close` to an agent without it only forgets the session); after `session/close` the translation itself refuses the session's prompts (`-32002`) until a `session/resume`, as it refuses a prompt for a session not made, resumed or loaded on the connection |
//! | `session/set_config_option` | `session/set_mode` for the `mode` option made of modes, `session/set_model` (unstable) for the `model` option made of models, else the same v1 method |
//! | `session/prompt` | answered at once with the user message's id, after `state_update` `running` and a `user_message` echo; the v1 `session/prompt` runs meanwhile and its answer becomes `state_update` `idle` with the stop reason (a v1 error: `stopReason: error` with the error) |
//! | `session/cancel` | `session/cancel` |
//! | `terminal/cancel` | kills a terminal the translation runs; refused `-32601` without local terminals |
//! | `tool_call/cancel` | refused `-32601`: v1 cannot cancel one tool call |
//!
//! | v1 (agent -> client) | v2 |
//! | --- | --- |
//! | `user_message_chunk`, `agent_message_chunk`, `agent_thought_chunk` | the same, with the chunk's `messageId`, or one the translation gives: consecutive chunks of a kind share one message |
//! | `tool_call`, `tool_call_update` | `tool_call_update` (an upsert); a `diff` content's texts become `changes[]` (`add` or `modify`) and a whole-file `git_patch`, the texts kept in `_meta["acp-rs/v1Diff"]` |
//! | `plan` | `plan_update` of the plan `plan` (items) |
//! | `current_mode_update`, `config_option_update` | `config_option_update` with every option (modes as the `mode` option) |
//! | `available_commands_update` | the same, commands tagged `type: command` |
//! | `plan_update`, `session_info_update`, `usage_update`, `notice`, `compaction_update`, `compaction_summary_chunk` | the same |
//! | `session/request_permission` | the same, `subject` the tool call (`type: tool_call`), `title` the tool call's (or the last title it had) |
//! | `fs/read_text_file`, `fs/write_text_file` | served by [`crate::AdapterOptions::fs`]; refused `-32601` without it |
//! | `terminal/*` | run by the translation with [`crate::AdapterOptions::local_terminals`] and shown as v2 terminals (`terminal_update`, `terminal_output_chunk`); refused `-32601` without it |
//! | `elicitation/create`, `elicitation/complete` | the same |
//!
//! An update for a session the client closed is dropped. So are updates for sessions no
//! answer of the agent's has given out (an update sent while its `session/new` is answered
//! is passed on) once 64 such sessions are kept: the translation keeps state per session,
//! and an agent naming made-up sessions must not grow it without end.
//!
//! # A v2 agent behind a v1 client
//!
//! | v1 (client -> agent) | v2 |
//! | --- | --- |
//! | `initialize` | `initialize` with `protocolVersion` 2; the answer: `loadSession`, `session/list`, `resume`, `close` and `logout` always (v2 agents serve them), v2 markers as flags |
//! | `authenticate`, `logout` | `auth/login`, `auth/logout` |
//! | `session/new` | `session/new`; a `select` config option of category `mode` is also given as v1 `modes`, and one marked `_meta["acp-rs/v1Modes"]` (a v1 agent's modes behind a second translation) only as `modes` |
//! | `session/load` | `session/resume` with `replayFrom: start`; the replay reaches the client as v1 updates before the answer |
//! | `session/resume`, `session/list`, `session/close`, `session/delete`, `session/set_config_option` | the same v2 method (`systemPrompt` is not sent: v2 has none) |
//! | `session/set_mode` | `session/set_config_option` on the mode option; refused `-32601` when the session has none |
//! | `session/prompt` | `session/prompt`, then the turn's `state_update` `idle`: its stop reason answers the prompt (`error` answers with the error it carries) |
//! | `session/cancel` | `session/cancel` |
//!
//! | v2 (agent -> client) | v1 |
//! | --- | --- |
//! | `state_update` | `idle` ends the running v1 prompt; `running` and `requires_action` have no v1 form (the v1 client knows a turn runs from its own prompt) |
//! | chunks (`user_message_chunk`, ...) | the same |
//! | `user_message`, `agent_message`, `agent_thought` | one chunk per block, when the message is new; the echo of the v1 client's own prompt is not shown again |
//! | `tool_call_update` | `tool_call` the first time an id is seen (title from `name`, else the id, when absent), then `tool_call_update`; a `null` field keeps its value (v1 cannot clear) except `content` (emptied) |
//! | `tool_call_content_chunk` | `tool_call_update` with the content so far |
//! | a `diff` content | the v1 diff again when it came from v1 (`_meta["acp-rs/v1Diff"]`), else a text block with its patch (or its list of changes): a v1 diff needs the new text, which v2 does not send |
//! | `plan_update` | `plan` with its entries |
//! | `config_option_update` | the same when the options a v1 client sees changed (an option made of v1 modes left out), and `current_mode_update` when the mode option changed |
//! | `available_commands_update` | the same, untagged |
//! | `session_info_update`, `usage_update`, `notice`, `compaction_update`, `compaction_summary_chunk` | the same |
//! | `session/request_permission` | the same; a `tool_call` subject is the tool call, a `command` subject an `execute` tool call with the command and `cwd` as `rawInput`, the request's `title` the tool call's title |
//! | `elicitation/create`, `elicitation/complete` | the same |
//!
//! # What cannot be mapped
//!
//! | what | where | what happens |
//! | --- | --- | --- |
//! | v1 methods v2 lacks (`session/set_model`, `session/set_title`, `session/fork`, providers, ...) | v1 client -> v2 agent | refused `-32601`, "a v2 agent has no such method" (capabilities such as `sessionCapabilities.title` are not advertised) |
//! | `tool_call/cancel` | v2 client -> v1 agent | refused `-32601` |
//! | `terminal/cancel`, v1 `terminal/*`, `fs/*` without local terminals or files | v1 agent <-> v2 client | refused `-32601` naming the option that would serve it |
//! | `session/resume` of an agent that can neither load nor resume, with replay or of a session not live on the connection | v2 client -> v1 agent | refused `-32601` saying which capability is missing |
//! | `auth/logout` to a v1 agent without `auth.logout` | v2 client -> v1 agent | refused `-32601` |
//! | v1-only updates (`plan_removed`, subagents, session messages) | v1 agent -> v2 client | not sent, a `warn` log naming the kind |
//! | v2 terminals (`terminal_update`, `terminal_output_chunk`) | v2 agent -> v1 client | not sent as terminals (v1 shows only terminals the client runs): a tool call's `terminal` content is a text block, `(running)` until the terminal exits, then the command, the last 64 KiB of its output and a non-zero exit, sent again for each tool call showing it (at most 256 terminals a session; past that, a `warn` log) |
//! | a whole message replacing one already shown, a plan that is not items | v2 agent -> v1 client | not sent, a `warn` log |
//! | clearing a tool call field (`null`) other than `content` | v2 agent -> v1 client | the field keeps its value |
//! | a message that does not fit the other version's type | either | `-32603` naming what did not fit (a request), or a `warn` log (an update) |
//! | `replay_complete` | both | not in the pinned v2 schema (2.4.0): the end of a replay is the resume's answer |
//! | a v1 prompt that fails after v2's `session/prompt` was answered | v2 client -> v1 agent | `state_update` idle with `stopReason: error` and the error |

#[path = "generated/v2.rs"]
#[rustfmt::skip]
mod native;

mod map;
pub mod prompt_keys;
mod terminals;
mod updates;
mod v1_agent;
mod v1_client;

use acp_rpc::transport::{MemoryEnd, Transport};
use acp_rpc::{CloseReason, Peer};

use crate::{AdapterOptions, Input, Output, translate};

pub use v1_client::v2_initialize;

pub use native::{
    Agent, AgentConnection, AgentHandle, Client, ClientConnection, ClientHandle, Context, connect,
    connect_over, connect_with, serve, serve_over, serve_with,
};

/// The v2 wire: JSON-RPC 2.0 as v1's (`"jsonrpc"` required and written, notifications,
/// numeric request ids), and batches answered (of at most [`acp_rpc::DEFAULT_MAX_BATCH`]
/// messages; v1 refuses them, as the official SDKs do): the v2 draft's conformance suite
/// requires an agent to answer one as JSON-RPC 2.0 says. Neither side ever sends one.
pub fn framing() -> acp_rpc::Framing {
    acp_rpc::Framing::default().answer_batches(acp_rpc::DEFAULT_MAX_BATCH)
}

/// A running translation between a peer on the wire and the user's side of the other
/// version: the wire's connection (v2 to a v2 peer, v1 to a v1 peer), which ends with the
/// user's side (and the reverse).
#[derive(Clone, Debug)]
pub struct Translation {
    wire: Peer,
}

impl Translation {
    /// The JSON-RPC peer of the connection on the wire.
    pub fn peer(&self) -> &Peer {
        &self.wire
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> CloseReason {
        self.wire.closed().await
    }

    /// Ends the connection (and the v1 side behind it).
    pub fn close(&self) {
        self.wire.close();
    }
}

/// Serves a v1 agent to a client speaking v2 over `reader`/`writer`: `v1_agent` starts the
/// user's v1 agent connection on the pair end it is given and returns its [`Peer`]. The
/// module docs hold the mapping.
pub fn serve_v1_agent(
    v1_agent: impl FnOnce(MemoryEnd) -> Peer,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Translation {
    serve_v1_agent_over(v1_agent, (reader, writer), options)
}

/// [`serve_v1_agent`] with the v2 client on any [`Transport`] (frames of a network
/// transport, one end of an in-memory pair).
pub fn serve_v1_agent_over(
    v1_agent: impl FnOnce(MemoryEnd) -> Peer,
    transport: impl Transport,
    options: AdapterOptions,
) -> Translation {
    let config = options.config.clone();
    let v2 = translate::translate(v1_agent, v1_agent::state(options), |end| {
        serve_over(end, transport, config)
    });
    Translation { wire: v2 }
}

/// Drives an agent speaking v2 (its stdout is `reader`, its stdin `writer`) for a v1
/// client: `v1_client` starts the user's v1 client connection on the pair end it is given
/// and returns its [`Peer`]. The module docs hold the mapping. With
/// [`AdapterOptions::handshake`] set to the agent's answer to a v2 `initialize` already sent
/// (a client that negotiated the version first, offering [`v2_initialize`]), the v1 client's
/// `initialize` is answered from it and the agent is not asked twice.
pub fn drive_for_v1_client(
    v1_client: impl FnOnce(MemoryEnd) -> Peer,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Translation {
    let config = options.config.clone();
    let v2 = translate::translate(v1_client, v1_client::state(options), |end| {
        connect_with(end, reader, writer, config)
    });
    Translation { wire: v2 }
}

/// Serves a v2 agent to a client speaking v1 over `reader`/`writer`: `v2_agent` starts the
/// user's v2 agent connection on the pair end it is given (`serve_over`) and returns its
/// [`Peer`]. The mapping is that of "A v2 agent behind a v1 client" (the module docs), with
/// [`AdapterOptions::config`] for the v1 wire; the v1 client's own `initialize` is sent on
/// to the agent as a v2 one.
pub fn serve_v2_agent_to_v1(
    v2_agent: impl FnOnce(MemoryEnd) -> Peer,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Translation {
    let config = options.config.clone();
    let wire = translate::translate_for_legacy_user(
        v2_agent,
        (reader, writer),
        config,
        v1_client::state(options),
        |legacy, end| connect_over(legacy, end, acp_rpc::Config::default()),
    );
    Translation { wire }
}

/// Drives an agent speaking v1 (its stdout is `reader`, its stdin `writer`) for a v2
/// client: `v2_client` starts the user's v2 client connection on the pair end it is given
/// (`connect_over`) and returns its [`Peer`]. The mapping is that of "A v1 agent in front of
/// a v2 client" (the module docs), with [`AdapterOptions::config`] for the v1 wire: the
/// agent's file and terminal calls are served with [`AdapterOptions::fs`] and
/// [`AdapterOptions::local_terminals`], or refused.
pub fn drive_v1_agent_for_v2_client(
    v2_client: impl FnOnce(MemoryEnd) -> Peer,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Translation {
    let config = options.config.clone();
    let wire = translate::translate_for_legacy_user(
        v2_client,
        (reader, writer),
        config,
        v1_agent::state(options),
        |legacy, end| serve_over(legacy, end, acp_rpc::Config::default()),
    );
    Translation { wire }
}

#[cfg(test)]
mod tests {
    use acp_types::v2 as types;
    use async_trait::async_trait;
    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::*;

    struct Quiet;

    #[async_trait]
    impl Agent for Quiet {}

    fn chunk(session: &str, text: &str) -> types::UpdateSessionNotification {
        let content = types::ContentBlock::Text(types::TextContent::new(text));
        let chunk = types::ContentChunk::new("m-1", content);
        types::UpdateSessionNotification::new(
            session,
            types::SessionUpdate::AgentMessageChunk(chunk),
        )
    }

    /// A handle's notification is written when the method is called but sent only when its
    /// future is awaited (as the generated docs say): one dropped unawaited never reaches the
    /// client, and the next one does, whole.
    #[tokio::test]
    async fn a_notification_is_sent_when_awaited_not_when_called() {
        let (agent_end, client_end) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(agent_end);
        let conn = serve(Quiet, read, write);
        let unsent = conn.client().session_update(chunk("s-dropped", "never"));
        drop(unsent);
        conn.client()
            .session_update(chunk("s-sent", "hello"))
            .await
            .expect("sent");
        let mut lines = BufReader::new(client_end).lines();
        let line = tokio::time::timeout(std::time::Duration::from_secs(5), lines.next_line())
            .await
            .expect("a line within 5 s")
            .expect("readable")
            .expect("a line");
        let message: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(message["method"], "session/update", "{line}");
        assert_eq!(message["params"]["sessionId"], "s-sent", "{line}");
        assert_eq!(
            message["params"]["update"]["content"]["text"], "hello",
            "{line}"
        );
        conn.close();
    }
}
