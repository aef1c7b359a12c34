//! Sessions that survive restarts, from the `acp-store` crate: the [`SessionStore`] trait,
//! the embedded default shared by every process on a machine ([`SqliteStore`]), JSON Lines
//! files ([`JsonlStore`]) and an in-memory store ([`MemoryStore`], for tests). Re-exported
//! here so that an agent needs only this crate; acp-store's crate docs say how to choose a
//! store and what several processes sharing one may expect.
//!
//! Serve an agent with a store ([`crate::Builder::store`], or
//! [`crate::negotiate::NegotiateOptions::with_store`]) and the connection records every
//! session by itself: the prompts the client sent, the `session/update`s the agent sent (text
//! chunks of one message coalesced, tool calls in their final state, plans), mode, config and
//! title changes, and `updatedAt`. It then serves `session/load` (the history replayed as
//! `session/update`s before the answer), `session/resume` (no replay), `session/list` (cursor
//! pages, filtered by `cwd`), `session/close` (frees what the connection holds) and
//! `session/delete` (removes it from the store; a session it does not have is deleted
//! silently, as the spec asks), and advertises `loadSession` and those
//! session capabilities in `initialize`. An [`crate::Agent`] that implements one of these
//! methods itself keeps it: the store answers only where the agent's method answers "method
//! not found" (the trait default).
//!
//! # When a turn is written, and what survives a crash
//!
//! A store's [`Durability`] says when the connection writes a turn's events (by default each
//! before it is sent, so a `kill -9` keeps what the client saw); see the `record` module
//! for how, and BENCHMARKS.md for what each setting costs. Every store is checked by the
//! same suite, `store::conformance` (feature `test-support`).

pub use acp_store::*;
