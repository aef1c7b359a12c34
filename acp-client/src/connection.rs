//! The connection to an agent: [`ClientConnection`], started by a [`crate::Builder`], runs
//! the JSON-RPC connection with the application's [`Client`] serving the agent's calls, and
//! hands out the [`AgentHandle`].

use std::sync::Arc;

use acp_rpc::{CloseReason, Config, Connection, Peer};

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
    /// Starts the connection of a [`crate::Builder`]: `client` serves the agent's calls on
    /// `transport`.
    pub(crate) fn start<C, T>(client: Arc<C>, transport: T, config: Config) -> Self
    where
        C: Client,
        T: acp_rpc::transport::Transport,
    {
        let subscribers = Subscribers::default();
        let dispatcher = Dispatcher {
            client,
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
