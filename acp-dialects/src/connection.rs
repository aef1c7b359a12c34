//! What every dialect module shares: the running connection of a dialect's own side
//! ([`Connection`]), the context its agent-side requests carry ([`Context`]), and the
//! in-memory plumbing a translation runs the user's v1 side on ([`translate`]).

use acp_rpc::memory::{PipeEnd, pipe, tie};
use acp_rpc::{CloseReason, Config, Dialect, Error, Handler, Peer, RequestId};
use std::sync::{Arc, OnceLock};

use acp_types::RequestMethod;

use crate::{Input, Output};

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
        reader: impl Input,
        writer: impl Output,
        handler: impl Handler,
        config: Config,
        dialect: Dialect,
        handle: impl FnOnce(Peer) -> H,
    ) -> Self {
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

/// Runs a translation: the user's v1 side, which `user_side` starts on one end of a fresh
/// in-memory pipe (returning its connection's [`Peer`]); the translation's own v1
/// connection on the other end, served by the handler `v1_side` builds (given the slot the
/// legacy connection's handle will be in, to call the legacy peer through); and the legacy
/// connection `legacy` starts (given the translation's v1 peer, to call the user's side
/// through). When one of the three ends, all do. Returns the legacy connection's peer.
pub(crate) fn translate<H, V>(
    user_side: impl FnOnce(PipeEnd) -> Peer,
    v1_side: impl FnOnce(Arc<OnceLock<H>>) -> V,
    legacy: impl FnOnce(Peer) -> Connection<H>,
) -> Peer
where
    H: Clone + Send + Sync + 'static,
    V: Handler,
{
    let slot = Arc::<OnceLock<H>>::default();
    let (user_end, (read, write)) = pipe();
    let user = user_side(user_end);
    let v1 = acp_rpc::Connection::new(read, write, v1_side(slot.clone()), Config::default())
        .peer()
        .clone();
    let outer = legacy(v1.clone());
    let _ = slot.set(outer.handle);
    tie(&outer.peer, &v1);
    tie(&v1, &user);
    outer.peer
}

/// The legacy peer's handle once the translation has started (it is set before any message
/// can arrive).
pub(crate) fn ready<H>(slot: &OnceLock<H>) -> Result<&H, Error> {
    slot.get()
        .ok_or_else(|| Error::internal_error("the legacy connection is not ready"))
}
