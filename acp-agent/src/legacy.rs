//! The legacy dialects, on the agent side: each lives in acp-dialects, in the module named
//! after it (re-exported here: [`v0_0_9`], [`threads`], [`probe`], [`crow`]), with its own
//! `Agent` trait and its mapping tables; [`crate::Builder::dialect`] runs one v1
//! [`crate::Agent`] for an editor of that dialect, and [`crate::Builder::negotiate`] picks the
//! dialect from the client's first message.

#[cfg(feature = "crow")]
pub use acp_dialects::crow;
#[cfg(feature = "probe")]
pub use acp_dialects::probe;
#[cfg(feature = "legacy-threads")]
pub use acp_dialects::threads;
#[cfg(feature = "legacy-0-0-9")]
pub use acp_dialects::v0_0_9;
pub use acp_dialects::{AdapterOptions, Translation};
use acp_dialects::{Input, Output};

use crate::{Agent, Dialect};

/// The v1 `agent` served on an in-memory pipe (with its sessions in `store`, if any) and
/// translated for an editor of `dialect`.
pub(crate) fn serve_translated(
    dialect: Dialect,
    agent: impl Agent,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
    store: Option<std::sync::Arc<dyn crate::store::SessionStore>>,
) -> Option<Translation> {
    let v1_agent = |end| {
        crate::connection::serve_inner(agent, end, acp_rpc::Config::default(), store, None)
            .client()
            .peer()
            .clone()
    };
    acp_dialects::serve_v1_agent(dialect, v1_agent, reader, writer, options)
}
