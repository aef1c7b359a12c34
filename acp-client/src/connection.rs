//! The connection to an agent: [`ClientConnection`] runs the JSON-RPC connection with the
//! application's [`Client`] serving the agent's calls, and hands out the [`AgentHandle`].

use std::sync::Arc;

use acp_rpc::{CloseReason, Config, Connection, Peer};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::client::Client;
use crate::dispatch::Dispatcher;
use crate::handle::{AgentHandle, RequestTimeouts};
use crate::stream::Subscribers;

/// A running client-side connection to an agent.
///
/// Dropping it does not close the connection; use [`ClientConnection::close`].
#[derive(Clone, Debug)]
pub struct ClientConnection {
    conn: Connection,
    agent: AgentHandle,
}

impl ClientConnection {
    /// Starts serving `client` over `reader`/`writer` (the agent's stdout and stdin). Must
    /// be called inside a Tokio runtime.
    ///
    /// The [`Config`] carries an observer too, told about every message and finished request
    /// (see [`acp_rpc::observe`]), for your own metrics:
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use acp_client::{Client, ClientConnection, Config};
    /// use acp_rpc::observe::{Observer, RequestEvent};
    ///
    /// #[derive(Default)]
    /// struct SlowPrompts(AtomicU64);
    /// impl Observer for SlowPrompts {
    ///     fn request(&self, e: &RequestEvent<'_>) {
    ///         if e.method == "session/prompt" && e.latency.as_secs() >= 60 {
    ///             self.0.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     }
    /// }
    /// struct Quiet;
    /// impl Client for Quiet {}
    ///
    /// # async fn run(out: tokio::process::ChildStdout, inp: tokio::process::ChildStdin) {
    /// let slow = Arc::new(SlowPrompts::default());
    /// let conn = ClientConnection::new(Quiet, out, inp, Config::default().with_observer(slow.clone()));
    /// # let _ = conn; }
    /// ```
    pub fn new<C, R, W>(client: C, reader: R, writer: W, config: Config) -> Self
    where
        C: Client,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::with_client(Arc::new(client), reader, writer, config)
    }

    /// Like [`ClientConnection::new`] with a client shared with other code.
    pub fn with_client<C, R, W>(client: Arc<C>, reader: R, writer: W, config: Config) -> Self
    where
        C: Client,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let subscribers = Subscribers::default();
        let dispatcher = Dispatcher {
            client,
            subscribers: subscribers.clone(),
        };
        let conn = Connection::new(reader, writer, dispatcher, config);
        let agent = AgentHandle {
            peer: conn.peer().clone(),
            subscribers,
            timeouts: Arc::new(RequestTimeouts::default()),
        };
        ClientConnection { conn, agent }
    }

    /// Like [`ClientConnection::new`] on any [`acp_rpc::transport::Transport`]: a
    /// `(reader, writer)` pair, or one end of an [`acp_rpc::transport::memory_pair`] for an
    /// agent in the same process (no JSON lines, no byte pipe between them).
    pub fn over<C, T>(client: C, transport: T, config: Config) -> Self
    where
        C: Client,
        T: acp_rpc::transport::Transport,
    {
        let subscribers = Subscribers::default();
        let dispatcher = Dispatcher {
            client: Arc::new(client),
            subscribers: subscribers.clone(),
        };
        let conn = Connection::over(transport, dispatcher, config);
        let agent = AgentHandle {
            peer: conn.peer().clone(),
            subscribers,
            timeouts: Arc::new(RequestTimeouts::default()),
        };
        ClientConnection { conn, agent }
    }

    /// Starts serving `client` with the default [`Config`].
    pub fn connect<C, R, W>(client: C, reader: R, writer: W) -> Self
    where
        C: Client,
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::new(client, reader, writer, Config::default())
    }

    /// The typed handle to the agent (cheap to clone).
    pub fn agent(&self) -> &AgentHandle {
        &self.agent
    }

    /// Replaces the request timeouts of [`ClientConnection::agent`] (handles cloned
    /// before keep theirs). See [`RequestTimeouts`].
    pub fn set_request_timeouts(&mut self, timeouts: RequestTimeouts) {
        self.agent.timeouts = Arc::new(timeouts);
    }

    /// The underlying JSON-RPC peer.
    pub fn peer(&self) -> &Peer {
        self.conn.peer()
    }

    /// Resolves when the connection has ended, with the reason, and its output is done
    /// (what was queued for the agent is written, see [`acp_rpc::Peer::finished`]), so a
    /// process may exit right after.
    pub async fn closed(&self) -> CloseReason {
        self.conn.finished().await
    }

    /// Ends the connection: pending calls fail, queued output is flushed, the agent sees EOF.
    pub fn close(&self) {
        self.conn.close();
    }
}
