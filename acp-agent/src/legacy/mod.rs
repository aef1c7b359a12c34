//! The legacy dialects, on the agent side.
//!
//! Each dialect module has two ways in:
//!
//! * **Native**: implement the dialect's own `Agent` trait and `serve` it, for an agent that
//!   speaks exactly that dialect (pinned). The connection frames messages as that dialect's
//!   peers did (see `acp_rpc::Dialect::legacy_0_0_9` and `acp_rpc::Dialect::threads`).
//! * **Adapter**: `serve_v1` runs one v1 [`crate::Agent`] for a client of that dialect. The
//!   adapter runs the v1 agent connection on an in-memory pipe and translates every message
//!   both ways; what cannot be translated is refused with a clear error or dropped with a
//!   logged reason, as each module's mapping table says.
//!
//! [`crate::negotiate`] picks the dialect from the client's first message and serves the
//! right one.

#[cfg(any(feature = "legacy-0-0-9", feature = "legacy-threads"))]
mod support;
#[cfg(any(feature = "legacy-0-0-9", feature = "legacy-threads"))]
pub use support::{AdapterOptions, Connection};
#[cfg(feature = "legacy-threads")]
pub mod threads;
#[cfg(feature = "legacy-0-0-9")]
pub mod v0_0_9;
