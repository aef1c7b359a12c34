//! Pieces the legacy modules of this crate share: the connection type and the in-memory
//! plumbing the adapters run on.

use acp_rpc::{CloseReason, Config, Dialect, Error, Handler, Peer};
use acp_types::RequestMethod;
use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) use acp_rpc::memory::{pipe, tie};

/// A running connection to an agent of a legacy dialect; `H` is that dialect's typed handle
/// to the agent (`threads::AgentHandle`, `v0_0_9::AgentHandle`).
#[derive(Clone, Debug)]
pub struct Connection<H> {
    agent: H,
    peer: Peer,
}

impl<H> Connection<H> {
    pub(crate) fn new(agent: H, peer: Peer) -> Self {
        Connection { agent, peer }
    }

    /// Starts an rpc connection speaking `dialect` (which overrides the one in `config`)
    /// with `handler` serving the peer's requests, and wraps it with the typed handle
    /// `handle` builds from its [`Peer`].
    pub(crate) fn start<R, W>(
        reader: R,
        writer: W,
        handler: impl Handler,
        config: Config,
        dialect: Dialect,
        handle: impl FnOnce(Peer) -> H,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let conn = acp_rpc::Connection::new(reader, writer, handler, config.with_dialect(dialect));
        let peer = conn.peer().clone();
        Self::new(handle(peer.clone()), peer)
    }

    /// The typed handle to the agent.
    pub fn agent(&self) -> &H {
        &self.agent
    }

    /// Resolves when the connection has ended, with the reason.
    pub async fn closed(&self) -> CloseReason {
        self.peer.closed().await
    }

    /// Ends the connection.
    pub fn close(&self) {
        self.peer.close();
    }
}

/// The default answer of a native trait method: "method not found" for `P`'s method.
pub(crate) fn not_found<P: RequestMethod, T>() -> Result<T, Error> {
    Err(Error::method_not_found(P::METHOD))
}
