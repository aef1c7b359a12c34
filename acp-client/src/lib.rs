//! The client side of the Agent Client Protocol.
//!
//! New here? `cookbook` (feature `process`, on by default) has a whole client (spawn,
//! negotiate, prompt, print the stream) in about forty lines; the `acp-agent` crate's
//! `cookbook` has the agent side.
//!
//! * [`negotiate`]: offer v1 and the legacy dialects in a pinned order and get a v1
//!   [`ClientConnection`] whatever the agent speaks ([`legacy`] wires in the dialects of
//!   acp-dialects, each with its mapping tables and native traits for editors that speak it
//!   directly).
//! * [`Client`]: implement what the agent may ask of you (permission prompts, files,
//!   terminals, `session/update`s); every method has a default.
//! * [`ClientConnection`]: runs a [`Client`] over a reader/writer pair and gives a typed,
//!   cloneable [`AgentHandle`] with every v1 agent method, plus
//!   [`AgentHandle::prompt_stream`] (a prompt turn as a stream of updates ending with the
//!   stop reason).
//! * [`AgentHandle::new_session_stream`], [`AgentHandle::session_updates`] and
//!   [`AgentHandle::prompt_on`]: a whole session as one
//!   stream (updates between turns too, each turn's result after its updates), for a client
//!   that owns its view of the session in one loop; [`steering`]: a message for the running
//!   turn (`_session/steering`) where the agent advertises it.
//! * [`process::AgentProcess`] (feature `process`): spawns an agent command with piped
//!   stdio, forwards its stderr to `tracing`, and kills its whole process group on drop.
//! * [`restart::SupervisedAgent`] (feature `process`): an agent process that is respawned
//!   when it dies, with its sessions resumed or loaded again (opt-in; the retry table of
//!   [`restart::RestartPolicy`]).
//! * [`permission::choose_permission`]: the option a policy (allow once, allow always,
//!   refuse) answers a permission request with, picked by kind, never by place: scripts and
//!   demo clients never grant more than they were asked to.
//! * `registry` (feature `registry`): the ACP agent registry, from an agent's id to a
//!   command for this platform (downloads and unpacks binary archives into a cache, or runs
//!   the user's `npx`/`uvx`).
//! * Building blocks for a [`Client`] impl: [`fs::SandboxedFs`] (files restricted to root
//!   directories, opened through directory handles) and [`terminal::Terminals`] (feature
//!   `process`; runs only what [`Client::approve_terminal`] allows).
//!
//! ```no_run
//! use acp_client::{Client, ClientConnection, PromptEvent};
//! use acp_types::v1::*;
//!
//! struct Printer;
//! impl Client for Printer {}
//!
//! # async fn run(stdout: tokio::io::DuplexStream, stdin: tokio::io::DuplexStream,
//! #              init: InitializeRequest, new: NewSessionRequest) -> Result<(), acp_client::Error> {
//! let conn = ClientConnection::connect(Printer, stdout, stdin);
//! let agent = conn.agent();
//! agent.initialize(init).await?;
//! let session = agent.new_session(new).await?;
//! let mut turn = agent.prompt_stream(PromptRequest::new(session.session_id, ["hello".into()]));
//! while let Some(event) = turn.next().await {
//!     match event {
//!         PromptEvent::Update(update) => println!("{update:?}"),
//!         PromptEvent::Done(result) => println!("stop: {:?}", result?.stop_reason),
//!     }
//! }
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod client;
pub mod connection;
#[cfg(feature = "process")]
pub mod cookbook;
mod dispatch;
pub mod fs;
#[rustfmt::skip]
mod generated;
pub mod handle;
pub mod legacy;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod negotiate;
pub mod permission;
#[cfg(feature = "process")]
pub mod process;
#[cfg(feature = "process")]
mod reaper;
#[cfg(feature = "registry")]
pub mod registry;
#[cfg(feature = "process")]
pub mod restart;
pub mod steering;
pub mod stream;
#[cfg(feature = "process")]
pub mod terminal;
#[cfg(feature = "v2")]
pub mod v2;

pub use acp_rpc::{Config, Error, ErrorCode};
/// Re-exported: the protocol dialects, for pinning and negotiation ([`negotiate`]).
pub use acp_types::Dialect;
/// Re-exported so `Client` impls can use `#[async_trait]` without their own dependency.
pub use async_trait::async_trait;
pub use client::Client;
pub use connection::ClientConnection;
pub use handle::{AgentHandle, RequestTimeouts};
pub use stream::{
    LoadedSession, PROMPT_STREAM_BUFFER, PromptEvent, PromptStream, SessionEvent, SessionUpdates,
};
