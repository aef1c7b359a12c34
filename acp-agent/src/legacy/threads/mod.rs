//! The threads dialect on the agent side: the first form of the protocol, with no handshake,
//! conversation threads, and no `jsonrpc` member (see `acp_types::legacy` for who serves what).
//!
//! * Native: implement [`Agent`] and [`serve`] it.
//! * Adapter: [`serve_v1`] serves one v1 [`crate::Agent`] to a threads editor.
//!
//! # How the adapter maps a threads editor onto a v1 agent
//!
//! The adapter performs the v1 `initialize` itself before the first call, advertising
//! `fs.readTextFile` only (threads editors cannot write files or run terminals). Threads are
//! v1 sessions: the thread id is the session id.
//!
//! | threads (editor -> agent) | v1 |
//! | --- | --- |
//! | `getThreads` | the threads of this connection, plus `session/list` (for [`AdapterOptions::cwd`]) when the agent advertises it; title from `session_info_update`, else the first line of the first message, else `Thread <id>` |
//! | `createThread` | `session/new` with [`AdapterOptions::cwd`] and no MCP servers |
//! | `openThread` | nothing for a thread of this connection; otherwise `session/load` when the agent supports it (the replayed history becomes the thread's entries), else the error "Thread not found" |
//! | `getThreadEntries` | the history the adapter recorded: user and agent text (consecutive chunks merged into one message) and `readFile` entries for every file the agent read |
//! | `sendMessage` | `session/prompt` with one text block per chunk; answered `null` when the prompt ends, whatever the stop reason; a v1 error passes through |
//!
//! | v1 (agent -> editor) | threads |
//! | --- | --- |
//! | `session/update` `agent_message_chunk` (text) during a `sendMessage` | `streamMessageChunk`, awaited in order |
//! | `session/update` `user_message_chunk`, `session_info_update` | recorded (history, title) |
//! | `fs/read_text_file` | `readTextFile` (`line` 1-based becomes `lineOffset` 0-based, `limit` becomes `lineLimit`) |
//!
//! Dropped with a `warn` log (the dialect cannot show them): thoughts, tool calls and their
//! updates, plans, non-text message chunks, mode/command/config updates. Refused with
//! `-32601` and a message saying why: `session/request_permission` (a threads editor cannot
//! be asked), `fs/write_text_file`, `terminal/*`, `elicitation/*` and extensions. The
//! dialect has no cancel: an editor cannot stop a running turn.

mod adapter;
mod native;

pub use super::AdapterOptions;
pub use adapter::{serve_v1, serve_v1_with};
pub use native::{Agent, ClientHandle, Connection, Context, serve, serve_with};
