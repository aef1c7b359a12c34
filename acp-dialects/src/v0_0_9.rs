//! The 0.0.9 dialect: the `pushToolCall` protocol Gemini CLI spoke before v1, with a string
//! `protocolVersion`, one implicit conversation, and no notifications (see
//! `acp_types::legacy` for who serves what). Its own sides and its translations to and
//! from v1 are laid out as the crate docs say; the tables below map them. Negotiation
//! recognises it by `initialize` with a `"0.0.x"` string `protocolVersion`
//! ([`crate::negotiation`]).
//!
//! # A v1 agent in front of a 0.0.9 editor
//!
//! The translation performs the v1 `initialize` itself (on the editor's `initialize`, or
//! before its first call), advertising `fs.readTextFile` and `fs.writeTextFile` and no
//! terminal. The dialect has one conversation: it is one v1 session, created on the first
//! `sendUserMessage` with [`crate::AdapterOptions::cwd`].
//!
//! | 0.0.9 (editor -> agent) | v1 |
//! | --- | --- |
//! | `initialize` | answered `{"protocolVersion": "0.0.9", "isAuthenticated": <the agent lists no auth methods>}` whatever version was asked for (the dialect's rule: the editor decides) |
//! | `authenticate` | `authenticate` with the agent's first agent-run auth method; nothing when it needs none; `-32000` when it offers only terminal logins |
//! | `sendUserMessage` | `session/prompt` in the implicit session: `text` chunks become text blocks, `path` mentions resource links (`file://`, relative paths resolved against the cwd); answered `null` when the turn ends, whatever the stop reason; a v1 error passes through |
//! | `cancelSendMessage` | `session/cancel` for the running turn (nothing when none runs); answered `null` |
//!
//! | v1 (agent -> editor) | 0.0.9 |
//! | --- | --- |
//! | `agent_message_chunk` / `agent_thought_chunk` (text) | `streamAssistantMessageChunk` `{text}` / `{thought}`, sent in order without waiting a round trip each: up to 64 await the editor's answers at once, and `sendUserMessage` is answered once the editor has answered all of the turn's; each answer is awaited at most the connection's `default_timeout` (a minute without one), so an editor that never answers slows the stream but does not hold the turn |
//! | `tool_call` | `pushToolCall` (label = title, icon from the kind, content and locations mapped); the editor picks the id and the translation keeps the mapping; a call created already finished is followed by `updateToolCall` |
//! | `tool_call_update` | `updateToolCall` with the mapped status and content; fields the update leaves out are filled in from what the editor shows, since 0.0.9 always sends a status and its content replaces the old |
//! | `session/request_permission` | `requestToolCallConfirmation`, the confirmation kind derived from the tool kind (`edit`/`delete`/`move` -> `edit`, `execute` -> `execute` with `rawInput.command`, `fetch` -> `fetch` with `rawInput.url(s)`, else `other`; fields the request leaves out, `rawInput` included, come from the announced `tool_call`); the editor's new id replaces the old mapping, and the outcome selects an option of the matching kind (`allow` -> allow-once, `alwaysAllow*` -> allow-always, `reject` -> reject-once; `cancel`, or no such option, -> cancelled) |
//! | `fs/read_text_file`, `fs/write_text_file` | `readTextFile`, `writeTextFile` |
//!
//! Dropped with a `warn` log (the dialect cannot show them): plans, non-text message
//! chunks, updates to tool calls the editor was never shown, and mode/command/config/
//! session-info updates; `user_message_chunk` is dropped quietly (the editor shows its own
//! messages). Refused with `-32601` and a message saying why: `terminal/*`, `elicitation/*`
//! and extension methods.
//!
//! # A 0.0.9 agent behind a v1 client
//!
//! The dialect has one conversation: it is the one v1 session, [`SESSION_ID`].
//!
//! | v1 (client -> agent) | 0.0.9 |
//! | --- | --- |
//! | `initialize` | `initialize` with `"0.0.9"` (an answer with another version is `-32600`); answered version 1, no `loadSession`, text-only prompts, and one agent-run auth method ([`AUTH_METHOD_ID`]) when the agent says `isAuthenticated: false` |
//! | `authenticate` | `authenticate` (the agent runs its own login flow) |
//! | `session/new` | nothing crosses the wire; answers [`SESSION_ID`]; a second `session/new` is `-32600` (start the agent again for a new conversation) |
//! | `session/prompt` | `sendUserMessage`: text blocks as `text` chunks, resource links and embedded resources with `file://` URIs as `path` mentions (other URIs and embedded text as text); images and audio are refused with `-32602` naming the block; one turn at a time; answered `end_turn` once every chunk the agent sent before its answer has reached the client, `cancelled` after a `session/cancel` |
//! | `session/cancel` | `cancelSendMessage` while a turn runs |
//!
//! | 0.0.9 (agent -> client) | v1 |
//! | --- | --- |
//! | `streamAssistantMessageChunk` `{text}` / `{thought}` | `session/update` `agent_message_chunk` / `agent_thought_chunk`, in order |
//! | `pushToolCall` | `tool_call` (`in_progress`), kind from the icon; the translation allocates the numeric id (`n`) and names the v1 tool call `tool-<n>` |
//! | `updateToolCall` | `tool_call_update` with the mapped status and the content replaced (`null` clears it); an id never handed out is `-32602` |
//! | `requestToolCallConfirmation` | `tool_call` (`pending`, the confirmation as `rawInput`), then `session/request_permission` with options built from the confirmation kind (option ids are the outcome names); the selected option maps back to its outcome, a cancelled request to `cancel` |
//! | `readTextFile`, `writeTextFile` | `fs/read_text_file`, `fs/write_text_file` when the client advertised them, else [`crate::AdapterOptions::fs`], else `-32601` |
//!
//! Every other v1 method is refused with `-32601` saying why; notifications other than
//! `session/cancel` are dropped with a `debug` log. A 0.0.9 agent that streams before the
//! client created its session gets `-32600` (there is no session to show the chunk in).
//!
//! The vocabulary both translations share (icons and kinds, statuses, content, confirmations
//! and outcomes) is `acp_types::legacy::v0_0_9::convert`'s, each mapping written once with
//! its inverse.
//!
//! # Its own sides
//!
//! An agent implements [`Agent`] (requests run concurrently, so `cancelSendMessage` is
//! served while a `sendUserMessage` runs) and calls the editor through [`ClientHandle`]; an
//! editor implements [`Client`] (requests handled one at a time, in the order sent) and
//! calls the agent through [`AgentHandle`].

