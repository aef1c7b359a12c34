//! The agent behind one remote connection: an [`acp_agent::Agent`] served in process over an
//! in-memory pipe, or a stdio agent command spawned as a child (the gateway). Either way the
//! connection sees a byte pipe of JSON lines, so routing is the same for both.

use std::sync::Arc;
use std::time::Duration;

use acp_agent::{Agent, AgentConnection};
use acp_client::process::{AgentCommand, AgentProcess};
use tokio::io::{AsyncRead, AsyncWrite};

/// Bytes buffered each way in the in-process pipe.
const PIPE_BYTES: usize = 256 * 1024;
/// Time a gateway child has to exit after its stdin closed, then after SIGTERM.
const CHILD_GRACE: Duration = Duration::from_secs(2);

type Make = dyn Fn(PipeRead, PipeWrite) -> AgentConnection + Send + Sync;
type PipeRead = tokio::io::ReadHalf<tokio::io::DuplexStream>;
type PipeWrite = tokio::io::WriteHalf<tokio::io::DuplexStream>;

/// What serves each remote connection.
#[derive(Clone)]
pub(crate) enum Backend {
    /// A fresh agent value per connection, served in process.
    InProcess(Arc<Make>),
    /// One child process per connection.
    Gateway(Arc<AgentCommand>),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::InProcess(_) => f.write_str("InProcess"),
            Backend::Gateway(cmd) => f.debug_tuple("Gateway").field(cmd).finish(),
        }
    }
}

/// The agent's end of a running connection: its output, its input and what keeps it alive.
pub(crate) struct Running {
    pub(crate) output: Box<dyn AsyncRead + Send + Unpin>,
    pub(crate) input: Box<dyn AsyncWrite + Send + Unpin>,
    pub(crate) guard: Guard,
}

/// Ends the agent when the connection ends.
pub(crate) enum Guard {
    InProcess(AgentConnection),
    Gateway(Box<AgentProcess>),
    /// Nothing to end (tests driving a connection by hand).
    #[cfg(test)]
    Nothing,
}

impl Guard {
    /// Whether the agent is a child process (the gateway).
    pub(crate) fn is_process(&self) -> bool {
        matches!(self, Guard::Gateway(_))
    }

    /// Ends the agent: the in-process connection is closed; the child gets EOF, then
    /// SIGTERM, then SIGKILL, and is reaped (in the background).
    pub(crate) fn end(self, metrics: Option<Arc<crate::Metrics>>) {
        match self {
            Guard::InProcess(conn) => conn.close(),
            #[cfg(test)]
            Guard::Nothing => {}
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
        Backend::InProcess(Arc::new(move |read, write| {
            acp_agent::serve(make(), read, write)
        }))
    }

    /// Starts the agent for a new connection. The error is for the server's log only: it may
    /// name paths of this machine.
    pub(crate) fn start(&self) -> Result<Running, String> {
        match self {
            Backend::InProcess(make) => {
                let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
                let (their_read, their_write) = tokio::io::split(theirs);
                let conn = make(their_read, their_write);
                let (output, input) = tokio::io::split(ours);
                Ok(Running {
                    output: Box::new(output),
                    input: Box::new(input),
                    guard: Guard::InProcess(conn),
                })
            }
            Backend::Gateway(cmd) => {
                let mut child = AgentProcess::spawn(cmd).map_err(|e| e.to_string())?;
                let (stdout, stdin) = child
                    .take_stdio()
                    .ok_or_else(|| "the agent's stdio is missing".to_owned())?;
                Ok(Running {
                    output: Box::new(stdout),
                    input: Box::new(stdin),
                    guard: Guard::Gateway(Box::new(child)),
                })
            }
        }
    }
}
