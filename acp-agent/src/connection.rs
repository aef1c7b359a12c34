//! The agent's connection: [`serve`], [`serve_stdio`], [`serve_with_store`] (and
//! [`serve_as`], [`serve_with_store_as`] for a server serving a named identity) and the
//! [`AgentConnection`] they start, with the dispatcher (`dispatch.rs`) serving the [`Agent`].

use std::sync::{Arc, OnceLock};

use acp_rpc::{CloseReason, Config, Connection};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::agent::Agent;
use crate::dispatch::Dispatch;
use crate::handle::ClientHandle;
use crate::record::Recorder;
use crate::state::{Awaiting, Inner};
use crate::store::SessionStore;

/// A running agent connection.
#[derive(Clone, Debug)]
pub struct AgentConnection {
    conn: Connection,
    client: ClientHandle,
}

impl AgentConnection {
    /// The typed handle to the client.
    pub fn client(&self) -> &ClientHandle {
        &self.client
    }

    /// Resolves when the connection has ended, with the reason, and its output is done
    /// (what was queued for the client is written, see [`acp_rpc::Peer::finished`]), so a
    /// process may exit right after. With a session store, the connection has let go of it
    /// by then (what running turns collected is written first), even while handles to the
    /// connection live on.
    pub async fn closed(&self) -> CloseReason {
        let reason = self.conn.finished().await;
        if let Some(recorder) = &self.client.inner.recorder {
            recorder.release().await;
        }
        reason
    }

    /// Ends the connection.
    pub fn close(&self) {
        self.conn.close();
    }

    pub(crate) fn peer(&self) -> &acp_rpc::Peer {
        self.conn.peer()
    }
}

/// Serves `agent` over a reader/writer pair with the default [`Config`].
pub fn serve<A, R, W>(agent: A, reader: R, writer: W) -> AgentConnection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(agent, reader, writer, Config::default())
}

/// Serves `agent` over stdin/stdout (the usual way an editor runs an agent). When they are
/// pipes or sockets they are driven by tokio's reactor in non-blocking mode, not through the
/// blocking thread pool (see [`acp_rpc::stdio`]), so do not let subprocesses inherit them.
pub fn serve_stdio<A: Agent>(agent: A) -> AgentConnection {
    serve(agent, acp_rpc::stdio::stdin(), acp_rpc::stdio::stdout())
}

/// Serves `agent` with a custom [`Config`] (limits, timeouts, wire tap, observer...). Must be
/// called within a Tokio runtime.
///
/// An observer (see [`acp_rpc::observe`]) is told about every message and finished request,
/// for your own metrics or OpenTelemetry:
///
/// ```no_run
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use acp_agent::Config;
/// use acp_rpc::observe::{MessageEvent, Observer};
///
/// #[derive(Default)]
/// struct BytesOut(AtomicU64);
/// impl Observer for BytesOut {
///     fn message(&self, e: &MessageEvent<'_>) {
///         if e.direction == acp_rpc::Direction::Outgoing {
///             self.0.fetch_add(e.size as u64, Ordering::Relaxed);
///         }
///     }
/// }
/// # fn run(agent: impl acp_agent::Agent) {
/// let out = Arc::new(BytesOut::default());
/// let config = Config::default().with_observer(out.clone());
/// let conn = acp_agent::serve_with(agent, tokio::io::stdin(), tokio::io::stdout(), config);
/// # let _ = conn; }
/// ```
pub fn serve_with<A, R, W>(agent: A, reader: R, writer: W, config: Config) -> AgentConnection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_inner(agent, (reader, writer), config, None, None)
}

/// [`serve_with`] on behalf of `identity`, the name of the remote caller's credential
/// (`None`: the unnamed identity, as [`serve_with`]): the agent reads it from
/// [`crate::AgentContext::identity`]. What a server (acp-remote's in-process backend)
/// calls for each remote connection.
pub fn serve_as<A, R, W>(
    agent: A,
    identity: Option<&str>,
    reader: R,
    writer: W,
    config: Config,
) -> AgentConnection
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_inner(
        agent,
        (reader, writer),
        config,
        None,
        identity.map(Arc::from),
    )
}

