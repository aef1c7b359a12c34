//! The agent behind one remote connection: an [`acp_agent::Agent`] served in process, or a
//! stdio agent command spawned as a child (the gateway). A child gets the client's messages
//! as JSON lines and its stdout's lines are routed (read with acp-rpc's line framer); an
//! agent served in process runs on acp-rpc's frame adapter
//! ([`Server::in_process`](crate::Server::in_process)), its engine handing each message
//! to the connection's router itself, or on one end of a memory pair
//! ([`Server::in_process_with`](crate::Server::in_process_with)), so whole messages pass
//! both ways with no pipe and no line framing (the agent output of [`super::connection`]).

use std::sync::Arc;
use std::time::Duration;

use acp_agent::negotiate::{NegotiatedConnection, NegotiationError};
use acp_agent::{Agent, AgentConnection};
use acp_client::process::{AgentCommand, AgentProcess};
use acp_rpc::transport::{
    FrameAdapter, FramePort, FrameReceiver, FrameSender, MemoryEnd, memory_pair,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use super::connection::{OutputSlot, RoutedOutput};
use crate::security::Identity;

/// Messages each way between the connection and an agent served on frames, not yet taken.
const FRAMES: usize = 256;
/// Time a gateway child has to exit after its stdin closed, then after SIGTERM.
const CHILD_GRACE: Duration = Duration::from_secs(2);

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

/// The agent's end of a running connection: its output, its input and what keeps it alive.
pub(crate) struct Running {
    pub(crate) output: Output,
    pub(crate) input: Input,
    /// The child of a gateway, or the in-process agent's connection.
    pub(crate) guard: Option<Guard>,
}

/// Where the client's messages go.
pub(crate) enum Input {
    /// JSON lines to write (a gateway child's stdin).
    Pipe(Box<dyn AsyncWrite + Send + Unpin>),
    /// One frame per message (an in-process agent).
    Frames(FrameSender),
}

/// Where the agent's output comes from.
pub(crate) enum Output {
    /// Lines to read (a gateway child's stdout).
    Pipe(Box<dyn AsyncRead + Send + Unpin>),
    /// One frame per message (an in-process agent on a memory pair).
    Frames(FrameReceiver),
    /// Handed to the router by the agent's own writer, once the connection is set in the
    /// slot (an in-process agent on frames).
    Routed(Arc<OutputSlot>),
}

/// Ends the agent when the connection ends.
pub(crate) enum Guard {
    InProcess(AgentConnection),
    /// The task that negotiates, then holds the connection until told to end it (or until
    /// this sender is dropped).
    Negotiated(oneshot::Sender<()>),
    Gateway(Box<AgentProcess>),
}

impl Guard {
    /// Ends the agent: the in-process connection is closed; the child gets EOF, then
    /// SIGTERM, then SIGKILL, and is reaped (in the background).
    pub(crate) fn end(self, metrics: Option<Arc<crate::Metrics>>) {
        match self {
            Guard::InProcess(conn) => conn.close(),
            Guard::Negotiated(end) => {
                let _ = end.send(());
            }
            Guard::Gateway(child) => {
                // Outside a runtime (a connection dropped as its runtime shuts down) the
                // child is killed by its drop instead.
                let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                    if let Some(metrics) = metrics {
                        metrics.agent_ended();
                    }
                    return;
                };
                runtime.spawn(async move {
                    let pid = child.id();
                    match child.shutdown(CHILD_GRACE).await {
                        Ok(status) => tracing::debug!(?pid, %status, "gateway agent reaped"),
                        Err(error) => tracing::warn!(?pid, %error, "gateway agent shutdown"),
                    }
                    if let Some(metrics) = metrics {
                        metrics.agent_ended();
                    }
                });
            }
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
