//! What every dialect module's own sides share: the running connection of a dialect's own
//! side ([`Connection`]) and the context its agent-side requests carry ([`Context`]). The
//! translations' skeleton is [`crate::translate`].

use acp_rpc::transport::Transport;
use acp_rpc::{CloseReason, Config, Error, Framing, Handler, Peer, RequestId};

use acp_types::RequestMethod;

/// A running connection of a dialect's own side; `H` is the typed handle to the peer: an
/// editor's handle for an agent ([`Connection::client`]), an agent's for an editor
/// ([`Connection::agent`]).
#[derive(Clone, Debug)]
pub struct Connection<H> {
    pub(crate) handle: H,
    pub(crate) peer: Peer,
}

/// Marks a typed handle to an agent (the editor's side holds one).
pub trait ToAgent {}

/// Marks a typed handle to an editor (the agent's side holds one).
pub trait ToClient {}

impl<H> Connection<H> {
    /// Starts an rpc connection speaking `dialect` (which overrides the one in `config`)
    /// with `handler` serving the peer's messages (the generated dispatch of a native side),
    /// and wraps it with the typed handle `handle` builds from its [`Peer`].
    pub(crate) fn start(
        transport: impl Transport,
        handler: impl Handler,
        config: Config,
        framing: Framing,
        handle: impl FnOnce(Peer) -> H,
    ) -> Self {
        let conn = acp_rpc::Connection::over(transport, handler, config.with_framing(framing));
        let peer = conn.peer().clone();
        Connection {
            handle: handle(peer.clone()),
            peer,
        }
    }

    /// The underlying JSON-RPC peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
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

impl<H: ToClient> Connection<H> {
    /// The typed handle to the editor.
    pub fn client(&self) -> &H {
        &self.handle
    }
}

impl<H: ToAgent> Connection<H> {
    /// The typed handle to the agent.
    pub fn agent(&self) -> &H {
        &self.handle
    }
}

/// The context of one request a dialect's agent serves.
#[derive(Clone, Debug)]
pub struct Context<H> {
    client: H,
    request_id: RequestId,
}

impl<H> Context<H> {
    pub(crate) fn new(client: H, request_id: RequestId) -> Self {
        Context { client, request_id }
    }

    /// The typed handle to the editor.
    pub fn client(&self) -> &H {
        &self.client
    }

    /// The id of the request being served.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }
}

/// The default answer of a native trait method: "method not found" for `P`'s method.
pub(crate) fn not_found<P: RequestMethod, T>() -> Result<T, Error> {
    Err(Error::method_not_found(P::METHOD))
}
