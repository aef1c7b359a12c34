//! The threads dialect on the client side: the first form of the protocol, with no
//! handshake, conversation threads, and no `jsonrpc` member (see `acp_types::legacy` for who
//! serves what).
//!
//! * Native: implement [`Client`] and [`connect`] it; [`AgentHandle`] calls the thread
//!   methods.
//! * Adapter: [`connect_v1`] drives a threads agent with one v1 [`crate::Client`] and gives
//!   back an ordinary [`crate::ClientConnection`].
//!
//! # How the adapter maps a v1 client onto a threads agent
//!
//! Sessions are threads: the session id is the thread id.
//!
//! | v1 (client -> agent) | threads |
//! | --- | --- |
//! | `initialize` | answered by the adapter (nothing is sent: the dialect has no handshake): version 1, `loadSession` and `session/list` supported, no auth methods |
//! | `session/new` | `createThread` (`cwd` and MCP servers cannot be passed on) |
//! | `session/load` | `openThread`, then `getThreadEntries` replayed as `session/update`s: messages as `user_message_chunk`/`agent_message_chunk` (one per chunk), file reads as completed `read` tool calls |
//! | `session/list` | `getThreads` (title and `modifiedAt` kept; `cwd` from [`AdapterOptions::cwd`]) |
//! | `session/prompt` | `sendMessage`: text blocks as text chunks, resource links as `@<path>` mentions; other blocks are refused with `-32602` naming the block; answered `end_turn` when the turn is over |
//!
//! | threads (agent -> client) | v1 |
//! | --- | --- |
//! | `streamMessageChunk` | `session/update` `agent_message_chunk`, in order |
//! | `readTextFile` | `fs/read_text_file` when the client advertised `fs.readTextFile` (`lineOffset` 0-based becomes `line` 1-based), else [`AdapterOptions::fs`]; `version` is always 0 |
//! | `readBinaryFile`, `stat`, `globSearch` | served by [`AdapterOptions::fs`] (a [`crate::fs::SandboxedFs`]); base64 for binary content |
//!
//! Without [`AdapterOptions::fs`] the last three (and `readTextFile` from a client without
//! `fs.readTextFile`) get `-32601` saying so. `session/cancel` is dropped with a `warn` log:
//! a threads agent cannot be cancelled. Every other v1 method is refused with `-32601`.

mod adapter;
mod native;

pub use adapter::{AdapterOptions, connect_v1, connect_v1_with};
pub use native::{AgentHandle, Client, Connection, connect, connect_with};
