//! The client side of the Agent Client Protocol.
//!
//! Implement [`Client`] (what the agent may ask of you: permission prompts, files,
//! terminals, `session/update`s; every method has a default), then start it with the one
//! front door, [`Builder`]: what it speaks, then where it runs. The connection gives a
//! typed, cloneable [`AgentHandle`] with every v1 agent method.
//!
//! ```
//! use acp_client::types::*;
//! use acp_client::{Builder, Client, PromptEvent};
//!
//! struct Printer;
//! impl Client for Printer {}
//!
//! # struct Echo;
//! # #[acp_agent::async_trait]
//! # impl acp_agent::Agent for Echo {
//! #     async fn initialize(&self, _: InitializeRequest, _: &acp_agent::AgentContext)
//! #         -> Result<InitializeResponse, acp_client::Error> {
//! #         Ok(InitializeResponse::new(ProtocolVersion::V1))
//! #     }
//! #     async fn new_session(&self, _: NewSessionRequest, _: &acp_agent::AgentContext)
//! #         -> Result<NewSessionResponse, acp_client::Error> {
//! #         Ok(NewSessionResponse::new("s1"))
//! #     }
//! #     async fn prompt(&self, _: PromptRequest, cx: &acp_agent::PromptContext)
//! #         -> Result<PromptResponse, acp_client::Error> {
//! #         cx.session().message_chunk("hello").await?;
//! #         Ok(PromptResponse::new(StopReason::EndTurn))
//! #     }
//! # }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An editor spawns the agent: `Builder::new(Printer).spawn(&AgentCommand::new("my-agent"))`.
//! // Here the agent is in this process, on the other end of an in-memory pipe.
//! let (conn, end) = Builder::new(Printer).pipe();
//! # let _agent = acp_agent::Builder::new(Echo).over(end);
//! let agent = conn.agent();
//! agent.initialize(InitializeRequest::new(ProtocolVersion::V1)).await?;
//! let session = agent.new_session(NewSessionRequest::new("/tmp", [])).await?;
//! let prompt = PromptRequest::new(session.session_id, ["hello".into()]);
//! let mut turn = agent.prompt_stream(prompt);
//! while let Some(event) = turn.next().await {
//!     match event {
//!         PromptEvent::Update(update) => println!("{update:?}"),
//!         PromptEvent::Done(result) => println!("stop: {:?}", result?.stop_reason),
//!     }
//! }
//! conn.close();
//! # Ok(()) }
//! ```
//!
//! The builder's other choices:
//!
//! * what it speaks: v1 (the default), [`Builder::negotiate`] to offer v1 and the legacy
//!   dialects in a pinned order and get a v1 connection whatever the agent speaks (see
//!   [`negotiate`]), [`Builder::dialect`] for one legacy dialect ([`legacy`] has each one's
//!   mapping tables and native traits), and `Builder::v2` (feature `v2`) for draft v2 with
//!   a fallback to v1;
//! * where it runs: `Builder::spawn` (feature `process`, an agent command),
//!   [`Builder::io`] (any reader/writer pair), [`Builder::over`] (any
//!   [`acp_rpc::transport::Transport`], acp-remote's WebSocket client among them) or
//!   [`Builder::pipe`] (in this process).
//!
//! `cookbook` (feature `process`, on by default) has a longer client; the `acp-agent`
//! crate's `cookbook` has the agent side. Beside the builder:
//!
//! * [`AgentHandle::prompt_stream`]: a prompt turn as a stream of updates ending with the
//!   stop reason; [`AgentHandle::new_session_stream`], [`AgentHandle::session_updates`] and
//!   [`AgentHandle::prompt_on`]: a whole session as one stream (updates between turns too,
//!   each turn's result after its updates), for a client that owns its view of the session
//!   in one loop; [`steering`]: a message for the running turn (`_session/steering`) where
//!   the agent advertises it.
//! * `process::AgentProcess` (feature `process`): the agent command with piped stdio, its
//!   stderr forwarded to `tracing`, its whole process group killed on drop.
//! * `restart::SupervisedAgent` (feature `process`): an agent process that is respawned
//!   when it dies, with its sessions resumed or loaded again (opt-in; the retry table of
//!   `restart::RestartPolicy`).
//! * [`permission::choose_permission`]: the option a policy (allow once, allow always,
//!   refuse) answers a permission request with, picked by kind, never by place: scripts and
//!   demo clients never grant more than they were asked to.
//! * `registry` (feature `registry`): the ACP agent registry, from an agent's id to a
//!   command for this platform (downloads and unpacks binary archives into a cache, or runs
//!   the user's `npx`/`uvx`).
//! * Building blocks for a [`Client`] impl: [`fs::SandboxedFs`] (files restricted to root
//!   directories, opened through directory handles) and `terminal::Terminals` (feature
//!   `process`; runs only what [`Client::approve_terminal`] allows).

#![deny(missing_docs)]

pub mod builder;
pub mod client;
pub mod connection;
#[cfg(feature = "process")]
pub mod cookbook;
mod dispatch;
pub mod fs;
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
/// Re-exported: the v1 protocol types.
pub use acp_types::v1 as types;
/// Re-exported so `Client` impls can use `#[async_trait]` without their own dependency.
pub use async_trait::async_trait;
pub use builder::Builder;
pub use client::Client;
pub use connection::ClientConnection;
pub use handle::{AgentHandle, RequestTimeouts};
pub use stream::{
    LoadedSession, PROMPT_STREAM_BUFFER, PromptEvent, PromptStream, SessionEvent, SessionUpdates,
};
