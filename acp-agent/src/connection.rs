//! The agent's connection: the [`AgentConnection`] a [`crate::Builder`] starts, with the
//! dispatcher (`dispatch.rs`) serving the [`Agent`].

use std::sync::{Arc, OnceLock};

use acp_rpc::{CloseReason, Config, Connection};

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

/// Starts the v1 connection of a [`crate::Builder`]: its dispatcher, its state and, with a
/// store, the recorder that lets go of the store when the connection ends.
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
    let recorder = store.map(|store| Recorder::new(store, identity.as_deref().map(str::to_owned)));
    // With `Durability::Event` the recorder appends each batch of updates just before the
    // writer sends it (see `record::barrier`).
    let config = match recorder.as_ref().and_then(Recorder::write_barrier) {
        Some(barrier) => config.with_write_barrier(barrier),
        None => config,
    };
    let conn = Connection::over(transport, dispatch, config);
    let inner = Arc::new(Inner {
        peer: conn.peer().clone(),
        caps: Default::default(),
        sessions: Default::default(),
        awaiting,
        recorder,
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