/// Serves `agent` with its sessions kept in `store` (see [`crate::store`]): the connection
/// records every session, serves `session/load` (history replayed before the answer),
/// `session/resume`, `session/list`, `session/close` and `session/delete` wherever the agent
/// leaves them at their default, and advertises them in `initialize`. Open the store first
/// ([`crate::store::JsonlStore::open`]) so that an unusable directory is an error at start.
pub fn serve_with_store<A, S, R, W>(
    agent: A,
    store: S,
    reader: R,
    writer: W,
    config: Config,
) -> AgentConnection
where
    A: Agent,
    S: SessionStore,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_inner(agent, (reader, writer), config, Some(Arc::new(store)), None)
}

/// [`serve_with_store`] on behalf of `identity` (see [`serve_as`]): the sessions this
/// connection creates are that identity's ([`crate::store::SessionMeta::owner`]), its
/// `session/list` shows only that identity's, and another identity's session is unknown to
/// it (`-32002` for `session/load`, `session/resume`, prompts and `session/close`;
/// `session/delete` leaves it be and answers as for a session that does not exist).
/// `None` is the unnamed identity: the sessions with no owner, those of a local agent.
pub fn serve_with_store_as<A, S, R, W>(
    agent: A,
    store: S,
    identity: Option<&str>,
    reader: R,
    writer: W,
    config: Config,
) -> AgentConnection
where
    A: Agent,
    S: SessionStore,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let identity = identity.map(Arc::from);
    serve_inner(
        agent,
        (reader, writer),
        config,
        Some(Arc::new(store)),
        identity,
    )
}

/// [`serve_with_store_as`] on any [`acp_rpc::transport::Transport`] (see [`serve_over_as`]):
/// a remote server's connection hands its agent whole messages this way.
pub fn serve_with_store_over_as<A, S, T>(
    agent: A,
    store: S,
    identity: Option<&str>,
    transport: T,
    config: Config,
) -> AgentConnection
where
    A: Agent,
    S: SessionStore,
    T: acp_rpc::transport::Transport,
{
    let identity = identity.map(Arc::from);
    serve_inner(agent, transport, config, Some(Arc::new(store)), identity)
}

/// Serves `agent` (for `identity`, as [`serve_as`]) on any [`acp_rpc::transport::Transport`]:
/// a `(reader, writer)` pair, or one end of an [`acp_rpc::transport::memory_pair`] for an
/// agent in the same process as its client (no JSON lines, no byte pipe between them).
pub fn serve_over_as<A, T>(
    agent: A,
    identity: Option<&str>,
    transport: T,
    config: Config,
) -> AgentConnection
where
    A: Agent,
    T: acp_rpc::transport::Transport,
{
    serve_inner(agent, transport, config, None, identity.map(Arc::from))
}

pub(crate) fn serve_inner<A, T>(
    agent: A,
    transport: T,
    config: Config,
    store: Option<Arc<dyn SessionStore>>,
    identity: Option<Arc<str>>,
) -> AgentConnection
where
    A: Agent,
    T: acp_rpc::transport::Transport,
{
    let awaiting = Arc::new(Awaiting::default());
    let slot: Arc<OnceLock<Arc<Inner>>> = Arc::default();
    let dispatch = Dispatch {
        agent: Arc::new(agent),
        inner: slot.clone(),
        awaiting: awaiting.clone(),
    };
    let conn = Connection::over(transport, dispatch, config);
    let inner = Arc::new(Inner {
        peer: conn.peer().clone(),
        caps: Default::default(),
        sessions: Default::default(),
        awaiting,
        recorder: store.map(|store| Recorder::new(store, identity.as_deref().map(str::to_owned))),
        offered: Default::default(),
        identity,
    });
    let _ = slot.set(inner.clone());
    if let Some(recorder) = inner.recorder.clone() {
        // The store is let go of when the connection ends, not when the last handle to
        // its state does (see `Recorder::release`).
        let peer = conn.peer().clone();
        tokio::spawn(async move {
            peer.closed().await;
            recorder.release().await;
        });
    }
    AgentConnection {
        conn,
        client: ClientHandle { inner },
    }
}
