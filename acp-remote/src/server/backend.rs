//! The agent behind one remote connection: an [`acp_agent::Agent`] served in process, or a
//! stdio agent command spawned as a child (the gateway). A child gets the client's messages
//! as JSON lines and its stdout's lines are routed (read with acp-rpc's line framer); an
//! agent served in process runs on acp-rpc's frame adapter
//! ([`Server::in_process`](crate::Server::in_process)), its engine handing each message
//! to the connection's router itself, or on one end of a memory pair
//! ([`Server::in_process_with`](crate::Server::in_process_with)), so whole messages pass
//! both ways with no pipe and no line framing (the agent output of [`super::connection`]).

use std::sync::Arc;

use acp_agent::negotiate::{NegotiatedConnection, NegotiationError};
use acp_agent::{Agent, AgentConnection};
use acp_client::process::{AgentCommand, AgentProcess};
use acp_rpc::transport::{FrameAdapter, FramePort, MemoryEnd, memory_pair};
use tokio::sync::oneshot;

use super::connection::{Guard, Input, Output, OutputSlot, RoutedOutput, Running};
use crate::security::Identity;

/// Messages each way between the connection and an agent served on frames, not yet taken.
const FRAMES: usize = 256;

/// Starts an in-process agent on its end of a memory pair, for the connection's identity.
type Make = dyn Fn(MemoryEnd, &Identity) -> AgentConnection + Send + Sync;

/// Starts an in-process agent on its frame adapter, for the connection's identity.
type MakeOnFrames = dyn Fn(FrameAdapter, &Identity) -> AgentConnection + Send + Sync;

/// Starts an in-process agent on its frame adapter, for the connection's identity, once
/// the client's first message has chosen what it speaks (v1, or v2 through the translation).
type MakeNegotiated = dyn Fn(FrameAdapter, &Identity) -> BoxFuture<Result<NegotiatedConnection, NegotiationError>>
    + Send
    + Sync;

/// A boxed future that can move to a task.
pub(crate) type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// Builds a gateway child's command for the identity of the connection it serves.
pub(crate) type MakeCommand = dyn Fn(&Identity) -> AgentCommand + Send + Sync;

/// What serves each remote connection.
#[derive(Clone)]
pub(crate) enum Backend {
    /// An agent served in process however the application says, on one end of a memory pair.
    InProcess(Arc<Make>),
    /// A fresh agent value per connection, served in process on frames.
    OnFrames(Arc<MakeOnFrames>),
    /// An agent served in process on frames in the version the client's first message
    /// offers ([`acp_agent::Builder::negotiate`]'s `over_frames`).
    Negotiated(Arc<MakeNegotiated>),
    /// One child process per connection, its command made for the connection's identity.
    Gateway(Arc<MakeCommand>),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::InProcess(_) => f.write_str("InProcess"),
            Backend::OnFrames(_) => f.write_str("OnFrames"),
            Backend::Negotiated(_) => f.write_str("Negotiated"),
            Backend::Gateway(_) => f.write_str("Gateway"),
        }
    }
}

impl Backend {
    /// Serves an agent built by `make` for each connection.
    pub(crate) fn in_process<A, F>(make: F) -> Self
    where
        A: Agent,
        F: Fn() -> A + Send + Sync + 'static,
    {
        Backend::OnFrames(Arc::new(move |frames, who: &Identity| {
            acp_agent::Builder::new(make())
                .identity(who.session_owner())
                .over(frames)
        }))
    }

    /// Starts the agent for a new connection of `who` (an in-process agent is told it).
    /// The error is for the server's log only: it may name paths of this machine.
    pub(crate) fn start(&self, who: &Identity) -> Result<Running, String> {
        match self {
            Backend::InProcess(make) => {
                let (agent_end, ours) = memory_pair(FRAMES);
                let FramePort { sender, receiver } = ours.into_port();
                let agent = make(agent_end, who);
                Ok(Running {
                    output: Output::Frames(receiver),
                    input: Input::Frames(sender),
                    guard: Some(Guard::InProcess(agent)),
                })
            }
            Backend::OnFrames(make) => {
                let slot = Arc::new(OutputSlot::default());
                let output = RoutedOutput::new(slot.clone());
                let (frames, sender) = FrameAdapter::writing(output, FRAMES);
                let agent = make(frames, who);
                Ok(Running {
                    output: Output::Routed(slot),
                    input: Input::Frames(sender),
                    guard: Some(Guard::InProcess(agent)),
                })
            }
            Backend::Negotiated(make) => {
                let slot = Arc::new(OutputSlot::default());
                let output = RoutedOutput::new(slot.clone());
                let (frames, sender) = FrameAdapter::writing(output, FRAMES);
                let negotiating = make(frames, who);
                let (end, ended) = oneshot::channel::<()>();
                tokio::spawn(async move {
                    // A client that leaves before its first message ends the negotiation.
                    let conn = match negotiating.await {
                        Ok(conn) => conn,
                        Err(error) => {
                            tracing::debug!(%error, "in-process agent not started");
                            return;
                        }
                    };
                    tracing::debug!(version = conn.version(), "in-process agent serving");
                    tokio::select! {
                        _ = ended => conn.close(),
                        _ = conn.closed() => {}
                    }
                });
                Ok(Running {
                    output: Output::Routed(slot),
                    input: Input::Frames(sender),
                    guard: Some(Guard::Negotiated(end)),
                })
            }
            Backend::Gateway(make) => {
                // Set last, so it is the one the child sees whatever `make` put there.
                let cmd = make(who).env(super::Server::IDENTITY_ENV, &who.0);
                let mut child = AgentProcess::spawn(&cmd).map_err(|e| e.to_string())?;
                let (stdout, stdin) = child
                    .take_stdio()
                    .ok_or_else(|| "the agent's stdio is missing".to_owned())?;
                Ok(Running {
                    output: Output::Pipe(Box::new(stdout)),
                    input: Input::Pipe(Box::new(stdin)),
                    guard: Some(Guard::Gateway(Box::new(child))),
                })
            }
        }
    }
}
