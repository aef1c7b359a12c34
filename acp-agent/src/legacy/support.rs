//! Pieces the legacy modules of this crate share: the connection type, the adapters'
//! options, and the in-memory plumbing the adapters run on.

use std::path::PathBuf;

pub(crate) use acp_rpc::memory::{pipe, tie};
use acp_rpc::{CloseReason, Config, Dialect, Handler, Peer};
use tokio::io::{AsyncRead, AsyncWrite};

/// A running connection of a legacy dialect; `H` is that dialect's typed handle to the
/// editor (`threads::ClientHandle`, `v0_0_9::ClientHandle`).
#[derive(Clone, Debug)]
pub struct Connection<H> {
    client: H,
    peer: Peer,
}

impl<H> Connection<H> {
    pub(crate) fn new(client: H, peer: Peer) -> Self {
        Connection { client, peer }
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

    /// The typed handle to the editor.
    pub fn client(&self) -> &H {
        &self.client
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

/// How a legacy adapter (`threads::serve_v1`, `v0_0_9::serve_v1`) presents a v1 agent.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AdapterOptions {
    /// The working directory of the sessions behind the legacy conversations
    /// (`session/new` needs one; neither legacy dialect has one), against which relative
    /// 0.0.9 `path` mentions are resolved. Default: the process's current directory.
    pub cwd: PathBuf,
    /// Where the sessions behind the conversations are kept (see [`crate::store`]): the
    /// threads dialect's `getThreads` and `openThread` then list and reload them.
    pub store: Option<crate::store::StoreSlot>,
}

impl Default for AdapterOptions {
    fn default() -> Self {
        AdapterOptions {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            store: None,
        }
    }
}

impl AdapterOptions {
    /// Sets [`AdapterOptions::cwd`].
    #[must_use]
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = cwd.into();
        self
    }

    /// Sets [`AdapterOptions::store`].
    #[must_use]
    pub fn with_store(mut self, store: impl crate::store::SessionStore) -> Self {
        self.store = Some(crate::store::StoreSlot(std::sync::Arc::new(store)));
        self
    }
}
