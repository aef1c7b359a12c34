//! What every dialect module shares: the running connection of a dialect's own side
//! ([`Connection`]), the context its agent-side requests carry ([`Context`]), and the
//! in-memory plumbing a translation runs the user's v1 side on ([`Bridge`]).

use acp_rpc::memory::{PipeEnd, pipe, tie};
use acp_rpc::{
    CloseReason, Config, Dialect, Error, Handler, NotificationContext, Params, Peer, RawValue,
    RequestContext, RequestId,
};
use acp_types::RequestMethod;
use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncWrite};

/// A running connection of a dialect's own side; `H` is the typed handle to the peer: an
/// editor's handle for an agent ([`Connection::client`]), an agent's for an editor
/// ([`Connection::agent`]).
#[derive(Clone, Debug)]
pub struct Connection<H> {
    handle: H,
    peer: Peer,
}

/// Marks a typed handle to an agent (the editor's side holds one).
pub trait ToAgent {}

/// Marks a typed handle to an editor (the agent's side holds one).
pub trait ToClient {}

impl<H> Connection<H> {
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

/// The requests one native side serves (the legacy dialects have no notifications).
#[async_trait]
pub(crate) trait Serve: Send + Sync + 'static {
    /// Answers one request.
    async fn request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error>;
}

/// The [`Handler`] of a native side: requests go to its [`Serve`], and an id-less message is
/// logged and dropped, since the dialect has no notifications.
pub(crate) struct Requests<S>(pub(crate) S);

#[async_trait]
impl<S: Serve> Handler for Requests<S> {
    async fn handle_request(
        &self,
        cx: RequestContext,
        method: &str,
        params: Params,
    ) -> Result<Box<RawValue>, Error> {
        self.0.request(cx, method, params).await
    }

    async fn handle_notification(
        &self,
        _cx: NotificationContext,
        method: &str,
        _params: Params,
    ) -> Result<(), Error> {
        Err(Error::method_not_found(method))
    }
}

/// The in-memory v1 wire a translation runs on: the user's v1 side (an agent connection or a
/// client connection, started by the crate that owns it) on one end, the translation's own
/// v1 connection on the other.
pub struct Bridge {
    /// The translation's v1 connection to the user's side.
    pub(crate) v1: Peer,
    user: Peer,
}

impl Bridge {
    /// Starts `user_side` on one end of a fresh pipe (it returns the [`Peer`] of the v1
    /// connection it started there) and the translation's v1 connection, served by
    /// `translation`, on the other.
    pub(crate) fn new(user_side: impl FnOnce(PipeEnd) -> Peer, translation: impl Handler) -> Self {
        let (user_end, (read, write)) = pipe();
        let user = user_side(user_end);
        let v1 = acp_rpc::Connection::new(read, write, translation, Config::default())
            .peer()
            .clone();
        Bridge { v1, user }
    }

    /// Ties the three connections' lifetimes: when one ends, all end.
    pub(crate) fn tie(&self, outer: &Peer) {
        tie(outer, &self.v1);
        tie(&self.v1, &self.user);
    }
}
