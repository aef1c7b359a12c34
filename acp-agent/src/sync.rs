//! Locking that survives a panic: a handler that panicked while holding a lock must not take
//! the connection's state down with it (acp-rpc catches the panic and answers `-32603`; the
//! next request still finds the sessions, the store and the capabilities).

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data as it is if a panicking holder poisoned it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
