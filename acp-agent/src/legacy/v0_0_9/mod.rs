//! The 0.0.9 dialect on the agent side: the `pushToolCall` protocol Gemini CLI spoke before
//! v1, with a string `protocolVersion`, one implicit conversation, and no notifications (see
//! `acp_types::legacy` for who serves what).
//!
//! * Native: implement [`Agent`] and [`serve`] it.
//! * Adapter: [`serve_v1`] serves one v1 [`crate::Agent`] to a 0.0.9 editor.
//!
//! # How the adapter maps a 0.0.9 editor onto a v1 agent
//!
//! The adapter performs the v1 `initialize` itself (on the editor's `initialize`, or before
//! its first call), advertising `fs.readTextFile` and `fs.writeTextFile` and no terminal.
//! The dialect has one conversation: it is one v1 session, created on the first
//! `sendUserMessage` with [`AdapterOptions::cwd`].
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
//! | `agent_message_chunk` / `agent_thought_chunk` (text) | `streamAssistantMessageChunk` `{text}` / `{thought}`, awaited in order |
//! | `tool_call` | `pushToolCall` (label = title, icon from the kind, content and locations mapped); the editor picks the id and the adapter keeps the mapping; a call created already finished is followed by `updateToolCall` |
//! | `tool_call_update` | `updateToolCall` with the mapped status and content; fields the update leaves out are filled in from what the editor shows, since 0.0.9 always sends a status and its content replaces the old |
//! | `session/request_permission` | `requestToolCallConfirmation`, the confirmation kind derived from the tool kind (`edit`/`delete`/`move` -> `edit`, `execute` -> `execute` with `rawInput.command`, `fetch` -> `fetch` with `rawInput.url(s)`, else `other`; fields the request leaves out, `rawInput` included, come from the announced `tool_call`); the editor's new id replaces the old mapping, and the outcome selects an option of the matching kind (`allow` -> allow-once, `alwaysAllow*` -> allow-always, `reject` -> reject-once; `cancel`, or no such option, -> cancelled) |
//! | `fs/read_text_file`, `fs/write_text_file` | `readTextFile`, `writeTextFile` |
//!
//! The vocabulary mapping (kinds and icons, statuses, content) is
//! `acp_types::legacy::v0_0_9::convert`'s. Dropped with a `warn` log (the dialect cannot show
//! them): plans, non-text message chunks, updates to tool calls the editor was never shown,
//! and mode/command/config/session-info updates; `user_message_chunk` is dropped quietly (the
//! editor shows its own messages). Refused with `-32601` and a message saying why:
//! `terminal/*`, `elicitation/*` and extension methods.

mod adapter;
mod native;

pub use super::AdapterOptions;
pub use adapter::{serve_v1, serve_v1_with};
pub use native::{Agent, ClientHandle, Connection, Context, serve, serve_with};
