//! The legacy dialects, on the client side. Each dialect lives in acp-dialects, in the
//! module named after it (re-exported here: [`v0_0_9`], [`threads`]), with its mapping
//! tables; this module only wires it in:
//!
//! * **Native**: implement the dialect's own `Client` trait and `connect` it, for an editor
//!   that speaks exactly that dialect, with a typed handle to the agent's methods.
//! * **Translated**: [`connect_v1`] drives an agent of that dialect with one v1
//!   [`crate::Client`] and gives back an ordinary [`ClientConnection`].
//!
//! [`crate::negotiate`] offers the preferred dialect first and falls back along a pinned list.

pub use acp_dialects::AdapterOptions;
#[cfg(feature = "legacy-threads")]
pub use acp_dialects::threads;
#[cfg(feature = "legacy-0-0-9")]
pub use acp_dialects::v0_0_9;
use acp_rpc::Config;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{Client, ClientConnection, Dialect};

/// Drives an agent speaking the legacy `dialect` (its stdout is `reader`, its stdin
/// `writer`) with a v1 `client`; the returned connection is an ordinary v1
/// [`ClientConnection`]. The dialect's module docs hold the mapping. `None` for v1 itself or
/// a dialect this build lacks.
pub fn connect_v1<C, R, W>(
    dialect: Dialect,
    client: C,
    reader: R,
    writer: W,
    options: AdapterOptions,
) -> Option<ClientConnection>
where
    C: Client,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connect_v1_with(dialect, client, reader, writer, Config::default(), options)
}

/// [`connect_v1`] with a custom [`Config`] for the legacy wire (its framing is always the
/// dialect's).
pub fn connect_v1_with<C, R, W>(
    dialect: Dialect,
    client: C,
    reader: R,
    writer: W,
    config: Config,
    options: AdapterOptions,
) -> Option<ClientConnection>
where
    C: Client,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut user = None;
    let start = |(r, w)| {
        let conn = ClientConnection::new(client, r, w, Config::default());
        let peer = conn.peer().clone();
        user = Some(conn);
        peer
    };
    acp_dialects::drive_for_v1_client(dialect, start, reader, writer, config, options)?;
    user
}
