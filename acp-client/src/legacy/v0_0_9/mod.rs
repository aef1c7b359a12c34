//! The 0.0.9 dialect on the client side: the `pushToolCall` protocol Gemini CLI spoke before
//! v1, with a string `protocolVersion`, one implicit conversation, and no notifications (see
//! `acp_types::legacy` for who serves what).
//!
//! * Native: implement [`Client`] and [`connect`] it; [`AgentHandle`] calls the agent's
//!   methods.
//! * Adapter: [`connect_v1`] drives a 0.0.9 agent with one v1 [`crate::Client`] and gives
//!   back an ordinary [`crate::ClientConnection`].
//!
//! # How the adapter maps a v1 client onto a 0.0.9 agent
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
//! | `pushToolCall` | `tool_call` (`in_progress`), kind from the icon; the adapter allocates the numeric id (`n`) and names the v1 tool call `tool-<n>` |
//! | `updateToolCall` | `tool_call_update` with the mapped status and the content replaced (`null` clears it); an id never handed out is `-32602` |
//! | `requestToolCallConfirmation` | `tool_call` (`pending`, the confirmation as `rawInput`), then `session/request_permission` with options built from the confirmation kind (option ids are the outcome names); the selected option maps back to its outcome, a cancelled request to `cancel` |
//! | `readTextFile`, `writeTextFile` | `fs/read_text_file`, `fs/write_text_file` when the client advertised them, else [`AdapterOptions::fs`], else `-32601` |
//!
//! Every other v1 method is refused with `-32601` saying why; notifications other than
//! `session/cancel` are dropped with a `debug` log. A 0.0.9 agent that streams before the
//! client created its session gets `-32600` (there is no session to show the chunk in).
//! The vocabulary mapping (icons and kinds, statuses, content, outcomes) is
//! `acp_types::legacy::v0_0_9::convert`'s.

mod adapter;
mod native;

pub use adapter::{AUTH_METHOD_ID, AdapterOptions, SESSION_ID, connect_v1, connect_v1_with};
pub use native::{AgentHandle, Client, Connection, connect, connect_with};