// The dialect's own sides, generated from the method table of its schema.
#[path = "generated/v0_0_9.rs"]
#[rustfmt::skip]
mod native;
pub(crate) mod v1_agent;
pub(crate) mod v1_client;

use std::path::Path;

use acp_rpc::{Error, ErrorCode};
use acp_types::legacy::v0_0_9 as z;
use acp_types::v1;

use crate::translate::prompt_pieces;

pub use native::{
    Agent, AgentConnection, AgentHandle, Client, ClientConnection, ClientHandle, Context, connect,
    connect_with, serve, serve_with,
};
pub use v1_client::{AUTH_METHOD_ID, SESSION_ID};

// What the method table cannot say about the native sides.

/// The wire of the dialect: `"jsonrpc": "2.0"` written on every message but not required on
/// input, `params` omitted when empty, no notifications (every call is a request), ids from 0
/// unless [`acp_rpc::Config::first_request_id`] says otherwise.
pub fn framing() -> acp_rpc::Framing {
    acp_rpc::Framing::default()
        .accept_missing_jsonrpc(true)
        .omit_null_params(true)
        .notifications(false)
        .first_request_id(0)
}

/// The default answers of [`Agent`] that are the dialect's own.
mod defaults {
    use super::{Context, Error, z};

    /// `initialize`: this dialect's version (`"0.0.9"`, whatever the editor asked for, as
    /// the dialect's rule says: the editor decides whether it can go on) and
    /// `isAuthenticated: true`.
    pub(super) fn initialize(
        params: z::InitializeParams,
        cx: &Context,
    ) -> Result<z::InitializeResponse, Error> {
        let _ = (params, cx);
        Ok(z::InitializeResponse::new(
            z::ProtocolVersion::current(),
            true,
        ))
    }
}

