//! A mutex lock that survives a panicked holder: the data behind our locks stays consistent
//! at every await-free step, so poisoning carries no information here.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, taking over the guard if a previous holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
