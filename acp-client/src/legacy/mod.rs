//! The legacy dialects, on the client side.
//!
//! Each dialect module has two ways in:
//!
//! * **Native**: implement the dialect's own `Client` trait and `connect` it, for an editor
//!   that speaks exactly that dialect (pinned), with a typed handle to the agent's methods.
//! * **Adapter**: `connect_v1` drives an agent of that dialect with one v1 [`crate::Client`]
//!   and gives back an ordinary [`crate::ClientConnection`]: the v1 calls you make are
//!   translated to the dialect and the agent's calls back to v1. What cannot be translated
//!   is refused with a clear error or dropped with a logged reason, as each module's
//!   mapping table says.
//!
//! [`crate::negotiate`] offers the preferred dialect first and falls back along a pinned list.

#[cfg(any(feature = "legacy-0-0-9", feature = "legacy-threads"))]
mod support;
#[cfg(any(feature = "legacy-0-0-9", feature = "legacy-threads"))]
pub use support::Connection;
#[cfg(feature = "legacy-threads")]
pub mod threads;
#[cfg(feature = "legacy-0-0-9")]
pub mod v0_0_9;
