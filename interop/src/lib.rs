//! The interop matrix: our agent and our client (acp-agent, acp-client) against the official
//! TypeScript (`@agentclientprotocol/sdk`), Python (`agent-client-protocol`) and Rust
//! (`agent-client-protocol`) SDKs, each cell a run of two real processes whose every line is
//! recorded on the wire and checked.
//!
//! - [`script`]: the script every peer follows (`peers/script.json`), so every cell can be
//!   checked against the same expectations.
//! - [`tap`]: the recording relay between a client and the agent it spawns.
//! - [`peers`]: the Rust peers: ours (built on acp-agent / acp-client) and the official Rust
//!   SDK's. The TypeScript and Python peers live in `peers/ts` and `peers/py`.

#![deny(missing_docs)]

pub mod peers;
pub mod report;
pub mod script;
pub mod tap;
