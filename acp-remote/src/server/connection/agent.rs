//! The agent's end of a connection, as the backend started it: where the client's messages
//! go, where the agent's come from, and what ends the agent with the connection.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use acp_agent::AgentConnection;
use acp_client::process::AgentProcess;
use acp_rpc::transport::{FrameReceiver, FrameSender};
use futures_util::task::AtomicWaker;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use super::Conn;

/// Time a gateway child has to exit after its stdin closed, then after SIGTERM.
const CHILD_GRACE: Duration = Duration::from_secs(2);

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

/// The connection a [`RoutedOutput`](super::RoutedOutput) routes to, set when the connection starts.
#[derive(Default)]
pub(crate) struct OutputSlot {
    pub(super) conn: OnceLock<Weak<Conn>>,
    /// The agent's writer, when it wrote before the connection was set.
    pub(super) waker: AtomicWaker,
}

impl OutputSlot {
    /// Routes the agent's output to `conn` from now on.
    pub(crate) fn attach(&self, conn: &Arc<Conn>) {
        let _ = self.conn.set(Arc::downgrade(conn));
        self.waker.wake();
    }
}
