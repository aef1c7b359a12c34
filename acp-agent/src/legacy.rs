//! The legacy dialects, on the agent side. Each dialect lives in acp-dialects, in the module
//! named after it (re-exported here: [`v0_0_9`], [`threads`]), with its mapping tables; this
//! module only wires it in:
//!
//! * **Native**: implement the dialect's own `Agent` trait and `serve` it, for an agent that
//!   speaks exactly that dialect.
//! * **Translated**: [`serve_v1`] runs one v1 [`crate::Agent`] for an editor of that dialect.
//!
//! [`crate::negotiate`] picks the dialect from the client's first message and serves the
//! right one.

#[cfg(feature = "legacy-threads")]
pub use acp_dialects::threads;
#[cfg(feature = "legacy-0-0-9")]
pub use acp_dialects::v0_0_9;
pub use acp_dialects::{AdapterOptions, Translation};
use acp_rpc::Config;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{Agent, Dialect};

/// Serves a v1 `agent` to an editor speaking the legacy `dialect` over a reader/writer pair;
/// the dialect's module docs hold the mapping. `None` for v1 itself or a dialect this build
/// lacks.
pub fn serve_v1<A, R, W>(
    dialect: Dialect,
    agent: A,
    reader: R,
    writer: W,
    options: AdapterOptions,
) -> Option<Translation>
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_v1_with(dialect, agent, reader, writer, Config::default(), options)
}

/// [`serve_v1`] with a custom [`Config`] for the legacy wire (its framing is always the
/// dialect's).
pub fn serve_v1_with<A, R, W>(
    dialect: Dialect,
    agent: A,
    reader: R,
    writer: W,
    config: Config,
    options: AdapterOptions,
) -> Option<Translation>
where
    A: Agent,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    acp_dialects::serve_v1_agent(
        dialect,
        |(r, w)| crate::serve(agent, r, w).client().peer().clone(),
        reader,
        writer,
        config,
        options,
    )
}