impl ClientHandle {
    /// `streamAssistantMessageChunk` with text.
    ///
    /// Not an `async fn`, as the two below: the returned future is the request's own, not
    /// one that also holds the text (a translation awaits one per streamed chunk).
    pub fn stream_text(
        &self,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let chunk = z::AssistantMessageChunk::Text(z::TextAssistantMessageChunk::new(text));
        self.stream_assistant_message_chunk(z::StreamAssistantMessageChunkParams::new(chunk))
    }

    /// `streamAssistantMessageChunk` with a thought.
    pub fn stream_thought(
        &self,
        thought: impl Into<String>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let chunk =
            z::AssistantMessageChunk::Thought(z::ThoughtAssistantMessageChunk::new(thought));
        self.stream_assistant_message_chunk(z::StreamAssistantMessageChunkParams::new(chunk))
    }
}

impl AgentHandle {
    /// `initialize` with this dialect's version, `"0.0.9"`. Like the dialect's own editors,
    /// an answer with any other version is an error (`-32600`, saying which): 0.0.x peers
    /// speak only their exact version.
    pub async fn initialize(&self) -> Result<z::InitializeResponse, Error> {
        let params = z::InitializeParams::new(z::ProtocolVersion::current());
        let answer = self.peer().typed_request(&params).await?;
        if answer.protocol_version.0 == z::PROTOCOL_VERSION {
            return Ok(answer);
        }
        Err(Error::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "incompatible versions: the agent speaks {:?}, this client only {:?}",
                answer.protocol_version.0,
                z::PROTOCOL_VERSION
            ),
        ))
    }
}

// The prompt's mapping, each direction next to the other (the rest of the vocabulary is
// `acp_types::legacy::v0_0_9::convert`'s).

/// A user message chunk as a v1 content block: text as text, a mentioned path as a resource
/// link to the file (relative paths resolved against the session's `cwd`).
fn block_of(chunk: &z::UserMessageChunk, cwd: &Path) -> v1::ContentBlock {
    match chunk {
        z::UserMessageChunk::Text(text) => v1::ContentBlock::text(text.text.clone()),
        z::UserMessageChunk::Path(mention) => {
            let absolute = cwd.join(&mention.path);
            let uri = format!("file://{}", absolute.to_string_lossy());
            v1::ContentBlock::from(v1::ResourceLink::new(mention.path.clone(), uri))
        }
    }
}

/// The v1 prompt as 0.0.9 user message chunks: text as text, resource links and embedded
/// resources to `file://` URIs as path mentions, other embedded text as text; images and
/// audio are refused, naming the block.
fn chunks_of(prompt: &[v1::ContentBlock]) -> Result<Vec<z::UserMessageChunk>, Error> {
    let text = |text: &str| z::UserMessageChunk::Text(z::TextUserMessageChunk::new(text));
    let mention = |uri: &str, or: &str| match uri.strip_prefix("file://") {
        Some(path) => z::UserMessageChunk::Path(z::PathUserMessageChunk::new(path)),
        None => text(or),
    };
    let takes = "a 0.0.9 agent takes text and file mentions only";
    prompt_pieces(prompt, takes, |block| match block {
        v1::ContentBlock::Text(t) => Some(text(&t.text)),
        v1::ContentBlock::ResourceLink(link) => Some(mention(&link.uri, &link.uri)),
        v1::ContentBlock::Resource(embedded) => Some(match &embedded.resource {
            v1::EmbeddedResourceResource::TextResourceContents(r) => mention(&r.uri, &r.text),
            v1::EmbeddedResourceResource::BlobResourceContents(r) => mention(&r.uri, &r.uri),
        }),
        _ => None,
    })
}
