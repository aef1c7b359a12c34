//! The interop matrix: our agent and our client (acp-agent, acp-client) against the official
//! TypeScript (`@agentclientprotocol/sdk`), Python (`agent-client-protocol`) and Rust
//! (`agent-client-protocol`) SDKs, each cell a run of two real processes whose every line is
//! recorded on the wire and checked.
//!
//! Run it with `cargo xtask interop` (installs the npm and PyPI packages into a cache outside
//! the source tree, then runs [`matrix`]). `cargo test -p acp-interop` runs the cells that need
//! only Rust.
//!
//! - [`script`]: the script every peer follows (`peers/script.json`, and `peers/script.v2.json`
//!   for the cells that settle on protocol v2), so every cell can be checked against the same
//!   expectations.
//! - [`tap`]: the recording relay between a client and the agent it spawns.
//! - [`peers`]: the Rust peers: ours (built on acp-agent / acp-client) and the official Rust
//!   SDK's. The TypeScript and Python peers live in `peers/ts` and `peers/py`.
//! - [`report`]: the event lines the Rust peers write.
//! - [`transcript`], [`checks`], [`matrix`] and [`validate`]: reading a recorded cell, the
//!   assertions on it, running the cells, and validating them against the official schema.
//! - [`server`]: the server process of a remote cell (a client reaching its agent over
//!   Streamable HTTP or WebSocket through acp-remote's gateway or the official
//!   `agent-client-protocol-http` server, the agent behind it still recorded by the tap).
//! - [`chain`]: the proxy-chain cells (a conductor, two proxies and the agent, ours and the
//!   official crates' mixed, every hop recorded).
//! - [`cache`]: where the npm and PyPI installs live and how they are made.
//!
//! The same minimal agent and minimal client are written with both Rust libraries: ours are
//! the crates' own examples, `acp-agent/examples/minimal_agent.rs` and
//! `acp-client/examples/minimal_client.rs` (built here as `minimal_agent_ours` and
//! `minimal_client_ours`), the official crate's are `interop/examples/minimal_agent_official.rs`
//! and `minimal_client_official.rs` (initialize, session/new, a prompt that streams two
//! chunks, on stdio; the client spawns the agent command given on the command line, prompts
//! once and prints the stream and the stop reason). `tests/minimal_examples.rs` runs each
//! client against each agent.

#![deny(missing_docs)]

pub mod cache;
pub mod chain;
pub mod checks;
pub mod matrix;
pub mod peers;
pub mod report;
pub mod script;
pub mod server;
pub mod tap;
pub mod transcript;

/// Schema validation of the cells' transcripts, a step of [`matrix`] (its old path).
pub use matrix::validate;
