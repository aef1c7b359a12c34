//! The legacy dialects, on the client side: each lives in acp-dialects, in the module named
//! after it (re-exported here: [`v0_0_9`], [`threads`], [`probe`], [`crow`]), with its own
//! `Client` trait and its mapping tables; [`crate::Builder::dialect`] drives an agent of that
//! dialect with one v1 [`crate::Client`], and [`crate::Builder::negotiate`] offers the
//! dialects along a pinned list.

pub use acp_dialects::AdapterOptions;
#[cfg(feature = "crow")]
pub use acp_dialects::crow;
#[cfg(feature = "probe")]
pub use acp_dialects::probe;
#[cfg(feature = "legacy-threads")]
pub use acp_dialects::threads;
#[cfg(feature = "legacy-0-0-9")]
pub use acp_dialects::v0_0_9;

use std::sync::Arc;

use crate::{Client, ClientConnection, Config, Dialect};

/// Drives an agent speaking the legacy `dialect` (its stdout is `reader`, its stdin
/// `writer`; the legacy wire's [`Config`](crate::Config) is [`AdapterOptions::config`]) with
/// a v1 `client`, and gives back an ordinary v1 [`ClientConnection`]. `None` for v1 itself or
/// a dialect this build lacks.
pub(crate) fn connect_translated<C: Client>(
    dialect: Dialect,
    client: Arc<C>,
    reader: impl acp_dialects::Input,
    writer: impl acp_dialects::Output,
    options: AdapterOptions,
) -> Option<ClientConnection> {
    let mut user = None;
    let start = |end| {
        let conn = user.insert(ClientConnection::start(client, end, Config::default()));
        conn.peer().clone()
    };
    acp_dialects::drive_for_v1_client(dialect, start, reader, writer, options)?;
    user
}
