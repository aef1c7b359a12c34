//! The threads dialect: the first form of the protocol, with no handshake, conversation
//! threads, and no `jsonrpc` member (see `acp_types::legacy` for who serves what).
//! Its own sides and its translations to and from v1 are laid out as the crate docs say; the
//! tables below map them. Negotiation recognises it by a first message that is one of its
//! agent's methods (`getThreads`, ...), and offers it with `getThreads`
//! ([`crate::negotiation`]).
//!
//! # A v1 agent in front of a threads editor
//!
//! The translation performs the v1 `initialize` itself before the first call, advertising
//! `fs.readTextFile` only (threads editors cannot write files or run terminals). Threads are
//! v1 sessions: the thread id is the session id.
//!
//! | threads (editor -> agent) | v1 |
//! | --- | --- |
//! | `getThreads` | the threads of this connection, plus `session/list` (for [`crate::AdapterOptions::cwd`]) when the agent advertises it; title from `session_info_update`, else the first line of the first message, else `Thread <id>` |
//! | `createThread` | `session/new` with [`crate::AdapterOptions::cwd`] and no MCP servers |
//! | `openThread` | nothing for a thread of this connection; otherwise `session/load` when the agent supports it (the replayed history becomes the thread's entries), else the error "Thread not found" |
//! | `getThreadEntries` | the history the translation recorded: user and agent text (consecutive chunks merged into one message) and `readFile` entries for every file the agent read |
//! | `sendMessage` | `session/prompt` with one text block per chunk; answered `null` when the prompt ends, whatever the stop reason; a v1 error passes through |
//!
//! | v1 (agent -> editor) | threads |
//! | --- | --- |
//! | `session/update` `agent_message_chunk` (text) during a `sendMessage` | `streamMessageChunk`, sent in order without waiting a round trip each: up to 64 await the editor's answers at once, and `sendMessage` is answered once the editor has answered all the chunks sent before the turn ended; each answer is awaited at most the connection's `default_timeout` (a minute without one), so an editor that never answers slows the stream but does not hold the turn |
//! | `session/update` `user_message_chunk`, `session_info_update` | recorded (history, title) |
//! | `fs/read_text_file` | `readTextFile` (`line` 1-based becomes `lineOffset` 0-based, `limit` becomes `lineLimit`) |
//!
//! Dropped with a `warn` log (the dialect cannot show them): thoughts, tool calls and their
//! updates, plans, non-text message chunks, mode/command/config updates. Refused with
//! `-32601` and a message saying why: `session/request_permission` (a threads editor cannot
//! be asked), `fs/write_text_file`, `terminal/*`, `elicitation/*` and extensions. The
//! dialect has no cancel: an editor cannot stop a running turn.
//!
//! # A threads agent behind a v1 client
//!
//! Sessions are threads: the session id is the thread id.
//!
//! | v1 (client -> agent) | threads |
//! | --- | --- |
//! | `initialize` | answered by the translation (nothing is sent: the dialect has no handshake): version 1, `loadSession` and `session/list` supported, no auth methods |
//! | `session/new` | `createThread` (`cwd` and MCP servers cannot be passed on) |
//! | `session/load` | `openThread`, then `getThreadEntries` replayed as `session/update`s: messages as `user_message_chunk`/`agent_message_chunk` (one per chunk), file reads as completed `read` tool calls |
//! | `session/list` | `getThreads` (title and `modifiedAt` kept; `cwd` from [`crate::AdapterOptions::cwd`]) |
//! | `session/prompt` | `sendMessage`: text blocks as text chunks, resource links as `@<path>` mentions; other blocks are refused with `-32602` naming the block; answered `end_turn` when the turn is over |
//!
//! | threads (agent -> client) | v1 |
//! | --- | --- |
//! | `streamMessageChunk` | `session/update` `agent_message_chunk`, in order |
//! | `readTextFile` | `fs/read_text_file` when the client advertised `fs.readTextFile` (`lineOffset` 0-based becomes `line` 1-based), else [`crate::AdapterOptions::fs`]; `version` is always 0 |
//! | `readBinaryFile`, `stat`, `globSearch` | served by [`crate::AdapterOptions::fs`]; base64 for binary content |
//!
//! Without [`crate::AdapterOptions::fs`] the last three (and `readTextFile` from a client
//! without `fs.readTextFile`) get `-32601` saying so. `session/cancel` is dropped with a
//! `warn` log: a threads agent cannot be cancelled. Every other v1 method is refused with
//! `-32601`.
//!
//! # Its own sides
//!
//! An agent implements [`Agent`] (requests run concurrently) and calls the editor through
//! [`ClientHandle`]; an editor implements [`Client`] (requests handled one at a time, in
//! the order sent) and calls the agent through [`AgentHandle`].

// The dialect's own sides, generated from the method table of its schema.
#[path = "generated/threads.rs"]
#[rustfmt::skip]
mod native;
pub(crate) mod v1_agent;
pub(crate) mod v1_client;

use crate::translate::{prompt_pieces, text_or_mention};
use acp_rpc::Error;
use acp_types::legacy::threads as t;
use acp_types::v1;

pub use native::{
    Agent, AgentConnection, AgentHandle, Client, ClientConnection, ClientHandle, Context, connect,
    connect_with, serve, serve_with,
};

/// The wire of the dialect: no `"jsonrpc"` member on output (accepted on input), `params`
/// always written (`null` when empty), no notifications (every call is a request), ids
/// from 0.
pub fn framing() -> acp_rpc::Framing {
    acp_rpc::Framing::default()
        .accept_missing_jsonrpc(true)
        .emit_jsonrpc(false)
        .notifications(false)
        .first_request_id(0)
}

impl ClientHandle {
    /// `streamMessageChunk` with a text chunk.
    ///
    /// Not an `async fn`: the returned future is the request's own, not one that also holds
    /// the text.
    pub fn stream_text(
        &self,
        thread_id: &t::ThreadId,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        let chunk = t::MessageChunk::text(text);
        self.stream_message_chunk(t::StreamMessageChunkParams::new(thread_id.clone(), chunk))
    }
}

// What both translations share, each mapping next to its inverse.

/// A v1 line (counted from 1) as a threads line offset (counted from 0).
fn line_offset_of(line: Option<u32>) -> Option<u32> {
    line.map(|l| l.saturating_sub(1))
}

/// A threads line offset (counted from 0) as a v1 line (counted from 1).
fn line_of(offset: Option<u32>) -> Option<u32> {
    offset.map(|l| l.saturating_add(1))
}

/// The text of the user's message, one text block per chunk.
fn prompt_of(message: &t::Message) -> Vec<v1::ContentBlock> {
    message
        .chunks
        .iter()
        .map(|c| match c {
            t::MessageChunk::Text(text) => v1::ContentBlock::text(text.chunk.clone()),
            t::MessageChunk::Unknown(raw) => v1::ContentBlock::text(raw.to_string()),
        })
        .collect()
}

/// The v1 prompt as one threads message: text blocks become text chunks and resource links
/// become `@<path>` mentions; anything else is refused, naming the block.
fn message_of(prompt: &[v1::ContentBlock]) -> Result<t::Message, Error> {
    let takes = "a threads agent takes text (and resource links, sent as @mentions) only";
    let chunks = prompt_pieces(prompt, takes, |b| {
        text_or_mention(b).map(t::MessageChunk::text)
    })?;
    Ok(t::Message::new(t::Role::User, chunks))
}
