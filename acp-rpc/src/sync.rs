//! Locking that survives a panic: a handler that panicked while holding a lock must not take
//! the connection's state down with it (the engine catches the panic and answers `-32603`;
//! the next message still finds the state). Every crate of acp-rs locks its shared state
//! this way; it is public so that they share the one definition.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data as it is if a panicking holder poisoned it (every critical
/// section of acp-rs is a single update, so the data is consistent either way).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
