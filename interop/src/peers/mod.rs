//! The Rust peers of the matrix, run as subcommands of the `acp-interop` binary.
//!
//! - ours: [`ours_agent`] (acp-agent) and [`ours_client`] (acp-client), the sides under test;
//! - the official Rust SDK's: [`official_agent`] and [`official_client`]
//!   (`agent-client-protocol` 5.2.0).
//!
//! - [`official_v2`]: the official Rust SDK's v2 side (feature `unstable_protocol_v2`).
//! - [`ours_v2`]: ours speaking v2 only or both versions (the v2 and negotiation cells).
//! - [`chain`]: the conductors and pass-through proxies of the proxy-chain cells, ours and
//!   the official crates'.
//! - [`remote`]: the servers of the remote cells (acp-remote's gateway and the official
//!   `agent-client-protocol-http` one) and [`remote::AgentTarget`].
//!
//! Agents take `[--report <file>]` (stdout is their protocol channel); clients take
//! `--cwd <workspace> -- <agent command...>` (or `--url <url> --token <token>`) and print their
//! events on stdout. All follow [`crate::script`].

pub mod chain;
pub mod official_agent;
pub mod official_client;
pub mod official_v2;
pub mod ours_agent;
pub mod ours_client;
pub mod ours_v2;
pub mod remote;
