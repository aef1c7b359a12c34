//! The legacy dialects, on the agent side: each lives in acp-dialects, in the module named
//! after it (re-exported here: [`v0_0_9`], [`threads`], [`probe`], [`crow`]), with its own
//! `Agent` trait and its mapping tables; [`serve_v1`] runs one v1 [`crate::Agent`] for an
//! editor of that dialect, and [`crate::negotiate`] picks the dialect from the client's first
//! message.

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

/// Serves a v1 `agent` to an editor speaking the legacy `dialect` over a reader/writer pair
/// (the legacy wire's [`acp_rpc::Config`] is [`AdapterOptions::config`]); the dialect's
/// module docs hold the mapping. `None` for v1 itself or a dialect this build lacks.
pub fn serve_v1(
    dialect: Dialect,
    agent: impl Agent,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
) -> Option<Translation> {
    serve_translated(dialect, agent, reader, writer, options, None)
}

/// [`serve_v1`], with the sessions behind the conversations kept in `store` (see
/// [`crate::store`]): a threads editor's `getThreads` and `openThread` then list and reopen
/// them across restarts.
pub fn serve_v1_with_store(
    dialect: Dialect,
    agent: impl Agent,
    reader: impl Input,
    writer: impl Output,
    options: AdapterOptions,
    store: impl crate::store::SessionStore,
) -> Option<Translation> {
    let store: std::sync::Arc<dyn crate::store::SessionStore> = std::sync::Arc::new(store);
    serve_translated(dialect, agent, reader, writer, options, Some(store))
}

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
